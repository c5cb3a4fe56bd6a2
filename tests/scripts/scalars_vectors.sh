#!/usr/bin/env bash
# Two shapes partition used to refuse (exit 3), now lowered (docs/partition.md):
#  1. Rank-0 values computed inside the graph become [1] tensors: a 1-D . 1-D matmul (a dot
#     product), reduce_sum / reduce_max over every axis without keepdims, and products and
#     quotients of them. Results that were rank 0 stay rank-0 .npy files. Against the
#     interpreter on 1x1, 2x3, 3x2, 4x4 and 5x2.
#  2. A vector whose split moves to the other axis (backend/ops/lower_movement.c, vector
#     re-split): the transpose Gemm(transA) makes of a one-column A ([13, 1] {K_y} ->
#     [1, 13] {K_x}) or a one-row A ([1, 11] {M_x} -> [11, 1] {M_y}), and a reshape [12] ->
#     [12, 1]. Against the interpreter with every --gemm-algo on seven meshes; the re-split's
#     predicted cycles must equal the simulated ones (its gather rounds are the transpose
#     relayout's, whose prediction is exact for one block per round).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh"

ref() { # NAME "INPUTS": the interpreter's outputs of $TMP/NAME.wir in $TMP/NAME.ref
  local ins=() kv
  for kv in $2; do ins+=(--input "$kv"); done
  waferc "$TMP/$1.wir" --interpret "${ins[@]}" --output-dir "$TMP/$1.ref" -q || fail "$1: the interpreter exited $?"
}

# ---- 1. computed scalars ----
cat >"$TMP/dot.wir" <<'W'
module @dot {
  func @main(%a: f32[13], %b: f32[13], %x: f32[7, 9]) -> (f32[], f32[7, 9], f32[]) {
    %d = matmul(%a, %b) : f32[]
    %s = reduce_sum(%x) {axes = [0, 1], keepdims = false} : f32[]
    %m = reduce_max(%x) {axes = [0, 1], keepdims = false} : f32[]
    %q = mul(%d, %s) : f32[]
    %y = div(%x, %m) : f32[7, 9]
    return %q, %y, %m
  }
}
W
# the inputs of both parts, in one npy.py run
python3 "$NPY" "$TMP/da.npy" 13 1 1.0 "$TMP/db.npy" 13 2 1.0 "$TMP/dx.npy" 7,9 3 1.0 \
  "$TMP/m1.a.npy" 13,1 4 1.0 "$TMP/m1.b.npy" 13,6 5 1.0 \
  "$TMP/k1.a.npy" 1,11 4 1.0 "$TMP/k1.b.npy" 1,5 5 1.0 \
  "$TMP/rs.a.npy" 12 4 1.0 "$TMP/rs.b.npy" 12,5 5 1.0
ins="a=$TMP/da.npy b=$TMP/db.npy x=$TMP/dx.npy"
ref dot "$ins"
for mesh in 1x1 2x3 3x2 4x4 5x2; do
  run "dot_$mesh" "$TMP/dot.wir" "$mesh" "$ins" y "$TMP/dot.ref/y.npy" ""
  for o in q m; do
    wafer-npycmp "$TMP/dot_$mesh/out/$o.npy" "$TMP/dot.ref/$o.npy" --atol 1e-5 --rtol 1e-4 >/dev/null ||
      fail "dot $mesh: $o differs from the interpreter"
    # the header (in the first 128 bytes) says shape ()
    h=$(head -c 128 "$TMP/dot_$mesh/out/$o.npy" | tr -d '\0')
    [[ "$h" == *"'shape': ()"* ]] || fail "dot $mesh: $o.npy is not rank 0"
  done
done

# ---- 2. vector re-splits ----
cat >"$TMP/m1.wir" <<'W'
module @m1 {
  func @main(%a: f32[13, 1], %b: f32[13, 6]) -> f32[1, 6] {
    %at = transpose(%a) {perm = [1, 0]} : f32[1, 13]
    %c = matmul(%at, %b) : f32[1, 6]
    return %c
  }
}
W
cat >"$TMP/k1.wir" <<'W'
module @k1 {
  func @main(%a: f32[1, 11], %b: f32[1, 5]) -> f32[11, 5] {
    %at = transpose(%a) {perm = [1, 0]} : f32[11, 1]
    %c = matmul(%at, %b) : f32[11, 5]
    return %c
  }
}
W
cat >"$TMP/rs.wir" <<'W'
module @rs {
  func @main(%a: f32[12], %b: f32[12, 5]) -> f32[12, 5] {
    %r = reshape(%a) : f32[12, 1]
    %c = mul(%r, %b) : f32[12, 5]
    return %c
  }
}
W
# each plan's vector re-split is checked (one vector-resplit op, predicted = simulated cycles)
# by one python3 run after the loop; $TMP/resplits lists the cases
: >"$TMP/resplits"
for name in m1 k1 rs; do
  ins="a=$TMP/$name.a.npy b=$TMP/$name.b.npy"
  ref "$name" "$ins"
  for mesh in 2x3 3x2 4x4 5x2 1x3 3x1 7x5; do
    for algo in meshgemm cannon summa allgather auto; do
      [ "$name" = rs ] && [ "$algo" != summa ] && continue # no matmul: the algorithm changes nothing
      d="${name}_${mesh}_$algo"
      run "$d" "$TMP/$name.wir" "$mesh" "$ins" c "$TMP/$name.ref/c.npy" "" --gemm-algo=$algo
      waferrun "$TMP/$d" -q --mode=timing --report "$TMP/$d.json" >/dev/null || fail "$d: timing run exited $?"
      echo "$d" >>"$TMP/resplits"
    done
  done
done
python3 - "$TMP" <<'PY' || exit 1
import json, sys, traceback
tmp, bad = sys.argv[1], 0
for d in open(tmp + "/resplits").read().split():
    try:
        ops = json.load(open("%s/%s/manifest.json" % (tmp, d)))["ops"]
        sim = {o["index"]: o["cycles"] for o in json.load(open("%s/%s.json" % (tmp, d)))["ops"]}
        vr = [(i, o) for i, o in enumerate(ops) if o.get("lowering") == "vector-resplit"]
        assert len(vr) == 1, "%s: %d vector re-splits" % (d, len(vr))
        i, o = vr[0]
        assert sim[i] == o["predicted_cycles"], "%s: predicted %d, simulated %d" % (d, o["predicted_cycles"], sim[i])
    except Exception:
        traceback.print_exc()
        print("FAIL: %s: vector re-split" % d, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
echo "scalars_vectors: $n plans match the interpreter"
