/* Shape rules, operand checks and costs of the arithmetic families: matmul, gemm, binary,
 * compare, where, unary, logical, cast, same (softmax), norm, rope, reduce.
 * The semantics are documented per op in docs/ops.md. */
#include <string.h>

#include "ir/rules.h"

#define NAME(op) (wf_opinfos[(op)->code].name)
#define TS(t) wf_rule_type_str(f, (t))

static int64_t numel_out(const wf_func *f, const wf_op *op) {
  return op->n_results ? wf_type_numel(wf_value_type(f, op->results[0])) : 0;
}
static int64_t numel_in(const wf_func *f, const wf_op *op, int i) {
  return wf_type_numel(wf_value_type(f, op->operands[i]));
}

static int same_dtype(wf_func *f, const wf_op *op, int i, int j) {
  const wf_type *a = wf_rule_in(f, op, i), *b = wf_rule_in(f, op, j);
  if (a->dtype == b->dtype) return 0;
  wf_error(op->loc, "'%s' operands %d and %d have different dtypes: %s and %s", NAME(op), i, j,
           TS(a), TS(b));
  return -1;
}

static int need_float(wf_func *f, const wf_op *op, int i) {
  const wf_type *a = wf_rule_in(f, op, i);
  if (wf_dtype_is_float(a->dtype)) return 0;
  wf_error(op->loc, "'%s' needs a floating-point operand %d, got %s", NAME(op), i, TS(a));
  return -1;
}

static int need_not_bool(wf_func *f, const wf_op *op, int i) {
  const wf_type *a = wf_rule_in(f, op, i);
  if (a->dtype != WF_BOOL) return 0;
  wf_error(op->loc, "'%s' does not take bool operands (operand %d is %s)", NAME(op), i, TS(a));
  return -1;
}

/* Whether shape s broadcasts to exactly target (ONNX "unidirectional" broadcasting). */
static int broadcasts_to(int rs, const int64_t *s, int rt, const int64_t *t) {
  if (rs > rt) return 0;
  for (int i = 0; i < rs; i++) {
    int64_t d = s[rs - 1 - i], e = t[rt - 1 - i];
    if (d != e && d != 1) return 0;
  }
  return 1;
}

/* ---- matmul: numpy matmul ------------------------------------------------------------- */

int wf_rule_matmul(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0), *b = wf_rule_in(f, op, 1);
  if (same_dtype(f, op, 0, 1) || need_not_bool(f, op, 0)) return -1;
  if (a->rank < 1 || b->rank < 1) {
    wf_error(op->loc, "'matmul' operands must have rank >= 1, got %s and %s", TS(a), TS(b));
    return -1;
  }
  int64_t ka = a->dims[a->rank - 1];
  int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  if (ka != kb) {
    wf_error(op->loc, "'matmul' inner dimensions differ: %s and %s (%lld vs %lld)", TS(a), TS(b),
             (long long)ka, (long long)kb);
    return -1;
  }
  int64_t dims[WF_MAX_RANK];
  int rank = 0;
  int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
  if (wf_broadcast_shape(ra, a->dims, rb, b->dims, &rank, dims) != 0) {
    wf_error(op->loc, "'matmul' batch dimensions do not broadcast: %s and %s", TS(a), TS(b));
    return -1;
  }
  if (a->rank >= 2) dims[rank++] = a->dims[a->rank - 2];
  if (b->rank >= 2) dims[rank++] = b->dims[b->rank - 1];
  *out = wf_rule_type(a->dtype, rank, dims);
  return 0;
}

int64_t wf_cost_matmul(const wf_func *f, const wf_op *op) {
  const wf_type *a = wf_rule_in(f, op, 0);
  /* every output element is a K-long dot product */
  return 2 * numel_out(f, op) * (a->rank ? a->dims[a->rank - 1] : 1);
}

/* ---- gemm: ONNX Gemm, Y = alpha * A' B' + beta * C ------------------------------------- */

int wf_rule_gemm(wf_func *f, const wf_op *op, wf_type *out) {
  if (op->n_operands != 2 && op->n_operands != 3) {
    wf_error(op->loc, "'gemm' takes 2 or 3 operands (A, B[, C]), got %d", op->n_operands);
    return -1;
  }
  const wf_type *a = wf_rule_in(f, op, 0), *b = wf_rule_in(f, op, 1);
  if (same_dtype(f, op, 0, 1) || need_not_bool(f, op, 0)) return -1;
  if (a->rank != 2 || b->rank != 2) {
    wf_error(op->loc, "'gemm' operands A and B must have rank 2, got %s and %s", TS(a), TS(b));
    return -1;
  }
  int ta = wf_rule_bool(f, op, "trans_a", 0), tb = wf_rule_bool(f, op, "trans_b", 0);
  int64_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
  int64_t kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
  if (ka != kb) {
    wf_error(op->loc, "'gemm' inner dimensions differ: %s%s and %s%s (%lld vs %lld)", TS(a),
             ta ? " (transposed)" : "", TS(b), tb ? " (transposed)" : "", (long long)ka,
             (long long)kb);
    return -1;
  }
  int64_t dims[2] = {m, n};
  if (op->n_operands == 3) {
    const wf_type *c = wf_rule_in(f, op, 2);
    if (same_dtype(f, op, 0, 2)) return -1;
    if (!broadcasts_to(c->rank, c->dims, 2, dims)) {
      wf_error(op->loc, "'gemm' operand C %s does not broadcast to the result shape [%lld, %lld]",
               TS(c), (long long)m, (long long)n);
      return -1;
    }
  }
  *out = wf_rule_type(a->dtype, 2, dims);
  return 0;
}

int64_t wf_cost_gemm(const wf_func *f, const wf_op *op) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int ta = wf_rule_bool(f, op, "trans_a", 0);
  int64_t k = a->rank == 2 ? a->dims[ta ? 0 : 1] : 1;
  return 2 * numel_out(f, op) * k + (op->n_operands == 3 ? 2 * numel_out(f, op) : 0);
}

/* ---- binary, compare, where: numpy broadcasting ---------------------------------------- */

static int broadcast_operands(wf_func *f, const wf_op *op, int first, int *rank, int64_t *dims) {
  const wf_type *t = wf_rule_in(f, op, first);
  *rank = t->rank;
  memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  for (int i = first + 1; i < op->n_operands; i++) {
    const wf_type *u = wf_rule_in(f, op, i);
    int64_t tmp[WF_MAX_RANK];
    int r;
    if (wf_broadcast_shape(*rank, dims, u->rank, u->dims, &r, tmp) != 0) {
      wf_error(op->loc, "'%s' operand shapes do not broadcast: %s and %s", NAME(op),
               TS(wf_rule_in(f, op, first)), TS(u));
      return -1;
    }
    *rank = r;
    memcpy(dims, tmp, sizeof(int64_t) * (size_t)r);
  }
  return 0;
}

int wf_rule_binary(wf_func *f, const wf_op *op, wf_type *out) {
  if (same_dtype(f, op, 0, 1) || need_not_bool(f, op, 0)) return -1;
  int rank;
  int64_t dims[WF_MAX_RANK];
  if (broadcast_operands(f, op, 0, &rank, dims)) return -1;
  *out = wf_rule_type(wf_rule_in(f, op, 0)->dtype, rank, dims);
  return 0;
}

int64_t wf_cost_binary(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

int wf_rule_compare(wf_func *f, const wf_op *op, wf_type *out) {
  if (same_dtype(f, op, 0, 1)) return -1;
  int rank;
  int64_t dims[WF_MAX_RANK];
  if (broadcast_operands(f, op, 0, &rank, dims)) return -1;
  *out = wf_rule_type(WF_BOOL, rank, dims);
  return 0;
}

int64_t wf_cost_compare(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

int wf_rule_where(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *c = wf_rule_in(f, op, 0);
  if (c->dtype != WF_BOOL) {
    wf_error(op->loc, "'where' condition (operand 0) must be bool, got %s", TS(c));
    return -1;
  }
  if (same_dtype(f, op, 1, 2)) return -1;
  int rank;
  int64_t dims[WF_MAX_RANK];
  if (broadcast_operands(f, op, 0, &rank, dims)) return -1;
  *out = wf_rule_type(wf_rule_in(f, op, 1)->dtype, rank, dims);
  return 0;
}

int64_t wf_cost_where(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

/* ---- unary, logical, cast ----------------------------------------------------------------- */

int wf_rule_unary(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (!wf_dtype_is_float(a->dtype) &&
      !(wf_unary_allows_int(op->code) && (a->dtype == WF_I32 || a->dtype == WF_I64))) {
    wf_error(op->loc, "'%s' needs a floating-point operand%s, got %s", NAME(op),
             wf_unary_allows_int(op->code) ? " or an integer one" : "", TS(a));
    return -1;
  }
  if (op->code == WF_OP_GELU) {
    const char *ap = wf_op_str(f, op, "approximate", "none");
    if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0) {
      wf_error(op->loc, "'gelu' approximate must be none or tanh, got '%s'", ap);
      return -1;
    }
  }
  *out = wf_rule_type(a->dtype, a->rank, a->dims);
  return 0;
}

/* One flop per element: the PE cost model prices transcendental functions itself. */
int64_t wf_cost_unary(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

int wf_rule_logical(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (a->dtype != WF_BOOL) {
    wf_error(op->loc, "'%s' needs a bool operand, got %s", NAME(op), TS(a));
    return -1;
  }
  *out = wf_rule_type(WF_BOOL, a->rank, a->dims);
  return 0;
}

int64_t wf_cost_logical(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

int wf_rule_cast(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  const char *to = wf_op_str(f, op, "to", NULL);
  wf_dtype dt;
  if (!to || wf_dtype_parse(to, &dt) != 0) {
    wf_error(op->loc, "'cast' attribute 'to' must be a dtype (f32, f16, bf16, i32, i64, bool), got '%s'",
             to ? to : "");
    return -1;
  }
  *out = wf_rule_type(dt, a->rank, a->dims);
  return 0;
}

int64_t wf_cost_cast(const wf_func *f, const wf_op *op) { return numel_out(f, op); }

/* ---- same (softmax): result = operand type, reduction along one axis --------------------- */

static int axis_attr(wf_func *f, const wf_op *op, int rank, int *axis) {
  int64_t ax = wf_rule_int(f, op, "axis", -1);
  *axis = wf_norm_axis(ax, rank);
  if (*axis >= 0) return 0;
  wf_error(op->loc, "'%s' axis %lld is out of range for rank %d", NAME(op), (long long)ax, rank);
  return -1;
}

int wf_rule_same(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  int axis;
  if (need_float(f, op, 0) || axis_attr(f, op, a->rank, &axis)) return -1;
  *out = wf_rule_type(a->dtype, a->rank, a->dims);
  return 0;
}

/* max, subtract, exp, sum, divide */
int64_t wf_cost_same(const wf_func *f, const wf_op *op) { return 5 * numel_out(f, op); }

/* ---- norm: layernorm(x, scale, bias), rmsnorm(x, scale) over dims [axis, rank) ----------- */

int wf_rule_norm(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *x = wf_rule_in(f, op, 0);
  int axis;
  if (need_float(f, op, 0) || axis_attr(f, op, x->rank, &axis)) return -1;
  const int64_t *nd = x->dims + axis;
  int nr = x->rank - axis;
  static const char *const names[] = {"x", "scale", "bias"};
  for (int i = 1; i < op->n_operands; i++) {
    const wf_type *s = wf_rule_in(f, op, i);
    if (same_dtype(f, op, 0, i)) return -1;
    if (!broadcasts_to(s->rank, s->dims, nr, nd)) {
      wf_error(op->loc, "'%s' %s %s does not broadcast to the normalized dims of %s (from axis %d)",
               NAME(op), names[i], TS(s), TS(x), axis);
      return -1;
    }
  }
  *out = wf_rule_type(x->dtype, x->rank, x->dims);
  return 0;
}

/* layernorm: mean, centre, square, sum, scale, shift ~ 8; rmsnorm: square, sum, scale ~ 5 */
int64_t wf_cost_norm(const wf_func *f, const wf_op *op) {
  return (op->code == WF_OP_LAYERNORM ? 8 : 5) * numel_out(f, op);
}

/* ---- rope(x, cos, sin) and rotate_pairs(x, c, s): x [..., S, D], tables [S, D] ------------------------------------ */

#define ROPE_NAME wf_opinfos[op->code].name
int wf_rule_rope(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *x = wf_rule_in(f, op, 0);
  if (need_float(f, op, 0)) return -1;
  if (x->rank < 2) {
    wf_error(op->loc, "'%s' input must have rank >= 2 ([..., S, D]), got %s", ROPE_NAME, TS(x));
    return -1;
  }
  int64_t s = x->dims[x->rank - 2], d = x->dims[x->rank - 1];
  if (d % 2 != 0) {
    wf_error(op->loc, "'%s' head dimension D = %lld must be even, in %s", ROPE_NAME, (long long)d, TS(x));
    return -1;
  }
  for (int i = 1; i <= 2; i++) {
    const wf_type *c = wf_rule_in(f, op, i);
    if (same_dtype(f, op, 0, i)) return -1;
    if (c->rank != 2 || c->dims[0] != s || c->dims[1] != d) {
      wf_error(op->loc, "'%s' %s must have shape [%lld, %lld] (S, D of %s), got %s",
               ROPE_NAME, i == 1 ? "cos" : "sin", (long long)s, (long long)d, TS(x), TS(c));
      return -1;
    }
  }
  *out = wf_rule_type(x->dtype, x->rank, x->dims);
  return 0;
}

#undef ROPE_NAME

int64_t wf_cost_rope(const wf_func *f, const wf_op *op) { return 3 * numel_out(f, op); }

/* ---- reduce: axes (negative allowed, empty = all), keepdims ------------------------------ */

int wf_rule_reduce(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (op->code == WF_OP_REDUCE_MEAN ? need_float(f, op, 0) : need_not_bool(f, op, 0)) return -1;
  int n;
  const int64_t *axes = wf_rule_ints(f, op, "axes", &n);
  if (n < 0) {
    wf_error(op->loc, "'%s' needs an 'axes' list", NAME(op));
    return -1;
  }
  int reduced[WF_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    int ax = wf_norm_axis(axes[i], a->rank);
    if (ax < 0) {
      wf_error(op->loc, "'%s' axis %lld is out of range for %s", NAME(op), (long long)axes[i], TS(a));
      return -1;
    }
    if (reduced[ax]) {
      wf_error(op->loc, "'%s' axis %lld appears twice in axes", NAME(op), (long long)axes[i]);
      return -1;
    }
    reduced[ax] = 1;
  }
  int keep = wf_rule_bool(f, op, "keepdims", 1);
  int64_t dims[WF_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < a->rank; i++) {
    if (!reduced[i] && n > 0) dims[rank++] = a->dims[i];
    else if (keep) dims[rank++] = 1;
  }
  *out = wf_rule_type(a->dtype, rank, dims);
  return 0;
}

int64_t wf_cost_reduce(const wf_func *f, const wf_op *op) { return numel_in(f, op, 0); }
