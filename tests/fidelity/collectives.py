#!/usr/bin/env python3
"""Plans for the Reduce paper's communication patterns (Luczynski et al., "Near-Optimal
Wafer-Scale Reduce", §4, §5, §7), generated for any P and B, and the paper's closed forms.

  collectives.py gen PATTERN W H B T_R OUTDIR   write a plan (manifest.json, programs/main.wpe)
  collectives.py input W H B FILE.npy           the input every pattern reads (a = f32[H, W*B])

Every PE holds B values at $a (input "a", output "b" on the same symbol). The patterns
follow the paper's implementations (§8.2): routes change through switch positions, chains
alternate two colors so no router has to tell RAMP from EAST traffic on one color, and the
root is the leftmost PE (row) or the top-left PE (grid). Used by fidelity.py (the `fidelity`
ctest) and bench/sim_scaling.sh.
"""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from plan_seal import write_sealed  # noqa: E402

PATTERNS = ["message", "bcast", "star", "chain", "tree", "two_phase", "bcast2d", "xy_reduce",
            "allreduce2d"]


def target(W, H, T_R):
    return {"name": "fidelity", "fabric": [max(W, 1), max(H, 1)], "sram_bytes": 49152,
            "sram_banks": 8, "clock_hz": 8.5e8, "fmac_per_cycle": 1, "fp16_simd": 4,
            "wavelet_bits": 32, "hop_cycles": 1, "ramp_cycles": T_R, "colors": 24,
            "reserved_colors": [21, 22, 23], "switch_positions": 4, "route_code_bits": 5,
            "queue_depth": 8, "exp_cycles": 8, "div_cycles": 8}


# ---- programs ------------------------------------------------------------------------------
# Each returns (routes, code): lists of .wpe lines. Guards: x, y relative to the region.

def chain_row(B, last, lo=0, first_send=True):
    """Chain reduce along a row segment [lo, last] to PE lo, colors c0/c1 by x parity:
    PE x sends on c(x%2) to W and receives on c((x+1)%2) from E (Lemma 5.2)."""
    routes = ["[x%2==0] .route c0 RAMP -> W", "[x%2==1] .route c0 E -> RAMP",
              "[x%2==1] .route c1 RAMP -> W", "[x%2==0] .route c1 E -> RAMP"]
    code = [f"[x=={last}, x%2==0] send c0 $a {B}", f"[x=={last}, x%2==1] send c1 $a {B}",
            f"[x>{lo}, x<{last}, x%2==0] addsend c1 c0 $a {B}",
            f"[x>{lo}, x<{last}, x%2==1] addsend c0 c1 $a {B}",
            f"[x=={lo}, x%2==0] recvadd c1 $a {B}", f"[x=={lo}, x%2==1] recvadd c0 $a {B}"]
    return routes, code


def program(pattern, W, H, B):
    colors = ["c0 data"]
    if pattern == "message":  # rightmost -> leftmost (§4.1)
        routes = [f"[x=={W-1}] .route c0 RAMP -> W", f"[x>0, x<{W-1}] .route c0 E -> W",
                  "[x==0] .route c0 E -> RAMP"]
        code = [f"[x=={W-1}] send c0 $a {B}", f"[x==0] recv c0 $a {B}"]
    elif pattern == "bcast":  # flooding from the rightmost PE, multicast at every router (§4.2)
        routes = [f"[x=={W-1}] .route c0 RAMP -> W", f"[x<{W-1}] .route c0 E -> W RAMP"]
        code = [f"[x=={W-1}] send c0 $a {B}", f"[x<{W-1}] recv c0 $a {B}"]
    elif pattern == "star":  # every PE sends to the root (§5.1); its last wavelet switches
        # its router from sending its own vector to forwarding its east neighbours'.
        routes = ["[x>0] .route c0 RAMP -> W", "[x>0] .route c0 p1 E -> W", "[x==0] .route c0 E -> RAMP"]
        code = [f"[x>0] sendadv c0 $a {B}", f"[x==0] loop k 1 {W}", f"recvadd c0 $a {B}", "endloop"]
    elif pattern == "chain":  # §5.2
        routes, code = chain_row(B, W - 1)
        colors = ["c0 chain-even", "c1 chain-odd"]
    elif pattern == "tree":  # binary tree (§5.3), P a power of two. A PE receives in rounds
        # 1..tz(x), then points its router west (switch write) and sends; its last wavelet
        # switches the router to forwarding from the east.
        L = int(math.log2(W))
        assert 1 << L == W, "tree: P must be a power of two"
        routes = ["[x%2==1] .route c0 RAMP -> W", "[x%2==1] .route c0 p1 E -> W",
                  "[x%2==0] .route c0 E -> RAMP", "[x%2==0, x>0] .route c0 p1 RAMP -> W",
                  "[x%2==0, x>0] .route c0 p2 E -> W"]
        code = []
        for k in range(1, L + 1):
            code.append(f"[x%{1 << k}==0, x+{1 << (k - 1)}<{W}] recvadd c0 $a {B}")
        code.append("[x>0, x%2==0] swset c0 1")
        for k in range(1, L + 1):
            code.append(f"[x%{1 << k}=={1 << (k - 1)}] sendadv c0 $a {B}")
    elif pattern == "two_phase":  # §5.4, P = S^2: chains in groups of S, then over leaders
        S = int(math.isqrt(W))
        assert S * S == W and S >= 2, "two_phase: P must be a square >= 4"
        colors = ["c0 phase1-even", "c1 phase1-odd", "c2 phase2-even-group",
                  "c3 phase2-odd-group"]
        routes = ["[x%2==0] .route c0 RAMP -> W", "[x%2==1] .route c0 E -> RAMP",
                  "[x%2==1] .route c1 RAMP -> W", "[x%2==0] .route c1 E -> RAMP",
                  f"[x%{S}>0] .route c2 E -> W", f"[x%{S}>0] .route c3 E -> W",
                  f"[x%{S}==0, x%{2*S}<{S}] .route c2 RAMP -> W",
                  f"[x%{S}==0, x%{2*S}>={S}] .route c2 E -> RAMP",
                  f"[x%{S}==0, x%{2*S}>={S}] .route c3 RAMP -> W",
                  f"[x%{S}==0, x%{2*S}<{S}] .route c3 E -> RAMP"]
        # phase 1: group-relative chain; x%S == S-1 sends, 0 < x%S < S-1 add and pass on
        code = [f"[x%{S}=={S-1}, x%2==0] send c0 $a {B}", f"[x%{S}=={S-1}, x%2==1] send c1 $a {B}",
                f"[x%{S}>0, x%{S}<{S-1}, x%2==0] addsend c1 c0 $a {B}",
                f"[x%{S}>0, x%{S}<{S-1}, x%2==1] addsend c0 c1 $a {B}",
                f"[x%{S}==0, x%2==0] recvadd c1 $a {B}", f"[x%{S}==0, x%2==1] recvadd c0 $a {B}",
                # phase 2 over the leaders x = g*S; group g sends on c2 (g even) or c3 (g odd)
                f"[x=={W-S}, x%{2*S}<{S}] send c2 $a {B}", f"[x=={W-S}, x%{2*S}>={S}] send c3 $a {B}",
                f"[x%{S}==0, x>0, x<{W-S}, x%{2*S}<{S}] addsend c3 c2 $a {B}",
                f"[x%{S}==0, x>0, x<{W-S}, x%{2*S}>={S}] addsend c2 c3 $a {B}",
                f"[x==0] recvadd c3 $a {B}"]
    elif pattern == "bcast2d":  # §7.1 from (0,0): along row 0, multicast down every column
        routes = ["[x==0, y==0] .route c0 RAMP -> E S", "[y==0, x>0] .route c0 W -> E S RAMP",
                  "[y>0] .route c0 N -> S RAMP"]
        code = [f"[x==0, y==0] send c0 $a {B}", f"[y==0, x>0] recv c0 $a {B}", f"[y>0] recv c0 $a {B}"]
    elif pattern in ("xy_reduce", "allreduce2d"):  # §7.2: chains along x, then along column 0
        colors = ["c0 x-even", "c1 x-odd", "c2 y-even", "c3 y-odd"]
        routes, code = chain_row(B, W - 1) if W > 1 else ([], [])
        routes += ["[x==0, y%2==0] .route c2 RAMP -> N", "[x==0, y%2==1] .route c2 S -> RAMP",
                   "[x==0, y%2==1] .route c3 RAMP -> N", "[x==0, y%2==0] .route c3 S -> RAMP"]
        if H > 1:
            code += [f"[x==0, y=={H-1}, y%2==0] send c2 $a {B}",
                     f"[x==0, y=={H-1}, y%2==1] send c3 $a {B}",
                     f"[x==0, y>0, y<{H-1}, y%2==0] addsend c3 c2 $a {B}",
                     f"[x==0, y>0, y<{H-1}, y%2==1] addsend c2 c3 $a {B}",
                     f"[x==0, y==0] recvadd c3 $a {B}"]
        if pattern == "allreduce2d":  # then the 2D broadcast of the result (§7.4)
            colors.append("c4 broadcast")
            routes += ["[x==0, y==0] .route c4 RAMP -> E S", "[y==0, x>0] .route c4 W -> E S RAMP",
                       "[y>0] .route c4 N -> S RAMP"]
            code += [f"[x==0, y==0] send c4 $a {B}", f"[y==0, x>0] recv c4 $a {B}",
                     f"[y>0] recv c4 $a {B}"]
    else:
        raise SystemExit(f"unknown pattern {pattern}; one of {', '.join(PATTERNS)}")
    return colors, routes, code


def write_plan(pattern, W, H, B, T_R, out):
    colors, routes, code = program(pattern, W, H, B)
    os.makedirs(os.path.join(out, "programs"), exist_ok=True)
    lines = ["# generated by tests/fidelity/collectives.py: " + f"{pattern} W={W} H={H} B={B}",
             ".format 2", ".class main", f".sym $a 0 {4 * B}"]
    lines += [".color " + c for c in colors]
    lines += routes
    lines += [".code", "op 0"] + code
    with open(os.path.join(out, "programs", "main.wpe"), "w") as f:
        f.write("\n".join(lines) + "\n")
    used = sorted({int(c.split()[0][1:]) for c in colors})
    tensor = {"symbol": "$a", "dtype": "f32", "shape": [H, W * B], "split": ["y", "x"],
              "region": "mesh", "layout": "{H_y, WB_x}"}
    man = {"format_version": 1, "compiler": {"name": "collectives.py", "version": "1", "flags": ""},
           "function": pattern, "target": target(W, H, T_R), "mesh": [W, H],
           "regions": [{"name": "mesh", "rect": [0, 0, W, H],
                        "classes": [{"name": "main", "rect": [0, 0, W, H],
                                     "program": "programs/main.wpe"}]}],
           "colors": [{"color": c, "purpose": pattern} for c in used],
           "weights": {"file": "weights.bin", "bytes": 0, "tensors": []},
           "inputs": [dict(name="a", **tensor)], "outputs": [dict(name="b", **tensor)],
           "ops": [{"index": 0, "op": pattern, "result": "%b", "loc": "", "lowering": pattern,
                    "predicted_cycles": max(0, lemma(pattern, W, H, B, T_R))}],
           "predicted_cycles": max(0, lemma(pattern, W, H, B, T_R))}
    write_sealed(out, man)


# ---- the paper's closed forms ----------------------------------------------------------------

def lemma(pattern, W, H, B, T_R):
    """The paper's prediction (ideal hardware, T_R = ramp latency, 1 cycle per hop)."""
    P = W * H
    if pattern in ("message", "bcast"):  # §4.1, Lemma 4.1
        return B + P + 2 * T_R
    if pattern == "star":  # Lemma 5.1, the refined equality the paper derives for a pipeline
        return B * (P - 1) + 2 * T_R + 1
    if pattern == "chain":  # Lemma 5.2 (a reduce over one PE costs nothing)
        if P == 1:
            return 0
        return B + (2 * T_R + 2) * (P - 1)
    if pattern == "tree":  # Lemma 5.3
        L = math.log2(P)
        return math.ceil(max(B * L, B * P / (2 * (P - 1)) * L + P - 1) + (2 * T_R + 1) * L)
    if pattern == "two_phase":  # Lemma 5.4 (an upper bound in the paper)
        s = math.sqrt(P)
        return math.ceil(max(2 * B, 2 * B - 2 * B / s + P) + (2 * s - 2) * (2 * T_R + 1))
    if pattern == "bcast2d":  # Lemma 7.1 with M x N = H x W
        return B + H + W - 2 + 2 * T_R + 1
    if pattern == "xy_reduce":  # §7.2: T_REDUCE_X + T_REDUCE_Y with chains
        return lemma("chain", W, 1, B, T_R) + lemma("chain", H, 1, B, T_R)
    if pattern == "allreduce2d":  # §7.4: 2D reduce + 2D broadcast
        return lemma("xy_reduce", W, H, B, T_R) + lemma("bcast2d", W, H, B, T_R)
    raise ValueError(pattern)


# ---- .npy without numpy ----------------------------------------------------------------------

def input_values(W, H, B):
    """Small integers, so every sum is exact in f32 whatever the order."""
    return [float((x + 2 * y + i) % 7 + 1) for y in range(H) for x in range(W) for i in range(B)]


def write_npy(path, shape, values):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<H", data[8:10])[0]
    body = data[10 + n:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 7 and a[0] == "gen":
        write_plan(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6])
    elif len(a) == 5 and a[0] == "input":
        W, H, B = int(a[1]), int(a[2]), int(a[3])
        write_npy(a[4], [H, W * B], input_values(W, H, B))
    else:
        sys.exit(__doc__)
