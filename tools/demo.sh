#!/usr/bin/env bash
# Sets everything up, then runs waferc's main job on the bundled example: a tiny LLaMA exported
# by torch with a dynamic sequence axis (embedding, 2 blocks with interleaved RoPE and GQA 6/2,
# final RMSNorm, LM head) compiled for generation on an 8x8 mesh of wse2 (the prompt's prefill,
# and a decode step with MeshGEMV and a shift KV cache), then 8 tokens generated on waferrun:
# the tokens, the prefill's cycles and time to first token, the decode's cycles per token and
# tokens/s. The tokens are checked against torch's own greedy generation and against the
# reference interpreter (which recomputes the whole sequence at each step).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/tools/setup.sh"
cd "$here"
m=examples/models/generate/llama_gqa_interleaved
out=build/demo
rm -rf "$out" && mkdir -p "$out"
set -x
build/bin/waferc $m.onnx -o "$out/plan" --target=wse2 --mesh=8x8 --input-shape input_ids=1x7 --generate=8
build/bin/waferrun "$out/plan" --input input_ids=${m}_prompt.npy --generate=8 --output-dir "$out/out" --report "$out/report.json"
build/bin/wafer-npycmp "$out/out/tokens.npy" ${m}_tokens.npy --atol 0 --rtol 0
build/bin/waferc $m.onnx --interpret --input input_ids=${m}_prompt.npy --generate=8 --output-dir "$out/ref"
build/bin/wafer-npycmp "$out/out/tokens.npy" "$out/ref/tokens.npy" --atol 0 --rtol 0
