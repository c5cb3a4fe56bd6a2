"""Writes unskew's gather indices (ops.def; backend/ops/lower_unskew.c) for tests, from the skew
as docs/plan-format.md states it (weights' `skew`), not from the compiler's code:
  unskew_ix.py OUT.npy RING TILES W H K N OTHER_TILE
OUT is f32 [H, W n], n = bn v_k (bn = ceil(N / W) columns per PE, v_k = TILES / H K tiles per
PE): PE (x, y)'s entry j v_k + t is j TILES + a, a the virtual position along K at which its
column j holds K tile v_k y + t (column tile b = v_o x + j // OTHER_TILE, v_o = TILES / W)."""
import sys

from npy import write_values


def source(ring, a, b, L):
    """The K tile at virtual (a, b) of a pre-skewed operand: the plan format's rule."""
    if ring == "plain":
        return (a + b) % L
    pos = lambda r: r // 2 if r % 2 == 0 else L - (r + 1) // 2
    order = lambda k: 2 * k if k < (L + 1) // 2 else 2 * (L - k) - 1
    return order((pos(a) + pos(b)) % L)


def main():
    out, ring, L, W, H, K, N, ot = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
    vk, vo, bn = L // H, L // W, -(-N // W)
    vals = []
    for y in range(H):
        for x in range(W):
            for j in range(bn):
                b = vo * x + j // ot
                where = {source(ring, a, b, L): a for a in range(L)}
                vals += [j * L + where[vk * y + t] for t in range(vk)]
    write_values(out, (H, W * bn * vk), vals)


if __name__ == "__main__":
    main()
