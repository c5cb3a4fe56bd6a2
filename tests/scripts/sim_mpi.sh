#!/usr/bin/env bash
# `mpirun -np R waferrun` (runtime/sim_mpi.c: one band of rows per rank) gives the same bytes as
# one process: shift and broadcast GEMMs on odd meshes (their shifts fill buffers across the
# rank edges: meeting points), the 2D allreduce and the Reduce paper's tree, an MLP through
# the compiler, a run stopped by --max-cycles half way, two deadlocks and two run-time errors,
# each with 2 and 3 ranks against --threads=1: stdout, stderr, the exit code, the report, the trace,
# the heatmaps and every output must be byte-identical; so must --generate (with and without a
# switch plan) and a pipelined plan, many simulations fed one from another. Skipped (77) without mpirun or when
# waferrun was built without MPI.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
BIN=${WAFERC_BINARY_DIR:?}
command -v mpirun >/dev/null || { echo "sim_mpi: no mpirun (Debian openmpi-bin): skipped"; exit 77; }
lib=$BIN/lib/libwaferc.so
# (not grep -q: ldd, its output cut short, would die of SIGPIPE, which pipefail counts)
{ [ -e "$lib" ] && ldd "$lib" | grep libmpi >/dev/null; } ||
  { echo "sim_mpi: waferrun was built without MPI (Debian libopenmpi-dev): skipped"; exit 77; }
# -q: mpirun's own notice about a non-zero exit is not waferrun's output. As root (CI), Open
# MPI wants to be told; more ranks than cores is fine for a test.
MPIRUN=(mpirun -q --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
. "$SRC/tests/tools/plan_run.sh"      # TMP, fail, n
. "$SRC/tests/tools/identity_cases.sh" # G, settle, same_as_first, identity_cases
cd "$TMP" # the report names the plan directory: keep it relative
mkdir plans r

# the runs check (identity_cases.sh) compares: one process (--threads=1), then mpirun with 2
# and 3 ranks; outputs and heatmaps unless the run is timing-only
COUNTS="1 ${NP:-2 3}"
WHAT="mpirun -np %s differs from one process"
launch() {
  local k=$1 r=$2 tag=$3 out=() run=(waferrun --threads=1)
  shift 3
  case $tag in timing | stopped) ;; *) out=(--output-dir "$r/out" --heatmap "$r/heat") ;; esac
  [ "$k" != 1 ] && run=("${MPIRUN[@]}" -np "$k" waferrun)
  "${run[@]}" "$@" "${out[@]}"
}

identity_cases

# Deadlocks (as tests/scripts/e2e_bad_plan.sh makes them), said by rank 0 from every rank's
# state: the softmax's broadcast root sends to a PE that does not exist (PEs wait), and the
# star's wavelets wait at routers whose switch position never comes (routers sleep).
cp -r plans/mlp plans/mlp-dead
bc=$(sed -n 's/^\.color \(c[0-9]*\) flooding broadcast$/\1/p' plans/mlp-dead/programs/main.wpe | head -1)
sed -i "s/^\[x==[0-9]*\] send $bc /[x==9] send $bc /" plans/mlp-dead/programs/main.wpe
check mlp-dead data --allow-modified-plan --input x="$SRC/examples/mlp_softmax_x.npy"
python3 "$G" gen star 4 3 8 2 plans/star && python3 "$G" input 4 3 8 in_star.npy
sed -i 's/^\[x>0\] sendadv /[x>0] send /' plans/star/programs/main.wpe
check star data --allow-modified-plan --input a=in_star.npy
for t in mlp-dead star; do
  [ "$(cat r/$t.data.1/rc)" = 5 ] && grep -q "deadlock at cycle" r/$t.data.1/stderr || fail "$t: no deadlock"
done

# Run-time errors in the last rows (the last rank's band): the first in key order is said,
# by rank 0, with the trace of what ran before it. In the PE phase, an operand past its
# symbol's end at cycle 0; in the router phase, a wavelet arriving where no route takes it.
cp -r plans/mlp plans/mlp-pe
sed -i '0,/^zero %h 16 /s//[y==3, x==2] zero %h 9999\nzero %h 16 /' plans/mlp-pe/programs/main.wpe
check mlp-pe data --allow-modified-plan --input x="$SRC/examples/mlp_softmax_x.npy"
cp -r plans/mlp plans/mlp-rt
sed -i 's/^\[y in s2\] .route c3 N -> RAMP/[y in s2] .route c3 W -> RAMP/' plans/mlp-rt/programs/main.wpe
check mlp-rt data --allow-modified-plan --input x="$SRC/examples/mlp_softmax_x.npy"
grep -q "reaches past the end" r/mlp-pe.data.1/stderr && grep -q "which has no route" r/mlp-rt.data.1/stderr ||
  fail "the run-time errors were not made"

# more ranks than rows: one band a row, the fifth rank idle; a one-row plan: rank 0 alone
COUNTS="1 5" check mlp many --input x="$SRC/examples/mlp_softmax_x.npy"
python3 "$G" gen chain 12 1 9 2 plans/chain1 && python3 "$G" input 12 1 9 in_chain1.npy
check chain1 data --input a=in_chain1.npy

# Many simulations in a row (the host feeds one run's outputs to the next; rank 0's are shared,
# wf_sim_mpi_share): --generate (prefill, decode steps, and a switch plan onto a smaller
# decode region) and a pipelined plan's stages and transfers, against one process: the
# tokens, the caches, the outputs, the report, stdout and the exit code
GEN=$SRC/examples/models/generate
L=$(python3 -c "import sys; h=open(sys.argv[1],'rb').read(256).decode('latin1'); print(h.split('(1, ')[1].split(')')[0])" \
  "$GEN/llama_gqa_interleaved_prompt.npy")
Lm=$(python3 -c "import sys; h=open(sys.argv[1],'rb').read(256).decode('latin1'); print(h.split('(1, ')[1].split(')')[0])" \
  "$GEN/llama_mha_halfrope_prompt.npy")
waferc "$GEN/llama_gqa_interleaved.onnx" -o plans/gen --target=wse2 --mesh=6x4 --input-shape "input_ids=1x$L" \
  --generate=4 -q || fail "waferc --generate=4"
waferc "$GEN/llama_mha_halfrope.onnx" -o plans/genswitch --target=wse2 --mesh=8x6 --decode-mesh=6x4 \
  --input-shape "input_ids=1x$Lm" --generate=3 --kv-cache=concat -q || fail "waferc --decode-mesh"
waferc "$SRC/examples/models/tiny_llama.onnx" -o plans/pipe --input-shape input_ids=1x8 --target=wse2 --mesh=4x4 \
  --pipeline=2 -q || fail "waferc --pipeline=2"
many() { # NAME ARGS...: one process, then 2 and 3 ranks, the same bytes
  local name=$1 k
  shift
  for k in 1 2 3; do
    local r=r/$name.many.$k rc=0 run=(waferrun --threads=1)
    mkdir -p "$r"
    [ "$k" != 1 ] && run=("${MPIRUN[@]}" -np "$k" waferrun)
    "${run[@]}" "plans/$name" "$@" --output-dir "$r/out" --report "$r/report.json" >"$r/stdout" 2>"$r/stderr" || rc=$?
    settle "$r" "$rc"
    [ "$k" = 1 ] && { [ "$rc" = 0 ] || fail "$name: one process exited $rc: $(head -3 "$r/stderr")"; }
    [ "$k" = 1 ] || same_as_first "$name" many "$k" "mpirun -np $k differs from one process"
  done
  n=$((n + 1))
}
many gen --generate=4 --input "input_ids=$GEN/llama_gqa_interleaved_prompt.npy"
many genswitch --generate=3 --input "input_ids=$GEN/llama_mha_halfrope_prompt.npy"
wafer-npycmp r/gen.many.3/out/tokens.npy "$GEN/llama_gqa_interleaved_tokens.npy" --atol 0 --rtol 0 >/dev/null 2>&1 ||
  python3 - r/gen.many.3/out/tokens.npy "$GEN/llama_gqa_interleaved_tokens.npy" <<'PY' || fail "gen: the tokens under 3 ranks are not torch's first 4"
import struct, sys
def i64(p):
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    d = b[10 + hl:]
    return list(struct.unpack("<%dq" % (len(d) // 8), d))
got, want = i64(sys.argv[1]), i64(sys.argv[2])
sys.exit(0 if got == want[:len(got)] else 1)
PY
many pipe --input "input_ids=$SRC/examples/models/tiny_llama_input.npy"

# and the ranks did split the mesh (not each run the whole plan): their own account of it
WF_SIM_THREAD_STATS=1 "${MPIRUN[@]}" -x WF_SIM_THREAD_STATS -np 3 waferrun plans/meshgemm-13 --mode=timing -q \
  2>r/stats >/dev/null || fail "mpirun -np 3 with WF_SIM_THREAD_STATS"
grep -q '^ranks: 3 bands' r/stats && [ "$(grep -c '^  rank [0-2] rows' r/stats)" = 3 ] ||
  fail "mpirun -np 3 did not step 3 bands: $(cat r/stats)"

echo "sim_mpi: $n runs byte-identical under mpirun -np 2 and 3"
