#!/usr/bin/env bash
# Reduce algorithms against the Lemma 5.5 lower bound, from the cost model alone (Reduce
# paper §3-§5; include/waferc/collectives.h): predicted cycles of star, chain, tree,
# two-phase (groups of ~sqrt(P)) and Auto-Gen on a row of P PEs for B = 1 ... 4096 wavelets,
# the lower bound, Auto-Gen / lower bound, and chain / two-phase. MODEL PREDICTIONS, not
# simulations. Results: BENCHMARKS.md.
#
#   bench/collectives_model.sh                 # P = 512, T_R = 2, 1 cycle per hop
#   P=64 TARGET=wse3 bench/collectives_model.sh
# Uses `wafer-cost` from PATH (or $WAFER_COST).
set -euo pipefail
P=${P:-512}
BMAX=${BMAX:-4096}
TARGET=${TARGET:-}
cost=${WAFER_COST:-wafer-cost}
args=()
[ -n "$TARGET" ] && args+=(--target="$TARGET")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
B=1
while [ "$B" -le "$BMAX" ]; do
  "$cost" reduce --pes="$P" --len="$B" "${args[@]}" >>"$tmp"
  B=$((B * 2))
done
python3 - "$tmp" "$P" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    rows.setdefault(o["len"], {})[o["algo"]] = o
algos = ["star", "chain", "tree", "two_phase", "autogen"]
print("Reduce on a row of P=%s PEs: predicted cycles (cost model, T = max(C, E/N + L) + (2T_R+1)D)" % sys.argv[2])
print("| B | " + " | ".join(algos) + " | lower bound | autogen/LB | two_phase/LB | best fixed/LB | chain/two_phase |")
print("|---:|" + "---:|" * (len(algos) + 5))
worst = 0.0
for B in sorted(rows):
    r = rows[B]
    lb = r["autogen"]["lower_bound_cycles"]
    ag = r["autogen"]["predicted_cycles"] / lb
    fixed = min(r[a]["predicted_cycles"] for a in algos if a != "autogen") / lb
    worst = max(worst, ag)
    print("| %d | %s | %.1f | %.3f | %.3f | %.3f | %.2f |" % (
        B, " | ".join("%.1f" % r[a]["predicted_cycles"] for a in algos), lb, ag,
        r["two_phase"]["predicted_cycles"] / lb, fixed,
        r["chain"]["predicted_cycles"] / r["two_phase"]["predicted_cycles"]))
print()
print("worst autogen / lower bound over B = %d..%d: %.3f" % (min(rows), max(rows), worst))
PY
