"""Writes small f32 .npy files without numpy (tests only): npy.py OUT.npy D0[,D1] SEED SCALE.
Values come from a fixed LCG in [-scale, scale), so the same arguments give the same bytes.
npy.py OUT.npy D0[,D1] SEED i64:V writes int64 ids from the same LCG in [0, V) instead.
Several files in one run (one python start-up): npy.py OUT1 SHAPE1 SEED1 SCALE1 OUT2 ...
From python: import npy; npy.write(OUT, "D0,D1", SEED, SCALE) (the same arguments, as text), or
npy.write_values(OUT, (D0, D1), VALUES) for given values."""
import struct
import sys


def write(path, shape, seed, scale):
    shape = tuple(int(d) for d in shape.split(","))
    seed = int(seed)
    ids = int(scale[4:]) if scale.startswith("i64:") else 0
    scale = 0.0 if ids else float(scale)
    n = 1
    for d in shape:
        n *= d
    state = seed & 0xFFFFFFFF
    vals = []
    for _ in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        vals.append((state >> 8) % ids if ids else scale * ((state >> 8) / float(1 << 24) * 2.0 - 1.0))
    write_values(path, shape, vals, ids)


def write_values(path, shape, vals, ids=False):
    """Writes vals (row-major, len = the shape's product) as <f4, or <i8 when ids."""
    n = len(vals)
    shape_txt = "(%s)" % (", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header = "{'descr': '%s'," % ("<i8" if ids else "<f4") + " 'fortran_order': False, 'shape': %s, }" % shape_txt
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (n, "q" if ids else "f"), *vals))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or len(args) % 4:
        sys.exit("usage: npy.py OUT.npy D0[,D1] SEED SCALE|i64:V [OUT.npy D0[,D1] SEED SCALE ...]")
    for i in range(0, len(args), 4):
        write(*args[i:i + 4])
