/* Pre-skewed weights (docs/gemm.md, "Pre-skewed weights"). MeshGEMM and Cannon first align
 * their operands: row I of A moves along its ring until virtual PE (I, J) holds A tile
 * (I, k), column J of B until it holds B tile (k, J), k = wf_skew_source(ring, I, J, L). On a
 * mesh that takes up to L - 1 shifts (2L alignment rounds on INTERLEAVE's ring). A constant
 * needs none of them: the host writes each PE's block with the tiles the alignment would
 * have brought (the manifest's `skew`, which runtime/sim_io.c follows), and the lowering
 * leaves that operand out of its alignment. Only a constant whose one use is the operand
 * qualifies (as for the K padding, gemm_kcut.c): any other reader would see the tiles out
 * of order. */
#include "backend/gemm/gemm_preskew.h"

#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_kcut.h"
#include "ir/support/intmath.h"

int wf_gemm_preskewable(const wf_func *f, const wf_op *op, int as, int w, int h) {
  if ((op->code != WF_OP_MATMUL && op->code != WF_OP_DIST_GEMM) || op->n_operands < 2 || as < 0 || as > 1 ||
      w < 1 || h < 1 || w * h < 2)
    return 0;
  wf_value v = op->operands[as];
  int use = -1;
  if (f->values[v].kind != WF_VAL_GLOBAL || wf_gemm_only_use(f, v, &use) != op || use != as) return 0;
  const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
  int ra = ta->rank, rb = tb->rank;
  if (ra < 2 || rb < 2 || ta->layout.rank != ra || tb->layout.rank != rb) return 0;
  /* partition's layouts: the lowering's PE (x, y) holds A's rows of block y and B's columns
   * of block x, the block's K of its x (A) or y (B) */
  if (ta->layout.dims[ra - 1].split != WF_AXIS_X || tb->layout.dims[rb - 2].split != WF_AXIS_Y) return 0;
  if (h > 1 && ta->layout.dims[ra - 2].split != WF_AXIS_Y) return 0;
  if (w > 1 && tb->layout.dims[rb - 1].split != WF_AXIS_X) return 0;
  for (int d = 0; d < ra - 2; d++)
    if (ta->layout.dims[d].split != WF_AXIS_NONE) return 0;
  for (int d = 0; d < rb - 2; d++)
    if (tb->layout.dims[d].split != WF_AXIS_NONE) return 0;
  /* A K held whole on one PE line (a 1-wide region) is cut like the other operand's, its
   * last tiles zero-filled: not a permutation of whole tiles */
  if ((as == 0 ? w : h) < 2) return 0;
  if (w != h) {
    int64_t L = wf_lcm(w, h);
    if (L / w > WF_GEMM_RECT_MAX_V || L / h > WF_GEMM_RECT_MAX_V) return 0;
    /* K re-cut over the fabric (wf_relayout_gemm_k): the operand then aligns from scratch */
    if (w > 1 && h > 1 && !wf_gemm_rect_k_fits(w, h, ta->dims[ra - 1]) && !wf_gemm_k_paddable(f, op, w, h)) return 0;
  }
  return 1;
}

/* The ring of a dist.gemm's algorithm, or WF_SKEW_NONE when it does not align by shifts. */
static wf_skew_ring ring_of(const wf_func *f, const wf_op *op) {
  if (op->code != WF_OP_DIST_GEMM) return WF_SKEW_NONE;
  const char *algo = wf_op_str(f, op, "algo", "meshgemm");
  return !strcmp(algo, "meshgemm") ? WF_SKEW_INTERLEAVE : !strcmp(algo, "cannon") ? WF_SKEW_PLAIN : WF_SKEW_NONE;
}

int wf_gemm_preskewed(const wf_func *f, const wf_op *op, int w, int h) {
  if (ring_of(f, op) == WF_SKEW_NONE) return 0;
  return (wf_gemm_preskewable(f, op, 0, w, h) ? WF_PRESKEW_A : 0) |
         (wf_gemm_preskewable(f, op, 1, w, h) ? WF_PRESKEW_B : 0);
}

int wf_gemm_value_skew(const wf_func *f, wf_value v, int w, int h, wf_gemm_skew *out) {
  int as = -1;
  const wf_op *op = wf_gemm_only_use(f, v, &as);
  if (!op || as < 0 || as > 1 || !(wf_gemm_preskewed(f, op, w, h) >> as & 1)) return 0;
  const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
  int ra = ta->rank, rb = tb->rank;
  int64_t L = wf_lcm(w, h), vx = L / w, vy = L / h, K = ta->dims[ra - 1];
  /* the blocks lower_gemm_rect.c (and on a square region lower_gemm_shift.c) cut in tiles:
   * K padded for the shifts when the host pads it (wf_gemm_rect_k_padded) */
  int64_t kp = wf_gemm_rect_k_padded(f, op, w, h);
  int64_t ka = kp ? kp / w : (K + w - 1) / w, kb = kp ? kp / h : (K + h - 1) / h;
  int64_t m = (ta->dims[ra - 2] + h - 1) / h, n = (tb->dims[rb - 1] + w - 1) / w;
  memset(out, 0, sizeof *out);
  out->ring = ring_of(f, op);
  out->tiles = L;
  out->k_tile = w == 1 ? kb : ka / vx;
  if (as == 0) {
    out->k_dim = ra - 1;
    out->other_dim = ra - 2;
    out->other_tile = (m + vy - 1) / vy;
  } else {
    out->k_dim = rb - 2;
    out->other_dim = rb - 1;
    out->other_tile = (n + vx - 1) / vx;
  }
  return 1;
}
