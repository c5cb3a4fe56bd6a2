#!/usr/bin/env bash
# A model whose weights sit past 3 GiB into an external data file (the way models over 2 GiB
# are stored) imports and computes the right result. The data file is sparse: no disk is used.
set -euo pipefail
M="${WAFERC_SOURCE_DIR:?}/tests/onnx/large"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
offset=3221225536   # written by tests/onnx/gen_large_external.py
cp "$M/large_external.onnx" "$TMP/"
truncate -s $((offset + 48)) "$TMP/large_external.bin" || fail "cannot make a sparse file here"
dd if="$M/large_external.w.raw" of="$TMP/large_external.bin" bs=48 count=1 \
   seek="$offset" oflag=seek_bytes conv=notrunc status=none
[ "$(stat -c %s "$TMP/large_external.bin")" -gt 3221225472 ] || fail "data file is not over 3 GiB"
waferc "$TMP/large_external.onnx" --interpret --input x="$M/large_external.in.x.npy" --output-dir "$TMP/out" \
  || fail "import or interpretation failed"
wafer-npycmp "$TMP/out/y.npy" "$M/large_external.ref.y.npy" --atol 1e-6 --rtol 1e-6 || fail "wrong result"
# A length that runs past the end of the file is an error, not a crash.
truncate -s $((offset + 20)) "$TMP/large_external.bin"
if waferc "$TMP/large_external.onnx" --emit=ir > /dev/null 2> "$TMP/err.txt"; then fail "a short data file was accepted"; fi
grep -q "needs 48 bytes at offset $offset" "$TMP/err.txt" || { cat "$TMP/err.txt"; fail "no clear error for a short file"; }
echo "PASS: weights at offset $offset of a sparse external file"
