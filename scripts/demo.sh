#!/usr/bin/env bash
# The main job, end to end, with its progress shown:
#   1. set-up (Debian packages, the Python venv), 2. a build of only the tools and the runtime
#   (scripts/test.sh builds everything), 3. a real model with real weights from an installable
#   package (the PP-OCR text-direction classifier in the rapidocr-onnxruntime wheel) imported,
#   compiled, and run on a real input (a rendered line of text, upright and turned 180 degrees),
#   next to ONNX Runtime, 4. the same model compiled for OpenCL and the CPU in one portable
#   package (OpenCL on PoCL here), its placement, and its result next to ONNX Runtime's, 5. the
#   model zoo's per-commit subset on every configuration (real
#   models from PyPI wheels, real inputs, checked against ONNX Runtime and float64), ending with
#   its summary table. QUILT_ZOO=all runs the whole zoo instead (scripts/zoo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "1/5 set-up: Debian packages and the Python venv (.venv)"
bash scripts/setup.sh

step "2/5 build: quiltc, quilt-run, quilt-inspect, libquilt and its OpenCL plug-in (into build/)"
QUILT_TARGETS="quiltc quilt-run quilt-inspect quilt quilt_opencl" QUILT_PROGRESS=1 bash scripts/build.sh

step "3/5 one model end to end: the PP-OCR text-direction classifier"
model=$(.venv/bin/python scripts/zoo_fetch.py --models ppocr-cls | tail -n 1 | cut -f2)
out=out/demo
mkdir -p "$out"

echo "-- the model: quilt-inspect $model --input-shape x:2,3,48,192"
build/bin/quilt-inspect "$model" --input-shape x:2,3,48,192

echo
echo "-- compile: quiltc $model -o $out/cls.quilt --device llvm --input-shape x:2,3,48,192"
build/bin/quiltc "$model" -o "$out/cls.quilt" --device llvm --input-shape x:2,3,48,192 \
  --report "$out/placement.txt" --report "$out/placement.dot" --report "$out/placement.json"
build/bin/quilt-inspect "$out/cls.quilt"

echo
echo "-- placement ($out/placement.txt; Graphviz: $out/placement.dot), first lines"
sed -n '1,20p' "$out/placement.txt"

echo
echo "-- the input: one line of text, upright and turned 180 degrees ($out/cls_input.png)"
.venv/bin/python scripts/cls_input.py "$out/cls_input.npz" "quilt stitches models"

echo
echo "-- run: quilt-run $out/cls.quilt --inputs $out/cls_input.npz --warmup 5 --iterations 50"
build/bin/quilt-run "$out/cls.quilt" --inputs "$out/cls_input.npz" --output-dir "$out/quilt" \
  --warmup 5 --iterations 50

echo
echo "-- quilt next to ONNX Runtime (same input; labels: text angle 0 or 180 degrees)"
.venv/bin/python scripts/compare_ort.py "$model" "$out/cls_input.npz" "$out/quilt" --labels 0,180 --runs 50

step "4/5 the same model on OpenCL and the CPU: one portable package"
# PoCL (OpenCL on this CPU) builds each program once and keeps it in its cache.
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quilt/pocl}"
echo "-- compile: quiltc $model -o $out/cls-cl.quilt --device opencl --device llvm --portable --input-shape x:2,3,48,192"
build/bin/quiltc "$model" -o "$out/cls-cl.quilt" --device opencl --device llvm --portable \
  --input-shape x:2,3,48,192 --report "$out/placement-cl.txt"
echo
echo "-- the package: where each step runs"
build/bin/quilt-inspect "$out/cls-cl.quilt" | sed -n '/^devices:/,/^constants:/p' | sed '$d'
echo
echo "-- run: quilt-run $out/cls-cl.quilt --inputs $out/cls_input.npz --warmup 3 --iterations 20"
echo "   (where no OpenCL device opens, the portable package runs on the CPU and says so)"
build/bin/quilt-run "$out/cls-cl.quilt" --inputs "$out/cls_input.npz" --output-dir "$out/quilt-cl" \
  --warmup 3 --iterations 20
echo
echo "-- OpenCL + CPU next to ONNX Runtime (same input)"
.venv/bin/python scripts/compare_ort.py "$model" "$out/cls_input.npz" "$out/quilt-cl" --labels 0,180 --runs 20

if [ "${QUILT_ZOO:-ci}" = all ]; then
  step "5/5 the model zoo, every model (scripts/zoo.py; reports in out/zoo/)"
  .venv/bin/python scripts/zoo.py
else
  step "5/5 the model zoo, per-commit subset (scripts/zoo.py --ci; QUILT_ZOO=all for every model)"
  .venv/bin/python scripts/zoo.py --ci
fi
