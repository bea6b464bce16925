#!/usr/bin/env bash
# The main job, as far as it goes end to end today: build quilt, read a heterogeneous module in
# the IR text form, normalize it (every value gets its shape, dtype and virtual device), and
# show where each value is placed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
bash scripts/build.sh >/dev/null

example=tests/data/ir/rfc_to_vdevice.qir
echo "== input: $example"
grep -v '^#' "$example"
echo
echo "== after normalize (quilt-opt $example --pass normalize)"
build/bin/quilt-opt "$example" --pass normalize
echo
echo "== placement: value -> virtual device"
build/bin/quilt-opt "$example" --pass normalize |
  sed -nE 's/^ *([A-Za-z_0-9]+): R\.Tensor\(([^)]*\)), "([a-z0-9]+)"(, "([^"]+)")?\).*/\1\t\5/p' |
  awk -F'\t' '{ printf "  %-4s %s\n", $1, ($2 == "" ? "(not placed yet: realize-vdevice decides)" : $2) }'

# A real model: the PP-OCR text-direction classifier from the rapidocr-onnxruntime wheel.
model=$(bash scripts/fetch-models.sh | grep cls_infer)
echo
echo "== quilt-inspect $model"
build/bin/quilt-inspect "$model"
echo
echo "== imported: signature of main (quilt-opt $model)"
build/bin/quilt-opt "$model" | sed -n '/def main/,/^        R.func_attr/p' | grep -v func_attr
echo "   ... $(build/bin/quilt-opt "$model" | grep -c ' = R\.') bindings"
