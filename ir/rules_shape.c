/* Shape rules, operand checks and costs of the data-movement families: reshape, transpose,
 * concat, slice, split, gather, relayout, and the return op. Data movement costs no flops. */
#include <string.h>

#include "ir/rules.h"

#define NAME(op) (wf_opinfos[(op)->code].name)
#define TS(t) wf_rule_type_str(f, (t))

static int64_t no_flops(const wf_func *f, const wf_op *op) {
  (void)f;
  (void)op;
  return 0;
}

/* ---- reshape: same numel, the shape is the declared result type's ----------------------- */

int wf_rule_reshape(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  const wf_type *r = wf_value_type(f, op->results[0]);
  if (wf_type_numel(a) != wf_type_numel(r)) {
    wf_error(op->loc, "'reshape' cannot change the number of elements: %s has %lld, %s has %lld",
             TS(a), (long long)wf_type_numel(a), TS(r), (long long)wf_type_numel(r));
    return -1;
  }
  *out = wf_rule_type(a->dtype, r->rank, r->dims);
  return 0;
}

int64_t wf_cost_reshape(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- shift: the operand's type; `axis` in range, |by| at most the axis' size --------------- */

int wf_rule_shift(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int64_t ax = wf_rule_int(f, op, "axis", 0), by = wf_rule_int(f, op, "by", 0);
  int axis = wf_norm_axis(ax, a->rank);
  if (axis < 0) {
    wf_error(op->loc, "'shift' axis %lld is out of range for %s", (long long)ax, TS(a));
    return -1;
  }
  if (by < -a->dims[axis] || by > a->dims[axis]) {
    wf_error(op->loc, "'shift' by %lld is past the %lld indices of %s's axis %d", (long long)by,
             (long long)a->dims[axis], TS(a), axis);
    return -1;
  }
  *out = wf_rule_type(a->dtype, a->rank, a->dims);
  return 0;
}

int64_t wf_cost_shift(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- transpose: out.dims[i] = in.dims[perm[i]] ------------------------------------------- */

int wf_rule_transpose(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int n;
  const int64_t *perm = wf_rule_ints(f, op, "perm", &n);
  if (n != a->rank) {
    wf_error(op->loc, "'transpose' perm has %d entries but the operand %s has rank %d", n < 0 ? 0 : n,
             TS(a), a->rank);
    return -1;
  }
  int seen[WF_MAX_RANK] = {0};
  int64_t dims[WF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
      wf_error(op->loc, "'transpose' perm is not a permutation of 0..%d", n - 1);
      return -1;
    }
    seen[perm[i]] = 1;
    dims[i] = a->dims[perm[i]];
  }
  *out = wf_rule_type(a->dtype, a->rank, dims);
  return 0;
}

int64_t wf_cost_transpose(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- concat: same dtype and rank, dims equal except along axis ---------------------------- */

int wf_rule_concat(wf_func *f, const wf_op *op, wf_type *out) {
  if (op->n_operands < 1) {
    wf_error(op->loc, "'concat' needs at least one operand");
    return -1;
  }
  const wf_type *a = wf_rule_in(f, op, 0);
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, a->rank);
  if (axis < 0) {
    wf_error(op->loc, "'concat' axis %lld is out of range for rank %d", (long long)ax, a->rank);
    return -1;
  }
  int64_t dims[WF_MAX_RANK];
  memcpy(dims, a->dims, sizeof dims);
  dims[axis] = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const wf_type *b = wf_rule_in(f, op, i);
    int ok = b->dtype == a->dtype && b->rank == a->rank;
    for (int d = 0; ok && d < a->rank; d++) ok = d == axis || b->dims[d] == a->dims[d];
    if (!ok) {
      wf_error(op->loc, "'concat' operand %d %s does not match operand 0 %s outside axis %d", i,
               TS(b), TS(a), axis);
      return -1;
    }
    dims[axis] += b->dims[axis];
  }
  *out = wf_rule_type(a->dtype, a->rank, dims);
  return 0;
}

int64_t wf_cost_concat(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- slice: ONNX Slice (numpy slicing per listed axis) ------------------------------------ */

int wf_rule_slice(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int ns, ne, na, nt;
  const int64_t *starts = wf_rule_ints(f, op, "starts", &ns);
  const int64_t *ends = wf_rule_ints(f, op, "ends", &ne);
  const int64_t *axes = wf_rule_ints(f, op, "axes", &na);
  const int64_t *steps = wf_rule_ints(f, op, "steps", &nt);
  if (ns < 0 || ne != ns || na != ns || nt != ns) {
    wf_error(op->loc, "'slice' starts, ends, axes and steps must be int lists of one length");
    return -1;
  }
  int64_t dims[WF_MAX_RANK];
  memcpy(dims, a->dims, sizeof dims);
  int seen[WF_MAX_RANK] = {0};
  for (int i = 0; i < ns; i++) {
    int ax = wf_norm_axis(axes[i], a->rank);
    if (ax < 0 || seen[ax]) {
      wf_error(op->loc, "'slice' axis %lld is out of range or repeated for %s", (long long)axes[i], TS(a));
      return -1;
    }
    seen[ax] = 1;
    if (steps[i] == 0) {
      wf_error(op->loc, "'slice' step for axis %lld is 0", (long long)axes[i]);
      return -1;
    }
    int64_t first;
    wf_slice_resolve(a->dims[ax], starts[i], ends[i], steps[i], &first, &dims[ax]);
  }
  *out = wf_rule_type(a->dtype, a->rank, dims);
  return 0;
}

int64_t wf_cost_slice(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- split: sizes along axis, one result each --------------------------------------------- */

int wf_rule_split(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, a->rank);
  if (axis < 0) {
    wf_error(op->loc, "'split' axis %lld is out of range for rank %d", (long long)ax, a->rank);
    return -1;
  }
  int n;
  const int64_t *sizes = wf_rule_ints(f, op, "sizes", &n);
  if (n < 1 || n != op->n_results) {
    wf_error(op->loc, "'split' has %d results but %d sizes", op->n_results, n < 0 ? 0 : n);
    return -1;
  }
  int64_t sum = 0;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      wf_error(op->loc, "'split' size %lld is negative", (long long)sizes[i]);
      return -1;
    }
    if (sizes[i] > a->dims[axis] - sum) { /* past the dim already: no sum to overflow */
      wf_error(op->loc, "'split' sizes sum to more than dim %d of %s (%lld)", axis, TS(a), (long long)a->dims[axis]);
      return -1;
    }
    sum += sizes[i];
  }
  if (sum != a->dims[axis]) {
    wf_error(op->loc, "'split' sizes sum to %lld but dim %d of %s is %lld", (long long)sum, axis,
             TS(a), (long long)a->dims[axis]);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    out[i] = wf_rule_type(a->dtype, a->rank, a->dims);
    out[i].dims[axis] = sizes[i];
  }
  return 0;
}

int64_t wf_cost_split(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- gather: ONNX Gather, out = data[:axis] + indices.shape + data[axis+1:] --------------- */

int wf_rule_gather(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *d = wf_rule_in(f, op, 0), *ix = wf_rule_in(f, op, 1);
  if (ix->dtype != WF_I32 && ix->dtype != WF_I64) {
    wf_error(op->loc, "'gather' indices must be i32 or i64, got %s", TS(ix));
    return -1;
  }
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, d->rank);
  if (axis < 0) {
    wf_error(op->loc, "'gather' axis %lld is out of range for %s", (long long)ax, TS(d));
    return -1;
  }
  int rank = d->rank - 1 + ix->rank;
  if (rank > WF_MAX_RANK) {
    wf_error(op->loc, "'gather' result would have rank %d (max %d)", rank, WF_MAX_RANK);
    return -1;
  }
  int64_t dims[WF_MAX_RANK];
  int r = 0;
  for (int i = 0; i < axis; i++) dims[r++] = d->dims[i];
  for (int i = 0; i < ix->rank; i++) dims[r++] = ix->dims[i];
  for (int i = axis + 1; i < d->rank; i++) dims[r++] = d->dims[i];
  *out = wf_rule_type(d->dtype, rank, dims);
  return 0;
}

int64_t wf_cost_gather(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- relayout: identity on dtype and shape; only the layout changes ----------------------- */

int wf_rule_relayout(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  *out = wf_rule_type(a->dtype, a->rank, a->dims);
  return 0;
}

int64_t wf_cost_relayout(const wf_func *f, const wf_op *op) { return no_flops(f, op); }

/* ---- return: operands match the function's result types ----------------------------------- */

int wf_rule_ret(wf_func *f, const wf_op *op, wf_type *out) {
  (void)out;
  if (op->n_operands != f->n_results) {
    wf_error(op->loc, "'return' has %d operand%s but function @%s returns %d value%s",
             op->n_operands, op->n_operands == 1 ? "" : "s", wf_str(f->module, f->name),
             f->n_results, f->n_results == 1 ? "" : "s");
    return -1;
  }
  for (int i = 0; i < op->n_operands; i++) {
    const wf_type *a = wf_rule_in(f, op, i), *r = &f->result_types[i];
    /* A declared result layout must match too; an undeclared one leaves the choice free. */
    int ok = r->layout.rank ? wf_type_equal(a, r) : wf_type_same_shape(a, r);
    if (!ok) {
      wf_error(op->loc, "'return' operand %d has type %s but function @%s returns %s", i, TS(a),
               wf_str(f->module, f->name), TS(r));
      return -1;
    }
  }
  return 0;
}

int64_t wf_cost_ret(const wf_func *f, const wf_op *op) { return no_flops(f, op); }
