#!/usr/bin/env bash
# The embedding lookup (gather of a constant table by i64 token ids) and the argmax over the
# vocabulary, compiled to plans and run on waferrun (backend/ops/lower_index.c):
#  - a .wir model ids -> gather -> mul -> matmul -> argmax, returning the logits and the
#    next ids, on 1x1, 2x2, 3x2, 4x4 and 5x3: the table's E = 10, the vocabulary 17 and
#    L = 7 are divided by none of the multi-PE meshes, so the table, the logits and the
#    ids are padded; every output matches waferc --interpret (the i64 ids exactly) and is
#    written as an int64 .npy;
#  - argmax of values with ties across PEs (integers in a narrow range) and all-negative
#    rows (a padding zero must not win), over the last axis (split along x), the middle one
#    (along y) and the first (whole), with select_last_index too, and the next ids fed back
#    into a gather; an argmax of a vector (an i64 scalar);
#  - ids out of range: waferrun exits 5 naming the gather; negative ids count from the
#    end; generated inputs (random:, splat:) give valid ids;
#  - a table larger than a PE's SRAM: the memory planner's exit 4;
#  - examples/models/tiny_argmax.onnx (torch's Embedding, Linear and argmax(dim=-1)), whose
#    plan must match torch's own outputs;
#  - examples/models/tiny_llama.onnx and the tiny GPT-2 models of examples/models/exported/
#    (tied and untied heads), token ids to logits, as plans against torch's logits (1e-4).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
NPY="python3 $NPY"

# descr of a .npy file ('<i8', '<f4'): the header's 'descr' (the header is the file's first
# line; grep rather than a python3 start-up per file)
descr() {
  local d
  d=$(LC_ALL=C grep -ao -m1 "'descr': '[^']*'" "$1") || true
  d=${d#"'descr': '"}
  printf '%s\n' "${d%"'"}"
}

# run NAME MODEL MESH "NAME=FILE ..." [REF_DIR]: plan vs interpreter (or REF_DIR's files);
# integer outputs must be int64 and exact, floats within 1e-4. The interpreter's outputs do
# not depend on the mesh: computed once per model and inputs (REFS).
declare -A REFS
run() {
  local name=$1 model=$2 mesh=$3 inputs=$4 ref=${5:-} d="$TMP/$1" ins=() kv
  mkdir -p "$d"
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$model" -o "$d/plan" --target=test8x8 --mesh="$mesh" -q 2>"$d/err" ||
    fail "$name: waferc exited $?: $(grep -m1 error "$d/err")"
  waferrun "$d/plan" -q "${ins[@]}" --output-dir "$d/out" 2>"$d/rerr" ||
    fail "$name: waferrun exited $?: $(head -1 "$d/rerr")"
  if [ -z "$ref" ]; then
    ref=${REFS["$model|$inputs"]:-}
    if [ -z "$ref" ]; then
      ref=$d/ref
      waferc "$model" --interpret "${ins[@]}" --output-dir "$ref" 2>"$d/ierr" || fail "$name: interpreter failed"
      REFS["$model|$inputs"]=$ref
    fi
  fi
  local f got dg df
  for f in "$ref"/*.npy; do
    got=$d/out/$(basename "$f")
    [ -f "$got" ] || fail "$name: no output $(basename "$f")"
    dg=$(descr "$got") df=$(descr "$f")
    [ "$dg" = "$df" ] || fail "$name: $(basename "$f") is $dg, want $df"
    if [ "$df" = "<i8" ]; then
      wafer-npycmp "$got" "$f" --atol 0 --rtol 0 >"$d/cmp" 2>&1 ||
        fail "$name: $(basename "$f") differs from the reference: $(head -1 "$d/cmp")"
    else
      wafer-npycmp "$got" "$f" --atol 1e-4 --rtol 0 >"$d/cmp" 2>&1 ||
        fail "$name: $(basename "$f") differs from the reference: $(head -1 "$d/cmp")"
    fi
  done
  n=$((n + 1))
}

# ---- ids -> gather -> mul -> matmul -> argmax -----------------------------------------------
$NPY \
  "$TMP/emb.npy" 13,10 1 1.0 \
  "$TMP/g.npy" 10 2 1.0 \
  "$TMP/w.npy" 10,17 3 1.0 \
  "$TMP/ids.npy" 2,7 4 i64:13 \
  "$TMP/ids1.npy" 1,1 9 i64:13 \
  "$TMP/idsv.npy" 9 8 i64:13 \
  "$TMP/emb17.npy" 17,10 5 1.0 \
  "$TMP/x17.npy" 17 5 1.0 \
  "$TMP/tied_ids.npy" 2,5 7 i64:11
# The generated inputs of the sections below, in one python3 run: ties.npy (argmax ties),
# bad.npy and neg.npy (ids out of range, negative ids) and tied.wir (a tied head).
python3 - "$TMP" <<'PY'
import struct, sys
def ties(tmp):
    # [3, 2, 17]: values in {-3, -2, -1} (ties everywhere, and no zero: a padding zero would win)
    # and a row whose maximum appears only in its last column (the padded PE's real element).
    rows, s = [], 7
    for r in range(6):
        row = []
        for j in range(17):
            s = (s * 1103515245 + 12345) & 0x7FFFFFFF
            row.append(-float(1 + (s >> 16) % 3))
        rows.append(row)
    rows[5] = [-3.0] * 16 + [-1.0]
    vals = [v for row in rows for v in row]
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 17), }"
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open(tmp + "/ties.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%df" % len(vals), *vals))
def badneg(tmp):
    def w(path, vals):
        h = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 7), }"
        h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
        open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<14q", *vals))
    w(tmp + "/bad.npy", [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 13, 4, 5, 6])
    w(tmp + "/neg.npy", [0, -1, 2, -13, 12, 5, 6, -7, 1, 2, 3, 4, 5, -2])
def tied(tmp):
    v, e = 11, 6
    t = [((i * 7 + j * 3) % 13) / 13.0 - 0.4 for i in range(v) for j in range(e)]
    def lit(xs): return "[" + ", ".join(repr(x) for x in xs) + "]"
    ht = [t[j * e + i] for i in range(e) for j in range(v)]
    open(tmp + "/tied.wir", "w").write(
        "module @tied {\n  const @emb : f32[%d, %d] = dense<%s>\n  const @head : f32[%d, %d] = dense<%s>\n"
        "  func @main(%%ids: i64[2, 5]) -> (f32[2, 5, %d], i64[2, 5]) {\n"
        "    %%x = gather(@emb, %%ids) {axis = 0} : f32[2, 5, %d]\n"
        "    %%logits = matmul(%%x, @head) : f32[2, 5, %d]\n"
        "    %%next = argmax(%%logits) {axis = -1, keepdims = false} : i64[2, 5]\n"
        "    return %%logits, %%next\n  }\n}\n" % (v, e, lit(t), e, v, lit(ht), v, e, v))
for f in (ties, badneg, tied):
    f(sys.argv[1])
PY
cat >"$TMP/lm.wir" <<EOF
module @lm {
  const @emb : f32[13, 10] = file<"$TMP/emb.npy">
  const @g : f32[10] = file<"$TMP/g.npy">
  const @w : f32[10, 17] = file<"$TMP/w.npy">
  func @main(%ids: i64[2, 7]) -> (f32[2, 7, 17], i64[2, 7]) {
    %e = gather(@emb, %ids) {axis = 0} : f32[2, 7, 10]
    %s = mul(%e, @g) : f32[2, 7, 10]
    %logits = matmul(%s, @w) : f32[2, 7, 17]
    %next = argmax(%logits) {axis = -1, keepdims = false} : i64[2, 7]
    return %logits, %next
  }
}
EOF
for mesh in 1x1 2x2 3x2 4x4 5x3; do run "lm_$mesh" "$TMP/lm.wir" "$mesh" "ids=$TMP/ids.npy"; done

# ---- one token (decode: ids [1, 1], every PE row looks it up) and rank-1 ids [9] ------------
cat >"$TMP/dec.wir" <<EOF
module @dec {
  const @emb : f32[13, 10] = file<"$TMP/emb.npy">
  const @w : f32[10, 17] = file<"$TMP/w.npy">
  func @main(%ids: i64[1, 1], %v: i64[9]) -> (i64[1, 1], f32[9, 10], i64[9]) {
    %e = gather(@emb, %ids) {axis = 0} : f32[1, 1, 10]
    %h = matmul(%e, @w) : f32[1, 1, 17]
    %y = argmax(%h) {axis = -1, keepdims = false} : i64[1, 1]
    %ev = gather(@emb, %v) {axis = 0} : f32[9, 10]
    %hv = matmul(%ev, @w) : f32[9, 17]
    %yv = argmax(%hv) {axis = 1, keepdims = false} : i64[9]
    return %y, %ev, %yv
  }
}
EOF
for mesh in 1x1 3x2 4x4 5x3; do run "dec_$mesh" "$TMP/dec.wir" "$mesh" "ids=$TMP/ids1.npy v=$TMP/idsv.npy"; done

# ---- ties across PEs, all-negative rows, the next ids fed back into a gather ----------------
cat >"$TMP/ties.wir" <<EOF
module @ties {
  const @emb : f32[17, 10] = file<"$TMP/emb17.npy">
  func @main(%x: f32[3, 2, 17]) -> (i64[3, 2, 1], f32[3, 2, 10], i64[3, 1, 17], i64[2, 17], i64[3, 2, 1]) {
    %k = argmax(%x) {axis = 2} : i64[3, 2, 1]
    %i = argmax(%x) {axis = -1, keepdims = false} : i64[3, 2]
    %e = gather(@emb, %i) {axis = 0} : f32[3, 2, 10]
    %a1 = argmax(%x) {axis = 1, select_last_index = true} : i64[3, 1, 17]
    %a0 = argmax(%x) {axis = 0, keepdims = false} : i64[2, 17]
    %kl = argmax(%x) {axis = -1, select_last_index = true} : i64[3, 2, 1]
    return %k, %e, %a1, %a0, %kl
  }
}
EOF
for mesh in 1x1 2x2 3x2 4x4 5x3; do run "ties_$mesh" "$TMP/ties.wir" "$mesh" "x=$TMP/ties.npy"; done

# ---- the next token of one row of logits: an argmax of a vector is an i64 scalar -----------
cat >"$TMP/scalar.wir" <<'EOF'
module @s {
  func @main(%x: f32[17]) -> i64[] {
    %y = argmax(%x) {axis = 0, keepdims = false} : i64[]
    return %y
  }
}
EOF
for mesh in 1x1 4x4 5x3; do run "scalar_$mesh" "$TMP/scalar.wir" "$mesh" "x=$TMP/x17.npy"; done

# ---- bad ids, negative ids, generated ids --------------------------------------------------
P=$TMP/lm_3x2/plan
waferrun "$P" --describe | grep -q "^  ids  .*i64\[2, 7\] .*ids in \[0, 13)" || fail "--describe should give the ids' range"
rc=0
waferrun "$P" -q --input ids="$TMP/bad.npy" --output-dir "$TMP/bad" 2>"$TMP/bad.err" || rc=$?
[ "$rc" = 5 ] || fail "bad ids: waferrun exited $rc, want 5"
grep -q "gather: index 13 .* out of range for a table of 13 rows" "$TMP/bad.err" ||
  fail "bad ids: the message should name the index and the table: $(head -1 "$TMP/bad.err")"
[ ! -e "$TMP/bad/next.npy" ] || fail "bad ids: an output was written"
run neg_3x2 "$TMP/lm.wir" 3x2 "ids=$TMP/neg.npy"
waferrun "$P" -q --input ids=random:11 --output-dir "$TMP/rand" || fail "random ids: waferrun exited $?"
waferrun "$P" -q --input ids=splat:12 --output-dir "$TMP/splat" || fail "splat ids: waferrun exited $?"
rc=0
waferrun "$P" -q --input ids=splat:2.5 2>"$TMP/splat.err" || rc=$?
[ "$rc" = 2 ] || fail "splat:2.5 of ids: exit $rc, want 2"
rc=0
waferrun "$P" -q --input ids="$TMP/emb.npy" 2>/dev/null || rc=$?
[ "$rc" != 0 ] || fail "an f32 file for the i64 ids was accepted"

# ---- a table larger than a PE's SRAM: exit 4 from the memory planner -------------------------
cat >"$TMP/big.wir" <<'EOF'
module @big {
  const @emb : f32[1024, 64] = dense<0.5>
  func @main(%ids: i64[1, 4]) -> f32[1, 4, 64] {
    %e = gather(@emb, %ids) {axis = 0} : f32[1, 4, 64]
    return %e
  }
}
EOF
rc=0
waferc "$TMP/big.wir" -o "$TMP/bigplan" --target=test8x8 --mesh=2x2 -q 2>"$TMP/big.err" || rc=$?
[ "$rc" = 4 ] || fail "big table: waferc exited $rc, want 4: $(head -1 "$TMP/big.err")"
# (its 1024 x 32 slice would take over 1/16 of the SRAM, so its rows are split too: 512 x 32 per PE)
grep -q "does not fit the 49152-byte SRAM.*the largest is '@emb' (65536 bytes per PE)" "$TMP/big.err" ||
  fail "big table: the planner's message should name the table: $(head -1 "$TMP/big.err")"
[ ! -e "$TMP/bigplan/manifest.json" ] || fail "big table: a manifest was written"
waferc "$TMP/big.wir" -o "$TMP/bigplan" --target=test8x8 --mesh=8x8 -q || fail "big table on 8x8: waferc exited $?"

# ---- a tied head over a batch of 2 (passes/partition_table.c): the table {V_y, E_x} once, the
# ids [2, 5] whole on every PE, the lookup's rows summed along y per batch, the head a
# dist.gemm_t of [2, 5, E] against the table; values and the argmax against the interpreter --
for mesh in 3x2 4x4 2x3; do
  run "tied_b2_$mesh" "$TMP/tied.wir" "$mesh" "ids=$TMP/tied_ids.npy"
  grep -q '"dist.gemm_t"' "$TMP/tied_b2_$mesh/plan/manifest.json" || fail "tied_b2_$mesh: the head is not a dist.gemm_t"
done

# ---- torch's export: Embedding, Linear, argmax(dim=-1) --------------------------------------
M=$SRC/examples/models
mkdir -p "$TMP/torch_ref"
cp "$M/tiny_argmax_logits_ref.npy" "$TMP/torch_ref/logits.npy"
cp "$M/tiny_argmax_next_ref.npy" "$TMP/torch_ref/next.npy"
waferc "$M/tiny_argmax.onnx" --interpret --input input_ids="$M/tiny_argmax_input.npy" --output-dir "$TMP/ta_int" ||
  fail "tiny_argmax: interpreter failed"
wafer-npycmp "$TMP/ta_int/next.npy" "$TMP/torch_ref/next.npy" --atol 0 --rtol 0 >/dev/null ||
  fail "tiny_argmax: the interpreter's ids differ from torch's"
for mesh in 1x1 2x2 3x2 4x4 5x3; do
  run "tiny_argmax_$mesh" "$M/tiny_argmax.onnx" "$mesh" "input_ids=$M/tiny_argmax_input.npy" "$TMP/torch_ref"
done
# logits_plans NAME MODEL IDS_SHAPE INPUT REF TARGET MESHES...: the plan's logits on each mesh
# against torch's (1e-4)
logits_plans() {
  local name=$1 model=$2 shape=$3 input=$4 ref=$5 target=$6 mesh d
  shift 6
  for mesh in "$@"; do
    d=$TMP/${name}_$mesh
    waferc "$model" -o "$d/plan" --target="$target" --mesh="$mesh" --input-shape input_ids="$shape" -q \
      2>"$TMP/lp.err" || fail "$name on $mesh: waferc exited $?: $(grep -m1 error "$TMP/lp.err")"
    waferrun "$d/plan" -q --input input_ids="$input" --output-dir "$d/out" 2>"$TMP/lp.err" ||
      fail "$name on $mesh: waferrun exited $?: $(head -1 "$TMP/lp.err")"
    wafer-npycmp "$d/out/logits.npy" "$ref" --atol 1e-4 --rtol 0 >"$TMP/lp.cmp" 2>&1 ||
      fail "$name on $mesh: the logits differ from torch's: $(head -1 "$TMP/lp.cmp")"
    n=$((n + 1))
  done
}
# ---- a whole model from token ids to logits: examples/models/tiny_llama.onnx (embedding,
# two LLaMA blocks, final norm, lm_head) at S = 8 and 13, against torch's logits ----------------
for s in 8 13; do
  tag=tiny_llama; [ "$s" = 13 ] && tag=tiny_llama_s13
  logits_plans "$tag" "$M/tiny_llama.onnx" "1x$s" "$M/${tag}_input.npy" "$M/${tag}_ref.npy" test8x8 2x2 3x2 4x4 5x3
done
# ---- tiny GPT-2 models from token ids to logits (examples/models/exported/: learned
# positions folded at import, an LM head untied or tied to the embedding) for wse2 --------------
X=$M/exported
for m in gpt2m_untied_e32h4_v96_s8:1x8 gpt2m_tied_e48h6_v100_s11:1x11; do
  name=${m%%:*} shape=${m##*:}
  [ -f "$X/$name.onnx" ] || fail "$name: not in $X"
  logits_plans "$name" "$X/$name.onnx" "$shape" "$X/${name}_input.npy" "$X/${name}_ref.npy" wse2 4x4 5x3 7x2
done
# The tied head multiplies by the embedding table itself (passes/partition_table.c): the plans
# above hold one copy of the 100 x 48 table, the head is a dist.gemm_t against it, and no
# [48, 100] weight is left; the untied model keeps its own head weight.
# The manifests of lm_4x4 and of the tied and untied GPT-2 heads (the checks described at
# the "ids -> gather" section and just above), in one python3 run.
python3 - "$TMP/lm_4x4/plan/manifest.json" "$TMP/gpt2m_tied_e48h6_v100_s11_7x2/plan/manifest.json" \
  "$TMP/gpt2m_untied_e32h4_v96_s8_7x2/plan/manifest.json" <<'PY' || exit 1
import json, sys, traceback
def lm(paths):
    m = json.load(open(paths[0]))
    i = m["inputs"][0]
    assert i["dtype"] == "i64" and i["index_bound"] == 13 and i["split"] == ["-", "y"], i
    assert [o["dtype"] for o in m["outputs"]] == ["f32", "i64"], m["outputs"]
    ops = {o["op"]: o for o in m["ops"]}
    assert ops["argmax"]["lowering"] == "local+masked+allreduce-x(2)", ops["argmax"]
    assert len(ops["argmax"]["collectives"]) == 2, ops["argmax"]
    w = {t["name"]: t for t in m["weights"]["tensors"]}
    assert w["emb"]["split"] == ["-", "x"], w["emb"]
def tied(paths):
    def load(p):
        m = json.load(open(p))
        ops = [o["op"] for o in m["ops"]]
        shapes = [tuple(w["shape"]) for w in m["weights"]["tensors"]]
        return ops, shapes
    ops, shapes = load(paths[1])
    assert ops[-1] == "dist.gemm_t", "tied: the head is %s" % ops[-1]
    assert shapes.count((100, 48)) == 1 and (48, 100) not in shapes, "tied: weights %s" % shapes
    ops, shapes = load(paths[2])
    assert "dist.gemm_t" not in ops and (32, 96) in shapes, "untied: %s %s" % (ops[-1], shapes)
bad = 0
for f, what in ((lm, "lm: manifest check"), (tied, "tied head: the plan does not share the table")):
    try:
        f(sys.argv[1:])
    except Exception:
        traceback.print_exc()
        print("FAIL: " + what, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
echo "ok   gather/argmax: $n plans"
