/* reduce_sum / reduce_mean / reduce_max over any set of axes of a partitioned tensor.
 *
 * A reduction over several axes is a chain of one-axis statistics (lower_reduce.c), each
 * keeping its dim as 1 in the block: the leading (whole) axes first, which are local and
 * shrink the block, then the split ones, each ending in an allreduce along x or y. Between
 * steps the partial result lives in a scratch symbol; the last step writes the result. A
 * mean is then scaled by 1 / (product of the reduced lengths) — the tensor's lengths, not
 * the blocks', since padding never enters a statistic.
 *
 * The result's block is exactly the kept-dims block whether or not the op keeps its dims:
 * with keepdims the reduced dims are 1 (never split), without them partition gives the
 * result the splits of the dims it keeps (reduce_layout), so the values land in the same
 * row-major order. */
#include "backend/resources/lower.h"
#include "waferc/diag.h"

/* Bit d set for every reduced dim (none listed, or an empty list: all). */
static unsigned reduced_axes(const wf_lower *L, const wf_op *op, const wf_type *t) {
  const wf_attr *axes = wf_op_attr(L->f, op, "axes");
  unsigned red = 0;
  for (int i = 0; axes && i < axes->u.ints.n; i++) {
    int64_t a = axes->u.ints.v[i] < 0 ? axes->u.ints.v[i] + t->rank : axes->u.ints.v[i];
    if (a >= 0 && a < t->rank) red |= 1u << a;
  }
  return red ? red : (1u << t->rank) - 1;
}

static int parts(const wf_lower *L, int split) {
  return split == WF_AXIS_X ? L->w : split == WF_AXIS_Y ? L->h : 1;
}

/* The result keeps every kept dim's split (else its block would not be the statistic). */
static int check_result_layout(const wf_lower *L, const wf_op *op, const wf_type *t, unsigned red) {
  const wf_type *rt = wf_value_type(L->f, op->results[0]);
  int keep = rt->rank == t->rank, ok = 1;
  for (int d = 0, k = 0; ok && d < t->rank; d++) {
    if (red >> d & 1) {
      k += keep;
      continue;
    }
    ok = k < rt->rank && rt->dims[k] == t->dims[d] &&
         parts(L, rt->layout.dims[k].split) == parts(L, t->layout.dims[d].split) &&
         (parts(L, t->layout.dims[d].split) == 1 || rt->layout.dims[k].split == t->layout.dims[d].split);
    k++;
  }
  if (ok) return 0;
  wf_error(op->loc, "'%s': its result must keep the layout of the dims it keeps (a relayout is "
                    "not lowered)", wf_opinfos[op->code].name);
  return WF_EXIT_UNSUPPORTED;
}

int wf_lower_reduce(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv);
  unsigned red = reduced_axes(L, op, t);
  int rc = check_result_layout(L, op, t, red);
  if (rc) return rc;
  int64_t b[WF_MAX_RANK], cyc = 0;
  wf_lower_block_dims(L, t, b);
  /* Local axes first, then x, then y; axes of length 1 reduce nothing. */
  int order[WF_MAX_RANK], n = 0;
  for (int pass = 0; pass < 3; pass++)
    for (int d = 0; d < t->rank; d++) {
      if (!(red >> d & 1) || t->dims[d] == 1) continue;
      wf_axis_view v = wf_lower_axis_view(L, t, b, d);
      int want = pass == 0 ? WF_AXIS_NONE : pass == 1 ? WF_AXIS_X : WF_AXIS_Y;
      if (v.split == want) order[n++] = d;
    }
  int sx = wf_lower_sym(L, xv), sr = wf_lower_sym(L, rv);
  int is_max = op->code == WF_OP_REDUCE_MAX, src = sx, masked = 0;
  unsigned allreduced = 0;
  double count = 1;
  for (int i = 0; i < n; i++) {
    wf_axis_view v = wf_lower_axis_view(L, t, b, order[i]);
    int dst = i == n - 1 ? sr : wf_lower_temp(L, i % 2 ? "$red1" : "$red0", v.outer * v.inner * 4);
    if ((rc = wf_lower_axis_stat(L, dst, src, &v, is_max, op->loc, &cyc))) return rc;
    if (v.split) allreduced |= 1u << v.split;
    masked |= v.full < v.len * v.parts;
    count *= (double)v.full;
    b[order[i]] = 1;
    src = dst;
  }
  int64_t len = 1;
  for (int d = 0; d < t->rank; d++) len *= b[d];
  if (!n) { /* every reduced dim has length 1: the values pass through */
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sx), wf_arg_int(len)});
    cyc += len;
  }
  if (op->code == WF_OP_REDUCE_MEAN && count != 1) {
    int k = wf_lower_scalar(L, (float)(1.0 / count));
    wf_emit(L, NULL, WF_PEOP_MUL,
            (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_sym(k), wf_arg_int(len), wf_arg_int(1),
                          wf_arg_int(WF_BMODE_J)});
    cyc += len;
  }
  out->lowering = wf_lower_stat_name(L, allreduced, masked, out);
  out->predicted = cyc;
  return 0;
}
