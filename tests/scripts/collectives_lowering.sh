#!/bin/sh
# Collective and MeshGEMV lowerings (backend/lower_collective*.c, lower_gemv.c) through
# wafer-bench: every algorithm reduces correctly (values checked in functional mode), the
# simulation never beats the Lemma 5.5 lower bound, stays within the documented tolerance
# of the model (docs/collectives-lowering.md), and `auto` picks the lowest prediction.
# MeshGEMV's result is checked against y = x.W computed here.
set -eu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SRC=${WAFERC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$T" "$SRC" <<'PY'
import json, os, subprocess, sys
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
# tolerance: the model's documented gaps (docs/cycle-model.md): star +1, tree and two-phase
# bounded by the rounds' distance, autogen trees mix both; 35% covers the worst case seen
# at these sizes, chain and broadcast must be exact.
TOL = {"chain": 0.0, "star": 0.01, "tree": 0.35, "two_phase": 0.35, "autogen": 0.35}
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
for how in ["ktree", "pipeline"]:
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
for f in fails: print("FAIL:", f)
print("%d failures" % len(fails))
sys.exit(1 if fails else 0)
PY
