/* Host tensors and the f16 / bf16 conversions the interpreter, .npy I/O and the runtime share.
 *
 * Conversions to the 16-bit formats round to nearest, ties to even, as IEEE 754 and numpy do;
 * overflow goes to infinity, tiny values to (signed) subnormals or zero, and NaNs stay quiet
 * NaNs with their sign and the top bits of their payload. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/tensor.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float wf_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13)); /* inf / nan */
  if (exp != 0) return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_f32(sign);
  /* Subnormal: mant * 2^-24 is exact in f32. */
  float v = (float)mant * 0x1p-24f;
  return sign ? -v : v;
}

uint16_t wf_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* quiet, keep payload top */
  }
  /* 65520 is halfway between 65504 (max f16) and 2^16; the tie goes to the even side, inf. */
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax >= 0x38800000u) { /* normal f16 range, >= 2^-14 */
    uint32_t e = (ax >> 23) - 127u + 15u;
    uint32_t mant = ax & 0x7fffffu;
    uint32_t h = (e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry into the exponent is right */
    return (uint16_t)(sign | h);
  }
  /* At most 2^-25 (half the smallest subnormal) rounds to zero (the tie goes to even 0). */
  if (ax <= 0x33000000u) return sign;
  uint32_t e = ax >> 23;                      /* 102..112 */
  uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;                  /* value in units of 2^-24 = mant >> shift */
  uint32_t h = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) h++; /* may become 0x400: the smallest normal */
  return (uint16_t)(sign | h);
}

float wf_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t wf_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet nan */
  uint32_t round = 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)((x + round) >> 16); /* overflow of the max finite carries into inf */
}

wf_tensor *wf_tensor_new(wf_dtype dt, int rank, const int64_t *dims) {
  WF_ASSERT(rank >= 0 && rank <= WF_MAX_RANK);
  wf_tensor *t = calloc(1, sizeof *t);
  WF_ASSERT(t != NULL);
  t->dtype = dt;
  t->rank = rank;
  for (int i = 0; i < rank; i++) {
    WF_ASSERT(dims[i] >= 0);
    t->dims[i] = dims[i];
  }
  size_t bytes = wf_tensor_bytes(t);
  /* calloc(0) may return NULL; keep data non-NULL so empty tensors need no special case. */
  t->data = calloc(bytes ? bytes : 1, 1);
  WF_ASSERT(t->data != NULL);
  return t;
}

wf_tensor *wf_tensor_clone(const wf_tensor *t) {
  wf_tensor *c = wf_tensor_new(t->dtype, t->rank, t->dims);
  memcpy(c->data, t->data, wf_tensor_bytes(t));
  return c;
}

void wf_tensor_free(wf_tensor *t) {
  if (!t) return;
  free(t->data);
  free(t);
}

int64_t wf_tensor_numel(const wf_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

size_t wf_tensor_bytes(const wf_tensor *t) {
  return (size_t)wf_tensor_numel(t) * wf_dtype_size(t->dtype);
}

double wf_tensor_get(const wf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case WF_F32: return ((const float *)t->data)[i];
  case WF_F16: return wf_f16_to_f32(((const uint16_t *)t->data)[i]);
  case WF_BF16: return wf_bf16_to_f32(((const uint16_t *)t->data)[i]);
  case WF_I32: return ((const int32_t *)t->data)[i];
  case WF_I64: return (double)((const int64_t *)t->data)[i];
  case WF_BOOL: return ((const uint8_t *)t->data)[i] ? 1.0 : 0.0;
  default: WF_UNREACHABLE("dtype");
  }
}

/* Integer stores saturate instead of invoking undefined behaviour on out-of-range doubles;
 * NaN stores 0 (what a cast of NaN to an integer does on most hardware is not portable). */
static int64_t sat_i64(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return v >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

void wf_tensor_set(wf_tensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case WF_F32: ((float *)t->data)[i] = (float)v; break;
  /* Double -> f32 -> f16 can round twice; the interpreter's values are f32-accurate anyway,
   * and callers that need exact f16 rounding of a float use wf_f32_to_f16 directly. */
  case WF_F16: ((uint16_t *)t->data)[i] = wf_f32_to_f16((float)v); break;
  case WF_BF16: ((uint16_t *)t->data)[i] = wf_f32_to_bf16((float)v); break;
  case WF_I32: ((int32_t *)t->data)[i] = (int32_t)sat_i64(v, -2147483648.0, 2147483647.0); break;
  case WF_I64: ((int64_t *)t->data)[i] = sat_i64(v, -9.2233720368547758e18, 9.2233720368547758e18); break;
  case WF_BOOL: ((uint8_t *)t->data)[i] = v != 0.0; break;
  default: WF_UNREACHABLE("dtype");
  }
}

int wf_tensor_allclose(const wf_tensor *a, const wf_tensor *b, double atol, double rtol,
                       double *max_abs_err) {
  if (max_abs_err) *max_abs_err = 0.0;
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  int ok = 1;
  double worst = 0.0;
  int64_t n = wf_tensor_numel(a);
  for (int64_t i = 0; i < n; i++) {
    double x = wf_tensor_get(a, i), y = wf_tensor_get(b, i);
    if (isnan(x) || isnan(y)) {
      if (!(isnan(x) && isnan(y))) { ok = 0; worst = INFINITY; }
      continue;
    }
    if (x == y) continue; /* covers equal infinities */
    double d = fabs(x - y);
    if (d > worst) worst = d;
    if (!(d <= atol + rtol * fabs(y))) ok = 0;
  }
  if (max_abs_err) *max_abs_err = worst;
  return ok;
}
