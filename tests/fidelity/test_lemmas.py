#!/usr/bin/env python3
"""The simulator against the Reduce paper's lemmas (ctest label `fidelity`).

For each pattern, P (PEs) and B (wavelets per PE) are swept, and T_R where it matters. Each
plan is generated (collectives.py), run by `waferrun` in functional mode (the reduced or
broadcast values are checked) and in timing mode (the same cycles are required), and its
simulated cycles compared with the paper's closed form:

  exact            message (T_MESSAGE), flooding broadcast (Lemma 4.1), chain (Lemma 5.2),
                   2D broadcast (Lemma 7.1)
  stated gaps      star: +1 (the lemma's pipeline equality, and Lemma 5.1's bound when
                   contention dominates, leave out the one hop between the root and its
                   nearest sender before the pipeline starts);
                   tree: 0 <= sim - lemma <= P-1 (rounds depend on each other, so each
                   round's distance adds up; the lemma overlaps it with contention);
                   two-phase: -2 <= sim - lemma <= min(P, 2B/sqrt(P)) (phase 2 starts
                   after phase 1 ends; the lemma overlaps them);
                   X-Y reduce, 2D allreduce: -1 per phase boundary (the next phase starts
                   in the cycle the previous one stores its last element).
The gaps are derived in docs/cycle-model.md; where the gap is a range, the simulated value
is also checked against the closed form the cycle model implies for the pattern.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collectives as C  # noqa: E402

failures = 0
checks = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def run(plan, W, H, B, mode, tmp, out=None):
    inp = os.path.join(tmp, "in.npy")
    C.write_npy(inp, [H, W * B], C.input_values(W, H, B))
    rep = os.path.join(tmp, "report_%s.json" % mode)
    cmd = ["waferrun", plan, "--input", "a=" + inp, "--report", rep, "-q", "--mode=" + mode]
    if out:
        cmd += ["--output-dir", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s: waferrun exit %d: %s" % (plan, r.returncode, r.stderr.strip()[:400]))
        return None
    with open(rep) as f:
        return json.load(f)["cycles"]["total"]


def expected_values(pattern, W, H, B):
    """What PE (x, y) holds in $a after the pattern, for the PEs the pattern defines."""
    a = C.input_values(W, H, B)
    blk = lambda x, y: a[(y * W + x) * B:(y * W + x + 1) * B]  # noqa: E731
    total = [sum(a[(p * B) + i] for p in range(W * H)) for i in range(B)]
    if pattern == "message":
        return {(0, 0): blk(W - 1, 0)}
    if pattern == "bcast":
        return {(x, 0): blk(W - 1, 0) for x in range(W)}
    if pattern == "bcast2d":
        return {(x, y): blk(0, 0) for x in range(W) for y in range(H)}
    if pattern == "allreduce2d":
        return {(x, y): total for x in range(W) for y in range(H)}
    return {(0, 0): total}


def check(pattern, W, H, B, T_R):
    global checks
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "plan")
        C.write_plan(pattern, W, H, B, T_R, plan)
        out = os.path.join(tmp, "out")
        sim = run(plan, W, H, B, "functional", tmp, out)
        if sim is None:
            return
        timing = run(plan, W, H, B, "timing", tmp)
        checks += 1
        tag = "%s W=%d H=%d B=%d T_R=%d" % (pattern, W, H, B, T_R)
        if timing != sim:
            fail("%s: timing mode %s cycles, functional %s" % (tag, timing, sim))
        got = C.read_npy(os.path.join(out, "b.npy"))
        for (x, y), want in expected_values(pattern, W, H, B).items():
            have = [got[y * W * B + x * B + i] for i in range(B)]
            if have != want:
                fail("%s: PE (%d,%d) holds %s..., want %s..." % (tag, x, y, have[:4], want[:4]))
                break
        lem = C.lemma(pattern, W, H, B, T_R)
        P = W * H
        ok, why = True, ""
        if pattern in ("message", "bcast", "chain", "bcast2d"):
            ok, why = sim == lem, "exact"
        elif pattern == "star":
            bound = max(B * (P - 1), P / 2 * B + P - 1) + 2 * T_R + 1
            ok, why = sim == lem + 1 and sim <= bound + 1, "lemma + 1, <= Lemma 5.1 bound %g + 1" % bound
        elif pattern == "tree":
            L = int(math.log2(P))
            model = L * (B + 2 * T_R + 1) + P - 1
            ok = sim == model and 0 <= sim - lem <= P - 1
            why = "0 <= sim - lemma <= P-1, model %d" % model
        elif pattern == "two_phase":
            S = math.isqrt(P)
            model = 2 * B + P - 2 + (2 * S - 2) * (2 * T_R + 1)
            ok = sim == model and -2 <= sim - lem <= min(P, 2 * B / S)
            why = "-2 <= sim - lemma <= min(P, 2B/S), model %d" % model
        elif pattern in ("xy_reduce", "allreduce2d"):
            # one cycle per boundary between phases: x chain -> y chain -> broadcast
            k = int(W > 1 and H > 1) + int(pattern == "allreduce2d")
            ok, why = sim == lem - k, "lemma - %d" % k
        line = "%-40s sim %7d  lemma %7d  (%s)" % (tag, sim, lem, why)
        print(("ok   " if ok else "FAIL ") + line)
        if not ok:
            fail(line)


def main():
    for T_R in (2, 3):
        for P in (2, 3, 7, 16, 33):
            for B in (1, 5, 64, 300):
                check("message", P, 1, B, T_R)
                check("bcast", P, 1, B, T_R)
                check("chain", P, 1, B, T_R)
    for P in (2, 5, 16, 31):
        for B in (1, 8, 100):
            check("star", P, 1, B, 2)
    for T_R in (2, 4):
        for P in (2, 4, 8, 32, 64):
            for B in (1, 16, 256):
                check("tree", P, 1, B, T_R)
    for P in (4, 9, 16, 49, 64):
        for B in (1, 12, 64, 512):
            check("two_phase", P, 1, B, 2)
    for (W, H) in ((1, 2), (2, 2), (5, 3), (8, 8), (16, 4), (3, 17)):
        for B in (1, 32, 200):
            check("bcast2d", W, H, B, 2)
            check("xy_reduce", W, H, B, 2)
            check("allreduce2d", W, H, B, 2)
    check("bcast2d", 9, 6, 40, 3)
    check("xy_reduce", 9, 6, 40, 3)
    print("%d plans checked, %d failure(s)" % (checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
