"""Writes the .npy inputs of the raise lit tests (deterministic; stdlib only, no numpy).
Run from this directory: python3 gen_inputs.py"""
import math
import random
import struct


def npy(path, shape, values, dtype="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        if dtype == "|b1":
            f.write(bytes(1 if v else 0 for v in values))
        else:
            f.write(struct.pack("<%df" % len(values), *values))


def rand(shape, lo=-2.0, hi=2.0, seed=0):
    rng = random.Random(seed)
    n = math.prod(shape)
    return [rng.uniform(lo, hi) for _ in range(n)]


npy("x_2x4x8.npy", (2, 4, 8), rand((2, 4, 8), seed=1))
npy("w_8.npy", (8,), rand((8,), 0.5, 1.5, seed=2))
npy("w_1x1x8.npy", (1, 1, 8), rand((8,), 0.5, 1.5, seed=2))
npy("b_8.npy", (8,), rand((8,), -0.5, 0.5, seed=3))
npy("x_1x2x4x8.npy", (1, 2, 4, 8), rand((1, 2, 4, 8), seed=4))
# rotary tables as HF builds them: theta_i = s / 10000^(2i/D), emb = cat(freqs, freqs)
cos, sin, cos_i, sin_i = [], [], [], []
for s in range(4):
    freqs = [s / 10000 ** (2 * i / 8) for i in range(4)]
    emb = freqs + freqs
    cos += [math.cos(a) for a in emb]
    sin += [math.sin(a) for a in emb]
    inter = [f for f in freqs for _ in range(2)]  # GPT-J duplicate_interleave
    cos_i += [math.cos(a) for a in inter]
    sin_i += [math.sin(a) for a in inter]
npy("cos_4x8.npy", (1, 1, 4, 8), cos)
npy("sin_4x8.npy", (1, 1, 4, 8), sin)
npy("cosi_4x8.npy", (1, 1, 4, 8), cos_i)
npy("sini_4x8.npy", (1, 1, 4, 8), sin_i)
npy("q_1x4x4x8.npy", (1, 4, 4, 8), rand((1, 4, 4, 8), seed=5))
npy("k_1x2x4x8.npy", (1, 2, 4, 8), rand((1, 2, 4, 8), seed=6))
npy("v_1x2x4x8.npy", (1, 2, 4, 8), rand((1, 2, 4, 8), seed=7))
npy("k_1x4x4x8.npy", (1, 4, 4, 8), rand((1, 4, 4, 8), seed=8))
npy("v_1x4x4x8.npy", (1, 4, 4, 8), rand((1, 4, 4, 8), seed=9))
npy("m_1x1x4x4.npy", (1, 1, 4, 4), rand((1, 1, 4, 4), -1.0, 0.0, seed=10))
