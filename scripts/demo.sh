#!/usr/bin/env bash
# The main job, end to end: a real model with real weights from an installable package (the
# PP-OCR text-direction classifier in the rapidocr-onnxruntime wheel) is imported, compiled into
# a package for this machine's devices, and run on a real input (a rendered line of text, upright
# and turned 180 degrees); the result and its latency are printed next to ONNX Runtime's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
bash scripts/build.sh >/dev/null
model=$(bash scripts/fetch-models.sh | grep cls_infer)
out=out/demo
mkdir -p "$out"

echo "== the model: quilt-inspect $model"
build/bin/quilt-inspect "$model"

echo
echo "== compile: quiltc $model -o $out/cls.quilt --device llvm --input-shape x:2,3,48,192"
build/bin/quiltc "$model" -o "$out/cls.quilt" --device llvm --input-shape x:2,3,48,192 \
  --report "$out/placement.txt" --report "$out/placement.dot" --report "$out/placement.json"
build/bin/quilt-inspect "$out/cls.quilt"

echo
echo "== placement ($out/placement.txt; Graphviz: $out/placement.dot), first lines"
sed -n '1,20p' "$out/placement.txt"

echo
echo "== the input: one line of text, upright and turned 180 degrees ($out/cls_input.png)"
.venv/bin/python scripts/cls_input.py "$out/cls_input.npz" "quilt stitches models"

echo
echo "== run: quilt-run $out/cls.quilt --inputs $out/cls_input.npz --warmup 5 --iterations 50"
build/bin/quilt-run "$out/cls.quilt" --inputs "$out/cls_input.npz" --output-dir "$out/quilt" \
  --warmup 5 --iterations 50

echo
echo "== quilt next to ONNX Runtime (same input; labels: text angle 0 or 180 degrees)"
.venv/bin/python scripts/compare_ort.py "$model" "$out/cls_input.npz" "$out/quilt" --labels 0,180 --runs 50
