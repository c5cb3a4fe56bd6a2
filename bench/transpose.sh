#!/usr/bin/env bash
# The fabric transpose's prediction against the simulation: the mirror on square meshes
# (backend/ops/lower_transpose.c) over mesh sides and block sizes, then whole MoE plans whose
# dispatch transposes (examples/models/moe, 16x16). Timing mode, target wse2. Prints one row
# per case: simulated cycles, the manifest's predicted cycles and their ratio.
# Results: BENCHMARKS.md "Predictions of the mirror transpose".
#
#   bench/transpose.sh                 # sides 2 4 8 16 32 64, blocks 1 2 4 8 words a side
#   SIDES="4 16" BLOCKS="1 4" MOE= bench/transpose.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.bash"
SIDES=${SIDES-"2 3 4 8 16 32 64"}
BLOCKS=${BLOCKS-"1 2 4 8"}
MOE=${MOE-"moe_cap_e16_k2_c2 moe_hf_b2_e8_k2 moe_ec_e8_c3_gelu moe_e8_k2"}
printf "%-24s %-10s %10s %10s %8s\n" case mesh simulated predicted pred/sim
# row NAME MESH PLAN OPFILTER: the plan's cycles (of ops named OPFILTER, or the whole plan)
row() {
  "$waferrun" "$3" --mode=timing --report "$tmp/report.json" -q
  python3 - "$tmp/report.json" "$1" "$2" "$4" <<'EOF'
import json, sys
rep, name, mesh, op = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
if op:
    ops = [o for o in rep["ops"] if o["op"] == op]
    sim, pred = sum(o["cycles"] for o in ops), sum(o["predicted_cycles"] for o in ops)
else:
    sim, pred = rep["cycles"]["total"], rep["cycles"]["predicted"]
print("%-24s %-10s %10d %10d %8.3f" % (name, mesh, sim, pred, pred / sim))
EOF
}
for p in $SIDES; do
  for b in $BLOCKS; do
    n=$((p * b))
    printf 'module @m {\n  func @main(%%x: f32[%d, %d]) -> (f32[%d, %d]) {\n    %%0 = transpose(%%x) {perm = [1, 0]} : f32[%d, %d]\n    return %%0\n  }\n}\n' \
      "$n" "$n" "$n" "$n" "$n" "$n" >"$tmp/t.wir"
    rm -rf "$tmp/plan"
    "$waferc" "$tmp/t.wir" -o "$tmp/plan" --target=wse2 --mesh="${p}x$p" -q
    row "transpose ${b}x$b blocks" "${p}x$p" "$tmp/plan" transpose
  done
done
for m in $MOE; do
  rm -rf "$tmp/plan"
  "$waferc" "$here/examples/models/moe/$m.onnx" -o "$tmp/plan" --target=wse2 --mesh=16x16 -q 2>/dev/null
  row "$m" 16x16 "$tmp/plan" ""
done
