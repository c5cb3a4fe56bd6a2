#!/bin/bash
# The raising passes on the torch-exported example models (examples/models/): each pattern
# family fires where the model has it (statistics of the default pipeline's `raise`), and
# the raised graph still reproduces torch's output (max abs error <= 1e-4) and the unraised
# import (<= 1e-5).
set -euo pipefail
src=${WAFERC_SOURCE_DIR:?}
models=$src/examples/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$models/llama_block.onnx" ] || { echo "no example models: skipped"; exit 0; }

stat() { # model stat-name -> count in the raise pass's statistics (0 if absent)
  awk -v s="  $2:" '$0 ~ "^raise$" {on = 1; next} /^[^ ]/ {on = 0} on && index($0, s) == 1 {print $2; f = 1} END {if (!f) print 0}' "$tmp/$1.stats"
}
expect() { # model stat-name count
  local got
  got=$(stat "$1" "$2")
  if [ "$got" != "$3" ]; then echo "FAIL: $1: $2 = $got, expected $3"; exit 1; fi
}

run() { # model input-name shape
  local m=$1 in=$2 shape=$3
  waferc "$models/$m.onnx" --input-shape "$in=$shape" --interpret --statistics \
    --input "$in=$models/${m}_input.npy" --output-dir "$tmp/$m.raised" 2> "$tmp/$m.stats"
  waferc "$models/$m.onnx" --input-shape "$in=$shape" --interpret --pass-pipeline=canonicalize,dce \
    --input "$in=$models/${m}_input.npy" --output-dir "$tmp/$m.plain"
  local out
  out=$(ls "$tmp/$m.raised")
  wafer-npycmp "$tmp/$m.raised/$out" "$models/${m}_ref.npy" --atol 1e-4 --rtol 0
  wafer-npycmp "$tmp/$m.raised/$out" "$tmp/$m.plain/$out" --atol 1e-5 --rtol 0
}

run llama_block x 1x8x64
expect llama_block rmsnorm 2
expect llama_block silu 1
expect llama_block rope-half 2
expect llama_block attention 1
expect llama_block causal-mask 1
expect llama_block kv-repeat-absorbed 1

run gpt2_block x 1x8x64
expect gpt2_block gelu-tanh 1
expect gpt2_block attention 1
expect gpt2_block causal-mask 1

run tiny_llama input_ids 1x8
expect tiny_llama rmsnorm 5
expect tiny_llama silu 2
expect tiny_llama rope-half 4
expect tiny_llama attention 2
expect tiny_llama causal-mask 2
expect tiny_llama kv-repeat-absorbed 2
# the dynamic-sequence export: the unrolled Loop's repeat_interleave is absorbed as well
run llama_block_dyn x 1x8x32
expect llama_block_dyn rmsnorm 2
expect llama_block_dyn silu 1
expect llama_block_dyn rope-half 2
expect llama_block_dyn attention 1
expect llama_block_dyn causal-mask 1
expect llama_block_dyn kv-repeat-absorbed 1
echo "raise_models: ok"
