#!/usr/bin/env bash
# `--gemm-algo=auto` weighs SRAM (docs/gemm.md, "Choosing an algorithm"): an algorithm whose
# estimated bytes per PE pass the target's SRAM is listed as "no fit (N B)" in the dist.gemm's
# explain and not chosen when another fits. Three matmuls on test8x8 (48 KiB per PE) where the
# lowest prediction does not fit: a batch of 255 16^3 matrices on 4x4 (Cannon is the lowest;
# its and MeshGEMM's four 4x4 buffers do not fit beside the batch's blocks, SUMMA's two do),
# 240x200x8 on 4x3 (allgather's panels and SUMMA's tile do not fit, Cannon
# does) and on 5x3 (allgather does not, SUMMA does). For each: auto's plan lowers with the
# lowest-predicted algorithm not marked "no fit", its memory fits, it runs on waferrun and
# matches the interpreter; every algorithm marked "no fit" named with --gemm-algo exits 4
# (the memory planner) or, a shift GEMM on a square region, compiles with one buffer (waferc's
# memory-minimal fallback, which says so); every other one compiles.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}

# run NAME MODEL MESH "INPUTS" OUT REF [WANT] -- waferc flags...; gen NAME ASHAPE BSHAPE CSHAPE
. "$SRC/tests/tools/plan_run.sh"

# check NAME MESH: auto's plan (run already compiled it into $TMP/NAME-auto) against its
# explain, and each algorithm named explicitly.
check() {
  local name=$1 mesh=$2 a rc
  for a in meshgemm cannon summa allgather; do
    rc=0
    waferc "$TMP/$name.wir" -o "$TMP/$name-$a" --target=test8x8 --mesh="$mesh" --gemm-algo=$a -q \
      2>"$TMP/$name-$a.err" || rc=$?
    echo "$a $rc" >>"$TMP/$name.rcs"
  done
  python3 - "$TMP" "$name" <<'PY' || fail "$name: auto's SRAM-aware choice (above)"
import json, re, sys
tmp, name = sys.argv[1], sys.argv[2]
m = json.load(open("%s/%s-auto/manifest.json" % (tmp, name)))
op, sram = m["ops"][-1], m["target"]["sram_bytes"]
ex = op["explain"]
cands, nofit = {}, {}
for part in ex.split(":", 1)[1].split(" (lowest")[0].split(","):
    w = part.split()
    if w[1] == "-":
        continue
    cands[w[0]] = int(w[1])
    f = re.search(r"no fit \((\d+) B\)", part)
    if f:
        nofit[w[0]] = int(f.group(1))
lowest = min(cands, key=lambda a: cands[a])
assert lowest in nofit, "premise: the lowest prediction (%s) fits: %s" % (lowest, ex)
for a, b in nofit.items():
    assert b > sram, "%s listed as no fit with %d B <= %d" % (a, b, sram)
fits = {a: c for a, c in cands.items() if a not in nofit}
best = min(fits.values())
chosen = op["lowering"].split("-")[0]
assert chosen in fits and fits[chosen] == best, (op["lowering"], ex)
assert op["predicted_cycles"] == best, (op["predicted_cycles"], ex)
assert "(lowest that fits: %s)" % chosen in ex, ex
mem = m["regions"][0]["classes"][0]["memory_bytes"]
assert mem <= sram, (mem, sram)
for line in open("%s/%s.rcs" % (tmp, name)):
    a, rc = line.split()
    err = open("%s/%s-%s.err" % (tmp, name, a)).read()
    if a in nofit and rc == "0":
        # waferc compiled it again with one buffer (the memory-minimal fallback)
        lw = json.load(open("%s/%s-%s/manifest.json" % (tmp, name, a)))["ops"][-1]["lowering"]
        assert "-1buf" in lw and "memory-minimal schedule (--gemm-buffers=1)" in err, (a, lw, err)
    elif a in nofit:
        assert rc == "4", "%s is listed as no fit but exits %s" % (a, rc)
        assert "does not fit" in err, err
    elif a in cands:
        assert rc == "0", "%s fits by the estimate but exits %s" % (a, rc)
print(name, "auto ->", op["lowering"], "| no fit:", nofit)
PY
}

gen sq 255,16,16 255,16,16 255,16,16
run sq-auto "$TMP/sq.wir" 4x4 "a=$TMP/sq.a.npy b=$TMP/sq.b.npy" c "$TMP/sq.ref/c.npy" ""
check sq 4x4
gen thin 240,200 200,8 240,8
run thin-auto "$TMP/thin.wir" 4x3 "a=$TMP/thin.a.npy b=$TMP/thin.b.npy" c "$TMP/thin.ref/c.npy" ""
check thin 4x3
rm -rf "$TMP/thin-auto" "$TMP/thin.rcs"
run thin-auto "$TMP/thin.wir" 5x3 "a=$TMP/thin.a.npy b=$TMP/thin.b.npy" c "$TMP/thin.ref/c.npy" ""
check thin 5x3
echo "ok: $n gemm_auto_fit plans"
