#!/usr/bin/env bash
# Broken plans and unfit models: waferrun/waferc must exit non-zero with a message naming
# the file (and the place in it), never crash.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n
E=$SRC/examples
X=$E/mlp_softmax_x.npy

waferc "$E/mlp_softmax.wir" -o "$TMP/good" --target=test4x4 || fail "compile failed"

# expect_fail NAME EXPECTED_EXIT PATTERN -- command...
expect_fail() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$TMP/$name.err" >&2; fail "$name: exit $rc, expected $code"; }
  grep -q -- "$pattern" "$TMP/$name.err" || { cat "$TMP/$name.err" >&2; fail "$name: message lacks '$pattern'"; }
}

variant() { rm -rf "$TMP/$1"; cp -r "$TMP/good" "$TMP/$1"; }

variant corrupt
head -c 200 "$TMP/good/manifest.json" >"$TMP/corrupt/manifest.json"
expect_fail corrupt 1 "corrupt/manifest.json:" -- waferrun "$TMP/corrupt" --input x="$X"

variant noprog
rm "$TMP/noprog/programs/main.wpe"
expect_fail noprog 1 "noprog/programs/main.wpe" -- waferrun "$TMP/noprog" --input x="$X"

variant version
sed -i 's/"format_version":[[:space:]]*[0-9]*/"format_version": 7/' "$TMP/version/manifest.json"
expect_fail version 1 "format_version 7" -- waferrun "$TMP/version" --allow-modified-plan --input x="$X"

variant rect
sed -i '0,/"rect":[[:space:]]*\[0, 0, 4, 4\]/s//"rect": [0, 0, 9, 4]/' "$TMP/rect/manifest.json"
expect_fail rect 1 "outside the 4x4 mesh" -- waferrun "$TMP/rect" --allow-modified-plan --input x="$X"

variant color
sed -i 's/send c3 /send c9 /' "$TMP/color/programs/main.wpe"
expect_fail color 1 "main.wpe:[0-9]*:[0-9]*: error: unknown color 'c9'" -- waferrun "$TMP/color" --allow-modified-plan --input x="$X"

variant weights
head -c 100 "$TMP/good/weights.bin" >"$TMP/weights/weights.bin"
expect_fail weights 1 "weights/weights.bin" -- waferrun "$TMP/weights" --input x="$X"

expect_fail noinput 2 "an input is not bound: x" -- waferrun "$TMP/good"
expect_fail nodir 6 "nodir: error: no such plan directory" -- waferrun "$TMP/nodir" --input x="$X"

# A program that waits for wavelets nobody sends: deadlock, named PE and color. The softmax's
# allreduce broadcasts its sum from its root on the color declared "flooding broadcast"; the
# root's send moves to a PE that does not exist.
variant deadlock
bc=$(sed -n 's/^\.color \(c[0-9]*\) flooding broadcast$/\1/p' "$TMP/deadlock/programs/main.wpe" | head -1)
[ -n "$bc" ] || fail "deadlock: no flooding broadcast color in the program"
sed -i "s/^\[x==[0-9]*\] send $bc /[x==9] send $bc /" "$TMP/deadlock/programs/main.wpe"
expect_fail deadlock 5 "recv on color $bc stalled" -- waferrun "$TMP/deadlock" --allow-modified-plan --input x="$X"

# Deadlock on a switch position: the wavelets wait at a router whose position never comes.
G=$SRC/tests/fidelity/collectives.py
python3 "$G" gen star 4 1 8 2 "$TMP/star" && python3 "$G" input 4 1 8 "$TMP/star.npy"
sed -i 's/^\[x>0\] sendadv /[x>0] send /' "$TMP/star/programs/main.wpe"
expect_fail swdeadlock 5 "switch position 0 does not accept E" -- waferrun "$TMP/star" --allow-modified-plan --input a="$TMP/star.npy"
grep -q "PE (0,0) class 'main' task 'main' line [0-9]*: recvadd on color c0 stalled" "$TMP/swdeadlock.err" \
  || { cat "$TMP/swdeadlock.err" >&2; fail "swdeadlock: the stalled root is not named"; }

# More switch positions than the target has.
python3 "$G" gen tree 8 1 4 2 "$TMP/pos" && python3 "$G" input 8 1 4 "$TMP/pos.npy"
sed -i 's/"switch_positions": 4/"switch_positions": 2/' "$TMP/pos/manifest.json"
expect_fail positions 1 "main.wpe:[0-9]*:1: error: switch position p2: target 'fidelity' has 2" -- \
  waferrun "$TMP/pos" --allow-modified-plan --input a="$TMP/pos.npy"

# SRAM overflow names the PE, the class and the symbol.
# A `coll` marker naming a collective the manifest does not list, and a manifest whose
# collectives skip an index: both refused at load, located.
variant coll
sed -i '0,/^coll 0 /s//coll 7 /' "$TMP/coll/programs/main.wpe"
expect_fail coll 1 "main.wpe:[0-9]*:1: error: collective index 7 is not in the manifest's ops\[\].collectives (2; -1 ends one)" -- \
  waferrun "$TMP/coll" --allow-modified-plan --input x="$X"
variant collidx
python3 - "$TMP/collidx/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
next(c for o in m["ops"] for c in o.get("collectives", []) if c["index"] == 1)["index"] = 5
json.dump(m, open(sys.argv[1], "w"))
PY
expect_fail collidx 1 "no collective has index 1" -- waferrun "$TMP/collidx" --allow-modified-plan --input x="$X"

variant sram
sed -i '0,/^\.sym \([^ ]*\) *\([0-9]*\) *[0-9]*/s//.sym \1 \2 99999999/' "$TMP/sram/programs/main.wpe"
expect_fail sram 1 "SRAM overflow on PE (0,0) (and every PE of class 'main'): symbol '" -- \
  waferrun "$TMP/sram" --allow-modified-plan --input x="$X"

# A .wpe format this waferrun does not read.
variant wpefmt
sed -i 's/^\.format [0-9]*/.format 9/' "$TMP/wpefmt/programs/main.wpe"
expect_fail wpefmt 1 "main.wpe:[0-9]*:[0-9]*: error: unsupported .wpe format version 9 (supported: 1..2)" -- \
  waferrun "$TMP/wpefmt" --allow-modified-plan --input x="$X"

# --mode takes functional or timing.
expect_fail mode 2 "--mode expects functional or timing" -- waferrun "$TMP/good" --mode=fast

# Without --allow-modified-plan a hand edit is named as such (the digests waferc recorded),
# and a truncated weights.bin above is reported as modified or truncated.
grep -q "weights/weights.bin: error: modified or truncated since waferc wrote the plan" "$TMP/weights.err" ||
  { cat "$TMP/weights.err" >&2; fail "weights: the truncated copy is not reported as such"; }
expect_fail edited 1 "version/manifest.json: error: modified since waferc wrote the plan" -- \
  waferrun "$TMP/version" --input x="$X"

# A failed compile into an existing plan leaves the old plan as it was (waferc writes beside
# it and moves the new plan into place only when all of it is written).
cp -r "$TMP/good" "$TMP/stale"
# (two_layer on one PE fits 48 KiB once dead values' memory is reused: use a 16 KiB PE.)
sed 's/^sram_bytes = .*/sram_bytes = 16384/; s/^name = .*/name = tiny16k/' "$SRC/targets/test4x4.target" \
  > "$TMP/tiny16k.target"
expect_fail nofit 4 "tensor '.*' does not fit the 16384-byte SRAM" -- \
  waferc "$E/two_layer.wir" -o "$TMP/stale" --target="$TMP/tiny16k.target" --mesh=1x1
diff -r "$TMP/good" "$TMP/stale" >/dev/null || fail "a failed compile changed the plan that was there"
waferrun "$TMP/stale" -q --input x="$X" || fail "the old plan no longer runs after a failed compile"
[ -z "$(ls -A "$TMP" | grep '^\.stale\.waferc-')" ] || fail "a failed compile left its stage directory behind"

echo "e2e_bad_plan: all broken inputs rejected"
