# Sourced by tests/scripts/sim_threads.sh and sim_mpi.sh: settle and same_as_first, the
# comparison both make, and the plans both check for identical
# bytes against one thread, made in the current directory's plans/ and each run through the
# `check NAME TAG ARGS...` below: shift and broadcast GEMMs on odd meshes (in data and timing
# mode, and a run stopped by --max-cycles half way), the 2D allreduce and the Reduce paper's
# tree, and an MLP through the compiler. Needs SRC and fail (tests/tools/plan_run.sh); sets G.
G=$SRC/tests/fidelity/collectives.py
# settle R RC: what the run into R/ leaves for the comparison: its exit code, and its stdout
# without the lines that name files or say how kernels ran (paths differ by run directory)
settle() {
  echo "$2" >"$1/rc"
  grep -v '^compute:\|^trace:\|^heatmaps:' "$1/stdout" | sed 's| -> .*||' >"$1/summary" || true
  rm "$1/stdout"
}

# same_as_first NAME TAG K WHAT: r/NAME.TAG.K must hold the bytes of r/NAME.TAG.1 (else fail:
# "NAME: WHAT")
same_as_first() {
  diff -r "r/$1.$2.1" "r/$1.$2.$3" >/dev/null || {
    diff -r "r/$1.$2.1" "r/$1.$2.$3" | head -20 >&2
    fail "$1: $4"
  }
}

# check NAME TAG ARGS...: runs plans/NAME once per K of $COUNTS (the first K is 1, the
# reference) through the caller's `launch K R TAG PLAN ARGS...`, which runs waferrun on PLAN
# with ARGS and, when TAG's runs have outputs, writes them into R/ (the report and the trace
# go there too); then compares every run with the first ("NAME: " and $WHAT with %s the K).
check() {
  local name=$1 tag=$2 k
  shift 2
  for k in $COUNTS; do
    local r=r/$name.$tag.$k rc=0
    mkdir -p "$r"
    launch "$k" "$r" "$tag" "plans/$name" "$@" --report "$r/report.json" --trace "$r/trace.json" \
      >"$r/stdout" 2>"$r/stderr" || rc=$?
    settle "$r" "$rc"
    # shellcheck disable=SC2059 # WHAT is the caller's format
    [ "$k" = 1 ] || same_as_first "$name" "$tag" "$k" "$(printf "$WHAT" "$k")"
  done
  n=$((n + 1))
}

identity_cases() {
  local algo
  for algo in meshgemm cannon summa; do
    wafer-bench gemm --algo=$algo --mesh=11 --m=33 --k=44 --n=22 --target=wse2 \
      --keep=plans/$algo-11 >/dev/null || fail "wafer-bench gemm $algo"
    check $algo-11 data --input a=random:1 --input b=random:2
  done
  check meshgemm-11 timing --mode=timing
  wafer-bench gemm --algo=meshgemm --mesh=13 --m=64 --k=64 --n=64 --target=wse2 \
    --keep=plans/meshgemm-13 >/dev/null || fail "wafer-bench gemm meshgemm 13"
  check meshgemm-13 timing --mode=timing
  # a run stopped half way: the same error and the same trace of what ran
  check meshgemm-13 stopped --mode=timing --max-cycles=400

  # both generated plans and their inputs in one python3 run (what `collectives.py gen` and
  # `collectives.py input` write)
  python3 - "$(dirname "$G")" <<'PY' || fail "collectives.py: could not write the plans"
import sys
sys.path.insert(0, sys.argv[1])
import collectives as c
for p, W, H, B, out, inp in (("allreduce2d", 21, 17, 24, "plans/allreduce2d", "in_ar.npy"),
                             ("tree", 16, 5, 33, "plans/tree", "in_tree.npy")):
    c.write_plan(p, W, H, B, 2, out)
    c.write_npy(inp, [H, W * B], c.input_values(W, H, B))
PY
  check allreduce2d data --input a=in_ar.npy
  check tree data --input a=in_tree.npy

  waferc "$SRC/examples/mlp_softmax.wir" -o plans/mlp --target=test4x4 -q || fail "waferc mlp_softmax"
  check mlp data --input x="$SRC/examples/mlp_softmax_x.npy"
}
