#!/usr/bin/env bash
# Checks that the runtime library built in DIR (default build-runtime) depends on nothing from
# the compiler side (no ONNX, protobuf, LLVM, OpenSSL) and prints its stripped size.
set -euo pipefail
dir=${1:-build-runtime}
lib="$dir/libquilt.so"
[ -f "$lib" ] || { echo "check-runtime-deps: no $lib" >&2; exit 1; }
if ldd "$lib" | grep -E -i 'onnx|protobuf|LLVM|libcrypto|libssl'; then
  echo "check-runtime-deps: $lib links a compiler-side library" >&2
  exit 1
fi
stripped=$(mktemp)
strip -o "$stripped" "$lib"
echo "runtime: $lib needs only: $(ldd "$lib" | awk '{print $1}' | tr '\n' ' ')"
echo "runtime: stripped size $(stat -c %s "$stripped") bytes"
rm -f "$stripped"
