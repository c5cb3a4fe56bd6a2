#!/bin/sh
# Collective and MeshGEMV lowerings (backend/lower_collective*.c, lower_gemv.c) through
# wafer-bench: every algorithm reduces correctly (values checked in functional mode), the
# simulation never beats the Lemma 5.5 lower bound, stays within the documented tolerance
# of the model (docs/collectives-lowering.md), and `auto` picks the lowest prediction.
# MeshGEMV's result is checked against y = x.W computed here. Also: ring allreduce and snake
# reduce against their derived times (Lemma 5.2 for the snake), waferc --reduce-algo / --gemv-allreduce on whole graphs
# (values vs the interpreter), color reuse across phases under a small budget and
# serialization past it, the route code limit and --auto-region.
set -eu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SRC=${WAFERC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$T" "$SRC" <<'PY'
import json, os, re, subprocess, sys
tmp, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "tests", "fidelity"))
import collectives as C
fails = []
def bench(*a):
    r = subprocess.run(["wafer-bench", *a], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append("wafer-bench %s: exit %d %s" % (" ".join(a), r.returncode, r.stderr[:300]))
        return None
    return json.loads(r.stdout)
def ring_lowered(P, B):
    # The ring allreduce as lowered (wf_coll_ring_lowered, docs/collectives-lowering.md), T_R = 2,
    # 1 cycle per hop: 2(P-1) rounds of c = ceil(B/P) words + 2 T_R (the store cycle overlaps the
    # next round), 4P-7 hops on the critical path (4P-6 for P <= 3), plus the local work: two
    # rotations of B words and the zeroed padding P c - B. Derived, not fitted: exact.
    c = -(-B // P)
    return 2 * (P - 1) * (c + 4) + (4 * P - 7 if P >= 4 else 4 * P - 6) + 2 * B + (P * c - B)

# tolerance: the model's documented gaps (docs/cycle-model.md): star +1, tree and two-phase
# bounded by the rounds' distance, autogen trees mix both. Worst cases measured on this sweep:
# tree 8.9% (P=9 B=16), two-phase 17.3% (P=32 B=128), autogen 10.3% (P=25 B=7); the bounds
# sit just above them
# at these sizes, chain and broadcast must be exact.
TOL = {"chain": 0.0, "star": 0.01, "tree": 0.10, "two_phase": 0.19, "autogen": 0.12}
for P, B in [(4, 1), (9, 16), (16, 64), (25, 7), (32, 128)]:
    preds = {}
    for algo in ["star", "chain", "tree", "two_phase", "autogen"]:
        j = bench("collective", "--algo=" + algo, "--pes=%d" % P, "--len=%d" % B)
        if not j: continue
        tag = "%s P=%d B=%d" % (algo, P, B)
        if j["correct"] is not True: fails.append(tag + ": wrong values")
        # Lemma 5.5 bounds reduces that follow equation (1); a pipelined star (or an Auto-Gen
        # tree with a star at its top) is outside that class and undercuts it at B = 1
        # (include/waferc/collectives.h).
        exempt = algo == "star" or (algo == "autogen" and B == 1)
        if j["simulated_cycles"] < j["lower_bound_cycles"] and not exempt:
            fails.append(tag + ": simulated %d below the lower bound %d" % (j["simulated_cycles"], j["lower_bound_cycles"]))
        err = abs(j["model_error"])
        if err > TOL[algo] + 2.0 / j["predicted_cycles"]:
            fails.append(tag + ": model error %.3f above %.2f" % (err, TOL[algo]))
        preds[algo] = j["predicted_cycles"]
    j = bench("collective", "--algo=auto", "--pes=%d" % P, "--len=%d" % B)
    if j and preds and j["predicted_cycles"] != min(preds.values()):
        fails.append("auto P=%d B=%d picked %s (%d), lowest is %d" % (P, B, j["algo"], j["predicted_cycles"], min(preds.values())))
    for algo in ["chain", "autogen"]:
        j = bench("collective", "--op=allreduce", "--algo=" + algo, "--pes=%d" % P, "--len=%d" % B)
        if j and j["correct"] is not True: fails.append("allreduce %s P=%d: wrong values" % (algo, P))
for dims_algo in ["chain", "two_phase"]:
    for op in ["reduce", "allreduce"]:
        j = bench("collective", "--dims=2", "--op=" + op, "--algo=" + dims_algo, "--pes=16", "--len=8")
        if j and j["correct"] is not True: fails.append("2D %s %s: wrong values" % (op, dims_algo))
j = bench("collective", "--op=broadcast", "--pes=12", "--len=10")
if j and (j["correct"] is not True or j["simulated_cycles"] != j["predicted_cycles"]):
    fails.append("broadcast: %s" % j)
# MeshGEMV: y = x . W on 8x2, values checked with waferrun
W_, H_, K, N = 8, 2, 32, 6
for how in ["ktree", "pipeline", "ring"]:
    plan = os.path.join(tmp, "gemv_" + how)
    j = bench("gemv", "--allreduce=" + how, "--mesh=%dx%d" % (W_, H_), "--k=%d" % K, "--n=%d" % N, "--keep=" + plan)
    if not j: continue
    x = [float((i % 5) - 2) for i in range(K)]
    w = [float((i * 3 + 1) % 7 - 3) for i in range(K * N)]
    C.write_npy(os.path.join(tmp, "x.npy"), [K], x)
    C.write_npy(os.path.join(tmp, "w.npy"), [K, N], w)
    out = os.path.join(tmp, "out_" + how)
    r = subprocess.run(["waferrun", plan, "--input", "x=" + os.path.join(tmp, "x.npy"), "--input",
                        "w=" + os.path.join(tmp, "w.npy"), "--output-dir", out, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append("gemv %s: waferrun exit %d %s" % (how, r.returncode, r.stderr[:300])); continue
    got = C.read_npy(os.path.join(out, os.listdir(out)[0]))
    want = [sum(x[k] * w[k * N + n] for k in range(K)) for n in range(N)]
    if got != want: fails.append("gemv %s: got %s want %s" % (how, got, want))
# Ring allreduce (Reduce paper §6.2, backend/collectives/lower_collective_ring.c): values checked, and
# predicted = simulated = the lowered ring's time (ring_lowered above: Lemma 6.1's rounds
# without the store cycle each round overlaps, with whole chunks and the ring's real hops)
# + the local work (two rotations of B words and the zeroed padding of the last chunk).
for P, B in [(2, 64), (5, 7), (8, 1), (8, 256), (13, 40)]:
    j = bench("collective", "--op=allreduce", "--algo=ring", "--pes=%d" % P, "--len=%d" % B)
    if not j: continue
    tag = "ring P=%d B=%d" % (P, B)
    want = ring_lowered(P, B)
    if j["correct"] is not True: fails.append(tag + ": wrong values")
    if j["predicted_cycles"] != want: fails.append(tag + ": predicted %d, the lowered ring's formula gives %d" % (j["predicted_cycles"], want))
    if j["simulated_cycles"] != want: fails.append(tag + ": simulated %d, the lowered ring's formula gives %d" % (j["simulated_cycles"], want))
    if j["algo"] != "ring": fails.append(tag + ": lowered " + j["algo"])
# Snake reduce (§7.3, backend/collectives/lower_collective_snake.c): the chain along a boustrophedon
# path, so its time is Lemma 5.2's for P = w h: B + (2 T_R + 2)(P - 1), exactly (the chain is
# exact in this simulator); the allreduce adds the 2D broadcast from the snake's end.
for pes, B in [(16, 1), (16, 32), (6, 7), (9, 5)]:
    j = bench("collective", "--dims=2", "--op=reduce", "--algo=snake", "--pes=%d" % pes, "--len=%d" % B)
    if not j: continue
    want = B + 6 * (pes - 1)
    if j["correct"] is not True or j["simulated_cycles"] != want or j["algo"] != "snake":
        fails.append("snake reduce P=%d B=%d: %s, want %d cycles" % (pes, B, j, want))
for pes, B in [(16, 32), (6, 1)]:
    j = bench("collective", "--dims=2", "--op=allreduce", "--algo=snake", "--pes=%d" % pes, "--len=%d" % B)
    if j and j["correct"] is not True: fails.append("snake allreduce P=%d: wrong values" % pes)
# MeshGEMV with the ring allreduce baseline: values checked with waferrun (below).
# waferc --reduce-algo applies to every collective, the row allreduces of norms, softmax
# and reductions included: each algorithm matches the interpreter; colors are reused across
# phases (fewer colors in the manifest than twice the collectives: each needs two or more).
os.environ.setdefault("WAFERC_TARGET_PATH", os.path.join(src, "targets"))
model = os.path.join(src, "tests", "e2e_dist", "norms.wir")
vals = [((i * 37) % 11 - 5) / 4 for i in range(128)]
C.write_npy(os.path.join(tmp, "nx.npy"), [8, 16], vals)
ref = os.path.join(tmp, "norms.ref")
subprocess.run(["waferc", model, "--interpret", "--input", "x=" + os.path.join(tmp, "nx.npy"), "--output-dir", ref], check=True)
for algo, mesh in [("ring", "4x4"), ("star", "2x4"), ("autogen", "4x4"), ("chain", "1x4"), ("auto", "4x2")]:
    d = os.path.join(tmp, "norms." + algo)
    tag = "norms --reduce-algo=%s %s" % (algo, mesh)
    r = subprocess.run(["waferc", model, "-o", d, "--target=test4x4", "--mesh=" + mesh, "--reduce-algo=" + algo, "-q"], capture_output=True, text=True)
    if r.returncode: fails.append(tag + ": waferc exit %d %s" % (r.returncode, r.stderr[:300])); continue
    r = subprocess.run(["waferrun", d, "-q", "--input", "x=" + os.path.join(tmp, "nx.npy"), "--output-dir", d + ".out"], capture_output=True, text=True)
    if r.returncode: fails.append(tag + ": waferrun exit %d %s" % (r.returncode, r.stderr[:300])); continue
    for name in os.listdir(ref):
        r = subprocess.run(["wafer-npycmp", os.path.join(d + ".out", name), os.path.join(ref, name), "--atol", "1e-5", "--rtol", "1e-4"], capture_output=True)
        if r.returncode: fails.append(tag + ": %s differs from the interpreter" % name)
    m = json.load(open(os.path.join(d, "manifest.json")))
    ex = " ".join(o.get("explain", "") for o in m["ops"])
    n_coll = ex.count("allreduce-")
    if n_coll < 3: fails.append(tag + ": %d collectives listed in the manifest" % n_coll)
    if algo in ("ring", "star", "autogen", "chain") and ("allreduce-x:" + algo not in ex and "allreduce-y:" + algo not in ex):
        fails.append(tag + ": manifest does not list the forced algorithm: " + ex[:200])
    if len(m["colors"]) >= 2 * n_coll: fails.append(tag + ": %d colors for %d collectives (no reuse)" % (len(m["colors"]), n_coll))
# --gemv-allreduce (with K in braces) reaches every dist.gemv of the compile
gw = os.path.join(tmp, "gemv.wir")
open(gw, "w").write("""module @g {
  region @mesh = rect(0, 0, 8, 2)
  func @main(%x: f32[32]{K_x} @mesh, %w: f32[32, 6]{K_x, N_y} @mesh) -> f32[6]{N_y} @mesh {
    %y = dist.gemv(%x, %w) {allreduce = pipeline} : f32[6]{N_y} @mesh
    return %y
  }
}
""")
for opt, want in [("ring", "gemv:ring-allreduce"), ("ktree{k=3}", "meshgemv:ktree{k=3}"), ("ktree{groups=2}", "meshgemv:ktree{groups=2}")]:
    d = os.path.join(tmp, "g_" + want.replace(":", "_").replace("{", "").replace("}", "").replace("=", ""))
    r = subprocess.run(["waferc", gw, "-o", d, "--target=wse2", "--mesh=8x2", "--pass-pipeline=canonicalize", "--gemv-allreduce=" + opt, "-q"], capture_output=True, text=True)
    if r.returncode: fails.append("--gemv-allreduce=%s: exit %d %s" % (opt, r.returncode, r.stderr[:300])); continue
    low = [o["lowering"] for o in json.load(open(os.path.join(d, "manifest.json")))["ops"]]
    if low != [want]: fails.append("--gemv-allreduce=%s: lowering %s, want %s" % (opt, low, want))
r = subprocess.run(["waferc", gw, "-o", os.path.join(tmp, "gbad"), "--gemv-allreduce=ktree{k=0}"], capture_output=True, text=True)
if r.returncode != 2: fails.append("--gemv-allreduce=ktree{k=0}: exit %d, want 2 (usage)" % r.returncode)
r = subprocess.run(["waferc", gw, "-o", os.path.join(tmp, "gbad"), "--reduce-algo=bogus"], capture_output=True, text=True)
if r.returncode != 2 or "bogus" not in r.stderr: fails.append("--reduce-algo=bogus: exit %d %s" % (r.returncode, r.stderr))
# A tiny color budget: test4x4 with 6 usable colors (9, three reserved). The 8 row/column
# allreduces of the norms graph with star trees need 24 colors without reuse; with reuse
# they fit in 6 and still match the interpreter. With 5 usable colors the column broadcast
# has no color of its own: it is serialized onto the color of the column reduce into its
# root (a warning names both; the manifest marks the color "serialized") and the plan still
# matches the interpreter. With 2 usable colors the trees are relayed through the PEs; with
# 1 the relays and broadcasts of both axes need more switch positions than one color has
# (routes a WSE router holds: docs/cycle-model.md), exit 4 (tests/scripts/colors_budget.sh
# covers the budgets below 6 in full).
fc = os.path.join(tmp, "few.target")
fbase = open(os.path.join(src, "targets", "test4x4.target")).read().replace("name = test4x4", "name = fewcolors")
for ncol, ok in [(9, True), (8, True), (5, True), (4, False)]:
    open(fc, "w").write(re.sub(r"(?m)^reserved_colors = .*$", "reserved_colors = %d,%d,%d" % (ncol - 3, ncol - 2, ncol - 1),
                               re.sub(r"(?m)^colors = .*$", "colors = %d" % ncol, fbase)))
    d = os.path.join(tmp, "few%d" % ncol)
    tag = "%d usable colors" % (ncol - 3)
    r = subprocess.run(["waferc", model, "-o", d, "--target=" + fc, "--mesh=4x4", "--reduce-algo=star", "-q"], capture_output=True, text=True)
    if not ok:
        if r.returncode != 4 or "no free color" not in r.stderr: fails.append(tag + ": exit %d %s" % (r.returncode, r.stderr[:200]))
        continue
    if r.returncode: fails.append(tag + ": exit %d %s" % (r.returncode, r.stderr[:300])); continue
    cols = json.load(open(os.path.join(d, "manifest.json")))["colors"]
    ser = [c["color"] for c in cols if c.get("serialized")]
    if len(cols) > ncol - 3: fails.append(tag + ": %d colors declared" % len(cols))
    if ncol == 9 and (ser or "serialized" in r.stderr): fails.append(tag + ": serialized without need: " + r.stderr[:200])
    if ncol == 8:
        w = r.stderr
        if not ser: fails.append(tag + ": manifest marks no color serialized")
        if "warning" not in w or "serialized on color" not in w or "along y" not in w:
            fails.append(tag + ": no warning naming the serialized collectives: " + w[:300])
    if ncol == 5 and "relayed through PEs" not in r.stderr:
        fails.append(tag + ": no relay warning: " + r.stderr[:300])
    r = subprocess.run(["waferrun", d, "-q", "--input", "x=" + os.path.join(tmp, "nx.npy"), "--output-dir", d + ".out"], capture_output=True, text=True)
    if r.returncode: fails.append(tag + ": waferrun exit %d %s" % (r.returncode, r.stderr[:300])); continue
    for name in os.listdir(ref):
        r = subprocess.run(["wafer-npycmp", os.path.join(d + ".out", name), os.path.join(ref, name), "--atol", "1e-5", "--rtol", "1e-4"], capture_output=True)
        if r.returncode: fails.append(tag + ": %s differs from the interpreter" % name)
# Route codes per PE stay within R = 2^route_code_bits: a copy of test4x4 that tells apart
# only 2 routes rejects the plan with exit 4 (no fit), naming a PE.
tr = os.path.join(tmp, "tiny_r.target")
open(tr, "w").write(open(os.path.join(src, "targets", "test4x4.target")).read()
                    .replace("name = test4x4", "name = tiny_r").replace("route_code_bits = 5", "route_code_bits = 1"))
r = subprocess.run(["waferc", model, "-o", os.path.join(tmp, "rr"), "--target=" + tr, "--mesh=4x4", "--reduce-algo=star", "-q"], capture_output=True, text=True)
if r.returncode != 4 or "route codes" not in r.stderr: fails.append("route_code_bits=1: exit %d %s" % (r.returncode, r.stderr[:300]))
# --auto-region: on a copy of test4x4 with 600 bytes of SRAM the norms graph does not fit
# one PE (exit 4); with --auto-region waferc picks a larger mesh, says so, and the plan runs
# and matches the interpreter. With 100 bytes nothing up to 6x6 fits: exit 4, a note.
ts = os.path.join(tmp, "tiny_sram.target")
base = open(os.path.join(src, "targets", "test4x4.target")).read().replace("name = test4x4", "name = tiny_sram")
open(ts, "w").write(re.sub(r"(?m)^sram_bytes = .*$", "sram_bytes = 600", base))
r = subprocess.run(["waferc", model, "-o", os.path.join(tmp, "ar0"), "--target=" + ts, "--mesh=1x1", "-q"], capture_output=True, text=True)
if r.returncode != 4: fails.append("tiny SRAM without --auto-region: exit %d" % r.returncode)
ar = os.path.join(tmp, "ar")
r = subprocess.run(["waferc", model, "-o", ar, "--target=" + ts, "--mesh=1x1", "--auto-region", "-q"], capture_output=True, text=True)
if r.returncode or "--auto-region" not in r.stderr:
    fails.append("--auto-region: exit %d %s" % (r.returncode, r.stderr[:300]))
else:
    mesh = json.load(open(os.path.join(ar, "manifest.json")))["mesh"]
    if mesh[0] * mesh[1] <= 1 or ("compiled for %dx%d" % tuple(mesh)) not in r.stderr:
        fails.append("--auto-region: mesh %s, note %s" % (mesh, r.stderr[:200]))
    r = subprocess.run(["waferrun", ar, "-q", "--input", "x=" + os.path.join(tmp, "nx.npy"), "--output-dir", ar + ".out"], capture_output=True, text=True)
    for name in os.listdir(ref):
        r = subprocess.run(["wafer-npycmp", os.path.join(ar + ".out", name), os.path.join(ref, name), "--atol", "1e-5", "--rtol", "1e-4"], capture_output=True)
        if r.returncode: fails.append("--auto-region: %s differs from the interpreter" % name)
open(ts, "w").write(re.sub(r"(?m)^sram_bytes = .*$", "sram_bytes = 100", base))
r = subprocess.run(["waferc", model, "-o", os.path.join(tmp, "ar2"), "--target=" + ts, "--mesh=1x1", "--auto-region", "-q"], capture_output=True, text=True)
if r.returncode != 4 or "no mesh" not in r.stderr: fails.append("--auto-region, nothing fits: exit %d %s" % (r.returncode, r.stderr[:200]))
for f in fails: print("FAIL:", f)
print("%d failures" % len(fails))
sys.exit(1 if fails else 0)
PY
