/* attention(q, k, v[, mask]) {scale, causal}: the reference kernel against the unfused
 * matmul / scale / mask / softmax / matmul chain it replaces (MHA, GQA, MQA; additive, bool
 * and causal masks), against values known in closed form, and the verifier's shape checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/tensor.h"
#include "wf_test.h"

static uint32_t g_seed = 12345;
static double rnd(void) { /* xorshift, uniform in [-1, 1) */
  g_seed ^= g_seed << 13, g_seed ^= g_seed >> 17, g_seed ^= g_seed << 5;
  return (double)(g_seed % 20000) / 10000.0 - 1.0;
}

static wf_tensor *rand_t(int rank, const int64_t *dims) {
  wf_tensor *t = wf_tensor_new(WF_F32, rank, dims);
  for (int64_t i = 0; i < wf_tensor_numel(t); i++) wf_tensor_set(t, i, rnd());
  return t;
}

/* Parses text and runs @main; NULL if it does not parse, verify or run. */
static wf_tensor *run_text(const char *text, int n, wf_tensor **in) {
  wf_module *m = wf_parse_string(text, "test");
  if (!m) return NULL;
  wf_tensor *out[2] = {0};
  int nout = 0;
  int rc = wf_verify_module(m) ? -1 : wf_interpret(m, "main", n, in, out, 2, &nout);
  wf_module_free(m);
  return rc == 0 && nout == 1 ? out[0] : NULL;
}

static double max_err(const wf_tensor *a, const wf_tensor *b) {
  double e = 0.0;
  if (!a || !b || wf_tensor_numel(a) != wf_tensor_numel(b)) return INFINITY;
  for (int64_t i = 0; i < wf_tensor_numel(a); i++) {
    double d = fabs(wf_tensor_get(a, i) - wf_tensor_get(b, i));
    if (d > e || isnan(d)) e = isnan(d) ? INFINITY : d;
  }
  return e;
}

static void free_all(wf_tensor **t, int n) {
  for (int i = 0; i < n; i++) wf_tensor_free(t[i]);
}

/* MHA with an additive mask of shape [1, 1, S, T]. */
static void test_mha_additive(void) {
  const char *unfused =
      "module {\n const @sc : f32[] = dense<0.5>\n"
      " func @main(%q: f32[2, 3, 4, 8], %k: f32[2, 3, 6, 8], %v: f32[2, 3, 6, 5], %m: f32[1, 1, 4, 6]) -> f32[2, 3, 4, 5] {\n"
      "  %kt = transpose(%k) {perm = [0, 1, 3, 2]} : f32[2, 3, 8, 6]\n"
      "  %s = matmul(%q, %kt) : f32[2, 3, 4, 6]\n"
      "  %c = mul(%s, @sc) : f32[2, 3, 4, 6]\n"
      "  %a = add(%c, %m) : f32[2, 3, 4, 6]\n"
      "  %p = softmax(%a) {axis = -1} : f32[2, 3, 4, 6]\n"
      "  %o = matmul(%p, %v) : f32[2, 3, 4, 5]\n  return %o\n }\n}\n";
  const char *fused =
      "module {\n func @main(%q: f32[2, 3, 4, 8], %k: f32[2, 3, 6, 8], %v: f32[2, 3, 6, 5], %m: f32[1, 1, 4, 6]) -> f32[2, 3, 4, 5] {\n"
      "  %o = attention(%q, %k, %v, %m) {scale = 0.5} : f32[2, 3, 4, 5]\n  return %o\n }\n}\n";
  wf_tensor *in[4] = {rand_t(4, (int64_t[]){2, 3, 4, 8}), rand_t(4, (int64_t[]){2, 3, 6, 8}),
                      rand_t(4, (int64_t[]){2, 3, 6, 5}), rand_t(4, (int64_t[]){1, 1, 4, 6})};
  wf_tensor *a = run_text(unfused, 4, in), *b = run_text(fused, 4, in);
  double e = max_err(a, b);
  CHECK(a && b && e <= 1e-6, "mha additive: max error %g", e);
  free_all(in, 4);
  wf_tensor_free(a);
  wf_tensor_free(b);
}

/* GQA (4 query heads over 2 kv heads) with a causal mask, S = 3 queries over T = 5 keys: the
 * unfused form repeats each kv head twice (head h reads kv head h / 2) and adds the
 * bottom-right aligned lower-triangular -inf mask. */
static void test_gqa_causal(void) {
  const char *unfused =
      "module {\n const @sc : f32[] = dense<0.35>\n"
      " const @mask : f32[3, 5] = dense<[0.0, 0.0, 0.0, -inf, -inf, 0.0, 0.0, 0.0, 0.0, -inf, 0.0, 0.0, 0.0, 0.0, 0.0]>\n"
      " func @main(%q: f32[1, 4, 3, 6], %k: f32[1, 2, 5, 6], %v: f32[1, 2, 5, 6]) -> f32[1, 4, 3, 6] {\n"
      "  %k0 = slice(%k) {starts = [0], ends = [1], axes = [1], steps = [1]} : f32[1, 1, 5, 6]\n"
      "  %k1 = slice(%k) {starts = [1], ends = [2], axes = [1], steps = [1]} : f32[1, 1, 5, 6]\n"
      "  %kr = concat(%k0, %k0, %k1, %k1) {axis = 1} : f32[1, 4, 5, 6]\n"
      "  %v0 = slice(%v) {starts = [0], ends = [1], axes = [1], steps = [1]} : f32[1, 1, 5, 6]\n"
      "  %v1 = slice(%v) {starts = [1], ends = [2], axes = [1], steps = [1]} : f32[1, 1, 5, 6]\n"
      "  %vr = concat(%v0, %v0, %v1, %v1) {axis = 1} : f32[1, 4, 5, 6]\n"
      "  %kt = transpose(%kr) {perm = [0, 1, 3, 2]} : f32[1, 4, 6, 5]\n"
      "  %s = matmul(%q, %kt) : f32[1, 4, 3, 5]\n"
      "  %c = mul(%s, @sc) : f32[1, 4, 3, 5]\n"
      "  %a = add(%c, @mask) : f32[1, 4, 3, 5]\n"
      "  %p = softmax(%a) {axis = -1} : f32[1, 4, 3, 5]\n"
      "  %o = matmul(%p, %vr) : f32[1, 4, 3, 6]\n  return %o\n }\n}\n";
  const char *fused =
      "module {\n func @main(%q: f32[1, 4, 3, 6], %k: f32[1, 2, 5, 6], %v: f32[1, 2, 5, 6]) -> f32[1, 4, 3, 6] {\n"
      "  %o = attention(%q, %k, %v) {scale = 0.35, causal = true} : f32[1, 4, 3, 6]\n  return %o\n }\n}\n";
  wf_tensor *in[3] = {rand_t(4, (int64_t[]){1, 4, 3, 6}), rand_t(4, (int64_t[]){1, 2, 5, 6}),
                      rand_t(4, (int64_t[]){1, 2, 5, 6})};
  wf_tensor *a = run_text(unfused, 3, in), *b = run_text(fused, 3, in);
  /* the attribute is a double while the unfused chain multiplies by the f32 constant */
  double e = max_err(a, b);
  CHECK(a && b && e <= 1e-6, "gqa causal: max error %g", e);
  free_all(in, 3);
  wf_tensor_free(a);
  wf_tensor_free(b);
}

/* MQA (one kv head, broadcast by matmul) with a bool mask applied by where(mask, s, -inf). */
static void test_mqa_bool(void) {
  const char *unfused =
      "module {\n const @ninf : f32[] = dense<-inf>\n"
      " func @main(%q: f32[2, 3, 4, 4], %k: f32[2, 1, 4, 4], %v: f32[2, 1, 4, 3], %m: bool[2, 1, 4, 4]) -> f32[2, 3, 4, 3] {\n"
      "  %kt = transpose(%k) {perm = [0, 1, 3, 2]} : f32[2, 1, 4, 4]\n"
      "  %s = matmul(%q, %kt) : f32[2, 3, 4, 4]\n"
      "  %a = where(%m, %s, @ninf) : f32[2, 3, 4, 4]\n"
      "  %p = softmax(%a) {axis = -1} : f32[2, 3, 4, 4]\n"
      "  %o = matmul(%p, %v) : f32[2, 3, 4, 3]\n  return %o\n }\n}\n";
  const char *fused =
      "module {\n func @main(%q: f32[2, 3, 4, 4], %k: f32[2, 1, 4, 4], %v: f32[2, 1, 4, 3], %m: bool[2, 1, 4, 4]) -> f32[2, 3, 4, 3] {\n"
      "  %o = attention(%q, %k, %v, %m) {scale = 1.0} : f32[2, 3, 4, 3]\n  return %o\n }\n}\n";
  wf_tensor *in[4] = {rand_t(4, (int64_t[]){2, 3, 4, 4}), rand_t(4, (int64_t[]){2, 1, 4, 4}),
                      rand_t(4, (int64_t[]){2, 1, 4, 3}), wf_tensor_new(WF_BOOL, 4, (int64_t[]){2, 1, 4, 4})};
  /* every row keeps its first key, so no row is all -inf */
  for (int64_t i = 0; i < 32; i++) ((uint8_t *)in[3]->data)[i] = (i % 4 == 0) || rnd() > 0;
  wf_tensor *a = run_text(unfused, 4, in), *b = run_text(fused, 4, in);
  double e = max_err(a, b);
  CHECK(a && b && e <= 1e-6, "mqa bool: max error %g", e);
  free_all(in, 4);
  wf_tensor_free(a);
  wf_tensor_free(b);
}

/* With q = 0 every allowed key has the same score, so row i (causal, S = 2, T = 3) is the
 * mean of v rows 0..i+1: row 0 = mean(v0, v1), row 1 = mean(v0, v1, v2). */
static void test_closed_form(void) {
  const char *fused =
      "module {\n func @main(%q: f32[1, 1, 2, 2], %k: f32[1, 1, 3, 2], %v: f32[1, 1, 3, 1]) -> f32[1, 1, 2, 1] {\n"
      "  %o = attention(%q, %k, %v) {scale = 3.0, causal = true} : f32[1, 1, 2, 1]\n  return %o\n }\n}\n";
  wf_tensor *in[3] = {wf_tensor_new(WF_F32, 4, (int64_t[]){1, 1, 2, 2}), rand_t(4, (int64_t[]){1, 1, 3, 2}),
                      wf_tensor_new(WF_F32, 4, (int64_t[]){1, 1, 3, 1})};
  wf_tensor_set(in[2], 0, 1.0), wf_tensor_set(in[2], 1, 2.0), wf_tensor_set(in[2], 2, 6.0);
  wf_tensor *r = run_text(fused, 3, in);
  CHECK(r && fabs(wf_tensor_get(r, 0) - 1.5) < 1e-6 && fabs(wf_tensor_get(r, 1) - 3.0) < 1e-6,
        "closed form: got %g %g", r ? wf_tensor_get(r, 0) : NAN, r ? wf_tensor_get(r, 1) : NAN);
  free_all(in, 3);
  wf_tensor_free(r);
}

static int g_errors;
static void count_sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)loc, (void)user, (void)msg;
  if (sev == WF_SEV_ERROR) g_errors++;
}

static int verify_errors(const char *sig, const char *op) {
  char text[1024];
  snprintf(text, sizeof text, "module {\n func @main(%s) {\n  %s\n  return\n }\n}\n", sig, op);
  wf_module *m = wf_parse_string(text, "verify");
  if (!m) return -1;
  g_errors = 0;
  wf_diag_set_sink(count_sink, NULL);
  int n = wf_verify_module(m);
  wf_diag_set_sink(NULL, NULL);
  wf_module_free(m);
  return n;
}

static void test_verifier(void) {
  const char *sig = "%q: f32[1, 3, 2, 4], %k: f32[1, 2, 5, 4], %v: f32[1, 2, 5, 4], %m: f32[2, 5], %b: i32[2, 5]";
  CHECK(verify_errors(sig, "%o = attention(%q, %k, %v) {scale = 1.0} : f32[1, 3, 2, 4]") > 0,
        "3 query heads over 2 kv heads must be rejected");
  const char *ok = "%q: f32[1, 4, 2, 4], %k: f32[1, 2, 5, 4], %v: f32[1, 2, 5, 3], %m: f32[2, 5], %b: i32[2, 5]";
  CHECK(verify_errors(ok, "%o = attention(%q, %k, %v, %m) {scale = 1.0} : f32[1, 4, 2, 3]") == 0, "valid GQA");
  CHECK(verify_errors(ok, "%o = attention(%q, %k, %v, %b) {scale = 1.0} : f32[1, 4, 2, 3]") > 0, "i32 mask");
  CHECK(verify_errors(ok, "%o = attention(%q, %k, %v) : f32[1, 4, 2, 3]") > 0, "scale is required");
  CHECK(verify_errors(ok, "%o = attention(%q, %v, %k) {scale = 1.0} : f32[1, 4, 2, 4]") > 0, "k/v head dims");
  CHECK(verify_errors(ok, "%o = attention(%q, %k) {scale = 1.0} : f32[1, 4, 2, 3]") > 0, "two operands");
}

int main(void) {
  test_mha_additive();
  test_gqa_causal();
  test_mqa_bool();
  test_closed_form();
  test_verifier();
  return wf_test_result("test_attention");
}
