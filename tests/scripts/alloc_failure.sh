#!/usr/bin/env bash
# Allocation-failure injection (issue 22, "Failure injection"), in the style of Lua's test
# allocator: tests/tools/failalloc.c, LD_PRELOADed, fails the n-th allocation waferc's own code
# makes. For n over every allocation of a small compile (a .wir matmul, a two-layer MLP from
# ONNX) and of small simulations (with and without the JIT), and over every 15th of an exported
# LLaMA block's compile (4x4), the tool must
#  - exit 7 with "out of host memory" and the place, or succeed (a tolerated failure), never
#    crash, abort or report another error (a "does not fit" or "bad input" that is really an
#    allocation failure is a failure here);
#  - on success, give the same plan (its manifest) or the same output as a run without failures;
#  - leave no plan where it failed (no manifest) and no stage directory beside it.
# The other tools, each swept by sweep_tool below: wafer-opt (canonicalize,cse,dce on a lit
# input, with --statistics and -o FILE; the raise passes on the lit attention chains),
# wafer-bench gemm (auto algorithm: every algorithm's cost, partition and lower-gemm, then
# the plan's compile and timing simulation; 2x2 mesh, 8x8x8) and wafer-moe mapping (2x1
# dies, TP 1, on SimGrid). A sweep of at most 60 allocations fails every one; a longer one
# fails every STEP-th (per sweep: 8 for wafer-opt, 16 for wafer-bench, 32 for wafer-moe) and,
# so that no call site goes untried, the first allocation of every call site (return
# address; WF_FAIL_ALLOC_SITES). Each run must exit 0 with the same standard output and
# output file as a run without failures, or exit 7 with "TOOL: error: out of host memory",
# nothing on standard output and no output file; either way nothing else is left in its
# directory or its TMPDIR (no half-written file beside -o, no temporary plan or platform
# directory). 250 runs, about 20 s (0.08 s a run: the tools no longer load libLLVM unless they make kernels).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
BIN=${WAFERC_BINARY_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
SHIM=$BIN/tests/failalloc.so
[ -f "$SHIM" ] || fail "no $SHIM (built by tests/CMakeLists.txt)"
cd "$TMP"
cat >m.wir <<'W'
module @m {
  func @main(%x: f32[6, 8], %w: f32[8, 5]) -> (f32[6, 5]) {
    %y = matmul(%x, %w) : f32[6, 5]
    %z = relu(%y) : f32[6, 5]
    return %z
  }
}
W
python3 "$SRC/tests/tools/npy.py" x.npy 6,8 1 1.0
python3 "$SRC/tests/tools/npy.py" w.npy 8,5 2 1.0

count() { WF_FAIL_ALLOC_REPORT=1 LD_PRELOAD=$SHIM "$@" 2>&1 >/dev/null | grep -o 'failalloc: [0-9]*' | grep -o '[0-9]*$'; }
runs=0

# sweep_compile LABEL STEP MODEL MESH: every STEP-th allocation of `waferc MODEL -o q` fails in turn
sweep_compile() {
  local label=$1 step=$2 model=$3 mesh=$4 total k rc
  waferc "$model" -o q --target=test8x8 --mesh="$mesh" -q 2>/dev/null && mv q ref_$label || fail "$label: waferc failed without injection"
  total=$(count waferc "$model" -o probe --target=test8x8 --mesh="$mesh" -q)
  [ "${total:-0}" -gt 10 ] || fail "$label: the injector counted ${total:-no} allocations"
  for k in $(seq 1 "$step" "$((total + 1))"); do
    rm -rf q
    rc=0
    WF_FAIL_ALLOC_AT=$k LD_PRELOAD=$SHIM waferc "$model" -o q --target=test8x8 --mesh="$mesh" -q 2>err >/dev/null || rc=$?
    case $rc in
      0) diff <(grep -v '"flags"\|"manifest.json"' q/manifest.json) <(grep -v '"flags"\|"manifest.json"' ref_$label/manifest.json) >/dev/null ||
           fail "$label: allocation $k failed, waferc exited 0 with another plan" ;;
      7) grep -q "out of host memory" err || fail "$label: allocation $k: exit 7 without the message: $(head -2 err)"
         [ ! -e q/manifest.json ] || fail "$label: allocation $k: exit 7 left a plan" ;;
      *) fail "$label: allocation $k of $total failed and waferc exited $rc: $(head -3 err)" ;;
    esac
    ls -a | grep -q '^\.q\.waferc-' && fail "$label: allocation $k left a stage directory"
    runs=$((runs + 1))
  done
  n=$((n + 1))
}
sweep_compile wir 1 m.wir 2x2
sweep_compile mlp2 1 "$SRC/examples/models/mlp2.onnx" 2x2
sweep_compile llama 15 "$SRC/examples/models/llama_block.onnx" 4x4

# the simulation of the .wir plan, interpreted and JIT-compiled
waferrun ref_wir -q --input x=x.npy --input w=w.npy --output-dir want >/dev/null
for jit in --no-jit --jit; do
  flags=()
  [ $jit = --no-jit ] && flags=(--no-jit)
  total=$(count waferrun ref_wir -q "${flags[@]}" --input x=x.npy --input w=w.npy --output-dir probe.out)
  [ "${total:-0}" -gt 10 ] || fail "waferrun $jit: the injector counted ${total:-no} allocations"
  for k in $(seq 1 "$((total + 1))"); do
    rm -rf o
    rc=0
    WF_FAIL_ALLOC_AT=$k LD_PRELOAD=$SHIM waferrun ref_wir -q "${flags[@]}" --input x=x.npy --input w=w.npy \
      --output-dir o 2>err >/dev/null || rc=$?
    case $rc in
      0) wafer-npycmp o/z.npy want/z.npy --atol 0 --rtol 0 >/dev/null ||
           fail "waferrun $jit: allocation $k failed, exit 0 with another output" ;;
      7) grep -q "out of host memory" err || fail "waferrun $jit: allocation $k: exit 7 without the message" ;;
      *) fail "waferrun $jit: allocation $k of $total failed and waferrun exited $rc: $(head -3 err)" ;;
    esac
    runs=$((runs + 1))
  done
  n=$((n + 1))
done

# probe CMD...: the number of allocations CMD makes, then the number of each call site's first.
probe() {
  WF_FAIL_ALLOC_REPORT=1 WF_FAIL_ALLOC_SITES=1 LD_PRELOAD=$SHIM "$@" 2>&1 >/dev/null |
    sed -n 's/^failalloc: \([0-9]*\) allocations$/\1/p; s/^failalloc: sites://p' | tr '\n' ' '
}

# sweep_tool LABEL STEP OUT -- CMD...: CMD runs in $TMP/run (TMPDIR $TMP/run.tmp), once without
# failures for the reference, then with one allocation failing at a time: all of them when
# there are at most 200, else every STEP-th and each call site's first. OUT: the file CMD
# writes in run/ (- for none), compared on success and absent on exit 7.
sweep_tool() {
  local label=$1 step=$2 out=$3 tool total k rc left tried=0
  shift 4
  tool=$(basename "$1")
  rm -rf run run.tmp && mkdir run run.tmp
  (cd run && TMPDIR=$TMP/run.tmp "$@" >../ref_$label.out 2>../run.stderr) || fail "$label: $tool failed without injection: $(head -3 run.stderr)"
  if [ "$out" != - ]; then mv "run/$out" "ref_$label.file" || fail "$label: $tool wrote no $out"; fi
  local p=($(cd run && TMPDIR=$TMP/run.tmp probe "$@"))
  total=${p[0]:-0}
  [ "$total" -gt 10 ] && [ "${#p[@]}" -gt 2 ] || fail "$label: the injector counted ${total} allocations, ${#p[@]} sites"
  [ "$total" -le 60 ] && step=1
  for k in $( { seq 1 "$step" "$((total + 1))"; printf '%s\n' "${p[@]:1}"; } | sort -nu); do
    rm -rf run run.tmp && mkdir run run.tmp
    rc=0
    (cd run && WF_FAIL_ALLOC_AT=$k LD_PRELOAD=$SHIM TMPDIR=$TMP/run.tmp "$@" >../run.stdout 2>../run.stderr) || rc=$?
    case $rc in
      0) cmp -s run.stdout "ref_$label.out" || fail "$label: allocation $k failed, $tool exited 0 with another output"
         if [ "$out" != - ]; then
           cmp -s "run/$out" "ref_$label.file" || fail "$label: allocation $k failed, $tool exited 0 with another $out"
           rm "run/$out"
         fi ;;
      7) grep -q "^$tool: error: out of host memory" run.stderr ||
           fail "$label: allocation $k: exit 7 without the message: $(head -2 run.stderr)"
         [ ! -s run.stdout ] || fail "$label: allocation $k: exit 7 after printing $(wc -c <run.stdout) bytes"
         [ "$out" = - ] || [ ! -e "run/$out" ] || fail "$label: allocation $k: exit 7 left $out" ;;
      *) fail "$label: allocation $k of $total failed and $tool exited $rc: $(head -3 run.stderr)" ;;
    esac
    left=$(ls -A run run.tmp | grep -v '^run.*:$' | grep -v '^$' || true)
    [ -z "$left" ] || fail "$label: allocation $k (exit $rc) left $(echo $left)"
    runs=$((runs + 1)) tried=$((tried + 1))
  done
  echo "$label: $total allocations from $((${#p[@]} - 1)) call sites, $tried runs"
  n=$((n + 1))
}
sweep_tool opt 8 out.wir -- wafer-opt "$SRC/tests/lit/passes/canonicalize.wir" --pass-pipeline=canonicalize,cse,dce \
  --statistics -o out.wir
sweep_tool opt-raise 8 out.wir -- wafer-opt "$SRC/tests/lit/raise/attention.wir" --pass-pipeline=raise -o out.wir
sweep_tool bench-gemm 16 - -- wafer-bench gemm --algo=auto --mesh=2x2 --m=8 --k=8 --n=8 --target=test8x8
sweep_tool moe-mapping 32 - -- wafer-moe mapping --dies=2x1 --tp=1 --model=qwen3 --tokens=16
echo "alloc_failure: $n sweeps, $runs runs with one failed allocation each: clean"
