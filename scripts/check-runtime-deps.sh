#!/usr/bin/env bash
# Checks that the runtime library built in DIR (default build-runtime) depends on nothing from
# the compiler side (no ONNX, protobuf, LLVM, OpenSSL) nor on an accelerator's libraries (those
# belong to the device plug-ins it opens on demand), and prints its stripped size and the
# plug-ins built beside it.
set -euo pipefail
dir=${1:-build-runtime}
lib="$dir/libquilt.so"
[ -f "$lib" ] || { echo "check-runtime-deps: no $lib" >&2; exit 1; }
if ldd "$lib" | grep -E -i 'onnx|protobuf|LLVM|libcrypto|libssl'; then
  echo "check-runtime-deps: $lib links a compiler-side library" >&2
  exit 1
fi
if ldd "$lib" | grep -E -i 'OpenCL|cuda|cublas|cudnn'; then
  echo "check-runtime-deps: $lib links an accelerator library (a plug-in's job)" >&2
  exit 1
fi
stripped=$(mktemp)
strip -o "$stripped" "$lib"
echo "runtime: $lib needs only: $(ldd "$lib" | awk '{print $1}' | tr '\n' ' ')"
echo "runtime: stripped size $(stat -c %s "$stripped") bytes"
rm -f "$stripped"
for plugin in "$dir"/libquilt_*.so; do
  [ -f "$plugin" ] || continue
  echo "plug-in: $(basename "$plugin") needs: $(ldd "$plugin" | awk '{print $1}' | tr '\n' ' ')"
done
