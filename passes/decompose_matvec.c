/* Matrix-vector products for the partition pass: matmul(A [.., M, K], b [K]) becomes
 * reduce_sum(mul(A, b), axes = [-1], keepdims = false). Under partition's layouts b [K] is
 * {K_x}, split like A's columns and held by every row, so the mul is local (b broadcast
 * along the rows of each block) and the sum over K is a local row sum and an allreduce along
 * x; the result keeps A's row split, [.., M] {.., M_y} (as every reduction without keepdims
 * does). A GEMM algorithm would want b as a column [K, 1] {K_y}, which it is not. A padded
 * K never reaches the sum: reduce_sum reads only the real elements of a padded axis
 * (docs/partition.md, "Padding"). 1-D A (vector-matrix) stays a matmul: lower-gemm runs it
 * as a one-row GEMM. 1-D · 1-D (a dot product) becomes the same mul and a sum over K whose
 * rank-0 result partition widens to [1] (widen_computed_scalars). */
#include <string.h>

#include "passes/decompose.h"

int wf_decompose_matvec(wf_module *m, wf_func *f) {
  int n = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    if (op->code != WF_OP_MATMUL) continue;
    wf_value a = op->operands[0], b = op->operands[1], old = op->results[0];
    int ra = wf_value_type(f, a)->rank;
    if (wf_value_type(f, b)->rank != 1 || (ra < 2 && !(ra == 1 && wf_value_type(f, old)->rank == 0))) continue;
    wf_type pt = *wf_value_type(f, a), rt = *wf_value_type(f, old);
    memset(&pt.layout, 0, sizeof pt.layout);
    memset(&rt.layout, 0, sizeof rt.layout);
    wf_value ab[2] = {a, b};
    wf_op *mul = wf_op_new(f, WF_OP_MUL, 2, ab, 1, &pt, op->loc);
    wf_op_insert_before(f, op, mul);
    wf_op *sum = wf_op_new(f, WF_OP_REDUCE_SUM, 1, mul->results, 1, &rt, op->loc);
    wf_op_insert_before(f, op, sum);
    int64_t axis = -1;
    wf_op_set_ints(f, sum, "axes", 1, &axis);
    wf_op_set_attr(f, sum, (wf_attr){wf_intern(m, "keepdims"), WF_ATTR_BOOL, {.i = 0}});
    wf_value y = sum->results[0];
    wf_value_replace_uses(f, old, y);
    wf_value_set_name(f, y, wf_str(m, f->values[old].name));
    wf_op_unlink(f, op);
    n++;
  }
  return n;
}
