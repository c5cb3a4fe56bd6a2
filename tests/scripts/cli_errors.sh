#!/usr/bin/env bash
# Errors and checks a user expects (issue 15, items 6 and 8), each asserted on exit code and
# message: "did you mean" for options, enumerated values listed, unreadable files exit 6 in
# every tool, waferrun's checks before it simulates (plan directory, input names, output
# paths), --describe, generated inputs, the padding warning and --list-onnx-ops.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # WAFERC_TARGET_PATH, NPY, TMP, fail, n
E=$SRC/examples

# expect NAME CODE PATTERN -- command...: exit CODE and PATTERN (grep -E) on stderr+stdout.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" >"$TMP/$name.out" 2>&1
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$TMP/$name.out" >&2; fail "$name: exit $rc, expected $code"; }
  grep -Eq -- "$pattern" "$TMP/$name.out" || { cat "$TMP/$name.out" >&2; fail "$name: output lacks '$pattern'"; }
  n=$((n + 1))
}

# ---- "did you mean" and enumerated values --------------------------------------------------
expect opt_waferc 2 "unknown option '--gemm-algoo=cannon'; did you mean '--gemm-algo'\?" -- \
  waferc "$E/mlp_softmax.wir" -o "$TMP/p" --gemm-algoo=cannon
expect opt_common 2 "did you mean '--print-ir-after-all'\?" -- waferc "$E/mlp_softmax.wir" --emit=ir --print-ir-afer-all
expect opt_wafer_opt 2 "unknown option '--pass-pipline=dce'; did you mean '--pass-pipeline'\?" -- \
  wafer-opt "$E/mlp_softmax.wir" --pass-pipline=dce
expect opt_waferrun 2 "did you mean '--output-dir'\?" -- waferrun "$TMP/p" --ouput-dir x
expect opt_npycmp 2 "did you mean '--rtol'\?" -- wafer-npycmp --rtl 1 a.npy b.npy
expect opt_far 2 "unknown option '--zzzzzz' \(see waferc --help\)" -- waferc --zzzzzz
expect pass_near 2 "unknown pass 'canonicalise'; did you mean 'canonicalize'\?" -- \
  wafer-opt "$E/mlp_softmax.wir" --pass-pipeline=canonicalise
expect gemm_algo 2 "--gemm-algo: unknown algorithm 'foo' \(valid: meshgemm, cannon, summa, allgather, auto\)" -- \
  waferc "$E/mlp_softmax.wir" -o "$TMP/never" --gemm-algo=foo
expect reduce_algo 2 "--reduce-algo: unknown algorithm 'foo' \(valid: star, chain, " -- \
  waferc "$E/mlp_softmax.wir" -o "$TMP/never" --reduce-algo=foo
[ ! -e "$TMP/never" ] || fail "a rejected command line left $TMP/never behind"

# ---- files that cannot be read: exit 6 in every tool ----------------------------------------
expect io_waferc 6 "nope.wir: error: cannot open" -- waferc "$TMP/nope.wir" -o "$TMP/p"
expect io_waferc_npy 6 "nope.npy: error: cannot open" -- \
  waferc "$E/mlp_softmax.wir" --interpret --input x="$TMP/nope.npy" --output-dir "$TMP/o"
expect io_target 6 "nope.target: error: cannot open target file" -- waferc "$E/mlp_softmax.wir" -o "$TMP/p" --target="$TMP/nope.target"
expect io_wafer_opt 6 "cannot open" -- wafer-opt "$TMP/nope.wir"
expect io_npycmp 6 "nope.npy: error: cannot open" -- wafer-npycmp "$TMP/nope.npy" "$E/mlp_softmax_x.npy"
# token ids against float values: a mismatch of dtypes whatever the values, unless asked
python3 "$SRC/tests/tools/npy.py" "$TMP/ids0.npy" 4 1 i64:1
python3 "$SRC/tests/tools/npy.py" "$TMP/f0.npy" 4 1 0
expect npycmp_dtype 1 "dtypes differ: i64 against f32" -- wafer-npycmp "$TMP/ids0.npy" "$TMP/f0.npy"
expect npycmp_any_dtype 0 "^match" -- wafer-npycmp "$TMP/ids0.npy" "$TMP/f0.npy" --any-dtype
expect io_pb2npy 6 "nope.pb: error: cannot open" -- wafer-pb2npy "$TMP/nope.pb" "$TMP/o.npy"
expect io_cost 6 "cannot open target file" -- wafer-cost reduce --pes=4 --len=8 --target="$TMP/nope.target"
expect io_bench 6 "cannot open target file" -- \
  wafer-bench gemm --algo=cannon --mesh=2 --m=4 --k=4 --n=4 --target="$TMP/nope.target"
# a target whose queues cannot keep its links streaming (16-cycle hops, 8-wavelet buffers):
# a warning naming the depth that would, and the run goes on; wse2 (1-cycle hops) has none
sed 's/^queue_depth = .*/queue_depth = 8/; s/^name = .*/name = slowq/' "$SRC/targets/dojo.target" >"$TMP/slowq.target"
expect slow_queues 0 "slowq.target: queue_depth = 8 is below 17, what a buffer must hold to keep a 16-cycle hop" -- \
  wafer-bench gemm --algo=cannon --mesh=2 --m=4 --k=4 --n=4 --target="$TMP/slowq.target"
wafer-bench gemm --algo=cannon --mesh=2 --m=4 --k=4 --n=4 --target=wse2 2>&1 >/dev/null | grep -q queue_depth &&
  fail "wse2: a queue_depth warning"
n=$((n + 1))
mkdir -p "$TMP/empty"
expect io_onnx_test 6 "empty/model.onnx: error: cannot read" -- wafer-onnx-test "$TMP/empty"

# ---- waferrun before it simulates ----------------------------------------------------------
expect noplan 6 "no such plan directory: make a plan with .waferc model.onnx -o" -- waferrun "$TMP/noplan"
expect notaplan 1 "is not a plan directory \(it has no manifest.json\): make a plan with .waferc model.onnx -o" -- \
  waferrun "$TMP/empty"
expect model_not_plan 1 "is a model, not a plan: compile it first with .waferc .*mlp_softmax.wir -o plan/" -- \
  waferrun "$E/mlp_softmax.wir"

# A plan with two inputs (x and w): a wrong name lists them, every missing one is named at once.
cat >"$TMP/two.wir" <<'WIR'
module @two {
  func @main(%x: f32[8, 8], %w: f32[8, 8]) -> f32[8, 8] {
    %y = matmul(%x, %w) : f32[8, 8]
    return %y
  }
}
WIR
waferc "$TMP/two.wir" -o "$TMP/two" --target=test4x4 -q || fail "compile two.wir"
expect wrong_name 2 "--input xx: the plan has no input 'xx' \(its inputs: x and w\)" -- \
  waferrun "$TMP/two" --input xx=splat:1
expect near_name 2 "the plan has no input 'www'; did you mean 'w'\?|the plan has no input 'www' \(its inputs: x and w\)" -- \
  waferrun "$TMP/two" --input www=splat:1 --input x=splat:1
expect all_missing 2 "inputs are not bound: x, w " -- waferrun "$TMP/two"
expect io_waferrun_input 6 "nope.npy: error: cannot read --input x" -- \
  waferrun "$TMP/two" --input x="$TMP/nope.npy" --input w=splat:1
expect bad_generator 2 "expected random:SEED" -- waferrun "$TMP/two" --input x=random:-3 --input w=splat:1

# Every output path is checked first: exit 6, and nothing written (no report, no trace, no
# output directory), however many are bad; each bad one is named.
expect out_paths 6 "--report: cannot create it: the directory .*/nodir does not exist" -- \
  waferrun "$TMP/two" --input x=splat:1 --input w=splat:1 --report "$TMP/nodir/r.json" \
  --trace "$TMP/t.json" --output-dir "$TMP/outdir" --heatmap "$TMP/two/manifest.json"
grep -q -- "--heatmap: exists and is not a directory" "$TMP/out_paths.out" || fail "out_paths: --heatmap not named"
[ ! -e "$TMP/t.json" ] && [ ! -e "$TMP/outdir" ] || fail "out_paths: a run with a bad output path wrote something"
expect trace_is_dir 6 "--trace: is a directory" -- waferrun "$TMP/two" --input x=splat:1 --input w=splat:1 --trace "$TMP"

# --describe: inputs and outputs with shapes, dtypes and layouts, the target and mesh.
expect describe 0 "^plan .*two: target test4x4, mesh 4x4, 1 op, [0-9]+ predicted cycles" -- waferrun "$TMP/two" --describe
grep -Eq "^  x +f32\[8, 8\] +\{M_y, N_x\}" "$TMP/describe.out" || { cat "$TMP/describe.out"; fail "describe: input x"; }
grep -Eq "^  y +f32\[8, 8\] +\{M_y, N_x\}" "$TMP/describe.out" || { cat "$TMP/describe.out"; fail "describe: output y"; }

# Generated inputs: random:SEED is the same data for the same seed, other data for another;
# splat:V runs the model on all-V inputs (checked against the interpreter on the same data).
for s in 7 7 8; do
  waferrun "$TMP/two" -q --input x=random:$s --input w=random:1 --output-dir "$TMP/r$s.$n" || fail "random:$s"
  n=$((n + 1))
done
r7=$(ls -d "$TMP"/r7.* | head -1); r7b=$(ls -d "$TMP"/r7.* | tail -1); r8=$(ls -d "$TMP"/r8.*)
cmp -s "$r7/y.npy" "$r7b/y.npy" || fail "random:7 gave different data on two runs"
cmp -s "$r7/y.npy" "$r8/y.npy" && fail "random:7 and random:8 gave the same data"
python3 - "$TMP/half.npy" <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 8), }"
hdr += " " * (64 - (10 + len(hdr) + 1) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<64f", *([0.5] * 64)))
PY
waferrun "$TMP/two" -q --input x=splat:0.5 --input w=splat:0.5 --output-dir "$TMP/splat" || fail "splat run"
waferc "$TMP/two.wir" --interpret --input x="$TMP/half.npy" --input w="$TMP/half.npy" --output-dir "$TMP/splat_ref" ||
  fail "interpreter on 0.5s"
wafer-npycmp "$TMP/splat/y.npy" "$TMP/splat_ref/y.npy" -q || fail "splat:0.5 differs from the interpreter on 0.5s"
n=$((n + 1))

# The progress line: on a terminal only (script(1) gives the run one), with the plan's
# predicted total and an ETA. It is throttled to one line per 0.5 s of host time, so a run
# shorter than that may print none; one longer than 2 s must have printed one.
waferrun "$TMP/two" --input x=splat:1 --input w=splat:1 2>"$TMP/notty.err" >/dev/null || fail "notty run"
grep -q "simulating" "$TMP/notty.err" && fail "a progress line went to a non-terminal stderr"
if command -v script >/dev/null; then
  sed 's/\[8, 8\]/[768, 768]/g' "$TMP/two.wir" >"$TMP/big.wir"
  waferc "$TMP/big.wir" -o "$TMP/big" --target=wse2 --mesh=24x24 -q || fail "compile big.wir"
  predicted=$(waferrun "$TMP/big" --describe | sed -n 's/.* \([0-9]*\) predicted cycles$/\1/p')
  t0=$(date +%s%N)
  script -qc "waferrun '$TMP/big' --mode=timing" /dev/null | tr '\r' '\n' >"$TMP/progress.out"
  ms=$((($(date +%s%N) - t0) / 1000000))
  grep -q "^cycles: " "$TMP/progress.out" || fail "progress: the run under script(1) failed"
  if grep -aq "simulating" "$TMP/progress.out"; then
    grep -aEq "simulating: cycle [0-9]+ of ~$predicted predicted \([0-9]+%\), ETA [0-9]+ (s|min)" "$TMP/progress.out" ||
      { grep -a simulating "$TMP/progress.out"; fail "progress: no predicted total ($predicted) or ETA"; }
    n=$((n + 1))
  elif [ "$ms" -gt 2000 ]; then
    fail "progress: a $ms ms run on a terminal printed no progress line"
  fi
fi

# ---- waferc: the padding warning, --list-onnx-ops ------------------------------------------
cat >"$TMP/pad.wir" <<'WIR'
module @pad {
  func @main(%x: f32[3, 100], %w: f32[100, 8]) -> f32[3, 8] {
    %y = matmul(%x, %w) : f32[3, 8]
    return %y
  }
}
WIR
expect padding 0 "pad.wir:2:3: warning: argument %x f32\[3, 100\] is padded to \[8, 104\] on the 8x8 mesh: 64% of its elements are padding.*on --mesh=4x1" -- \
  waferc "$TMP/pad.wir" -o "$TMP/padplan" --target=test8x8 --mesh=8x8
waferc "$TMP/two.wir" -o "$TMP/two4" --target=test4x4 >"$TMP/no_padding.out" 2>&1 || fail "no_padding: waferc failed"
grep -q "padding" "$TMP/no_padding.out" && fail "no_padding: warned about a model the mesh divides"

expect list_ops 0 "^\| MatMul \| 1-21 \| mesh \|" -- waferc --list-onnx-ops
grep -q "^| Erf | 9-21 | mesh |" "$TMP/list_ops.out" || fail "list_ops: Erf"
grep -q "^| Trilu | 14-21 | mesh |" "$TMP/list_ops.out" || fail "list_ops: Trilu"
grep -q "^| TopK | 1-21 | mesh |" "$TMP/list_ops.out" || fail "list_ops: TopK"
grep -q "^| ArgMax | 1-21 | mesh |" "$TMP/list_ops.out" || fail "list_ops: ArgMax"
grep -q "^| Shape | 1-21 | folded at import |" "$TMP/list_ops.out" || fail "list_ops: Shape"
grep -q "not an op" "$TMP/list_ops.out" && fail "list_ops: onnx_ops.def names a graph op that ops.def lacks"

# ---- waferc: a compile that fails while writing leaves no half-written plan ----------------
# (the weights are read last: a constant whose .npy is missing fails after the programs and
# kernels were written)
mkdir -p "$TMP/noweights"
cp "$SRC/examples/mlp_softmax.wir" "$TMP/noweights/"
if waferc "$TMP/noweights/mlp_softmax.wir" -o "$TMP/halfplan" --target=test4x4 >"$TMP/halfplan.out" 2>&1; then
  fail "halfplan: compiled without its weights"
fi
left=$(cd "$TMP" && find halfplan -type f 2>/dev/null | sort | tr '\n' ' ')
[ -z "$left" ] || fail "halfplan: a failed compile left files behind: $left"
n=$((n + 1))

echo "cli_errors: $n checks passed"
