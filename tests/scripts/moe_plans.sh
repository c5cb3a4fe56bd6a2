#!/usr/bin/env bash
# Dense Mixture-of-Experts blocks exported by torch (examples/models/export_moe.py: gate Linear,
# softmax, TopK, renormalised gate weights scattered by ScatterElements into a [T, N] matrix,
# SwiGLU or GELU experts, the weighted sum), 4 to 16 experts, top-1 and top-2:
#  - the reference interpreter reproduces torch's output (max abs error 1e-4, rtol 0);
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
M=$SRC/examples/models/moe
BLOCKS="moe_e4_k1 moe_e4_k2 moe_e6_k2_stack moe_e8_k1_gelu moe_e8_k2 moe_e16_k2"

# ---- the interpreter against torch ---------------------------------------------------------
for b in $BLOCKS; do
  waferc "$M/$b.onnx" --interpret --input "x=$M/${b}_input.npy" --output-dir "$TMP/$b.ref" 2>"$TMP/err" ||
    fail "$b: waferc --interpret exited $?: $(head -3 "$TMP/err")"
  wafer-npycmp "$TMP/$b.ref/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
    fail "$b: the interpreter differs from torch: $(head -1 "$TMP/cmp")"
  n=$((n + 1))
done

echo "moe_plans: $n checks passed"
