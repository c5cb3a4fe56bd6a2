#!/usr/bin/env bash
# Every reduce algorithm SIMULATED (lowered by waferc, run by the runtime) on a row of P PEs
# for B = 1 ... 4096 words per PE, against the Lemma 5.5 lower bound; two-phase vs chain;
# the model's prediction error per algorithm. Uses `wafer-bench collective` (timing mode).
# Results: BENCHMARKS.md "Reduce algorithms: simulated".
#
#   bench/reduce_algos.sh                   # P = 512 on wse2 (T_R = 2, 1 cycle per hop)
#   P=64 BMAX=256 bench/reduce_algos.sh
# Star is simulated only while B*P <= STAR_MAX (default 2^17): its B(P-1) cycles make the
# simulation itself slow (P=512, B=4096 is 2.1M cycles, ~4 minutes); above it the row says
# "-" and the prediction is the closed form.
set -euo pipefail
P=${P:-512}
BMAX=${BMAX:-4096}
STAR_MAX=${STAR_MAX:-131072}
bench=${WAFER_BENCH:-wafer-bench}
algos="star chain tree two_phase autogen"
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2" | tr -d '"'; }
echo "| B | lower bound | star | chain | tree | two_phase | autogen | auto picks | autogen / LB | chain / two_phase |"
echo "|---|---|---|---|---|---|---|---|---|---|"
errs=""
B=1
while [ "$B" -le "$BMAX" ]; do
  row="| $B |"
  declare -A sim=()
  lb=""
  for a in $algos; do
    if [ "$a" = star ] && [ $((B * P)) -gt "$STAR_MAX" ]; then sim[$a]="-"; continue; fi
    j=$($bench collective --algo=$a --pes=$P --len=$B --timing)
    sim[$a]=$(field simulated_cycles "$j")
    lb=$(field lower_bound_cycles "$j")
    errs+="$a $B $(field predicted_cycles "$j") ${sim[$a]}"$'\n'
  done
  j=$($bench collective --algo=auto --pes=$P --len=$B --timing)
  pick=$(field algo "$j")
  row+=" $lb |"
  for a in $algos; do row+=" ${sim[$a]} |"; done
  row+=" $pick | $(awk -v a="${sim[autogen]}" -v b="$lb" 'BEGIN{printf "%.2f", a/b}') |"
  row+=" $(awk -v a="${sim[chain]}" -v b="${sim[two_phase]}" 'BEGIN{printf "%.2f", a/b}') |"
  echo "$row"
  unset sim
  B=$((B * 4))
done
echo
echo "Model error (simulated - predicted) / predicted, per algorithm over the B above:"
echo
echo "| algorithm | min | mean | max |"
echo "|---|---|---|---|"
for a in $algos; do
  awk -v a=$a '$1 == a { e = ($4 - $3) / $3; s += e; n++; if (n == 1 || e < lo) lo = e; if (n == 1 || e > hi) hi = e }
    END { if (n) printf "| %s | %+.1f%% | %+.1f%% | %+.1f%% |\n", a, 100*lo, 100*s/n, 100*hi }' <<<"$errs"
done
