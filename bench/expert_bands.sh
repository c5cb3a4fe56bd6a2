#!/usr/bin/env bash
# Experts on bands of the mesh's rows (waferc --expert-parallel, docs/moe-plans.md "Experts on
# bands"; BENCHMARKS.md "MoE blocks: experts on bands") against every expert on the whole mesh,
# SIMULATED: SwiGLU MoE blocks exported by torch (examples/models/export_moe.py): dense (every
# expert on every token, --dense), top-K with a capacity of T K / N tokens per expert gathered
# and added back (--cap), Hugging Face's Mixtral style (tokens dispatched by torch.where,
# --hf) and the capacity einsums of Switch (K = 1) and GShard (K = 2) (--switch), compiled for wse2 with and without bands. "bands" 0: the plan with bands did not fit
# (waferc said so and compiled without them). Per row: the cycles of each (simulated, and the
# plan's prediction), their ratio, the bands, and the largest SRAM a PE holds. With
# MODE=functional (the default) every output is checked against torch's.
#   bench/expert_bands.sh                                   # the configurations below
#   CONFIGS="hf:64:128:256:8:2:16x16" bench/expert_bands.sh   # STYLE:T:E:F:N:K:MESH ...
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
CONFIGS=${CONFIGS:-"dense:8:32:48:8:2:8x8 dense:32:64:128:8:2:8x8 dense:32:64:128:8:2:16x16 dense:64:128:256:8:2:16x16 dense:64:128:256:16:2:16x16 dense:128:256:512:8:2:32x32 cap:8:32:48:8:2:8x8 cap:32:64:128:8:2:8x8 cap:32:64:128:8:2:16x16 cap:64:128:256:8:2:16x16 cap:64:128:256:16:2:16x16 cap:128:256:512:8:2:32x32 hf:8:32:48:8:2:8x8 hf:8:32:48:8:2:16x16 switch:32:64:128:8:1:8x8 switch:32:64:128:8:2:8x8"}
MODE=${MODE:-functional}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

printf '%-26s %-6s %6s %12s %12s %12s %12s %8s %9s %9s\n' "block (style:T:E:F:N:K)" "mesh" "bands" "whole sim" \
  "whole pred" "bands sim" "bands pred" "speedup" "SRAM KiB" "(whole)"
for cfg in $CONFIGS; do
  IFS=: read -r style t e f nx k mesh <<<"$cfg"
  d=$tmp/$style$t.$e.$f.$nx.$k
  name=$(/usr/bin/python3 "$here/examples/models/export_moe.py" --out "$d" --"$style" "$t:$e:$f:$nx:$k" 2>/dev/null | tail -1)
  row=() sram=()
  for ep in "" "--expert-parallel"; do
    p=$d/plan$ep
    "$waferc" "$d/$name.onnx" -o "$p" --target=wse2 --mesh="$mesh" -q $ep 2>"$p.err" || { cat "$p.err" >&2; exit 1; }
    out=(); [ "$MODE" = functional ] && out=(--output-dir "$p/out")
    "$waferrun" "$p" --mode="$MODE" --input x="$d/${name}_input.npy" "${out[@]}" --report "$p/r.json" -q
    if [ "$MODE" = functional ]; then
      wafer-npycmp "$p/out/y.npy" "$d/${name}_ref.npy" --atol 1e-4 --rtol 0 >/dev/null ||
        { echo "$cfg $ep: the plan's output differs from torch's" >&2; exit 1; }
    fi
    read -r sim pred bands kib < <(python3 - "$p/manifest.json" "$p/r.json" <<'PY'
import json, sys
m, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bands = sum(1 for g in m["regions"] if g.get("within"))
print(r["cycles"]["total"], m["predicted_cycles"], bands, "%.1f" % (m["regions"][0]["classes"][0]["memory_bytes"] / 1024))
PY
)
    row+=("$sim" "$pred"); sram+=("$kib"); nb=$bands
  done
  printf '%-26s %-6s %6s %12s %12s %12s %12s %8s %9s %9s\n' "$style:$t:$e:$f:$nx:$k" "$mesh" "$nb" "${row[0]}" "${row[1]}" \
    "${row[2]}" "${row[3]}" "$(python3 -c "print('%.2fx' % (${row[0]} / ${row[2]}))")" "${sram[1]}" "${sram[0]}"
done
