#!/bin/sh
# The collective lowerings at seeded random sizes (tests/scripts/collectives_lowering.sh
# checks fixed ones): P in 2..512 and B in 1..4096, both log-uniform, through wafer-bench
# (functional mode, values checked). For every pair:
#   - star, chain, tree, two_phase, autogen reduce correctly; simulated >= Lemma 5.5's lower
#     bound (exempt, as documented: star, and autogen and the 3-PE binary tree, a star, at B = 1); |model error| within the
#     bounds docs/collectives-lowering.md documents for sizes outside the fixed sweep (chain
#     exact, star 11%, tree 16%, two-phase 20%, Auto-Gen 24%; + 2 cycles of rounding);
#   - simulated = the lowered tree's schedule (wf_coll_tree_schedule, given in the explain)
#     for chain, star and Auto-Gen, >= it for the binary tree and two-phase;
#   - auto lowers the lowest prediction of the five;
#   - Auto-Gen's prediction is within 1.4x of the lower bound (the Reduce paper's target);
#   - allreduce: chain, autogen and ring correct; ring's prediction and simulation both equal
#     the lowered ring's derived time plus its local work (as in collectives_lowering.sh).
# Star is simulated only for P*B <= 20000 (its run is P*B cycles with every PE in the
# simulation; 512 x 4096 takes minutes); above, its prediction comes from wafer-cost for
# auto's comparison. Plus a 2D case at a random square P: every algorithm and the snake,
# reduce and allreduce, values checked, reduces not below the 2D lower bound, the snake
# exactly Lemma 5.2 for P PEs.
# COLLECTIVES_RANDOM_SEED / COLLECTIVES_RANDOM_PAIRS override the seed and the pair count;
# each line printed is one pair; the last lines give the worst model error per algorithm and
# the worst Auto-Gen / lower bound ratio (simulated and predicted).
set -eu
SRC=${WAFERC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "${COLLECTIVES_RANDOM_SEED:-20261123}" "${COLLECTIVES_RANDOM_PAIRS:-8}" <<'PY'
import json, math, random, re, subprocess, sys
seed, npairs = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
fails = []
ALGOS = ["star", "chain", "tree", "two_phase", "autogen"]
# docs/collectives-lowering.md, "Accuracy": the worst |simulated - predicted| / predicted of
# the wide sweep (outside the fixed test's sizes)
TOL = {"chain": 0.0, "star": 0.11, "tree": 0.16, "two_phase": 0.20, "autogen": 0.24}
STAR_MAX = 20000
worst = {a: (0.0, None) for a in ALGOS}
worst_ratio = {"simulated": (0.0, None), "predicted": (0.0, None)}

def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fails.append("%s: exit %d %s" % (" ".join(cmd), r.returncode, r.stderr[:300]))
        return None
    return json.loads(r.stdout)

def bench(*a):
    return run(["wafer-bench", "collective", *a])

def ring_lowered(P, B):
    # The ring allreduce as lowered (wf_coll_ring_lowered, docs/collectives-lowering.md), T_R = 2,
    # 1 cycle per hop: 2(P-1) rounds of c = ceil(B/P) words + 2 T_R (the store cycle overlaps the
    # next round), 4P-7 hops on the critical path (4P-6 for P <= 3), plus the local work: two
    # rotations of B words and the zeroed padding P c - B. Derived, not fitted: exact.
    c = -(-B // P)
    return 2 * (P - 1) * (c + 4) + (4 * P - 7 if P >= 4 else 4 * P - 6) + 2 * B + (P * c - B)

def log_uniform(lo, hi):
    return max(lo, min(hi, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.5)))))))

for i in range(npairs):
    P, B = log_uniform(2, 512), log_uniform(1, 4096)
    preds, line = {}, []
    lb = None
    for algo in ALGOS:
        tag = "%s P=%d B=%d" % (algo, P, B)
        if algo == "star" and P * B > STAR_MAX:
            c = run(["wafer-cost", "reduce", "--pes=%d" % P, "--len=%d" % B, "--algo=star", "--target=wse2"])
            if c: preds[algo] = int(round(c["predicted_cycles"]))
            line.append("star (model) %s" % preds.get(algo))
            continue
        j = bench("--algo=" + algo, "--pes=%d" % P, "--len=%d" % B)
        if not j: continue
        lb = j["lower_bound_cycles"]
        if j["algo"] != algo: fails.append(tag + ": lowered " + j["algo"])
        if j["correct"] is not True: fails.append(tag + ": wrong values")
        # the lemma does not hold for a star at B = 1 (docs/collectives-lowering.md): the
        # star, an Auto-Gen tree with a star at its top, and the binary tree over 3 PEs,
        # which is the star (the same tree, the same 8 cycles; found with seed 1)
        exempt = algo == "star" or (B == 1 and (algo == "autogen" or (algo == "tree" and P == 3)))
        if j["simulated_cycles"] < lb and not exempt:
            fails.append(tag + ": simulated %d below the lower bound %d" % (j["simulated_cycles"], lb))
        err = abs(j["simulated_cycles"] - j["predicted_cycles"]) / j["predicted_cycles"]
        if err > worst[algo][0]: worst[algo] = (err, (P, B, j["predicted_cycles"], j["simulated_cycles"]))
        if err > TOL[algo] + 2.0 / j["predicted_cycles"]:
            fails.append(tag + ": model error %.3f (predicted %d, simulated %d) above %.2f" %
                         (err, j["predicted_cycles"], j["simulated_cycles"], TOL[algo]))
        # the schedule of the lowered tree (wf_coll_tree_schedule, in the explain): exact for
        # the chain, star and Auto-Gen; the binary tree and two-phase add swsets and streams
        # sharing links to it, never less
        m = re.search(r"tree schedule (\d+)", j["explain"])
        if not m:
            fails.append(tag + ": no tree schedule in the explain: " + j["explain"])
        elif algo in ("chain", "star", "autogen") and j["simulated_cycles"] != int(m.group(1)):
            fails.append(tag + ": simulated %d, the tree's schedule %s" % (j["simulated_cycles"], m.group(1)))
        elif j["simulated_cycles"] < int(m.group(1)):
            fails.append(tag + ": simulated %d below the tree's schedule %s" % (j["simulated_cycles"], m.group(1)))
        preds[algo] = j["predicted_cycles"]
        line.append("%s %d/%d" % (algo, j["simulated_cycles"], j["predicted_cycles"]))
        if algo == "autogen":
            for kind, v in (("simulated", j["simulated_cycles"]), ("predicted", j["predicted_cycles"])):
                if v / lb > worst_ratio[kind][0]: worst_ratio[kind] = (v / lb, (P, B, v, lb))
            if j["predicted_cycles"] > 1.4 * lb + 1:
                fails.append(tag + ": Auto-Gen predicts %d, %.2fx the lower bound %d (target 1.4x)" %
                             (j["predicted_cycles"], j["predicted_cycles"] / lb, lb))
    j = bench("--algo=auto", "--pes=%d" % P, "--len=%d" % B)
    if j and len(preds) == len(ALGOS):
        if j["predicted_cycles"] != min(preds.values()) or j["correct"] is not True:
            fails.append("auto P=%d B=%d: lowered %s (%d, correct %s), lowest is %d (%s)" %
                         (P, B, j["algo"], j["predicted_cycles"], j["correct"], min(preds.values()), preds))
        line.append("auto=%s" % j["algo"])
    for algo in ["chain", "autogen", "ring"]:
        j = bench("--op=allreduce", "--algo=" + algo, "--pes=%d" % P, "--len=%d" % B)
        if not j: continue
        tag = "allreduce %s P=%d B=%d" % (algo, P, B)
        if j["correct"] is not True: fails.append(tag + ": wrong values")
        if algo == "ring":
            c = -(-B // P)
            want = ring_lowered(P, B)
            if j["predicted_cycles"] != want:
                fails.append(tag + ": predicted %d, the lowered ring's formula gives %d" % (j["predicted_cycles"], want))
            if j["simulated_cycles"] != want:
                fails.append(tag + ": simulated %d, the lowered ring's formula gives %d" % (j["simulated_cycles"], want))
        line.append("allreduce-%s %d" % (algo, j["simulated_cycles"]))
    print("P=%d B=%d lb=%s: %s" % (P, B, lb, ", ".join(line)), flush=True)

# 2D at a random square P (side 2..8)
s, B = rng.randint(2, 8), log_uniform(1, 256)
line = []
for algo in ALGOS + ["snake"]:
    for op in ["reduce", "allreduce"]:
        j = bench("--dims=2", "--op=" + op, "--algo=" + algo, "--pes=%d" % (s * s), "--len=%d" % B)
        if not j: continue
        tag = "2D %s %s %dx%d B=%d" % (op, algo, s, s, B)
        if j["correct"] is not True or j["algo"] != algo: fails.append(tag + ": %s" % j)
        if op == "reduce" and algo != "star" and j["simulated_cycles"] < j["lower_bound_cycles"]:
            fails.append(tag + ": simulated %d below the lower bound %d" % (j["simulated_cycles"], j["lower_bound_cycles"]))
        if op == "reduce" and algo == "snake" and j["simulated_cycles"] != B + 6 * (s * s - 1):
            fails.append(tag + ": simulated %d, Lemma 5.2 gives %d" % (j["simulated_cycles"], B + 6 * (s * s - 1)))
        line.append("%s-%s %d/%d" % (op, algo, j["simulated_cycles"], j["predicted_cycles"]))
print("2D %dx%d B=%d: %s" % (s, s, B, ", ".join(line)))

for a in ALGOS:
    print("worst model error %s: %.3f %s" % (a, worst[a][0], "(P, B, predicted, simulated) = %s" % (worst[a][1],) if worst[a][1] else ""))
for k, (r, at) in worst_ratio.items():
    print("worst Auto-Gen %s / lower bound: %.3f (P, B, cycles, bound) = %s" % (k, r, at))
for f in fails: print("FAIL:", f)
print("%d pairs (seed %d), %d failures" % (npairs, seed, len(fails)))
sys.exit(1 if fails else 0)
PY
