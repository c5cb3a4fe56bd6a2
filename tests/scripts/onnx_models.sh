#!/usr/bin/env bash
# The torch-exported models in examples/models/ import, verify and reproduce torch's own output
# through the reference interpreter: max abs error <= 1e-4 (rtol 0). For the models with a
# dynamic sequence axis, a second sequence length (13, not the export's 8) is checked too.
set -uo pipefail
src="${WAFERC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
models="$src/examples/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

# check MODEL TAG INPUT_NAME OUTPUT_NAME [--input-shape NAME=SHAPE]
check() {
  local model=$1 tag=$2 in=$3 out=$4
  shift 4
  local dir="$tmp/$tag"
  if ! waferc "$models/$model.onnx" --interpret "$@" --input "$in=$models/${tag}_input.npy" \
       --output-dir "$dir" > "$tmp/$tag.log" 2>&1; then
    echo "FAIL $tag: waferc --interpret exited $? :"
    sed 's/^/  /' "$tmp/$tag.log" | head -20
    failures=$((failures + 1))
    return
  fi
  if ! wafer-npycmp "$dir/$out.npy" "$models/${tag}_ref.npy" --atol 1e-4 --rtol 0; then
    echo "FAIL $tag: $out differs from torch's output by more than 1e-4"
    failures=$((failures + 1))
    return
  fi
  echo "PASS $tag"
}

check gpt2_block gpt2_block x y --input-shape x=1x8x64
check gpt2_block gpt2_block_s13 x y --input-shape x=1x13x64
check llama_block llama_block x y
check tiny_llama tiny_llama input_ids logits --input-shape input_ids=1x8
check tiny_llama tiny_llama_s13 input_ids logits --input-shape input_ids=1x13
# llama_block with a dynamic sequence axis: torch 1.13 writes the GQA repeat_interleave as a
# Loop over sequences (unrolled at import) with misaligned reshapes (repaired, with a warning)
check llama_block_dyn llama_block_dyn x y --input-shape x=1x8x32
check llama_block_dyn llama_block_dyn_s13 x y
if grep -q "warning: .*torch 1.13's export of repeat_interleave" "$tmp/llama_block_dyn.log"; then
  echo "PASS llama_block_dyn: the repaired repeat_interleave reshape is reported"
else
  echo "FAIL llama_block_dyn: no warning about the repaired repeat_interleave reshape"
  failures=$((failures + 1))
fi

# Without --input-shape a dynamic axis is either taken from the --input file (and then the
# output must still match) or refused with an error naming the input; never a wrong answer.
if waferc "$models/gpt2_block.onnx" --interpret --input "x=$models/gpt2_block_input.npy" \
     --output-dir "$tmp/noshape" > "$tmp/noshape.log" 2>&1; then
  if wafer-npycmp "$tmp/noshape/y.npy" "$models/gpt2_block_ref.npy" --atol 1e-4 --rtol 0; then
    echo "PASS gpt2_block without --input-shape (shape taken from the input)"
  else
    echo "FAIL gpt2_block without --input-shape: wrong output"
    failures=$((failures + 1))
  fi
elif grep -qw x "$tmp/noshape.log"; then
  echo "PASS gpt2_block without --input-shape is refused, naming x"
else
  echo "FAIL gpt2_block without --input-shape: the error does not name the input x:"
  sed 's/^/  /' "$tmp/noshape.log"
  failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
