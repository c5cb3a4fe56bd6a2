#!/usr/bin/env bash
# The allreduces inside layernorm and softmax: the model's choice (waferc's default since
# 2026-11-26) against the vendor's chain (--reduce-algo=chain), SIMULATED in timing mode on
# S x S meshes of wse2. The graph is bench/layernorm_softmax.wir (also plan_scale.sh's):
# layernorm over the rows of x[256, 512], GELU, softmax over the columns, a bias add. Prints a table (BENCHMARKS.md "Norms and
# softmax"): total cycles and prediction of each, the layernorm's and the softmax's own
# cycles, the speedup, and the collectives the model picked.
#   bench/norm_softmax.sh                  # S = 8 32 64 128 256
#   MESHES="8 16" bench/norm_softmax.sh
set -euo pipefail
MESHES=${MESHES:-"8 32 64 128 256"}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp
# run NAME MESH [waferc options]: compile, simulate, print "total predicted layernorm softmax picks"
run() {
  local d=$tmp/$1_$2
  "$waferc" "$here/bench/layernorm_softmax.wir" -o "$d" --target=wse2 --mesh="$2" -q "${@:3}"
  "$waferrun" "$d" --mode=timing --report "$d/r.json" -q
  python3 - "$d" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1] + "/r.json"))
m = json.load(open(sys.argv[1] + "/manifest.json"))
ops = {o["op"]: o["cycles"] for o in r["ops"]}
picks = sorted(set(re.findall(r"allreduce-[xy]:\w+", " ".join(o.get("explain", "") for o in m["ops"]))))
print(r["cycles"]["total"], sum(o["predicted_cycles"] for o in m["ops"]), ops["layernorm"], ops["softmax"],
      ",".join(picks))
PY
}
echo "| mesh | chain cycles | chain pred | model's cycles | model's pred | layernorm chain → model | softmax chain → model | speedup | model picks |"
echo "|---|---|---|---|---|---|---|---|---|"
for S in $MESHES; do
  read -r ct cp cl cs _ <<<"$(run chain ${S}x$S --reduce-algo=chain)"
  read -r at ap al as picks <<<"$(run model ${S}x$S)"
  echo "| ${S}x$S | $ct | $cp | $at | $ap | $cl → $al | $cs → $as | $(awk -v a="$ct" -v b="$at" 'BEGIN{printf "%.2f", a/b}') | $picks |"
done
