"""Makes the demo's real input for the PP-OCR text-direction classifier: one line of text
rendered upright and the same line turned 180 degrees, preprocessed as PaddleOCR does (height
48, width 192 keeping the aspect ratio, (x / 255 - 0.5) / 0.5, CHW, zero padding on the right).

    python scripts/cls_input.py OUT.npz "some text"
"""
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFont


def render(text):
    font = ImageFont.load_default(size=28) if hasattr(ImageFont, "FreeTypeFont") else ImageFont.load_default()
    left, top, right, bottom = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), text, font=font)
    img = Image.new("RGB", (right - left + 16, bottom - top + 12), "white")
    ImageDraw.Draw(img).text((8 - left, 6 - top), text, fill="black", font=font)
    return img


def preprocess(img, height=48, width=192):
    w = min(width, max(1, round(img.width * height / img.height)))
    x = np.asarray(img.resize((w, height), Image.BILINEAR), dtype=np.float32)
    x = (x / 255.0 - 0.5) / 0.5
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = x.transpose(2, 0, 1)
    return out


def main():
    out, text = sys.argv[1], sys.argv[2]
    img = render(text)
    batch = np.stack([preprocess(img), preprocess(img.rotate(180))])
    np.savez(out, x=batch)
    img.save(out.replace(".npz", ".png"))


if __name__ == "__main__":
    main()
