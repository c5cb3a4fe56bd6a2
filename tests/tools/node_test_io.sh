#!/usr/bin/env bash
# node_test_io.sh NODE_TEST_DIR WORK_DIR: gets an ONNX node test (libonnx-testdata) ready to
# run as a plan. Compiles its model for a 1x1 mesh only to learn the graph's input names (the
# plan lists them in order: waferrun --describe), converts test_data_set_0/input_N.pb to WORK_DIR/NAME.npy
# and output_0.pb to WORK_DIR/want.npy, and prints "NAME=WORK_DIR/NAME.npy" pairs, one per
# input, space-separated: what `waferrun --input` and `waferc --interpret --input` take.
# Needs waferc, waferrun and wafer-pb2npy on PATH and WAFERC_TARGET_PATH set. Exits 1 with a message.
set -euo pipefail
dir=$1 work=$2
mkdir -p "$work"
waferc "$dir/model.onnx" -o "$work/plan1x1" --target=test8x8 --mesh=1x1 >/dev/null 2>&1 ||
  { echo "$(basename "$dir"): does not compile for a 1x1 mesh" >&2; exit 1; }
# the input names, in order, from waferrun --describe (no python3 start-up)
desc=$(waferrun "$work/plan1x1" --describe) ||
  { echo "$(basename "$dir"): waferrun --describe failed" >&2; exit 1; }
names=$(awk '/^inputs /{s=1; next} /^[^ ]/{s=0} s==1{print $1}' <<<"$desc")
i=0 pairs=""
for a in $names; do
  wafer-pb2npy "$dir/test_data_set_0/input_$i.pb" "$work/$a.npy" >/dev/null ||
    { echo "$(basename "$dir"): input $i" >&2; exit 1; }
  pairs="$pairs $a=$work/$a.npy"
  i=$((i + 1))
done
wafer-pb2npy "$dir/test_data_set_0/output_0.pb" "$work/want.npy" >/dev/null ||
  { echo "$(basename "$dir"): output_0.pb" >&2; exit 1; }
echo $pairs
