#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/README.md), built with clang-14 into build-fuzz/ (libFuzzer, ASan,
# UBSan), one process at a time.
#   scripts/fuzz.sh TARGET [SECONDS]  fuzzes TARGET (onnx_import, ir_parse, package, npy; "all":
#                                     each in turn) for SECONDS (default 600) each, keeping its
#                                     corpus in ~/.cache/quilt/fuzz/TARGET/corpus; an input that
#                                     crashes, hangs or runs out of memory is written to
#                                     ~/.cache/quilt/fuzz/TARGET/crashes/ (printed at the end)
#   scripts/fuzz.sh --ci [SECONDS]    what scripts/test.sh runs: replays fuzz/regressions (ctest),
#                                     then fuzzes each target from its seeds alone with a fixed
#                                     random seed and a fixed number of inputs (about 40 s each;
#                                     SECONDS, default 120, caps it), crashes into
#                                     build-fuzz/crashes/; fails on any. The same commit fuzzes
#                                     the same inputs on every run: finding new defects is the
#                                     long runs' work, CI's is to keep the found ones fixed
# Seeds (scripts/fuzz_seeds.py) come from the build in build/: its ONNX node tests, quiltc and
# quilt-opt, which are built first when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
targets=(onnx_import ir_parse package npy)
# Single process: -jobs/-workers left at 1. The limits every input must stay within.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10)
# UBSan stops at the first finding (-fno-sanitize-recover) and says where it was.
export UBSAN_OPTIONS=print_stacktrace=1:${UBSAN_OPTIONS:-}

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

build() {
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DQUILT_FUZZ=ON \
    -DQUILT_BUILD_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j"$(nproc)"
}

seeds() {
  if [ ! -d build-fuzz/seeds/npy ] || [ scripts/fuzz_seeds.py -nt build-fuzz/seeds/npy ]; then
    if [ ! -x build/bin/quiltc ] || [ ! -x build/bin/quilt-opt ] || [ ! -d build/onnx-node-tests ]; then
      QUILT_TARGETS="quiltc quilt-opt onnx_node_tests" bash scripts/build.sh
    fi
    rm -rf build-fuzz/seeds
    .venv/bin/python scripts/fuzz_seeds.py --build build --out build-fuzz/seeds
  fi
}

# Inputs each target tries in CI: about 40 s of each at its rate on a 2-core machine.
declare -A ci_runs=([onnx_import]=8000 [ir_parse]=60000 [package]=300000 [npy]=300000)

# run TARGET SECONDS CORPUS CRASHES [LIBFUZZER FLAGS...]: one libFuzzer run; its last lines, and
# its status.
run() {
  local target=$1 seconds=$2 corpus=$3 crashes=$4 log
  shift 4
  mkdir -p "$corpus" "$crashes"
  log="$(dirname "$crashes")/fuzz-$target.log"
  local dirs=("$corpus" "build-fuzz/seeds/$target")
  for d in "fuzz/seeds/$target" "fuzz/regressions/$target"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  echo "fuzz: $target for ${seconds}s: corpus $corpus, crashes to $crashes, log $log"
  local rc=0
  "build-fuzz/bin/fuzz_$target" "${limits[@]}" "$@" -max_total_time="$seconds" -print_final_stats=1 \
    -dict="build-fuzz/seeds/$target.dict" -artifact_prefix="$crashes/" "${dirs[@]}" \
    >"$log" 2>&1 || rc=$?
  grep -E '^#[0-9]+.*(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
  echo "fuzz: $target corpus: $(find "$corpus" -type f | wc -l) inputs"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $target FAILED (exit $rc); the report:"
    grep -E -A40 '==ERROR|ERROR: libFuzzer|runtime error|check failed|Test unit written' "$log" |
      head -80
    echo "fuzz: the input(s): $(ls "$crashes")"
  fi
  return "$rc"
}

[ $# -ge 1 ] || usage
if [ "$1" = "--ci" ]; then
  seconds=${2:-120}
  build
  seeds
  (cd build-fuzz && ctest --output-on-failure -L fuzz)
  rm -rf build-fuzz/crashes build-fuzz/ci-corpus
  failed=()
  for t in "${targets[@]}"; do
    run "$t" "$seconds" "build-fuzz/ci-corpus/$t" "build-fuzz/crashes/$t" -seed=1 \
      -runs="${ci_runs[$t]}" || failed+=("$t")
  done
  if ((${#failed[@]})); then
    echo "fuzz: crashes in ${failed[*]}: build-fuzz/crashes/"
    exit 1
  fi
  echo "fuzz: ok"
  exit 0
fi

target=$1
seconds=${2:-600}
case " ${targets[*]} all " in
  *" $target "*) ;;
  *) usage ;;
esac
[ "$target" = all ] && run_targets=("${targets[@]}") || run_targets=("$target")
build
seeds
home=${XDG_CACHE_HOME:-$HOME/.cache}/quilt/fuzz
status=0
for t in "${run_targets[@]}"; do
  run "$t" "$seconds" "$home/$t/corpus" "$home/$t/crashes" || status=1
done
exit "$status"
