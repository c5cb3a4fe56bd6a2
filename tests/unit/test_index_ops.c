/* The IR ops the ONNX frontend added (expand, trilu, topk, scatter_elements, argmax): shape rules and
 * reference kernels against hand-computed results, and the verifier's rejections. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"
#include "waferc/tensor.h"

#include "wf_test.h"

/* Parses `text`, runs @main on one f32 input holding `in`, and checks output `which`. */
static void run(const char *what, const char *text, int rank, const int64_t *dims, const double *in, int which,
                const double *want, int64_t n_want) {
  wf_module *m = wf_parse_string(text, what);
  CHECK(m != NULL, "%s: does not parse", what);
  if (!m) return;
  wf_tensor *x = wf_tensor_new(WF_F32, rank, dims);
  for (int64_t i = 0; i < wf_tensor_numel(x); i++) wf_tensor_set(x, i, in[i]);
  wf_tensor *outs[4] = {0};
  int n = 0;
  int rc = wf_interpret(m, "main", 1, &x, outs, 4, &n);
  CHECK(rc == 0 && n > which, "%s: interpreter failed", what);
  if (rc == 0 && n > which) {
    CHECK(wf_tensor_numel(outs[which]) == n_want, "%s: %lld elements, want %lld", what,
          (long long)wf_tensor_numel(outs[which]), (long long)n_want);
    for (int64_t i = 0; i < n_want && i < wf_tensor_numel(outs[which]); i++)
      CHECK(wf_tensor_get(outs[which], i) == want[i], "%s: element %lld is %g, want %g", what, (long long)i,
            wf_tensor_get(outs[which], i), want[i]);
  }
  for (int i = 0; i < n; i++) wf_tensor_free(outs[i]);
  wf_tensor_free(x);
  wf_module_free(m);
}

static int capture_errors;
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)loc, (void)msg, (void)user;
  if (sev == WF_SEV_ERROR) capture_errors++;
}

/* The verifier must reject `text`. */
static void reject(const char *what, const char *text) {
  capture_errors = 0;
  wf_diag_set_sink(sink, NULL);
  wf_module *m = wf_parse_string(text, what);
  int bad = !m || wf_verify_module(m) != 0;
  wf_diag_set_sink(NULL, NULL);
  CHECK(bad && capture_errors > 0, "%s: accepted", what);
  wf_module_free(m);
}

int main(void) {
  /* expand [3,1] -> [2,3,2]: rows repeat along the new and the stretched dims */
  run("expand",
      "module { func @main(%x: f32[3, 1]) -> f32[2, 3, 2] {\n"
      "  %y = expand(%x) : f32[2, 3, 2]\n  return %y\n} }",
      2, (int64_t[]){3, 1}, (double[]){1, 2, 3}, 0, (double[]){1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}, 12);

  /* trilu on [2,3] = [[1,2,3],[4,5,6]]: upper k=1 keeps j-i >= 1; lower k=0 keeps j <= i */
  const double m23[] = {1, 2, 3, 4, 5, 6};
  run("trilu upper k=1",
      "module { func @main(%x: f32[2, 3]) -> f32[2, 3] {\n"
      "  %y = trilu(%x) {upper = true, k = 1} : f32[2, 3]\n  return %y\n} }",
      2, (int64_t[]){2, 3}, m23, 0, (double[]){0, 2, 3, 0, 0, 6}, 6);
  run("trilu lower k=0",
      "module { func @main(%x: f32[2, 3]) -> f32[2, 3] {\n"
      "  %y = trilu(%x) {upper = false} : f32[2, 3]\n  return %y\n} }",
      2, (int64_t[]){2, 3}, m23, 0, (double[]){1, 0, 0, 4, 5, 0}, 6);

  /* topk k=2 along the last axis of [[3,1,3,2],[0,5,4,5]]: ties keep the lower index */
  const char *topk =
      "module { func @main(%x: f32[2, 4]) -> (f32[2, 2], i64[2, 2]) {\n"
      "  %v, %i = topk(%x) {k = 2} : f32[2, 2], i64[2, 2]\n  return %v, %i\n} }";
  const double t24[] = {3, 1, 3, 2, 0, 5, 4, 5};
  run("topk values", topk, 2, (int64_t[]){2, 4}, t24, 0, (double[]){3, 3, 5, 5}, 4);
  run("topk indices", topk, 2, (int64_t[]){2, 4}, t24, 1, (double[]){0, 2, 1, 3}, 4);
  run("topk smallest along axis 0",
      "module { func @main(%x: f32[2, 4]) -> (f32[1, 4], i64[1, 4]) {\n"
      "  %v, %i = topk(%x) {k = 1, axis = 0, largest = false} : f32[1, 4], i64[1, 4]\n  return %v, %i\n} }",
      2, (int64_t[]){2, 4}, t24, 1, (double[]){1, 0, 0, 0}, 4);

  /* argmax of [[3,1,3,2],[0,5,4,5]]: ties go to the first index (the last with
   * select_last_index); axis 0 without keepdims; NaN wins (numpy's rule, the first NaN) */
  run("argmax ties",
      "module { func @main(%x: f32[2, 4]) -> i64[2, 1] {\n"
      "  %i = argmax(%x) {axis = 1} : i64[2, 1]\n  return %i\n} }",
      2, (int64_t[]){2, 4}, t24, 0, (double[]){0, 1}, 2);
  run("argmax ties, select_last_index",
      "module { func @main(%x: f32[2, 4]) -> i64[2, 1] {\n"
      "  %i = argmax(%x) {axis = -1, select_last_index = true} : i64[2, 1]\n  return %i\n} }",
      2, (int64_t[]){2, 4}, t24, 0, (double[]){2, 3}, 2);
  run("argmax axis 0, no keepdims",
      "module { func @main(%x: f32[2, 4]) -> i64[4] {\n"
      "  %i = argmax(%x) {keepdims = false} : i64[4]\n  return %i\n} }",
      2, (int64_t[]){2, 4}, t24, 0, (double[]){0, 1, 1, 1}, 4);
  run("argmax NaN",
      "module { func @main(%x: f32[4]) -> i64[1] {\n"
      "  %i = argmax(%x) : i64[1]\n  return %i\n} }",
      1, (int64_t[]){4}, (double[]){1, NAN, 7, NAN}, 0, (double[]){1}, 1);

  /* scatter_elements axis 1 into zeros[2,3]: indices [[2,0],[1,-1]], updates [[10,20],[30,40]] */
  const char *scatter =
      "module {\n"
      "  const @ix : i64[2, 2] = dense<[2, 0, 1, -1]>\n"
      "  const @up : f32[2, 2] = dense<[10.0, 20.0, 30.0, 40.0]>\n"
      "  func @main(%x: f32[2, 3]) -> f32[2, 3] {\n"
      "    %y = scatter_elements(%x, @ix, @up) {axis = 1, reduction = ";
  const char *tail = "} : f32[2, 3]\n    return %y\n} }";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s", scatter, "none", tail);
  run("scatter none", buf, 2, (int64_t[]){2, 3}, m23, 0, (double[]){20, 2, 10, 4, 30, 40}, 6);
  snprintf(buf, sizeof buf, "%s%s%s", scatter, "add", tail);
  run("scatter add", buf, 2, (int64_t[]){2, 3}, m23, 0, (double[]){21, 2, 13, 4, 35, 46}, 6);
  snprintf(buf, sizeof buf, "%s%s%s", scatter, "mul", tail);
  run("scatter mul", buf, 2, (int64_t[]){2, 3}, m23, 0, (double[]){20, 2, 30, 4, 150, 240}, 6);

  /* gather_elements axis 1 of [[1,2,3],[4,5,6]]: indices [[2,0],[1,-1]] */
  run("gather_elements",
      "module {\n  const @ix : i64[2, 2] = dense<[2, 0, 1, -1]>\n"
      "  func @main(%x: f32[2, 3]) -> f32[2, 2] {\n"
      "    %y = gather_elements(%x, @ix) {axis = 1} : f32[2, 2]\n    return %y\n} }",
      2, (int64_t[]){2, 3}, m23, 0, (double[]){3, 1, 5, 6}, 4);
  /* axis 0: out[i][j] = x[ix[i][j]][j] */
  run("gather_elements axis 0",
      "module {\n  const @ix : i64[1, 3] = dense<[1, 0, 1]>\n"
      "  func @main(%x: f32[2, 3]) -> f32[1, 3] {\n"
      "    %y = gather_elements(%x, @ix) : f32[1, 3]\n    return %y\n} }",
      2, (int64_t[]){2, 3}, m23, 0, (double[]){4, 2, 6}, 3);
  reject("gather_elements with f32 indices",
         "module { const @ix : f32[1] = dense<[0.0]>\n func @main(%x: f32[3]) -> f32[1] {\n"
         "  %y = gather_elements(%x, @ix) : f32[1]\n  return %y\n} }");
  reject("gather_elements of another rank",
         "module { const @ix : i64[1, 1] = dense<[0]>\n func @main(%x: f32[3]) -> f32[1, 1] {\n"
         "  %y = gather_elements(%x, @ix) : f32[1, 1]\n  return %y\n} }");
  reject("expand to an incompatible shape",
         "module { func @main(%x: f32[3, 2]) -> f32[3, 4] {\n  %y = expand(%x) : f32[3, 4]\n  return %y\n} }");
  reject("trilu of a vector",
         "module { func @main(%x: f32[3]) -> f32[3] {\n  %y = trilu(%x) : f32[3]\n  return %y\n} }");
  reject("argmax with an f32 result",
         "module { func @main(%x: f32[3]) -> f32[1] {\n  %i = argmax(%x) : f32[1]\n  return %i\n} }");
  reject("argmax along a missing axis",
         "module { func @main(%x: f32[3]) -> i64[1] {\n  %i = argmax(%x) {axis = 1} : i64[1]\n  return %i\n} }");
  reject("topk k larger than the dim",
         "module { func @main(%x: f32[3]) -> (f32[4], i64[4]) {\n  %v, %i = topk(%x) {k = 4} : f32[4], i64[4]\n"
         "  return %v, %i\n} }");
  reject("topk with f32 indices",
         "module { func @main(%x: f32[3]) -> (f32[1], f32[1]) {\n  %v, %i = topk(%x) {k = 1} : f32[1], f32[1]\n"
         "  return %v, %i\n} }");
  reject("scatter with an unknown reduction",
         "module { const @ix : i64[1] = dense<[0]>\n const @up : f32[1] = dense<[1.0]>\n"
         " func @main(%x: f32[3]) -> f32[3] {\n  %y = scatter_elements(%x, @ix, @up) {reduction = sum} : f32[3]\n"
         "  return %y\n} }");
  reject("scatter with mismatched updates",
         "module { const @ix : i64[2] = dense<[0, 1]>\n const @up : f32[1] = dense<[1.0]>\n"
         " func @main(%x: f32[3]) -> f32[3] {\n  %y = scatter_elements(%x, @ix, @up) : f32[3]\n  return %y\n} }");
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  return g_failures != 0;
}
