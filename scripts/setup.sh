#!/usr/bin/env bash
# Installs what quilt needs to build and test on Debian 12. Idempotent: a second run only checks.
#   - Debian packages: compiler tool chain, GoogleTest, CLI11, ccache, clang-format, ...
#   - Debian packages for the model zoo's real inputs: espeak-ng (speech), DejaVu fonts
#     (rendered text), GNU time (peak memory).
#   - clang-14 and its runtime libraries (libFuzzer, the sanitizers): the fuzz build (fuzz/).
#   - OpenCL: headers and the ICD loader (to build the OpenCL device plug-in), PoCL (OpenCL on
#     this CPU, for the tests) and clang-15, which PoCL compiles kernels with at run time.
#   - .venv with onnx, onnxruntime and numpy (tests and reference outputs only), pillow, ray
#     (the zoo's runs spread over a cluster) and apache-tvm (tests/tvm: the text form checked
#     against Apache TVM's TVMScript; a ~100 MB wheel, ~320 MB installed; pytest, which
#     tvm.testing imports).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache clang-format git python3-venv
  libgtest-dev libgmock-dev libcli11-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler libxxhash-dev libssl-dev zlib1g-dev nlohmann-json3-dev
  espeak-ng fonts-dejavu-core time
  clang-14 libclang-rt-14-dev
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clang-15
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ml_dtypes below 0.7: onnx renders its node tests' expected Cast outputs to 4- and 2-bit integers
# through it, and 0.7 casts a value out of their range to 0 where ONNX (and 0.6) wraps it around
# (test_cast_FLOAT_to_INT4's -9 to 7, not 0).
# protobuf named: onnx 1.23 needs 6.31.1 or later (its generated code refuses an older runtime
# when imported), and where something put an older one into .venv (MNN's mnnconvert script
# pip-installs its logger's dependencies, which pin protobuf below 6), pip installing onnx, which
# is there, would not put it back.
python_pkgs=(numpy onnx "protobuf>=6.31.1" "ml_dtypes<0.7" onnxruntime pillow ray "apache-tvm==0.27.*"
  pytest)
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import numpy, onnx, onnxruntime, PIL, ray, tvm.relax, tvm.testing
import ml_dtypes; assert tuple(map(int, ml_dtypes.__version__.split('.')[:2])) < (0, 7)" 2>/dev/null; then
  echo "setup: installing ${python_pkgs[*]} into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "${python_pkgs[@]}"
fi
echo "setup: ok"
