#!/usr/bin/env bash
# Expert parallelism on bands of the mesh's rows (waferc --expert-parallel, passes/expert_bands.c,
# backend/resources/lower_band.c, backend/ops/lower_region_move.c; docs/moe-plans.md, "Experts on
# bands"). MoE blocks exported by torch (examples/models/moe): dense, sparse (expert choice,
# capacity) and dynamic (token lists, one with a shared expert, which no router weighs and which
# stays on the mesh: its four weights and the router's), compiled with and without it on meshes
# whose row count shares a factor G >= 2 with the expert count, and on meshes whose rows share
# none (uneven bands: 3, 5 and 8 experts on 2 to 7 rows, dense and capacity, top-1 and top-2,
# one with bands of one height starting off its multiples, 3 experts on 7 rows), and blocks
# whose combine is an einsum (Switch and GShard's capacity einsums, a dense weighted einsum):
#  - every plan's output equals torch's (1e-4, rtol 0), with and without bands;
#  - a plan past the target's colors with bands is said and compiled without them (at most
#    two here: moe_hf_e4_k2 on 8x8 is one);
#  - with bands the manifest lists G regions `within` @mesh (G = gcd(experts, H) when >= 2, a
#    band of H/G rows each; else uneven bands, the first H mod G a row taller and the first
#    experts mod G an expert more, G the count whose most loaded band has the fewest experts
#    per row), every expert weight lies on one of them
#    (as many on bands of as many experts, more on those of more) and every band has ops;
#  - the bands run at once: in waferrun's report each band's first op starts before the band
#    before it ends its last (a dispatch or combine between them would serialize them), and
#    the report's `bands` give each band's ops, span and the wavelet-hops on its links;
#  - the plan's prediction takes the longest band, not their sum (the mesh's ops and the
#    longest band's, exactly): within 10% of the simulation (8.7% at worst, 2026-12-01);
#  - without the flag no plan has a band; a mesh of one row gets none and still matches; a
#    pipeline's last stage, whose gates
#    arrive as an argument, gets bands and matches; --expert-parallel=auto keeps the plan
#    with fewer predicted cycles (one of each kind here), and a bad value is exit 2;
#  - bands' weights share bytes (the memory planner's groups): in the class's memory map two
#    weights of two bands overlap, and none overlaps another of its band or the mesh's.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
M=$SRC/examples/models/moe

check() { # check NAME PLAN MESH G E: the manifest and report of a plan with bands (SHARE=0: the
  # bands' weights need not share bytes)
  python3 - "$2/manifest.json" "$TMP/$1.report.json" "$3" "$4" "$5" "${SHARE:-1}" <<'PY' || fail "$1: see above"
import json, sys
man, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
W, H = (int(v) for v in sys.argv[3].split("x"))
G, experts = int(sys.argv[4]), int(sys.argv[5])
bands = sorted((r for r in man["regions"] if r.get("within") == "mesh"), key=lambda r: r["rect"][1])
assert len(bands) == G, ("bands", len(bands), G)
# band g of G over n (rows or experts): the first n mod G one more
at = lambda g, n: g * (n // G) + min(g, n % G)
size = lambda g, n: n // G + (g < n % G)
for g, r in enumerate(bands):
    assert r["rect"] == [0, at(g, H), W, size(g, H)] and "classes" not in r, r
names = {r["name"] for r in bands}
on_band = [t for t in man["weights"]["tensors"] if t["region"] in names]
per = [sum(1 for t in on_band if t["region"] == r["name"]) for r in bands]
ex = [size(g, experts) for g in range(G)]
# two weights or more per expert, as many on bands of as many experts, more on those of more
assert all(p >= 2 * e and (p > q) == (e > f) and (p == q) == (e == f) for p, e in zip(per, ex) for q, f in zip(per, ex)), (per, ex)
ops = man["ops"]
band_ops = {n: [i for i, o in enumerate(ops) if o.get("band") == n] for n in names}
assert all(band_ops.values()), band_ops
# the bands overlap in time
order = sorted(names, key=lambda n: band_ops[n][0])
rops = rep["ops"]
for a, b in zip(order, order[1:]):
    end_a = max(rops[i]["end"] for i in band_ops[a])
    start_b = min(rops[i]["start"] for i in band_ops[b])
    assert start_b < end_a, ("serialized", a, end_a, b, start_b)
# the report's bands: one per band, its ops counted, their spans overlapping, links inside
rb = {b["region"]: b for b in rep["bands"]}
assert set(rb) == names, (set(rb), names)
assert all(rb[n]["ops"] == len(band_ops[n]) for n in names), rb
assert max(b["start"] for b in rb.values()) < min(b["end"] for b in rb.values()), rb
assert any(b["wavelet_hops"] > 0 for b in rb.values()) == (W > 1), rb
# the prediction: the longest band
pred, sim = man["predicted_cycles"], rep["cycles"]["total"]
assert abs(pred - sim) <= 0.1 * sim, ("predicted", pred, "simulated", sim)
# (worst over these plans: 8.7%, moe_e8_k2_gather on 8x8): the mesh's ops added, and of the
# band ops (one run of them here) the longest band's, not every band's
band_ix = sorted(i for v in band_ops.values() for i in v)
assert band_ix == list(range(band_ix[0], band_ix[-1] + 1)), "the band ops are not one run"
per_band = {n: sum(ops[i]["predicted_cycles"] for i in v) for n, v in band_ops.items()}
summed = sum(o["predicted_cycles"] for o in ops)
assert pred == summed - sum(per_band.values()) + max(per_band.values()) < summed, ("predicted", pred, "summed", summed, per_band)
# weights share bytes across bands, never within one or with the mesh's
mem = {m["symbol"]: (m["offset"], m["offset"] + m["bytes"]) for m in man["regions"][0]["classes"][0]["memory"]}
region_of = {t["symbol"]: t["region"] for t in man["weights"]["tensors"]}
ws = [(s, region_of[s], mem[s]) for s in region_of if s in mem and mem[s][1] > mem[s][0]]
meet = lambda a, b: a[0] < b[1] and b[0] < a[1]
across = False
for i, (s1, r1, a) in enumerate(ws):
    for s2, r2, b in ws[i + 1:]:
        if not meet(a, b):
            continue
        assert r1 != r2 and r1 != "mesh" and r2 != "mesh", ("weights overlap", s1, r1, s2, r2)
        across = True
assert across or sys.argv[6] == "0", "no two bands' weights share bytes"
PY
}

# dense blocks, then the sparse (expert choice, capacity) and dynamic (torch.where /
# torch.nonzero token lists) ones, whose terms are each expert's outputs scattered into zeros
DENSE="moe_b2_e4_k2 moe_e4_k1 moe_e4_k2 moe_e4_k2_onehot moe_e6_k2_softk moe_e6_k2_stack moe_e8_k1_gelu moe_e8_k2 moe_e8_k2_gather moe_e16_k2"
SPARSE="moe_ec_e4_c4 moe_ec_e8_c3_gelu moe_cap_e4_k2_c8 moe_cap_e6_k1_c3 moe_cap_e16_k2_c2 moe_hf_e4_k2 moe_hf_b2_e8_k2 moe_hf_e6_k1_gelu moe_hf_e4_k2_shared moe_nz_e4_putacc moe_nz_e4_select"
gcd() { local a=$1 b=$2 t; while [ "$b" != 0 ]; do t=$((a % b)); a=$b; b=$t; done; echo "$a"; }
bands() { # bands E H: how many expert-bands makes: gcd(E, H) >= 2 equal bands, else the count
  # whose most loaded band (experts per row; the first bands a row taller and an expert more)
  # has the fewest, the most bands among those
  python3 -c '
import sys
from fractions import Fraction as F
n, H = int(sys.argv[1]), int(sys.argv[2])
size = lambda g, G, m: m // G + (g < m % G)
load = lambda G: max(F(size(g, G, n), size(g, G, H)) for g in range(G))
print(min(range(2, min(n, H) + 1), key=lambda G: (load(G), -G)) if min(n, H) >= 2 else 1)' "$1" "$2"
}
block() { # block NAME MESH...
  local b=$1 E mesh H G ep d
  shift
  E=$(python3 -c "import re,sys; print(int(re.search(r'_e(\d+)', sys.argv[1]).group(1)))" "$b")
  for mesh in "$@"; do
    H=${mesh#*x}
    G=$(bands "$E" "$H")
    for ep in "" "--expert-parallel"; do
      d=$TMP/$b.$mesh${ep:+.ep}
      waferc "$M/$b.onnx" -o "$d" --target=test8x8 --mesh=$mesh $ep 2>"$TMP/cerr" >/dev/null ||
        fail "$b $mesh $ep: waferc exited $?: $(grep -m1 error "$TMP/cerr")"
      waferrun "$d" -q --input "x=$M/${b}_input.npy" --output-dir "$d/out" --report "$TMP/$b.report.json" 2>"$TMP/err" ||
        fail "$b $mesh $ep: waferrun exited $?: $(head -1 "$TMP/err")"
      wafer-npycmp "$d/out/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >"$TMP/cmp" 2>&1 ||
        fail "$b $mesh $ep: differs from torch: $(head -1 "$TMP/cmp")"
      if [ -z "$ep" ]; then
        ! grep -q '"within"' "$d/manifest.json" || fail "$b $mesh: bands without --expert-parallel"
      elif grep -q "no band count tried fits; every expert is on the whole mesh" "$TMP/cerr"; then
        # past the colors or SRAM with every band count tried: said, and compiled without them
        ! grep -q '"within"' "$d/manifest.json" || fail "$b $mesh: bands after the note that there are none"
        fallbacks=$((fallbacks + 1))
      else
        # the first band count past the colors or SRAM: another count that fits, named in a note
        local refit
        refit=$(sed -n 's/.*the experts are on \([0-9]*\) bands, a band count that fits.*/\1/p' "$TMP/cerr")
        if [ -n "$refit" ]; then
          [ "$refit" != "$G" ] || fail "$b $mesh: refitted to the first band count, $G"
          G=$refit refits=$((refits + 1))
        fi
        check "$b" "$d" "$mesh" "$G" "$E"
        if [ "$b" = moe_hf_e4_k2_shared ]; then # the shared expert (no router) stays on the mesh
          python3 - "$d/manifest.json" <<'PY' || fail "$b $mesh: the shared expert's weights left the mesh"
import json, sys
w = json.load(open(sys.argv[1]))["weights"]["tensors"]
mats = [t for t in w if t["name"].startswith("onnx::MatMul")] # the Linear layers' weights
on_mesh = [t for t in mats if t["region"] == "mesh"]
# the router, the shared expert (SwiGLU) and its own sigmoid gate: 5; the experts: 4 x 3
assert len(on_mesh) == 5 and len(mats) - len(on_mesh) == 12, ([t["name"] for t in on_mesh], len(mats))
PY
        fi
      fi
      rm -rf "$d"
      n=$((n + 1))
    done
  done
}
fallbacks=0 refits=0
for b in $DENSE; do block "$b" 8x8 6x4 4x2; done
for b in $SPARSE; do block "$b" 4x4 8x8; done
# uneven bands, where the experts and the rows share no factor: 3 experts on 7 rows take rows
# 3+2+2 (the bands of 2 rows start at rows 3 and 5), 3 on 5 and 5 on 4 two bands (rows 3+2
# with experts 2+1, rows 2+2 with experts 3+2), 3 on 2, 5 on 3, 8 on 3 and 4 on 3 a row each
# (experts 2+1, 2+2+1, 3+3+2, 2+1+1)
block moe_e3_k1 4x2 4x5 4x7
block moe_e5_k2 4x4 4x3
block moe_e8_k2 6x3
block moe_e4_k2 5x3
block moe_cap_e3_k2_c6 4x2 4x7
block moe_cap_e5_k1_c3 4x4 4x3
# einsum combines: Switch's and GShard's capacity einsums (one product over every (expert,
# slot) pair, dispatch and combine; split per expert by expert-bands) and a dense
# `einsum("tn,tne->te")` (partition_moe's weighted sum), on equal and uneven bands
block moe_sw_e4_c3 4x4 5x3
block moe_sw_e6_c2_swiglu 6x4 5x3
block moe_gs_e4_c4 4x4 2x2
# a capacity of one token: each expert's dispatch slice is one row, whole on every PE of its band
# (it kept the rows' split, and the one-row GEMMs after it gave wrong results on every mesh)
block moe_sw_e5_c1 8x8 4x4
block moe_e5_k2_einsum 8x8 4x4
# every plan above fits its first band count (measured: none falls back, none takes another)
[ "$fallbacks" = 0 ] || fail "$fallbacks plans fell back to no bands (colors or SRAM)"
[ "$refits" = 0 ] || fail "$refits plans took a later band count than their first"
# a first band count past the target: moe_hf_t128_e4_k2 on 6x5 (4 experts, 5 rows, 128 tokens)
# would take 4 bands (rows 2+1+1+1, an expert each) and does not fit; the next counts are
# tried, and 2 bands (rows 3+2, experts 2+2) fit: 106,620 cycles against 112,161 on the whole
# mesh (2026-12-01). moe_hf_b2_e8_k2 on 8x7 was the case here until gather_elements took the
# row gather (its 2 bands fit since). The memory planner gives these two bands' weights
# disjoint bytes (it may share them, and does on every plan above; why not here is not
# looked into), so the sharing is not asserted for it
refits0=$refits
SHARE=0 block moe_hf_t128_e4_k2 6x5
[ "$refits" = $((refits0 + 1)) ] || fail "moe_hf_t128_e4_k2 6x5: no other band count tried"
# a band whose code its rows cannot hold: moe_hf_e6_k1_gelu on 5x3 (6 experts on 3 rows, a band
# a row) with double-buffered GEMMs names the PE's row in a guard the band's offset cannot be
# written in. That plan does not fit (exit 4 inside waferc, as for colors or SRAM; it was exit 3
# for the whole compile before 2026-12-02), and the memory-minimal schedule's does, on 3 bands
block moe_hf_e6_k1_gelu 5x3

# one row: no band, the same output
d=$TMP/e4.4x1
waferc "$M/moe_e4_k2.onnx" -o "$d" --target=test8x8 --mesh=4x1 -q --expert-parallel 2>"$TMP/err" ||
  fail "moe_e4_k2 4x1: waferc exited $?: $(grep -m1 error "$TMP/err")"
! grep -q '"within"' "$d/manifest.json" || fail "moe_e4_k2 4x1: bands on one row"
waferrun "$d" -q --input "x=$M/moe_e4_k2_input.npy" --output-dir "$d/out" || fail "moe_e4_k2 4x1: waferrun exited $?"
wafer-npycmp "$d/out/y.npy" "$M/moe_e4_k2_ref.npy" --atol 1e-4 --rtol 0 >/dev/null || fail "moe_e4_k2 4x1: differs from torch"
n=$((n + 1))

# a pipeline's stage whose gates arrive as an argument (the router ran in the stage before):
# its branches with weights are the experts
d=$TMP/pipe
waferc "$M/moe_e4_k2.onnx" -o "$d" --target=test8x8 --mesh=4x4 --pipeline=2 -q --expert-parallel 2>"$TMP/err" ||
  fail "moe_e4_k2 --pipeline=2: waferc exited $?: $(grep -m1 error "$TMP/err")"
grep -q '"within"' "$d/pipeline/stage1/manifest.json" || fail "moe_e4_k2 --pipeline=2: no bands in stage 1"
waferrun "$d" -q --input "x=$M/moe_e4_k2_input.npy" --output-dir "$d/out" || fail "moe_e4_k2 --pipeline=2: waferrun exited $?"
wafer-npycmp "$d/out/y.npy" "$M/moe_e4_k2_ref.npy" --atol 1e-4 --rtol 0 >/dev/null || fail "moe_e4_k2 --pipeline=2: differs from torch"
n=$((n + 1))

# --expert-parallel=auto weighs the band counts that fit (the first and up to three more) and
# the whole mesh, and keeps the fewest predicted cycles: moe_e8_k2 on 8x8 keeps its 8 bands
# (8,813 against 9,425-9,957 on 5-7 bands and 9,566 without); moe_e8_k2 on 4x6 takes 3 bands
# over its first count, 2, and the whole mesh (20,769 against 24,907 and 35,915; simulated
# 20,599 against 35,479 without); moe_e8_k1_gelu on 4x2 has 2 bands only and compiles without
# (34,414 against 34,526; simulated 34,312 and 34,337); all match torch. (moe_e4_k2 on 4x4
# took 2 bands here until MeshGEMM's alignment went both ways round: its whole-mesh plan is now
# predicted 5,344 against 5,660 on 2 bands, simulated 5,299 against 5,658.)
for c in "moe_e8_k2 8x8 kept 8" "moe_e8_k2 4x6 with 3" "moe_e8_k1_gelu 4x2 without 0"; do
  set -- $c
  d=$TMP/auto.$1
  waferc "$M/$1.onnx" -o "$d" --target=test8x8 --mesh=$2 --expert-parallel=auto 2>"$TMP/cerr" >/dev/null ||
    fail "$1 auto: waferc exited $?: $(grep -m1 error "$TMP/cerr")"
  grep -q "expert-parallel=auto: .* compiled $3\|expert-parallel=auto: .* $3 the bands" "$TMP/cerr" ||
    fail "$1 auto: no note that it $3: $(grep auto "$TMP/cerr")"
  [ "$(grep -c '"within"' "$d/manifest.json")" = "$4" ] || fail "$1 auto: not $4 bands"
  waferrun "$d" -q --input "x=$M/$1_input.npy" --output-dir "$d/out" || fail "$1 auto: waferrun exited $?"
  wafer-npycmp "$d/out/y.npy" "$M/$1_ref.npy" --atol 1e-4 --rtol 0 >/dev/null || fail "$1 auto: differs from torch"
  n=$((n + 1))
done
rc=0
waferc "$M/moe_e4_k2.onnx" -o "$TMP/bad" --expert-parallel=maybe 2>"$TMP/cerr" || rc=$?
[ "$rc" = 2 ] || fail "--expert-parallel=maybe: exit $rc, want 2 (usage)"
grep -q "not one of on, off, auto" "$TMP/cerr" || fail "--expert-parallel=maybe: $(cat "$TMP/cerr")"

# the pass in the IR: bands as regions, relayouts onto and off them
waferc "$M/moe_e8_k2.onnx" -o "$TMP/ir" --target=test8x8 --mesh=8x8 -q --expert-parallel \
  --print-ir-after=expert-bands 2>"$TMP/ir.txt" || fail "moe_e8_k2: --print-ir-after exited $?"
grep -q "region @experts7 = rect(0, 7, 8, 1)" "$TMP/ir.txt" || fail "moe_e8_k2: no @experts7 in the IR"
[ "$(grep -c 'dist.relayout' "$TMP/ir.txt")" -ge 16 ] || fail "moe_e8_k2: fewer relayouts than 8 bands need"
n=$((n + 1))
echo "expert_bands: $n checks passed ($fallbacks plans with no band count that fits, $refits on a later count)"
