#!/usr/bin/env bash
# Generation on the mesh (docs/generation.md): every committed model of examples/models/generate/
# (LLaMA MHA/GQA/MQA with both RoPE forms, GPT-2 with learned positions, tied and untied) is
# compiled with `waferc --generate=8` for wse2 on square and non-square meshes, with the shift and
# the concat cache, and `waferrun --generate=8` must give torch's own greedy tokens exactly:
#  - out/tokens.npy is int64 [1, 8] and equal to M_tokens.npy (atol 0, rtol 0);
#  - the decode plan has no fabric transpose and no relayout, and every matmul of the step is a
#    MeshGEMV (dist.gemv); the prefill plan none either; gpt2_tied's decode step reads the
#    embedding table as its head's weight (dist.gemv_t) and holds no weight beside its transpose;
#  - the caches waferrun writes after the last step hold, row by row, the token counts of the
#    cache policy computed here independently (a slot holds a token when its K is not all
#    zero): under shift no two rows differ by more than one once the prefill's padding rows have
#    filled, under concat the last row holds every generated token;
#  - where the phases fit one region only with the weights both plans hold the same way held
#    once (gpt2_untied on 3x3), those weights are the same bytes the same way in both manifests,
#    the prefill's GEMMs are SUMMA, and the budgets fit with them held once but not without;
#  - a cache too large for the SRAM is refused at compile time (exit 4) with the largest N that
#    fits (both phases, each beside the other's weights), and that N compiles, but not N + 1;
#    generating more tokens than the plan was compiled for is exit 4;
#  - --autotune lists its candidates per phase and the (prefill, decode corner) pairs with the
#    switch's predicted cycles, and compiles the pair with the least predicted time;
#  - a one-token prompt and --generate=1 give the interpreter's tokens.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
G=$SRC/examples/models/generate


# The python checks of every plan below (layouts, occupancy, the switch and steps, the memory
# ceiling's assumption) are queued in $TMP/checks, one line each
# (KIND, the failure's message, the arguments), and made by one python3 run at the end
# (checks_run): one start-up instead of two per plan.
: >"$TMP/checks"
queue() { local IFS=$'\t'; printf '%s\n' "$*" >>"$TMP/checks"; }

run_one() { # MODEL MESH POLICY [WAFERC-FLAG]
  local m=$1 mesh=$2 pol=$3 d="$TMP/$1.$2.$3${4:+.${4#--}}" L
  L=$(prompt_len "$G/${m}_prompt.npy")
  waferc "$G/$m.onnx" -o "$d" --target=wse2 --mesh="$mesh" --input-shape "input_ids=1x$L" --generate=8 \
    --kv-cache="$pol" ${4:-} -q 2>"$TMP/err" || fail "$m on $mesh ($pol ${4:-}): waferc exited $?: $(head -3 "$TMP/err")"
  cp "$TMP/err" "$d.cerr" # waferc's notes
  waferrun "$d" -q --input "input_ids=$G/${m}_prompt.npy" --generate=8 --output-dir "$d/out" 2>"$TMP/err" ||
    fail "$m on $mesh ($pol): waferrun exited $?: $(head -3 "$TMP/err")"
  npy_header "$d/out/tokens.npy" | grep -q "'<i8'.*(1, 8)" || fail "$m on $mesh: tokens.npy is $(npy_header "$d/out/tokens.npy")"
  wafer-npycmp "$d/out/tokens.npy" "$G/${m}_tokens.npy" --atol 0 --rtol 0 >/dev/null ||
    fail "$m on $mesh ($pol): the mesh's tokens differ from torch's: $(wafer-npycmp "$d/out/tokens.npy" "$G/${m}_tokens.npy" --atol 0 --rtol 0 | tail -1)"
  queue layouts "$m on $mesh ($pol): a plan moves data to change a layout" "$d"
  [ "$m" = gpt2_tied ] && queue tied "$m on $mesh ($pol): the decode step holds the vocabulary twice" "$d"
  queue occupancy "$m on $mesh ($pol): the cache's occupancy is wrong" "$d" "$d/out" "$pol"
  n=$((n + 1))
}

for m in llama_mha_halfrope llama_gqa_interleaved llama_mqa_halfrope gpt2_tied gpt2_untied; do
  run_one "$m" 6x4 shift
  run_one "$m" 5x8 concat
  run_one "$m" 9x3 shift
done
run_one llama_gqa_interleaved 8x5 shift
run_one gpt2_tied 8x8 concat
# GQA and MQA kv heads whose query heads span columns (docs/generation.md, "Kv heads"): colocated
# with q (--gqa=colocate: each kv head held once, cut over its query heads' columns, q's pieces
# beside it) they give torch's tokens too, and the decode step's cache is narrower than q; auto
# keeps whichever of the colocated and the replicated decode steps holds fewer bytes per PE, and
# the prefill packs them the same way
for c in "llama_gqa_interleaved 8x5 shift" "llama_gqa_interleaved 6x4 concat" "llama_mqa_halfrope 9x3 shift" \
  "llama_mqa_halfrope 6x4 concat"; do
  set -- $c
  run_one "$1" "$2" "$3" --gqa=colocate
  run_one "$1" "$2" "$3" --gqa=replicate
  queue colocated "$1 on $2: the colocated plan is not what --gqa=colocate asks" "$TMP/$1.$2.$3.gqa=colocate" \
    "$TMP/$1.$2.$3.gqa=replicate"
done
set --
queue lighter "llama_gqa_interleaved on 8x5: auto did not keep the lighter decode step" "$TMP/llama_gqa_interleaved.8x5.shift" \
  "$TMP/llama_gqa_interleaved.8x5.shift.gqa=colocate" "$TMP/llama_gqa_interleaved.8x5.shift.gqa=replicate"
queue lighter "llama_mqa_halfrope on 9x3: auto did not keep the lighter decode step" "$TMP/llama_mqa_halfrope.9x3.shift" \
  "$TMP/llama_mqa_halfrope.9x3.shift.gqa=colocate" "$TMP/llama_mqa_halfrope.9x3.shift.gqa=replicate"

# where the colocated decode step does not fit (llama_gqa_interleaved on 8x8 with a cache for 400
# tokens: its group sums run out of colors) auto keeps the replicated one, which fits
L=$(prompt_len "$G/llama_gqa_interleaved_prompt.npy")
rc=0
waferc "$G/llama_gqa_interleaved.onnx" -o "$TMP/n400c" --target=wse2 --mesh=8x8 --input-shape "input_ids=1x$L" \
  --generate=400 --gqa=colocate -q 2>/dev/null || rc=$?
[ $rc -eq 4 ] || fail "llama_gqa_interleaved 8x8 --generate=400 --gqa=colocate: exit $rc, want 4 (the premise)"
waferc "$G/llama_gqa_interleaved.onnx" -o "$TMP/n400" --target=wse2 --mesh=8x8 --input-shape "input_ids=1x$L" \
  --generate=400 -q 2>/dev/null || fail "llama_gqa_interleaved 8x8 --generate=400: waferc exited $?, want the replicated plan"
[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['generate']['gqa'])" "$TMP/n400/manifest.json")" = replicate ] ||
  fail "llama_gqa_interleaved 8x8 --generate=400: not replicated"
n=$((n + 1))
# RoPE's rows computed at the token's position (--rope=computed): both RoPE forms, square and
# not, both caches; the decode step holds the angles and no table of the sequence's length
for c in "llama_mha_halfrope 6x4 shift" "llama_gqa_interleaved 9x3 concat" "llama_mqa_halfrope 4x4 shift"; do
  set -- $c
  run_one "$1" "$2" "$3" --rope=computed
  d="$TMP/$1.$2.$3.rope=computed"
  grep -q '\.angles"' "$d/decode/manifest.json" || fail "$1 on $2 (--rope=computed): the decode step holds no angles"
  python3 - "$d" <<'PY' || fail "$1 on $2 (--rope=computed): the decode step still holds a table as long as the sequence"
import json, sys
q = json.load(open(sys.argv[1] + "/decode/manifest.json"))
T = json.load(open(sys.argv[1] + "/manifest.json"))["generate"]["prompt_length"] + 8
long = [t["name"] for t in q["weights"]["tensors"] if len(t["shape"]) == 2 and t["shape"][0] == T]  # held: [L + N, X]
sys.exit(1 if long else 0)
PY
done
set --
# one region where the phases fit only with the weights both plans hold the same way held once
# (docs/generation.md, "One region"): the prefill with SUMMA, the shared weights in its manifest
run_one gpt2_untied 3x3 shift
grep -q "weights that both plans hold the same way (.* bytes per PE) are held once, the prefill's GEMMs compiled with SUMMA" "$TMP/gpt2_untied.3x3.shift.cerr" ||
  fail "gpt2_untied on 3x3: no note of the weights held once: $(head -3 "$TMP/gpt2_untied.3x3.shift.cerr")"
queue shared "gpt2_untied on 3x3: the shared weights are not what the manifests say" "$TMP/gpt2_untied.3x3.shift"
# waferrun checks what the manifest says is held once: with one byte of a shared weight changed
# in the decode step's copy (and --allow-modified-plan past the digests) it refuses the plan
cp -r "$TMP/gpt2_untied.3x3.shift" "$TMP/shared_bad"
python3 - "$TMP/shared_bad" <<'PY' || fail "shared_bad: could not change the decode step's copy"
import json, sys
d = sys.argv[1]
p, q = (json.load(open(d + s + "/manifest.json")) for s in ("", "/decode"))
w = next(t for t in q["weights"]["tensors"] if t["name"] == p["generate"]["shared_weights"][0])
with open(d + "/decode/" + q["weights"]["file"], "r+b") as f:
    f.seek(w["offset"])
    b = f.read(1)
    f.seek(w["offset"])
    f.write(bytes([b[0] ^ 0x40]))
PY
rc=0
waferrun "$TMP/shared_bad" -q --allow-modified-plan --input "input_ids=$G/gpt2_untied_prompt.npy" --generate=8 \
  --output-dir "$TMP/shared_bad/out" 2>"$TMP/shared_bad.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "generate.shared_weights: .* is held once by both phases, but the two copies hold different bytes" \
  "$TMP/shared_bad.err" || fail "shared_bad: waferrun exited $rc: $(grep -m1 error "$TMP/shared_bad.err")"

# The memory ceiling holds for both phases: on 32x32 with a cache for 24 tokens the prefill's
# PEs need 1.6 MiB of host memory and the decode step's 2.1 MiB, so --memory-limit=2 passes the
# prefill and refuses the decode plan (exit 5) before anything runs.
d=$TMP/memceiling
waferc "$G/llama_gqa_interleaved.onnx" -o "$d" --target=wse2 --mesh=32x32 --input-shape input_ids=1x7 --generate=24 -q \
  2>/dev/null || fail "memceiling: waferc exited $?"
queue memceiling "memceiling: the plans' memory is not what this check assumes" "$d"
rc=0
waferrun "$d" -q --input "input_ids=$G/llama_gqa_interleaved_prompt.npy" --generate=8 --memory-limit 2 \
  --output-dir "$d/out" 2>"$TMP/mem.err" || rc=$?
[ "$rc" -eq 5 ] && grep -q "memceiling/decode: error: the PEs' memory needs 3 MiB of host memory, over --memory-limit=2" \
  "$TMP/mem.err" && [ ! -e "$d/out/tokens.npy" ] || { cat "$TMP/mem.err" >&2; fail "memceiling: exit $rc, expected 5"; }
n=$((n + 1))

# switch_and_steps MODEL MESH POLICY: the caches the switch builds hold the interpreter's k and v
# of the prompt (the packed graph for this mesh with generate-prefill, interpreted), each token
# on the row and slot the layout gives (row y slot j: token y Lb + j), the other slots zero; and
# after every decode step each row holds (non-zero slots of the simulated cache) the count the
# host recorded, the policy's own, balanced within one under shift once the prefill's short rows
# have filled.
switch_and_steps() {
  local m=$1 mesh=$2 pol=$3 d="$TMP/$1.$2.$3" L
  L=$(prompt_len "$G/${m}_prompt.npy")
  waferrun "$d" -q --input "input_ids=$G/${m}_prompt.npy" --generate=8 --output-dir "$d/dump.out" --dump-caches "$d/dump" \
    --heatmap "$d/heat" ||
    fail "$m on $mesh: waferrun --dump-caches exited $?"
  # the packing the plan's kv heads have (the manifest's generate.gqa): colocated with q or replicated
  local gqa
  gqa=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['generate']['gqa'])" "$d/manifest.json")
  waferc "$G/$m.onnx" --interpret --input "input_ids=$G/${m}_prompt.npy" --target=wse2 --mesh="$mesh" \
    --pass-pipeline="canonicalize,raise,cse,dce,head-layout{gqa=$gqa},generate-prefill" --output-dir "$d/iref" -q ||
    fail "$m on $mesh: interpreting the prefill graph exited $?"
  queue steps "$m on $mesh ($pol): the switch's caches or the steps' occupancy are wrong" "$d" "$d/iref" "$d/dump" "$pol"
  n=$((n + 1))
}
switch_and_steps llama_gqa_interleaved 9x3 shift
switch_and_steps gpt2_tied 5x8 concat
switch_and_steps llama_mqa_halfrope 6x4 shift

# a one-token prompt (its length is not split over the rows: every row holds it) and --generate=1
# (the prefill's token only) give the interpreter's tokens
python3 "$SRC/tests/tools/npy.py" "$TMP/one.npy" 1,1 7 i64:96
for m in llama_mha_halfrope gpt2_tied; do
  for N in 6 1; do
    d="$TMP/$m.one.$N"
    waferc "$G/$m.onnx" -o "$d" --target=wse2 --mesh=6x4 --input-shape input_ids=1x1 --generate=$N -q 2>/dev/null ||
      fail "$m, a one-token prompt, --generate=$N: waferc exited $?"
    waferrun "$d" -q --input "input_ids=$TMP/one.npy" --generate=$N --output-dir "$d/out" >/dev/null ||
      fail "$m, a one-token prompt, --generate=$N: waferrun exited $?"
    waferc "$G/$m.onnx" --interpret --input "input_ids=$TMP/one.npy" --generate=$N --output-dir "$d/ref" -q >/dev/null ||
      fail "$m, a one-token prompt: the interpreter exited $?"
    wafer-npycmp "$d/out/tokens.npy" "$d/ref/tokens.npy" --atol 0 --rtol 0 >/dev/null ||
      fail "$m, a one-token prompt, --generate=$N: the mesh's tokens differ from the interpreter's"
    n=$((n + 1))
  done
done

# past the SRAM: exit 4 names the largest N, which then compiles
m=llama_mha_halfrope
L=$(prompt_len "$G/${m}_prompt.npy")
set +e
waferc "$G/$m.onnx" -o "$TMP/big" --target=wse2 --mesh=4x4 --input-shape "input_ids=1x$L" --generate=1200 -q 2>"$TMP/err"
rc=$?
set -e
[ $rc -eq 4 ] || fail "a cache past the SRAM: waferc exited $rc, want 4: $(head -3 "$TMP/err")"
[ ! -e "$TMP/big/manifest.json" ] || fail "a refused --generate left a plan behind"
best=$(grep -o -- '--generate=[0-9]*' "$TMP/err" | head -1 | cut -d= -f2)
[ -n "$best" ] || fail "exit 4 does not name the largest N: $(cat "$TMP/err")"
waferc "$G/$m.onnx" -o "$TMP/best" --target=wse2 --mesh=4x4 --input-shape "input_ids=1x$L" --generate="$best" -q ||
  fail "--generate=$best, the N exit 4 named, does not compile"
set +e
waferc "$G/$m.onnx" -o "$TMP/best1" --target=wse2 --mesh=4x4 --input-shape "input_ids=1x$L" --generate=$((best + 1)) -q 2>/dev/null
rc=$?
set -e
[ $rc -eq 4 ] || fail "--generate=$((best + 1)), one past the N exit 4 named, exited $rc, want 4"
n=$((n + 1))
set +e
waferrun "$TMP/$m.6x4.shift" -q --input "input_ids=$G/${m}_prompt.npy" --generate=9 --output-dir "$TMP/o9" 2>"$TMP/err"
rc=$?
set -e
[ $rc -eq 4 ] || fail "--generate=9 on a plan for 8: waferrun exited $rc, want 4"
n=$((n + 1))
# --autotune weighs the candidates by the cost model and compiles the one it prints
m=llama_gqa_interleaved
L=$(prompt_len "$G/${m}_prompt.npy")
waferc "$G/$m.onnx" -o "$TMP/tuned" --target=wse2 --mesh=8x8 --input-shape "input_ids=1x$L" --generate=8 --autotune \
  -q >"$TMP/tune.txt" 2>/dev/null || fail "--autotune exited $?"
grep -q "^  8x8 " "$TMP/tune.txt" && grep -q "^  4x4 " "$TMP/tune.txt" || fail "--autotune does not list its candidates: $(cat "$TMP/tune.txt")"
python3 - "$TMP/tuned" "$TMP/tune.txt" <<'PY' || fail "--autotune compiled other regions than it chose: $(cat "$TMP/tune.txt")"
import json, os, re, sys
d, txt = sys.argv[1], open(sys.argv[2]).read()
pre = json.load(open(d + "/manifest.json"))["mesh"]
dec = json.load(open(d + "/decode/manifest.json"))["mesh"]
pairs = [(tuple(map(int, m[0:2])), tuple(map(int, m[2:4])), float(m[4]), float(m[5]))
         for m in re.findall(r"^  (\d+)x(\d+) -> (\d+)x(\d+) +([\d.]+) +([\d.]+)(?:  \(weights held once[^)]*\))?$", txt, re.M)]
chosen = re.search(r"chosen: prefill (\d+)x(\d+), decode (\d+)x(\d+)", txt).groups()
assert pairs, txt
assert all(b[0] <= a[0] and b[1] <= a[1] for a, b, _, _ in pairs), pairs
assert all((sw == 0) == (a == b) for a, b, sw, _ in pairs), pairs
best = min(pairs, key=lambda p: p[3])
assert [best[0], best[1]] == [tuple(map(int, chosen[:2])), tuple(map(int, chosen[2:]))], (best, chosen)
assert tuple(pre) == best[0] and tuple(dec) == best[1], (pre, dec, best)
assert os.path.exists(d + "/switch/manifest.json") == (best[0] != best[1])
PY
waferrun "$TMP/tuned" -q --input "input_ids=$G/${m}_prompt.npy" --generate=8 --output-dir "$TMP/tuned.out" ||
  fail "the autotuned plan does not run"
wafer-npycmp "$TMP/tuned.out/tokens.npy" "$G/${m}_tokens.npy" --atol 0 --rtol 0 >/dev/null || fail "the autotuned plan's tokens differ from torch's"
n=$((n + 1))

# ---- the queued checks ----
python3 - "$SRC/tests/tools" "$TMP/checks" <<'PY' || exit 1
import json, sys, traceback
sys.path.insert(0, sys.argv[1])
import gen_check

def _dec(d):
    return json.load(open(d + "/decode/manifest.json"))

def _mem(d):
    return max(c["memory_bytes"] for r in _dec(d)["regions"] for c in r["classes"])

def _kwidth(d):
    a = [t for t in _dec(d)["inputs"] if t["name"] == "k_cache_0"][0]
    return a["shape"][2]

def colocated(dc, dr):
    """dc with --gqa=colocate, dr with --gqa=replicate: the manifests say so, the decode step's
    attention is lowered colocated, the prefill's gathers the same kv pieces, and the cache is
    narrower than the replicated one's."""
    assert json.load(open(dc + "/manifest.json"))["generate"]["gqa"] == "colocate"
    assert json.load(open(dr + "/manifest.json"))["generate"]["gqa"] == "replicate"
    assert "-colocated" in open(dc + "/decode/manifest.json").read(), "no colocated decode attention"
    assert "-kvgather" in open(dc + "/manifest.json").read(), "the prefill does not gather the kv pieces"
    assert _kwidth(dc) < _kwidth(dr), (_kwidth(dc), _kwidth(dr))

def lighter(da, dc, dr):
    """auto (da) kept the packing whose decode step holds fewer bytes per PE (replicated on a tie)."""
    want = "colocate" if _mem(dc) < _mem(dr) else "replicate"
    got = json.load(open(da + "/manifest.json"))["generate"]["gqa"]
    assert got == want and _mem(da) == min(_mem(dc), _mem(dr)), (got, want, _mem(da), _mem(dc), _mem(dr))

def layouts(d):
    for sub in ("", "/decode"):
        m = json.load(open(d + sub + "/manifest.json"))
        if m["fabric_transposes"] or m["relayouts"]:
            sys.exit("%s: %d fabric transposes, %d relayouts" % (sub or "prefill", m["fabric_transposes"], m["relayouts"]))
        if sub and any(o["op"] in ("dist.gemm", "matmul", "dist.gemm_t") for o in m["ops"]):
            sys.exit("the decode step has a GEMM that is not a MeshGEMV")
        if sub and not any(o["op"] == "dist.gemv" for o in m["ops"]):
            sys.exit("the decode step has no dist.gemv")

def tied(d):
    """The tied head reads the embedding table as stored (dist.gemv_t): the decode step holds
    no weight whose shape is the table's transposed."""
    m = json.load(open(d + "/decode/manifest.json"))
    if not any(o["op"] == "dist.gemv_t" for o in m["ops"]):
        sys.exit("the decode step's head is not a dist.gemv_t")
    table = [w["shape"] for w in m["weights"]["tensors"] if w["name"] == "wte.weight"]
    if len(table) != 1:
        sys.exit("the decode step holds %d copies of wte.weight" % len(table))
    head = [w["name"] for w in m["weights"]["tensors"] if w["shape"] == table[0][::-1]]
    if head:
        sys.exit("the decode step holds %s, the table's shape transposed" % head)

def memceiling(d):
    mib = []
    for sub in ("", "/decode"):
        m = json.load(open(d + sub + "/manifest.json"))
        mib.append(sum(c["rect"][2] * c["rect"][3] * c["memory_bytes"] for r in m["regions"] for c in r["classes"]) / 2**20)
    assert mib[0] <= 2 < mib[1], mib

def shared(d):
    """The prefill names the weights both plans hold once: each the same bytes the same way in
    both (not pre-skewed: the prefill's GEMMs are SUMMA), and only with them held once do the
    phases fit beside each other's weights (each phase's memory plus the other's '@' symbols
    but the shared ones, the most over the classes)."""
    p, q = (json.load(open(d + sub + "/manifest.json")) for sub in ("", "/decode"))
    names = p["generate"]["shared_weights"]
    assert names, "no shared weights"
    def entry(m, n):
        return next(w for w in m["weights"]["tensors"] if w["name"] == n)
    def data(sub, w):
        with open(d + sub + "/" + p["weights"]["file"] if not sub else d + sub + "/" + q["weights"]["file"], "rb") as f:
            f.seek(w["offset"])
            return f.read(w["bytes"])
    syms = [set(), set()]
    for n in names:
        a, b = entry(p, n), entry(q, n)
        assert "skew" not in a and "skew" not in b, n
        for k in ("dtype", "shape", "split"):
            assert a[k] == b[k], (n, k, a[k], b[k])
        assert a.get("padded_shape") == b.get("padded_shape"), n
        assert data("", a) == data("/decode", b), n + ": different bytes"
        syms[0].add(a["symbol"]), syms[1].add(b["symbol"])
    assert all(o["lowering"].startswith("summa") for o in p["ops"] if o["op"] == "dist.gemm"), "prefill GEMMs"
    sram = p["target"]["sram_bytes"]
    def most(m, key, skip):
        return max(sum(s["bytes"] for s in c["memory"] if s["symbol"][0] == "@" and s["symbol"] not in skip)
                   if key == "w" else c["memory_bytes"] for r in m["regions"] for c in r["classes"])
    pm, dm = most(p, "m", ()), most(q, "m", ())
    pw, dw = most(p, "w", syms[0]), most(q, "w", syms[1])
    assert pm + dw <= sram and dm + pw <= sram, (pm, dw, dm, pw)
    assert pm + most(q, "w", ()) > sram or dm + most(p, "w", ()) > sram, "fits without sharing"

kinds = {"colocated": colocated, "lighter": lighter, "layouts": layouts, "tied": tied, "occupancy": gen_check.occupancy, "steps": gen_check.steps,
         "memceiling": memceiling, "shared": shared}
bad = 0
for line in open(sys.argv[2]):
    kind, what, *args = line.rstrip("\n").split("\t")
    try:
        kinds[kind](*args)
    except SystemExit as e:
        if e.code not in (None, 0):
            print(e.code if isinstance(e.code, str) else "exit %s" % e.code, file=sys.stderr)
            print("FAIL: " + what, file=sys.stderr)
            bad += 1
    except Exception:
        traceback.print_exc()
        print("FAIL: " + what, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
echo "generate_plans: $n checks passed"
