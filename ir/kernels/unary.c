/* Reference kernels of the unary elementwise ops, not and cast.
 *
 * gelu: approximate = none: 0.5 x (1 + erf(x / sqrt 2)); approximate = tanh:
 *       0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel; ONNX Gelu).
 * sigmoid is evaluated in the form that cannot overflow exp; silu = x * sigmoid(x).
 * erf uses C's erf in double (erff's result, rounded once to f32, agrees to within 1 ulp).
 * neg and relu also take integers (exact). */
#include <math.h>
#include <string.h>

#include "ir/kernels/kernels.h"

static double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}

static double apply(wf_opcode c, int gelu_tanh, double x) {
  switch (c) {
  case WF_OP_NEG: return -x;
  case WF_OP_EXP: return exp(x);
  case WF_OP_LOG: return log(x);
  case WF_OP_SQRT: return sqrt(x);
  case WF_OP_RSQRT: return 1.0 / sqrt(x);
  case WF_OP_RECIPROCAL: return 1.0 / x;
  case WF_OP_TANH: return tanh(x);
  case WF_OP_SIGMOID: return sigmoid(x);
  case WF_OP_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
  case WF_OP_ERF: return erf(x);
  case WF_OP_SIN: return sin(x);
  case WF_OP_COS: return cos(x);
  case WF_OP_SILU: return x * sigmoid(x);
  case WF_OP_GELU:
    if (gelu_tanh) return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  default: WF_UNREACHABLE("unary op");
  }
}

static int unary(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int64_t n = wf_tensor_numel(o);
  wf_opcode c = k->op->code;
  if (wf_kis_int(a)) { /* neg, relu (the verifier admits no other unary op on integers) */
    for (int64_t i = 0; i < n; i++) {
      int64_t v = wf_kget_int(a, i);
      wf_kset_int(o, i, c == WF_OP_NEG ? (int64_t)(0 - (uint64_t)v) : (v > 0 ? v : 0));
    }
    return 0;
  }
  int gelu_tanh = c == WF_OP_GELU && strcmp(wf_op_str(k->f, k->op, "approximate", "none"), "tanh") == 0;
  for (int64_t i = 0; i < n; i++) wf_tensor_set(o, i, apply(c, gelu_tanh, wf_tensor_get(a, i)));
  return 0;
}

int wf_kern_NEG(const wf_kctx *k) { return unary(k); }
int wf_kern_EXP(const wf_kctx *k) { return unary(k); }
int wf_kern_LOG(const wf_kctx *k) { return unary(k); }
int wf_kern_SQRT(const wf_kctx *k) { return unary(k); }
int wf_kern_RSQRT(const wf_kctx *k) { return unary(k); }
int wf_kern_RECIPROCAL(const wf_kctx *k) { return unary(k); }
int wf_kern_TANH(const wf_kctx *k) { return unary(k); }
int wf_kern_SIGMOID(const wf_kctx *k) { return unary(k); }
int wf_kern_RELU(const wf_kctx *k) { return unary(k); }
int wf_kern_ERF(const wf_kctx *k) { return unary(k); }
int wf_kern_SIN(const wf_kctx *k) { return unary(k); }
int wf_kern_COS(const wf_kctx *k) { return unary(k); }
int wf_kern_SILU(const wf_kctx *k) { return unary(k); }
int wf_kern_GELU(const wf_kctx *k) { return unary(k); }

int wf_kern_NOT(const wf_kctx *k) {
  int64_t n = wf_tensor_numel(k->out[0]);
  const uint8_t *a = k->in[0]->data;
  uint8_t *o = k->out[0]->data;
  for (int64_t i = 0; i < n; i++) o[i] = !a[i];
  return 0;
}

/* Float -> int truncates toward zero (saturating; NaN -> 0); int -> int wraps; anything ->
 * bool is "!= 0" (NaN is true, as in numpy); float -> float rounds to nearest even. */
int wf_kern_CAST(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int64_t n = wf_tensor_numel(o);
  int int_to_int = !wf_dtype_is_float(a->dtype) && !wf_dtype_is_float(o->dtype);
  for (int64_t i = 0; i < n; i++) {
    if (int_to_int) wf_kset_int(o, i, wf_kget_int(a, i));
    else if (a->dtype == WF_I64) wf_tensor_set(o, i, (double)wf_kget_int(a, i));
    else wf_tensor_set(o, i, wf_tensor_get(a, i));
  }
  return 0;
}
