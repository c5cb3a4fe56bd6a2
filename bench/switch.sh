#!/usr/bin/env bash
# The prefill->decode switch between regions of two sizes (BENCHMARKS.md "The switch"): a
# LLaMA-shaped model with a dynamic sequence axis (examples/models/export.py tiny_llama),
# compiled with waferc --generate for a PxP wse2 prefill region and each DxD decode corner
# (--decode-mesh; D = P is one region, no switch) and SIMULATED by waferrun --generate, each
# pair twice: the switch moving the caches only (--switch-weights=resident) and the caches and
# the matrix weights (move). Per run, in one table: the weights moved, the switch's simulated
# cycles, the cost model's prediction and their ratio, its fabric words, the switch's cycles
# moving the weights against keeping them, the decode step's cycles, and the time to the last
# token (prefill + switch + decode steps, simulated) against one region of P, as a ratio. Every
# run's tokens must equal the one-region plan's.
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
printf '| E | heads/kv | prefill | decode | prompt + new | weights | moved | switch cycles | predicted | predicted / simulated | fabric words | switch: move / resident | decode cycles/step | last token (us) | one region of %sx%s / this |\n' "$P" "$P"
printf '|---:|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
runs=()
for D in $DECODES; do
  for SW in resident move; do
    [ "$D" != "$P" ] || [ "$SW" = move ] || continue # one region: no switch plan
    extra=()
    [ "$D" = "$P" ] || extra=(--decode-mesh="${D}x$D" --switch-weights="$SW")
    if ! "$waferc" "$d/tiny_llama.onnx" -o "$d/p$D$SW" --target=wse2 --mesh="${P}x$P" "${extra[@]}" \
        --input-shape "input_ids=1x$PROMPT" --generate="$GEN" -q 2>/dev/null; then
      echo "| $e | $h/$kv | ${P}x$P | ${D}x$D | $PROMPT + $GEN | $SW | does not fit | | | | | | | | |"
      continue
    fi
    "$waferrun" "$d/p$D$SW" --input input_ids="$d/prompt.npy" --generate="$GEN" --output-dir "$d/p$D$SW.out" \
      --report "$d/p$D$SW.json" -q >/dev/null
    runs+=("$D$SW")
  done
done
python3 - "$d" "$e" "$h" "$kv" "$P" "$PROMPT" "$GEN" "${runs[@]}" <<'PY'
import json, sys
d, e, h, kv, P, p, g = sys.argv[1:8]
rep = {k: json.load(open("%s/p%s.json" % (d, k))) for k in sys.argv[8:]}
def last(r):
    return (r["prefill"]["cycles"] + r["switch"]["cycles"] + r["decode"]["cycles"]) / r["clock_hz"]
base = rep.get(P + "move")
for k, r in rep.items():
    D, sw_mode = k[:-len("resident")] if k.endswith("resident") else k[:-len("move")], "resident" if k.endswith("resident") else "move"
    if base and r["tokens"] != base["tokens"]:
        sys.exit("decode on %sx%s (%s): other tokens than one region's" % (D, D, sw_mode))
    sw = r["switch"]
    pred = sw.get("predicted_cycles", 0)
    ratio = "%.3f" % (pred / sw["cycles"]) if sw["cycles"] else "-"
    res = rep.get(D + "resident")
    vs = "%.2f" % (sw["cycles"] / res["switch"]["cycles"]) if res and sw_mode == "move" and D != P else "-"
    print("| %s | %s/%s | %sx%s | %sx%s | %s + %s | %s | %d | %d | %d | %s | %d | %s | %.0f | %.2f | %s |" % (
        e, h, kv, P, P, D, D, p, g, sw_mode if D != P else "-", sw.get("weights_moved", 0), sw["cycles"], pred, ratio,
        sw["fabric_words"], vs, r["decode"]["cycles_per_step"], last(r) * 1e6,
        "%.2f" % (last(base) / last(r)) if base else "-"))
PY
