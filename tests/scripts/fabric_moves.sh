#!/usr/bin/env bash
# The plan's fabric transposes and relayouts (issue 16 item 5: a prefill plan should have
# none): the manifest counts them at top level (`fabric_transposes`, `relayouts`) and marks
# each op that moves so (`fabric_move`); waferrun's report and its text summary repeat the
# counts. A matmul + softmax plan has none; a transpose of a split matrix has one, on a
# square mesh (the mirror) and on W x H (the two-phase relayout), and a reshape that moves
# a vector's split to the other axis (a vector re-split) is one too; MeshGEMM's K re-cut on
# W x H (computed operands, K = 10 on 3x2) is a relayout. Outputs are checked
# against the interpreter, so the counted plans are the working ones.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
NPY="python3 $NPY"

wir() { printf 'module @m {\n  func @main(%s) -> %s {\n%s\n  }\n}\n' "$2" "$3" "$4" >"$TMP/$1.wir"; }

# run NAME MESH TRANSPOSES RELAYOUTS "NAME=FILE ..."
# The manifest's and the report's counts are checked for every run by one python3 run at the
# end (check_all; the runs are queued in $TMP/checks). The interpreter's outputs do not depend
# on the mesh: computed once per NAME and inputs (REFS).
: >"$TMP/checks"
declare -A REFS
run() {
  local name=$1 mesh=$2 want_t=$3 want_r=$4 inputs=$5 d="$TMP/$1_$2" ins=() kv
  mkdir -p "$d"
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$TMP/$name.wir" -o "$d/plan" --target=test8x8 --mesh="$mesh" ${GEMM_ALGO:-} 2>"$d/err" ||
    fail "$name on $mesh: waferc exited $?: $(grep -m1 error "$d/err")"
  waferrun "$d/plan" "${ins[@]}" --output-dir "$d/out" --report "$d/report.json" >"$d/summary" 2>"$d/rerr" ||
    fail "$name on $mesh: waferrun exited $?: $(head -1 "$d/rerr")"
  local ref=${REFS["$name|$inputs"]:-}
  if [ -z "$ref" ]; then
    ref=$d/ref
    waferc "$TMP/$name.wir" --interpret "${ins[@]}" --output-dir "$ref" || fail "$name: interpreter failed"
    REFS["$name|$inputs"]=$ref
  fi
  local out
  for out in "$ref"/*.npy; do
    wafer-npycmp "$d/out/$(basename "$out")" "$out" --atol 1e-4 --rtol 1e-4 >"$d/cmp" 2>&1 ||
      fail "$name on $mesh: $(basename "$out") differs from the interpreter: $(head -1 "$d/cmp")"
  done
  printf '%s\t%s\t%s\t%s\t%s\n' "$d/plan/manifest.json" "$d/report.json" "$want_t" "$want_r" "$name on $mesh" >>"$TMP/checks"
  local line="moves:  $want_t fabric transpose"
  [ "$want_t" = 1 ] || line+=s
  line+=", $want_r relayout"
  [ "$want_r" = 1 ] || line+=s
  grep -qxF "$line" "$d/summary" || fail "$name on $mesh: the summary lacks '$line': $(grep moves: "$d/summary")"
  n=$((n + 1))
}

$NPY "$TMP/a.npy" 8,12 3 1.0 "$TMP/b.npy" 12,10 5 1.0 "$TMP/x.npy" 13,22 7 2.0 "$TMP/v.npy" 12 9 2.0 \
  "$TMP/ka.npy" 6,10 11 1.0 "$TMP/kb.npy" 10,6 13 1.0

wir mm_softmax '%a: f32[8, 12], %b: f32[12, 10]' 'f32[8, 10]' '    %c = matmul(%a, %b) : f32[8, 10]
    %0 = softmax(%c) {axis = -1} : f32[8, 10]
    return %0'
wir transpose '%x: f32[13, 22]' 'f32[22, 13]' '    %0 = transpose(%x) {perm = [1, 0]} : f32[22, 13]
    return %0'
wir resplit '%v: f32[12]' 'f32[12, 1]' '    %0 = reshape(%v) : f32[12, 1]
    return %0'

# MeshGEMM on 3x2 cuts K in lcm(3, 2) = 6 tiles; computed operands keep ceil(K/p) blocks
# of K = 10, so the lowering re-cuts K over the fabric (lower_relayout.c): one relayout.
wir kcut '%a: f32[6, 10], %b: f32[10, 6]' 'f32[6, 6]' '    %r = relu(%a) : f32[6, 10]
    %s = relu(%b) : f32[10, 6]
    %0 = matmul(%r, %s) : f32[6, 6]
    return %0'

for mesh in 1x1 2x2 3x2 4x4; do run mm_softmax "$mesh" 0 0 "a=$TMP/a.npy b=$TMP/b.npy"; done
run transpose 1x1 0 0 "x=$TMP/x.npy"
for mesh in 2x2 3x2 5x3 4x4; do run transpose "$mesh" 1 0 "x=$TMP/x.npy"; done
GEMM_ALGO=--gemm-algo=meshgemm run kcut 3x2 0 1 "a=$TMP/ka.npy b=$TMP/kb.npy"
for mesh in 2x2 3x2; do run resplit "$mesh" 1 0 "v=$TMP/v.npy"; done
python3 - "$TMP/checks" <<'PY' || exit 1
import json, sys
class Fail(Exception):
    pass
def check(mpath, rpath, want_t, want_r, what):
    m, r = json.load(open(mpath)), json.load(open(rpath))
    want_t, want_r = int(want_t), int(want_r)
    def die(msg):
        raise Fail("FAIL: %s: %s" % (what, msg))
    got = (m.get("fabric_transposes"), m.get("relayouts"))
    if got != (want_t, want_r):
        die("manifest counts %s transposes, %s relayouts; want %d, %d" % (got + (want_t, want_r)))
    per = [o.get("fabric_move", "") for o in m["ops"]]
    if sum("transpose" in f for f in per) != want_t or sum("relayout" in f for f in per) != want_r:
        die("ops' fabric_move %s disagree with the counts" % per)
    if (r.get("fabric_transposes"), r.get("relayouts")) != got:
        die("report counts %s, manifest %s" % ((r.get("fabric_transposes"), r.get("relayouts")), got))
    if [o.get("fabric_move", "") for o in r["ops"]] != per:
        die("the report's ops' fabric_move differ from the manifest's")
bad = 0
for line in open(sys.argv[1]):
    args = line.rstrip("\n").split("\t")
    try:
        check(*args)
    except Exception as e:
        print(str(e) if isinstance(e, Fail) else "FAIL: %s: %r" % (args[4], e), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
echo "ok   $n plans count their fabric transposes and relayouts"
