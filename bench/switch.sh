#!/usr/bin/env bash
# The prefill->decode switch between regions of two sizes (BENCHMARKS.md "The switch"): a
# LLaMA-shaped model with a dynamic sequence axis (examples/models/export.py tiny_llama),
# compiled with waferc --generate for a PxP wse2 prefill region and each DxD decode corner
# (--decode-mesh; D = P is one region, no switch) and SIMULATED by waferrun --generate. Per
# pair, in one run: the switch's simulated cycles, the cost model's prediction and their
# ratio, its fabric words, the decode step's cycles, and the time to the last token (prefill +
# switch + decode steps, simulated) against one region of P, as a ratio. Every pair's tokens
# must equal the one-region plan's.
#   bench/switch.sh                                    # the configuration below
#   CONFIG="256:8:2" PREFILL=48 DECODES="16 24 32 48" PROMPT=32 GEN=16 bench/switch.sh
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
CONFIG=${CONFIG:-"256:8:2"}
PREFILL=${PREFILL:-48}
DECODES=${DECODES:-"24 32 40 48"}
PROMPT=${PROMPT:-32}
GEN=${GEN:-16}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

IFS=: read -r e h kv <<<"$CONFIG"
d=$tmp/m
/usr/bin/python3 "$here/examples/models/export.py" --out "$d" --only tiny_llama --embed "$e" --heads "$h" \
  --kv-heads "$kv" --layers 2 --vocab 256 --dynamic >/dev/null 2>&1
/usr/bin/python3 -c "import numpy as np; np.save('$d/prompt.npy', (np.arange($PROMPT, dtype=np.int64) * 7 % 256).reshape(1, -1))"
P=$PREFILL
printf '| E | heads/kv | prefill | decode | prompt + new | switch cycles | predicted | predicted / simulated | fabric words | decode cycles/step | last token (us) | one region of %sx%s / this |\n' "$P" "$P"
printf '|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n'
for D in $DECODES; do
  extra=()
  [ "$D" = "$P" ] || extra=(--decode-mesh="${D}x$D")
  if ! "$waferc" "$d/tiny_llama.onnx" -o "$d/p$D" --target=wse2 --mesh="${P}x$P" "${extra[@]}" \
      --input-shape "input_ids=1x$PROMPT" --generate="$GEN" -q 2>/dev/null; then
    echo "| $e | $h/$kv | ${P}x$P | ${D}x$D | $PROMPT + $GEN | does not fit | | | | | | |"
    continue
  fi
  "$waferrun" "$d/p$D" --input input_ids="$d/prompt.npy" --generate="$GEN" --output-dir "$d/p$D.out" \
    --report "$d/p$D.json" -q >/dev/null
done
python3 - "$d" "$e" "$h" "$kv" "$P" "$PROMPT" "$GEN" $DECODES <<'PY'
import json, os, sys
d, e, h, kv, P, p, g = sys.argv[1:8]
ds = sys.argv[8:]
rep = {D: json.load(open("%s/p%s.json" % (d, D))) for D in ds if os.path.exists("%s/p%s.json" % (d, D))}
def last(r):
    return (r["prefill"]["cycles"] + r["switch"]["cycles"] + r["decode"]["cycles"]) / r["clock_hz"]
base = rep.get(P)
for D in ds:
    if D not in rep:
        continue
    r = rep[D]
    if base and r["tokens"] != base["tokens"]:
        sys.exit("decode on %sx%s: other tokens than one region's" % (D, D))
    sw = r["switch"]
    pred = sw.get("predicted_cycles", 0)
    ratio = "%.3f" % (pred / sw["cycles"]) if sw["cycles"] else "-"
    print("| %s | %s/%s | %sx%s | %sx%s | %s + %s | %d | %d | %s | %d | %.0f | %.2f | %s |" % (
        e, h, kv, P, P, D, D, p, g, sw["cycles"], pred, ratio, sw["fabric_words"], r["decode"]["cycles_per_step"],
        last(r) * 1e6, "%.2f" % (last(base) / last(r)) if base else "-"))
PY
