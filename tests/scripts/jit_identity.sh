#!/usr/bin/env bash
# The compute-kernel JIT (docs/report-format.md, "JIT"): every examples/ model and
# tests/jit/all_ops.wir (every JIT-covered PE instruction) run with the JIT and with --no-jit
# must give byte-identical outputs and reports. The plan must carry readable kernels listed in
# the manifest; a corrupt kernel file must produce a warning and the same results.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

# all_ops: its weights are generated here (no numpy needed).
mkdir -p "$TMP/all_ops"
cp "$SRC/tests/jit/all_ops.wir" "$TMP/all_ops/"
python3 "$SRC/tests/tools/npy.py" "$TMP/all_ops/all_ops_w.npy" 16,16 7 0.3
python3 "$SRC/tests/tools/npy.py" "$TMP/all_ops/all_ops_b.npy" 16 8 0.5
python3 "$SRC/tests/tools/npy.py" "$TMP/all_ops/all_ops_x.npy" 16,16 9 1.0

n=0
for model in "$SRC"/examples/*.wir "$TMP/all_ops/all_ops.wir"; do
  stem=$(basename "$model" .wir)
  x="$(dirname "$model")/${stem}_x.npy"
  d="$TMP/run_$stem"
  waferc "$model" -o "$d/plan" --target=test4x4 || fail "$stem: waferc exited $?"
  [ -s "$d/plan/kernels/main.ll" ] || fail "$stem: the plan has no kernels/main.ll"
  grep -q '^define void @wf_main_' "$d/plan/kernels/main.ll" || fail "$stem: no kernel functions in main.ll"
  grep -q '"file":.*"kernels/main.ll"' "$d/plan/manifest.json" || fail "$stem: manifest does not list the kernels"
  waferrun "$d/plan" --input x="$x" --output-dir "$d/jit" --report "$d/jit.json" > "$d/jit.txt" 2> "$d/jit.err" \
    || fail "$stem: waferrun (JIT) exited $?"
  [ ! -s "$d/jit.err" ] || fail "$stem: waferrun (JIT) printed: $(cat "$d/jit.err")"
  grep -q 'JIT' "$d/jit.txt" || fail "$stem: the summary does not say the kernels were JIT-compiled"
  waferrun "$d/plan" -q --no-jit --input x="$x" --output-dir "$d/interp" --report "$d/interp.json" \
    || fail "$stem: waferrun --no-jit exited $?"
  for f in "$d"/interp/*.npy; do
    cmp "$f" "$d/jit/$(basename "$f")" || fail "$stem: $(basename "$f") differs between JIT and --no-jit"
  done
  cmp "$d/jit.json" "$d/interp.json" || fail "$stem: reports differ between JIT and --no-jit"
  n=$((n + 1))
done

# all_ops computes what the reference interpreter computes (the kernels are right, not only
# consistent with the simulator's own loops).
d="$TMP/run_all_ops"
waferc "$TMP/all_ops/all_ops.wir" --interpret --input x="$TMP/all_ops/all_ops_x.npy" --output-dir "$d/ref" \
  || fail "all_ops: reference interpreter failed"
for ref in "$d"/ref/*.npy; do
  wafer-npycmp "$d/jit/$(basename "$ref")" "$ref" --atol 1e-5 --rtol 1e-4 \
    || fail "all_ops: $(basename "$ref") differs from the reference interpreter"
done

# A kernel file that does not compile is the plan's fault: the runtime compiles only the
# kernels it regenerates from the programs (ir/pe/kernel_gen_llvm.c), so the file is refused
# (exit 1, naming it) unless --allow-modified-plan, which warns and runs the regenerated
# kernels with the same bits; --no-jit interprets the plan, with the same bits too.
echo 'define void @broken( {' > "$d/plan/kernels/main.ll"
rc=0
waferrun "$d/plan" -q --input x="$TMP/all_ops/all_ops_x.npy" --output-dir "$d/refused" 2> "$d/refused.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "kernels/main.ll" "$d/refused.err" || fail "broken kernel: exit $rc: $(cat "$d/refused.err")"
waferrun "$d/plan" -q --allow-modified-plan --input x="$TMP/all_ops/all_ops_x.npy" --output-dir "$d/regen" \
  2> "$d/regen.err" || fail "broken kernel, --allow-modified-plan: exit $?: $(cat "$d/regen.err")"
grep -q "running the regenerated kernels" "$d/regen.err" || fail "broken kernel: no warning: $(cat "$d/regen.err")"
waferrun "$d/plan" -q --allow-modified-plan --no-jit --input x="$TMP/all_ops/all_ops_x.npy" \
  --output-dir "$d/fallback" 2>/dev/null || fail "--no-jit run of the plan with a broken kernel exited $?"
for f in "$d"/interp/*.npy; do
  cmp "$f" "$d/fallback/$(basename "$f")" || fail "--no-jit output $(basename "$f") differs"
  cmp "$f" "$d/regen/$(basename "$f")" || fail "regenerated kernels' output $(basename "$f") differs"
done
# libLLVM is mapped only by what makes or compiles kernels (ir/pe/llvm_lib.h): the dynamic
# loader's trace (LD_DEBUG=libs) names every library a run loads.
llvm_loads() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | grep -c 'calling init: .*libLLVM' || true; }
[ "$(llvm_loads wafer-opt --version)" = 0 ] || fail "wafer-opt --version loaded libLLVM"
[ "$(llvm_loads waferc "$TMP/all_ops/all_ops.wir" --emit=ir -o "$d/e.wir")" = 0 ] || fail "waferc --emit=ir loaded libLLVM"
[ "$(llvm_loads waferrun "$d/plan" --allow-modified-plan --mode=timing --input x=random:1)" = 0 ] ||
  fail "waferrun --mode=timing loaded libLLVM"
[ "$(llvm_loads waferrun "$d/plan" --allow-modified-plan --no-jit --input x="$TMP/all_ops/all_ops_x.npy")" = 0 ] ||
  fail "waferrun --no-jit loaded libLLVM"
[ "$(llvm_loads waferrun "$d/plan" --allow-modified-plan --input x="$TMP/all_ops/all_ops_x.npy")" = 1 ] ||
  fail "waferrun (JIT) did not load libLLVM once"
[ "$(llvm_loads waferc "$TMP/all_ops/all_ops.wir" -o "$d/p2" --target=test4x4)" = 1 ] || fail "waferc -o did not load libLLVM once"
echo "jit_identity: $n plan(s) bit-identical with and without the JIT"
