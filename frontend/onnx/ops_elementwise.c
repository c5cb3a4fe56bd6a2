/* Importers of the elementwise ops: binary arithmetic and comparisons, Max/Min, Where, the
 * unary functions, Cast, Identity/Dropout. */
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

static const struct {
  const char *onnx;
  wf_opcode code;
} g_map[] = {
    {"Add", WF_OP_ADD},         {"Sub", WF_OP_SUB},     {"Mul", WF_OP_MUL},   {"Div", WF_OP_DIV},
    {"Pow", WF_OP_POW},         {"Max", WF_OP_MAXIMUM}, {"Min", WF_OP_MINIMUM}, {"Equal", WF_OP_EQUAL},
    {"Less", WF_OP_LESS},       {"Greater", WF_OP_LESS}, {"LessOrEqual", WF_OP_LESS},
    {"GreaterOrEqual", WF_OP_LESS}, {"Not", WF_OP_NOT}, {"Sqrt", WF_OP_SQRT}, {"Reciprocal", WF_OP_RECIPROCAL},
    {"Neg", WF_OP_NEG},         {"Exp", WF_OP_EXP},     {"Log", WF_OP_LOG},   {"Erf", WF_OP_ERF},
    {"Tanh", WF_OP_TANH},       {"Sigmoid", WF_OP_SIGMOID}, {"Relu", WF_OP_RELU}, {"Cos", WF_OP_COS},
    {"Sin", WF_OP_SIN},
};

static wf_opcode code_of(const char *op_type) {
  for (size_t i = 0; i < sizeof g_map / sizeof g_map[0]; i++)
    if (strcmp(g_map[i].onnx, op_type) == 0) return g_map[i].code;
  WF_UNREACHABLE("elementwise op without an IR opcode");
}

static int done(ox_nctx *n, ox_val *r) { return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT; }

int ox_imp_binary(ox_nctx *n) {
  ox_val *a = ox_in(n, 0), *b = ox_in(n, 1);
  if (!a || !b) return WF_EXIT_INPUT;
  const char *t = n->node->op_type;
  wf_opcode code = code_of(t);
  /* Pow alone allows an exponent of another type (ONNX 12+); the IR's pow wants one dtype. */
  if (code == WF_OP_POW && b->type.dtype != a->type.dtype && !(b = ox_cast(n, b, a->type.dtype))) return WF_EXIT_INPUT;
  int swap = !strcmp(t, "Greater") || !strcmp(t, "LessOrEqual");
  ox_val *ins[2] = {swap ? b : a, swap ? a : b};
  ox_val *r = ox_emit1(n, code, 2, ins, 0, NULL, NULL);
  if (r && (!strcmp(t, "LessOrEqual") || !strcmp(t, "GreaterOrEqual"))) r = ox_emit1(n, WF_OP_NOT, 1, &r, 0, NULL, NULL);
  return done(n, r);
}

int ox_imp_variadic(ox_nctx *n) {
  ox_val *acc = ox_in(n, 0);
  if (!acc) return WF_EXIT_INPUT;
  wf_opcode code = code_of(n->node->op_type);
  for (int i = 1; acc && i < n->n_in; i++) {
    ox_val *b = ox_in(n, i);
    if (!b) return WF_EXIT_INPUT;
    ox_val *ins[2] = {acc, b};
    acc = ox_emit1(n, code, 2, ins, 0, NULL, NULL);
  }
  return done(n, acc);
}

/* Clip: max(x, min) then min(., max); bounds are attributes before opset 11, optional rank-0
 * inputs after (a min above max gives max everywhere, as ONNX says). */
int ox_imp_clip(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  ox_val *lo = NULL, *hi = NULL;
  if (n->opset < 11) {
    if (ox_attr(n, "min")) lo = ox_scalar(n, x->type.dtype, ox_attr_float(n, "min", 0));
    if (ox_attr(n, "max")) hi = ox_scalar(n, x->type.dtype, ox_attr_float(n, "max", 0));
    if (n->failed) return WF_EXIT_INPUT;
  } else {
    lo = n->n_in > 1 ? n->in[1] : NULL;
    hi = n->n_in > 2 ? n->in[2] : NULL;
    for (int i = 1; i < 3; i++) {
      ox_val *b = i == 1 ? lo : hi;
      if (b && (b->type.rank != 0 || b->type.dtype != x->type.dtype)) {
        ox_err(n, "input %d must be a %s scalar, got %s", i, wf_dtype_name(x->type.dtype), ox_shape_str(&b->type));
        return WF_EXIT_INPUT;
      }
    }
  }
  ox_val *r = x;
  if (r && lo) r = ox_emit1(n, WF_OP_MAXIMUM, 2, (ox_val *[]){r, lo}, 0, NULL, NULL);
  if (r && hi) r = ox_emit1(n, WF_OP_MINIMUM, 2, (ox_val *[]){r, hi}, 0, NULL, NULL);
  return done(n, r); /* no bounds: x itself */
}

int ox_imp_where(ox_nctx *n) {
  ox_val *ins[3] = {ox_in(n, 0), ox_in(n, 1), ox_in(n, 2)};
  if (!ins[0] || !ins[1] || !ins[2]) return WF_EXIT_INPUT;
  return done(n, ox_emit1(n, WF_OP_WHERE, 3, ins, 0, NULL, NULL));
}

int ox_imp_unary(ox_nctx *n) {
  ox_val *a = ox_in(n, 0);
  if (!a) return WF_EXIT_INPUT;
  return done(n, ox_emit1(n, code_of(n->node->op_type), 1, &a, 0, NULL, NULL));
}

int ox_imp_cast(ox_nctx *n) {
  ox_val *a = ox_in(n, 0);
  if (!a) return WF_EXIT_INPUT;
  const Onnx__AttributeProto *to = ox_attr(n, "to");
  if (!to) {
    ox_err(n, "attribute 'to' is required");
    return WF_EXIT_INPUT;
  }
  int64_t t = ox_attr_int(n, "to", 0);
  wf_dtype dt;
  int conv = 0;
  if (n->failed) return WF_EXIT_INPUT;
  if (t < 0 || t > 64 || ox_dtype_from_onnx((int32_t)t, &dt, &conv) != 0 || conv == 2)
    return ox_unsupported(n, "Cast to %s is not supported (the IR has f32, f16, bf16, i32, i64, bool)",
                          ox_onnx_type_name((int32_t)t));
  /* conv == 1: DOUBLE computes in f32 here; the reference kernels work in double anyway */
  return done(n, ox_cast(n, a, dt));
}

int ox_imp_identity(ox_nctx *n) {
  ox_val *a = ox_in(n, 0);
  if (!a) return WF_EXIT_INPUT;
  return ox_set_out(n, 0, a);
}

/* Dropout is the identity at inference, which waferc compiles; in training mode (opset 12's
 * training_mode input) it draws random masks, unless its ratio is 0. */
int ox_imp_dropout(ox_nctx *n) {
  ox_val *a = ox_in(n, 0);
  if (!a) return WF_EXIT_INPUT;
  if (n->opset >= 12 && n->n_in > 2 && n->in[2]) {
    ox_val *tm = n->in[2];
    if (!tm->k)
      return ox_unsupported(n, "training_mode depends on runtime values: waferc compiles inference (training_mode false)");
    if (wf_tensor_numel(tm->k) != 1) {
      ox_err(n, "training_mode must hold one boolean, got %s", ox_shape_str(&tm->type));
      return WF_EXIT_INPUT;
    }
    if (wf_tensor_get(tm->k, 0) != 0) {
      double ratio = 0.5;
      if (n->n_in > 1 && n->in[1] && !n->in[1]->k)
        return ox_unsupported(n, "training_mode is true and the ratio is not a constant: random dropout is not supported");
      if (n->n_in > 1 && n->in[1] && ox_in_float(n, 1, "ratio", &ratio) != 0) return WF_EXIT_INPUT;
      if (ratio != 0.0)
        return ox_unsupported(n, "training_mode is true (ratio %g): random dropout is not supported, waferc compiles inference",
                              ratio);
    }
  }
  int rc = ox_set_out(n, 0, a);
  if (rc || !ox_out_used(n, 1)) return rc;
  /* the mask keeps every element: bool from opset 10, the data's type before */
  wf_tensor *k = wf_tensor_new(n->opset >= 10 ? WF_BOOL : a->type.dtype, a->type.rank, a->type.dims);
  for (int64_t i = 0, e = wf_tensor_numel(k); i < e; i++) wf_tensor_set(k, i, 1.0);
  return ox_set_out(n, 1, ox_const_new(n->cx, k));
}
