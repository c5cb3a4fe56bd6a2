/* reduce_sum / reduce_mean / reduce_max over one of the last two axes of a partitioned
 * tensor: the local row (or column) reduction, the allreduce along the split axis
 * (lower_reduce.c), and for the mean a scale by 1/N. The result's block is exactly the
 * statistic: [.., M, 1] or [.., M] keeps M's split (partition's reduce rule), so the m
 * values land where its layout says. */
#include "backend/lower.h"
#include "waferc/diag.h"

int wf_lower_reduce(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv);
  const wf_attr *axes = wf_op_attr(L->f, op, "axes");
  int which = axes && axes->u.ints.n == 1 ? wf_lower_reduce_axis(t, axes->u.ints.v[0]) : 0;
  if (!which) {
    wf_error(op->loc, "'%s' is lowered over a single one of the last two axes only",
             wf_opinfos[op->code].name);
    return WF_EXIT_UNSUPPORTED;
  }
  int d = which == 1 ? t->rank - 1 : t->rank - 2;
  int split = t->layout.dims[d].split != WF_AXIS_NONE;
  int is_max = op->code == WF_OP_REDUCE_MAX;
  int64_t m, n, cyc = 0;
  wf_lower_block(L, xv, &m, &n);
  int sx = wf_lower_sym(L, xv), sr = wf_lower_sym(L, rv);
  int rc = which == 1 ? wf_lower_row_stat(L, sr, sx, m, n, is_max, split, op->loc, &cyc)
                      : wf_lower_col_stat(L, sr, sx, m, n, is_max, split, op->loc, &cyc);
  if (rc) return rc;
  if (op->code == WF_OP_REDUCE_MEAN) {
    int k = wf_lower_scalar(L, (float)(1.0 / (double)t->dims[d]));
    int64_t len = which == 1 ? m : n;
    wf_emit(L, NULL, WF_PEOP_MUL,
            (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_sym(k), wf_arg_int(len), wf_arg_int(1),
                          wf_arg_int(WF_BMODE_J)});
    cyc += len;
  }
  out->lowering = !split ? "local" : d == t->rank - 1 ? "local+chain-allreduce-x" : "local+chain-allreduce-y";
  out->predicted = cyc;
  return 0;
}
