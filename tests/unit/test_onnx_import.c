/* The ONNX frontend's C API (waferc/onnx.h): wf_onnx_import's options and exit codes, and
 * wf_onnx_read_tensor, on the models and tensors of tests/onnx/models (gen_models.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/onnx.h"

#include "wf_test.h"

static char g_dir[1024];
static const char *model(const char *name) {
  static char buf[4][1200];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
  return b;
}

static char g_msgs[8192];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)user;
  size_t n = strlen(g_msgs);
  snprintf(g_msgs + n, sizeof g_msgs - n, "%s: %s\n", loc.file ? loc.file : "-", msg);
}
static void quiet(void) {
  g_msgs[0] = 0;
  wf_diag_set_sink(sink, NULL);
}
static void loud(void) { wf_diag_set_sink(NULL, NULL); }

static int count_ops(const wf_func *f, wf_opcode code) {
  int n = 0;
  wf_func_foreach_op(f, op) n += op->code == code;
  return n;
}

static void test_options(void) {
  wf_onnx_opts o = WF_ONNX_OPTS_DEFAULT;
  const char *shapes[] = {"x=1x4x8"};
  o.input_shapes = shapes;
  o.n_input_shapes = 1;
  o.func_name = "fwd";
  wf_module *m = NULL;
  int rc = wf_onnx_import(model("gpt2_shapes.onnx"), &o, &m);
  CHECK(rc == WF_EXIT_OK && m, "gpt2_shapes: rc %d", rc);
  if (!m) return;
  wf_func *f = wf_module_find_func(m, "fwd");
  CHECK(f != NULL, "func_name 'fwd' not used");
  if (f) {
    CHECK(f->n_args == 1 && wf_value_type(f, f->args[0])->dims[1] == 4, "the input is not f32[1, 4, 8]");
    CHECK(count_ops(f, WF_OP_COS) == 0, "the dead Cos was kept");
    CHECK(count_ops(f, WF_OP_MATMUL) == 1, "expected one matmul");
  }
  wf_module_free(m);

  o.keep_dead = 1;
  rc = wf_onnx_import(model("gpt2_shapes.onnx"), &o, &m);
  CHECK(rc == WF_EXIT_OK && m, "gpt2_shapes keep_dead: rc %d", rc);
  if (m) {
    CHECK(count_ops(wf_module_find_func(m, "fwd"), WF_OP_COS) == 1, "keep_dead dropped the Cos");
    wf_module_free(m);
  }
}

/* An input given a value at import time folds: Relu of the constant is the output. */
static void test_const_inputs(void) {
  wf_tensor *x = wf_tensor_new(WF_F32, 2, (int64_t[]){2, 4});
  for (int i = 0; i < 8; i++) wf_tensor_set(x, i, i - 4);
  wf_onnx_opts o = WF_ONNX_OPTS_DEFAULT;
  const char *names[] = {"x"};
  o.const_input_names = names;
  o.const_input_values = &x;
  o.n_const_inputs = 1;
  wf_module *m = NULL;
  int rc = wf_onnx_import(model("dynamic.onnx"), &o, &m);
  CHECK(rc == WF_EXIT_OK && m, "dynamic.onnx with a constant x: rc %d", rc);
  if (m) {
    wf_func *f = wf_module_find_func(m, "main");
    CHECK(f && f->n_args == 0 && count_ops(f, WF_OP_RELU) == 0, "x did not fold");
    wf_tensor *out[2];
    int n = 0;
    CHECK(wf_interpret(m, "main", 0, NULL, out, 2, &n) == 0 && n == 1, "interpret failed");
    for (int i = 0; n == 1 && i < 8; i++)
      CHECK(wf_tensor_get(out[0], i) == (i < 4 ? 0 : i - 4), "relu element %d is %g", i, wf_tensor_get(out[0], i));
    if (n == 1) wf_tensor_free(out[0]);
    wf_module_free(m);
  }
  /* a wrong dtype for the constant is an input error */
  wf_tensor *bad = wf_tensor_new(WF_I64, 2, (int64_t[]){2, 4});
  o.const_input_values = &bad;
  quiet();
  rc = wf_onnx_import(model("dynamic.onnx"), &o, &m);
  loud();
  CHECK(rc == WF_EXIT_INPUT && !m, "a mismatched constant input was accepted (rc %d)", rc);
  wf_tensor_free(bad);
  wf_tensor_free(x);
}

static void test_exit_codes(void) {
  wf_module *m = (wf_module *)1;
  quiet();
  int rc = wf_onnx_import(model("unsupported.onnx"), NULL, &m);
  loud();
  CHECK(rc == WF_EXIT_UNSUPPORTED && m == NULL, "unsupported.onnx: rc %d", rc);
  CHECK(strstr(g_msgs, "(Foo, opset 17)") && strstr(g_msgs, "(Bar, opset 17)") && strstr(g_msgs, "'Baz' of domain"),
        "not every unsupported op was named:\n%s", g_msgs);
  quiet();
  rc = wf_onnx_import(model("no-such-model.onnx"), NULL, &m);
  loud();
  CHECK(rc == WF_EXIT_IO, "a missing file: rc %d", rc);
  quiet();
  rc = wf_onnx_import(model("tensor_raw.pb"), NULL, &m); /* valid protobuf, not a model */
  loud();
  CHECK(rc == WF_EXIT_INPUT, "a TensorProto read as a model: rc %d", rc);
  quiet();
  rc = wf_onnx_import(model("badshape.onnx"), NULL, &m);
  loud();
  CHECK(rc == WF_EXIT_INPUT && strstr(g_msgs, "node '/h.0/attn/MatMul' (MatMul, opset 14)"), "badshape: rc %d\n%s", rc,
        g_msgs);
}

static void test_read_tensor(void) {
  wf_tensor *t = wf_onnx_read_tensor(model("tensor_raw.pb"));
  CHECK(t && t->dtype == WF_F32 && t->rank == 2 && t->dims[0] == 2 && t->dims[1] == 3, "tensor_raw.pb");
  for (int i = 0; t && i < 6; i++) CHECK(wf_tensor_get(t, i) == i - 2.5, "raw element %d", i);
  wf_tensor_free(t);
  t = wf_onnx_read_tensor(model("tensor_f64.pb"));
  CHECK(t && t->dtype == WF_F32 && t->rank == 1 && t->dims[0] == 3, "tensor_f64.pb is not read as f32[3]");
  if (t) CHECK(wf_tensor_get(t, 0) == 0.5 && wf_tensor_get(t, 1) == -1.25 && wf_tensor_get(t, 2) == 1e10, "f64 values");
  wf_tensor_free(t);
  t = wf_onnx_read_tensor(model("tensor_u8.pb"));
  CHECK(t && t->dtype == WF_I32 && wf_tensor_get(t, 1) == 255, "uint8 is not widened to i32");
  wf_tensor_free(t);
  quiet();
  t = wf_onnx_read_tensor(model("external.bin"));
  loud();
  CHECK(t == NULL, "a non-tensor file was read as a tensor");
  wf_tensor_free(t);
}

/* wf_onnx_import_buffer: a model's bytes import as the file does, external data found beside
 * the path given; bad bytes are the same error. */
static void test_buffer(void) {
  const char *path = model("external.onnx");
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "cannot open %s", path);
  if (!f) return;
  unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  wf_module *a = NULL, *b = NULL;
  int ra = wf_onnx_import(path, NULL, &a), rb = wf_onnx_import_buffer(buf, n, path, NULL, &b);
  CHECK(ra == WF_EXIT_OK && rb == WF_EXIT_OK && a && b, "external.onnx: rc %d from the file, %d from memory", ra, rb);
  if (a && b) {
    char *ta = wf_print_module_str(a, NULL), *tb = wf_print_module_str(b, NULL);
    CHECK(ta && tb && !strcmp(ta, tb), "external.onnx from memory imports differently");
    free(ta);
    free(tb);
  }
  wf_module_free(a);
  wf_module_free(b);
  quiet();
  b = (wf_module *)1;
  rb = wf_onnx_import_buffer(buf, n / 2, path, NULL, &b);
  loud();
  CHECK(rb == WF_EXIT_INPUT && b == NULL && strstr(g_msgs, "truncated or corrupt"), "half a model: rc %d\n%s", rb, g_msgs);
  quiet();
  rb = wf_onnx_import_buffer(NULL, 0, path, NULL, &b);
  loud();
  CHECK(rb != WF_EXIT_OK && b == NULL, "an empty model imported");
}

int main(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  snprintf(g_dir, sizeof g_dir, "%s/tests/onnx/models", src ? src : "../..");
  test_options();
  test_const_inputs();
  test_exit_codes();
  test_read_tensor();
  test_buffer();
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  return g_failures != 0;
}
