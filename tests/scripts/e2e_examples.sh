#!/usr/bin/env bash
# Every examples/ model: compile for test4x4, run on waferrun, compare with the reference
# interpreter, check the report, and check that a second run is byte-identical.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

for model in "$SRC"/examples/*.wir; do
  stem=$(basename "$model" .wir)
  x="$SRC/examples/${stem}_x.npy"
  [ -f "$x" ] || fail "$stem: missing input $x"
  d="$TMP/$stem"
  waferc "$model" -o "$d/plan" --target=test4x4 || fail "$stem: waferc exited $?"
  for run in 1 2; do
    waferrun "$d/plan" -q --input x="$x" --output-dir "$d/out$run" --report "$d/report$run.json" \
      || fail "$stem: waferrun exited $?"
  done
  waferc "$model" --interpret --input x="$x" --output-dir "$d/ref" || fail "$stem: interpreter failed"
  for ref in "$d"/ref/*.npy; do
    name=$(basename "$ref")
    [ -f "$d/out1/$name" ] || fail "$stem: waferrun wrote no $name"
    wafer-npycmp "$d/out1/$name" "$ref" --atol 1e-5 --rtol 1e-4 || fail "$stem: $name differs from the interpreter"
  done
  for f in "$d"/out1/*.npy; do
    cmp "$f" "$d/out2/$(basename "$f")" || fail "$stem: outputs differ between two runs"
  done
  cmp "$d/report1.json" "$d/report2.json" || fail "$stem: reports differ between two runs"
  python3 - "$d/report1.json" <<'PY' || fail "$stem: report check failed"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["cycles"]["total"] > 0, "cycles.total must be positive"
assert r["cycles"]["predicted"] > 0, "predicted cycles missing"
assert r["links"]["wavelet_hops"] > 0, "no wavelet crossed a link: communication is not real"
assert r["links"]["undelivered"] == 0, "wavelets were left undelivered"
assert len(r["ops"]) > 0 and all(o["cycles"] >= 0 for o in r["ops"])
assert 0 < r["pes"]["utilization"] <= 1
PY
  # The plan must not grow with the mesh: one class, one program file.
  [ "$(ls "$d/plan/programs" | wc -l)" -eq 1 ] || fail "$stem: expected one program class"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no examples found"
echo "e2e_examples: $n model(s) match the interpreter"
