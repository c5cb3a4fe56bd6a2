/* Small helpers for the IR unit tests (test_interp, test_verify, test_npy): build one
 * function with the ir.h API, run the interpreter, capture diagnostics. No test framework:
 * CHECK counts failures and prints file:line; main returns nonzero if any failed. */
#ifndef H2_TESTUTIL_H
#define H2_TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"
#include "waferc/tensor.h"

#include "wf_test.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define TY(dt, ...) wf_type_make(dt, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define TY0(dt) wf_type_make(dt, 0, NULL)

/* ---- captured diagnostics ---- */
static char g_diag[8192];
static int g_ndiag;
static __attribute__((unused)) void diag_sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)user;
  size_t n = strlen(g_diag);
  snprintf(g_diag + n, sizeof g_diag - n, "%s:%u:%u: %s: %s\n", loc.file ? loc.file : "-", loc.line,
           loc.col, sev == WF_SEV_ERROR ? "error" : sev == WF_SEV_WARNING ? "warning" : "note", msg);
  g_ndiag++;
}
static __attribute__((unused)) void diag_capture(void) {
  g_diag[0] = 0;
  g_ndiag = 0;
  wf_diag_set_sink(diag_sink, NULL);
}
static __attribute__((unused)) void diag_release(void) { wf_diag_set_sink(NULL, NULL); }
#define CHECK_DIAG(sub) CHECK(strstr(g_diag, sub) != NULL, "diagnostics lack \"%s\"; got:\n%s", sub, g_diag)

/* ---- one-function modules ---- */
static wf_module *g_m;
static wf_func *g_f;
static int g_line;
static __attribute__((unused)) wf_loc next_loc(void) { return wf_loc_make("t.wir", (uint32_t)++g_line, 3); }

static __attribute__((unused)) void begin(void) {
  g_m = wf_module_new();
  g_f = wf_func_new(g_m, "main", wf_loc_make("t.wir", 1, 1));
  g_line = 1;
}
static __attribute__((unused)) wf_value arg(wf_type t) { return wf_func_add_arg(g_f, t, NULL); }
static __attribute__((unused)) wf_op *op1(wf_opcode c, int n, const wf_value *ins, wf_type rt) {
  return wf_op_append(g_f, c, n, ins, 1, &rt, next_loc());
}
static __attribute__((unused)) void finish(int n, const wf_value *vals) {
  wf_type ts[8];
  for (int i = 0; i < n; i++) ts[i] = *wf_value_type(g_f, vals[i]);
  wf_op_append(g_f, WF_OP_RETURN, n, vals, 0, NULL, next_loc());
  wf_func_set_result_types(g_f, n, ts);
}
static __attribute__((unused)) void end(void) {
  wf_module_free(g_m);
  g_m = NULL;
  g_f = NULL;
}

static __attribute__((unused)) wf_tensor *tens(wf_type t, const double *v) {
  wf_tensor *x = wf_tensor_new(t.dtype, t.rank, t.dims);
  for (int64_t i = 0; i < wf_tensor_numel(x); i++) wf_tensor_set(x, i, v ? v[i] : 0.0);
  return x;
}
#define VALS(...) ((const double[]){__VA_ARGS__})

static __attribute__((unused)) void check_vals(const char *what, const wf_tensor *t, const double *want, int64_t n, double tol) {
  CHECK(t != NULL, "%s: no tensor", what);
  if (!t) return;
  CHECK(wf_tensor_numel(t) == n, "%s: %lld elements, want %lld", what, (long long)wf_tensor_numel(t), (long long)n);
  if (wf_tensor_numel(t) != n) return;
  for (int64_t i = 0; i < n; i++) {
    double g = wf_tensor_get(t, i);
    CHECK(fabs(g - want[i]) <= tol || (isnan(g) && isnan(want[i])), "%s[%lld] = %.9g, want %.9g", what,
          (long long)i, g, want[i]);
  }
}

#endif
