#!/usr/bin/env bash
# MeshGEMM's and Cannon's alignment both ways round (docs/gemm.md, "Alignment"): on a square
# region of side 4 or more (3 when both operands align; forward only otherwise, checked too),
# MeshGEMM's odd rows shift their A blocks (y+1)/2 times forward and its even rows y > 0 y/2
# times backward, Cannon's rows y times forward or, where 2y > N, N - y times backward, on the
# ring's links reversed at switch position 1 (B's columns likewise), so no PE shifts more than
# N/2 times. For C = A B with A an input and B an input or a constant of the module
# (pre-skewed), on 3x3, 5x5, 6x6 and 8x8 with one and two buffers:
#  - the result equals the interpreter's;
#  - from the trace, the async sends each PE makes before its first multiply are exactly its
#    row's count for A plus (B an input) its column's count for B, none above N/2;
#  - a `ctl` and a `teardown` on exactly the PEs of the backward lines (one per operand that
#    aligns), none elsewhere; the program routes the ring's colors at position 1;
# and MeshGEMM on W x H (the lcm grid) does not go backward.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh"

# case NAME MESH MODE ALGO NBUF: A [2N, 3N] an input, B [3N, 2N] an input (MODE none) or a
# constant (b); compiled, run with a trace, compared with the interpreter
case_run() {
  local name=$1 mesh=$2 mode=$3 algo=$4 nb=$5 w=${2%x*} h=${2#*x}
  local M=$((2 * h)) K=$((3 * w)) N=$((2 * w))
  python3 "$NPY" "$TMP/$name.a.npy" "$M,$K" 1 1.0 "$TMP/$name.b.npy" "$K,$N" 2 1.0
  python3 "$SRC/tests/tools/matmul_wir.py" "$TMP" "$name" "$mode" "$M,$K" "$K,$N" "$M,$N"
  local ins=(--input a="$TMP/$name.a.npy")
  [ "$mode" = none ] && ins+=(--input b="$TMP/$name.b.npy")
  waferc "$TMP/$name.wir" --interpret "${ins[@]}" --output-dir "$TMP/$name.ref" -q || fail "$name: interpreter failed"
  waferc "$TMP/$name.wir" -o "$TMP/$name" --target=test8x8 --mesh="$mesh" -q --gemm-algo="$algo" \
    --gemm-buffers="$nb" 2>"$TMP/err" || fail "$name: waferc exited $?: $(head -3 "$TMP/err")"
  waferrun "$TMP/$name" -q "${ins[@]}" --output-dir "$TMP/$name/out" --trace "$TMP/$name/trace.json" ||
    fail "$name: waferrun exited $?"
  wafer-npycmp "$TMP/$name/out/c.npy" "$TMP/$name.ref/c.npy" --atol 1e-5 --rtol 1e-5 >/dev/null ||
    fail "$name: differs from the interpreter: $(wafer-npycmp "$TMP/$name/out/c.npy" "$TMP/$name.ref/c.npy" --atol 1e-5 --rtol 1e-5 | tail -1)"
  n=$((n + 1))
}

# check NAME N BOTH B_ALIGNS ALGO: the trace's sends and switch items against the schedule
check() {
  python3 - "$TMP/$1" "$2" "$3" "$4" "$5" <<'EOF' || fail "$1: (above)"
import json, re, sys
d, N, both, b_aligns, algo = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1", sys.argv[5]
ev = json.load(open(d + "/trace.json"))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
first_mm, sends, items = {}, {}, {}
for e in ev:
    if e.get("ph") != "X":
        continue
    m = re.match(r"PE \((\d+),(\d+)\)", names.get((e["pid"], e["tid"]), ""))
    if not m:
        continue
    pe = (int(m.group(1)), int(m.group(2)))
    if e["name"] == "matmul":
        first_mm[pe] = min(first_mm.get(pe, 1 << 60), e["ts"])
    elif e["name"] == "asend":
        sends.setdefault(pe, []).append(e["ts"])
    elif e["name"] in ("ctl", "teardown"):
        items.setdefault(pe, []).append(e["name"])
def count(r):  # shifts of line r: both ways round, or forward only
    if algo == "cannon":
        return N - r if both and 2 * r > N else r
    if both:
        return (r + 1) // 2 if r % 2 else r // 2
    pos = r // 2 if r % 2 == 0 else N - (r + 1) // 2  # INTERLEAVE's ring position
    return (-pos) % N
def back(r):
    if algo == "cannon":
        return both and 2 * r > N
    return both and r % 2 == 0 and r > 0
bad = []
for y in range(N):
    for x in range(N):
        pe = (x, y)
        got = sum(1 for t in sends.get(pe, []) if t < first_mm[pe])
        want = count(y) + (count(x) if b_aligns else 0)
        if got != want:
            bad.append("PE %s: %d sends before its first multiply, want %d" % (pe, got, want))
        if both and max(count(y), count(x)) > N // 2:
            bad.append("PE %s shifts more than N/2 = %d times" % (pe, N // 2))
        k = back(y) + (back(x) if b_aligns else 0)
        want_items = ["ctl"] * k + ["teardown"] * k
        if sorted(items.get(pe, [])) != sorted(want_items):
            bad.append("PE %s: switch items %r, want %r" % (pe, items.get(pe, []), want_items))
prog = open(d + "/programs/main.wpe").read()
if both != bool(re.search(r"\.route c\d+ p1 ", prog)):
    bad.append("position-1 routes: %s, want %s" % (not both, both))
for b in bad[:8]:
    print("FAIL", b)
sys.exit(1 if bad else 0)
EOF
}

for algo in meshgemm cannon; do
  for mesh in 3x3 5x5 6x6 8x8; do
    N=${mesh%x*}
    for nb in 1 2; do
      for mode in none b; do
        nm="ab-$algo-$mesh-$nb-$mode"
        case_run "$nm" "$mesh" "$mode" "$algo" "$nb"
        # 3x3 goes both ways round only when both operands align (gemm_algos.h)
        both=1
        [ "$N" = 3 ] && [ "$mode" = b ] && both=0
        check "$nm" "$N" "$both" "$([ "$mode" = none ] && echo 1 || echo 0)" "$algo"
      done
    done
  done
done
# On large meshes the schedule model follows a few rows, one of them the row that shifts most:
# both ways round that is a middle row for Cannon. 512^3 on 256x256 (wse2, B a constant; compiled,
# not run): each of the N/2 = 128 shifts of a 2x2 block takes at least its 4 words and the two
# ramps (4 cycles), so the predicted alignment is at least 128 * 8 = 1024 cycles
python3 "$NPY" "$TMP/big.a.npy" 512,512 1 1.0 "$TMP/big.b.npy" 512,512 2 1.0
python3 "$SRC/tests/tools/matmul_wir.py" "$TMP" big b 512,512 512,512 512,512
for algo in meshgemm cannon; do
  waferc "$TMP/big.wir" -o "$TMP/big-$algo" --target=wse2 --mesh=256x256 -q --gemm-algo=$algo ||
    fail "big $algo: waferc exited $?"
  python3 - "$TMP/big-$algo/manifest.json" <<'EOF' || fail "big $algo: (above)"
import json, sys
ph = json.load(open(sys.argv[1]))["ops"][0]["phases"]
if ph["alignment"] < 1024:
    print("FAIL predicted alignment %d cycles, below 128 shifts of a 2x2 block (1024)" % ph["alignment"])
    sys.exit(1)
EOF
done
# MeshGEMM on W x H aligns forward only
case_run rect-4x3 4x3 b meshgemm 2
grep -q "teardown\|\bctl\b" "$TMP/rect-4x3/programs/main.wpe" && fail "rect-4x3: MeshGEMM on W x H went backward"
echo "gemm_align_both: $n plans equal to the interpreter, each PE's shifts as scheduled"
