/* waferc backend — cutting a dist.gemm's K on a W x H region (gemm_kcut.c): the lcm tiles
 * MeshGEMM and Cannon need, and the padding of host-written operands that makes them. */
#ifndef WAFERC_BACKEND_GEMM_KCUT_H
#define WAFERC_BACKEND_GEMM_KCUT_H

#include <stdint.h>

#include "waferc/ir.h"

/* MeshGEMM and Cannon on a w x h region, w != h, cut K in lcm(w, h) equal tiles on both
 * operands: 1 when the blocks allow it (w ceil(K/w) = h ceil(K/h), a multiple of the lcm;
 * always on a square region), else 0. */
int wf_gemm_rect_k_fits(int w, int h, int64_t K);

/* The op using v when v is a graph input or constant with exactly one use (the function's
 * results are a use too), else NULL; *as = the operand position. */
const wf_op *wf_gemm_only_use(const wf_func *f, wf_value v, int *as);

/* The extent K of a matmul or dist.gemm `op` on a w x h region (w != h, both > 1) is padded to
 * for MeshGEMM or Cannon when W ceil(K/W) and H ceil(K/H) do not cut K in L = lcm(w, h)
 * tiles (A's K split along x and B's along y, partition's layout; any batch dims): with both
 * operands graph inputs or constants whose one use is `op`, L ceil(K/L); with one of them,
 * the other's cut (W ceil(K/W) when B is the padded one) if it is a multiple of L. 0
 * otherwise: the default blocks, which these algorithms re-cut over the fabric
 * (wf_relayout_gemm_k). Whatever the
 * algorithm; the host-written operands get the padded blocks (wf_gemm_rect_k_pad), a
 * computed one keeps partition's, and both cut the returned K. */
int64_t wf_gemm_k_paddable(const wf_func *f, const wf_op *op, int w, int h);
/* wf_gemm_k_paddable for a dist.gemm whose algo is meshgemm or cannon, else 0: the K its
 * lowering cuts (lower_gemm_batched.c's views). */
int64_t wf_gemm_rect_k_padded(const wf_func *f, const wf_op *op, int w, int h);

/* The extent dim d of v is padded to when it is the K of a dist.gemm{algo=meshgemm|cannon}
 * (rank 2 or batched: every matrix's K) on a w x h region (w != h, both > 1) whose ceil(K/w)
 * and ceil(K/h) blocks do not cut K in lcm(w, h) tiles: L*ceil(K/L), so that A's blocks hold
 * v_x and B's v_y whole tiles (docs/gemm.md). Only for a graph input or constant whose one use
 * is that operand (the host scatters it with any padding); else 0: the default, ceil(D/p) per
 * PE (wf_gemm_k_paddable). */
int64_t wf_gemm_rect_k_pad(const wf_func *f, wf_value v, int d, int w, int h);

#endif
