#!/usr/bin/env bash
# Fetches the real models quilt is shown and checked on, from packages on PyPI, into
# .cache/models/ (idempotent). Today: the PP-OCR models shipped in the rapidocr-onnxruntime wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/models
wheel_version=1.4.4
mkdir -p "$dest"
if [ ! -f "$dest/ch_ppocr_mobile_v2.0_cls_infer.onnx" ]; then
  tmp=$(mktemp -d)
  .venv/bin/pip download --no-deps -q --disable-pip-version-check -d "$tmp" \
    "rapidocr-onnxruntime==$wheel_version"
  .venv/bin/python - "$tmp" "$dest" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as z:
    for name in z.namelist():
        if name.endswith(".onnx"):
            with open(os.path.join(dest, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
PY
  rm -rf "$tmp"
fi
ls "$dest"/*.onnx
