/* waferc — the skewed (pre-aligned) block order of MeshGEMM and Cannon operands, shared by the
 * compiler, which decides which weights the host writes so (backend/gemm/gemm_preskew.c), and
 * the runtime, which scatters them so (runtime/sim_io.c). It is part of the plan format
 * (docs/plan-format.md, weights' `skew`), so it lives below both.
 *
 * The shifts run over a ring of L positions (L = lcm(W, H) virtual positions; L = N on an
 * N x N region). Ring "plain" (Cannon) passes a tile from position c to c - 1, "interleave"
 * (MeshGEMM, INTERLEAVE's two-hop ring) from c to the next position of the order 0, 2, 4, ...,
 * then the odd positions back down. After the alignment, virtual PE (row I, column J) holds
 * A tile (I, k) and B tile (k, J) with k = wf_skew_source(ring, I, J, L): the K tile a
 * pre-skewed operand holds at (I, J) from the start.
 *
 *   int64_t k = wf_skew_source(WF_SKEW_INTERLEAVE, 3, 1, 5); // order[(3 + 4) % 5] = 4
 */
#ifndef WAFERC_SUPPORT_GEMM_SKEW_H
#define WAFERC_SUPPORT_GEMM_SKEW_H

#include <stdint.h>

typedef enum wf_skew_ring { WF_SKEW_NONE, WF_SKEW_PLAIN, WF_SKEW_INTERLEAVE } wf_skew_ring;

/* How a pre-skewed weight's blocks are ordered (the manifest's `skew`, docs/plan-format.md):
 * dim k_dim (K) and dim other_dim (M for A, N for B) are cut, inside each PE's block, in tiles
 * of k_tile and other_tile; tile position a along K and b along the other dim, numbered over
 * the `tiles` virtual positions of the region, hold K tile wf_skew_source(ring, a, b, tiles). */
typedef struct wf_gemm_skew {
  wf_skew_ring ring;
  int k_dim, other_dim;
  int64_t tiles, k_tile, other_tile;
} wf_gemm_skew;

/* INTERLEAVE's ring position of line index r (0 <= r < L): r/2 for even r, L - (r+1)/2 for odd
 * r (the closed form of wf_interleave_order's inverse). */
static inline int64_t wf_skew_interleave_pos(int64_t r, int64_t L) { return r % 2 == 0 ? r / 2 : L - (r + 1) / 2; }
/* Its order: the line index at ring position k. */
static inline int64_t wf_skew_interleave_order(int64_t k, int64_t L) { return k < (L + 1) / 2 ? 2 * k : 2 * (L - k) - 1; }

/* The K tile at virtual (row i, column j) after the alignment: order[(pos(i) + pos(j)) mod L];
 * on the plain ring (pos(c) = -c mod L) that is (i + j) mod L. */
static inline int64_t wf_skew_source(wf_skew_ring ring, int64_t i, int64_t j, int64_t L) {
  if (ring == WF_SKEW_PLAIN) return (i + j) % L;
  return wf_skew_interleave_order((wf_skew_interleave_pos(i, L) + wf_skew_interleave_pos(j, L)) % L, L);
}

#endif
