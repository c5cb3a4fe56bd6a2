/* Shape rules, operand checks and costs of the indexing-style data-movement ops the ONNX
 * frontend needs: expand (numpy broadcast to a declared shape), trilu (triangle mask),
 * topk (values + i64 indices), scatter_elements, gather_elements. */
#include <math.h>
#include <string.h>

#include "ir/rules.h"
#include "waferc/tensor.h"

#define TS(t) wf_rule_type_str(f, (t))

/* ---- expand: the result shape is the declared one; the operand broadcasts to it ----------- */

int wf_rule_expand(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  const wf_type *r = wf_value_type(f, op->results[0]);
  int rank;
  int64_t dims[WF_MAX_RANK];
  int ok = a->rank <= r->rank && wf_broadcast_shape(a->rank, a->dims, r->rank, r->dims, &rank, dims) == 0;
  for (int i = 0; ok && i < rank; i++) ok = dims[i] == r->dims[i];
  if (!ok) {
    wf_error(op->loc, "'expand' operand %s does not broadcast to the result shape %s", TS(a), TS(r));
    return -1;
  }
  *out = wf_rule_type(a->dtype, r->rank, r->dims);
  return 0;
}

int64_t wf_cost_expand(const wf_func *f, const wf_op *op) { return 0; }

/* ---- trilu: keeps the upper (or lower) triangle of the last two dims -------------------- */

int wf_rule_trilu(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (a->rank < 2) {
    wf_error(op->loc, "'trilu' needs an operand of rank >= 2, got %s", TS(a));
    return -1;
  }
  *out = wf_rule_type(a->dtype, a->rank, a->dims);
  return 0;
}

int64_t wf_cost_trilu(const wf_func *f, const wf_op *op) { return 0; }

/* ---- topk: values [.., k, ..] of x's dtype and their i64 indices along axis -------------- */

int wf_rule_topk(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (a->dtype == WF_BOOL) {
    wf_error(op->loc, "'topk' does not take bool operands, got %s", TS(a));
    return -1;
  }
  int64_t ax = wf_rule_int(f, op, "axis", -1);
  int axis = wf_norm_axis(ax, a->rank);
  if (axis < 0) {
    wf_error(op->loc, "'topk' axis %lld is out of range for %s", (long long)ax, TS(a));
    return -1;
  }
  int64_t k = wf_rule_int(f, op, "k", -1);
  if (k < 0 || k > a->dims[axis]) {
    wf_error(op->loc, "'topk' k = %lld must be in [0, %lld] (dim %d of %s)", (long long)k, (long long)a->dims[axis],
             axis, TS(a));
    return -1;
  }
  out[0] = wf_rule_type(a->dtype, a->rank, a->dims);
  out[0].dims[axis] = k;
  out[1] = wf_rule_type(WF_I64, a->rank, out[0].dims);
  return 0;
}

/* a comparison per element per selected slot (a partial selection sort's bound) */
int64_t wf_cost_topk(const wf_func *f, const wf_op *op) {
  const wf_type *a = wf_rule_in(f, op, 0);
  return wf_type_numel(a) * (wf_rule_int(f, op, "k", 1) > 0 ? wf_rule_int(f, op, "k", 1) : 1);
}

/* ---- scatter_elements(data, indices, updates) ---------------------------------------------- */

int wf_rule_scatter(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *d = wf_rule_in(f, op, 0), *ix = wf_rule_in(f, op, 1), *u = wf_rule_in(f, op, 2);
  if (ix->dtype != WF_I32 && ix->dtype != WF_I64) {
    wf_error(op->loc, "'scatter_elements' indices must be i32 or i64, got %s", TS(ix));
    return -1;
  }
  if (u->dtype != d->dtype) {
    wf_error(op->loc, "'scatter_elements' updates %s must have the dtype of data %s", TS(u), TS(d));
    return -1;
  }
  int same = ix->rank == u->rank;
  for (int i = 0; same && i < ix->rank; i++) same = ix->dims[i] == u->dims[i];
  if (!same || ix->rank != d->rank) {
    wf_error(op->loc, "'scatter_elements' indices %s and updates %s must have one shape, of the rank of data %s",
             TS(ix), TS(u), TS(d));
    return -1;
  }
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, d->rank);
  if (axis < 0) {
    wf_error(op->loc, "'scatter_elements' axis %lld is out of range for %s", (long long)ax, TS(d));
    return -1;
  }
  for (int i = 0; i < d->rank; i++)
    if (i != axis && ix->dims[i] > d->dims[i]) {
      wf_error(op->loc, "'scatter_elements' indices %s exceed data %s in dim %d", TS(ix), TS(d), i);
      return -1;
    }
  const char *red = wf_op_str(f, op, "reduction", "none");
  if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min")) {
    wf_error(op->loc, "'scatter_elements' reduction must be none, add, mul, max or min, got '%s'", red);
    return -1;
  }
  if (d->dtype == WF_BOOL && strcmp(red, "none") != 0) {
    wf_error(op->loc, "'scatter_elements' reduction '%s' does not apply to bool data", red);
    return -1;
  }
  *out = wf_rule_type(d->dtype, d->rank, d->dims);
  return 0;
}

int64_t wf_cost_scatter(const wf_func *f, const wf_op *op) {
  return wf_type_numel(wf_rule_in(f, op, 2));
}

/* ---- gather_elements(data, indices): the shape of indices, data's dtype ------------------- */

int wf_rule_gather_elements(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *d = wf_rule_in(f, op, 0), *ix = wf_rule_in(f, op, 1);
  if (ix->dtype != WF_I32 && ix->dtype != WF_I64) {
    wf_error(op->loc, "'gather_elements' indices must be i32 or i64, got %s", TS(ix));
    return -1;
  }
  if (ix->rank != d->rank || d->rank < 1) {
    wf_error(op->loc, "'gather_elements' indices %s must have the rank of data %s (at least 1)", TS(ix), TS(d));
    return -1;
  }
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, d->rank);
  if (axis < 0) {
    wf_error(op->loc, "'gather_elements' axis %lld is out of range for %s", (long long)ax, TS(d));
    return -1;
  }
  for (int i = 0; i < d->rank; i++)
    if (i != axis && ix->dims[i] > d->dims[i]) {
      wf_error(op->loc, "'gather_elements' indices %s exceed data %s in dim %d", TS(ix), TS(d), i);
      return -1;
    }
  *out = wf_rule_type(d->dtype, ix->rank, ix->dims);
  return 0;
}

int64_t wf_cost_gather_elements(const wf_func *f, const wf_op *op) { return wf_type_numel(wf_rule_in(f, op, 1)); }

/* ---- argmax: i64 index of the largest element along axis, the dim kept as 1 or dropped ---- */

int wf_rule_argmax(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (a->dtype == WF_BOOL) {
    wf_error(op->loc, "'argmax' does not take bool operands, got %s", TS(a));
    return -1;
  }
  if (a->rank < 1) {
    wf_error(op->loc, "'argmax' needs an operand of rank >= 1, got %s", TS(a));
    return -1;
  }
  int64_t ax = wf_rule_int(f, op, "axis", 0);
  int axis = wf_norm_axis(ax, a->rank);
  if (axis < 0) {
    wf_error(op->loc, "'argmax' axis %lld is out of range for %s", (long long)ax, TS(a));
    return -1;
  }
  if (a->dims[axis] < 1) {
    wf_error(op->loc, "'argmax' axis %d of %s is empty: there is no largest element", axis, TS(a));
    return -1;
  }
  int keep = wf_rule_bool(f, op, "keepdims", 1);
  int64_t dims[WF_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < a->rank; i++) {
    if (i != axis) dims[rank++] = a->dims[i];
    else if (keep) dims[rank++] = 1;
  }
  *out = wf_rule_type(WF_I64, rank, dims);
  return 0;
}

/* one comparison per element */
int64_t wf_cost_argmax(const wf_func *f, const wf_op *op) { return wf_type_numel(wf_rule_in(f, op, 0)); }

wf_value wf_unreshaped(const wf_func *f, wf_value v) {
  for (int i = 0; i < 8; i++) {
    const wf_value_info *vi = &f->values[v];
    if (vi->kind != WF_VAL_RESULT || !vi->def || vi->def->code != WF_OP_RESHAPE) break;
    v = vi->def->operands[0];
  }
  return v;
}

/* v without reshapes and a matrix transpose: a one-hot's indices as partition_sink.c leaves
 * them when it computes the one-hot permuted (equal(reshape(transpose(indices)), ...)). */
static wf_value one_hot_indices(const wf_func *f, wf_value v) {
  v = wf_unreshaped(f, v);
  const wf_op *t = wf_def_of(f, v, WF_OP_TRANSPOSE);
  if (t && wf_value_type(f, t->operands[0])->rank == 2) v = wf_unreshaped(f, t->operands[0]);
  return v;
}

/* Whether op gathers, by the ids idx, rows of a constant of n rows that some reshape gives
 * rank 3 or more back: each token's expert's weights from the stacked parameters (`w1[sel]`,
 * which the importer gathers as rows of the [N, E F] view). An embedding table's lookup
 * (its rows by an argmax of logits, in generation) keeps its [.., E] rows. */
static int gathers_expert_weights(const wf_func *f, const wf_op *op, wf_value idx, int64_t n) {
  if (op->code != WF_OP_GATHER || op->n_operands != 2 || wf_unreshaped(f, op->operands[1]) != idx ||
      f->values[op->operands[0]].kind != WF_VAL_GLOBAL || wf_value_type(f, op->operands[0])->dims[0] != n ||
      wf_op_int(f, op, "axis", 0) != 0)
    return 0;
  wf_func_foreach_op(f, u)
    if (u->code == WF_OP_RESHAPE && u->operands[0] == op->results[0] && wf_value_type(f, u->results[0])->rank >= 3)
      return 1;
  return 0;
}

int wf_argmax_is_moe_route(const wf_func *f, const wf_op *am) {
  if (am->code != WF_OP_ARGMAX || am->n_operands != 1) return 0;
  const wf_type *in = wf_value_type(f, am->operands[0]);
  int64_t ax = wf_op_int(f, am, "axis", 0);
  if (in->rank < 2 || (ax < 0 ? ax + in->rank : ax) != in->rank - 1) return 0;
  wf_func_foreach_op(f, op) /* each token's expert compared with the experts' numbers */
    if ((op->code == WF_OP_EQUAL && (one_hot_indices(f, op->operands[0]) == am->results[0] ||
                                     one_hot_indices(f, op->operands[1]) == am->results[0])) ||
        gathers_expert_weights(f, op, am->results[0], in->dims[in->rank - 1]))
      return 1;
  return 0;
}

int wf_topk_is_moe_route(const wf_func *f, const wf_op *topk) {
  if (topk->code != WF_OP_TOPK || topk->n_results != 2) return 0;
  wf_func_foreach_op(f, op) {
    if ((op->code == WF_OP_SCATTER_ELEMENTS || op->code == WF_OP_GATHER_ELEMENTS) && op->n_operands > 1 &&
        op->operands[1] == topk->results[1])
      return 1;
    /* a one-hot of the indices: equal(reshape(indices) [.., k, 1], the expert numbers), or
     * of their transpose */
    if (op->code == WF_OP_EQUAL && (one_hot_indices(f, op->operands[0]) == topk->results[1] ||
                                    one_hot_indices(f, op->operands[1]) == topk->results[1]))
      return 1;
  }
  return 0;
}

/* A constant whose every element is an integer held exactly. */
static int exact_constant(const wf_module *m, const wf_value_info *vi) {
  wf_tensor *t = vi->index >= 0 ? wf_global_tensor((wf_module *)m, vi->index) : NULL;
  if (!t) return 0;
  int ok = 1;
  for (int64_t i = 0, n = wf_tensor_numel(t); ok && i < n; i++) ok = fabs(wf_tensor_get(t, i)) <= (1 << 24);
  wf_tensor_free(t);
  return ok;
}

static int int_ok(const wf_module *m, const wf_func *f, wf_value v, int depth);

/* An f32 constant whose every element is an integer of at most 2^24. */
static int integer_constant(const wf_module *m, const wf_value_info *vi) {
  wf_tensor *t = vi->index >= 0 ? wf_global_tensor((wf_module *)m, vi->index) : NULL;
  if (!t) return 0;
  int ok = 1;
  for (int64_t i = 0, n = wf_tensor_numel(t); ok && i < n; i++) {
    double x = wf_tensor_get(t, i);
    ok = fabs(x) <= (1 << 24) && x == floor(x);
  }
  wf_tensor_free(t);
  return ok;
}

/* An f32 value that holds integers: made from bools, integers and integer constants by ops
 * that keep integers (sums, products, max, min, moves; a matmul of such operands, which is
 * how CumSum is imported), so a cast of it to an integer type truncates nothing. Like the
 * integers themselves, it is taken to stay within 2^24 (MoE routers count tokens). */
static int int_valued(const wf_module *m, const wf_func *f, wf_value v, int depth) {
  const wf_value_info *vi = &f->values[v];
  if (depth > 64 || wf_value_type(f, v)->dtype != WF_F32) return 0;
  if (vi->kind == WF_VAL_GLOBAL) return integer_constant(m, vi);
  if (vi->kind != WF_VAL_RESULT || !vi->def) return 0;
  const wf_op *d = vi->def;
  switch (d->code) {
    case WF_OP_CAST: {
      wf_dtype from = wf_value_type(f, d->operands[0])->dtype;
      return from == WF_F32 ? int_valued(m, f, d->operands[0], depth + 1) : int_ok(m, f, d->operands[0], depth + 1);
    }
    case WF_OP_WHERE: return int_valued(m, f, d->operands[1], depth + 1) && int_valued(m, f, d->operands[2], depth + 1);
    case WF_OP_ADD: case WF_OP_SUB: case WF_OP_MUL: case WF_OP_MAXIMUM: case WF_OP_MINIMUM: case WF_OP_MATMUL:
    case WF_OP_DIST_GEMM: case WF_OP_DIST_GEMM_T: /* (lower-gemm's matmuls) */
    case WF_OP_NEG: case WF_OP_RELU: case WF_OP_REDUCE_SUM: case WF_OP_REDUCE_MAX: case WF_OP_CONCAT:
      for (int i = 0; i < d->n_operands; i++)
        if (!int_valued(m, f, d->operands[i], depth + 1)) return 0;
      return 1;
    case WF_OP_RESHAPE: case WF_OP_TRANSPOSE: case WF_OP_SLICE: case WF_OP_SPLIT: case WF_OP_EXPAND:
    case WF_OP_GATHER: case WF_OP_GATHER_ELEMENTS: case WF_OP_DIST_RELAYOUT:
      return int_valued(m, f, d->operands[0], depth + 1);
    default: return 0;
  }
}

int wf_int_valued(const wf_module *m, const wf_func *f, wf_value v) { return int_valued(m, f, v, 0); }

static int int_ok(const wf_module *m, const wf_func *f, wf_value v, int depth) {
  const wf_value_info *vi = &f->values[v];
  if (depth > 64) return 0;
  wf_dtype dt = wf_value_type(f, v)->dtype;
  if (dt == WF_BOOL) return 1;
  if (dt != WF_I64 && dt != WF_I32) return 0; /* (a float constant's data is never read here) */
  if (vi->kind == WF_VAL_ARG) return 1; /* the host converts it and refuses |x| > 2^24 (runtime/sim_io.c) */
  if (vi->kind == WF_VAL_GLOBAL) return exact_constant(m, vi);
  if (vi->kind != WF_VAL_RESULT || !vi->def) return 0;
  const wf_op *d = vi->def;
  switch (d->code) {
    case WF_OP_ARGMAX: return 1;                  /* below its axis' length */
    case WF_OP_TOPK: /* the indices; the values when they are integers (an argsort's keys) */
      return d->results[1] == v || int_ok(m, f, d->operands[0], depth + 1);
    case WF_OP_WHERE: return int_ok(m, f, d->operands[1], depth + 1) && int_ok(m, f, d->operands[2], depth + 1);
    case WF_OP_CAST: {                            /* from f32 only when nothing is truncated */
      wf_dtype from = wf_value_type(f, d->operands[0])->dtype;
      return from == WF_F32 ? int_valued(m, f, d->operands[0], depth + 1) : int_ok(m, f, d->operands[0], depth + 1);
    }
    case WF_OP_RESHAPE: case WF_OP_TRANSPOSE: case WF_OP_SLICE: case WF_OP_SPLIT: /* words moved as they are */
    case WF_OP_EXPAND: case WF_OP_GATHER: case WF_OP_GATHER_ELEMENTS: case WF_OP_TRILU: /* (operand 0 the data) */
    case WF_OP_DIST_RELAYOUT: /* onto a band of the rows and off it (expert-bands) */
      return int_ok(m, f, d->operands[0], depth + 1);
    case WF_OP_CONCAT:
    /* sums, products, max and min of such integers: taken to stay within 2^24, as the
     * integers themselves (indices and their offsets: NonZero's token lists, docs/onnx.md) */
    case WF_OP_ADD: case WF_OP_SUB: case WF_OP_MUL: case WF_OP_MAXIMUM: case WF_OP_MINIMUM: case WF_OP_NEG:
    case WF_OP_DIV: /* truncated toward zero, exactly (lower_elementwise.c, lower_int_div) */
      for (int i = 0; i < d->n_operands; i++)
        if (!int_ok(m, f, d->operands[i], depth + 1)) return 0;
      return 1;
    default: return 0; /* powers, and anything else: not exact in f32 words */
  }
}

int wf_int_words_ok(const wf_module *m, const wf_func *f, wf_value v) { return int_ok(m, f, v, 0); }
