/* softmax over any axis of a partitioned tensor.
 *
 * Along the axis the PE block is [outer][len][inner] (lower_reduce.c): the statistics are
 * outer x inner values. max over the axis (allreduce-max along x or y when the axis is
 * split), subtract, exp, sum (allreduce-sum), divide. A leading axis is never split, so its
 * statistics are local. Over a padded axis the max and the sum read only the real
 * elements; the padding of the result holds whatever the subtract/exp/divide made of it
 * (partition_pad.c treats it as nonzero). */
#include "backend/resources/lower.h"
#include "waferc/diag.h"

int wf_lower_softmax(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], yv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv), *rt = wf_value_type(L->f, yv);
  int64_t axis = wf_op_int(L->f, op, "axis", -1);
  if (axis < 0) axis += t->rank;
  if (axis < 0 || axis >= t->rank) {
    wf_error(op->loc, "softmax over axis %lld of a rank-%d tensor: no such axis",
             (long long)wf_op_int(L->f, op, "axis", -1), t->rank);
    return WF_EXIT_UNSUPPORTED;
  }
  for (int d = 0; d < t->rank; d++)
    if (rt->layout.dims[d].split != t->layout.dims[d].split) {
      wf_error(op->loc, "softmax: its result must be laid out as its operand (dim %d differs)", d);
      return WF_EXIT_UNSUPPORTED;
    }
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  wf_axis_view v = wf_lower_axis_view(L, t, b, (int)axis);
  int sx = wf_lower_sym(L, xv), sy = wf_lower_sym(L, yv);
  int64_t all = v.outer * v.len * v.inner, cyc = 0;
  int stat = wf_lower_temp(L, "$stat", v.outer * v.inner * 4);
  int rc = wf_lower_axis_stat(L, stat, sx, &v, 1, op->loc, &cyc);
  if (rc) return rc;
  cyc += wf_lower_axis_apply(L, WF_PEOP_SUB, sy, sx, stat, &v);
  wf_emit(L, NULL, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_int(all)});
  cyc += all * L->t->exp_cycles;
  if ((rc = wf_lower_axis_stat(L, stat, sy, &v, 0, op->loc, &cyc))) return rc;
  cyc += wf_lower_axis_apply(L, WF_PEOP_DIV, sy, sy, stat, &v);
  out->lowering = wf_lower_stat_name(L, v.split ? 1u << v.split : 0, v.full < v.len * v.parts, out);
  out->predicted = cyc;
  return 0;
}
