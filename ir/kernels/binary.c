/* Reference kernels: add sub mul div pow maximum minimum (numpy broadcasting), equal less
 * (-> bool), where. Floats compute in double and round once on store; integers are exact
 * (add/sub/mul wrap modulo 2^64, then to the dtype; division truncates toward zero as C and
 * ONNX do, and dividing by zero is a located error). */
#include <math.h>
#include <string.h>

#include "ir/kernels/kernels.h"

static double fop(wf_opcode c, double a, double b) {
  switch (c) {
  case WF_OP_ADD: return a + b;
  case WF_OP_SUB: return a - b;
  case WF_OP_MUL: return a * b;
  case WF_OP_DIV: return a / b;
  case WF_OP_POW: return pow(a, b);
  /* numpy maximum/minimum propagate NaN */
  case WF_OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  case WF_OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
  default: WF_UNREACHABLE("binary op");
  }
}

static int64_t ipow(int64_t b, int64_t e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0; /* truncated 1/b^-e */
  uint64_t r = 1, x = (uint64_t)b;
  for (; e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return (int64_t)r;
}

static int iop(const wf_kctx *k, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (k->op->code) {
  case WF_OP_ADD: *r = (int64_t)(ua + ub); return 0;
  case WF_OP_SUB: *r = (int64_t)(ua - ub); return 0;
  case WF_OP_MUL: *r = (int64_t)(ua * ub); return 0;
  case WF_OP_DIV:
    if (b == 0) {
      wf_error(k->op->loc, "'div': integer division by zero");
      return -1;
    }
    *r = (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
    return 0;
  case WF_OP_POW: *r = ipow(a, b); return 0;
  case WF_OP_MAXIMUM: *r = a > b ? a : b; return 0;
  case WF_OP_MINIMUM: *r = a < b ? a : b; return 0;
  default: WF_UNREACHABLE("binary op");
  }
}

static int binary(const wf_kctx *k) {
  const wf_tensor *a = k->in[0], *b = k->in[1];
  wf_tensor *o = k->out[0];
  int64_t n = wf_tensor_numel(o);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = wf_kbcast_index(a, o, i), ib = wf_kbcast_index(b, o, i);
    if (wf_kis_int(o)) {
      int64_t r;
      if (iop(k, wf_kget_int(a, ia), wf_kget_int(b, ib), &r)) return -1;
      wf_kset_int(o, i, r);
    } else {
      wf_tensor_set(o, i, fop(k->op->code, wf_tensor_get(a, ia), wf_tensor_get(b, ib)));
    }
  }
  return 0;
}

int wf_kern_ADD(const wf_kctx *k) { return binary(k); }
int wf_kern_SUB(const wf_kctx *k) { return binary(k); }
int wf_kern_MUL(const wf_kctx *k) { return binary(k); }
int wf_kern_DIV(const wf_kctx *k) { return binary(k); }
int wf_kern_POW(const wf_kctx *k) { return binary(k); }
int wf_kern_MAXIMUM(const wf_kctx *k) { return binary(k); }
int wf_kern_MINIMUM(const wf_kctx *k) { return binary(k); }

static int compare(const wf_kctx *k) {
  const wf_tensor *a = k->in[0], *b = k->in[1];
  wf_tensor *o = k->out[0];
  int less = k->op->code == WF_OP_LESS;
  int64_t n = wf_tensor_numel(o);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = wf_kbcast_index(a, o, i), ib = wf_kbcast_index(b, o, i);
    int r;
    if (wf_dtype_is_float(a->dtype)) {
      double x = wf_tensor_get(a, ia), y = wf_tensor_get(b, ib);
      r = less ? x < y : x == y;
    } else {
      int64_t x = wf_kget_int(a, ia), y = wf_kget_int(b, ib);
      r = less ? x < y : x == y;
    }
    ((uint8_t *)o->data)[i] = (uint8_t)r;
  }
  return 0;
}

int wf_kern_EQUAL(const wf_kctx *k) { return compare(k); }
int wf_kern_LESS(const wf_kctx *k) { return compare(k); }

int wf_kern_WHERE(const wf_kctx *k) {
  const wf_tensor *c = k->in[0], *x = k->in[1], *y = k->in[2];
  wf_tensor *o = k->out[0];
  size_t es = wf_dtype_size(o->dtype);
  int64_t n = wf_tensor_numel(o);
  for (int64_t i = 0; i < n; i++) {
    int take_x = ((const uint8_t *)c->data)[wf_kbcast_index(c, o, i)] != 0;
    const wf_tensor *s = take_x ? x : y;
    memcpy((char *)o->data + (size_t)i * es, (const char *)s->data + (size_t)wf_kbcast_index(s, o, i) * es, es);
  }
  return 0;
}
