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
#  - the switch also moves every decode weight it can build from the prefill's (the matrices
#    split over both axes; swapped ones after a transpose over the fabric, pre-skewed ones, on
#    square prefill regions, after an unskew): the switch manifest
#    lists them, the report counts them, waferrun checks each against the decode plan's own
#    (exit 5 when a manifest names another weight); --switch-weights=resident moves none;
#  - kv_switch alone (a cache, a weight, a swapped weight, with slots or a column map), compiled and simulated, equals the
#    reference interpreter exactly; unskew alone gives back the matrix the host scattered skewed;
#  - a decode region larger than the prefill's, a malformed one, or one without --generate is
#    exit 2, and leaves no plan; so is --switch-weights without a decode region or with another
#    value.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
G=$SRC/examples/models/generate


run_one() { # MODEL PREFILL_MESH DECODE_MESH POLICY [WAFERC-FLAG]
  local m=$1 pm=$2 dm=$3 pol=$4 d="$TMP/$1.$2.$3.$4${5:+.${5#--}}" L gqa
  L=$(prompt_len "$G/${m}_prompt.npy")
  waferc "$G/$m.onnx" -o "$d" --target=wse2 --mesh="$pm" --decode-mesh="$dm" --input-shape "input_ids=1x$L" \
    --generate=8 --kv-cache="$pol" ${5:-} -q 2>"$TMP/err" || fail "$m $pm->$dm: waferc exited $?: $(head -3 "$TMP/err")"
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
ops = [o for o in s["ops"] if o["op"] == "kv_switch" and o["result"].startswith(("%k_switch", "%v_switch"))]
if len(ops) != len(g["caches"]) or not any(o["lowering"].startswith("relayout") for o in ops):
    sys.exit("switch ops %s" % [(o["op"], o["lowering"]) for o in s["ops"]])
# the weights: every matrix weight the decode step holds split over both axes whose prefill
# namesake is {K_y, N_x} moves, by one kv_switch (swapped: after a transpose over the fabric)
pre = {w["name"]: w for w in json.load(open(d + "/manifest.json"))["weights"]["tensors"]}
want = sorted(w["name"] for w in dec["weights"]["tensors"] if len(w["shape"]) == 2 and w["name"] in pre
              and sorted(w["split"]) == ["x", "y"] and pre[w["name"]]["split"] == ["y", "x"])
moves = s.get("switch_weights", [])
if sorted(m["decode"] for m in moves) != want or any(m["prefill"] != m["decode"] for m in moves):
    sys.exit("moved %s, want %s" % (sorted(m["decode"] for m in moves), want))
if r["weights_moved"] != len(moves) or not moves:
    sys.exit("the report says %s weights moved, the switch plan %d" % (r["weights_moved"], len(moves)))
results = {o["result"]: o for o in s["ops"]}
swapped = sum(1 for m in moves if [w for w in dec["weights"]["tensors"] if w["name"] == m["decode"]][0]["split"] == ["x", "y"])
skewed = sum(1 for m in moves if "skew" in pre[m["prefill"]])
if skewed != sum(1 for o in s["ops"] if o["op"] == "unskew") or (pm.split("x")[0] == pm.split("x")[1]) != (skewed > 0):
    sys.exit("%d pre-skewed weights moved, %d unskews" % (skewed, sum(1 for o in s["ops"] if o["op"] == "unskew")))
if any("%" + m["output"] not in results for m in moves) or s["fabric_transposes"] != swapped or not swapped:
    sys.exit("switch ops %s for moves %s (%d swapped)" % (sorted(results), moves, swapped))
if s["mesh"] != [int(v) for v in pm.split("x")] or dec["mesh"] != [int(v) for v in dm.split("x")]:
    sys.exit("meshes: switch %s, decode %s" % (s["mesh"], dec["mesh"]))
if dec["fabric_transposes"] or dec["relayouts"]:
    sys.exit("the decode step moves data to change a layout")
PY
  # the interpreter's k and v of the prompt, packed for the decode region's width as the plans
  # pack kv heads (the manifest's generate.gqa)
  gqa=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['generate']['gqa'])" "$d/manifest.json")
  waferc "$G/$m.onnx" --interpret --input "input_ids=$G/${m}_prompt.npy" --target=wse2 --mesh="$dm" \
    --pass-pipeline="canonicalize,raise,cse,dce,head-layout{gqa=$gqa},generate-prefill" --output-dir "$d/iref" -q ||
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
# square prefill regions: MeshGEMM's weights are pre-skewed there, so the switch unskews them first
run_one llama_gqa_interleaved 8x8 4x4 shift
run_one llama_mqa_halfrope 6x6 4x4 concat
# kv heads colocated with q in decode (--gqa=colocate; the prefill gathers the same cut of k and v
# inside its attention): the switch maps each column of the decode packing to the prefill's
# (kv_switch {cols}) for the caches and the q, k, v and output projections: both phases cut at
# two widths (one on a square prefill region: unskewed first), and a prefill that gathers beside
# a decode region too narrow to colocate (its decode step replicated); the
# caches are checked against the interpreter's and the weights by waferrun, as above
run_one llama_mqa_halfrope 9x5 6x5 shift --gqa=colocate
run_one llama_gqa_interleaved 8x8 6x4 concat --gqa=colocate
run_one llama_mqa_halfrope 6x4 3x2 shift --gqa=colocate
for c in "llama_mqa_halfrope.9x5.6x5.shift 2 2" "llama_gqa_interleaved.8x8.6x4.concat 2 2" "llama_mqa_halfrope.6x4.3x2.shift 2 0"; do
  set -- $c
  d="$TMP/$1.gqa=colocate"
  [ "$(grep -o -- '-kvgather' "$d/manifest.json" | wc -l)" = "$2" ] &&
    [ "$(grep -o -- '-colocated' "$d/decode/manifest.json" | wc -l)" = "$3" ] ||
    fail "$1 --gqa=colocate: the prefill does not gather ($2) or the decode step colocate ($3) the kv pieces as expected"
done
set --
# --describe lists a switch plan's weight moves, the pre-skewed ones marked
waferrun "$TMP/llama_gqa_interleaved.8x8.4x4.shift/switch" --describe >"$TMP/describe" ||
  fail "waferrun --describe of a switch plan exited $?"
grep -q "^switch weights ([1-9][0-9]*): prefill weight -> input" "$TMP/describe" && grep -q "(pre-skewed)$" "$TMP/describe" ||
  fail "--describe does not list the switch's weight moves: $(tail -3 "$TMP/describe")"

# --switch-weights=resident: the switch moves the caches only (both phases keep their weights), the
# same tokens, fewer switch cycles than moving the weights too
d=$TMP/llama_gqa_interleaved.9x5.5x3.shift
L=$(prompt_len "$G/llama_gqa_interleaved_prompt.npy")
waferc "$G/llama_gqa_interleaved.onnx" -o "$TMP/res" --target=wse2 --mesh=9x5 --decode-mesh=5x3 --input-shape "input_ids=1x$L" \
  --generate=8 --switch-weights=resident -q || fail "--switch-weights=resident: waferc exited $?"
waferrun "$TMP/res" -q --input "input_ids=$G/llama_gqa_interleaved_prompt.npy" --generate=8 --output-dir "$TMP/res/out" \
  --report "$TMP/res/report.json" >/dev/null || fail "--switch-weights=resident: waferrun exited $?"
wafer-npycmp "$TMP/res/out/tokens.npy" "$G/llama_gqa_interleaved_tokens.npy" --atol 0 --rtol 0 >/dev/null ||
  fail "--switch-weights=resident: the tokens differ from torch's"
python3 - "$TMP/res/report.json" "$d/report.json" <<'PY' || fail "--switch-weights=resident: the switch moved weights"
import json, sys
res, mv = (json.load(open(p))["switch"] for p in sys.argv[1:])
if res["weights_moved"] or res["weight_words"] or not mv["weights_moved"] or not res["cycles"] < mv["cycles"]:
    sys.exit("resident %s, moved %s" % (res, mv))
PY
n=$((n + 1))

# The SRAM trade (docs/generation.md, "The switch"): moving the weights makes a pair fit that
# resident weights do not (each phase no longer holds the other's), and auto keeps the weights
# resident, with a note, when the switch cannot hold the moves.
# Past what fits, the note names the largest N the compile accepts with the weights moved.
expect_exit() { # WANT LABEL -- waferc args
  local want=$1 label=$2 rc=0
  shift 3
  waferc "$@" -q >/dev/null 2>"$TMP/err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$label: exit $rc, want $want: $(grep -v warning "$TMP/err" | head -2)"
}
M=$G/llama_mqa_halfrope.onnx
L=$(prompt_len "$G/llama_mqa_halfrope_prompt.npy")
expect_exit 4 "3x3 -> 3x2, resident" -- "$M" -o "$TMP/fit" --target=wse2 --mesh=3x3 --decode-mesh=3x2 \
  --input-shape "input_ids=1x$L" --generate=8 --switch-weights=resident
expect_exit 0 "3x3 -> 3x2, auto" -- "$M" -o "$TMP/fit" --target=wse2 --mesh=3x3 --decode-mesh=3x2 \
  --input-shape "input_ids=1x$L" --generate=8
waferrun "$TMP/fit" -q --input "input_ids=$G/llama_mqa_halfrope_prompt.npy" --generate=8 --output-dir "$TMP/fit/out" \
  --report "$TMP/fit/report.json" >/dev/null || fail "3x3 -> 3x2: waferrun exited $?"
wafer-npycmp "$TMP/fit/out/tokens.npy" "$G/llama_mqa_halfrope_tokens.npy" --atol 0 --rtol 0 >/dev/null ||
  fail "3x3 -> 3x2: the tokens differ from torch's"
grep -q '"weights_moved":[[:space:]]*[1-9]' "$TMP/fit/report.json" || fail "3x3 -> 3x2: no weight moved"
# Past what fits, the note's largest N is the one the compile accepts with the weights moved
# (counting them resident, nothing would fit): N compiles, N + 1 does not.
expect_exit 4 "3x3 -> 3x2, N=40" -- "$M" -o "$TMP/fit40" --target=wse2 --mesh=3x3 --decode-mesh=3x2 \
  --input-shape "input_ids=1x$L" --generate=40
most=$(sed -n 's/.*for at most --generate=\([0-9]*\).*/\1/p' "$TMP/err")
[ -n "$most" ] && [ "$most" -ge 8 ] || fail "3x3 -> 3x2, N=40: the note names no N >= 8: $(grep note "$TMP/err")"
expect_exit 0 "3x3 -> 3x2, the note's N=$most" -- "$M" -o "$TMP/fitn" --target=wse2 --mesh=3x3 --decode-mesh=3x2 \
  --input-shape "input_ids=1x$L" --generate="$most"
expect_exit 4 "3x3 -> 3x2, N=$((most + 1))" -- "$M" -o "$TMP/fitn1" --target=wse2 --mesh=3x3 --decode-mesh=3x2 \
  --input-shape "input_ids=1x$L" --generate=$((most + 1))
M=$G/llama_mha_halfrope.onnx
L=$(prompt_len "$G/llama_mha_halfrope_prompt.npy")
expect_exit 4 "4x3 -> 2x2, move" -- "$M" -o "$TMP/back" --target=wse2 --mesh=4x3 --decode-mesh=2x2 \
  --input-shape "input_ids=1x$L" --generate=8 --switch-weights=move
grep -q "the switch does not fit" "$TMP/err" || fail "4x3 -> 2x2, move: the error does not name the switch"
expect_exit 0 "4x3 -> 2x2, auto" -- "$M" -o "$TMP/back" --target=wse2 --mesh=4x3 --decode-mesh=2x2 \
  --input-shape "input_ids=1x$L" --generate=8
grep -q "the switch moves the KV caches only" "$TMP/err" || fail "4x3 -> 2x2, auto: no note of the fallback"
grep -q '"switch_weights"' "$TMP/back/switch/manifest.json" && fail "4x3 -> 2x2, auto: weights moved"
n=$((n + 1))

# A switch manifest whose weight move names another decode weight of the same shape: the
# switch builds what the plan says, which differs from that weight: exit 5, naming it.
cp -r "$d" "$TMP/swapped"
python3 - "$TMP/swapped/switch/manifest.json" "$TMP/swapped/decode/manifest.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
shape = {w["name"]: w["shape"] for w in json.load(open(sys.argv[2]))["weights"]["tensors"]}
mv = s["switch_weights"]
a, b = next((a, b) for a in mv for b in mv if a is not b and shape[a["decode"]] == shape[b["decode"]])
a["decode"], b["decode"] = b["decode"], a["decode"]
json.dump(s, open(sys.argv[1], "w"))
PY
rc=0
waferrun "$TMP/swapped" -q --allow-modified-plan --input "input_ids=$G/llama_gqa_interleaved_prompt.npy" --generate=8 \
  >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" -eq 5 ] && grep -q "the switch built decode weight" "$TMP/err" ||
  fail "a switch that builds another weight: exit $rc, $(head -2 "$TMP/err")"
n=$((n + 1))

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
# a weight [K, N] re-cut the same way, and swapped (the result transposed, {C_x, R_y}: each PE
# holds the decode weight's block)
cat >"$TMP/weight.wir" <<'W'
module @m {
  func @main(%k: f32[10, 18]) -> (f32[15, 35]) {
    %o = kv_switch(%k) {out = [15, 35], region = [3, 2], block = [5, 7], heads = [6, 7, 6], slots = [2, 0, 1]} : f32[15, 35]
    return %o
  }
}
W
sed -e 's/slots = \[2, 0, 1\]}/slots = [2, 0, 1], swap = 1}/' -e 's/f32\[15, 35\]/f32[35, 15]/g' "$TMP/weight.wir" >"$TMP/swap.wir"
# an explicit column map (cols: the decode packing's column j reads x's column cols[j]; what the
# switch writes for kv heads colocated with q): runs, reversals, repeats and zeros, for a cache
# and for a swapped weight
sed -e 's/heads = \[4, 4, 3\], slots = \[1, 0, -1\]}/cols = [7, 6, 0, 1, 2, -1, 5, 4, 3, 3, -1, 0, 1, 2, 3, 4]}/' "$TMP/parts.wir" >"$TMP/cols.wir"
sed -e 's/heads = \[6, 7, 6\], slots = \[2, 0, 1\], swap = 1}/swap = 1, cols = [COLS]}/' "$TMP/swap.wir" >"$TMP/colswap.wir"
sed -i "s/COLS/$(python3 -c "print(', '.join(str((7 * j + 3) % 19 - 1) for j in range(35)))")/" "$TMP/colswap.wir"
grep -q "{out = \[8, 16\], region = \[3, 2\], block = \[4, 4\], cols = \[7, 6," "$TMP/cols.wir" &&
  grep -q "block = \[5, 7\], swap = 1, cols = \[2, 9, 16," "$TMP/colswap.wir" || fail "the cols cases were not written"
python3 "$SRC/tests/tools/npy.py" "$TMP/k16.npy" 1,7,16 3 1.0
python3 "$SRC/tests/tools/npy.py" "$TMP/k8.npy" 1,5,8 4 1.0
python3 "$SRC/tests/tools/npy.py" "$TMP/w.npy" 10,18 5 1.0
for c in whole:4x3:k16 parts:4x2:k8 weight:5x3:w swap:5x3:w cols:4x2:k8 colswap:5x3:w; do
  IFS=: read -r name mesh in <<<"$c"
  waferc "$TMP/$name.wir" --interpret --input "k=$TMP/$in.npy" --output-dir "$TMP/$name.ref" ||
    fail "kv_switch $name: the interpreter exited $?"
  waferc "$TMP/$name.wir" -o "$TMP/$name.plan" --target=test8x8 --mesh="$mesh" -q || fail "kv_switch $name: waferc exited $?"
  waferrun "$TMP/$name.plan" -q --input "k=$TMP/$in.npy" --output-dir "$TMP/$name.out" || fail "kv_switch $name: waferrun"
  wafer-npycmp "$TMP/$name.out/o.npy" "$TMP/$name.ref/o.npy" --atol 0 --rtol 0 >/dev/null ||
    fail "kv_switch $name on $mesh differs from the interpreter"
  n=$((n + 1))
done

python3 - "$SRC/tests/tools" "$TMP/swap.ref/o.npy" "$TMP/weight.ref/o.npy" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[1])
from gen_check import load
(r, c), a = load(sys.argv[2])
(r2, c2), b = load(sys.argv[3])
sys.exit((r, c) != (c2, r2) or any(a[i * c + j] != b[j * c2 + i] for i in range(r) for j in range(c)))
PY
  fail "kv_switch swap = 1 is not the transposed result"

# unskew alone: an argument the manifest says is pre-skewed (the host scatters it so, as the
# prefill's SRAM holds a MeshGEMM / Cannon weight) comes out of the mesh in order, equal to the
# input; the indices come from the plan format's rule (tests/tools/unskew_ix.py). Both rings,
# one and several tiles per PE, square and not.
for c in interleave:4:4:4:8:12:2:3 plain:6:3:2:12:9:2:2 interleave:8:4:4:16:8:2:1; do
  IFS=: read -r ring L W H K N kt ot <<<"$c"
  u=$TMP/unskew_$ring$L n_ix=$(((N + W - 1) / W * (L / H)))
  mkdir -p "$u"
  python3 "$SRC/tests/tools/unskew_ix.py" "$u/ix.npy" "$ring" "$L" "$W" "$H" "$K" "$N" "$ot"
  python3 "$SRC/tests/tools/npy.py" "$u/w.npy" "$K,$N" 9 1.0
  cat >"$u/u.wir" <<W
module @m {
  const @ix : f32[$H, $((W * n_ix))] = file<"ix.npy">
  func @main(%w: f32[$K, $N]) -> (f32[$K, $N]) {
    %o = unskew(%w, @ix) {ring = $ring, tiles = $L, k_tile = $kt, other_tile = $ot} : f32[$K, $N]
    return %o
  }
}
W
  waferc "$u/u.wir" -o "$u/plan" --target=test8x8 --mesh="${W}x$H" -q || fail "unskew $c: waferc exited $?"
  waferrun "$u/plan" -q --input "w=$u/w.npy" --output-dir "$u/out" || fail "unskew $c: waferrun exited $?"
  wafer-npycmp "$u/out/o.npy" "$u/w.npy" --atol 0 --rtol 0 >/dev/null || fail "unskew $c: the matrix comes out changed"
  n=$((n + 1))
done
# ... and the check can fail: the same plan without the input's skew scrambles the matrix
python3 - "$u/plan/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["inputs"][0]["skew"]
json.dump(m, open(sys.argv[1], "w"))
PY
waferrun "$u/plan" -q --allow-modified-plan --input "w=$u/w.npy" --output-dir "$u/out2" 2>/dev/null ||
  fail "unskew without skew: waferrun exited $?"
! wafer-npycmp "$u/out2/o.npy" "$u/w.npy" --atol 0 --rtol 0 >/dev/null 2>&1 ||
  fail "unskew: an unskewed input came out unchanged, so the check above could not fail"

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
expect2 weightsalone -- "$M" -o "$TMP/bad" --target=wse2 --mesh=4x4 --switch-weights=move --input-shape input_ids=1x6 --generate=4
expect2 weightsbad -- "$M" -o "$TMP/bad" --target=wse2 --mesh=4x4 --decode-mesh=2x2 --switch-weights=some --input-shape input_ids=1x6 --generate=4
grep -q "switch-weights" "$TMP/err" || fail "weightsbad: the error does not name --switch-weights"
echo "generate_regions: $n checks passed"
