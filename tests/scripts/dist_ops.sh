#!/usr/bin/env bash
# Distributed elementwise ops and reductions on partitioned tensors (tests/e2e_dist/*.wir):
# compiled for several meshes, run on waferrun, compared with the reference interpreter.
# On meshes wider/taller than 1 the reductions cross the fabric (checked in the report).
# Also: an op the backend cannot lower honestly is rejected with a located error naming it.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

# x: f32[8, 16] from a fixed LCG in [-2, 2), written as .npy without numpy.
python3 "$SRC/tests/tools/npy.py" "$TMP/x.npy" 8,16 12345 2.0

n=0
for model in "$SRC"/tests/e2e_dist/*.wir; do
  stem=$(basename "$model" .wir)
  waferc "$model" --interpret --input x="$TMP/x.npy" --output-dir "$TMP/$stem.ref" ||
    fail "$stem: interpreter failed"
  for mesh in 1x1 4x1 1x4 2x4 4x2 4x4; do
    d=$TMP/$stem.$mesh
    waferc "$model" -o "$d/plan" --target=test4x4 --mesh=$mesh || fail "$stem $mesh: waferc exited $?"
    waferrun "$d/plan" -q --input x="$TMP/x.npy" --output-dir "$d/out" --report "$d/report.json" ||
      fail "$stem $mesh: waferrun exited $?"
    for ref in "$TMP/$stem.ref"/*.npy; do
      name=$(basename "$ref")
      wafer-npycmp "$d/out/$name" "$ref" --atol 1e-5 --rtol 1e-4 >/dev/null ||
        fail "$stem $mesh: $name differs from the interpreter"
    done
    if [ "$mesh" != 1x1 ]; then
      python3 - "$d/report.json" <<'PY' || fail "$stem $mesh: no wavelet crossed a link"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["links"]["wavelet_hops"] > 0 and r["links"]["undelivered"] == 0
PY
    fi
    n=$((n + 1))
  done
done

# A reshape that re-blocks a split dim moves data between PEs: a small tensor is gathered whole
# (lower_reshape_whole.c; tests/lit/partition/reshape_whole.wir), a larger one (8192 words here)
# rejected by name, located.
cat > "$TMP/bad.wir" <<'EOF2'
module @bad {
  func @main(%x: f32[64, 128]) -> f32[128, 64] {
    %y = reshape(%x) : f32[128, 64]
    return %y
  }
}
EOF2
set +e
waferc "$TMP/bad.wir" -o "$TMP/bad" --target=test4x4 2>"$TMP/bad.err"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "bad reshape: exit $rc, want 3 (unsupported)"
grep -q "bad.wir:3:5: error: 'reshape' that changes how the partitioned dims are blocked" "$TMP/bad.err" ||
  fail "bad reshape: unexpected message: $(cat "$TMP/bad.err")"
echo "dist_ops: $n compiled plan(s) match the interpreter"
