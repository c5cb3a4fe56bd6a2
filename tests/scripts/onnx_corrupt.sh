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

# Every damaged file is written up front by one python3 run (rather than a head, or a cp, two
# printf and a dd, per file), one line per file in $TMP/cases: PATH, then what it is.
python3 - "$M" "$TMP" >"$TMP/cases" <<'PY' || fail "could not write the damaged files"
import os, sys
m, tmp = sys.argv[1], sys.argv[2]
k = 0
for stem in ("gpt2_shapes", "movement", "function", "constants", "control_flow"):
    data = open(os.path.join(m, stem + ".onnx"), "rb").read()
    size = len(data)
    step = size // 40 + 1
    for off in range(0, size, step):  # truncated at many offsets
        k += 1
        path = "%s/c%04d.onnx" % (tmp, k)
        open(path, "wb").write(data[:off])
        print("%s\t%s truncated to %d bytes" % (path, stem, off))
    seed = 7
    for i in range(40):  # a byte overwritten at deterministic positions
        seed = (seed * 1103515245 + 12345) % 2147483648
        pos = seed % size
        val = (seed // 65536) % 256
        k += 1
        path = "%s/c%04d.onnx" % (tmp, k)
        open(path, "wb").write(data[:pos] + bytes([val]) + data[pos + 1:])
        print("%s\t%s with byte %d set to %d" % (path, stem, pos, val))
PY
while IFS=$'\t' read -r f what; do
  check "$f" "$what"
done <"$TMP/cases"
: >"$TMP/empty.onnx"
check "$TMP/empty.onnx" "an empty file"
[ "$errors" -gt $((runs / 2)) ] || fail "only $errors of $runs damaged files were rejected"
echo "PASS: $runs damaged files, $errors rejected, none crashed"
