#!/usr/bin/env bash
# Dense Mixture-of-Experts blocks exported by torch (examples/models/export_moe.py: gate Linear,
# softmax, TopK, renormalised gate weights scattered by ScatterElements into a [T, N] matrix,
# or read by GatherElements, or a softmax of the top-k logits scattered with reduction add,
# or a OneHot of the indices weighted and summed over k (compares, wheres, a cast and the
# indices' reshape gathered whole on the mesh);
# SwiGLU or GELU experts, the weighted sum), 4 to 16 experts, top-1 and top-2:
#  - the reference interpreter reproduces torch's output (max abs error 1e-4, rtol 0);
#  - topk and scatter_elements alone (backend/ops/lower_topk.c) as plans against the
#    interpreter on 1x1, 2x2, 3x2, 4x4 and 5x3: the axis split along x, padded (13 and k = 3
#    divide no mesh width), ties inside and across PEs (values in {-3, -2, -1}: a padding
#    zero must never win), largest = false, a rank-1 and a rank-3 operand, the indices as an
#    i64 output (exact), scattered with reduction none, add and mul and read back by
#    gather_elements;
#  - every block as a plan on waferrun against torch (1e-4) on 2x2, 3x2, 4x4 and 5x3, and
#    on 1x1 for the blocks whose experts' weights fit one PE (the stacked combine through
#    partition's rewrite, passes/partition_moe.c; a batch's tokens flattened and restored
#    through backend/ops/lower_reshape_rows.c);
#  - the sparse blocks (moe_ec_*: expert choice, moe_cap_*: top-k with a capacity of C tokens
#    per expert): each expert's C tokens gathered by computed ids, its outputs added back into
#    their rows (index_add: Gather and ScatterElements along the token axis, rewritten by
#    passes/partition_dispatch.c into gather_elements / scatter_elements on the transposes),
#    as plans against torch on the same meshes; moe_ecg_* write expert choice with
#    x.gather(0, ix) and y.scatter_add(0, ix, ...) (GatherElements and ScatterElements along
#    axis 0, the same rewrite);
#  - Llama 4's tiled blocks (moe_l4_*: the tokens repeated once per expert, ONNX Tile, imported
#    as a reshape, an expand and a reshape; stacked expert weights applied by batched matmuls),
#    each token's expert weights gathered from the stacked parameters (moe_tw_e4_k1: Gather
#    of a [N, E, F] constant by computed ids, imported as rows of a [N, E F] table) and a top-k
#    by a descending sort (moe_e4_k2_sort), against torch on the same meshes;
#  - 128 tokens of Mixtral's dispatch on 8x8 (moe_hf_t128_e4_k2), its permuted one-hot computed
#    permuted (passes/partition_sink.c) rather than transposed whole;
#  - the dynamic blocks (moe_hf_*: Hugging Face's Mixtral / Qwen2-MoE dispatch by
#    torch.where; moe_nz_*: top-1 token lists by torch.nonzero written back by index_put_ or
#    index_add): NonZero's lists kept whole and masked at the scatter
#    (frontend/onnx/nonzero_list.c), as plans against torch on the same meshes;
#  - the capacity blocks (moe_sw_*: Switch Transformer, top-1 with C tokens per expert counted
#    by CumSum, a product with a triangle of ones; clamped positions cast to integers, which
#    wf_int_valued allows on the mesh; einsum dispatch and combine; an expert over capacity),
#    against torch on 1x1 to 5x3 (5 and 3 divide neither T: the padding rule for a matmul
#    with one zero, one finite padding); GShard's top-2 (moe_gs_e4_c4: second choices queued
#    after the first, an expert over capacity) on 1x1 to 5x3 (on 5x3 its combine contracts
#    16 over padding the experts' outputs may fill: the lowering zeroes it first, zero_k), and
#    the Switch blocks on 8x8 (12 over 8, the same);
#  - DeepSeek's argsort dispatch (moe_ds_*: the (token, slot) pairs sorted by expert, a TopK of
#    integers; tokens by order // k, an integer division; the outputs put back by ScatterND;
#    the [T, k, E] combine rewritten as strided row slices, passes/partition_moe.c; a shared
#    expert; DeepSeek-V3's grouped gate, its [T, G, S] views rewritten as per-group slices)
#    against torch on 1x1 to 5x3;
#  - each block's router (passes/moe_routes.c; a top-1 argmax router too, GShard's two
#    choices as two routes): the plan's moe_route_<i> equals the
#    interpreter's indices, the manifest lists it under "moe", and the report's tokens per
#    expert, assignments and max/avg are the interpreter's indices counted (timing mode: not
#    counted). An expert-choice block has no token-to-expert router (each expert picks its
#    tokens): none is listed.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
M=$SRC/examples/models/moe
BLOCKS="moe_b2_e4_k2 moe_b2_e8_k2_flat moe_e4_k1 moe_e4_k2 moe_e4_k2_onehot moe_e4_k2_sort moe_e5_k2_einsum moe_e6_k2_softk moe_e6_k2_stack moe_e8_k1_gelu moe_e8_k2 moe_e8_k2_gather moe_e16_k2"
SPARSE="moe_ec_e4_c4 moe_ec_e8_c3_gelu moe_ecg_e4_c4 moe_ecg_e6_c3_gelu moe_cap_e4_k2_c8 moe_cap_e6_k1_c3 moe_cap_e16_k2_c2"
DYNAMIC="moe_hf_e4_k2 moe_hf_b2_e8_k2 moe_hf_b3_e8_k4_tok moe_hf_e6_k1_gelu moe_hf_e4_k2_shared moe_nz_e4_put moe_nz_e4_putacc moe_nz_e4_select"
CAPACITY="moe_sw_e4_c3 moe_sw_e6_c2_swiglu moe_sw_e5_c1 moe_gs_e4_c4"
SORTED="moe_ds_e8_k2 moe_ds_b2_e6_k3 moe_ds_v3_e8_k2_g4"
TILED="moe_l4_e4_k1 moe_l4_b2_e6_k2 moe_tw_e4_k1"
DYNAMIC="$DYNAMIC $CAPACITY $SORTED $TILED"
BLOCKS="$BLOCKS $SPARSE $DYNAMIC"
PLANS="moe_b2_e4_k2 moe_b2_e8_k2_flat moe_e4_k1 moe_e4_k2 moe_e4_k2_onehot moe_e4_k2_sort moe_e5_k2_einsum moe_e6_k2_softk moe_e6_k2_stack moe_e8_k1_gelu moe_e8_k2 moe_e8_k2_gather moe_e16_k2 $SPARSE $DYNAMIC"

# ---- the interpreter against torch ---------------------------------------------------------
for b in $BLOCKS; do
  waferc "$M/$b.onnx" --interpret --input "x=$M/${b}_input.npy" --output-dir "$TMP/$b.ref" 2>"$TMP/err" ||
    fail "$b: waferc --interpret exited $?: $(head -3 "$TMP/err")"
  wafer-npycmp "$TMP/$b.ref/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
    fail "$b: the interpreter differs from torch: $(head -1 "$TMP/cmp")"
  n=$((n + 1))
done

# ---- topk and scatter_elements alone --------------------------------------------------------
# descr of a .npy file ('<i8', '<f4'): the header's 'descr' (the header is the file's first
# line; grep rather than a python3 start-up per file)
descr() {
  local d
  d=$(LC_ALL=C grep -ao -m1 "'descr': '[^']*'" "$1") || true
  d=${d#"'descr': '"}
  printf '%s\n' "${d%"'"}"
}
# ties SHAPE PATH [SHAPE PATH ...]: f32 values in {-3, -2, -1} (ties everywhere, no zero),
# each file from the same seed
ties() {
  python3 - "$@" <<'PY'
import struct, sys
for shape, path in zip(sys.argv[1::2], sys.argv[2::2]):
    shape = tuple(int(d) for d in shape.split(","))
    n, s, vals = 1, 11, []
    for d in shape:
        n *= d
    for _ in range(n):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
        vals.append(-float(1 + (s >> 16) % 3))
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%df" % n, *vals))
PY
}
ties 3,2,13 "$TMP/t3.npy" 13 "$TMP/v1.npy"
python3 "$NPY" "$TMP/r2.npy" 7,13 3 1.0
cat >"$TMP/topk.wir" <<EOF
module @topk {
  func @main(%t: f32[3, 2, 13], %r: f32[7, 13], %v: f32[13]) -> (f32[3, 2, 3], i64[3, 2, 3], f32[3, 2, 13], f32[7, 2], i64[7, 2], f32[7, 13], f32[7, 13], f32[2], i64[2], f32[7, 2], f32[3, 2, 3]) {
    %tv, %ti = topk(%t) {k = 3} : f32[3, 2, 3], i64[3, 2, 3]
    %ts = scatter_elements(%t, %ti, %tv) {axis = -1, reduction = mul} : f32[3, 2, 13]
    %rv, %ri = topk(%r) {k = 2, axis = 1, largest = false} : f32[7, 2], i64[7, 2]
    %e = exp(%r) : f32[7, 13]
    %rn = scatter_elements(%e, %ri, %rv) {axis = 1} : f32[7, 13]
    %ra = scatter_elements(%e, %ri, %rv) {axis = -1, reduction = add} : f32[7, 13]
    %vv, %vi = topk(%v) {k = 2} : f32[2], i64[2]
    %rg = gather_elements(%e, %ri) {axis = 1} : f32[7, 2]
    %tg = gather_elements(%ts, %ti) {axis = -1} : f32[3, 2, 3]
    return %tv, %ti, %ts, %rv, %ri, %rn, %ra, %vv, %vi, %rg, %tg
  }
}
EOF
ins=(--input "t=$TMP/t3.npy" --input "r=$TMP/r2.npy" --input "v=$TMP/v1.npy")
waferc "$TMP/topk.wir" --interpret "${ins[@]}" --output-dir "$TMP/topk.ref" 2>"$TMP/err" ||
  fail "topk: the interpreter failed: $(head -3 "$TMP/err")"
for mesh in 1x1 2x2 3x2 4x4 5x3; do
  d=$TMP/topk.$mesh
  waferc "$TMP/topk.wir" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
    fail "topk $mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
  waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" 2>"$TMP/err" ||
    fail "topk $mesh: waferrun exited $?: $(head -1 "$TMP/err")"
  for f in "$TMP/topk.ref"/*.npy; do
    b=$(basename "$f")
    dg=$(descr "$d/out/$b") df=$(descr "$f")
    [ "$dg" = "$df" ] || fail "topk $mesh: $b is $dg, want $df"
    tol=1e-5
    [ "$df" = "<i8" ] && tol=0
    wafer-npycmp "$d/out/$b" "$f" --atol $tol --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "topk $mesh: $b differs from the interpreter: $(head -1 "$TMP/cmp")"
  done
  n=$((n + 1))
done
# the 4x4 and the 1x1 manifests, in one python3 run
python3 - "$TMP/topk.4x4/manifest.json" "$TMP/topk.1x1/manifest.json" <<'PY' || exit 1
import json, sys, traceback
def m4x4(path):
    ops = json.load(open(path))["ops"]
    tk = [o["lowering"] for o in ops if o["op"] == "topk"]
    sc = [o["lowering"] for o in ops if o["op"] == "scatter_elements"]
    assert tk == ["local+masked+allreduce-x(6)", "local+masked+allreduce-x(4)", "local+masked+allreduce-x(4)"], tk
    assert sc == ["allgather-x+local"] + ["allgather-x+local-scatter"] * 2, sc # mul: compare and update
    ge = [o["lowering"] for o in ops if o["op"] == "gather_elements"]
    assert ge == ["allgather-x+local-gather"] * 2, ge # data's rows whole, then the row gather
def m1x1(path):
    ops = [o for o in json.load(open(path))["ops"] if o["op"] in ("topk", "scatter_elements", "gather_elements")]
    want = {"topk": ("local",), "gather_elements": ("local-gather",), "scatter_elements": ("local-scatter", "local")}
    assert all(o["lowering"] in want[o["op"]] and not o.get("collectives") for o in ops), ops
bad = 0
for f, path, what in ((m4x4, sys.argv[1], "topk: the 4x4 manifest"), (m1x1, sys.argv[2], "topk: the 1x1 manifest")):
    try:
        f(path)
    except Exception:
        traceback.print_exc()
        print("FAIL: " + what, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY

# ---- a sparse block's indexing alone (passes/partition_dispatch.c) ------------------------------
# an expert's row of topk's token indices by a rank-0 constant, its tokens' rows of x and
# elements of a vector g, and the rows added back into zeros (reduction add), and the same rows
# read by gather_elements along axis 0 (torch's x.gather(0, ids expanded over E)), against
# the interpreter exactly
python3 "$NPY" "$TMP/dx.npy" 8,16 5 1.0
python3 "$NPY" "$TMP/dg.npy" 8 6 1.0
python3 "$NPY" "$TMP/dp.npy" 8,3 7 1.0
cat >"$TMP/dispatch.wir" <<EOF
module @dispatch {
  const @z : f32[8, 16] = dense<0.0>
  const @k : i64[] = dense<2>
  func @main(%x: f32[8, 16], %g: f32[8], %p: f32[8, 3]) -> (f32[8, 16], f32[4], f32[4, 16], f32[4, 16]) {
    %pt = transpose(%p) {perm = [1, 0]} : f32[3, 8]
    %tv, %ti = topk(%pt) {k = 4} : f32[3, 4], i64[3, 4]
    %i = gather(%ti, @k) {axis = 0} : i64[4]
    %xi = gather(%x, %i) {axis = 0} : f32[4, 16]
    %gi = gather(%g, %i) {axis = 0} : f32[4]
    %iu = reshape(%i) : i64[4, 1]
    %ie = expand(%iu) : i64[4, 16]
    %y = scatter_elements(@z, %ie, %xi) {axis = 0, reduction = add} : f32[8, 16]
    %xg = gather_elements(%x, %ie) {axis = 0} : f32[4, 16]
    return %y, %gi, %xi, %xg
  }
}
EOF
ins=(--input "x=$TMP/dx.npy" --input "g=$TMP/dg.npy" --input "p=$TMP/dp.npy")
waferc "$TMP/dispatch.wir" --interpret "${ins[@]}" --output-dir "$TMP/dispatch.ref" 2>"$TMP/err" ||
  fail "dispatch: the interpreter failed: $(head -3 "$TMP/err")"
for mesh in 1x1 2x2 5x3; do
  d=$TMP/dispatch.$mesh
  waferc "$TMP/dispatch.wir" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
    fail "dispatch $mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
  waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" 2>"$TMP/err" ||
    fail "dispatch $mesh: waferrun exited $?: $(head -1 "$TMP/err")"
  for b in y gi xi xg; do # named as the interpreter names them (the rewrite keeps the names)
    wafer-npycmp "$d/out/$b.npy" "$TMP/dispatch.ref/$b.npy" --atol 0 --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "dispatch $mesh: $b differs from the interpreter: $(head -1 "$TMP/cmp")"
  done
  n=$((n + 1))
done

# ---- the blocks as plans against torch -------------------------------------------------------
# The routers' choices (passes/moe_routes.c) from the interpreter: the graph with the router's
# indices returned as moe_route_<i>, interpreted.
: >"$TMP/routes"
for b in $PLANS; do
  waferc "$M/$b.onnx" --emit=ir --print-constants --pass-pipeline=canonicalize,raise,cse,dce,moe-routes \
    >"$TMP/$b.routes.wir" 2>"$TMP/err" || fail "$b: the routes' IR: waferc exited $?: $(head -1 "$TMP/err")"
  waferc "$TMP/$b.routes.wir" --interpret --input "x=$M/${b}_input.npy" --output-dir "$TMP/$b.routes" -q \
    2>"$TMP/err" || fail "$b: the routes' interpreter exited $?: $(head -1 "$TMP/err")"
  meshes="2x2 3x2 4x4 5x3"
  case $b in moe_e4_* | moe_b2_e8_k2_flat | moe_ec_e4_* | moe_ecg_e4_* | moe_l4_e4_* | moe_tw_* | moe_cap_e4_* | moe_cap_e6_* | moe_hf_e[46]_* | moe_nz_* | moe_sw_* | moe_ds_*) meshes="1x1 $meshes" ;; esac
  # GShard's combine sums over (expert, slot) = 16, which 5 does not divide, with the experts'
  # outputs' padding possibly nonzero there: zeroed first (checked below)
  case $b in moe_gs_*) meshes="1x1 $meshes" ;; esac
  routed=1
  case $b in moe_ec_* | moe_ecg_* | moe_ds_e* | moe_ds_b*) routed=0 ;; esac # expert choice; sorted indices (no router listed)
  [ -f "$TMP/$b.routes/moe_route_0.npy" ] || [ $routed = 0 ] || fail "$b: no router found"
  [ -f "$TMP/$b.routes/moe_route_0.npy" ] && [ $routed = 0 ] && fail "$b: an expert-choice block taken for a router"
  for mesh in $meshes; do
    d=$TMP/$b.$mesh
    waferc "$M/$b.onnx" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
      fail "$b $mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
    waferrun "$d" -q --input "x=$M/${b}_input.npy" --output-dir "$d/out" --report "$d/report.json" 2>"$TMP/err" ||
      fail "$b $mesh: waferrun exited $?: $(head -1 "$TMP/err")"
    wafer-npycmp "$d/out/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "$b $mesh: the plan differs from torch: $(head -1 "$TMP/cmp")"
    case $b in moe_ec_* | moe_ecg_* | moe_cap_*) # the dispatch went through the rewrite, no row gather left
      grep -Eq '"op":[[:space:]]*"gather_elements"' "$d/manifest.json" && ! grep -Eq '"op":[[:space:]]*"gather"' "$d/manifest.json" ||
        fail "$b $mesh: the dispatch is not gather_elements on the mesh" ;;
    esac
    n=$((n + 1))
    [ $routed = 1 ] || continue
    for rf in "$TMP/$b.routes"/moe_route_*.npy; do # (GShard: one per choice)
      rn=$(basename "$rf")
      wafer-npycmp "$d/out/$rn" "$rf" --atol 0 --rtol 0 >"$TMP/cmp" 2>&1 ||
        fail "$b $mesh: the router's choices ($rn) differ from the interpreter's: $(head -1 "$TMP/cmp")"
    done
    wafer-npycmp "$d/out/moe_route_0.npy" "$TMP/$b.routes/moe_route_0.npy" --atol 0 --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "$b $mesh: the router's choices differ from the interpreter's: $(head -1 "$TMP/cmp")"
    printf '%s\t%s\n' "$d" "$TMP/$b.routes" >>"$TMP/routes"
  done
done
# A contraction over a padded K whose operands' padding partition cannot prove safe has its
# lowering zero that padding first (zero_k, docs/partition.md "Padding"): GShard's combine on
# 5x3 (16 pairs over 5 columns; matched torch above) and the Switch blocks' on 8x8 (12 over 8),
# which were refused (exit 3) before; the manifest's explain says so
grep -q 'padding along K zeroed first' "$TMP/moe_gs_e4_c4.5x3/manifest.json" ||
  fail "moe_gs_e4_c4 5x3: the combine's explain does not name the zeroing"
for b in moe_sw_e4_c3 moe_sw_e6_c2_swiglu; do
  d=$TMP/$b.8x8
  waferc "$M/$b.onnx" -o "$d" --target=test8x8 --mesh=8x8 -q 2>"$TMP/err" ||
    fail "$b 8x8: waferc exited $?: $(grep -m1 error "$TMP/err")"
  grep -q 'padding along K zeroed first' "$d/manifest.json" || fail "$b 8x8: no zeroed padding in the explain"
  waferrun "$d" -q --input "x=$M/${b}_input.npy" --output-dir "$d/out" 2>"$TMP/err" ||
    fail "$b 8x8: waferrun exited $?: $(head -1 "$TMP/err")"
  wafer-npycmp "$d/out/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
    fail "$b 8x8: the plan differs from torch: $(head -1 "$TMP/cmp")"
  n=$((n + 1))
done
# tokens per expert: the manifest's "moe" and the report's counts against the interpreter's
# indices; in timing mode nothing is counted
d=$TMP/moe_e8_k2.4x4
waferrun "$d" -q --mode=timing --input "x=$M/moe_e8_k2_input.npy" --report "$d/timing.json" ||
  fail "moe_e8_k2 4x4: waferrun --mode=timing exited $?"
python3 - "$TMP/routes" "$d/timing.json" <<'PY' || fail "the reports' tokens per expert are wrong"
import json, os, struct, sys
def npy_i64(path):
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    assert b"'<i8'" in b[10:10 + hl], path
    data = b[10 + hl:]
    return struct.unpack("<%dq" % (len(data) // 8), data)
for line in open(sys.argv[1]):
    d, refdir = line.rstrip("\n").split("\t")
    man = json.load(open(d + "/manifest.json"))
    out = {o["name"]: o for o in man["outputs"]}
    reps = {r["output"]: r for r in json.load(open(d + "/report.json"))["moe"]}
    names = sorted(n for n in os.listdir(refdir) if n.startswith("moe_route_"))
    assert [r["output"] + ".npy" for r in man["moe"]] == names, (d, man["moe"], names)
    for route in man["moe"]:
        o = route["output"]
        assert out[o]["shape"][-1] == route["k"], (d, route)
        rep = reps[o]
        idx = npy_i64(os.path.join(refdir, o + ".npy"))
        want = [sum(1 for i in idx if i == e) for e in range(route["experts"])]
        if rep["tokens_per_expert"] != want or rep["assignments"] != len(idx) or rep["outside"] != 0:
            sys.exit("%s: %s: tokens per expert %s, the interpreter's routes give %s" % (d, o, rep, want))
        if abs(rep["max_over_avg"] - max(want) * len(want) / len(idx)) > 1e-9:
            sys.exit("%s: %s: max_over_avg %s" % (d, o, rep["max_over_avg"]))
(t,) = json.load(open(sys.argv[2]))["moe"]
if "tokens_per_expert" in t or t["experts"] != 8:
    sys.exit("timing mode: %s" % t)
PY
n=$((n + 1))

# 128 tokens of Mixtral's dispatch on 8x8: its one-hot permuted to [experts, k, tokens] was a
# transpose of other dims than the last two, gathered whole (padded, 4 x 8 x 128 words: past
# what a PE holds, exit 3); partition_sink.c computes the mask permuted instead, from the
# indices' [k, T] transpose and the experts' constants, so no op gathers the mask whole
b=moe_hf_t128_e4_k2 d=$TMP/t128
waferc "$M/$b.onnx" -o "$d" --target=test8x8 --mesh=8x8 -q 2>"$TMP/err" ||
  fail "$b 8x8: waferc exited $?: $(grep -m1 error "$TMP/err")"
waferrun "$d" -q --input "x=$M/${b}_input.npy" --output-dir "$d/out" 2>"$TMP/err" ||
  fail "$b 8x8: waferrun exited $?: $(head -1 "$TMP/err")"
wafer-npycmp "$d/out/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
  fail "$b 8x8: the plan differs from torch: $(head -1 "$TMP/cmp")"
python3 - "$d/manifest.json" <<'PY' || fail "$b 8x8: the mask is still moved whole"
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
whole = [o["result"] for o in ops if o["op"] == "transpose" and o.get("lowering") == "gather-whole"]
assert not whole, whole
PY
n=$((n + 1))

echo "moe_plans: $n checks passed"
