"""Reads waferrun's heatmap PNGs (8-bit RGB) without third-party modules; used by the e2e scripts.

read_png(path) -> (width, height, rows), rows[y] a bytes object of 3 * width RGB values; checks
the signature, every chunk's CRC and the pixel data's size, and undoes the row filters.
colormap(t) -> (r, g, b): the heatmap's colour for t in 0..1 (runtime/heatmap.c, clipped).
"""
import struct
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path + ": not a PNG"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, path + ": bad CRC in " + kind.decode()
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, path + ": expected 8-bit RGB"
            size = (w, h)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h = size
    raw = zlib.decompress(idat)
    stride = 3 * w
    assert len(raw) == h * (1 + stride), path + ": pixel data does not match IHDR"
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (1 + stride)], bytearray(raw[y * (1 + stride) + 1:(y + 1) * (1 + stride)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else:
                assert f == 0, path + ": bad filter type %d" % f
        rows.append(bytes(line))
        prev = line
    return w, h, rows


STOPS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]


def colormap(t):
    t = 0.0 if not t > 0 else 1.0 if t > 1 else t
    f = t * 4
    i = min(int(f), 3)
    f -= i
    return tuple(int(STOPS[i][k] + (STOPS[i + 1][k] - STOPS[i][k]) * f + 0.5) for k in range(3))


def colours(rows):
    """Every RGB triple in the image, with its pixel count."""
    seen = {}
    for r in rows:
        for i in range(0, len(r), 3):
            c = (r[i], r[i + 1], r[i + 2])
            seen[c] = seen.get(c, 0) + 1
    return seen
