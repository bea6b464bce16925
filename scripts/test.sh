#!/usr/bin/env bash
# Every test, from a fresh Debian 12 machine:
#   1. set-up (Debian packages, .venv), 2. formatting, 3. build with warnings as errors and its
#   tests, and a runtime built with one package's kernels alone, 4. the same tests built with AddressSanitizer + UndefinedBehaviorSanitizer (the fuzz
#   regression inputs among them), 5. the runtime's concurrency tests under ThreadSanitizer,
#   6. the fuzz targets (clang, libFuzzer): a short run of each from its seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache: paths relative to the checkout, so a fresh clone (CI) reuses earlier compilations.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
bash scripts/setup.sh
bash scripts/check-format.sh

echo "== the runtime alone (links nothing from the compiler side)"
cmake -S runtime -B build-runtime -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-runtime -j"$(nproc)"
bash scripts/check-runtime-deps.sh build-runtime

echo "== build (RelWithDebInfo) and tests"
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)")

echo "== a runtime built with a package's kernels alone (QUILT_KERNELS)"
.venv/bin/python scripts/check_selective_runtime.py

echo "== ASan+UBSan build and tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DQUILT_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$(nproc)")

echo "== TSan build and the runtime's concurrency tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUILT_TSAN=ON >/dev/null
cmake --build build-tsan -j"$(nproc)" --target runtime_concurrency_tests
# Without address-space randomization: TSan's fixed memory layout (GCC 12) fails where the
# kernel randomizes mappings over more bits than it expects.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R \
  build-tsan/bin/runtime_concurrency_tests

echo "== fuzz targets: the regression inputs, then a fixed-seed run of each (about 40 s)"
bash scripts/fuzz.sh --ci
