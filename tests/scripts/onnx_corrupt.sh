#!/usr/bin/env bash
# Broken ONNX files never crash the importer: models truncated at many offsets and with
# bytes overwritten at deterministic positions must give an error (exit 1, 3 or 6) or, when
# the damage happens to leave a valid model, success -- never a signal (exit >= 128).
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
M=$SRC/tests/onnx/models
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

runs=0 errors=0
check() { # check FILE WHAT
  waferc "$1" --input-shape x=1x4x8 --emit=ir --pass-pipeline=canonicalize >/dev/null 2>"$TMP/err"
  local rc=$?
  runs=$((runs + 1))
  case $rc in
    0) ;;
    1 | 2 | 3 | 6) errors=$((errors + 1)) ;;
    *) cat "$TMP/err" >&2; fail "$2: exit $rc" ;;
  esac
}

for stem in gpt2_shapes movement function constants control_flow; do
  src=$M/$stem.onnx
  size=$(stat -c %s "$src")
  step=$(( size / 40 + 1 ))
  for ((off = 0; off < size; off += step)); do
    head -c "$off" "$src" >"$TMP/t.onnx"
    check "$TMP/t.onnx" "$stem truncated to $off bytes"
  done
  seed=7
  for i in $(seq 1 40); do
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    pos=$(( seed % size ))
    val=$(( (seed / 65536) % 256 ))
    cp "$src" "$TMP/f.onnx"
    printf "$(printf '\\%03o' "$val")" | dd of="$TMP/f.onnx" bs=1 seek="$pos" conv=notrunc status=none
    check "$TMP/f.onnx" "$stem with byte $pos set to $val"
  done
done
: >"$TMP/empty.onnx"
check "$TMP/empty.onnx" "an empty file"
[ "$errors" -gt $((runs / 2)) ] || fail "only $errors of $runs damaged files were rejected"
echo "PASS: $runs damaged files, $errors rejected, none crashed"
