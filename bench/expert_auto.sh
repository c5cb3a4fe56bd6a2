#!/usr/bin/env bash
# How well `waferc --expert-parallel=auto` chooses: every committed MoE block
# (examples/models/moe) on each mesh, test8x8, compiled with =auto and without bands, both
# SIMULATED in timing mode. One row per block and mesh (auto's plan, the whole mesh's, auto's
# note), then a count: where auto's plan is faster, the same, slower. Results: BENCHMARKS.md
# "MoE blocks: experts on bands".
#
#   bench/expert_auto.sh               # meshes 4x4 6x4 8x8
#   MESHES="8x8" bench/expert_auto.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp
MESHES=${MESHES:-"4x4 6x4 8x8"}
cycles() { "$waferrun" "$1" --mode=timing 2>&1 | sed -n 's/^cycles: \([0-9]*\) simulated.*/\1/p'; }
faster=0 same=0 slower=0 none=0
printf '%-24s %-5s %8s %8s  %s\n' block mesh auto whole "auto's choice"
for f in "$here"/examples/models/moe/moe_*.onnx; do
  b=$(basename "$f" .onnx)
  for mesh in $MESHES; do
    rm -rf "$tmp/a" "$tmp/w"
    "$waferc" "$f" -o "$tmp/a" --target=test8x8 --mesh="$mesh" --expert-parallel=auto 2>"$tmp/err" >/dev/null || continue
    "$waferc" "$f" -o "$tmp/w" --target=test8x8 --mesh="$mesh" -q 2>/dev/null || continue
    note=$(sed -n 's/.*--expert-parallel=auto: //p' "$tmp/err")
    a=$(cycles "$tmp/a") w=$(cycles "$tmp/w")
    printf '%-24s %-5s %8s %8s  %s\n' "$b" "$mesh" "$a" "$w" "${note:-no bands}"
    if [ -z "$note" ]; then none=$((none + 1))
    elif [ "$a" -lt "$w" ]; then faster=$((faster + 1))
    elif [ "$a" = "$w" ]; then same=$((same + 1))
    else slower=$((slower + 1)); fi
  done
done
echo "auto's plan against the whole mesh: $faster faster, $same the same (compiled without), $slower slower; $none with no bands to weigh"
