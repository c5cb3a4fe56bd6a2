#!/usr/bin/env bash
# The simulator's results do not move when its host-side code changes (issue 21: a faster
# stepping loop must keep cycles, reports, traces and outputs byte-identical). A suite of
# plans — the Reduce paper's patterns (tests/fidelity/collectives.py), every dist.gemm
# algorithm, the collectives wafer-bench builds, the examples — runs on waferrun in both
# modes (functional with and without the JIT, timing); the SHA-256 of every report, trace,
# output and summary is compared with tests/sim_identity/digests.txt, which an earlier
# simulator (the commit named in its first line) recorded. It is not this binary checked
# against itself: a change to the cycle loop that moves any number fails here.
#
#   tests/scripts/sim_identity.sh                 # check (the `e2e/sim_identity` ctest)
#   tests/scripts/sim_identity.sh --record FILE   # write the digests of this build
#   SIM_IDENTITY_THREADS=3 tests/scripts/sim_identity.sh  # every run with --threads=3
#                                                 # (sim_identity_threads.sh: 2 and 3)
#   SIM_IDENTITY_MPI=2 tests/scripts/sim_identity.sh  # every run under mpirun -np 2 (sim_mpi.sh)
#
# Without SIM_IDENTITY_THREADS waferrun picks its default (the cores online, one thread for
# these small meshes); with it, every run is cut into that many bands of rows (at most one
# per row), and must match the same digests: results never depend on the threads.
# A compiled plan whose own digest differs from the recorded one (the compiler changed, not
# the simulator) fails too, naming it: the commit that changes what the compiler writes
# re-records those plans' lines with an unchanged simulator (--record, then keep the other
# lines as they were), so that no plan drops out of the check unseen.
# SIM_IDENTITY_ALLOW_STALE=1 skips such plans instead (a local run mid-change).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
export WAFERC_TARGET_PATH=$SRC/targets
REF=$SRC/tests/sim_identity/digests.txt
record=
if [ "${1:-}" = --record ]; then record=$(realpath -m "${2:?--record FILE}"); fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# SIM_IDENTITY_MPI=R: every run under mpirun with R ranks (sim_mpi.sh; -q: mpirun's own notice
# of a non-zero exit is not waferrun's output)
WAFERRUN=(waferrun)
if [ -n "${SIM_IDENTITY_MPI:-}" ]; then
  WAFERRUN=(mpirun -q --oversubscribe -np "$SIM_IDENTITY_MPI" waferrun)
  [ "$(id -u)" = 0 ] && WAFERRUN=(mpirun -q --oversubscribe --allow-run-as-root -np "$SIM_IDENTITY_MPI" waferrun)
fi
G=$SRC/tests/fidelity/collectives.py
NPY=$SRC/tests/tools/npy.py
mkdir -p "$TMP/plans"
cd "$TMP" # the report names the plan directory: keep it relative, the same on every host
out=$TMP/digests
: >"$out"

# A plan's own digest: its programs, kernels, weights and manifest without the lines that
# name the compiler's version or flags (they change with every commit, the plan does not).
plan_digest() {
  (cd "$1" && find . -type f ! -path './ir/*' | LC_ALL=C sort | while read -r f; do
     echo "$f"
     if [ "$f" = ./manifest.json ]; then grep -v '"compiler\|"version\|"flags' "$f"; else cat "$f"; fi
   done) | sha256sum | cut -c1-64
}

# input_names PLAN: the plan's input names in order, one a line (waferrun --describe, rather
# than a python3 start-up to read the manifest)
input_names() {
  local desc
  desc=$(waferrun "$1" --describe) || fail "waferrun --describe $1 exited $?"
  awk '/^inputs /{s=1; next} /^[^ ]/{s=0} s==1{print $1}' <<<"$desc"
}

# run NAME "INPUT ARGS": functional (interpreted, then JIT) and timing; records digests.
run() {
  local name=$1 ins=$2 d=plans/$1
  echo "$name plan $(plan_digest "$d")" >>"$out"
  local mode
  for mode in functional-nojit functional-jit timing; do
    local r=r/$name.$mode args=()
    mkdir -p "$r"
    case $mode in
      functional-nojit) args=(--no-jit $ins --output-dir "$r/out" --trace "$r/trace.json") ;;
      functional-jit) args=($ins --output-dir "$r/out") ;;
      timing) args=(--mode=timing --no-jit --trace "$r/trace.json") ;;
    esac
    local rc=0
    [ -n "${SIM_IDENTITY_THREADS:-}" ] && args+=(--threads="$SIM_IDENTITY_THREADS")
    "${WAFERRUN[@]}" "$d" "${args[@]}" --report "$r/report.json" >"$r/stdout" 2>"$r/stderr" || rc=$?
    echo "$name $mode rc $rc" >>"$out"
    grep -v '^compute:\|^trace:' "$r/stdout" | sha256sum | sed "s/ .*//; s/^/$name $mode stdout /" >>"$out"
    local f
    for f in $(cd "$r" && find . -type f ! -name stdout ! -name stderr | LC_ALL=C sort); do
      echo "$name $mode ${f#./} $(sha256sum <"$r/$f" | cut -c1-64)" >>"$out"
    done
  done
}

# 1. The paper's patterns, written by the generator (independent of the compiler): every plan
# and input in one python3 run (what `collectives.py gen` and `collectives.py input` write).
python3 - "$(dirname "$G")" <<'PY' || fail "collectives.py: could not write the patterns' plans"
import sys
sys.path.insert(0, sys.argv[1])
import collectives as c
def gen(p, W, H, B, T_R, out, inp):
    c.write_plan(p, W, H, B, T_R, out)
    c.write_npy(inp, [H, W * B], c.input_values(W, H, B))
for p in ("message", "bcast", "star", "chain", "tree", "two_phase"):
    gen(p, 16, 3, 17, 2, "plans/" + p, "in_%s.npy" % p)
for p in ("bcast2d", "xy_reduce", "allreduce2d"):
    gen(p, 9, 7, 13, 2, "plans/" + p, "in_%s.npy" % p)
gen("allreduce2d", 24, 20, 48, 2, "plans/allreduce2d_big", "in_big.npy")
PY
for p in message bcast star chain tree two_phase bcast2d xy_reduce allreduce2d; do
  run $p "--input a=in_$p.npy"
done
run allreduce2d_big "--input a=in_big.npy"

# 2. Compiled plans: every dist.gemm algorithm (an even and an odd side, padded blocks).
gemm_wir() {
  printf 'module @g {\n  func @main(%%a: f32[%d, %d], %%b: f32[%d, %d]) -> f32[%d, %d] {\n    %%c = matmul(%%a, %%b) : f32[%d, %d]\n    return %%c\n  }\n}\n' \
    "$1" "$2" "$2" "$3" "$1" "$3" "$1" "$3" >"$4"
}
gemm_wir 12 24 36 g6.wir
gemm_wir 10 15 20 g5.wir
for algo in meshgemm cannon summa allgather; do
  waferc g6.wir -o plans/$algo-6 --target=test8x8 --mesh=6x6 --gemm-algo=$algo -q || fail "waferc $algo"
  run $algo-6 "--input a=random:1 --input b=random:2"
  waferc g5.wir -o plans/$algo-5 --target=test8x8 --mesh=5x5 --gemm-algo=$algo -q || fail "waferc $algo"
  run $algo-5 "--input a=random:3 --input b=random:4"
done
wafer-bench gemm --algo=meshgemm --mesh=16 --m=64 --k=64 --n=64 --target=wse2 \
  --keep=plans/meshgemm-16 >/dev/null || fail "wafer-bench gemm"
run meshgemm-16 "--input a=random:5 --input b=random:6"

# 3. The collectives wafer-bench lowers (1D and 2D, reduce and allreduce).
for algo in star chain tree two_phase autogen ring; do
  for dims in 1 2; do
    [ "$algo" = ring ] && [ "$dims" = 2 ] && continue
    n=coll-$algo-$dims
    wafer-bench collective --algo=$algo --op=allreduce --pes=16 --len=24 --dims=$dims \
      --keep=plans/$n >/dev/null || fail "wafer-bench collective $algo $dims"
    ins=$(input_names plans/$n | awk '{printf "%s--input %s=random:7", (NR > 1 ? " " : ""), $1}')
    run $n "$ins"
  done
done

# 4. The examples, and the norms of tests/e2e_dist (softmax, layernorm through allreduces),
# compiled through relative links so that the source locations the plans and reports carry
# are the same wherever the tree is checked out
E=$SRC/examples
ln -s "$E" ex && ln -s "$SRC/tests/e2e_dist" dist
waferc ex/mlp_softmax.wir -o plans/mlp_softmax --target=test4x4 -q || fail "waferc mlp_softmax"
run mlp_softmax "--input x=$E/mlp_softmax_x.npy"
waferc ex/two_layer.wir -o plans/two_layer --target=test4x4 -q || fail "waferc two_layer"
run two_layer "--input x=$E/two_layer_x.npy"
waferc dist/norms.wir -o plans/norms --target=test8x8 -q || fail "waferc norms"
ins=$(input_names plans/norms | awk '{printf "%s--input %s=random:%d", (NR > 1 ? " " : ""), $1, NR + 10}')
run norms "$ins"

if [ -n "$record" ]; then
  { echo "# recorded by sim_identity.sh at commit ${SIM_IDENTITY_COMMIT:-unknown}"; cat "$out"; } >"$record"
  echo "sim_identity: $(wc -l <"$out") digests written to $record"
  exit 0
fi

# Compare: cases whose plan digest matches are compared line by line.
python3 - "$REF" "$out" <<'PY'
import os, sys
def load(path):
    d = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        name, rest = line.split(' ', 1)
        d.setdefault(name, []).append(rest.rstrip('\n'))
    return d
ref, new = load(sys.argv[1]), load(sys.argv[2])
bad, skipped, same = [], [], 0
for name, lines in ref.items():
    if name not in new:
        bad.append(f"{name}: not run"); continue
    if lines[0] != new[name][0]:
        skipped.append(name); continue
    if lines != new[name]:
        r, n = set(lines), set(new[name])
        bad.append(f"{name}: " + ", ".join(sorted({' '.join(l.split()[:2]) for l in r ^ n})))
    else:
        same += 1
for name in new:
    if name not in ref:
        bad.append(f"{name}: no recorded digests")
allow = os.environ.get("SIM_IDENTITY_ALLOW_STALE") == "1"
for s in skipped:
    if allow:
        print(f"sim_identity: {s}: the compiler writes a different plan now; skipped (SIM_IDENTITY_ALLOW_STALE)")
    else:
        bad.append(f"{s}: the compiler writes a different plan now; re-record its digests with the simulator "
                   "unchanged (tests/scripts/sim_identity.sh --record FILE, docs in its header)")
if bad:
    print("FAIL: the simulator's results changed, or a plan could not be compared:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
if same < len(ref) // 2:
    print(f"FAIL: only {same} of {len(ref)} cases could be compared", file=sys.stderr)
    sys.exit(1)
threads = os.environ.get("SIM_IDENTITY_THREADS")
ranks = os.environ.get("SIM_IDENTITY_MPI")
print(f"sim_identity: {same} plans byte-identical in 3 runs each ({len(skipped)} skipped)"
      + (f", --threads={threads}" if threads else "") + (f", mpirun -np {ranks}" if ranks else ""))
PY
