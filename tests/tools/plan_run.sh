# Sourced by e2e scripts (after `set -euo pipefail` and SRC=$WAFERC_SOURCE_DIR). Sets up what
# they share: WAFERC_TARGET_PATH, NODE (the ONNX node tests), NPY (tests/tools/npy.py), a
# scratch TMP removed on exit, fail (message, exit 1) and the pass counter n; and defines
# run NAME MODEL MESH "INPUTS" OUT REF [WANT] -- waferc flags...
# which compiles MODEL for MESH (target test8x8) into $TMP/NAME, runs it on waferrun with the
# NAME=PATH inputs, compares output OUT with REF (the interpreter's) and, if given, WANT (an
# ONNX test's output_0.pb as .npy), failing through `fail`; counts passes in n; and
# gen NAME ASHAPE BSHAPE CSHAPE, which writes $TMP/NAME.wir (one matmul), random inputs
# $TMP/NAME.a.npy and .b.npy (tests/tools/npy.py, $NPY) and the interpreter's result in
# $TMP/NAME.ref/; and
# check_node_output PLAN WANT REFDIR LABEL: PLAN/out holds exactly one .npy, equal to WANT
# (an ONNX test's output_0.pb) and to the interpreter's file of the same name in REFDIR;
# cycles_near / gemm_run_check / cycles_flush, npy_header / prompt_len / npy_shape: below.
NODE=${WAFERC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
export WAFERC_TARGET_PATH=$SRC/targets
NPY="$SRC/tests/tools/npy.py"
TMP=$(mktemp -d)
# On exit: a cycles_near check queued but never made (no cycles_flush after it) fails the
# script rather than passing unchecked.
plan_run_exit() {
  local rc=$?
  if [ "$rc" = 0 ] && [ -s "$TMP/cycles.queue" ]; then
    echo "FAIL: $(wc -l <"$TMP/cycles.queue") cycles_near check(s) queued but not made (no cycles_flush)" >&2
    rc=1
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap plan_run_exit EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
n=0

run() {
  local name=$1 model=$2 mesh=$3 inputs=$4 out=$5 ref=$6 want=$7
  shift 7
  local d="$TMP/$name" ins=() kv
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$model" -o "$d" --target=test8x8 --mesh="$mesh" -q "$@" 2>"$TMP/err" ||
    fail "$name: waferc exited $?: $(head -3 "$TMP/err")"
  waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" || fail "$name: waferrun exited $?"
  wafer-npycmp "$d/out/$out.npy" "$ref" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$name: the plan's output differs from the interpreter"
  if [ -n "$want" ]; then
    wafer-npycmp "$d/out/$out.npy" "$want" --atol 1e-5 --rtol 1e-4 >/dev/null ||
      fail "$name: the plan's output differs from the model's output_0.pb"
  fi
  n=$((n + 1))
}

gen() {
  python3 "$NPY" "$TMP/$1.a.npy" "$2" 1 1.0 "$TMP/$1.b.npy" "$3" 2 1.0
  cat >"$TMP/$1.wir" <<EOF
module @g {
  func @main(%a: f32[$2], %b: f32[$3]) -> f32[$4] {
    %c = matmul(%a, %b) : f32[$4]
    return %c
  }
}
EOF
  waferc "$TMP/$1.wir" --interpret --input a="$TMP/$1.a.npy" --input b="$TMP/$1.b.npy" \
    --output-dir "$TMP/$1.ref" -q || fail "$1: interpreter failed"
}

check_node_output() {
  local outs=("$1"/out/*.npy)
  [ "${#outs[@]}" -eq 1 ] || fail "$4: expected one output, got ${#outs[@]}"
  wafer-npycmp "${outs[0]}" "$2" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$4: the plan's output differs from output_0.pb"
  wafer-npycmp "${outs[0]}" "$3/$(basename "${outs[0]}")" --atol 1e-5 --rtol 1e-4 >/dev/null ||
    fail "$4: the plan's output differs from the interpreter"
}

# cycles_near REPORT LABEL: the dist.gemm's simulated cycles in a run report within $BOUND
# (a fraction) of its prediction; the worst error so far is kept in the file $worst. The
# check is queued (one python3 start-up for all of them): cycles_flush makes every queued
# check, and must be called before $worst is read and before the script ends.
cycles_near() {
  printf '%s\t%s\n' "$1" "$2" >>"$TMP/cycles.queue"
}

# cycles_flush: makes the queued cycles_near checks, in order; fails (after printing every
# case off the prediction) if one is beyond $BOUND or has no prediction.
cycles_flush() {
  [ -s "$TMP/cycles.queue" ] || return 0
  python3 - "$TMP/cycles.queue" "$BOUND" "$worst" <<'PY' || { : >"$TMP/cycles.queue"; fail "cycles off the prediction (above)"; }
import json, sys
bound, bad = float(sys.argv[2]), 0
for line in open(sys.argv[1]):
    report, label = line.rstrip("\n").split("\t", 1)
    try:
        op = [o for o in json.load(open(report))["ops"] if o["op"] == "dist.gemm"][0]
        sim, pred = op["cycles"], op["predicted_cycles"]
        if pred <= 0:
            print("%s: no prediction (%d)" % (label, pred))
            raise ValueError
        err = (sim - pred) / pred
        w = open(sys.argv[3]).read().split(maxsplit=1)
        if abs(err) > float(w[0]):
            open(sys.argv[3], "w").write("%.4f %s: predicted %d, simulated %d" % (abs(err), label, pred, sim))
        if abs(err) > bound:
            print("%s: predicted %d, simulated %d (%+.1f%%, bound %.0f%%)" % (label, pred, sim, 100 * err, 100 * bound))
            raise ValueError
    except Exception as e:
        if not isinstance(e, ValueError) or str(e):
            print("%s: %r" % (label, e))
        print("FAIL: %s: cycles off the prediction" % label, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
  : >"$TMP/cycles.queue"
}

# gemm_run_check DIR A.npy B.npy REF_DIR LABEL: runs the plan in DIR on inputs a and b, checks
# its c.npy against REF_DIR/c.npy (the interpreter's) and queues its cycles' check with
# cycles_near (made by cycles_flush).
gemm_run_check() {
  waferrun "$1" -q --input a="$2" --input b="$3" --output-dir "$1/out" --report "$1/r.json" ||
    fail "$5: waferrun exited $?"
  wafer-npycmp "$1/out/c.npy" "$4/c.npy" --atol 1e-4 --rtol 1e-4 >/dev/null || fail "$5: C differs from the interpreter"
  cycles_near "$1/r.json" "$5"
}

# npy_header FILE: a .npy file's header dict; prompt_len FILE: L of a [1, L] prompt (ids).
npy_header() { head -c 256 "$1" | tr -d '\000' | head -1 | grep -a -o "{.*}"; }
prompt_len() { npy_header "$1" | sed -E 's/.*\(1, ([0-9]+)\).*/\1/'; }
# npy_shape FILE: the shape in a .npy header as D0xD1x... (for --input-shape)
npy_shape() {
  local h s t out=
  h=$(head -c 256 "$1" | tr -d '\0')
  [[ "$h" == *"("*")"* ]] || return 1
  s=${h#*\(} s=${s%%\)*}
  local IFS=,
  for t in $s; do
    t=${t//[[:space:]]/}
    [ -n "$t" ] && out=${out:+${out}x}$t
  done
  printf '%s\n' "$out"
}

# refused_edit NAME PATTERN EDIT GOOD PRELUDE -- WAFERRUN_ARGS...: copies the plan GOOD to
# $TMP/bad-NAME, runs the python EDIT on it (m: its manifest, written back after; text(rel, f)
# rewrites the plan's file rel through f; PRELUDE: python run before EDIT, e.g. names it uses),
# then waferrun --allow-modified-plan with the arguments, which must exit 1 with PATTERN on
# stderr (grep); counts a pass in n.
refused_edit() {
  local name=$1 pattern=$2 edit=$3 good=$4 prelude=$5 d="$TMP/bad-$1" rc=0
  shift 6
  rm -rf "$d"; cp -r "$good" "$d"
  python3 - "$d" <<PY || fail "$name: the edit failed"
import json, os, re, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
def text(rel, f):
    p = os.path.join(d, rel)
    t = f(open(p).read())
    open(p, "w").write(t)
$prelude
$edit
json.dump(m, open(os.path.join(d, "manifest.json"), "w"), indent=1)
PY
  waferrun "$d" --allow-modified-plan -q "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
  [ "$rc" -eq 1 ] || { cat "$TMP/$name.err" >&2; fail "$name: exit $rc, expected 1"; }
  grep -q -- "$pattern" "$TMP/$name.err" || { cat "$TMP/$name.err" >&2; fail "$name: message lacks '$pattern'"; }
  n=$((n + 1))
}
