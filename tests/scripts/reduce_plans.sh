#!/usr/bin/env bash
# Reductions and softmax over any axes on multi-PE meshes, compiled to plans and run on
# waferrun, each output checked against the model's reference and waferc's interpreter:
#  - ONNX node tests (libonnx-testdata) of ReduceMax / ReduceMean (all axes, several axes,
#    negative axes, keepdims=0), Softmax over every axis, and the expanded (ReduceMax, Sub,
#    Exp, ReduceSum, Div / Log) forms, on 2x2 and 3x2 meshes: their dims (2..5) are split
#    unevenly, so most axes are padded and the statistics must skip the padding;
#  - .wir cases built for the padding: softmax over a length-5 axis on 2x2 and 3x3 meshes,
#    reduce_max of all-negative values over a padded axis (a zero from the padding would
#    win), means and multi-axis reductions whose last PEs hold only padding, and a norm
#    over a padded axis.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
NODE=${WAFERC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
export WAFERC_TARGET_PATH=$SRC/targets
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
n=0

# run NAME MODEL MESH WANT.npy|- "NAME=FILE ..." [extra check: grep pattern on the manifest]
# The interpreter's outputs do not depend on the mesh: computed once per model and inputs (REFS).
declare -A REFS
run() {
  local name=$1 model=$2 mesh=$3 want=$4 inputs=$5 d="$TMP/$1" ins=() kv
  mkdir -p "$d"
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$model" -o "$d/plan" --target=test8x8 --mesh="$mesh" 2>"$d/err" ||
    fail "$name: waferc exited $?: $(grep -m1 error "$d/err")"
  waferrun "$d/plan" -q "${ins[@]}" --output-dir "$d/out" 2>"$d/rerr" ||
    fail "$name: waferrun exited $?: $(head -1 "$d/rerr")"
  local ref=${REFS["$model|$inputs"]:-}
  if [ -z "$ref" ]; then
    ref=$d/ref
    waferc "$model" --interpret "${ins[@]}" --output-dir "$ref" || fail "$name: interpreter failed"
    REFS["$model|$inputs"]=$ref
  fi
  local outs=("$d"/out/*.npy)
  [ "${#outs[@]}" -eq 1 ] || fail "$name: expected one output, got ${#outs[@]}"
  local out=${outs[0]}
  if [ "$want" != - ]; then
    wafer-npycmp "$out" "$want" --atol 1e-5 --rtol 1e-4 >"$d/cmp" 2>&1 ||
      fail "$name: the plan's output differs from the reference: $(head -1 "$d/cmp")"
  fi
  wafer-npycmp "$out" "$ref/$(basename "$out")" --atol 1e-5 --rtol 1e-4 >"$d/cmp" 2>&1 ||
    fail "$name: the plan's output differs from the interpreter: $(head -1 "$d/cmp")"
  n=$((n + 1))
}

if [ -d "$NODE/test_reduce_max_keepdims_example" ]; then
  for t in test_reduce_max_default_axes_keepdims_random \
           test_reduce_max_do_not_keepdims_random test_reduce_max_keepdims_random \
           test_reduce_max_negative_axes_keepdims_random test_reduce_mean_default_axes_keepdims_random \
           test_reduce_mean_do_not_keepdims_random test_reduce_mean_keepdims_random \
           test_reduce_mean_negative_axes_keepdims_random \
           test_softmax_axis_0 test_softmax_axis_1 test_softmax_axis_2 test_softmax_default_axis \
           test_softmax_large_number test_softmax_negative_axis \
           test_softmax_axis_0_expanded test_softmax_axis_1_expanded test_softmax_axis_2_expanded \
           test_logsoftmax_axis_0_expanded test_logsoftmax_axis_1_expanded \
           test_logsoftmax_axis_2_expanded; do
    dir=$NODE/$t in=$TMP/$t.in
    [ -d "$dir" ] || fail "$t: not in $NODE"
    ins=$(bash "$SRC/tests/tools/node_test_io.sh" "$dir" "$in") || fail "$t: cannot prepare its inputs"
    for mesh in 2x2 3x2; do run "${t}_$mesh" "$dir/model.onnx" "$mesh" "$in/want.npy" "$ins"; done
  done
  echo "ok   ONNX node tests: $n plans"
else
  echo "note: $NODE not found (libonnx-testdata): node tests skipped"
fi

# .wir cases (inputs from tests/tools/npy.py; the interpreter is the reference).
NPY="python3 $SRC/tests/tools/npy.py"
wir() { printf 'module @m {\n  func @main(%s) -> %s {\n%s\n  }\n}\n' "$2" "$3" "$4" >"$TMP/$1.wir"; }
m=$n
# every input of the .wir cases, in one npy.py run
$NPY "$TMP/x35.npy" 3,5 7 4.0 "$TMP/x253.npy" 2,5,3 11 3.0 "$TMP/x75.npy" 7,5 5 2.0 "$TMP/g5.npy" 5 3 1.0

wir sm5 '%x: f32[3, 5]' 'f32[3, 5]' '    %0 = softmax(%x) {axis = -1} : f32[3, 5]
    return %0'
for mesh in 2x2 3x3 4x4; do run "sm5_$mesh" "$TMP/sm5.wir" "$mesh" - "x=$TMP/x35.npy"; done

# softmax over axis -2 of [2, 5, 3] (leading dim 2, the axis padded on y) and over axis 0.
wir sm_col '%x: f32[2, 5, 3]' 'f32[2, 5, 3]' '    %0 = softmax(%x) {axis = -2} : f32[2, 5, 3]
    return %0'
wir sm_lead '%x: f32[2, 5, 3]' 'f32[2, 5, 3]' '    %0 = softmax(%x) {axis = 0} : f32[2, 5, 3]
    return %0'
for mesh in 2x2 3x3; do
  run "sm_col_$mesh" "$TMP/sm_col.wir" "$mesh" - "x=$TMP/x253.npy"
  run "sm_lead_$mesh" "$TMP/sm_lead.wir" "$mesh" - "x=$TMP/x253.npy"
done

# reduce_max of all-negative values (-x*x) over a padded axis whose padding is still zero
# (mul and neg keep it so): the padding's zeros must not win. On 4x4 the last PE column
# holds only padding.
wir max_neg '%x: f32[3, 5]' 'f32[3, 1]' '    %s = mul(%x, %x) : f32[3, 5]
    %d = neg(%s) : f32[3, 5]
    %0 = reduce_max(%d) {axes = [1]} : f32[3, 1]
    return %0'
for mesh in 2x2 3x3 4x4; do run "max_neg_$mesh" "$TMP/max_neg.wir" "$mesh" - "x=$TMP/x35.npy"; done
python3 - "$TMP/max_neg_3x3/out" <<'PY' || fail "max_neg: the maxima must all be negative"
import glob, struct, sys
b = open(glob.glob(sys.argv[1] + "/*.npy")[0], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
v = struct.unpack("<3f", b[10 + hl:10 + hl + 12])
assert all(x < 0 for x in v), v
PY

# Multi-axis: max over both split axes (keepdims), mean over [0, 2] without keepdims, and a
# mean over every axis of a [7, 5] tensor on 4x4 (the last PEs of both axes hold padding only).
wir multi '%x: f32[2, 5, 3]' 'f32[2, 1, 1]' '    %0 = reduce_max(%x) {axes = [-1, -2]} : f32[2, 1, 1]
    return %0'
wir mean02 '%x: f32[2, 5, 3]' 'f32[5]' '    %0 = reduce_mean(%x) {axes = [0, 2], keepdims = false} : f32[5]
    return %0'
wir mean_all '%x: f32[7, 5]' 'f32[1, 1]' '    %e = exp(%x) : f32[7, 5]
    %0 = reduce_mean(%e) {axes = []} : f32[1, 1]
    return %0'
for mesh in 2x2 3x2; do
  run "multi_$mesh" "$TMP/multi.wir" "$mesh" - "x=$TMP/x253.npy"
  run "mean02_$mesh" "$TMP/mean02.wir" "$mesh" - "x=$TMP/x253.npy"
done
run mean_all_4x4 "$TMP/mean_all.wir" 4x4 - "x=$TMP/x75.npy"

# rmsnorm over a padded last axis: the mean square counts only the 5 real columns.
wir rms '%x: f32[3, 5], %g: f32[5]' 'f32[3, 5]' '    %0 = rmsnorm(%x, %g) {axis = -1} : f32[3, 5]
    return %0'
run rms_2x2 "$TMP/rms.wir" 2x2 - "x=$TMP/x35.npy g=$TMP/g5.npy"

# A matrix-vector product (mul + reduce_sum, decompose_matvec.c) of exp(A), whose padding
# along the padded K = 5 is not zero: the sum skips it.
wir matvec '%a: f32[7, 5], %v: f32[5]' 'f32[7]' '    %e = exp(%a) : f32[7, 5]
    %0 = matmul(%e, %v) : f32[7]
    return %0'
run matvec_2x2 "$TMP/matvec.wir" 2x2 - "a=$TMP/x75.npy v=$TMP/g5.npy"

# examples/mlp_softmax.wir on 3x3: the matmul's K = 32 and the softmax's 16 columns are both
# padded (blocks of 11 and 6); the softmax masks its last PE column's padding.
E=$SRC/examples
run mlp_softmax_3x3 "$E/mlp_softmax.wir" 3x3 - "x=$E/mlp_softmax_x.npy"
grep -q '"local+masked+allreduce-x"' "$TMP/mlp_softmax_3x3/plan/manifest.json" ||
  fail "mlp_softmax: the softmax should be local+masked+allreduce-x"

# The manifest says a padded statistic is masked and which allreduces it holds.
grep -q '"local+masked+allreduce-xy"' "$TMP/mean_all_4x4/plan/manifest.json" ||
  fail "mean_all: the manifest's lowering should be local+masked+allreduce-xy"
echo "ok   .wir cases: $((n - m)) plans"
echo "reduce_plans: $n plan(s) match their references and the interpreter"
