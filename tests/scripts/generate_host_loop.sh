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

# The prompt, every toy plan below and the references the runs are checked against, in one
# python3 run (gen_toy_plan.py batch: one command per line).
$TOY batch <<EOF || fail "gen_toy_plan.py: could not write the toy plans"
prompt $TMP/prompt.npy
write $TMP/shift --policy shift --max 6
write $TMP/concat --policy concat --max 4
write $TMP/plain --no-generate
write $TMP/overfull --policy concat --max 6
write $TMP/hostile_1 --decode-plan ../shift/decode
write $TMP/hostile_2 --decode-plan /tmp
write $TMP/hostile_3 --decode-plan decode/../../shift/decode
write $TMP/missing --decode-plan elsewhere
>$TMP/ref_6_shift reference 6 --policy shift
>$TMP/ref_1_shift reference 1 --policy shift
>$TMP/ref_3_shift reference 3 --policy shift
>$TMP/ref_4_concat reference 4 --policy concat
>$TMP/ref_6 reference 6
EOF
P0=(--input input_ids="$TMP/prompt.npy")

# gen_ok NAME PLAN N POLICY: tokens, tokens.npy and the report against the reference. The
# checks of tokens.npy, the final cache and the report are made for every run at once after
# the last gen_ok (gen_ok_check: two python3 start-ups in all).
gen_ok_runs=()
gen_ok() {
  local name=$1 plan=$2 n=$3 policy=$4 out="$TMP/$1.out.d"
  waferrun "$plan" --input input_ids="$TMP/prompt.npy" --generate="$n" --output-dir "$out" \
    --report "$TMP/$name.json" >"$TMP/$name.log" 2>"$TMP/$name.err" ||
    { cat "$TMP/$name.err" >&2; fail "$name: waferrun --generate=$n exited $?"; }
  local want
  want=$(sed -n 's/^tokens: //p' "$TMP/ref_${n}_$policy")
  [ -n "$want" ] || fail "$name: no reference tokens"
  grep -q "^tokens ($n): $want\$" "$TMP/$name.log" || { cat "$TMP/$name.log" >&2; fail "$name: printed tokens are not '$want'"; }
  gen_ok_runs+=("$name $n $policy")
}
gen_ok_check() {
  local r name n policy want occ
  for r in "${gen_ok_runs[@]}"; do
    read -r name n policy <<<"$r"
    echo ">$TMP/$name.npy.txt tokens $TMP/$name.out.d/tokens.npy"
  done | $TOY batch || fail "tokens.npy of a run could not be read"
  for r in "${gen_ok_runs[@]}"; do
    read -r name n policy <<<"$r"
    want=$(sed -n 's/^tokens: //p' "$TMP/ref_${n}_$policy")
    grep -q "'shape': (1, $n)" "$TMP/$name.npy.txt" || fail "$name: tokens.npy is not [1, $n]: $(head -1 "$TMP/$name.npy.txt")"
    [ "$(sed -n 2p "$TMP/$name.npy.txt")" = "$want" ] || fail "$name: tokens.npy holds $(sed -n 2p "$TMP/$name.npy.txt"), want $want"
  done
  # the cache after the last step beside the tokens (the last phase of --dump-caches), and the
  # report
  for r in "${gen_ok_runs[@]}"; do
    read -r name n policy <<<"$r"
    want=$(sed -n 's/^tokens: //p' "$TMP/ref_${n}_$policy")
    occ=$(sed -n 's/^occupancy: //p' "$TMP/ref_${n}_$policy")
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$n" "$policy" "$want" "$occ"
  done >"$TMP/gen_ok.cases"
  python3 - "$SRC/tests/tools" "$TMP" <<'EOF' || exit 1
import json, sys, traceback
sys.path.insert(0, sys.argv[1])
import gen_toy_plan as t
tmp, bad = sys.argv[2], 0
def cache(name, n, policy):
    last = "step_%d" % (n - 1) if n > 1 else "switch"
    _, got = t.read_npy("%s/%s.out.d/k_cache_0.npy" % (tmp, name))
    want = t.reference_caches(n, policy)[last][1]
    if got != want:
        raise SystemExit('final cache %s, want %s' % (got, want))
def report(name, n, want, occ, policy):
    r = json.load(open("%s/%s.json" % (tmp, name)))
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
for line in open(tmp + "/gen_ok.cases"):
    name, n, policy, want, occ = line.rstrip("\n").split("\t")
    n, want, occ = int(n), [int(x) for x in want.split()], [int(c) for c in occ.split()]
    for f, what, args in ((cache, "the final cache in --output-dir", (name, n, policy)),
                          (report, "report check failed", (name, n, want, occ, policy))):
        try:
            f(*args)
        except BaseException as e:
            if isinstance(e, SystemExit):
                print(e.code, file=sys.stderr)
            else:
                traceback.print_exc()
            print("FAIL: %s: %s" % (name, what), file=sys.stderr)
            bad += 1
sys.exit(1 if bad else 0)
EOF
}

gen_ok shift6 "$TMP/shift" 6 shift
gen_ok shift1 "$TMP/shift" 1 shift
gen_ok shift3 "$TMP/shift" 3 shift
gen_ok concat4 "$TMP/concat" 4 concat
gen_ok_check
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
done
# (both dumps checked in one python3 run; a failure names its line)
$TOY batch <<EOF || fail "--dump-caches (above)"
check-dump $TMP/dump_shift 6 --policy shift
check-dump $TMP/dump_concat 4 --policy concat
EOF
expect_fail dumpnogen 2 "needs --generate" -- waferrun "$TMP/shift" "${P0[@]}" --dump-caches "$TMP/d"

# -q prints the tokens alone; --no-jit changes nothing (the toy has no kernels).
waferrun "$TMP/shift" -q --no-jit --input input_ids="$TMP/prompt.npy" --generate=6 >"$TMP/q.log" || fail "-q run failed"
[ "$(cat "$TMP/q.log")" = "$(sed -n 's/^tokens: //p' "$TMP/ref_6")" ] || fail "-q printed '$(cat "$TMP/q.log")'"

# --describe shows the generate object.
waferrun "$TMP/shift" --describe >"$TMP/describe.log" || fail "--describe failed"
grep -q "generate (waferrun --generate=N, N <= 6)" "$TMP/describe.log" || fail "--describe lacks the generate section"
grep -q "kv cache: shift, 2 rows x 4 slots per row" "$TMP/describe.log" || fail "--describe lacks the cache"
# Without --generate the prefill plan runs as a plain plan.
waferrun "$TMP/shift" -q --input input_ids="$TMP/prompt.npy" || fail "the prefill plan does not run alone"

P=(--input input_ids="$TMP/prompt.npy" --allow-modified-plan) # the plans below are edited by hand
# Requests (the toy plans: written at the top).
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
expect_fail full 5 "decode step 4: row 1's cache is full" -- waferrun "$TMP/overfull" "${P[@]}" --generate=5 \
  --output-dir "$TMP/full_out"
[ ! -e "$TMP/full_out/tokens.npy" ] || fail "full: tokens.npy written by a failed run"

# Plans. A hostile or missing decode plan path is refused, with or without --generate.
i=0
for bad in "../shift/decode" "/tmp" "decode/../../shift/decode"; do
  i=$((i + 1))
  expect_fail hostile 1 "generate.decode_plan: '$bad' must be a relative directory inside the plan" -- \
    waferrun "$TMP/hostile_$i" "${P[@]}" --generate=2
  expect_fail hostile_plain 1 "generate.decode_plan" -- waferrun "$TMP/hostile_$i" "${P[@]}"
done
expect_fail missing 1 "the plan has no decode step plan at" -- waferrun "$TMP/missing" "${P[@]}" --generate=2
# Bad generate objects and plans that do not match it.
# edit NAME PYTHON-STATEMENT-ON-m FILE: a copy of the shift plan with its manifest edited. The
# edits are queued and made by edits_apply, all in one python3 run, before the runs below.
: >"$TMP/edits"
edit() { printf '%s\t%s\t%s\n' "$1" "$3" "$2" >>"$TMP/edits"; }
edits_apply() {
  python3 - "$TMP" <<'EOF' || fail "could not edit the copies of the shift plan"
import json, shutil, sys
tmp = sys.argv[1]
for line in open(tmp + "/edits"):
    name, file, stmt = line.rstrip("\n").split("\t", 2)
    shutil.rmtree("%s/%s" % (tmp, name), ignore_errors=True)
    shutil.copytree(tmp + "/shift", "%s/%s" % (tmp, name), symlinks=True)
    f = "%s/%s/%s" % (tmp, name, file)
    m = json.load(open(f))
    exec(stmt)
    json.dump(m, open(f, "w"))
EOF
}
edit badcache 'm["generate"]["caches"][0]["prefill"] = "k_cache_9"' manifest.json
edit policy 'm["generate"]["kv_cache"] = "ring"' manifest.json
edit nokey 'del m["generate"]["slots_per_row"]' manifest.json
edit slots 'm["generate"]["slots_per_row"] = 3' manifest.json
edit decname 'm["generate"]["decode_position"] = "pos"' manifest.json
edit decshape 'm["inputs"][1]["shape"] = [1, 2]' decode/manifest.json
edit prompt 'm["generate"]["prompt_length"] = 4' manifest.json
FUZZ_KEYS="decode_plan prompt_input prompt_length max_new_tokens kv_cache prefill_next decode_ids
  decode_position decode_next rows slots_per_row caches"
FUZZ_VALS=(null -1 1e30 '"x"' '[{"prefill": 3}]')
for key in $FUZZ_KEYS; do
  for j in "${!FUZZ_VALS[@]}"; do
    edit "fuzz_${key}_$j" "m['generate']['$key'] = json.loads('${FUZZ_VALS[$j]}')" manifest.json
  done
done
edit fuzz 'm["generate"] = [1, 2]' manifest.json
edit route 'pass' manifest.json
edits_apply

expect_fail badcache 1 "generate.caches\[0\].prefill: 'k_cache_9' is not an output of the plan" -- \
  waferrun "$TMP/badcache" "${P[@]}" --generate=2
expect_fail policy 1 'generate.kv_cache: expected "shift" or "concat"' -- waferrun "$TMP/policy" "${P[@]}" --generate=2
expect_fail nokey 1 "generate: missing key 'slots_per_row'" -- waferrun "$TMP/nokey" "${P[@]}" --generate=2
expect_fail slots 1 "decode/manifest.json: error: the decode cache 'k_cache_0' is f32\[1, 8, 2\]" -- \
  waferrun "$TMP/slots" "${P[@]}" --generate=2
expect_fail decname 1 "the decode plan has no input 'pos'" -- waferrun "$TMP/decname" "${P[@]}" --generate=2
expect_fail decshape 1 "the position input 'position' is i64\[1, 2\]" -- waferrun "$TMP/decshape" "${P[@]}" --generate=2
expect_fail prompt 1 "generate.prompt_length 4 wants an integer \[1, 4\]" -- waferrun "$TMP/prompt" "${P[@]}" --generate=2
# Every key of the object, given a value of the wrong kind or range: exit 1 with a message
# naming generate.<key>, never a crash (a manifest is data and may come from anywhere).
for key in $FUZZ_KEYS; do
  for j in "${!FUZZ_VALS[@]}"; do
    val=${FUZZ_VALS[$j]}
    waferrun "$TMP/fuzz_${key}_$j" "${P[@]}" --generate=2 >/dev/null 2>"$TMP/fuzz.err"
    rc=$?
    # a value that happens to be valid (the count 1 for a size) runs; anything else is refused
    case $rc in
      0 | 4 | 5) ;;
      1) grep -q "generate" "$TMP/fuzz.err" || fail "fuzz $key=$val: message lacks 'generate': $(head -2 "$TMP/fuzz.err")" ;;
      *) fail "fuzz $key=$val: exit $rc: $(head -2 "$TMP/fuzz.err")" ;;
    esac
  done
done
expect_fail fuzz_obj 1 "generate: expected an object" -- waferrun "$TMP/fuzz" "${P[@]}" --generate=2

# A decode step plan that is not a valid plan: its own loader's message, then the pointer.
sed -i 's/^op 0$/.color c0 x\n[y<C] .route c0 RAMP -> E\nop 0/' "$TMP/route/decode/programs/main.wpe"
expect_fail route 1 "a route's guard cannot name the step parameters R or C" -- waferrun "$TMP/route" "${P[@]}" --generate=2
grep -q "generate.decode_plan 'decode': the decode step plan is not valid" "$TMP/route.err" || fail "route: no pointer to the decode plan"

echo "generate_host_loop: shift and concat tokens match the contract's loop; bad requests and plans refused"
