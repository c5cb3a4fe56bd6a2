/* Shape rule and cost of dist.gemm_t: C[.., M, N] = A[.., M, K] . B[N, K]^T (B rank 2; A's
 * leading dims, a batch of activations, stay in C). */
#include "ir/rules.h"
#include "waferc/diag.h"

int wf_rule_matmul_t(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0), *b = wf_rule_in(f, op, 1);
  if (a->rank < 2 || b->rank != 2) {
    wf_error(op->loc, "'%s' takes A [.., M, K] and B [N, K], got rank %d and %d",
             wf_opinfos[op->code].name, a->rank, b->rank);
    return -1;
  }
  if (a->dtype != b->dtype) {
    wf_error(op->loc, "'%s' operands have different dtypes (%s and %s)", wf_opinfos[op->code].name,
             wf_dtype_name(a->dtype), wf_dtype_name(b->dtype));
    return -1;
  }
  if (a->dims[a->rank - 1] != b->dims[1]) {
    wf_error(op->loc, "'%s' contracts the last dims of both operands: A has %lld, B has %lld",
             wf_opinfos[op->code].name, (long long)a->dims[a->rank - 1], (long long)b->dims[1]);
    return -1;
  }
  int64_t dims[WF_MAX_RANK];
  for (int d = 0; d + 1 < a->rank; d++) dims[d] = a->dims[d];
  dims[a->rank - 1] = b->dims[0];
  *out = wf_rule_type(a->dtype, a->rank, dims);
  return 0;
}

int64_t wf_cost_matmul_t(const wf_func *f, const wf_op *op) {
  const wf_type *a = wf_rule_in(f, op, 0), *b = wf_rule_in(f, op, 1);
  int64_t m = 1;
  for (int d = 0; d + 1 < a->rank; d++) m *= a->dims[d];
  return 2 * m * b->dims[0] * b->dims[1];
}
