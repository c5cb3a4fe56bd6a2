#!/usr/bin/env bash
# ONNX models compiled to plans, run on waferrun and checked twice: against the model's own
# reference output (ONNX's output_0.pb, or torch's for mlp2) and against waferc's reference
# interpreter. Covers ONNX's MatMul/Gemm node tests on 1x1, 2x2 and 3x3 meshes (their dims
# are 2..10 and mostly prime: the blocks are zero-padded) and the 2-layer MLP
# examples/models/mlp2.onnx on meshes up to 4x4 with every GEMM algorithm that lowers.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

# check NAME MODEL WANT.npy MESH "NAME=FILE ..." [waferc flags...]
# The interpreter's outputs depend on neither the mesh nor the flags: computed once per model
# and inputs (REFS).
declare -A REFS
check() {
  local name=$1 model=$2 want=$3 mesh=$4 inputs=$5
  shift 5
  local d="$TMP/$name" ins=() kv
  mkdir -p "$d"
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$model" -o "$d/plan" --target=test4x4 --mesh="$mesh" "$@" 2>"$d/err" ||
    fail "$name: waferc exited $?: $(head -3 "$d/err")"
  waferrun "$d/plan" -q "${ins[@]}" --output-dir "$d/out" || fail "$name: waferrun exited $?"
  local ref=${REFS["$model|$inputs"]:-}
  if [ -z "$ref" ]; then
    ref=$d/ref
    waferc "$model" --interpret "${ins[@]}" --output-dir "$ref" || fail "$name: interpreter failed"
    REFS["$model|$inputs"]=$ref
  fi
  local outs=("$d"/out/*.npy)
  [ "${#outs[@]}" -eq 1 ] || fail "$name: expected one output, got ${#outs[@]}"
  local out=${outs[0]}
  [ -f "$ref/$(basename "$out")" ] || fail "$name: the interpreter wrote no $(basename "$out")"
  wafer-npycmp "$out" "$want" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$name: the plan's output differs from the model's reference"
  wafer-npycmp "$out" "$ref/$(basename "$out")" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$name: the plan's output differs from the interpreter"
  n=$((n + 1))
  echo "ok   $name ($mesh${*:+ $*})"
}

# ONNX node tests: the graph's inputs in order, from the plan's manifest.
if [ -d "$NODE/test_matmul_2d" ]; then
  for t in test_matmul_2d test_gemm_all_attributes test_gemm_alpha test_gemm_beta \
           test_gemm_default_matrix_bias test_gemm_default_no_bias \
           test_gemm_default_single_elem_vector_bias test_gemm_default_vector_bias \
           test_gemm_default_zero_bias test_gemm_transposeA test_gemm_transposeB; do
    dir=$NODE/$t
    # Their dims (2..10, mostly prime) are padded on 2x2 and 3x3. transB becomes dist.gemm_t
    # (B as stored); a transposed A is the mirror relayout over the fabric (lower_transpose.c).
    meshes="1x1 2x2 3x3"
    ins=$(bash "$SRC/tests/tools/node_test_io.sh" "$dir" "$TMP/$t.in") || fail "$t: cannot prepare its inputs"
    for mesh in $meshes; do
      check "${t}_$mesh" "$dir/model.onnx" "$TMP/$t.in/want.npy" "$mesh" "$ins"
    done
    if [ "$t" = test_gemm_transposeA ]; then
      grep -q '"bcast-transpose"' "$TMP/${t}_3x3/plan/manifest.json" ||
        fail "$t: Gemm with transA must transpose A over the fabric"
    fi
    if [ "$t" = test_gemm_transposeB ]; then
      grep -q '"dist.gemm_t"' "$TMP/${t}_3x3/plan/manifest.json" ||
        fail "$t: Gemm with transB must lower to dist.gemm_t"
    fi
  done
else
  echo "note: $NODE not found (libonnx-testdata): node tests skipped"
fi

# The 2-layer MLP (torch export: Gemm with transB=1 twice, GELU between): the weights are
# transposed at compile time, the GEMMs distributed, the bias and GELU local.
M=$SRC/examples/models
for mesh in 1x1 2x2 4x4; do
  for algo in summa cannon meshgemm; do
    check "mlp2_${mesh}_$algo" "$M/mlp2.onnx" "$M/mlp2_ref.npy" "$mesh" "x=$M/mlp2_input.npy" \
      --gemm-algo=$algo
  done
done
# On a multi-PE mesh the layers really communicate.
python3 - "$TMP/mlp2_4x4_summa/plan/manifest.json" <<'PY' || fail "mlp2: manifest check"
import json, sys
m = json.load(open(sys.argv[1]))
ops = [o["op"] for o in m["ops"]]
assert ops.count("dist.gemm") == 2 or ops.count("matmul") == 2, ops
assert "transpose" not in ops, "constant weights must be transposed at compile time: %s" % ops
PY
echo "onnx_plans: $n plan(s) match their references and the interpreter"
