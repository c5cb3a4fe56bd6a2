#!/usr/bin/env bash
# Every .wir under examples/ and tests/lit/ must print canonically: the output of
# wafer-opt, parsed and printed again, is byte-identical (with and without debug info).
# Files that are meant not to parse (`not %wafer-opt`) or carry `// XFAIL-PARSE` are skipped.
set -u
src=${WAFERC_SOURCE_DIR:?WAFERC_SOURCE_DIR must point at the source tree}
opt=$(command -v wafer-opt) || { echo "roundtrip: wafer-opt not on PATH" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0
checked=0
while IFS= read -r -d '' f; do
  if grep -q -e 'not %wafer-opt' -e 'XFAIL-PARSE' "$f"; then continue; fi
  for flags in "" "--print-debuginfo"; do
    # shellcheck disable=SC2086
    if ! "$opt" $flags "$f" > "$tmp/a.wir" 2> "$tmp/err"; then
      echo "FAIL: $f: wafer-opt $flags rejected it:" >&2
      cat "$tmp/err" >&2
      failed=$((failed + 1))
      continue
    fi
    # shellcheck disable=SC2086
    if ! "$opt" $flags "$tmp/a.wir" > "$tmp/b.wir" 2> "$tmp/err"; then
      echo "FAIL: $f: its printed form ($flags) does not parse back:" >&2
      cat "$tmp/err" >&2
      failed=$((failed + 1))
      continue
    fi
    if ! cmp -s "$tmp/a.wir" "$tmp/b.wir"; then
      echo "FAIL: $f: print(parse(print)) differs from print ($flags):" >&2
      diff -u "$tmp/a.wir" "$tmp/b.wir" | head -40 >&2
      failed=$((failed + 1))
    fi
  done
  checked=$((checked + 1))
done < <(find "$src/examples" "$src/tests/lit" -name '*.wir' -print0 2>/dev/null | sort -z)

echo "roundtrip: $checked file(s) checked, $failed failure(s)"
if [ "$checked" -eq 0 ]; then
  echo "roundtrip: no .wir files found under $src" >&2
  exit 1
fi
[ "$failed" -eq 0 ]
