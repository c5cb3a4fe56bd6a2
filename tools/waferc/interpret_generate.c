/* waferc --interpret --generate=N: greedy generation by the reference interpreter, recomputing
 * the whole sequence at every step (interpret_generate.h). The shapes are static in the IR, so
 * each step re-imports the model at the step's length through main.c's loader: the path shares
 * nothing with a KV cache, which is the point of a reference for waferrun --generate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/fsutil.h"
#include "tools/waferc/interpret_generate.h"
#include "waferc/tensor.h"

static void silent(wf_severity sev, wf_loc loc, const char *msg, void *user) { (void)sev, (void)loc, (void)msg, (void)user; }

/* After the first step: the import warns the same at every length (a repaired exporter quirk, an
 * f64 input), so warnings are dropped; errors and notes are printed as without a sink. */
static void no_warnings(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  if (sev == WF_SEV_WARNING) return;
  wf_diag_set_sink(NULL, NULL);
  if (sev == WF_SEV_ERROR) wf_error(loc, "%s", msg);
  else wf_note(loc, "%s", msg);
  wf_diag_set_sink(no_warnings, user);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static wf_func *find_func(wf_module *m, const char *name) {
  wf_func *f = wf_module_find_func(m, name ? name : "main");
  if (!f && !name && m->n_funcs) f = m->funcs[0];
  if (!f) wf_error(WF_LOC_NONE, "no function @%s in the module", name ? name : "main");
  return f;
}

static void dims_str(char *buf, size_t cap, wf_dtype dt, int rank, const int64_t *dims) {
  size_t n = (size_t)snprintf(buf, cap, "%s[", wf_dtype_name(dt));
  for (int d = 0; d < rank && n < cap; d++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)dims[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* The prompt file: token ids, i64 or i32 [1, L], L >= 1, none negative. */
static wf_tensor *read_prompt(const char *name, size_t name_len, const char *path, int *rc) {
  wf_tensor *t = wf_npy_read(path);
  if (!t) {
    *rc = wf_exit_for_file(path, WF_EXIT_INPUT);
    return NULL;
  }
  char got[256];
  dims_str(got, sizeof got, t->dtype, t->rank, t->dims);
  if ((t->dtype != WF_I64 && t->dtype != WF_I32) || t->rank != 2 || t->dims[0] != 1 || t->dims[1] < 1) {
    wf_error_at(path, "the prompt for '%.*s' holds %s; --generate expects token ids, i64 or i32 [1, L] with L >= 1",
                  (int)name_len, name, got);
    goto bad;
  }
  for (int64_t i = 0; i < t->dims[1]; i++)
    if (wf_tensor_get(t, i) < 0) {
      wf_error_at(path, "the prompt for '%.*s' has the negative token id %lld at position %lld", (int)name_len, name,
                  (long long)wf_tensor_get(t, i), (long long)i);
      goto bad;
    }
  return t;
bad:
  wf_tensor_free(t);
  *rc = WF_EXIT_INPUT;
  return NULL;
}

/* A model whose prompt input imports without a shape for it has that shape fixed in the file: it
 * cannot take the growing sequence. The probe is silent; when the axis is dynamic it fails at
 * the input's binding, and the first real step reports whatever else is wrong. */
static int fixed_length(const wf_waferc_generate_ref *g, const char *const *others, int n_others, const char *name,
                        size_t name_len) {
  int show = wf_progress_enabled();
  wf_diag_set_sink(silent, NULL);
  if (show) wf_progress_set_quiet(1);
  int rc;
  wf_module *m = g->load(g->load_user, others, n_others, &rc);
  if (show) wf_progress_set_quiet(0);
  wf_diag_set_sink(NULL, NULL);
  int fixed = 0;
  if (m && rc == WF_EXIT_OK) {
    wf_func *f = wf_module_find_func(m, g->func ? g->func : "main");
    if (!f && !g->func && m->n_funcs) f = m->funcs[0];
    for (int a = 0; f && a < f->n_args; a++) {
      const char *an = wf_str(m, wf_value_get(f, f->args[a])->name);
      if (strlen(an) != name_len || strncmp(an, name, name_len) != 0) continue;
      const wf_type *ty = wf_value_type(f, f->args[a]);
      char shape[256];
      dims_str(shape, sizeof shape, ty->dtype, ty->rank, ty->dims);
      wf_error_at(g->model, "input '%s' has the fixed shape %s: --generate runs the model at every length from the "
                  "prompt's on and needs a dynamic sequence axis (export with dynamic_axes={'%s': {1: 'seq'}})",
                  an, shape, an);
      fixed = 1;
    }
  }
  if (m) wf_module_free(m);
  return fixed;
}

/* Index of the largest of n values, the first on ties and the first NaN if any (torch.argmax). */
static int64_t argmax_row(const wf_tensor *t, int64_t base, int64_t n) {
  int64_t best = 0;
  double bv = wf_tensor_get(t, base);
  for (int64_t v = 0; v < n; v++) {
    double x = wf_tensor_get(t, base + v);
    if (isnan(x)) return v;
    if (x > bv) best = v, bv = x;
  }
  return best;
}

/* One step: the model at [1, S] on seq[0..S), the argmax of the last row; -1 after an error. */
static int64_t step(const wf_waferc_generate_ref *g, const char *const *shapes, int n_shapes, const char *name,
                    size_t name_len, const int64_t *seq, int64_t s, int *rc) {
  int64_t next = -1;
  wf_tensor *in = NULL, *out[64] = {0};
  int n_out = 0;
  wf_module *m = g->load(g->load_user, shapes, n_shapes, rc);
  wf_func *f = m && *rc == WF_EXIT_OK ? find_func(m, g->func) : NULL;
  if (!f) {
    if (*rc == WF_EXIT_OK) *rc = WF_EXIT_USAGE;
    goto done;
  }
  if (f->n_args != 1) {
    wf_error_at(g->model, "@%s takes %d inputs; --generate feeds it the token ids '%.*s' only", wf_str(m, f->name),
                f->n_args, (int)name_len, name);
    *rc = WF_EXIT_UNSUPPORTED;
    goto done;
  }
  const wf_type *ty = wf_value_type(f, f->args[0]);
  if ((ty->dtype != WF_I64 && ty->dtype != WF_I32) || ty->rank != 2 || ty->dims[0] != 1 || ty->dims[1] != s) {
    char shape[256];
    dims_str(shape, sizeof shape, ty->dtype, ty->rank, ty->dims);
    wf_error_at(g->model, "input '%.*s' is %s at sequence length %lld; --generate needs token ids i64 or i32 [1, S]",
                (int)name_len, name, shape, (long long)s);
    *rc = WF_EXIT_UNSUPPORTED;
    goto done;
  }
  in = wf_tensor_new(ty->dtype, 2, (int64_t[]){1, s});
  for (int64_t i = 0; i < s; i++) wf_tensor_set(in, i, (double)seq[i]);
  int n_res = f->n_results < 64 ? f->n_results : 64;
  if (wf_interpret(m, wf_str(m, f->name), 1, &in, out, n_res, &n_out) != 0) {
    *rc = WF_EXIT_INPUT;
    goto done;
  }
  const wf_tensor *lg = n_out ? out[0] : NULL;
  if (!lg || lg->rank != 3 || lg->dims[0] != 1 || lg->dims[1] != s || lg->dims[2] < 1 ||
      (lg->dtype != WF_F32 && lg->dtype != WF_F16 && lg->dtype != WF_BF16)) {
    char shape[256] = "nothing";
    if (lg) dims_str(shape, sizeof shape, lg->dtype, lg->rank, lg->dims);
    wf_error_at(g->model, "the first output is %s at sequence length %lld; --generate takes the next token from "
                "logits [1, S, V] (float)", shape, (long long)s);
    *rc = WF_EXIT_UNSUPPORTED;
    goto done;
  }
  next = argmax_row(lg, (s - 1) * lg->dims[2], lg->dims[2]);
done:
  wf_tensor_free(in);
  for (int i = 0; i < n_out; i++) wf_tensor_free(out[i]);
  if (m) wf_module_free(m);
  return next;
}

static int write_tokens(const char *dir, const int64_t *tokens, int n) {
  if (wf_mkdir_p(dir) != 0) return WF_EXIT_IO;
  wf_tensor *t = wf_tensor_new(WF_I64, 2, (int64_t[]){1, n});
  memcpy(t->data, tokens, (size_t)n * sizeof *tokens);
  char *path = wf_path_join(dir, "tokens.npy");
  int rc = wf_npy_write(path, t) != 0 ? WF_EXIT_IO : WF_EXIT_OK;
  free(path);
  wf_tensor_free(t);
  return rc;
}

int wf_waferc_interpret_generate(const wf_waferc_generate_ref *g) {
  if (!ends_with(g->model, ".onnx")) {
    wf_error(WF_LOC_NONE, "--interpret --generate needs an ONNX model with a dynamic sequence axis ('%s' is not "
             ".onnx: a .wir function has fixed shapes)", g->model);
    return WF_EXIT_USAGE;
  }
  if (!g->output_dir) {
    wf_error(WF_LOC_NONE, "--interpret --generate needs --output-dir DIR (for tokens.npy)");
    return WF_EXIT_USAGE;
  }
  if (g->n_inputs != 1) {
    wf_error(WF_LOC_NONE, "--interpret --generate takes the prompt as exactly one --input NAME=FILE.npy (got %d)",
             g->n_inputs);
    return WF_EXIT_USAGE;
  }
  const char *eq = strchr(g->inputs[0], '=');
  if (!eq || eq == g->inputs[0] || !eq[1]) {
    wf_error(WF_LOC_NONE, "--input expects NAME=FILE.npy, got '%s'", g->inputs[0]);
    return WF_EXIT_USAGE;
  }
  const char *name = g->inputs[0];
  size_t name_len = (size_t)(eq - name);
  int rc = WF_EXIT_OK;
  wf_tensor *prompt = read_prompt(name, name_len, eq + 1, &rc);
  if (!prompt) return rc;
  int64_t len = prompt->dims[1];

  /* the step's shapes: the user's for other inputs, then the prompt input's at [0] */
  const char **shapes = calloc((size_t)g->n_input_shapes + 2, sizeof *shapes);
  int n_others = 0;
  for (int i = 0; i < g->n_input_shapes; i++) {
    const char *s = g->input_shapes[i];
    if (strncmp(s, name, name_len) != 0 || s[name_len] != '=') {
      shapes[1 + n_others++] = s;
      continue;
    }
    char want[64];
    snprintf(want, sizeof want, "1x%lld", (long long)len);
    if (strcmp(s + name_len + 1, want) != 0) {
      wf_error(WF_LOC_NONE, "--input-shape %s: with --generate the shape of '%.*s' comes from the prompt (%s) and "
               "grows by one each step", s, (int)name_len, name, want);
      rc = WF_EXIT_USAGE;
    }
  }
  int64_t *seq = malloc((size_t)(len + g->n_new) * sizeof *seq);
  for (int64_t i = 0; i < len; i++) seq[i] = (int64_t)wf_tensor_get(prompt, i);
  wf_tensor_free(prompt);
  if (rc == WF_EXIT_OK && fixed_length(g, shapes + 1, n_others, name, name_len)) rc = WF_EXIT_INPUT;

  /* One progress line per step: the import's and the passes' own lines are held back meanwhile
   * (they would replace it at once, every step). */
  int show = wf_progress_enabled();
  char *spec = malloc(name_len + 32);
  for (int i = 0; rc == WF_EXIT_OK && i < g->n_new; i++) {
    int64_t s = len + i;
    snprintf(spec, name_len + 32, "%.*s=1x%lld", (int)name_len, name, (long long)s);
    shapes[0] = spec;
    wf_progress("generating token %d of %d (sequence length %lld)", i + 1, g->n_new, (long long)s);
    if (show) wf_progress_set_quiet(1);
    if (i > 0) wf_diag_set_sink(no_warnings, NULL);
    int64_t next = step(g, shapes, 1 + n_others, name, name_len, seq, s, &rc);
    wf_diag_set_sink(NULL, NULL);
    if (show) wf_progress_set_quiet(0);
    wf_progress_done();
    if (rc != WF_EXIT_OK) wf_note(WF_LOC_NONE, "in generation step %d of %d (%s)", i + 1, g->n_new, spec);
    seq[s] = next;
  }
  if (rc == WF_EXIT_OK) rc = write_tokens(g->output_dir, seq + len, g->n_new);
  if (rc == WF_EXIT_OK) {
    printf("tokens:");
    for (int i = 0; i < g->n_new; i++) printf(" %lld", (long long)seq[len + i]);
    printf("\n");
  }
  free(spec);
  free(seq);
  free(shapes);
  return rc;
}
