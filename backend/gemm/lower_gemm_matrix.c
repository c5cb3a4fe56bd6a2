/* A rank-2 dist.gemm (or one matrix's view of a batched one): dispatch on the algo attribute
 * (docs/gemm.md). */
#include "backend/gemm/lower_gemm.h"
#include "waferc/diag.h"

int wf_lower_gemm_matrix(wf_lower *L, const wf_op *op, wf_lowered_op *out, int preskew) {
  const char *name = wf_op_str(L->f, op, "algo", "meshgemm");
  wf_gemm_algo a;
  if (wf_gemm_algo_parse(name, &a)) {
    wf_error(op->loc, "dist.gemm: unknown algo '%s' (expected meshgemm, cannon, summa or allgather)", name);
    return WF_EXIT_INPUT;
  }
  int64_t nbuf = wf_op_int(L->f, op, "buffers", 2);
  if (nbuf != 1 && nbuf != 2) {
    wf_error(op->loc, "dist.gemm: buffers = %lld (expected 1, the memory-minimal schedule, or 2, double buffered)",
             (long long)nbuf);
    return WF_EXIT_INPUT;
  }
  /* Every algorithm takes a W x H region: meshgemm and cannon through the lcm virtual grid
   * (lower_gemm_rect.c, which reports the K sizes it cannot cut in L tiles). */
  switch (a) {
    case WF_GEMM_MESHGEMM: return wf_lower_gemm_shift(L, op, out, &wf_ring_interleave, a, preskew);
    case WF_GEMM_CANNON: return wf_lower_gemm_shift(L, op, out, &wf_ring_plain, a, preskew);
    case WF_GEMM_SUMMA: return wf_lower_matmul(L, op, out);
    case WF_GEMM_ALLGATHER: return wf_lower_gemm_allgather(L, op, out);
    default:
      wf_error(op->loc, "dist.gemm{algo=%s} has no lowering yet", name);
      return WF_EXIT_UNSUPPORTED;
  }
}
