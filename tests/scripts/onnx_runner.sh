#!/usr/bin/env bash
# wafer-onnx-test itself: a wrong expected output is a FAIL (exit 1) that says which element,
# a corrupt model is a FAIL and never a crash, an op outside the phase-2 scope is a SKIP (77),
# and --batch rewrites only its own section of the markdown file.
set -uo pipefail
node="${WAFERC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}"
src="${WAFERC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ ! -d "$node/test_add" ]; then
  echo "note: $node not found (libonnx-testdata): nothing to check"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
t() { wafer-onnx-test --scope "$src/tests/onnx/scope.txt" "$@"; }
expect() { # expect CODE PATTERN NAME -- the last run's exit code and output
  local want=$1 pat=$2 what=$3
  if [ "$rc" -ne "$want" ] || ! grep -Eq "$pat" "$tmp/out"; then
    echo "FAIL $what: exit $rc (want $want), output:"
    sed 's/^/  /' "$tmp/out"
    failures=$((failures + 1))
  else
    echo "ok   $what"
  fi
}

# 1. The real test passes.
t "$node/test_add" > "$tmp/out" 2>&1; rc=$?
expect 0 '^PASS test_add: .*max abs err' "test_add passes"

# 2. The same model with y's values as the expected output: the sums are wrong, so FAIL, and
#    the reason is a numeric mismatch (not an import problem).
cp -r "$node/test_add" "$tmp/test_add_wrong"
cp "$node/test_add/test_data_set_0/input_1.pb" "$tmp/test_add_wrong/test_data_set_0/output_0.pb"
t "$tmp/test_add_wrong" > "$tmp/out" 2>&1; rc=$?
expect 1 '^FAIL test_add_wrong: output 0 f32\[3,4,5\]: element [0-9]+ is .*expected' "a wrong expected output fails"

# 3. A truncated model: FAIL with exit 1, never a crash.
mkdir -p "$tmp/test_add_truncated"
cp -r "$node/test_add/test_data_set_0" "$tmp/test_add_truncated/"
head -c 40 "$node/test_add/model.onnx" > "$tmp/test_add_truncated/model.onnx"
t "$tmp/test_add_truncated" > "$tmp/out" 2>&1; rc=$?
expect 1 '^FAIL test_add_truncated: ' "a truncated model fails cleanly"

# 4. An op outside the scope (Det): SKIP, exit 77, naming the op.
t "$node/test_det_2d" > "$tmp/out" 2>&1; rc=$?
expect 77 '^SKIP test_det_2d: uses ops outside the phase-2 scope: Det$' "an out-of-scope op skips"

# 5. A directory without a model: a file that cannot be read, exit 6 (README's table), naming
#    it. (In --batch, the same test is one FAIL row.)
mkdir -p "$tmp/test_empty"
t "$tmp/test_empty" > "$tmp/out" 2>&1; rc=$?
expect 6 'test_empty/model.onnx: error: cannot read' "a directory without model.onnx is exit 6"

# 6. --batch over a small root keeps the rest of the markdown file, and rerunning it replaces
#    its section instead of appending a second one.
mkdir -p "$tmp/root"
ln -s "$node/test_add" "$tmp/root/test_add"
ln -s "$node/test_det_2d" "$tmp/root/test_det_2d"
cp -r "$tmp/test_add_wrong" "$tmp/root/test_add_wrong"
printf '# Title\n\n## Supported operators\n\nkeep me\n' > "$tmp/C.md"
for run in 1 2; do
  wafer-onnx-test --scope "$src/tests/onnx/scope.txt" --batch "$tmp/root" --markdown "$tmp/C.md" > "$tmp/out" 2>&1; rc=$?
  expect 0 '^in scope: 1 pass, 1 fail, 0 skip' "batch run $run"
done
n_begin=$(grep -c 'BEGIN wafer-onnx-test results' "$tmp/C.md")
if [ "$(grep -c '^keep me$' "$tmp/C.md")" -ne 1 ] || [ "$n_begin" -ne 1 ] ||
   ! grep -q '^| Add | 1/2 | 1 | 0 |' "$tmp/C.md" ||
   ! grep -q '`test_add_wrong` | output 0' "$tmp/C.md" ||
   ! grep -q '`Det` (1)' "$tmp/C.md"; then
  echo "FAIL batch markdown:"
  sed 's/^/  /' "$tmp/C.md"
  failures=$((failures + 1))
else
  echo "ok   batch markdown keeps the file's other sections"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
