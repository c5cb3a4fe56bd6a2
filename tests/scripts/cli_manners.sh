#!/usr/bin/env bash
# Every tool in build/bin answers --help and --version with exit 0 and some text, and rejects
# an unknown option with a non-zero exit (the usage code, 2, where the tool has options).
set -euo pipefail
bin="${WAFERC_BINARY_DIR:?}/bin"
n=0
for tool in "$bin"/*; do
  [ -x "$tool" ] || continue
  name="$(basename "$tool")"
  out="$("$tool" --help 2>&1)" || { echo "FAIL: $name --help exits non-zero"; exit 1; }
  [ -n "$out" ] || { echo "FAIL: $name --help prints nothing"; exit 1; }
  ver="$("$tool" --version 2>&1)" || { echo "FAIL: $name --version exits non-zero"; exit 1; }
  echo "$ver" | grep -q "[0-9]\+\.[0-9]\+\.[0-9]\+" || { echo "FAIL: $name --version prints no version: $ver"; exit 1; }
  if "$tool" --no-such-option-xyz > /dev/null 2>&1; then echo "FAIL: $name accepts an unknown option"; exit 1; fi
  n=$((n + 1))
done
[ "$n" -ge 5 ] || { echo "FAIL: only $n tools found in $bin"; exit 1; }
echo "cli_manners: $n tools answer --help and --version and reject unknown options"
