#!/usr/bin/env bash
# Benchmark (never a test): quilt next to ONNX Runtime on the same model and input, interleaved
# in one process, at 1 and 2 threads; min and median of each and their ratio.
#
#   scripts/bench.sh [-- bench.py options]    # the demo model (PP-OCR classifier) and input
#   scripts/bench.sh MODEL.onnx INPUTS.npz [--input-shape NAME:D,D,...]... [-- bench.py options]
#
# bench.py options: --threads 1,2 --warmup 10 --iterations 100. Assumes set-up done
# (scripts/setup.sh); builds quiltc and libquilt.so into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
out=out/bench
mkdir -p "$out"
shapes=()
extra=()
if [ $# -ge 2 ] && [[ $1 != -* ]]; then
  model=$1 inputs=$2
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --input-shape) shapes+=(--input-shape "$2"); shift 2 ;;
      --) shift; extra=("$@"); break ;;
      *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
  done
else
  model=$(.venv/bin/python scripts/zoo_fetch.py --models ppocr-cls | tail -n 1 | cut -f2)
  inputs=$out/cls_input.npz
  shapes=(--input-shape x:2,3,48,192)
  .venv/bin/python scripts/cls_input.py "$inputs" "quilt stitches models" >/dev/null
  [ "${1:-}" = -- ] && shift
  extra=("$@")
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target quiltc quilt >/dev/null
build/bin/quiltc "$model" -o "$out/model.quilt" --device llvm "${shapes[@]}" >/dev/null
lib=$(find "$PWD/build" -name libquilt.so | head -1)
echo "== $model on $(nproc) cores: quilt ($lib) vs ONNX Runtime"
.venv/bin/python scripts/bench.py "$lib" "$out/model.quilt" "$model" "$inputs" "${extra[@]}"
