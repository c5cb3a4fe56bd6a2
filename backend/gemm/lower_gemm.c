/* dist.gemm: a batched product (lower_gemm_batched.c) or one matrix (lower_gemm_matrix.c),
 * and the alternatives `auto` weighed, for the manifest (docs/gemm.md). */
#include <string.h>

#include "backend/gemm/gemm_choose.h"
#include "backend/gemm/lower_gemm.h"
#include "waferc/diag.h"

int wf_lower_gemm(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  /* ranks, not type pointers: the batched lowering adds values, which may move f->values */
  int ra = wf_value_type(L->f, op->operands[0])->rank, rb = wf_value_type(L->f, op->operands[1])->rank;
  /* Batch dims or a 1-D A: the rank-2 algorithm once per matrix (lower_gemm_batched.c),
   * whose phases repeat per matrix and are not marked. A rank-2 lowering that marks its
   * phases (MeshGEMM, Cannon, SUMMA off a 1x1 region) sets out->has_phases. */
  int rc;
  if (ra != 2 || rb != 2) {
    rc = wf_lower_gemm_batched(L, op, out);
  } else {
    L->gemm_phases = 1;
    rc = wf_lower_gemm_matrix(L, op, out, wf_gemm_preskewed(L->f, op, L->w, L->h));
    L->gemm_phases = 0;
  }
  if (rc || rb < 2) return rc;
  /* The alternatives, as `auto` weighed them: the manifest's explain */
  wf_gemm_choice ch;
  wf_gemm_choose(L->t, L->f, op, L->w, L->h, (int)wf_op_int(L->f, op, "buffers", 2), &ch);
  wf_gemm_choice_text(&ch, out->explain, sizeof out->explain);
  return 0;
}
