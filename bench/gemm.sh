#!/usr/bin/env bash
# MeshGEMM vs Cannon vs SUMMA vs allgather: simulated cycles and compute efficiency of C = A B (M=K=N)
# on S x S meshes, timing mode (docs/gemm.md), with one or two buffers per shifted operand
# (--gemm-buffers) and the operands that are weights (--weights: pre-skewed for the shift
# algorithms). One JSON line per run on stdout (with "host_user_s", the run's user CPU time);
# on stderr a table per run, then the ratios per cell: SUMMA / MeshGEMM and Cannon / MeshGEMM
# (above 1: MeshGEMM takes fewer cycles).
# Usage: bench/gemm.sh [build-dir] [sizes] [meshes]   (wafer-bench from build-dir/bin, else PATH)
#   bench/gemm.sh build "512 1024 2048 4096" "8 16 32 64 128"
#   BUFFERS="1 2" WEIGHTS="none ab" ALGOS="meshgemm cannon summa" bench/gemm.sh build "256" "128"
# A size is N (M = K = N) or MxKxN. SAMPLE=S simulates an S x S sample of each mesh with its
# per-PE blocks and scales it (wafer-bench gemm --sample-mesh), for meshes too large to
# simulate whole; e.g. LLaMA3-8B's projections (prompt 4096) on 660 x 660:
#   SAMPLE=64 BUFFERS="1 2" WEIGHTS=b ALGOS="meshgemm cannon summa" \
#     bench/gemm.sh build "4096x4096x4096 4096x4096x14336 4096x14336x4096" "660"
# SUMMA and allgather lower the same program for 1 and 2 buffers and have no alignment, so
# they run once per cell (with the first of BUFFERS and of WEIGHTS) and stand for every row.
# Combinations whose blocks exceed a PE's SRAM are skipped by the compiler's own check (exit 4:
# the row says "no fit"); any other failure fails the script. Large meshes take minutes per run.
set -uo pipefail
bench=wafer-bench
[ -n "${1:-}" ] && bench=$1/bin/wafer-bench
SIZES=${2:-"512 1024 2048 4096"}
MESHES=${3:-"8 16 32"}
BUFFERS=${BUFFERS:-2}
WEIGHTS=${WEIGHTS:-none}
ALGOS=${ALGOS:-"meshgemm cannon summa allgather"}
SAMPLE=${SAMPLE:-}
export WAFERC_TARGET_PATH=${WAFERC_TARGET_PATH:-$(dirname "$0")/../targets}
command -v "$bench" >/dev/null || { echo "bench/gemm.sh: no $bench (give the build directory)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
TIMEFORMAT=%U
[ -n "$SAMPLE" ] && echo "sampled: an ${SAMPLE}x$SAMPLE region with each mesh's blocks, scaled (wafer-bench gemm --sample-mesh)" >&2
printf '%-6s %-9s %-9s %-4s %-7s %10s %10s %6s %8s\n' size mesh algo buf weights cycles predicted eff host_s >&2
for n in $SIZES; do
  case $n in *x*x*) dims=(${n//x/ }) ;; *) dims=("$n" "$n" "$n") ;; esac
  for s in $MESHES; do
    for algo in $ALGOS; do
      for nb in $BUFFERS; do
        for w in $WEIGHTS; do
          case $algo in summa | allgather) [ "$nb" = "${BUFFERS%% *}" ] && [ "$w" = "${WEIGHTS%% *}" ] || continue ;; esac
          { time "$bench" gemm --algo=$algo --mesh=$s --m=${dims[0]} --k=${dims[1]} --n=${dims[2]} --gemm-buffers=$nb \
              --weights=$w ${SAMPLE:+--sample-mesh=$SAMPLE} >"$tmp/out" 2>/dev/null; } 2>"$tmp/time"
          rc=$?
          if [ "$rc" != 0 ]; then
            what="no fit"
            [ "$rc" = 4 ] || what="failed (exit $rc)" failed=1
            printf '%-6s %-9s %-9s %-4s %-7s %10s\n' "$n" "$s" "$algo" "$nb" "$w" "$what" >&2
            continue
          fi
          python3 - "$tmp/out" "$(tail -1 "$tmp/time")" "$nb" >>"$tmp/all" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["host_user_s"] = float(sys.argv[2])
r["buffers"] = int(sys.argv[3])  # what was asked (SUMMA reports it too)
print(json.dumps(r))
PY
          tail -1 "$tmp/all"
          python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-6s %-9s %-9s %-4d %-7s %10d %10d %6.3f %8.1f" % (r["m"] if r["m"] == r["k"] == r["n"] else "%dx%dx%d" % (r["m"], r["k"], r["n"]), "%dx%d" % tuple(r["mesh"]), r["algo"], r["buffers"], r["weights"], r["simulated_cycles"], r["predicted_cycles"], r["compute_efficiency"], r["host_user_s"]))' "$(tail -1 "$tmp/all")" >&2
        done
      done
    done
  done
done
[ -s "$tmp/all" ] && python3 - "$tmp/all" >&2 <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in runs:
    cells.setdefault(("%d" % r["m"] if r["m"] == r["k"] == r["n"] else "%dx%dx%d" % (r["m"], r["k"], r["n"]),
                      tuple(r["mesh"])), []).append(r)
print("\nratios (simulated cycles; above 1: MeshGEMM takes fewer):")
print("%-6s %-9s %-4s %-7s %10s %14s %15s %8s" % ("size", "mesh", "buf", "weights", "meshgemm", "summa/meshgemm",
                                                  "cannon/meshgemm", "eff"))
for (m, mesh), rs in sorted(cells.items()):
    summa = [r for r in rs if r["algo"] == "summa"]
    for r in rs:
        if r["algo"] != "meshgemm":
            continue
        can = [c for c in rs if c["algo"] == "cannon" and c["buffers"] == r["buffers"] and c["weights"] == r["weights"]]
        f = lambda o: "%.2f" % (o[0]["simulated_cycles"] / r["simulated_cycles"]) if o else "-"
        print("%-6s %-9s %-4d %-7s %10d %14s %15s %8.3f" % (m, "%dx%d" % mesh, r["buffers"], r["weights"],
                                                           r["simulated_cycles"], f(summa), f(can), r["compute_efficiency"]))
PY
exit $failed
