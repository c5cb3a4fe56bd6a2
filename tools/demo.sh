#!/usr/bin/env bash
# Sets everything up, then runs waferc's main job on the bundled example: compile a tiny LLaMA
# exported by torch (embedding, 2 blocks with RoPE and GQA, final RMSNorm, LM head; token ids to
# logits) for an 8x8 mesh of wse2, run its prefill on waferrun (cycles per op and per layer,
# prefill tokens/s), print the next token it predicts at each position, and check the logits
# against torch's own output and the reference interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/tools/setup.sh"
cd "$here"
m=examples/models
out=build/demo
rm -rf "$out" && mkdir -p "$out"
set -x
build/bin/waferc $m/tiny_llama.onnx -o "$out/plan" --target=wse2 --mesh=8x8 --input-shape input_ids=1x8
build/bin/waferrun "$out/plan" --input input_ids=$m/tiny_llama_input.npy --output-dir "$out/out" --report "$out/report.json"
build/bin/wafer-npycmp "$out/out/logits.npy" $m/tiny_llama_ref.npy --atol 1e-4 --rtol 0
build/bin/waferc $m/tiny_llama.onnx --interpret --input input_ids=$m/tiny_llama_input.npy --output-dir "$out/ref"
build/bin/wafer-npycmp "$out/out/logits.npy" "$out/ref/logits.npy" --atol 1e-4 --rtol 0
{ set +x; } 2>/dev/null
python3 - "$out/out/logits.npy" "$m/tiny_llama_input.npy" <<'PY'
import struct, sys
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    h = b[10:10 + n].decode("latin1")
    shape = tuple(int(t) for t in h[h.index("(") + 1:h.index(")")].split(",") if t.strip())
    code = "q" if "<i8" in h else "f"
    count = 1
    for d in shape:
        count *= d
    return shape, struct.unpack("<%d%s" % (count, code), b[10 + n:10 + n + count * struct.calcsize(code)])
(b, s, v), logits = load(sys.argv[1])
_, ids = load(sys.argv[2])
nxt = [max(range(v), key=lambda j: logits[i * v + j]) for i in range(s)]
print("prompt token ids:     ", list(ids[:s]))
print("next token (argmax):  ", nxt)
PY
