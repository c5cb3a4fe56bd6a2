#!/usr/bin/env bash
# MeshGEMM vs Cannon vs SUMMA vs allgather: simulated cycles and compute efficiency of C = A B (M=K=N)
# on S x S meshes, timing mode (docs/gemm.md). One JSON line per run on stdout, a table on
# stderr. Usage: bench/gemm.sh [build-dir] [sizes] [meshes]
#   bench/gemm.sh build "512 1024 2048 4096" "8 16 32 64 128"
# Combinations whose blocks exceed a PE's SRAM are skipped by the compiler's own check (the
# run prints the error and the row says "no fit"). Large meshes take minutes per run.
set -uo pipefail
B=${1:-build}
SIZES=${2:-"512 1024 2048 4096"}
MESHES=${3:-"8 16 32"}
export WAFERC_TARGET_PATH=${WAFERC_TARGET_PATH:-$(dirname "$0")/../targets}
printf '%-6s %-5s %-9s %12s %12s %6s\n' size mesh algo cycles predicted eff >&2
for n in $SIZES; do
  for s in $MESHES; do
    for algo in meshgemm cannon summa allgather; do
      out=$("$B/bin/wafer-bench" gemm --algo=$algo --mesh=$s --m=$n --k=$n --n=$n 2>/dev/null) || {
        printf '%-6s %-5s %-9s %12s\n' "$n" "$s" "$algo" "no fit / failed" >&2
        continue
      }
      echo "$out"
      python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-6d %-5s %-9s %12d %12d %6.3f" % (r["m"], "%dx%d" % tuple(r["mesh"]), r["algo"], r["simulated_cycles"], r["predicted_cycles"], r["compute_efficiency"]))' "$out" >&2
    done
  done
done
