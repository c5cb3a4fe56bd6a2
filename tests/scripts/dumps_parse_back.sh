#!/usr/bin/env bash
# For every example model: compile it with --print-ir-after-all --dump-dir, then check that each
# numbered dump parses back through wafer-opt and prints identically (the IR's text form is the
# DSL: dumps after every pass are valid input).
set -euo pipefail
src="${WAFERC_SOURCE_DIR:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n_models=0
n_dumps=0
while IFS= read -r model; do
  name="$(basename "$model" .wir)"
  dir="$tmp/$name"
  mkdir -p "$dir"
  if ! waferc "$model" -o "$dir/plan" --print-ir-after-all --dump-dir="$dir/dumps" \
        2>"$dir/after-all.txt"; then
    echo "FAIL: waferc could not compile $model:"; cat "$dir/after-all.txt"; exit 1
  fi
  grep -q . "$dir/after-all.txt" || { echo "FAIL: --print-ir-after-all printed nothing for $model"; exit 1; }
  found=0
  for dump in "$dir"/dumps/*.wir; do
    [ -e "$dump" ] || continue
    found=1
    n_dumps=$((n_dumps + 1))
    if ! wafer-opt "$dump" > "$dir/reparsed.wir" 2>"$dir/err.txt"; then
      echo "FAIL: dump $dump of $model does not parse back:"; cat "$dir/err.txt"; exit 1
    fi
    if ! cmp -s "$dump" "$dir/reparsed.wir"; then
      echo "FAIL: dump $dump of $model prints differently after parsing:"
      diff "$dump" "$dir/reparsed.wir" | head -20; exit 1
    fi
  done
  [ "$found" = 1 ] || { echo "FAIL: no numbered dumps written for $model"; exit 1; }
  n_models=$((n_models + 1))
done < <(find "$src/examples" -name '*.wir' -not -path '*/plugins/*' | sort)
[ "$n_models" -gt 0 ] || { echo "FAIL: no example models found"; exit 1; }
echo "dumps_parse_back: $n_dumps dumps of $n_models models parse back unchanged"
