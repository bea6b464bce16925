#!/usr/bin/env bash
# Configures and builds quilt into build/ (tools in build/bin/). Extra arguments go to cmake.
#   QUILT_TARGETS="quiltc quilt-run"  builds only those targets (default: everything)
#   QUILT_PROGRESS=1                  one progress line instead of ninja's output (a line that
#                                     is rewritten on a terminal; every 10% in a log)
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache: paths relative to the checkout, so a fresh clone (CI) reuses earlier compilations.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${QUILT_TARGETS:-}; do targets+=(--target "$t"); done
if [ "${QUILT_PROGRESS:-0}" != 1 ]; then
  exec cmake --build build -j"$(nproc)" "${targets[@]}"
fi
log=build/build.log
tty=0
[ -t 1 ] && tty=1
set +e
cmake --build build -j"$(nproc)" "${targets[@]}" 2>&1 | tee "$log" | awk -v tty="$tty" '
  match($0, /^\[[0-9]+\/[0-9]+\]/) {
    split(substr($0, 2, RLENGTH - 2), p, "/")
    pct = int(100 * p[1] / p[2])
    if (tty) { printf "\rbuild: %d/%d (%d%%)", p[1], p[2], pct; fflush() }
    else if (pct >= next_pct || p[1] == p[2]) { printf "build: %d/%d (%d%%)\n", p[1], p[2], pct; next_pct = pct - pct % 10 + 10 }
    seen = 1
  }
  END { if (tty && seen) printf "\n"; if (!seen) print "build: up to date" }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "build: failed; the compiler said (all of it in $log):"
  grep -E -A12 "error|FAILED" "$log" | head -60
  exit "$rc"
fi
