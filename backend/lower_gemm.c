/* dist.gemm: dispatch on the algo attribute (docs/gemm.md). */
#include <string.h>

#include "backend/gemm_choose.h"
#include "backend/lower_gemm.h"
#include "waferc/diag.h"

int wf_lower_gemm_matrix(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const char *name = wf_op_str(L->f, op, "algo", "meshgemm");
  wf_gemm_algo a;
  if (wf_gemm_algo_parse(name, &a)) {
    wf_error(op->loc, "dist.gemm: unknown algo '%s' (expected meshgemm, cannon, summa or allgather)", name);
    return WF_EXIT_INPUT;
  }
  /* Every algorithm takes a W x H region: meshgemm and cannon through the lcm virtual grid
   * (lower_gemm_rect.c, which reports the K sizes it cannot cut in L tiles). */
  switch (a) {
    case WF_GEMM_MESHGEMM: return wf_lower_gemm_shift(L, op, out, &wf_ring_interleave, a);
    case WF_GEMM_CANNON: return wf_lower_gemm_shift(L, op, out, &wf_ring_plain, a);
    case WF_GEMM_SUMMA: return wf_lower_matmul(L, op, out);
    case WF_GEMM_ALLGATHER: return wf_lower_gemm_allgather(L, op, out);
    default:
      wf_error(op->loc, "dist.gemm{algo=%s} has no lowering yet", name);
      return WF_EXIT_UNSUPPORTED;
  }
}

int wf_lower_gemm(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_type *ta = wf_value_type(L->f, op->operands[0]), *tb = wf_value_type(L->f, op->operands[1]);
  /* Batch dims or a 1-D A: the rank-2 algorithm once per matrix (lower_gemm_batched.c). */
  int rc = ta->rank != 2 || tb->rank != 2 ? wf_lower_gemm_batched(L, op, out) : wf_lower_gemm_matrix(L, op, out);
  if (rc || tb->rank < 2) return rc;
  /* The alternatives, as `auto` weighed them: the manifest's explain */
  wf_gemm_choice ch;
  wf_gemm_choose(L->t, L->f, op, L->w, L->h, &ch);
  wf_gemm_choice_text(&ch, out->explain, sizeof out->explain);
  return 0;
}
