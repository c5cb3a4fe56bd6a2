#!/usr/bin/env bash
# waferc's one-ring fallback (docs/gemm.md, "When the whole plan does not fit"): auto chooses
# each GEMM alone, and on a region whose GEMMs mix MeshGEMM's interleaved rings and Cannon's
# plain ones the plan holds both rings' colors and route codes. A Switch block of 64 tokens
# (examples/models/moe/moe_sw_e8_c8_t64) on 8x8 test8x8:
#  - with lower-gemm{algo=auto} alone (an explicit pipeline: no fallback) the plan mixes the
#    two and is out of colors or route codes (exit 4);
#  - waferc's default compiles it again with lower-gemm{one-ring}, says so in a note, and keeps
#    one shift algorithm (and SUMMA, if any) on the mesh; the plan matches torch;
#  - it takes fewer simulated cycles than the all-SUMMA plan the fallbacks used to end in.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
B=$SRC/examples/models/moe/moe_sw_e8_c8_t64
PIPE="canonicalize,raise,cse,dce,head-layout,partition,moe-routes,lower-gemm{algo=auto},symbol-dce"

rc=0
waferc "$B.onnx" -o "$TMP/mixed" --target=test8x8 --mesh=8x8 -q --pass-pipeline="$PIPE" 2>"$TMP/mixed.err" || rc=$?
[ "$rc" = 4 ] || fail "the mixed-ring plan exited $rc, want 4 (out of colors or route codes): $(head -2 "$TMP/mixed.err")"
grep -Eq "no free color|route codes" "$TMP/mixed.err" || fail "the mixed-ring plan's error: $(grep -m1 error "$TMP/mixed.err")"
n=$((n + 1))

waferc "$B.onnx" -o "$TMP/ring" --target=test8x8 --mesh=8x8 -q 2>"$TMP/ring.err" ||
  fail "waferc exited $?: $(grep -m1 error "$TMP/ring.err")"
grep -q "one shift-GEMM ring kind per region" "$TMP/ring.err" || fail "no one-ring note: $(cat "$TMP/ring.err")"
waferc "$B.onnx" -o "$TMP/summa" --target=test8x8 --mesh=8x8 -q --gemm-algo=summa 2>/dev/null ||
  fail "the SUMMA plan exited $?"
for p in ring summa; do
  waferrun "$TMP/$p" -q --input "x=${B}_input.npy" --output-dir "$TMP/$p/out" --report "$TMP/$p/r.json" ||
    fail "$p: waferrun exited $?"
  wafer-npycmp "$TMP/$p/out/y.npy" "${B}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
    fail "$p: the plan differs from torch: $(head -1 "$TMP/cmp")"
done
python3 - "$TMP/ring/manifest.json" "$TMP/ring/r.json" "$TMP/summa/r.json" <<'PY' || fail "the one-ring plan (above)"
import json, sys
algos = {o["lowering"].split("-")[0] for o in json.load(open(sys.argv[1]))["ops"] if o["op"] == "dist.gemm"}
assert algos & {"meshgemm", "cannon"} and not {"meshgemm", "cannon"} <= algos, algos
ring, summa = (json.load(open(p))["cycles"]["total"] for p in sys.argv[2:])
assert ring < summa, (ring, summa)
print("one ring: %s, %d cycles against all-SUMMA's %d" % (sorted(algos), ring, summa))
PY
n=$((n + 2))
echo "gemm_one_ring: $n checks passed"
