#!/usr/bin/env bash
# slice, concat and split on the mesh (backend/ops/lower_slice.c, docs/partition.md "Slice,
# concat and split"): along the last axis (split along x), the second-to-last (split along y)
# and a leading axis (whole on every PE), with sizes the meshes do not divide, compiled and
# run with waferrun on 1x1, 2x2, 3x2, 4x4 and 5x3, each output compared with
# `waferc --interpret` (1e-4). The cases whose cuts fall on block edges (a leading axis, a
# prefix whose blocks do not change, a concat appending one index) must be local copies with
# no fabric traffic: the manifest's lowering says `local-copy` and waferrun's report counts
# no wavelet; the others must say `relayout-*`, and the manifest's top-level `relayouts`
# counts them. A slice feeding a matmul over its padded K checks that the result's padding
# along the cut axis is zero (partition_pad.c accepts it only because the lowering zeroes it).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
NPY="python3 $NPY"
MESHES="1x1 2x2 3x2 4x4 5x3"

wir() { printf 'module @m {\n  func @main(%s) -> %s {\n%s\n  }\n}\n' "$2" "$3" "$4" >"$TMP/$1.wir"; }

# run NAME MESH KIND "NAME=FILE ..." [nowl]; KIND: local (every slice/concat/split a local
# copy), relayout (at least one moves over the fabric) or any. Whatever the kind, a plan
# whose ops are all local must move no wavelet and count no relayout, and one with a relayout
# must move wavelets (nowl: the plan has other ops that may use the fabric; skip the former).
# The interpreter's outputs do not depend on the mesh: computed once per NAME and inputs.
# The manifest and report checks of every run are queued in $TMP/checks and made by one
# python3 run at the end (check_all).
: >"$TMP/checks"
run() {
  local name=$1 mesh=$2 kind=$3 inputs=$4 wl=${5:-} d="$TMP/$1_$2" ins=() kv
  mkdir -p "$d"
  for kv in $inputs; do ins+=(--input "$kv"); done
  waferc "$TMP/$name.wir" -o "$d/plan" --target=test8x8 --mesh="$mesh" 2>"$d/err" ||
    fail "$name on $mesh: waferc exited $?: $(grep -m1 error "$d/err")"
  waferrun "$d/plan" -q "${ins[@]}" --output-dir "$d/out" --report "$d/report.json" 2>"$d/rerr" ||
    fail "$name on $mesh: waferrun exited $?: $(head -1 "$d/rerr")"
  local ref="$TMP/ref_$name"
  if [ "$(cat "$ref.inputs" 2>/dev/null)" != "$inputs" ]; then
    rm -rf "$ref"
    waferc "$TMP/$name.wir" --interpret "${ins[@]}" --output-dir "$ref" || fail "$name: interpreter failed"
    printf '%s' "$inputs" >"$ref.inputs"
  fi
  local out
  for out in "$ref"/*.npy; do
    [ -f "$d/out/$(basename "$out")" ] || fail "$name on $mesh: no output $(basename "$out")"
    wafer-npycmp "$d/out/$(basename "$out")" "$out" --atol 1e-4 --rtol 1e-4 >"$d/cmp" 2>&1 ||
      fail "$name on $mesh: $(basename "$out") differs from the interpreter: $(head -1 "$d/cmp")"
  done
  printf '%s\t%s\t%s\t%s\t%s\n' "$d/plan/manifest.json" "$d/report.json" "$kind" "$name on $mesh" "$wl" >>"$TMP/checks"
  n=$((n + 1))
}

# check_all: every queued run's manifest and report (one line each in $TMP/checks).
check_all() {
  python3 - "$TMP/checks" <<'PY' || exit 1
import json, sys
class Fail(Exception):
    pass
bad = 0
def check(mpath, rpath, kind, what, nowl):
    def die(msg):
        raise Fail("FAIL: %s: %s" % (what, msg))
    m, r = json.load(open(mpath)), json.load(open(rpath))
    lw = [o["lowering"] for o in m["ops"] if o["op"] in ("slice", "concat", "split")]
    if not lw:
        die("no slice/concat/split op in the manifest")
    moved = [o for o in m["ops"] if o.get("fabric_move") == "relayout"]
    if m.get("relayouts") != len(moved):
        die("manifest relayouts = %s but %d ops say fabric_move relayout" % (m.get("relayouts"), len(moved)))
    if r.get("relayouts") != m["relayouts"] or r.get("fabric_transposes") != m.get("fabric_transposes"):
        die("the report's counts differ from the manifest's")
    local = all(l == "local-copy" for l in lw)
    wl = r["links"]["wavelet_hops"] + r["links"]["ramp_up"]
    if local and (moved or m["relayouts"] != 0):
        die("local copies only, yet %d relayouts" % m["relayouts"])
    if local and not nowl and wl != 0:
        die("local copies only, yet %d wavelets crossed the fabric" % wl)
    if not local and (m["relayouts"] < 1 or wl == 0):
        die("lowerings %s but %d relayouts and %d wavelets" % (lw, m["relayouts"], wl))
    if kind == "local" and not local:
        die("a cut on block edges must be local, got lowerings %s" % lw)
    elif kind == "relayout":
        if not any(l.startswith("relayout-") for l in lw) or m["relayouts"] < 1:
            die("expected a relayout over the fabric, got lowerings %s, relayouts %s" % (lw, m["relayouts"]))
for line in open(sys.argv[1]):
    args = line.rstrip("\n").split("\t")
    try:
        check(*args)
    except Exception as e:
        msg = str(e) if isinstance(e, Fail) else "FAIL: %s: %r" % (args[3], e)
        print(msg, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
}

$NPY \
  "$TMP/a.npy" 2,7,11 3 2.0 \
  "$TMP/b.npy" 2,7,5 5 2.0 \
  "$TMP/c1.npy" 2,7,1 7 2.0 \
  "$TMP/t.npy" 2,11,7 9 2.0 \
  "$TMP/u.npy" 2,3,7 13 2.0 \
  "$TMP/r1.npy" 2,1,7 15 2.0 \
  "$TMP/l.npy" 5,7,11 17 2.0 \
  "$TMP/l2.npy" 2,7,11 19 2.0 \
  "$TMP/p.npy" 6,60 21 2.0 \
  "$TMP/m.npy" 6,13 23 2.0 \
  "$TMP/w.npy" 9,5 25 1.0
# [B, R, C]: C along x, R along y (a, b, c1); t, u, r1: the y cases; l, l2: a leading axis

# ---- the last axis (split along x) ----
wir slice_x '%a: f32[2, 7, 11]' 'f32[2, 7, 4]' '    %0 = slice(%a) {starts = [5], ends = [9], axes = [-1], steps = [1]} : f32[2, 7, 4]
    return %0'
wir slice_x_mid '%a: f32[2, 7, 11]' 'f32[2, 7, 7]' '    %0 = slice(%a) {starts = [2], ends = [9], axes = [-1], steps = [1]} : f32[2, 7, 7]
    return %0'
wir slice_x_step '%a: f32[2, 7, 11]' 'f32[2, 7, 4]' '    %0 = slice(%a) {starts = [1], ends = [9], axes = [2], steps = [2]} : f32[2, 7, 4]
    return %0'
wir concat_x '%a: f32[2, 7, 11], %b: f32[2, 7, 5]' 'f32[2, 7, 16]' '    %0 = concat(%a, %b) {axis = -1} : f32[2, 7, 16]
    return %0'
wir split_x '%a: f32[2, 7, 11]' '(f32[2, 7, 4], f32[2, 7, 5], f32[2, 7, 2])' '    %0, %1, %2 = split(%a) {axis = 2, sizes = [4, 5, 2]} : f32[2, 7, 4], f32[2, 7, 5], f32[2, 7, 2]
    return %0, %1, %2'
# on block edges: appending one column keeps the blocks (11 and 12 cut alike on 2..5 PEs), as
# does dropping the last of 60 columns
wir edge_concat_x '%a: f32[2, 7, 11], %c: f32[2, 7, 1]' 'f32[2, 7, 12]' '    %0 = concat(%a, %c) {axis = 2} : f32[2, 7, 12]
    return %0'
wir edge_slice_x '%p: f32[6, 60]' 'f32[6, 59]' '    %0 = slice(%p) {starts = [0], ends = [59], axes = [1], steps = [1]} : f32[6, 59]
    return %0'

# ---- the second-to-last axis (split along y) ----
wir slice_y '%t: f32[2, 11, 7]' 'f32[2, 4, 7]' '    %0 = slice(%t) {starts = [5], ends = [9], axes = [1], steps = [1]} : f32[2, 4, 7]
    return %0'
wir slice_y_step '%t: f32[2, 11, 7]' 'f32[2, 3, 7]' '    %0 = slice(%t) {starts = [1], ends = [10], axes = [1], steps = [3]} : f32[2, 3, 7]
    return %0'
wir concat_y '%t: f32[2, 11, 7], %u: f32[2, 3, 7]' 'f32[2, 14, 7]' '    %0 = concat(%t, %u) {axis = -2} : f32[2, 14, 7]
    return %0'
wir split_y '%t: f32[2, 11, 7]' '(f32[2, 3, 7], f32[2, 8, 7])' '    %0, %1 = split(%t) {axis = 1, sizes = [3, 8]} : f32[2, 3, 7], f32[2, 8, 7]
    return %0, %1'
wir edge_concat_y '%t: f32[2, 11, 7], %r: f32[2, 1, 7]' 'f32[2, 12, 7]' '    %0 = concat(%t, %r) {axis = 1} : f32[2, 12, 7]
    return %0'

# ---- a leading axis (whole on every PE): always local ----
wir slice_lead '%l: f32[5, 7, 11]' 'f32[2, 7, 11]' '    %0 = slice(%l) {starts = [1], ends = [5], axes = [0], steps = [2]} : f32[2, 7, 11]
    return %0'
wir concat_lead '%l: f32[5, 7, 11], %k: f32[2, 7, 11]' 'f32[7, 7, 11]' '    %0 = concat(%l, %k) {axis = 0} : f32[7, 7, 11]
    return %0'
wir split_lead '%l: f32[5, 7, 11]' '(f32[2, 7, 11], f32[3, 7, 11])' '    %0, %1 = split(%l) {axis = 0, sizes = [2, 3]} : f32[2, 7, 11], f32[3, 7, 11]
    return %0, %1'

# ---- one column (the result whole on every PE), two axes at once (steps 2 and 3), and a
# slice whose padded K feeds a matmul ----
wir slice_xy '%a: f32[2, 7, 11]' 'f32[2, 4, 5]' '    %0 = slice(%a) {starts = [1, 3], ends = [5, 8], axes = [1, 2], steps = [1, 1]} : f32[2, 4, 5]
    return %0'
wir slice_col '%a: f32[2, 7, 11]' 'f32[2, 7, 1]' '    %0 = slice(%a) {starts = [5], ends = [6], axes = [2], steps = [1]} : f32[2, 7, 1]
    return %0'
wir slice_xy_step '%m: f32[6, 13]' 'f32[3, 5]' '    %0 = slice(%m) {starts = [1, 0], ends = [6, 13], axes = [0, 1], steps = [2, 3]} : f32[3, 5]
    return %0'
wir slice_matmul '%m: f32[6, 13], %w: f32[9, 5]' 'f32[6, 5]' '    %e = exp(%m) : f32[6, 13]
    %s = slice(%e) {starts = [4], ends = [13], axes = [1], steps = [1]} : f32[6, 9]
    %0 = matmul(%s, %w) : f32[6, 5]
    return %0'

for mesh in $MESHES; do
  # 1x1 holds everything on one PE: nothing moves
  rel=relayout
  [ "$mesh" = 1x1 ] && rel=local
  run slice_x "$mesh" "$rel" "a=$TMP/a.npy"
  run slice_x_mid "$mesh" any "a=$TMP/a.npy"
  run slice_x_step "$mesh" any "a=$TMP/a.npy"
  run concat_x "$mesh" "$rel" "a=$TMP/a.npy b=$TMP/b.npy"
  run split_x "$mesh" "$rel" "a=$TMP/a.npy"
  run edge_concat_x "$mesh" local "a=$TMP/a.npy c=$TMP/c1.npy"
  run edge_slice_x "$mesh" local "p=$TMP/p.npy"
  # a 1-high mesh keeps the y axis whole
  rely=$rel
  [ "${mesh#*x}" = 1 ] && rely=local
  run slice_y "$mesh" "$rely" "t=$TMP/t.npy"
  run slice_y_step "$mesh" any "t=$TMP/t.npy"
  run concat_y "$mesh" "$rely" "t=$TMP/t.npy u=$TMP/u.npy"
  run split_y "$mesh" "$rely" "t=$TMP/t.npy"
  run edge_concat_y "$mesh" local "t=$TMP/t.npy r=$TMP/r1.npy"
  run slice_lead "$mesh" local "l=$TMP/l.npy"
  run concat_lead "$mesh" local "l=$TMP/l.npy k=$TMP/l2.npy"
  run split_lead "$mesh" local "l=$TMP/l.npy"
  run slice_xy "$mesh" any "a=$TMP/a.npy"
  run slice_col "$mesh" any "a=$TMP/a.npy"
  run slice_xy_step "$mesh" any "m=$TMP/m.npy"
  run slice_matmul "$mesh" any "m=$TMP/m.npy w=$TMP/w.npy" nowl
done
check_all

# A relayout's panel past the SRAM: exit 4 naming the gather and its fix, no plan left; a
# negative step: exit 3 (the interpreter runs it), located.
wir big '%a: f32[8, 1500], %b: f32[8, 1500]' 'f32[8, 3000]' '    %0 = concat(%a, %b) {axis = 1} : f32[8, 3000]
    return %0'
rc=0
waferc "$TMP/big.wir" -o "$TMP/big_plan" --target=test8x8 --mesh=8x1 2>"$TMP/big.err" || rc=$?
[ "$rc" = 4 ] || fail "a gather past the SRAM: waferc exited $rc, want 4"
grep -q 'does not fit the 49152-byte SRAM.*gathers the blocks it reads along the axis into a panel' "$TMP/big.err" ||
  fail "a gather past the SRAM: the error does not say why: $(head -1 "$TMP/big.err")"
[ ! -e "$TMP/big_plan/manifest.json" ] || fail "a gather past the SRAM left a manifest"
wir neg '%a: f32[8, 12]' 'f32[8, 12]' '    %0 = slice(%a) {starts = [-1], ends = [-13], axes = [1], steps = [-1]} : f32[8, 12]
    return %0'
rc=0
waferc "$TMP/neg.wir" -o "$TMP/neg_plan" --target=test8x8 --mesh=2x2 2>"$TMP/neg.err" || rc=$?
[ "$rc" = 3 ] || fail "a negative step: waferc exited $rc, want 3"
grep -q "neg.wir:3:5: error: 'slice' along axis 1 with step -1 has no mesh lowering yet" "$TMP/neg.err" ||
  fail "a negative step: $(head -1 "$TMP/neg.err")"
# An empty part (split sizes with a 0): exit 3, located, rather than a plan waferrun refuses.
wir empty '%a: f32[8, 12]' '(f32[8, 0], f32[8, 12])' '    %0, %1 = split(%a) {axis = 1, sizes = [0, 12]} : f32[8, 0], f32[8, 12]
    return %0, %1'
rc=0
waferc "$TMP/empty.wir" -o "$TMP/empty_plan" --target=test8x8 --mesh=2x2 2>"$TMP/empty.err" || rc=$?
[ "$rc" = 3 ] || fail "an empty split part: waferc exited $rc, want 3"
grep -q "empty.wir:3:5: error: partition: result of 'split' has no element" "$TMP/empty.err" || fail "an empty split part: $(head -1 "$TMP/empty.err")"
echo "ok   $n plans of slice / concat / split match the interpreter"
