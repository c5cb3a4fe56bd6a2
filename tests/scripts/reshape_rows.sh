#!/usr/bin/env bash
# Reshapes that regroup the rows and keep the last dim ([B, T, E] <-> [B*T, E], as Hugging
# Face's MoE layers flatten a batch's tokens; backend/ops/lower_reshape_rows.c), as plans
# against the interpreter on 1x1, 2x2, 3x2, 4x4 and 5x3: rows that divide no mesh height
# (padding on both sides), rank 3 and 4, flattening and restoring with ops between (the rows
# must land where the next op expects them), the manifest's lowering.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n, run
python3 "$NPY" "$TMP/x.npy" 3,5,7 1 1.0 "$TMP/w.npy" 7,9 2 1.0 "$TMP/z.npy" 2,3,2,6 3 1.0
cat >"$TMP/rows.wir" <<WIR
module @rows {
  const @w : f32[7, 9] = file<"$TMP/w.npy">
  func @main(%x: f32[3, 5, 7], %z: f32[2, 3, 2, 6]) -> (f32[3, 5, 9], f32[15, 7], f32[4, 3, 6]) {
    %f = reshape(%x) : f32[15, 7]
    %e = exp(%f) : f32[15, 7]
    %h = matmul(%f, @w) : f32[15, 9]
    %y = reshape(%h) : f32[3, 5, 9]
    %g = reshape(%z) : f32[12, 6]
    %s = softmax(%g) {axis = -1} : f32[12, 6]
    %u = reshape(%s) : f32[4, 3, 6]
    return %y, %e, %u
  }
}
WIR
waferc "$TMP/rows.wir" --interpret --input "x=$TMP/x.npy" --input "z=$TMP/z.npy" --output-dir "$TMP/ref" 2>"$TMP/err" ||
  fail "the interpreter failed: $(head -3 "$TMP/err")"
for mesh in 1x1 2x2 3x2 4x4 5x3; do
  d=$TMP/rows.$mesh
  waferc "$TMP/rows.wir" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
    fail "$mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
  waferrun "$d" -q --input "x=$TMP/x.npy" --input "z=$TMP/z.npy" --output-dir "$d/out" 2>"$TMP/err" ||
    fail "$mesh: waferrun exited $?: $(head -1 "$TMP/err")"
  for o in y e u; do
    wafer-npycmp "$d/out/$o.npy" "$TMP/ref/$o.npy" --atol 1e-5 --rtol 1e-4 >"$TMP/cmp" 2>&1 ||
      fail "$mesh: $o differs from the interpreter: $(head -1 "$TMP/cmp")"
  done
  n=$((n + 1))
done
python3 - "$TMP/rows.4x4/manifest.json" "$TMP/rows.1x1/manifest.json" <<'PY' || fail "the manifests"
import json, sys
for path, want in zip(sys.argv[1:], ("rows-allgather-y", "local-rows")):
    low = [o["lowering"] for o in json.load(open(path))["ops"] if o["op"] == "reshape"]
    assert low == [want] * 4, (path, low)
PY
echo "reshape_rows: $n meshes passed"
