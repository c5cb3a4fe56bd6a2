#!/usr/bin/env bash
# The memory-minimal GEMM schedule (docs/gemm.md, "Buffers"): --gemm-buffers=1 gives MeshGEMM
# and Cannon on a square region three rotating buffers (A, B and one spare) instead of two per
# operand; a step multiplies while A shifts into the spare and B's first words leave, waits,
# then B comes into A's old buffer, and waits. SUMMA lowers the same for
# 1 and 2 (its broadcasts block). auto takes 2 where its SRAM estimate fits, else 1.
#  - Results equal the reference interpreter with 1 and 2 buffers, for meshgemm, cannon and
#    summa, on square meshes with ragged (padded) M, K and N, with a pre-skewed weight, and
#    batched; on non-square meshes SUMMA with both, the shift algorithms with 2, and 1 is
#    refused (exit 3) with a message naming the region.
#  - The 1-buffer plan's per-PE memory (the manifest's memory_bytes) is smaller than the
#    2-buffer one's for meshgemm and cannon, and the same for summa (the same program).
#  - The schedule, from the trace: no stream receives into a buffer a multiply in flight
#    reads; with 1 buffer a multiply overlaps at most one receive (A's, into the spare: B's
#    waits for the multiply), with 2 some overlap two (A's and B's), and with both some
#    multiplies overlap a receive (A's shift is hidden behind the multiply).
#  - Predicted cycles within 10% of simulated for the 1-buffer schedule on communication-bound
#    sizes (2x2 blocks per PE on 8x8 and 16x16, timing mode), and the manifest and explain
#    name the schedule.
#  - auto: 2 where the double buffers fit; 1 where they do not (a 100^3 MeshGEMM on 2x2 of 48
#    KiB PEs: 2 buffers exit 4, auto runs 1 buffer and equals the interpreter), and 2 again
#    where the planner fits them only by reusing the operands' blocks (88^3).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh"

# field PLAN EXPR: a Python expression over the manifest m, printed
field() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]+'/manifest.json')); print($2)" "$1"; }
mem() { field "$1" "max(c['memory_bytes'] for r in m['regions'] for c in r['classes'])"; }
lowering() { field "$1" "[o for o in m['ops'] if o['op'] == 'dist.gemm'][0]['lowering']"; }

# ---- results equal the interpreter; memory; the lowering's name ----
gen r 10,14 14,9 10,9 # M, K, N ragged on every mesh below
for mesh in 2x2 3x3 4x4; do
  for algo in meshgemm cannon summa; do
    for nb in 1 2; do
      run "r-$mesh-$algo-$nb" "$TMP/r.wir" "$mesh" "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" \
        --gemm-algo=$algo --gemm-buffers=$nb
    done
    m1=$(mem "$TMP/r-$mesh-$algo-1") m2=$(mem "$TMP/r-$mesh-$algo-2")
    l1=$(lowering "$TMP/r-$mesh-$algo-1") l2=$(lowering "$TMP/r-$mesh-$algo-2")
    if [ $algo = summa ]; then
      [ "$m1" = "$m2" ] || fail "$mesh summa: memory $m1 B with 1 buffer, $m2 B with 2 (the same program)"
      cmp -s "$TMP/r-$mesh-$algo-1/programs/main.wpe" "$TMP/r-$mesh-$algo-2/programs/main.wpe" ||
        fail "$mesh summa: the programs for 1 and 2 buffers differ"
    else
      [ "$m1" -lt "$m2" ] || fail "$mesh $algo: per-PE memory $m1 B with 1 buffer, not below $m2 B with 2"
      case $l1 in *-1buf) ;; *) fail "$mesh $algo: 1 buffer lowered as '$l1'" ;; esac
      case $l2 in *-1buf) fail "$mesh $algo: 2 buffers lowered as '$l2'" ;; esac
    fi
  done
done
# a pre-skewed weight (B a constant) and a batch, with 1 buffer
python3 "$NPY" "$TMP/w.b.npy" 14,9 3 1.0
cat >"$TMP/w.wir" <<EOF
module @g {
  const @b : f32[14,9] = file<"w.b.npy">
  func @main(%a: f32[10,14]) -> f32[10,9] {
    %c = matmul(%a, @b) : f32[10,9]
    return %c
  }
}
EOF
waferc "$TMP/w.wir" --interpret --input a="$TMP/r.a.npy" --output-dir "$TMP/w.ref" -q || fail "w: interpreter failed"
gen bt 3,5,12 3,12,7 3,5,7
for mesh in 3x3 4x4; do
  for algo in meshgemm cannon; do
    run "w-$mesh-$algo" "$TMP/w.wir" "$mesh" "a=$TMP/r.a.npy" c "$TMP/w.ref/c.npy" "" --gemm-algo=$algo --gemm-buffers=1
    run "bt-$mesh-$algo" "$TMP/bt.wir" "$mesh" "a=$TMP/bt.a.npy b=$TMP/bt.b.npy" c "$TMP/bt.ref/c.npy" "" \
      --gemm-algo=$algo --gemm-buffers=1
  done
done
# non-square: SUMMA with both, the shift algorithms with 2; 1 is refused
for mesh in 2x3 4x2; do
  for nb in 1 2; do
    run "n-$mesh-summa-$nb" "$TMP/r.wir" "$mesh" "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" \
      --gemm-algo=summa --gemm-buffers=$nb
  done
  for algo in meshgemm cannon; do
    run "n-$mesh-$algo-2" "$TMP/r.wir" "$mesh" "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" \
      --gemm-algo=$algo --gemm-buffers=2
    rc=0
    waferc "$TMP/r.wir" -o "$TMP/n1" --target=test8x8 --mesh=$mesh --gemm-algo=$algo --gemm-buffers=1 -q \
      2>"$TMP/err" || rc=$?
    [ $rc = 3 ] && grep -q "square regions only" "$TMP/err" ||
      fail "$mesh $algo --gemm-buffers=1: exit $rc, expected 3 and the reason: $(head -2 "$TMP/err")"
  done
  # auto (and buffers=1 with algo=auto) leave the shift algorithms at 2 / out, and still lower
  run "n-$mesh-auto-1" "$TMP/r.wir" "$mesh" "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" --gemm-buffers=1
  run "n-$mesh-auto-auto" "$TMP/r.wir" "$mesh" "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" \
    --gemm-algo=meshgemm --gemm-buffers=auto
done
rc=0
waferc "$TMP/r.wir" -o "$TMP/bad" --target=test8x8 --mesh=2x2 --gemm-buffers=3 -q 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "--gemm-buffers=3: exit $rc, expected 2"

# ---- the schedule, from the trace: what a multiply overlaps ----
gen s 24,24 24,24 24,24
for algo in meshgemm cannon; do
  for nb in 1 2; do
    d="$TMP/s-$algo-$nb"
    run "s-$algo-$nb" "$TMP/s.wir" 4x4 "a=$TMP/s.a.npy b=$TMP/s.b.npy" c "$TMP/s.ref/c.npy" "" \
      --gemm-algo=$algo --gemm-buffers=$nb
    waferrun "$d" -q --mode=timing --trace "$d/trace.json" || fail "s-$algo-$nb: traced run exited $?"
  done
  python3 - "$TMP" "$algo" <<'PY' || fail "$algo: the schedules' overlaps (above)"
import json, re, sys
tmp, algo = sys.argv[1:]

def overlaps(nb):
    """Per multiply, the receives in flight during it; fails on one into a buffer it reads."""
    ev = json.load(open("%s/s-%s-%d/trace.json" % (tmp, algo, nb)))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    pe = {t: re.match(r"PE \((\d+),(\d+)\)", n).group(0) for t, n in names.items()}
    mm, rv = {}, {}
    for e in ev:
        if e.get("ph") != "X" or e["tid"] not in pe or e.get("cat") in ("op", "task"):
            continue
        syn = e.get("args", {}).get("synopsis", "")
        if e["name"] == "matmul":
            mm.setdefault(pe[e["tid"]], []).append((e["ts"], e["ts"] + e["dur"], set(re.findall(r"([^\s\[]+)\[", syn))))
        elif e.get("args", {}).get("async") and e["name"].startswith("arecv"):
            rv.setdefault(pe[e["tid"]], []).append((e["ts"], e["ts"] + e["dur"], re.findall(r"([^\s\[]+)\[", syn)[0]))
    assert mm and rv, "%s %d buffers: no multiplies or no receives in the trace" % (algo, nb)
    counts = []
    for p in mm:
        for a, b, reads in mm[p]:
            live = [buf for c, d, buf in rv.get(p, []) if c < b and a < d]
            bad = [buf for buf in live if buf in reads]
            assert not bad, "%s %d buffers, %s: a receive into %s during a multiply reading it" % (algo, nb, p, bad)
            counts.append(len(live))
    return counts

one, two = overlaps(1), overlaps(2)
assert max(one) == 1, "%s: with 1 buffer a multiply overlaps up to %d receives (expected 1: A's)" % (algo, max(one))
assert max(two) == 2, "%s: with 2 buffers a multiply overlaps up to %d receives (expected 2)" % (algo, max(two))
print("%s: receives in flight per multiply: 1 buffer up to %d (%d of %d multiplies), 2 buffers up to %d" % (
    algo, max(one), sum(1 for c in one if c), len(one), max(two)))
PY
  n=$((n + 1))
done

# ---- predicted vs simulated, 1 buffer, communication-bound (2x2 blocks per PE) ----
for s in 8 16; do
  for algo in meshgemm cannon; do
    for nb in 1 2; do
      wafer-bench gemm --algo=$algo --mesh=$s --m=$((2 * s)) --k=$((2 * s)) --n=$((2 * s)) --gemm-buffers=$nb \
        >"$TMP/b-$s-$algo-$nb.json" || fail "wafer-bench gemm $algo $s $nb: exit $?"
    done
    python3 - "$TMP/b-$s-$algo-1.json" "$TMP/b-$s-$algo-2.json" <<'PY' || fail "$algo on ${s}x$s: (above)"
import json, sys
one, two = (json.load(open(f)) for f in sys.argv[1:])
tag = "%s %s" % (one["algo"], one["mesh"])
assert one["buffers"] == 1 and two["buffers"] == 2, "%s: buffers reported %r, %r" % (tag, one["buffers"], two["buffers"])
err = (one["predicted_cycles"] - one["simulated_cycles"]) / one["simulated_cycles"]
assert abs(err) <= 0.10, "%s 1 buffer: predicted %d, simulated %d (%+.1f%%)" % (
    tag, one["predicted_cycles"], one["simulated_cycles"], 100 * err)
# the steps overlap A's shift with the multiply: a step (loop / N) is shorter than the
# multiply followed by A's and then B's 4-word message over one hop (wse2: 8 + 2 (3 + 6)),
# the schedule without the overlap; and 2 buffers are never slower
N = one["mesh"][0]
step = one["phases"]["loop"]["cycles"] / N
assert step < 8 + 2 * (3 + 6), "%s 1 buffer: %.1f cycles per step, not below a serial step's 26" % (tag, step)
assert two["simulated_cycles"] <= one["simulated_cycles"], "%s: 2 buffers %d cycles, 1 buffer %d" % (
    tag, two["simulated_cycles"], one["simulated_cycles"])
print("%s: 1 buffer %d cycles (predicted %d, %+.1f%%; %.1f per step), 2 buffers %d" % (
    tag, one["simulated_cycles"], one["predicted_cycles"], 100 * err, step, two["simulated_cycles"]))
PY
    n=$((n + 1))
  done
done
# the explain names the schedule each candidate was predicted with
field "$TMP/r-4x4-meshgemm-1" "[o for o in m['ops'] if o['op'] == 'dist.gemm'][0]['explain']" >"$TMP/ex"
grep -q "meshgemm [0-9]* (1 buffer)" "$TMP/ex" && grep -q "cannon [0-9]* (1 buffer)" "$TMP/ex" ||
  fail "explain of a 1-buffer plan: $(cat "$TMP/ex")"
field "$TMP/r-4x4-meshgemm-2" "[o for o in m['ops'] if o['op'] == 'dist.gemm'][0]['explain']" >"$TMP/ex"
grep -q "1 buffer" "$TMP/ex" && fail "explain of a 2-buffer plan: $(cat "$TMP/ex")"

# ---- auto: 2 where it fits, 1 where only that fits ----
run "auto-fits" "$TMP/r.wir" 4x4 "a=$TMP/r.a.npy b=$TMP/r.b.npy" c "$TMP/r.ref/c.npy" "" \
  --gemm-algo=meshgemm --gemm-buffers=auto
[ "$(lowering "$TMP/auto-fits")" = meshgemm-interleave ] || fail "auto where 2 buffers fit: $(lowering "$TMP/auto-fits")"
# 50x50 blocks: the buffers take A's and B's blocks once they are copied, so 2 buffers need C and
# four buffers, 5 x 10000 B > 48 KiB; 1 buffer needs C and three, 4 x 10000 B
gen big 100,100 100,100 100,100
rc=0
waferc "$TMP/big.wir" -o "$TMP/big2" --target=test8x8 --mesh=2x2 --gemm-algo=meshgemm --gemm-buffers=2 -q \
  2>/dev/null || rc=$?
[ $rc = 4 ] || fail "100^3 on 2x2 with 2 buffers: exit $rc, expected 4 (does not fit)"
run "big-auto" "$TMP/big.wir" 2x2 "a=$TMP/big.a.npy b=$TMP/big.b.npy" c "$TMP/big.ref/c.npy" "" \
  --gemm-algo=meshgemm --gemm-buffers=auto
[ "$(lowering "$TMP/big-auto")" = meshgemm-interleave-1buf ] || fail "auto where 2 do not fit: $(lowering "$TMP/big-auto")"
[ "$(mem "$TMP/big-auto")" -le 49152 ] || fail "auto's 1-buffer plan uses $(mem "$TMP/big-auto") B"
# 44x44 blocks: A, B, C and four buffers would be 7 x 7744 B > 48 KiB, but the planner reuses
# A's and B's blocks (5 x 7744 B): auto keeps 2 buffers
gen mid 88,88 88,88 88,88
run "mid-auto" "$TMP/mid.wir" 2x2 "a=$TMP/mid.a.npy b=$TMP/mid.b.npy" c "$TMP/mid.ref/c.npy" "" \
  --gemm-algo=meshgemm --gemm-buffers=auto
[ "$(lowering "$TMP/mid-auto")" = meshgemm-interleave ] || fail "auto where 2 fit by reuse: $(lowering "$TMP/mid-auto")"
[ "$(mem "$TMP/mid-auto")" = 38720 ] || fail "88^3 with 2 buffers uses $(mem "$TMP/mid-auto") B, expected 5 blocks"
echo "gemm_buffers: $n checks passed"
