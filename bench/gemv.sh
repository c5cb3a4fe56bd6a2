#!/usr/bin/env bash
# MeshGEMV (K-tree allreduce, K=2) vs the pipeline-allreduce GEMV, SIMULATED: y[N] = x[K] W
# on S x S meshes, one 64 x 64 W block per PE (K = N = 64 S), timing mode, via
# `wafer-bench gemv`. Results: BENCHMARKS.md "MeshGEMV".
#   bench/gemv.sh                 # S = 8 16 32 64
#   MESHES="8 16" BLOCK=32 bench/gemv.sh
# Ring: the ring-allreduce GEMV baseline (Reduce paper §6.2; backend/collectives/lower_collective_ring.c).
set -euo pipefail
MESHES=${MESHES:-"8 16 32 64"}
BLOCK=${BLOCK:-64}
bench=${WAFER_BENCH:-wafer-bench}
field() { sed -n -e "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" -e "t" -e "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2"; }
echo "| mesh | K = N | pipeline sim | pipeline pred | ring sim | ring pred | ktree{k=2} sim | ktree pred | speedup vs pipeline (sim) | vs ring | auto picks |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for S in $MESHES; do
  K=$((BLOCK * S))
  p=$($bench gemv --allreduce=pipeline --mesh=${S}x$S --k=$K --n=$K)
  r=$($bench gemv --allreduce=ring --mesh=${S}x$S --k=$K --n=$K)
  k=$($bench gemv --allreduce=ktree --mesh=${S}x$S --k=$K --n=$K)
  a=$($bench gemv --allreduce=auto --mesh=${S}x$S --k=$K --n=$K)
  ps=$(field simulated_cycles "$p"); ks=$(field simulated_cycles "$k"); rs=$(field simulated_cycles "$r")
  echo "| ${S}x$S | $K | $ps | $(field predicted_cycles "$p") | $rs | $(field predicted_cycles "$r") | $ks | $(field predicted_cycles "$k") |" \
       "$(awk -v a=$ps -v b=$ks 'BEGIN{printf "%.2f", a/b}') | $(awk -v a=$rs -v b=$ks 'BEGIN{printf "%.2f", a/b}') | $(field lowering "$a") |"
done
