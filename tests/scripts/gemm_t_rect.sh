#!/usr/bin/env bash
# dist.gemm_t (C = A·Bᵀ, B as stored) on W×H meshes (backend/gemm/lower_gemm_t.c, lower_rect):
#  1. ONNX's test_gemm_transposeB (B a graph input, so the transpose is not folded) on
#     non-square and 1-wide meshes: matches output_0.pb and the interpreter, and the manifest
#     shows a dist.gemm_t.
#  2. matmul(A, transpose(B)) of awkward sizes (N over H rows and over W columns cut
#     differently) on W×H meshes: matches the interpreter; simulated cycles within BOUND of
#     the prediction. Measured worst case before setting it: 7x11x5 on 3x5, predicted 223,
#     simulated 234 (+4.9%); BOUND was 6%. Since the row allreduce is the model's choice and
#     the prediction adds it as lowered, with its spread between rounds (docs/gemm.md): worst
#     +3.5% (7x11x5 on 1x4) and -3.5% (7x11x5 on 3x2). BOUND = 4.5%. Since B is multiplied as
#     stored (the PE instruction matmul_t, no transposed copy) and a large block moves in
#     double-buffered pieces: worst +4.3% (7x11x5 on 1x4) and -3.9% (7x11x5 on 4x6); the
#     40x64x200 case below moves 10 pieces a round on 2x3.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n
BOUND=0.045

t=test_gemm_transposeB
if [ -d "$NODE/$t" ]; then
  pairs=$(bash "$SRC/tests/tools/node_test_io.sh" "$NODE/$t" "$TMP/$t") || fail "$t: cannot prepare its inputs"
  ins=()
  for kv in $pairs; do ins+=(--input "$kv"); done
  for mesh in 2x3 3x2 5x2 1x3 4x1; do
    d=$TMP/$t/$mesh
    waferc "$NODE/$t/model.onnx" -o "$d" --target=test8x8 --mesh="$mesh" -q || fail "$t $mesh: waferc exited $?"
    grep -q '"dist.gemm_t"' "$d/manifest.json" || fail "$t $mesh: no dist.gemm_t in the plan"
    waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" || fail "$t $mesh: waferrun exited $?"
    out=$(ls "$d"/out/*.npy)
    wafer-npycmp "$out" "$TMP/$t/want.npy" --atol 1e-5 --rtol 1e-4 >/dev/null ||
      fail "$t $mesh: the plan's output differs from output_0.pb"
    n=$((n + 1))
  done
else
  echo "note: $NODE not found (libonnx-testdata): node test skipped"
fi

# The cycles of every plan below are checked (within BOUND of the prediction) by one python3
# run after the loop; $TMP/cycles lists them.
: >"$TMP/cycles"
for shp in "7 11 5" "7 11 13" "16 24 20" "40 64 200"; do
  set -- $shp
  M=$1 K=$2 N=$3 w=$TMP/gt_${M}_${K}_$N
  mkdir -p "$w"
  cat >"$w/t.wir" <<EOF2
module @gt {
  func @main(%a: f32[$M, $K], %b: f32[$N, $K]) -> f32[$M, $N] {
    %bt = transpose(%b) {perm = [1, 0]} : f32[$K, $N]
    %c = matmul(%a, %bt) : f32[$M, $N]
    return %c
  }
}
EOF2
  python3 "$SRC/tests/tools/npy.py" "$w/a.npy" "$M,$K" 1 1.0 "$w/b.npy" "$N,$K" 2 1.0
  waferc "$w/t.wir" --interpret --input a="$w/a.npy" --input b="$w/b.npy" --output-dir "$w/ref" -q
  for mesh in 2x3 3x2 4x6 3x5 5x3 1x4; do
    d=$w/$mesh
    waferc "$w/t.wir" -o "$d" --target=test8x8 --mesh="$mesh" -q || fail "$shp $mesh: waferc exited $?"
    grep -q '"dist.gemm_t"' "$d/manifest.json" || fail "$shp $mesh: no dist.gemm_t in the plan"
    waferrun "$d" -q --input a="$w/a.npy" --input b="$w/b.npy" --output-dir "$d/out" --report "$d/r.json" ||
      fail "$shp $mesh: waferrun exited $?"
    wafer-npycmp "$d/out/c.npy" "$w/ref/c.npy" --atol 1e-5 --rtol 1e-4 >/dev/null ||
      fail "$shp $mesh: the plan's output differs from the interpreter"
    printf '%s\t%s\t%s\t%s\n' "$d/manifest.json" "$d/r.json" "$BOUND" "$shp $mesh" >>"$TMP/cycles"
    n=$((n + 1))
  done
done
python3 "$SRC/tests/tools/cycles_check.py" "$TMP/cycles" || exit 1
echo "gemm_t_rect: $n plan(s) match"
