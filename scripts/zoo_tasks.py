"""Task-level checks of the model-zoo models: what a person would read off the outputs.

`task_result(entry, inputs, outputs)` turns a model's outputs ({output name: array}, as ONNX
Runtime or quilt computed them on the inputs of zoo_inputs.make_inputs) into one line of text:
the text an OCR model read, the boxes a detector found, where a VAD heard speech, the label of a
file. `task_agrees(entry, a, b)` says whether two such results mean the same (exact by default,
with a small tolerance where results carry scores near a threshold). The runner compares
quilt's result with ONNX Runtime's.

The check is chosen by the entry's `kind`; its options come from the entry's [model.check]
table. Dictionaries and label lists are read from the model (ONNX metadata) or from the entry's
assets, in the cache ($QUILT_ZOO_CACHE or ~/.cache/quilt/zoo, or `cache_dir`).

    python scripts/zoo_tasks.py NAME      # runs ONNX Runtime on the inputs, prints the result
"""
import ast
import functools
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo_fetch  # noqa: E402


# ----------------------------------------------------------------------------- common


def _check(entry):
    return entry.get("check", {})


def _output(entry, outputs, name=None, index=0):
    """The output called `name`, else the `index`-th one (outputs keep the model's order)."""
    if name is not None:
        if name not in outputs:
            raise KeyError(f"model '{entry['name']}': no output {name!r} (outputs: {', '.join(outputs)})")
        return np.asarray(outputs[name])
    return np.asarray(list(outputs.values())[index])


@functools.lru_cache(maxsize=None)
def _metadata(path):
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    return {p.key: p.value for p in model.metadata_props}


def _labels(entry, spec, cache_dir):
    """A label list: a list in the manifest, or 'metadata:KEY' (ONNX metadata, one per line, or
    a Python dict literal {index: name})."""
    if isinstance(spec, list):
        return spec
    if isinstance(spec, str) and spec.startswith("metadata:"):
        value = _metadata(zoo_fetch.fetch(entry, cache_dir))[spec.split(":", 1)[1]]
        if value.lstrip().startswith("{"):
            table = ast.literal_eval(value)
            return [table[i] for i in sorted(table)]
        return value.split("\n")
    raise ValueError(f"model '{entry['name']}': labels must be a list or 'metadata:KEY', got {spec!r}")


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _nms(boxes, scores, iou):
    """Greedy non-maximum suppression; boxes [N, 4] as x0, y0, x1, y1; returns kept indices."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order.size:
        i = order[0]
        keep.append(int(i))
        rest = order[1:]
        w = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        h = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        inter = w * h
        order = rest[inter / (areas[i] + areas[rest] - inter + 1e-9) <= iou]
    return keep


def _components(mask):
    """Bounding boxes (x0, y0, x1, y1, pixels) of the 8-connected components of a 2-D mask."""
    parent = []

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    prev, runs = [], []
    for y, row in enumerate(mask):
        padded = np.concatenate([[False], row, [False]])
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        cur = []
        for x0, x1 in zip(edges[::2], edges[1::2]):  # run [x0, x1)
            label = len(parent)
            parent.append(label)
            for px0, px1, plabel in prev:
                if px0 <= x1 and x0 <= px1:  # touching, diagonals included
                    parent[find(plabel)] = label
            cur.append((x0, x1, label))
            runs.append((y, x0, x1, label))
        prev = cur
    comps = {}
    for y, x0, x1, label in runs:
        root = find(label)
        b = comps.setdefault(root, [x0, y, x1 - 1, y, 0])
        b[0], b[1], b[2], b[3] = min(b[0], x0), min(b[1], y), max(b[2], x1 - 1), max(b[3], y)
        b[4] += x1 - x0
    return sorted((tuple(int(v) for v in b) for b in comps.values()), key=lambda b: (b[1], b[0]))


def _ctc_greedy(indices, blank=0):
    out, prev = [], None
    for i in indices:
        i = int(i)
        if i != prev and i != blank:
            out.append(i)
        prev = i
    return out


def _scored(items):
    """'label score, label score' -> [(label, score)]."""
    pairs = []
    for item in filter(None, (s.strip() for s in items.split(","))):
        label, _, score = item.rpartition(" ")
        pairs.append((label, float(score)))
    return pairs


def _agree_scored(a, b, threshold, margin=0.05):
    """Same labels, except labels whose score is within `margin` above the threshold."""
    la, lb = _scored(a.split(":", 1)[-1]), _scored(b.split(":", 1)[-1])
    rest = list(lb)
    for label, score in la:
        match = next((p for p in rest if p[0] == label), None)
        if match is not None:
            rest.remove(match)
        elif score > threshold + margin:
            return False
    return all(score <= threshold + margin for _, score in rest)


def _numbers(text, key):
    m = re.search(rf"{key}=\[([^\]]*)\]", text)
    return np.array([float(v) for v in m.group(1).split()]) if m else None


# ----------------------------------------------------------------------------- OCR


def ocr_det(entry, inputs, outputs, cache_dir):
    """Text boxes: connected components of the probability map over the threshold, at least
    3 pixels on each side (as PaddleOCR's DB post-processing drops smaller ones)."""
    thr = _check(entry).get("threshold", 0.3)
    prob = _output(entry, outputs)[0, 0]
    boxes = [b for b in _components(prob > thr) if b[2] - b[0] >= 2 and b[3] - b[1] >= 2]
    return f"{len(boxes)} text boxes: " + " ".join(f"[{b[0]},{b[1]},{b[2]},{b[3]}]" for b in boxes)


def ocr_rec(entry, inputs, outputs, cache_dir):
    """The text of each line: CTC greedy decoding with the model's dictionary (blank first,
    a space last, as PaddleOCR adds them)."""
    chars = ["<blank>"] + _labels(entry, _check(entry).get("dictionary", "metadata:character"), cache_dir) + [" "]
    probs = _output(entry, outputs)
    texts = ["".join(chars[i] for i in _ctc_greedy(row.argmax(-1))) for row in probs]
    return " | ".join(json.dumps(t, ensure_ascii=False) for t in texts)


def ocr_cls(entry, inputs, outputs, cache_dir):
    """The direction of each line: '0' or '180'."""
    labels = _labels(entry, _check(entry)["labels"], cache_dir)
    return " ".join(labels[i] for i in _output(entry, outputs).argmax(-1))


@functools.lru_cache(maxsize=None)
def _python_list(path, name):
    """The list literal assigned to `name` in a Python source file (read, not run)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(f"{path} assigns no {name}")


def ctc_ddddocr(entry, inputs, outputs, cache_dir):
    """ddddocr's reading: argmax over [T, 1, classes], CTC collapse, its charset (an asset)."""
    charset = _python_list(str(zoo_fetch.asset(entry, "charsets", cache_dir)), _check(entry)["charset"])
    scores = _output(entry, outputs)
    return json.dumps("".join(charset[i] for i in _ctc_greedy(scores[:, 0, :].argmax(-1))), ensure_ascii=False)


def detector_yolox(entry, inputs, outputs, cache_dir):
    """ddddocr's character boxes: YOLOX grid decoding (strides 8, 16, 32), objectness times
    class score over the threshold, NMS."""
    chk = _check(entry)
    pred = _output(entry, outputs)[0].astype(np.float64).copy()
    _, _, h, w = next(iter(inputs.values())).shape
    grids, strides = [], []
    for s in (8, 16, 32):
        gy, gx = np.meshgrid(np.arange(h // s), np.arange(w // s), indexing="ij")
        grids.append(np.stack([gx.ravel(), gy.ravel()], 1))
        strides.append(np.full((gx.size, 1), s))
    grids, strides = np.concatenate(grids), np.concatenate(strides)
    xy = (pred[:, :2] + grids) * strides
    wh = np.exp(pred[:, 2:4]) * strides
    scores = (pred[:, 4:5] * pred[:, 5:]).max(1)
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], 1)
    mask = scores > chk.get("score_threshold", 0.1)
    keep = _nms(boxes[mask], scores[mask], chk.get("nms", 0.45))
    found = sorted(((boxes[mask][i], scores[mask][i]) for i in keep), key=lambda p: (p[0][0], p[0][1]))
    return f"{len(found)} boxes: " + ", ".join(
        f"[{int(b[0])},{int(b[1])},{int(b[2])},{int(b[3])}] {s:.2f}" for b, s in found)


def detector_picodet(entry, inputs, outputs, cache_dir):
    """Layout regions: PicoDet decoding (class scores and 8-bin distance distributions per level,
    strides 8, 16, 32, 64), per-class NMS; 'label score' per region, top to bottom."""
    chk = _check(entry)
    labels = _labels(entry, chk["labels"], cache_dir)
    outs = list(outputs.values())
    half = len(outs) // 2
    _, _, h, w = next(iter(inputs.values())).shape
    all_boxes, all_scores = [], []
    for stride, score, dist in zip((8, 16, 32, 64), outs[:half], outs[half:]):
        gy, gx = np.meshgrid(np.arange(int(np.ceil(h / stride))), np.arange(int(np.ceil(w / stride))), indexing="ij")
        centers = np.stack([(gx.ravel() + 0.5) * stride, (gy.ravel() + 0.5) * stride], 1)
        bins = dist.shape[-1] // 4
        d = (_softmax(dist[0].reshape(-1, 4, bins)) * np.arange(bins)).sum(-1) * stride
        all_boxes.append(np.concatenate([centers - d[:, :2], centers + d[:, 2:]], 1))
        all_scores.append(score[0])
    boxes, scores = np.concatenate(all_boxes), np.concatenate(all_scores)
    thr = chk.get("score_threshold", 0.5)
    found = []
    for c in range(scores.shape[1]):
        mask = scores[:, c] > thr
        for i in _nms(boxes[mask], scores[mask, c], chk.get("nms", 0.5)):
            found.append((boxes[mask][i], labels[c], scores[mask, c][i]))
    found.sort(key=lambda f: (round(float(f[0][1]) / 8), float(f[0][0])))
    return f"{len(found)} regions: " + ", ".join(f"{label} {s:.2f}" for _, label, s in found)


def table_structure(entry, inputs, outputs, cache_dir):
    """The table's HTML structure tokens (SLANet decoding: 'sos' first, 'eos' last, '<td>'
    merged into '<td></td>'), with the number of rows and cells."""
    chars = list(_labels(entry, _check(entry)["labels"], cache_dir))
    if "<td></td>" not in chars:
        chars.append("<td></td>")
    if "<td>" in chars:
        chars.remove("<td>")
    chars = ["sos"] + chars + ["eos"]
    probs = next(v for v in outputs.values() if v.shape[-1] == len(chars))
    tokens = []
    for t, i in enumerate(probs[0].argmax(-1)):
        if t > 0 and chars[i] == "eos":
            break
        if chars[i] not in ("sos", "eos"):
            tokens.append(chars[i])
    rows = tokens.count("<tr>")
    cells = sum(tok in ("<td></td>", "<td") for tok in tokens)
    return f"rows={rows} cells={cells}: " + "".join(tokens)


# ----------------------------------------------------------------------------- audio


def vad(entry, inputs, outputs, cache_dir):
    """Where the speech is: chunks with speech probability over the threshold, as time spans,
    and every chunk's probability (2 decimals)."""
    chk = _check(entry)
    thr, dt = chk.get("threshold", 0.5), chk.get("chunk_seconds", 0.032)
    t0 = entry["inputs"][0].get("offset", 0.0)  # where the first chunk starts in the clip
    p = _output(entry, outputs).astype(np.float64).ravel()
    flags = p > thr
    spans, start = [], None
    for i, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            spans.append((start, i))
            start = None
    text = ", ".join(f"{t0 + a * dt:.2f}-{t0 + b * dt:.2f}s" for a, b in spans) or "none"
    return f"speech {text} ({int(flags.sum())} of {len(p)} chunks) p=[{' '.join(f'{v:.2f}' for v in p)}]"


def vad_agrees(entry, a, b):
    pa, pb = _numbers(a, "p"), _numbers(b, "p")
    if pa is None or pb is None or pa.shape != pb.shape:
        return a == b
    thr = _check(entry).get("threshold", 0.5)
    near = (np.abs(pa - thr) <= 0.02) & (np.abs(pb - thr) <= 0.02)
    return bool(np.all(((pa > thr) == (pb > thr)) | near) and np.all(np.abs(pa - pb) <= 0.02))


def wakeword(entry, inputs, outputs, cache_dir):
    """'detected' when the wake-word score is over the threshold, with the score."""
    thr = _check(entry).get("threshold", 0.5)
    score = float(_output(entry, outputs).ravel()[0])
    return f"{'detected' if score > thr else 'not detected'} score=[{score:.3f}]"


def wakeword_agrees(entry, a, b):
    sa, sb = _numbers(a, "score"), _numbers(b, "score")
    if sa is None or sb is None:
        return a == b
    thr = _check(entry).get("threshold", 0.5)
    same = (sa[0] > thr) == (sb[0] > thr) or (abs(sa[0] - thr) <= 0.02 and abs(sb[0] - thr) <= 0.02)
    return bool(same and abs(sa[0] - sb[0]) <= 0.02)


def pitch(entry, inputs, outputs, cache_dir):
    """The notes heard: piano keys whose note probability passes the threshold in any frame,
    with the frames they span."""
    from zoo_inputs import midi_name
    chk = _check(entry)
    notes = _output(entry, outputs, chk.get("notes_output"))[0]  # [frames, 88], key 0 = A0
    on = notes > chk.get("threshold", 0.5)
    found = [f"{midi_name(21 + k)}@{np.flatnonzero(on[:, k])[0]}-{np.flatnonzero(on[:, k])[-1]}"
             for k in range(notes.shape[1]) if on[:, k].any()]
    return "notes: " + (" ".join(found) or "none")


def pitch_agrees(entry, a, b):
    """Same notes; each note's first and last frame within 2 frames."""
    def parse(s):
        return {n.split("@")[0]: tuple(int(v) for v in n.split("@")[1].split("-"))
                for n in s.split(":", 1)[1].split() if "@" in n}
    na, nb = parse(a), parse(b)
    return na.keys() == nb.keys() and all(abs(na[k][0] - nb[k][0]) <= 2 and abs(na[k][1] - nb[k][1]) <= 2 for k in na)


def features(entry, inputs, outputs, cache_dir):
    """A summary of each output (a feature extractor has no label to read): shape, mean, std,
    and the mean over the last axis at 8 evenly spaced rows."""
    parts = []
    for name, v in outputs.items():
        v = np.asarray(v, np.float64)
        rows = v.reshape(-1, v.shape[-1])
        pick = rows[np.linspace(0, len(rows) - 1, min(8, len(rows))).astype(int)].mean(-1)
        parts.append(f"{name}{list(v.shape)} mean={v.mean():.4g} std={v.std():.4g} "
                     f"rows=[{' '.join(f'{x:.4g}' for x in pick)}]")
    return "; ".join(parts)


def features_agree(entry, a, b):
    """Same shapes; every number within 1% of the output's spread (std), or 1e-3."""
    if re.sub(r"[-+\d.e]+(?=[ \]\;]|$)", "#", a) != re.sub(r"[-+\d.e]+(?=[ \]\;]|$)", "#", b):
        return False
    for pa, pb in zip(a.split("; "), b.split("; ")):
        std = max(float(re.search(r"std=(\S+)", pa).group(1)), 1e-3)
        na = [float(x) for x in re.findall(r"(?<==)[-+\d.e]+|(?<=[\[ ])[-+\d.e]+(?=[ \]])", pa.split("]", 1)[1])]
        nb = [float(x) for x in re.findall(r"(?<==)[-+\d.e]+|(?<=[\[ ])[-+\d.e]+(?=[ \]])", pb.split("]", 1)[1])]
        if len(na) != len(nb) or any(abs(x - y) > 0.01 * std + 1e-3 for x, y in zip(na, nb)):
            return False
    return True


# ----------------------------------------------------------------------------- vision


def classifier(entry, inputs, outputs, cache_dir):
    """The top-1 label of each batch row, with its probability."""
    labels = _labels(entry, _check(entry)["labels"], cache_dir)
    probs = _output(entry, outputs)
    return ", ".join(f"{labels[i]} {row[i]:.2f}" for row, i in zip(probs, probs.argmax(-1)))


def labels_agree(entry, a, b):
    """Same labels in the same order (the probabilities may differ)."""
    return [p[0] for p in _scored(a)] == [p[0] for p in _scored(b)]


def detector_yolov8(entry, inputs, outputs, cache_dir):
    """Objects: YOLOv8 rows (cx, cy, w, h, class scores), best class over the threshold, NMS;
    'label score' per box, left to right."""
    chk = _check(entry)
    labels = _labels(entry, chk["labels"], cache_dir)
    rows = _output(entry, outputs)[0].T.astype(np.float64)
    cls = rows[:, 4:]
    best, score = cls.argmax(1), cls.max(1)
    mask = score >= chk.get("score_threshold", 0.25)
    xy, wh = rows[mask, :2], rows[mask, 2:4]
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], 1)
    keep = _nms(boxes, score[mask], chk.get("nms", 0.45))
    found = sorted(((boxes[i], labels[best[mask][i]], score[mask][i]) for i in keep), key=lambda f: float(f[0][0]))
    return f"{len(found)} boxes: " + ", ".join(f"{label} {s:.2f}" for _, label, s in found)


def saliency(entry, inputs, outputs, cache_dir):
    """Where the model looks: the peak of the importance map and the mean of each cell of a
    grid x grid split (rows top to bottom)."""
    g = _check(entry).get("grid", 4)
    m = _output(entry, outputs)[0, 0].astype(np.float64)
    y, x = np.unravel_index(int(m.argmax()), m.shape)
    h, w = m.shape
    cells = m[: h // g * g, : w // g * g].reshape(g, h // g, g, w // g).mean((1, 3))
    return f"peak at x={x} y={y} cells=[{' '.join(f'{v:.2f}' for v in cells.ravel())}]"


def saliency_agrees(entry, a, b):
    """Every cell mean within 0.02; the peak within 3 % of the map's side."""
    ca, cb = _numbers(a, "cells"), _numbers(b, "cells")
    xa, ya = (int(v) for v in re.findall(r"[xy]=(\d+)", a))
    xb, yb = (int(v) for v in re.findall(r"[xy]=(\d+)", b))
    return bool(ca is not None and cb is not None and np.all(np.abs(ca - cb) <= 0.02)
                and abs(xa - xb) <= 7 and abs(ya - yb) <= 7)


def face_map(entry, inputs, outputs, cache_dir):
    """MTCNN proposals: windows whose face probability passes the threshold, grouped into
    connected blobs (one blob per face at this scale)."""
    thr = _check(entry).get("threshold", 0.7)
    probs = next(v for v in outputs.values() if v.shape[-1] == 2)[0, ..., 1]
    if _check(entry).get("transposed", True):  # MTCNN's Keras port: [N, W, H, C]
        probs = probs.T
    mask = probs > thr
    blobs = _components(mask)
    y, x = np.unravel_index(int(probs.argmax()), probs.shape)
    # window (x, y) covers input pixels 2x .. 2x + 11 (12 x 12 windows, stride 2)
    return (f"{len(blobs)} blobs, {int(mask.sum())} windows over {thr}, "
            f"peak {probs.max():.2f} at ({2 * x + 6},{2 * y + 6})")


def face_map_agrees(entry, a, b):
    """Same blobs and peak position; window counts within 2 (windows near the threshold)."""
    na, nb = [int(v) for v in re.findall(r"(\d+) (?:blobs|windows)", a)], [int(v) for v in re.findall(r"(\d+) (?:blobs|windows)", b)]
    return na[0] == nb[0] and abs(na[1] - nb[1]) <= 2 and a.split(" at ")[-1] == b.split(" at ")[-1]


def face_crops(entry, inputs, outputs, cache_dir):
    """'face' or 'not-face' for each crop, with the face probability."""
    probs = _output(entry, outputs, _check(entry).get("probabilities"))
    return ", ".join(f"{'face' if p[1] > 0.5 else 'not-face'} {p[1]:.2f}" for p in probs)


# ----------------------------------------------------------------------------- text and files


def encoder(entry, inputs, outputs, cache_dir):
    """Sentence similarity: mean of the token vectors under the attention mask, L2-normalized;
    the cosine of every pair and each sentence's nearest other sentence."""
    hidden = _output(entry, outputs).astype(np.float64)
    mask = np.asarray(inputs["attention_mask"], np.float64)[..., None]
    emb = (hidden * mask).sum(1) / mask.sum(1)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    cos = emb @ emb.T
    n = len(cos)
    pairs = " ".join(f"{i}-{j}:{cos[i, j]:.3f}" for i in range(n) for j in range(i + 1, n))
    nearest = " ".join(f"{i}->{int(np.argmax(np.where(np.arange(n) == i, -2.0, cos[i])))}" for i in range(n))
    return f"nearest {nearest} cos {pairs}"


def encoder_agrees(entry, a, b):
    """Same nearest sentences; cosines within 0.01."""
    ca = [float(v) for v in re.findall(r":([-\d.]+)", a)]
    cb = [float(v) for v in re.findall(r":([-\d.]+)", b)]
    return a.split(" cos ")[0] == b.split(" cos ")[0] and len(ca) == len(cb) and all(abs(x - y) <= 0.01 for x, y in zip(ca, cb))


def wordseg(entry, inputs, outputs, cache_dir):
    """The Thai text cut into words ('|' between them): a character starts a word when its
    output passes the boundary (logit > 0, or probability > 0.5)."""
    text = entry["data"]["text"]
    out = _output(entry, outputs).ravel()
    starts = out > (0.0 if _check(entry).get("boundary") == "logit" else 0.5)
    words, cur = [], ""
    for i, ch in enumerate(text):
        if i > 0 and starts[i]:
            words.append(cur)
            cur = ""
        cur += ch
    return "|".join(words + [cur])


@functools.lru_cache(maxsize=None)
def _magika_labels(path):
    cfg = json.loads(Path(path).read_text())
    if "target_labels_space" in cfg:
        return cfg["target_labels_space"]
    return cfg["train_dataset_info"]["target_labels_info"]["target_labels_space"]


def magika(entry, inputs, outputs, cache_dir):
    """The content type of each file (data.files), with its probability."""
    labels = _magika_labels(str(zoo_fetch.asset(entry, "config", cache_dir)))
    probs = _output(entry, outputs)
    return ", ".join(f"{f}={labels[i]} {row[i]:.2f}"
                     for f, row, i in zip(entry["data"]["files"], probs, probs.argmax(-1)))


# ----------------------------------------------------------------------------- dispatch

CHECKS = {
    "ocr-det": (ocr_det, lambda e, a, b: a.split(":")[0] == b.split(":")[0]),
    "ocr-rec": (ocr_rec, None),
    "ocr-cls": (ocr_cls, None),
    "ctc-ddddocr": (ctc_ddddocr, None),
    "detector-yolox": (detector_yolox, lambda e, a, b: a.split(":")[0] == b.split(":")[0]),
    "detector-picodet": (detector_picodet, lambda e, a, b: _agree_scored(a, b, _check(e).get("score_threshold", 0.5))),
    "table-structure": (table_structure, None),
    "vad": (vad, vad_agrees),
    "wakeword": (wakeword, wakeword_agrees),
    "pitch": (pitch, pitch_agrees),
    "features": (features, features_agree),
    "classifier": (classifier, labels_agree),
    "detector-yolov8": (detector_yolov8, lambda e, a, b: _agree_scored(a, b, _check(e).get("score_threshold", 0.25))),
    "saliency": (saliency, saliency_agrees),
    "face-map": (face_map, face_map_agrees),
    "face-crops": (face_crops, lambda e, a, b: [x.split()[0] for x in a.split(", ")] == [x.split()[0] for x in b.split(", ")]),
    "encoder": (encoder, encoder_agrees),
    "wordseg": (wordseg, None),
    "magika": (magika, lambda e, a, b: [x.split()[0] for x in a.split(", ")] == [x.split()[0] for x in b.split(", ")]),
}


def task_result(entry, inputs, outputs, cache_dir=None):
    """One line a person can read: what the model's outputs say on these inputs."""
    if entry["kind"] not in CHECKS:
        raise ValueError(f"model '{entry['name']}': no task check for kind {entry['kind']!r}")
    return CHECKS[entry["kind"]][0](entry, inputs, outputs, cache_dir)


def task_agrees(entry, a, b):
    """Whether two task results (say quilt's and ONNX Runtime's) mean the same."""
    agree = CHECKS[entry["kind"]][1]
    return a == b if agree is None else bool(agree(entry, a, b))


def main():
    import argparse
    import tempfile
    import onnxruntime as ort
    import zoo_inputs
    ap = argparse.ArgumentParser(description="Runs ONNX Runtime on zoo models and prints the task results.")
    ap.add_argument("names", nargs="*", help="model names (default: all)")
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--cache")
    args = ap.parse_args()
    for entry in zoo_fetch.select(zoo_fetch.load_manifest(), args.names or None, args.ci):
        path = zoo_fetch.fetch_all(entry, args.cache)
        with tempfile.TemporaryDirectory() as tmp:
            inputs = zoo_inputs.make_inputs(entry, path, tmp)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = {i.name: inputs[i.name] for i in sess.get_inputs()}
        outputs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        result = task_result(entry, inputs, outputs, args.cache)
        assert task_agrees(entry, result, result)
        print(f"{entry['name']}: {result}")


if __name__ == "__main__":
    main()
