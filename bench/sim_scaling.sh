#!/usr/bin/env bash
# Simulator speed against mesh size: a 2D allreduce of B=256 wavelets per PE (X-Y chain
# reduce, then 2D broadcast; tests/fidelity/collectives.py) on N x N meshes, then the full
# WSE-2 program rectangle (750x994) in timing mode (RECTS, FULL_MODE: others). Prints simulated cycles, wavelet-hops,
# wall and user seconds, hops per second and peak memory. Results: BENCHMARKS.md.
#
#   bench/sim_scaling.sh                 # 16 32 64 128 256 512, then 750x994 (timing)
#   SIZES="16 64" FULL=0 bench/sim_scaling.sh
#   SIZES= FULL=0 GEMM=128 bench/sim_scaling.sh   # only a MeshGEMM of GEMM_N^3 on 128x128
#   THREADS="1 2" SIZES=256 FULL=0 bench/sim_scaling.sh  # each row with --threads=1, then 2
#   SIZES= FULL_MODE=functional RECTS="750x994 755x1170" bench/sim_scaling.sh  # WSE-2, WSE-3 with data
#   THREADS=1 RANKS="2 3 4" SIZES=256 FULL=0 bench/sim_scaling.sh  # and under mpirun -np 2, 3, 4
# GEMM=S adds a row for a MeshGEMM (wafer-bench gemm --algo=meshgemm, target wse2) of
# GEMM_N (default 256) cubed on S x S, in timing mode: shift GEMMs cost more per hop.
# THREADS (default 1) lists the --threads values every row runs with (the threads column;
# wall_s is what threads shorten, user_s adds every thread's time, spinning included).
# RANKS (default none) lists MPI rank counts every row also runs with: `mpirun -np R waferrun`
# (docs/cycle-model.md "Ranks"; one thread per rank; user_s adds every rank's time).
# Uses `waferrun` from PATH (build with -DCMAKE_BUILD_TYPE=Release for meaningful numbers).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gen="$here/tests/fidelity/collectives.py"
B=${B:-256}
SIZES=${SIZES-"16 32 64 128 256 512"}
FULL=${FULL:-1}
MODE=${MODE:-timing}
THREADS=${THREADS:-1}
RECTS=${RECTS:-750x994}       # FULL=1's meshes: the WSE-2 program rectangle; 755x1170 is WSE-3's
FULL_MODE=${FULL_MODE:-timing}
RANKS=${RANKS:-}
MPIRUN=(mpirun -q --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf "%-10s %-10s %7s %5s %10s %14s %9s %9s %14s %14s %10s\n" mesh mode threads ranks cycles wavelet-hops wall_s user_s "hops/s(user)" "hops/s(wall)" peak_MiB
# row MESH MODE THREADS RANKS: the line for the run just timed ($TMP/out, $TMP/time)
row() {
  local cyc hops wall user kb
  cyc=$(sed -n 's/^cycles: \([0-9]*\) simulated.*/\1/p' "$TMP/out")
  hops=$(sed -n 's/^fabric: \([0-9]*\) wavelet-hops.*/\1/p' "$TMP/out")
  read -r wall user kb <"$TMP/time"
  python3 -c "import sys; ms,m,t,r,c,hp,wa,u,kb=sys.argv[1:]; print('%-10s %-10s %7s %5s %10s %14s %9.2f %9.2f %14.3g %14.3g %10.0f' % (ms, m, t, r, c, hp, float(wa), float(u), int(hp)/max(float(u),1e-3), int(hp)/max(float(wa),1e-3), int(kb)/1024))" \
    "$1" "$2" "$3" "$4" "$cyc" "$hops" "$wall" "$user" "$kb"
}
# sim MESH MODE ARGS...: runs waferrun ARGS with each THREADS value, then under mpirun with
# each RANKS value, one row each
sim() {
  local mesh=$1 mode=$2 t r
  shift 2
  for t in $THREADS; do
    /usr/bin/time -f "%e %U %M" -o "$TMP/time" waferrun "$@" --threads="$t" >"$TMP/out" 2>"$TMP/err" ||
      { cat "$TMP/err" >&2; exit 1; }
    row "$mesh" "$mode" "$t" 1
  done
  for r in $RANKS; do
    /usr/bin/time -f "%e %U %M" -o "$TMP/time" "${MPIRUN[@]}" -np "$r" waferrun "$@" >"$TMP/out" 2>"$TMP/err" ||
      { cat "$TMP/err" >&2; exit 1; }
    row "$mesh" "$mode" 1 "$r"
  done
}
run() {
  local w=$1 h=$2 mode=$3 t
  python3 "$gen" gen allreduce2d "$w" "$h" "$B" 2 "$TMP/plan"
  local args=()
  if [ "$mode" = functional ]; then  # timing mode runs without input data
    python3 "$gen" input "$w" "$h" "$B" "$TMP/in.npy"
    args=(--input a="$TMP/in.npy")
  fi
  sim "${w}x$h" "$mode" "$TMP/plan" "${args[@]}" --mode="$mode" --no-jit
}
GEMM=${GEMM:-}
GEMM_N=${GEMM_N:-256}
gemm() {
  local n=$1
  wafer-bench gemm --algo=meshgemm --mesh="$n" --m="$GEMM_N" --k="$GEMM_N" --n="$GEMM_N" \
    --target=wse2 --keep="$TMP/gemm" >/dev/null
  sim "${n}x$n" "mm$GEMM_N" "$TMP/gemm" --mode=timing --no-jit
  rm -rf "$TMP/gemm"
}
for n in $SIZES; do run "$n" "$n" "$MODE"; done
for n in $GEMM; do gemm "$n"; done
if [ "$FULL" = 1 ]; then
  for r in $RECTS; do run "${r%x*}" "${r#*x}" "$FULL_MODE"; done
fi
