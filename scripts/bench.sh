#!/usr/bin/env bash
# The CPU benchmark (never a test), one command: quilt next to ONNX Runtime, MNN and OpenVINO on
# every model of the zoo, at 1 and 2 threads (scripts/bench.py says how each is measured).
#
#   scripts/bench.sh [bench.py options]       # e.g. --models ppocr-cls,silero-vad-v5 --threads 1
#
# Installs what it needs (scripts/setup.sh, then MNN and OpenVINO from PyPI into .venv), builds
# quiltc and libquilt.so into build/, and writes out/bench/bench-report.{md,json}. Run it on a
# quiet machine: every engine is timed in turn, and anything else running skews them all.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
bash scripts/setup.sh
if ! .venv/bin/python -c "import MNN, openvino" 2>/dev/null; then
  echo "bench: installing mnn and openvino into .venv"
  .venv/bin/pip install -q --disable-pip-version-check mnn openvino
fi
echo "bench: building quiltc and libquilt.so"
QUILT_TARGETS="quiltc quilt" QUILT_PROGRESS=1 bash scripts/build.sh
exec .venv/bin/python scripts/bench.py "$@"
