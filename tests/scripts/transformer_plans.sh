#!/usr/bin/env bash
# Exported transformer blocks and whole models from token ids to logits (examples/models/ and
# examples/models/exported/, each with torch's input and output) compiled for wse2 on square
# and non-square meshes whose sides do not divide their widths, run on waferrun, and compared
# with torch's output at 1e-4 max abs error and with waferc's reference interpreter. Each plan must hold attention in its
# packed form (head-layout) and no data moved to change a layout: the manifest's counts of
# fabric transposes and relayouts (set by the movers themselves) are 0.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
M=$SRC/examples/models

# the manifest checks of every plan (attention in packed form, nothing moved to change a
# layout), queued in $TMP/manifests and made by one python3 run at the end
: >"$TMP/manifests"

# check NAME MODEL INPUT.npy REF.npy IN OUT MESHES...
check() {
  local name=$1 model=$2 input=$3 ref=$4 in=$5 out=$6
  shift 6
  local shape
  shape=$(npy_shape "$input") || fail "$name: no shape in the header of $input"
  waferc "$model" --interpret --input-shape "$in=$shape" --input "$in=$input" --output-dir "$TMP/$name.ref" -q 2>"$TMP/err" ||
    fail "$name: the interpreter failed: $(head -3 "$TMP/err")"
  for mesh in "$@"; do
    local d="$TMP/$name.$mesh"
    waferc "$model" -o "$d" --target=wse2 --mesh="$mesh" --input-shape "$in=$shape" -q ${extra:-} 2>"$TMP/err" ||
      fail "$name on $mesh: waferc exited $?: $(head -3 "$TMP/err")"
    waferrun "$d" -q --input "$in=$input" --output-dir "$d/out" || fail "$name on $mesh: waferrun exited $?"
    wafer-npycmp "$d/out/$out.npy" "$ref" --atol 1e-4 --rtol 0 >/dev/null ||
      fail "$name on $mesh: the plan's output differs from torch's: $(wafer-npycmp "$d/out/$out.npy" "$ref" --atol 1e-4 --rtol 0 | tail -1)"
    wafer-npycmp "$d/out/$out.npy" "$TMP/$name.ref/$out.npy" --atol 1e-4 --rtol 0 >/dev/null ||
      fail "$name on $mesh: the plan's output differs from the interpreter"
    printf '%s\t%s\n' "$d/manifest.json" "$name on $mesh" >>"$TMP/manifests"
    n=$((n + 1))
  done
}

check gpt2_block "$M/gpt2_block.onnx" "$M/gpt2_block_input.npy" "$M/gpt2_block_ref.npy" x y 4x4 5x3 8x8 6x5
check gpt2_block_s13 "$M/gpt2_block.onnx" "$M/gpt2_block_s13_input.npy" "$M/gpt2_block_s13_ref.npy" x y 4x4 7x3
check llama_block "$M/llama_block.onnx" "$M/llama_block_input.npy" "$M/llama_block_ref.npy" x y 4x4 5x3 8x8 16x4
check llama_block_dyn "$M/llama_block_dyn.onnx" "$M/llama_block_dyn_s13_input.npy" "$M/llama_block_dyn_s13_ref.npy" x y 2x2 3x2 5x3
E=$M/exported
for m in llama_mqa_e16h2kv1_s5 gpt2_e16h2_s6; do
  check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" x y 1x1 2x2 3x2 5x3
done
for m in gpt2_conv1d_e48h6_s11 llama_interleaved_e48h6kv2_s7 llama_mqa_e40h5kv1_o14_s9 gpt2_buffer_o13_e64h4_s8; do
  check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" x y 4x4 5x3 8x8 7x2
done
# the GEMM chooser weighs each op's SRAM alone: on 2x2 this block's double-buffered plan does not
# fit (--gemm-buffers=2 exits 4), and waferc compiles it again with the memory-minimal schedule
m=gpt2_conv1d_e48h6_s11
rc=0
waferc "$E/$m.onnx" -o "$TMP/$m.buf2" --target=wse2 --mesh=2x2 --gemm-buffers=2 -q 2>/dev/null || rc=$?
[ "$rc" = 4 ] || fail "$m on 2x2 with --gemm-buffers=2: expected exit 4 (the premise), got $rc"
check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" x y 2x2
grep -q "compiled with the memory-minimal schedule (--gemm-buffers=1)" "$TMP/err" ||
  fail "$m on 2x2: no note of the memory-minimal fallback: $(head -3 "$TMP/err")"
# GQA and MQA with the kv heads replicated rather than gathered (the cost model's usual choice)
extra=--gqa=replicate check llama_mqa_rep "$E/llama_mqa_e40h5kv1_o14_s9.onnx" "$E/llama_mqa_e40h5kv1_o14_s9_input.npy" \
  "$E/llama_mqa_e40h5kv1_o14_s9_ref.npy" x y 5x3 8x8
extra=--gqa=replicate check llama_block_rep "$M/llama_block.onnx" "$M/llama_block_input.npy" "$M/llama_block_ref.npy" x y 4x4 16x4
# ... and colocated with q (each kv head once, q's pieces beside its pieces: no kv piece moves)
extra=--gqa=colocate check llama_mqa_col "$E/llama_mqa_e40h5kv1_o14_s9.onnx" "$E/llama_mqa_e40h5kv1_o14_s9_input.npy" \
  "$E/llama_mqa_e40h5kv1_o14_s9_ref.npy" x y 5x3 8x8
extra=--gqa=colocate check llama_block_col "$M/llama_block.onnx" "$M/llama_block_input.npy" "$M/llama_block_ref.npy" x y 4x4 16x4
for d in llama_mqa_col.8x8 llama_block_col.16x4; do
  grep -q 'colocated' "$TMP/$d/manifest.json" || fail "$d: --gqa=colocate compiled no colocated attention"
done
# the same blocks written other ways (passes/head_view.c): timm's one-reshape QKV indexed after
# permute(2, 0, 3, 1, 4), chunk (Slice), the scale on q, post-LN; Meta's layout, whose RoPE and
# kv repeat run on [B, S, H, D] before the head transpose, with the pairwise RoPE (a dynamic
# export: the repeat is a Loop whose pieces are concatenated)
# torch's nn.MultiheadAttention (attention over [B·H, S, D] from the input transposed to
# [S, B, E], the output projection a Gemm), batch first or not, batch 1 or 2
for m in gpt2_timm_e40h5_s8 gpt2_timm_postln_o14_e48h6_b2_s8 gpt2_chunk_e36h3_s8 llama_meta_pairwise_e48h6kv2_s6 \
  llama_meta_half_e48h4kv1_s8 gpt2_nnmha_o15_e40h5_s8 gpt2_nnmha_sbe_e24h2_s8 gpt2_nnmha_b2_e32h4_s8; do
  check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" x y 4x4 7x3
done
# a kv head repeated before the head transpose is still one kv head: gathered or packed as it is
kv=$(waferc "$E/llama_meta_half_e48h4kv1_s8.onnx" -o "$TMP/kv" --target=wse2 --mesh=4x4 -q --statistics 2>&1 |
  sed -n 's/.*gqa-\(gathered\|shared\): 1$/\1/p')
[ -n "$kv" ] || fail "llama_meta_half_e48h4kv1_s8 on 4x4: the repeated kv head was not gathered or shared"
# whole models, token ids to logits
check tinyllama_meta_pairwise_tied_e40h4kv2_v70_s8 "$E/tinyllama_meta_pairwise_tied_e40h4kv2_v70_s8.onnx" \
  "$E/tinyllama_meta_pairwise_tied_e40h4kv2_v70_s8_input.npy" "$E/tinyllama_meta_pairwise_tied_e40h4kv2_v70_s8_ref.npy" \
  input_ids logits 5x3
check tiny_llama "$M/tiny_llama.onnx" "$M/tiny_llama_s13_input.npy" "$M/tiny_llama_s13_ref.npy" input_ids logits 4x4 5x3 8x8
for m in gpt2m_tied_e48h6_v100_s11 gpt2m_untied_e32h4_v96_s8; do
  check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" input_ids logits 4x4 5x3 8x8
done
# the memory-minimal fallback's own fallback: on 4x4 this tiny LLaMA's plan fits neither with
# double-buffered GEMMs nor with the one-buffer shift GEMMs auto picks (three buffers of the
# larger block at the plan's peak); with SUMMA for every GEMM it does
m=tinyllama_e96h8kv2_s3
for b in 2 1; do
  rc=0
  waferc "$E/$m.onnx" -o "$TMP/$m.buf$b" --target=wse2 --mesh=4x4 --input-shape input_ids=1x3 --gemm-buffers=$b -q \
    2>/dev/null || rc=$?
  [ "$rc" = 4 ] || fail "$m on 4x4 with --gemm-buffers=$b: expected exit 4 (the premise), got $rc"
done
check "$m" "$E/$m.onnx" "$E/${m}_input.npy" "$E/${m}_ref.npy" input_ids logits 4x4
grep -q "compiled with SUMMA for every GEMM (--gemm-algo=summa)" "$TMP/err" ||
  fail "$m on 4x4: no note of the SUMMA fallback: $(head -3 "$TMP/err")"
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); a={o['lowering'].split('-')[0] for o in m['ops'] if o['op']=='dist.gemm'}; sys.exit(a!={'summa'})" \
  "$TMP/$m.4x4/manifest.json" || fail "$m on 4x4: the fallback plan's GEMMs are not all SUMMA"
python3 - "$TMP/manifests" <<'PY' || exit 1
import json, sys
def check(path, what):
    m = json.load(open(path))
    ops = m["ops"]
    att = [o for o in ops if o.get("op") == "attention"]
    if not att:
        return "FAIL: %s: no attention op in the plan" % what
    if "fabric_transposes" not in m or "relayouts" not in m:
        return "FAIL: %s: the manifest has no fabric_transposes/relayouts counts" % what
    moves = [o["op"] for o in ops if o.get("fabric_move")]
    if m["fabric_transposes"] or m["relayouts"] or moves:
        return "FAIL: %s: %d fabric transposes, %d relayouts (%s)" % (what, m["fabric_transposes"],
               m["relayouts"], ", ".join(moves))
bad = 0
for line in open(sys.argv[1]):
    path, what = line.rstrip("\n").split("\t", 1)
    try:
        err = check(path, what)
    except Exception as e:
        err = "FAIL: %s: %r" % (what, e)
    if err:
        print(err, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY

# GQA: with whole groups of query heads per column the kv heads are packed as they are
# (3x2: 2 query heads and their one kv head per column); with one query head per column they
# are replicated into its columns or gathered inside the attention (4x4), as --gqa says, or
# (auto) as the cost model predicts cheaper, which is the gather here.
stats() { waferc "$M/llama_block.onnx" -o "$TMP/st" --target=wse2 --mesh="$1" -q --statistics ${3:-} 2>&1 | sed -n "s/.*$2: //p"; }
[ "$(stats 3x2 gqa-shared)" = 1 ] || fail "llama_block on 3x2: kv heads not packed as they are (gqa-shared)"
[ "$(stats 4x4 gqa-replicated --gqa=replicate)" = 1 ] || fail "llama_block on 4x4: kv heads not replicated (gqa-replicated)"
[ "$(stats 4x4 gqa-gathered --gqa=gather)" = 1 ] || fail "llama_block on 4x4: kv heads not gathered (gqa-gathered)"
[ "$(stats 4x4 gqa-gathered)" = 1 ] || fail "llama_block on 4x4: the cost model did not choose the gather"
# The gathered pieces take SRAM: at 224 tokens on 4x4 the gathered plan does not fit where the
# replicated one does, so the default (auto) compiles it replicated and says so; --gqa=gather
# exits 4 and writes nothing.
set +e
waferc "$M/llama_block_dyn.onnx" -o "$TMP/fb" --target=wse2 --mesh=4x4 --input-shape x=1x224x32 --statistics \
  2>"$TMP/fb.err"
rc=$?
set -e
[ $rc = 0 ] && [ -f "$TMP/fb/manifest.json" ] && grep -q "compiled with them replicated" "$TMP/fb.err" ||
  fail "llama_block_dyn at 224 tokens on 4x4: exit $rc, no replicated fallback: $(grep -m2 'error\|note' "$TMP/fb.err")"
set +e
waferc "$M/llama_block_dyn.onnx" -o "$TMP/fbg" --target=wse2 --mesh=4x4 --input-shape x=1x224x32 --gqa=gather -q 2>/dev/null
rc=$?
set -e
[ $rc = 4 ] && [ ! -e "$TMP/fbg" ] || fail "llama_block_dyn at 224 tokens on 4x4 with --gqa=gather: exit $rc, want 4 and no plan"
set +e
waferc "$M/llama_block.onnx" -o "$TMP/g" --gqa=gather --generate=4 --input-shape x=1x8 -q 2>"$TMP/g.err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "gqa=gather is for prefill" "$TMP/g.err" || fail "--gqa=gather --generate: exit $rc, want 2 with a reason"

# A model that does not fit: exit 4, no plan written, and a note naming the smallest mesh that
# fits, which then compiles.
set +e
waferc "$M/llama_block.onnx" -o "$TMP/nofit" --target=wse2 --mesh=2x2 -q 2>"$TMP/nofit.err"
rc=$?
set -e
[ "$rc" -eq 4 ] || fail "llama_block on 2x2: exit $rc, want 4 (does not fit)"
[ ! -e "$TMP/nofit" ] || fail "llama_block on 2x2: a plan directory was left behind"
fit=$(sed -n 's/.*the smallest mesh of this shape the plan fits is \([0-9]*x[0-9]*\).*/\1/p' "$TMP/nofit.err")
[ -n "$fit" ] || fail "llama_block on 2x2: no smallest mesh named: $(cat "$TMP/nofit.err")"
waferc "$M/llama_block.onnx" -o "$TMP/fit" --target=wse2 --mesh="$fit" -q || fail "the named mesh $fit does not compile"
n=$((n + 1))
echo "transformer plans: $n pass"
