/* waferc backend — pre-skewed weights (gemm_preskew.c): the MeshGEMM and Cannon operands the
 * host writes into SRAM already aligned, so that their alignment (skew) costs nothing on the
 * mesh. docs/gemm.md, "Pre-skewed weights"; the block order is ir/support/gemm_skew.h's.
 *
 *   int ps = wf_gemm_preskewed(f, op, 8, 8); // 2: B (a weight) is written aligned
 */
#ifndef WAFERC_BACKEND_GEMM_PRESKEW_H
#define WAFERC_BACKEND_GEMM_PRESKEW_H

#include <stdint.h>

#include "ir/support/gemm_skew.h"
#include "waferc/ir.h"

enum { WF_PRESKEW_A = 1, WF_PRESKEW_B = 2 };

/* 1 when operand `as` (0: A, 1: B) of `op` (a matmul or dist.gemm) on a w x h region can be
 * written by the host in the aligned block order of MeshGEMM and Cannon, whatever the
 * algorithm: a constant of the module whose one use is that operand, in partition's layouts
 * (A {.., M_y, K_x}, B {.., K_y, N_x}, batch dims whole) with its K split over more than one
 * PE, and on a W x H region a K that the blocks cut in lcm(W, H) tiles (with the host's
 * padding, wf_gemm_k_paddable) and at most WF_GEMM_RECT_MAX_V virtual positions per PE. */
int wf_gemm_preskewable(const wf_func *f, const wf_op *op, int as, int w, int h);
/* The operands (WF_PRESKEW_A | WF_PRESKEW_B) of a dist.gemm{algo=meshgemm|cannon} that the
 * host writes pre-skewed: the lowering skips their alignment, the cost model charges none. 0
 * for any other op. */
int wf_gemm_preskewed(const wf_func *f, const wf_op *op, int w, int h);

/* 1 and *out when v is a weight the host writes pre-skewed (its one use is a dist.gemm
 * operand wf_gemm_preskewed names), else 0. */
int wf_gemm_value_skew(const wf_func *f, wf_value v, int w, int h, wf_gemm_skew *out);

#endif
