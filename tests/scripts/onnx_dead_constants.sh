#!/usr/bin/env bash
# Constants the ONNX importer drops (their only consumer is dead code) leave no trace that
# looks like a reference to another constant. The model: initializer z (global 0) feeds an Add
# whose result nobody uses, initializer w (global 1) is MatMul's B. After import z is gone and
# w is global 0; z's value used to point at global 0 too, so the GEMM's "only use" test saw w
# read twice and refused to pad its K: on 3x2, K = 7 was re-cut over the fabric instead of
# padded to lcm(3, 2) tiles (12). The plan must pad, and equal the interpreter.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # WAFERC_TARGET_PATH, NPY, TMP, fail, n

python3 - "$SRC/tests/tools" "$TMP/dead.onnx" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import onnx_write as ow
M, K, N = 4, 7, 5
z = ("z", [M, K], [0.5] * (M * K))
w = ("w", [K, N], ow.lcg_values(K * N, 3))
nodes = [ow.node("Add", ["a", "z"], ["unused"], "dead_add"), ow.node("MatMul", ["a", "w"], ["c"], "mm")]
open(sys.argv[2], "wb").write(ow.model(nodes, [("a", [M, K])], [("c", [M, N])], initializers=[z, w]))
EOF
python3 "$NPY" "$TMP/a.npy" 4,7 1 1.0

for algo in meshgemm cannon; do
  waferc "$TMP/dead.onnx" -o "$TMP/p_$algo" --target=test8x8 --mesh=3x2 --gemm-algo=$algo -q ||
    fail "$algo: waferc exited $?"
  python3 - "$TMP/p_$algo/manifest.json" "$algo" <<'EOF' || fail "$algo: K not padded"
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
ex = " ".join(o.get("explain", "") for o in ops if o.get("op") == "dist.gemm")
if sys.argv[2] + " " not in ex or "K 7 padded to 12" not in ex:
    sys.exit("explain: " + ex)
EOF
  waferrun "$TMP/p_$algo" --input a="$TMP/a.npy" --output-dir "$TMP/o_$algo" -q >/dev/null ||
    fail "$algo: waferrun exited $?"
  n=$((n + 1))
done
waferc "$TMP/dead.onnx" --interpret --input a="$TMP/a.npy" --output-dir "$TMP/ref" >/dev/null
for algo in meshgemm cannon; do
  wafer-npycmp "$TMP/o_$algo/c.npy" "$TMP/ref/c.npy" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$algo: differs from the interpreter"
done
echo "onnx_dead_constants: $n plans padded and equal to the interpreter"
