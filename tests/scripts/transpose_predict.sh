#!/usr/bin/env bash
# The mirror transpose's prediction (backend/ops/lower_transpose.c, docs/partition.md
# "Transpose over the fabric"): its P steps pipeline, so the manifest's predicted cycles must
# follow the simulation on small and large square meshes, small and large blocks, and a
# batch. Charging every step both broadcasts' whole distance (the model before 2026-12-01)
# predicted 2,400 cycles for the 32x32 case of 1-word blocks, which simulates in 539: this
# test fails on it. Measured with the model (BENCHMARKS.md, "Predictions of the mirror
# transpose"): within 2.5% on the cases below, +6.5% / -6% on 3x3 to 32x32 in general, up to
# +9.3% for 4x4 blocks on 128x128; held to 3% here (the cases below measure 2.3% at most). The outputs equal the interpreter's
# (functional mode), so the plans measured are working ones.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, NPY

# case MESH B R C: transpose of f32[B, R, C] on MESH x MESH
check() {
  local p=$1 b=$2 r=$3 c=$4 d="$TMP/t_$1_$2_$3_$4"
  mkdir -p "$d"
  printf 'module @m {\n  func @main(%%x: f32[%s, %s, %s]) -> (f32[%s, %s, %s]) {\n    %%0 = transpose(%%x) {perm = [0, 2, 1]} : f32[%s, %s, %s]\n    return %%0\n  }\n}\n' \
    "$b" "$r" "$c" "$b" "$c" "$r" "$b" "$c" "$r" >"$d/t.wir"
  waferc "$d/t.wir" -o "$d/plan" --target=wse2 --mesh="${p}x$p" -q 2>"$d/err" ||
    fail "$p x $p [$b, $r, $c]: waferc exited $?: $(head -1 "$d/err")"
  grep -q '"bcast-transpose"' "$d/plan/manifest.json" || fail "$p x $p: not lowered as the mirror"
  python3 "$NPY" "$d/x.npy" "$b,$r,$c" 7 2.0
  waferc "$d/t.wir" --interpret --input x="$d/x.npy" --output-dir "$d/ref" -q || fail "interpreter failed"
  waferrun "$d/plan" --input x="$d/x.npy" --output-dir "$d/out" --report "$d/report.json" -q ||
    fail "$p x $p [$b, $r, $c]: waferrun exited $?"
  local out
  for out in "$d/ref"/*.npy; do
    wafer-npycmp "$d/out/$(basename "$out")" "$out" --atol 0 --rtol 0 >"$d/cmp" 2>&1 ||
      fail "$p x $p [$b, $r, $c]: differs from the interpreter: $(head -1 "$d/cmp")"
  done
  python3 - "$d/report.json" "$p" "$b" "$r" "$c" <<'EOF' || fail "$p x $p [$b, $r, $c]: prediction off (above)"
import json, sys
rep = json.load(open(sys.argv[1]))
op = [o for o in rep["ops"] if o["op"] == "transpose"][0]
sim, pred = op["cycles"], op["predicted_cycles"]
err = (pred - sim) / sim
print("transpose %sx%s [%s, %s, %s]: %d simulated, %d predicted (%+.1f%%)" % (sys.argv[2], sys.argv[2], *sys.argv[3:], sim, pred, 100 * err))
sys.exit(0 if abs(err) <= 0.03 else 1)
EOF
}

check 4 1 16 16   # 4x4 blocks (bandwidth-bound steps)
check 8 1 8 8     # 1-word blocks (the diagonal chain)
check 8 2 13 22   # padded blocks, a batch of 2
check 16 1 32 32  # 2x2 blocks
check 32 1 32 32  # 1-word blocks on 32x32: the old model's 4.5x
echo "transpose predictions: ok"
