/* softmax over one of the last two axes of a partitioned tensor.
 *
 * The PE block is rows x cols. Over the last axis (split along x) the statistics are one per
 * row: rmax, allreduce-max along x, subtract, exp, rsum, allreduce-sum along x, divide. Over
 * the axis before it (split along y) they are one per column and the allreduces run along
 * y. An axis that is not split needs no communication. */
#include "backend/lower.h"
#include "waferc/diag.h"

/* Which of the last two axes `axis` is (1 = last, 2 = the one before, with every leading
 * dim of size 1 so that the block's rows are exactly that dim), else 0. */
int wf_lower_reduce_axis(const wf_type *t, int64_t axis) {
  if (axis < 0) axis += t->rank;
  if (axis == t->rank - 1) return 1;
  if (axis != t->rank - 2) return 0;
  for (int d = 0; d < t->rank - 2; d++)
    if (t->dims[d] != 1) return 0;
  return 2;
}

int wf_lower_softmax(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], yv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv);
  int64_t axis = wf_op_int(L->f, op, "axis", -1);
  int which = wf_lower_reduce_axis(t, axis);
  if (!which) {
    wf_error(op->loc, "softmax over axis %lld of a rank-%d tensor is not supported: the lowering "
                      "reduces over one of the last two axes (leading dims of size 1)",
             (long long)axis, t->rank);
    return WF_EXIT_UNSUPPORTED;
  }
  int d = which == 1 ? t->rank - 1 : t->rank - 2;
  int split = t->layout.dims[d].split != WF_AXIS_NONE;
  int64_t m, n;
  wf_lower_block(L, xv, &m, &n);
  int sx = wf_lower_sym(L, xv), sy = wf_lower_sym(L, yv);
  int64_t len = which == 1 ? m : n, cyc = 0;
  int stat = wf_lower_temp(L, "$stat", len * 4);
  int mode = which == 1 ? WF_BMODE_I : WF_BMODE_J;
  wf_pe_arg mn[2] = {wf_arg_int(m), wf_arg_int(n)};
  int rc = which == 1 ? wf_lower_row_stat(L, stat, sx, m, n, 1, split, op->loc, &cyc)
                      : wf_lower_col_stat(L, stat, sx, m, n, 1, split, op->loc, &cyc);
  if (rc) return rc;
  wf_emit(L, NULL, WF_PEOP_SUB,
          (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sx), wf_arg_sym(stat), mn[0], mn[1], wf_arg_int(mode)});
  wf_emit(L, NULL, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_int(m * n)});
  rc = which == 1 ? wf_lower_row_stat(L, stat, sy, m, n, 0, split, op->loc, &cyc)
                  : wf_lower_col_stat(L, stat, sy, m, n, 0, split, op->loc, &cyc);
  if (rc) return rc;
  wf_emit(L, NULL, WF_PEOP_DIV,
          (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_sym(stat), mn[0], mn[1], wf_arg_int(mode)});
  out->lowering = !split ? "local" : which == 1 ? "local+chain-allreduce-x" : "local+chain-allreduce-y";
  out->predicted = cyc + m * n * (1 + L->t->exp_cycles + L->t->div_cycles);
  return 0;
}
