#!/usr/bin/env bash
# The same plan and inputs give byte-identical outputs and reports, run after run, and the
# timing mode reports the functional mode's cycles.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n
E=$SRC/examples
waferc "$E/mlp_softmax.wir" -o "$TMP/plan" --target=test4x4 || fail "compile failed"
for i in 1 2; do
  waferrun "$TMP/plan" --input x="$E/mlp_softmax_x.npy" --report "$TMP/r$i.json" \
    --output-dir "$TMP/o$i" -q || fail "run $i failed"
done
cmp "$TMP/r1.json" "$TMP/r2.json" || fail "reports differ between two runs"
for f in "$TMP"/o1/*.npy; do cmp "$f" "$TMP/o2/$(basename "$f")" || fail "output $(basename "$f") differs"; done
waferrun "$TMP/plan" --mode=timing --report "$TMP/t.json" -q || fail "timing run failed"
total() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cycles']['total'])" "$1"; }
[ "$(total "$TMP/r1.json")" = "$(total "$TMP/t.json")" ] || fail "timing mode cycles differ"
# A plan with switch positions, multicast and backpressure (the 2D allreduce), twice.
G=$SRC/tests/fidelity/collectives.py
python3 "$G" gen allreduce2d 6 5 40 2 "$TMP/ar" && python3 "$G" input 6 5 40 "$TMP/a.npy"
for i in 1 2; do
  waferrun "$TMP/ar" --input a="$TMP/a.npy" --report "$TMP/ar$i.json" --output-dir "$TMP/ao$i" -q \
    || fail "allreduce run $i failed"
done
cmp "$TMP/ar1.json" "$TMP/ar2.json" || fail "allreduce reports differ"
cmp "$TMP/ao1/b.npy" "$TMP/ao2/b.npy" || fail "allreduce outputs differ"
echo "e2e_determinism: identical reports and outputs"
