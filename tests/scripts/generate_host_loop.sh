#!/usr/bin/env bash
# waferrun --generate's host loop (docs/running.md, "Generation") on a toy generation plan pair
# written by hand (tests/tools/gen_toy_plan.py): the tokens equal the contract's loop
# recomputed in Python (shift and concat), tokens.npy is int64 [1, N], the report has its
# phase sections, and every bad request or bad plan exits with its documented code and a
# message naming the place, before anything is written.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # TMP, fail
TOY="python3 $SRC/tests/tools/gen_toy_plan.py"

# expect_fail NAME EXPECTED_EXIT PATTERN -- command...
expect_fail() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$TMP/$name.err" >&2; fail "$name: exit $rc, expected $code"; }
  grep -q -- "$pattern" "$TMP/$name.err" || { cat "$TMP/$name.err" >&2; fail "$name: message lacks '$pattern'"; }
}

$TOY prompt "$TMP/prompt.npy"
P0=(--input input_ids="$TMP/prompt.npy")
$TOY write "$TMP/shift" --policy shift --max 6
$TOY write "$TMP/concat" --policy concat --max 4

# gen_ok NAME PLAN N POLICY: tokens, tokens.npy and the report against the reference.
gen_ok() {
  local name=$1 plan=$2 n=$3 policy=$4 out="$TMP/$1.out.d"
  waferrun "$plan" --input input_ids="$TMP/prompt.npy" --generate="$n" --output-dir "$out" \
    --report "$TMP/$name.json" >"$TMP/$name.log" 2>"$TMP/$name.err" ||
    { cat "$TMP/$name.err" >&2; fail "$name: waferrun --generate=$n exited $?"; }
  local want occ
  want=$($TOY reference "$n" --policy "$policy" | sed -n 's/^tokens: //p')
  occ=$($TOY reference "$n" --policy "$policy" | sed -n 's/^occupancy: //p')
  grep -q "^tokens ($n): $want\$" "$TMP/$name.log" || { cat "$TMP/$name.log" >&2; fail "$name: printed tokens are not '$want'"; }
  $TOY tokens "$out/tokens.npy" >"$TMP/$name.npy.txt"
  grep -q "'shape': (1, $n)" "$TMP/$name.npy.txt" || fail "$name: tokens.npy is not [1, $n]: $(head -1 "$TMP/$name.npy.txt")"
  [ "$(sed -n 2p "$TMP/$name.npy.txt")" = "$want" ] || fail "$name: tokens.npy holds $(sed -n 2p "$TMP/$name.npy.txt"), want $want"
  # the cache after the last step beside the tokens (the last phase of --dump-caches)
  local last=switch
  [ "$n" -gt 1 ] && last=step_$((n - 1))
  python3 -c "
import sys; sys.path.insert(0, '$SRC/tests/tools'); import gen_toy_plan as t
_, got = t.read_npy('$out/k_cache_0.npy')
want = t.reference_caches($n, '$policy')['$last'][1]
sys.exit(0 if got == want else 'final cache %s, want %s' % (got, want))" || fail "$name: the final cache in --output-dir"
  python3 - "$TMP/$name.json" "$n" "$want" "$occ" "$policy" <<'EOF' || fail "$name: report check failed"
import json, sys
r = json.load(open(sys.argv[1]))
n, want, occ, policy = int(sys.argv[2]), [int(t) for t in sys.argv[3].split()], [int(c) for c in sys.argv[4].split()], sys.argv[5]
assert r["tokens"] == want, r["tokens"]
p, s, d, kv = r["prefill"], r["switch"], r["decode"], r["kv_cache"]
assert p["cycles"] > 0 and abs(p["seconds"] - p["cycles"] / r["clock_hz"]) < 1e-15, p
assert p["time_to_first_token_s"] == p["seconds"], p
assert s["cycles"] == 0 and s["fabric_words"] == 0 and s["note"], s
assert d["steps"] == n - 1 and len(d["step_cycles"]) == n - 1 and sum(d["step_cycles"]) == d["cycles"], d
assert all(c > 0 for c in d["step_cycles"]), d
if n > 1:
    assert abs(d["tokens_per_s"] - (n - 1) / d["seconds"]) < 1e-6 * d["tokens_per_s"], d
else:
    assert d["tokens_per_s"] is None and d["cycles_per_step"] is None, d
assert kv["policy"] == policy and kv["rows"] == 2 and kv["slots_per_row"] == 4 and kv["occupancy"] == occ, kv
EOF
}

gen_ok shift6 "$TMP/shift" 6 shift
gen_ok shift1 "$TMP/shift" 1 shift
gen_ok shift3 "$TMP/shift" 3 shift
gen_ok concat4 "$TMP/concat" 4 concat
# The two policies grow different rows from step 3 on (shift: row 0, the emptier), so their
# fourth tokens differ.
[ "$(sed -n 2p "$TMP/shift6.npy.txt" | cut -d' ' -f1-4)" != "$(sed -n 2p "$TMP/concat4.npy.txt")" ] ||
  fail "shift and concat gave the same tokens: the grow row is not used"

# --dump-caches: the switched cache and the cache after every step, with the rows' counts,
# equal the contract's (the prompt's K in its rows' first slots; each step's token in the
# grown row's next slot; nothing else written).
for pol in shift:6 concat:4; do
  waferrun "$TMP/${pol%:*}" -q --input input_ids="$TMP/prompt.npy" --generate="${pol#*:}" \
    --dump-caches "$TMP/dump_${pol%:*}" >/dev/null || fail "--dump-caches run failed ($pol)"
  $TOY check-dump "$TMP/dump_${pol%:*}" "${pol#*:}" --policy "${pol%:*}" || fail "--dump-caches ($pol)"
done
expect_fail dumpnogen 2 "needs --generate" -- waferrun "$TMP/shift" "${P0[@]}" --dump-caches "$TMP/d"

# -q prints the tokens alone; --no-jit changes nothing (the toy has no kernels).
waferrun "$TMP/shift" -q --no-jit --input input_ids="$TMP/prompt.npy" --generate=6 >"$TMP/q.log" || fail "-q run failed"
[ "$(cat "$TMP/q.log")" = "$($TOY reference 6 | sed -n 's/^tokens: //p')" ] || fail "-q printed '$(cat "$TMP/q.log")'"

# --describe shows the generate object.
waferrun "$TMP/shift" --describe >"$TMP/describe.log" || fail "--describe failed"
grep -q "generate (waferrun --generate=N, N <= 6)" "$TMP/describe.log" || fail "--describe lacks the generate section"
grep -q "kv cache: shift, 2 rows x 4 slots per row" "$TMP/describe.log" || fail "--describe lacks the cache"
# Without --generate the prefill plan runs as a plain plan.
waferrun "$TMP/shift" -q --input input_ids="$TMP/prompt.npy" || fail "the prefill plan does not run alone"

P=(--input input_ids="$TMP/prompt.npy" --allow-modified-plan) # the plans below are edited by hand
# Requests.
$TOY write "$TMP/plain" --no-generate
expect_fail nogen 1 "this plan was not compiled with --generate" -- waferrun "$TMP/plain" "${P[@]}" --generate=2
expect_fail toomany 4 "at most 6 new tokens" -- waferrun "$TMP/shift" "${P[@]}" --generate=7
expect_fail zero 2 "at least 1" -- waferrun "$TMP/shift" "${P[@]}" --generate=0
expect_fail notnum 2 "expects a non-negative integer" -- waferrun "$TMP/shift" "${P[@]}" --generate=two
expect_fail trace 2 "does not take --trace" -- waferrun "$TMP/shift" "${P[@]}" --generate=2 --trace "$TMP/t.json"
expect_fail timing 2 "does not take --mode=timing" -- waferrun "$TMP/shift" "${P[@]}" --generate=2 --mode=timing
expect_fail unbound 2 "an input is not bound: input_ids" -- waferrun "$TMP/shift" --generate=2
expect_fail outdir 6 "cannot create it" -- waferrun "$TMP/shift" "${P[@]}" --generate=2 --output-dir "$TMP/no/such/out"
[ ! -e "$TMP/no" ] || fail "outdir: something was written"
expect_fail report 6 "is a directory" -- waferrun "$TMP/shift" "${P[@]}" --generate=2 --report "$TMP"
# A plan whose max_new_tokens its cache cannot hold: the loop stops at the full row.
$TOY write "$TMP/overfull" --policy concat --max 6
expect_fail full 5 "decode step 4: row 1's cache is full" -- waferrun "$TMP/overfull" "${P[@]}" --generate=5 \
  --output-dir "$TMP/full_out"
[ ! -e "$TMP/full_out/tokens.npy" ] || fail "full: tokens.npy written by a failed run"

# Plans. A hostile or missing decode plan path is refused, with or without --generate.
for bad in "../shift/decode" "/tmp" "decode/../../shift/decode"; do
  $TOY write "$TMP/hostile" --decode-plan "$bad"
  expect_fail hostile 1 "generate.decode_plan: '$bad' must be a relative directory inside the plan" -- \
    waferrun "$TMP/hostile" "${P[@]}" --generate=2
  expect_fail hostile_plain 1 "generate.decode_plan" -- waferrun "$TMP/hostile" "${P[@]}"
done
$TOY write "$TMP/missing" --decode-plan elsewhere
expect_fail missing 1 "the plan has no decode step plan at" -- waferrun "$TMP/missing" "${P[@]}" --generate=2
# Bad generate objects and plans that do not match it.
edit() { # edit NAME PYTHON-STATEMENT-ON-m FILE: a copy of the shift plan with its manifest edited
  rm -rf "$TMP/$1"
  cp -r "$TMP/shift" "$TMP/$1"
  python3 -c "import json,sys; f='$TMP/$1/$3'; m=json.load(open(f)); $2; json.dump(m, open(f, 'w'))"
}
edit badcache 'm["generate"]["caches"][0]["prefill"] = "k_cache_9"' manifest.json
expect_fail badcache 1 "generate.caches\[0\].prefill: 'k_cache_9' is not an output of the plan" -- \
  waferrun "$TMP/badcache" "${P[@]}" --generate=2
edit policy 'm["generate"]["kv_cache"] = "ring"' manifest.json
expect_fail policy 1 'generate.kv_cache: expected "shift" or "concat"' -- waferrun "$TMP/policy" "${P[@]}" --generate=2
edit nokey 'del m["generate"]["slots_per_row"]' manifest.json
expect_fail nokey 1 "generate: missing key 'slots_per_row'" -- waferrun "$TMP/nokey" "${P[@]}" --generate=2
edit slots 'm["generate"]["slots_per_row"] = 3' manifest.json
expect_fail slots 1 "decode/manifest.json: error: the decode cache 'k_cache_0' is f32\[1, 8, 2\]" -- \
  waferrun "$TMP/slots" "${P[@]}" --generate=2
edit decname 'm["generate"]["decode_position"] = "pos"' manifest.json
expect_fail decname 1 "the decode plan has no input 'pos'" -- waferrun "$TMP/decname" "${P[@]}" --generate=2
edit decshape 'm["inputs"][1]["shape"] = [1, 2]' decode/manifest.json
expect_fail decshape 1 "the position input 'position' is i64\[1, 2\]" -- waferrun "$TMP/decshape" "${P[@]}" --generate=2
edit prompt 'm["generate"]["prompt_length"] = 4' manifest.json
expect_fail prompt 1 "generate.prompt_length 4 wants an integer \[1, 4\]" -- waferrun "$TMP/prompt" "${P[@]}" --generate=2
# Every key of the object, given a value of the wrong kind or range: exit 1 with a message
# naming generate.<key>, never a crash (a manifest is data and may come from anywhere).
for key in decode_plan prompt_input prompt_length max_new_tokens kv_cache prefill_next decode_ids \
  decode_position decode_next rows slots_per_row caches; do
  for val in null -1 1e30 '"x"' '[{"prefill": 3}]'; do
    edit fuzz "m['generate']['$key'] = json.loads('$val')" manifest.json
    waferrun "$TMP/fuzz" "${P[@]}" --generate=2 >/dev/null 2>"$TMP/fuzz.err"
    rc=$?
    # a value that happens to be valid (the count 1 for a size) runs; anything else is refused
    case $rc in
      0 | 4 | 5) ;;
      1) grep -q "generate" "$TMP/fuzz.err" || fail "fuzz $key=$val: message lacks 'generate': $(head -2 "$TMP/fuzz.err")" ;;
      *) fail "fuzz $key=$val: exit $rc: $(head -2 "$TMP/fuzz.err")" ;;
    esac
  done
done
edit fuzz 'm["generate"] = [1, 2]' manifest.json
expect_fail fuzz_obj 1 "generate: expected an object" -- waferrun "$TMP/fuzz" "${P[@]}" --generate=2

# A decode step plan that is not a valid plan: its own loader's message, then the pointer.
edit route 'pass' manifest.json
sed -i 's/^op 0$/.color c0 x\n[y<C] .route c0 RAMP -> E\nop 0/' "$TMP/route/decode/programs/main.wpe"
expect_fail route 1 "a route's guard cannot name the step parameters R or C" -- waferrun "$TMP/route" "${P[@]}" --generate=2
grep -q "generate.decode_plan 'decode': the decode step plan is not valid" "$TMP/route.err" || fail "route: no pointer to the decode plan"

echo "generate_host_loop: shift and concat tokens match the contract's loop; bad requests and plans refused"
