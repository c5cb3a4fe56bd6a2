#!/usr/bin/env bash
# MeshGEMM vs Cannon vs SUMMA vs allgather: simulated cycles and compute efficiency of C = A B (M=K=N)
# on S x S meshes, timing mode (docs/gemm.md), with one or two buffers per shifted operand
# (--gemm-buffers). One JSON line per run on stdout, a table on stderr.
# Usage: bench/gemm.sh [build-dir] [sizes] [meshes]   (wafer-bench from build-dir/bin, else PATH)
#   bench/gemm.sh build "512 1024 2048 4096" "8 16 32 64 128"
#   BUFFERS="1 2" bench/gemm.sh build "256" "128"
# Combinations whose blocks exceed a PE's SRAM are skipped by the compiler's own check (exit 4:
# the row says "no fit"); any other failure fails the script. Large meshes take minutes per run.
set -uo pipefail
bench=wafer-bench
[ -n "${1:-}" ] && bench=$1/bin/wafer-bench
SIZES=${2:-"512 1024 2048 4096"}
MESHES=${3:-"8 16 32"}
BUFFERS=${BUFFERS:-2}
export WAFERC_TARGET_PATH=${WAFERC_TARGET_PATH:-$(dirname "$0")/../targets}
command -v "$bench" >/dev/null || { echo "bench/gemm.sh: no $bench (give the build directory)" >&2; exit 1; }
failed=0
printf '%-6s %-5s %-9s %-4s %12s %12s %6s\n' size mesh algo buf cycles predicted eff >&2
for n in $SIZES; do
  for s in $MESHES; do
    for algo in meshgemm cannon summa allgather; do
      for nb in $BUFFERS; do
        out=$("$bench" gemm --algo=$algo --mesh=$s --m=$n --k=$n --n=$n --gemm-buffers=$nb 2>/dev/null)
        rc=$?
        if [ "$rc" != 0 ]; then
          what="no fit"
          [ "$rc" = 4 ] || what="failed (exit $rc)" failed=1
          printf '%-6s %-5s %-9s %-4s %12s\n' "$n" "$s" "$algo" "$nb" "$what" >&2
          continue
        fi
        echo "$out"
        python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-6d %-5s %-9s %-4s %12d %12d %6.3f" % (r["m"], "%dx%d" % tuple(r["mesh"]), r["algo"], sys.argv[2], r["simulated_cycles"], r["predicted_cycles"], r["compute_efficiency"]))' "$out" "$nb" >&2
      done
    done
  done
done
exit $failed
