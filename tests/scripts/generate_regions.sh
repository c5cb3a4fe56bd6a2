#!/usr/bin/env bash
# Generation on regions of two sizes (docs/generation.md, "The switch"): `waferc --generate=8
# --mesh=P --decode-mesh=D` compiles the prefill for P, the decode step for D (P's corner) and
# plan/switch/, which moves every KV cache from the prefill's packing and rows onto D's over
# the fabric (kv_switch). For committed models exported by torch:
#  - waferrun --generate=8 gives torch's own greedy tokens exactly;
#  - the report's switch section has the switch plan's simulated cycles (> 0), its fabric
#    words (> 0: these pairs re-cut the caches) and the cost model's prediction, within 2% of the
#    simulation; the decode step moves no data to change a layout;
#  - the caches the switch builds hold the interpreter's k and v of the prompt packed for D (the
#    prefill graph compiled for D's width, interpreted), token y Lb + j at row y slot j of D's
#    rows, the rest zero; the steps then keep the policy's counts (tests/tools/gen_check.py);
#  - kv_switch alone, compiled and simulated, equals the reference interpreter exactly;
#  - a decode region larger than the prefill's, a malformed one, or one without --generate is
#    exit 2, and leaves no plan.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
G=$SRC/examples/models/generate


run_one() { # MODEL PREFILL_MESH DECODE_MESH POLICY
  local m=$1 pm=$2 dm=$3 pol=$4 d="$TMP/$1.$2.$3.$4" L
  L=$(prompt_len "$G/${m}_prompt.npy")
  waferc "$G/$m.onnx" -o "$d" --target=wse2 --mesh="$pm" --decode-mesh="$dm" --input-shape "input_ids=1x$L" \
    --generate=8 --kv-cache="$pol" -q 2>"$TMP/err" || fail "$m $pm->$dm: waferc exited $?: $(head -3 "$TMP/err")"
  [ -f "$d/switch/manifest.json" ] || fail "$m $pm->$dm: no switch plan"
  waferrun "$d" -q --input "input_ids=$G/${m}_prompt.npy" --generate=8 --output-dir "$d/out" --report "$d/report.json" \
    --dump-caches "$d/dump" --heatmap "$d/heat" >/dev/null 2>"$TMP/err" ||
    fail "$m $pm->$dm: waferrun exited $?: $(head -3 "$TMP/err")"
  wafer-npycmp "$d/out/tokens.npy" "$G/${m}_tokens.npy" --atol 0 --rtol 0 >/dev/null ||
    fail "$m $pm->$dm ($pol): the mesh's tokens differ from torch's"
  python3 - "$d" "$pm" "$dm" <<'PY' || fail "$m $pm->$dm: the switch's report or the plans are wrong"
import json, sys
d, pm, dm = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.load(open(d + "/report.json"))["switch"]
if not (r["cycles"] > 0 and r["fabric_words"] > 0):
    sys.exit("switch: %s" % r)
if abs(r["predicted_cycles"] - r["cycles"]) > 0.02 * r["cycles"]:
    sys.exit("switch predicted %d, simulated %d" % (r["predicted_cycles"], r["cycles"]))
if r["regions"] != {"prefill": [int(v) for v in pm.split("x")], "decode": [int(v) for v in dm.split("x")]}:
    sys.exit("regions %s" % r["regions"])
s = json.load(open(d + "/switch/manifest.json"))
dec = json.load(open(d + "/decode/manifest.json"))
g = json.load(open(d + "/manifest.json"))["generate"]
ops = [o for o in s["ops"] if o["op"] == "kv_switch"]
if len(ops) != len(g["caches"]) or not any(o["lowering"].startswith("relayout") for o in ops):
    sys.exit("switch ops %s" % [(o["op"], o["lowering"]) for o in s["ops"]])
if s["mesh"] != [int(v) for v in pm.split("x")] or dec["mesh"] != [int(v) for v in dm.split("x")]:
    sys.exit("meshes: switch %s, decode %s" % (s["mesh"], dec["mesh"]))
if dec["fabric_transposes"] or dec["relayouts"]:
    sys.exit("the decode step moves data to change a layout")
PY
  # the interpreter's k and v of the prompt, packed for the decode region's width
  waferc "$G/$m.onnx" --interpret --input "input_ids=$G/${m}_prompt.npy" --target=wse2 --mesh="$dm" \
    --pass-pipeline="canonicalize,raise,cse,dce,head-layout{gqa=replicate},generate-prefill" --output-dir "$d/iref" -q ||
    fail "$m: interpreting the prefill graph for $dm exited $?"
  python3 "$SRC/tests/tools/gen_check.py" steps "$d" "$d/iref" "$d/dump" "$pol" ||
    fail "$m $pm->$dm ($pol): the switched caches or the steps' occupancy are wrong"
  n=$((n + 1))
}

run_one llama_gqa_interleaved 9x5 5x3 shift
run_one llama_mha_halfrope 9x5 7x2 concat
run_one llama_mqa_halfrope 9x5 4x4 shift
run_one gpt2_tied 9x5 5x3 shift
run_one gpt2_untied 8x6 6x4 concat

# a one-token prompt (not split over the rows: every row of the prefill holds it) through the
# switch gives the interpreter's tokens
python3 "$SRC/tests/tools/npy.py" "$TMP/one.npy" 1,1 7 i64:96
d=$TMP/one
waferc "$G/gpt2_tied.onnx" -o "$d" --target=wse2 --mesh=9x5 --decode-mesh=5x3 --input-shape input_ids=1x1 --generate=6 \
  -q 2>/dev/null || fail "a one-token prompt: waferc exited $?"
waferrun "$d" -q --input "input_ids=$TMP/one.npy" --generate=6 --output-dir "$d/out" >/dev/null ||
  fail "a one-token prompt: waferrun exited $?"
waferc "$G/gpt2_tied.onnx" --interpret --input "input_ids=$TMP/one.npy" --generate=6 --output-dir "$d/ref" -q >/dev/null ||
  fail "a one-token prompt: the interpreter exited $?"
wafer-npycmp "$d/out/tokens.npy" "$d/ref/tokens.npy" --atol 0 --rtol 0 >/dev/null ||
  fail "a one-token prompt through the switch: the mesh's tokens differ from the interpreter's"
n=$((n + 1))

# kv_switch alone against the interpreter: whole heads re-cut (4 columns of one head -> 2 of
# two), parts of heads with the slots swapped and a phantom slot, on meshes whose rows differ
cat >"$TMP/whole.wir" <<'W'
module @m {
  func @main(%k: f32[1, 7, 16]) -> (f32[1, 15, 32]) {
    %o = kv_switch(%k) {out = [15, 32], region = [2, 2], block = [5, 8], heads = [4, 4, 4], slots = [0, 1, 2, 3]} : f32[1, 15, 32]
    return %o
  }
}
W
cat >"$TMP/parts.wir" <<'W'
module @m {
  func @main(%k: f32[1, 5, 8]) -> (f32[1, 8, 16]) {
    %o = kv_switch(%k) {out = [8, 16], region = [3, 2], block = [4, 4], heads = [4, 4, 3], slots = [1, 0, -1]} : f32[1, 8, 16]
    return %o
  }
}
W
python3 "$SRC/tests/tools/npy.py" "$TMP/k16.npy" 1,7,16 3 1.0
python3 "$SRC/tests/tools/npy.py" "$TMP/k8.npy" 1,5,8 4 1.0
for c in whole:4x3:k16 parts:4x2:k8; do
  IFS=: read -r name mesh in <<<"$c"
  waferc "$TMP/$name.wir" --interpret --input "k=$TMP/$in.npy" --output-dir "$TMP/$name.ref" ||
    fail "kv_switch $name: the interpreter exited $?"
  waferc "$TMP/$name.wir" -o "$TMP/$name.plan" --target=test8x8 --mesh="$mesh" -q || fail "kv_switch $name: waferc exited $?"
  waferrun "$TMP/$name.plan" -q --input "k=$TMP/$in.npy" --output-dir "$TMP/$name.out" || fail "kv_switch $name: waferrun"
  wafer-npycmp "$TMP/$name.out/o.npy" "$TMP/$name.ref/o.npy" --atol 0 --rtol 0 >/dev/null ||
    fail "kv_switch $name on $mesh differs from the interpreter"
  n=$((n + 1))
done

# bad regions: exit 2, no plan
expect2() { # LABEL -- waferc args
  local label=$1 rc=0
  shift 2
  waferc "$@" 2>"$TMP/err" >/dev/null || rc=$?
  [ "$rc" -eq 2 ] || fail "$label: exit $rc, want 2: $(head -2 "$TMP/err")"
  [ ! -e "$TMP/bad/manifest.json" ] || fail "$label: left a plan"
  n=$((n + 1))
}
M=$G/llama_mha_halfrope.onnx
expect2 larger -- "$M" -o "$TMP/bad" --target=wse2 --mesh=4x4 --decode-mesh=5x4 --input-shape input_ids=1x6 --generate=4
expect2 malformed -- "$M" -o "$TMP/bad" --target=wse2 --mesh=4x4 --decode-mesh=4y4 --input-shape input_ids=1x6 --generate=4
expect2 nogenerate -- "$M" -o "$TMP/bad" --target=wse2 --mesh=4x4 --decode-mesh=2x2 --input-shape input_ids=1x6
grep -q "decode-mesh" "$TMP/err" || fail "nogenerate: the error does not name --decode-mesh"
echo "generate_regions: $n checks passed"
