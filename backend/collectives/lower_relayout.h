/* waferc backend — block relayouts over the fabric: moving a matrix held in one block
 * distribution over the W x H region to another (backend/collectives/lower_relayout.c, docs/partition.md
 * "Transpose over the fabric"). */
#ifndef WAFERC_BACKEND_LOWER_RELAYOUT_H
#define WAFERC_BACKEND_LOWER_RELAYOUT_H

#include "backend/resources/lower.h"

/* X [rows, cols] {rows_y, cols_x} in blocks of rb x cb (PE (x, y) holds X[y rb .., x cb ..])
 * becomes Xᵀ [cols, rows] {cols_y, rows_x} in blocks of cb2 x rb2 (PE (x, y) holds
 * Xᵀ[y cb2 .., x rb2 ..]). One matrix: `src_off` / `dst_off` are its word offsets in the
 * symbols (a batch is relaid out matrix by matrix). Needs H rb >= rows, W cb >= cols,
 * H cb2 >= cols and W rb2 >= rows. */
typedef struct wf_relayout_tr {
  int src, dst;             /* symbols */
  int64_t src_off, dst_off; /* words */
  int64_t rows, cols;       /* X's real extents; past them: padding */
  int64_t rb, cb;           /* X's block */
  int64_t cb2, rb2;         /* Xᵀ's block */
} wf_relayout_tr;

/* Emits the relayout on any W x H region (square included) and adds its predicted cycles to
 * *cycles. Xᵀ's padding: its rows past `cols` are zeroed, its columns past `rows` carry X's
 * row padding (then zeros), so zero padding stays zero (partition_pad.c). Returns 0 or
 * WF_EXIT_NOFIT (no color left; reported). */
int wf_relayout_transpose(wf_lower *L, const wf_relayout_tr *t, wf_loc loc, int64_t *cycles);

/* An all-gather of one dim along one mesh axis, in index order: the blocks are
 * [outer][b][inner] (the dim's b indices between the dims before it and those after it) and
 * block j of the line (PE j along `axis`) lands in every PE's panel at
 * panel_off + o prow + (j - j0) b inner for each of its outer rows o, so a panel row holds the
 * dim's indices [j0 b, j1 b) in order (the blocks' padding included). Only blocks j0 .. j1-1
 * are gathered (a slice needs only those it reads). Round j: PE j multicasts its block on the
 * axis' flooding broadcast color. The transpose's phase 1 is one (outer = 1), slice, split and
 * concat's relayouts (backend/ops/lower_slice.c) are others. Adds its predicted cycles to
 * *cycles; returns 0 or WF_EXIT_NOFIT (no color left, or blocks past a PE's addressing;
 * reported). */
typedef struct wf_relayout_gather {
  int axis;                   /* WF_AXIS_X or WF_AXIS_Y */
  int src, panel;             /* symbols */
  int64_t src_off, panel_off; /* words */
  int64_t outer, inner, b;    /* the block [outer][b][inner] */
  int64_t prow;               /* words between the panel's rows (>= (j1 - j0) b inner) */
  int j0, j1;                 /* the blocks gathered */
} wf_relayout_gather;
int wf_relayout_gather_axis(wf_lower *L, const wf_relayout_gather *g, wf_loc loc, int64_t *cycles);

/* One dim of a block re-cut along one mesh axis: the block is [outer][b][inner] with the
 * dim's `len` real indices cut over the axis' PEs in blocks of b_src (src) and b_dst (dst),
 * the other dims unchanged (A's K over x, b = K's block: outer = rows, inner = 1; B's K over
 * y: outer = 1, inner = columns), b_dst >= b_src (K' >= K, both cut over the same PEs).
 * dst's indices past len are zeroed. Used to pad a GEMM
 * operand's K to lcm tiles on the fabric (lower_gemm_rect.c). Adds its predicted cycles to
 * *cycles; returns 0 or WF_EXIT_NOFIT (no color left; reported). */
typedef struct wf_relayout_reblock {
  int axis;                 /* WF_AXIS_X or WF_AXIS_Y */
  int src, dst;             /* symbols */
  int64_t outer, inner, len;
  int64_t b_src, b_dst;
} wf_relayout_reblock;
int wf_relayout_reblock_axis(wf_lower *L, const wf_relayout_reblock *r, wf_loc loc, int64_t *cycles);

/* MeshGEMM / Cannon on W x H (lower_gemm_rect.c) when A's K blocks over x (*ka) and B's
 * over y (*kb) do not cut in `lcm` tiles because an operand is computed on the mesh (it keeps
 * partition's ⌈K/p⌉): re-cuts them to K' = lcm·⌈K/lcm⌉ in scratch symbols, returned in *sa
 * and *sb (-1 where the operand's own block already fits), and sets *ka = K'/W, *kb = K'/H.
 * Adds the predicted cycles to *cycles; returns 0 or a WF_EXIT_* code (reported). */
int wf_relayout_gemm_k(wf_lower *L, const wf_op *op, int lcm, int64_t *ka, int64_t *kb, int *sa, int *sb,
                       int64_t *cycles);
/* The cycles wf_relayout_gemm_k predicts for an m x K by K x n product on a w x h region
 * whose blocks hold ka columns of A and kb rows of B (0 when both already cut K in lcm
 * tiles): what the chooser (gemm_choose.c) adds to MeshGEMM's and Cannon's predictions. */
int64_t wf_relayout_gemm_k_cost(const wf_target *t, int w, int h, int64_t m, int64_t n, int64_t K, int64_t ka,
                                int64_t kb);

#endif
