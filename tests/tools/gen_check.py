"""Checks of a generation plan's run for tests/scripts/generate_plans.sh (stdlib only).

  gen_check.py occupancy PLAN OUT POLICY
      the caches waferrun --generate wrote to OUT after the last step hold, row by row, the
      counts of the cache policy (a slot holds a token when its K is not all zero)
  gen_check.py steps PLAN IREF DUMP POLICY
      DUMP (waferrun --dump-caches): the switch's caches hold the interpreter's k and v of the
      prompt (IREF: the packed graph with generate-prefill, interpreted), row y slot j holding
      token y Lb + j, the other slots zero (1e-4); after every step each row holds the count the
      host recorded and the policy's, balanced within one under shift once the prefill's short
      rows have filled; PLAN's kv_occupancy heatmap (DUMP/../heat) holds every PE's count.

The policy is computed here from the rule's text (docs/generation.md), not from
include/waferc/kvcache.h, so the check is independent of the code it checks."""
import json
import os
import struct
import sys

from gen_toy_plan import read_npy


def load(path):
    header, vals = read_npy(path)
    shape = tuple(int(t) for t in header[header.index("(") + 1:header.index(")")].split(",") if t.strip())
    return shape, vals


def generate_of(plan):
    return json.load(open(os.path.join(plan, "manifest.json")))["generate"]


def counts(g, policy, steps):
    """Each row's tokens after the prefill and `steps` appends."""
    rows, length = g["rows"], g["prompt_length"]
    lb = -(-length // rows)
    cnt = [max(0, min(lb, length - y * lb)) for y in range(rows)]
    for _ in range(steps):
        r = rows - 1
        if policy == "shift":  # the bottom-most of the least filled rows
            for y in range(rows - 1, -1, -1):
                if cnt[y] < cnt[r]:
                    r = y
        cnt[r] += 1
    return cnt


def held(g, path):
    """Tokens each row of the cache at path holds: its slots whose K is not all zero."""
    (_, c, nk), k = load(path)
    rows, cap = g["rows"], g["slots_per_row"]
    assert c == rows * cap, (c, rows, cap)
    return [sum(1 for j in range(cap) if any(k[(y * cap + j) * nk:(y * cap + j + 1) * nk])) for y in range(rows)]


def occupancy(plan, out, policy):
    g = generate_of(plan)
    got = held(g, os.path.join(out, g["caches"][0]["decode"] + ".npy"))
    want = counts(g, policy, g["max_new_tokens"] - 1)
    if got != want:
        sys.exit("occupancy per row %s, the %s policy says %s" % (got, policy, want))


def steps(plan, iref, dump, policy):
    g = generate_of(plan)
    rows, cap, length = g["rows"], g["slots_per_row"], g["prompt_length"]
    lb = -(-length // rows)
    for c in g["caches"]:
        (_, t, nk), ref = load(os.path.join(iref, c["prefill"] + ".npy"))
        (_, _, nk2), got = load(os.path.join(dump, "switch", c["decode"] + ".npy"))
        assert t == length and nk2 == nk, (t, length, nk, nk2)
        for y in range(rows):
            for j in range(cap):
                tok = y * lb + j
                row = got[(y * cap + j) * nk:(y * cap + j + 1) * nk]
                want = ref[tok * nk:(tok + 1) * nk] if j < lb and tok < length else [0.0] * nk
                err = max(abs(a - b) for a, b in zip(row, want))
                if err > 1e-4:
                    sys.exit("%s: row %d slot %d (token %d) differs from the interpreter's by %g" %
                             (c["decode"], y, j, tok, err))
    start = counts(g, policy, 0)
    short = max(start) - min(start)
    for s in range(1, g["max_new_tokens"]):
        want = counts(g, policy, s)
        _, recorded = load(os.path.join(dump, "step_%d" % s, "row_counts.npy"))
        got = held(g, os.path.join(dump, "step_%d" % s, g["caches"][0]["decode"] + ".npy"))
        if list(recorded) != want or got != want:
            sys.exit("step %d: the host says %s, the simulated cache holds %s, the policy %s" %
                     (s, list(recorded), got, want))
        if policy == "shift" and max(got) - min(got) > max(1, short):
            sys.exit("step %d: shift left the rows unbalanced: %s" % (s, got))
    final = counts(g, policy, g["max_new_tokens"] - 1)
    heat = [l.strip().split(",") for l in open(os.path.join(dump, "..", "heat", "kv_occupancy.csv"))][1:]
    width = json.load(open(os.path.join(plan, "decode", "manifest.json")))["mesh"][0]
    if len(heat) != width * rows or any(float(v) != final[int(y)] for x, y, v in heat):
        sys.exit("kv_occupancy.csv does not hold every PE's count: %s" % heat[:4])
    if open(os.path.join(dump, "..", "heat", "kv_occupancy.png"), "rb").read(8) != b"\x89PNG\r\n\x1a\n":
        sys.exit("kv_occupancy.png is not a PNG")


if __name__ == "__main__":
    if sys.argv[1] == "occupancy":
        occupancy(*sys.argv[2:5])
    else:
        steps(*sys.argv[2:6])
