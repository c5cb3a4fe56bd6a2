#!/usr/bin/env bash
# Broken plans and unfit models: waferrun/waferc must exit non-zero with a message naming
# the file (and the place in it), never crash.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
export WAFERC_TARGET_PATH=$SRC/targets
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
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
sed -i 's/"format_version":[[:space:]]*1/"format_version": 7/' "$TMP/version/manifest.json"
expect_fail version 1 "format_version 7" -- waferrun "$TMP/version" --input x="$X"

variant rect
sed -i '0,/"rect":[[:space:]]*\[0, 0, 4, 4\]/s//"rect": [0, 0, 9, 4]/' "$TMP/rect/manifest.json"
expect_fail rect 1 "outside the 4x4 mesh" -- waferrun "$TMP/rect" --input x="$X"

variant color
sed -i 's/send c3 /send c9 /' "$TMP/color/programs/main.wpe"
expect_fail color 1 "main.wpe:[0-9]*:[0-9]*: error: unknown color 'c9'" -- waferrun "$TMP/color" --input x="$X"

variant weights
head -c 100 "$TMP/good/weights.bin" >"$TMP/weights/weights.bin"
expect_fail weights 1 "weights/weights.bin" -- waferrun "$TMP/weights" --input x="$X"

expect_fail noinput 2 "input 'x' is not bound" -- waferrun "$TMP/good"
expect_fail nodir 1 "nodir/manifest.json" -- waferrun "$TMP/nodir" --input x="$X"

# A program that waits for wavelets nobody sends: deadlock, named PE and color.
variant deadlock
sed -i 's/^\[x==0\] send c3 /[x==9] send c3 /' "$TMP/deadlock/programs/main.wpe"
expect_fail deadlock 5 "recv on color c3 stalled" -- waferrun "$TMP/deadlock" --input x="$X"

# A failed compile into an existing plan leaves no manifest behind.
cp -r "$TMP/good" "$TMP/stale"
expect_fail nofit 4 "symbol '" -- waferc "$E/two_layer.wir" -o "$TMP/stale" --target=test4x4 --mesh=1x1
[ ! -e "$TMP/stale/manifest.json" ] || fail "a failed compile left a manifest behind"

# Not divisible by the mesh: a located, unsupported error.
expect_fail nodiv 3 "mlp_softmax.wir:[0-9]*:[0-9]*: error: partition:" -- \
  waferc "$E/mlp_softmax.wir" -o "$TMP/nodiv" --target=test4x4 --mesh=3x3
echo "e2e_bad_plan: all broken inputs rejected"
