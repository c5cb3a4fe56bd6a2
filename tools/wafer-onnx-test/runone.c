/* wafer-onnx-test — one node test: import, interpret, compare with the expected outputs. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxinfo.h"
#include "runner.h"
#include "waferc/diag.h"
#include "waferc/onnx.h"
#include "waferc/tensor.h"

#define RT_MAX_SETS 16

/* Stated in CONFORMANCE.md; the same for every op. Integers and bools compare exactly. */
void rt_tolerance(int dtype, double *atol, double *rtol) {
  switch (dtype) {
  case WF_F32: *atol = 1e-5, *rtol = 1e-4; break;
  case WF_F16: *atol = 1e-3, *rtol = 1e-3; break;
  case WF_BF16: *atol = 1e-2, *rtol = 1e-2; break;
  default: *atol = 0, *rtol = 0; break;
  }
}

const char *rt_status_word(int status) {
  return status == RT_PASS ? "PASS" : status == RT_SKIP ? "SKIP" : "FAIL";
}

void rt_print(FILE *out, const rt_result *r) {
  fprintf(out, "%s %s: %s", rt_status_word(r->status), r->name, r->reason);
  if (r->max_err >= 0) fprintf(out, " (max abs err %.3g)", r->max_err);
  fputc('\n', out);
}

/* ---- diagnostics: the first error becomes the reason; --verbose echoes all -------------- */

typedef struct diag_capture {
  const char *dir; /* test directory: stripped from locations to keep reasons short */
  const char *alt_dir; /* the temporary directory of a rewritten model, stripped too */
  int verbose;
  int n_errors;
  char first[400];
} diag_capture;

static void capture_sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  diag_capture *c = user;
  if (c->verbose) {
    const char *what = sev == WF_SEV_ERROR ? "error" : sev == WF_SEV_WARNING ? "warning" : "note";
    if (loc.file && loc.line) fprintf(stderr, "%s:%u:%u: %s: %s\n", loc.file, loc.line, loc.col, what, msg);
    else if (loc.file) fprintf(stderr, "%s: %s: %s\n", loc.file, what, msg);
    else fprintf(stderr, "%s: %s\n", what, msg);
  }
  if (sev == WF_SEV_ERROR && c->n_errors++ == 0) {
    const char *file = loc.file;
    for (int k = 0; k < 2; k++) {
      const char *d = k ? c->alt_dir : c->dir;
      size_t dl = d ? strlen(d) : 0;
      if (file && dl && !strncmp(file, d, dl) && file[dl] == '/') file += dl + 1;
    }
    if (file && loc.line)
      snprintf(c->first, sizeof c->first, "%s:%u:%u: %s", file, loc.line, loc.col, msg);
    else if (file)
      snprintf(c->first, sizeof c->first, "%s: %s", file, msg);
    else
      snprintf(c->first, sizeof c->first, "%s", msg);
    for (char *p = c->first; *p; p++)
      if (*p == '\n' || *p == '\t') *p = ' ';
  }
}

static void set_reason(rt_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(rt_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

static void fail(rt_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(rt_result *r, const char *fmt, ...) {
  r->status = RT_FAIL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

/* ---- data sets ------------------------------------------------------------------------- */

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Number of consecutive PREFIX_0.pb, PREFIX_1.pb, ... in `set`. */
static int count_pb(const char *set, const char *prefix) {
  char p[1200];
  int n = 0;
  for (;; n++) {
    snprintf(p, sizeof p, "%s/%s_%d.pb", set, prefix, n);
    if (!file_exists(p)) return n;
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted test_data_set_* directories; returns their number. */
static int list_sets(const char *dir, char sets[RT_MAX_SETS][1100]) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char *names[RT_MAX_SETS];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < RT_MAX_SETS)
    if (!strncmp(e->d_name, "test_data_set_", 14)) names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  int k = 0;
  for (int i = 0; i < n; i++) {
    snprintf(sets[k], 1100, "%s/%s", dir, names[i]);
    if (is_dir(sets[k])) k++;
    free(names[i]);
  }
  return k;
}

/* ---- comparison ------------------------------------------------------------------------ */

static void shape_str(const wf_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", wf_dtype_name(t->dtype));
  for (int d = 0; d < t->rank && k < n; d++)
    k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)t->dims[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

static int64_t int_at(const wf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case WF_I64: return ((const int64_t *)t->data)[i];
  case WF_I32: return ((const int32_t *)t->data)[i];
  case WF_BOOL: return ((const uint8_t *)t->data)[i] != 0;
  default: return (int64_t)wf_tensor_get(t, i);
  }
}

/* Compares output k. Returns 1 when it matches; otherwise fills r's reason. */
static int compare(int k, const wf_tensor *got, const wf_tensor *want, double *max_err, rt_result *r) {
  char gs[160], ws[160];
  shape_str(got, gs, sizeof gs);
  shape_str(want, ws, sizeof ws);
  int same = got->dtype == want->dtype && got->rank == want->rank;
  for (int d = 0; same && d < got->rank; d++) same = got->dims[d] == want->dims[d];
  if (!same) {
    fail(r, "output %d is %s, expected %s", k, gs, ws);
    return 0;
  }
  int64_t n = wf_tensor_numel(want), bad = -1;
  if (wf_dtype_is_float(want->dtype)) {
    double atol, rtol;
    rt_tolerance(want->dtype, &atol, &rtol);
    for (int64_t i = 0; i < n; i++) {
      double a = wf_tensor_get(got, i), b = wf_tensor_get(want, i);
      int ok;
      if (isnan(b)) {
        ok = isnan(a);
      } else if (isinf(b)) {
        ok = a == b;
      } else {
        double e = isnan(a) || isinf(a) ? INFINITY : fabs(a - b);
        if (e > *max_err) *max_err = e;
        ok = e <= atol + rtol * fabs(b);
      }
      if (!ok && bad < 0) bad = i;
    }
    if (bad >= 0) {
      fail(r, "output %d %s: element %lld is %.9g, expected %.9g (atol %g rtol %g)", k, ws,
           (long long)bad, wf_tensor_get(got, bad), wf_tensor_get(want, bad), atol, rtol);
      return 0;
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t a = int_at(got, i), b = int_at(want, i);
      double e = fabs((double)a - (double)b);
      if (e > *max_err) *max_err = e;
      if (a != b && bad < 0) bad = i;
    }
    if (bad >= 0) {
      fail(r, "output %d %s: element %lld is %lld, expected %lld (exact)", k, ws, (long long)bad,
           (long long)int_at(got, bad), (long long)int_at(want, bad));
      return 0;
    }
  }
  return 1;
}

/* ---- one test -------------------------------------------------------------------------- */

/* Fills r->missing with the model's ops outside the scope; returns how many there are. */
static int out_of_scope_ops(const oi_model *mi, const scope *s, rt_result *r) {
  int n = 0;
  size_t k = 0;
  r->missing[0] = 0;
  for (int i = 0; i < mi->n_ops; i++) {
    if (scope_has_op(s, mi->ops[i])) continue;
    if (k < sizeof r->missing)
      k += (size_t)snprintf(r->missing + k, sizeof r->missing - k, n ? ",%s" : "%s", mi->ops[i]);
    n++;
  }
  return n;
}

static void pick_group(const char *name, const oi_model *mi, const scope *s, rt_result *r) {
  const scope_entry *e = scope_match(s, name);
  if (e) {
    snprintf(r->group, sizeof r->group, "%s", e->op);
    r->in_scope = e->in_scope;
    return;
  }
  /* Not in the table: name it after the model's first out-of-scope op (its reason to exist). */
  for (int i = 0; i < mi->n_ops; i++)
    if (!scope_has_op(s, mi->ops[i])) {
      snprintf(r->group, sizeof r->group, "%.63s", mi->ops[i]);
      return;
    }
  /* Only in-scope ops (an `_expanded` decomposition of an out-of-scope op): the test's name
   * says which op it is about, its first op (often Constant) would not. */
  const char *base = strncmp(name, "test_", 5) == 0 ? name + 5 : name;
  size_t len = strcspn(base, "_");
  snprintf(r->group, sizeof r->group, "%.*s (%s)", (int)(len < 30 ? len : 30), base,
           strstr(name, "_expanded") ? "expanded, in-scope ops only" : "in-scope ops only");
}

typedef struct run_state {
  wf_module *m;
  wf_tensor *in[OI_MAX_IO], *want[OI_MAX_IO], *got[OI_MAX_IO];
  int n_in, n_want, n_got;
  char *shape_args[OI_MAX_IO];
  int n_shapes;
} run_state;

static void release(run_state *st) {
  for (int i = 0; i < st->n_in; i++) wf_tensor_free(st->in[i]);
  for (int i = 0; i < st->n_want; i++) wf_tensor_free(st->want[i]);
  for (int i = 0; i < st->n_got; i++) wf_tensor_free(st->got[i]);
  for (int i = 0; i < st->n_shapes; i++) free(st->shape_args[i]);
  if (st->m) wf_module_free(st->m);
  memset(st, 0, sizeof *st);
}

#define ONNX_BFLOAT16 16

/* ONNX 1.12's node test data store bfloat16 tensors as UINT16 bit patterns (data_type 4),
 * which the reader widens to i32; the graph declares BFLOAT16. Reinterpret the bits. */
static wf_tensor *fix_bf16(wf_tensor *t, int declared) {
  if (!t || declared != ONNX_BFLOAT16 || t->dtype != WF_I32) return t;
  wf_tensor *b = wf_tensor_new(WF_BF16, t->rank, t->dims);
  int64_t n = wf_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) ((uint16_t *)b->data)[i] = (uint16_t)((int32_t *)t->data)[i];
  wf_tensor_free(t);
  return b;
}

/* "NAME=2x3x4" for a dynamic input, from the tensor the test feeds it. */
static char *shape_arg(const char *name, const wf_tensor *t) {
  char buf[OI_MAX_NAME + 200];
  size_t k = (size_t)snprintf(buf, sizeof buf, "%s=", name);
  for (int d = 0; d < t->rank && k < sizeof buf; d++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, d ? "x%lld" : "%lld", (long long)t->dims[d]);
  return strdup(buf);
}

/* Removes the temporary copy of a rewritten model. */
static void remove_tmp(char *tmpdir) {
  if (!tmpdir[0]) return;
  char p[600];
  snprintf(p, sizeof p, "%s/model.onnx", tmpdir);
  remove(p);
  rmdir(tmpdir);
  tmpdir[0] = 0;
}

/* Runs one data set; returns 1 on success (outputs match), 0 with r filled otherwise.
 *
 * Inputs that feed shape-like operands (oi_shape_operand: Reshape's shape, Slice's starts,
 * TopK's K, ...) are frozen: the model is rewritten with the test's tensor as an initializer,
 * which is how an exporter writes them and what a static-shape compiler needs. Every other
 * input stays a graph input, bound to the test's tensor. */
static int run_set(const char *dir, const char *set, const oi_model *mi, const rt_opts *o,
                   diag_capture *dc, double *max_err, rt_result *r) {
  run_state st;
  memset(&st, 0, sizeof st);
  const char *setname = strrchr(set, '/') ? strrchr(set, '/') + 1 : set;
  char p[1300], model[1200], tmpdir[64] = "";
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  int n_in = count_pb(set, "input"), n_out = count_pb(set, "output");
  int n_oos = out_of_scope_ops(mi, o->scope, r);
  int ok = 0, read_failed = 0;
  char read_err[512] = "";
  int live[OI_MAX_IO], n_live = 0; /* graph inputs that stay inputs */
  const char *frozen_names[OI_MAX_IO];
  char *frozen_pbs[OI_MAX_IO];
  int n_frozen = 0;

  if (n_in != mi->n_inputs) {
    fail(r, "%s has %d input_N.pb, the graph %d inputs", setname, n_in, mi->n_inputs);
    goto done;
  }
  for (int i = 0; i < n_in && !read_failed; i++) {
    snprintf(p, sizeof p, "%s/input_%d.pb", set, i);
    if (mi->inputs[i].shape_operand && mi->inputs[i].is_tensor) {
      frozen_names[n_frozen] = mi->inputs[i].name;
      frozen_pbs[n_frozen++] = strdup(p);
      continue;
    }
    dc->n_errors = 0;
    if (!(st.in[st.n_in] = fix_bf16(wf_onnx_read_tensor(p), mi->inputs[i].elem_type))) {
      read_failed = 1;
      snprintf(read_err, sizeof read_err, "cannot read %.40s/input_%d.pb%s: %.250s", setname, i,
               mi->inputs[i].is_tensor ? "" : " (a sequence, map or optional, not a tensor)",
               dc->first);
      break;
    }
    if (mi->inputs[i].dynamic && st.in[st.n_in]->rank > 0)
      st.shape_args[st.n_shapes++] = shape_arg(mi->inputs[i].name, st.in[st.n_in]);
    live[n_live++] = i;
    st.n_in++;
  }
  if (n_frozen > 0 && !read_failed) {
    char why[300];
    size_t k = 0;
    r->frozen[0] = 0;
    for (int i = 0; i < n_frozen && k < sizeof r->frozen; i++)
      k += (size_t)snprintf(r->frozen + k, sizeof r->frozen - k, i ? ",%s" : "%s", frozen_names[i]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wafer-onnx-test.XXXXXX");
    if (!mkdtemp(tmpdir)) {
      tmpdir[0] = 0;
      fail(r, "cannot create a temporary directory");
      goto done;
    }
    char orig[1200];
    snprintf(orig, sizeof orig, "%s", model);
    snprintf(model, sizeof model, "%s/model.onnx", tmpdir);
    if (oi_freeze_inputs(orig, model, n_frozen, frozen_names, (const char *const *)frozen_pbs, why,
                         sizeof why) != 0) {
      fail(r, "cannot freeze inputs %s: %s", r->frozen, why);
      goto done;
    }
    dc->alt_dir = tmpdir;
  }

  wf_onnx_opts io = WF_ONNX_OPTS_DEFAULT;
  io.input_shapes = (const char *const *)st.shape_args;
  io.n_input_shapes = st.n_shapes;
  dc->n_errors = 0;
  int rc = read_failed && n_oos == 0 ? -1 : wf_onnx_import(model, &io, &st.m);
  if (rc == WF_EXIT_UNSUPPORTED && n_oos > 0) {
    r->status = RT_SKIP;
    set_reason(r, "uses ops outside the phase-2 scope: %s", r->missing);
    goto done;
  }
  if (read_failed) {
    fail(r, "%s", read_err);
    goto done;
  }
  if (rc != WF_EXIT_OK) {
    fail(r, "import failed (exit %d%s): %s", rc, rc == WF_EXIT_UNSUPPORTED ? ", unsupported" : "",
         dc->n_errors ? dc->first : "no error reported");
    goto done;
  }

  wf_func *f = wf_module_find_func(st.m, "main");
  if (!f) {
    fail(r, "the imported module has no @main");
    goto done;
  }
  if (f->n_args != n_live) {
    fail(r, "@main takes %d arguments, the graph has %d inputs%s", f->n_args, n_live,
         n_frozen ? " (not counting the frozen ones)" : "");
    goto done;
  }
  /* Bind by name when the importer kept the ONNX input names, else by position. */
  wf_tensor *bound[OI_MAX_IO];
  for (int a = 0; a < f->n_args; a++) {
    const char *an = wf_str(st.m, wf_value_get(f, f->args[a])->name);
    bound[a] = st.in[a];
    for (int i = 0; i < n_live; i++)
      if (an[0] && !strcmp(an, mi->inputs[live[i]].name)) bound[a] = st.in[i];
  }
  dc->n_errors = 0;
  if (wf_interpret(st.m, "main", n_live, bound, st.got, OI_MAX_IO, &st.n_got) != 0) {
    fail(r, "interpreter failed: %s", dc->n_errors ? dc->first : "no error reported");
    goto done;
  }
  if (st.n_got != n_out) {
    fail(r, "@main returned %d outputs, %s has %d", st.n_got, setname, n_out);
    goto done;
  }
  for (int k = 0; k < n_out; k++) {
    snprintf(p, sizeof p, "%s/output_%d.pb", set, k);
    dc->n_errors = 0;
    int declared = k < mi->n_outputs ? mi->outputs[k].elem_type : 0;
    if (!(st.want[st.n_want] = fix_bf16(wf_onnx_read_tensor(p), declared))) {
      fail(r, "cannot read %s/output_%d.pb: %s", setname, k, dc->first);
      goto done;
    }
    st.n_want++;
    if (!compare(k, st.got[k], st.want[k], max_err, r)) goto done;
  }
  ok = 1;
done:
  for (int i = 0; i < n_frozen; i++) free(frozen_pbs[i]);
  remove_tmp(tmpdir);
  dc->alt_dir = NULL;
  release(&st);
  return ok;
}

static void set_name(const char *dir, rt_result *r) {
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  const char *base = dir + len;
  while (base > dir && base[-1] != '/') base--;
  snprintf(r->name, sizeof r->name, "%.*s", (int)(dir + len - base), base);
}

void rt_classify(const char *dir, const scope *s, rt_result *r) {
  memset(r, 0, sizeof *r);
  r->max_err = -1;
  r->status = RT_FAIL;
  set_name(dir, r);
  char model[1200], why[600];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  oi_model *mi = calloc(1, sizeof *mi);
  if (mi && oi_read(model, mi, why, sizeof why) == 0) pick_group(r->name, mi, s, r);
  else snprintf(r->group, sizeof r->group, "?");
  free(mi);
}

void rt_run(const char *dir, const rt_opts *o, rt_result *r) {
  memset(r, 0, sizeof *r);
  r->max_err = -1;
  set_name(dir, r);

  diag_capture dc = {dir, NULL, o->verbose, 0, ""};
  wf_diag_set_sink(capture_sink, &dc);
  wf_diag_reset();

  char model[1200], why[600];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  oi_model *mi = calloc(1, sizeof *mi);
  char (*sets)[1100] = calloc(RT_MAX_SETS, sizeof *sets);
  if (!mi || !sets) {
    fail(r, "out of memory");
    goto out;
  }
  if (oi_read(model, mi, why, sizeof why) != 0) {
    snprintf(r->group, sizeof r->group, "?");
    fail(r, "%s", why);
    goto out;
  }
  pick_group(r->name, mi, o->scope, r);
  int n_sets = list_sets(dir, sets);
  if (n_sets == 0) {
    fail(r, "no test_data_set_* directory");
    goto out;
  }
  double err = 0;
  int passed = 1;
  for (int s = 0; s < n_sets && passed; s++) passed = run_set(dir, sets[s], mi, o, &dc, &err, r);
  if (passed) {
    r->status = RT_PASS;
    r->max_err = err;
    set_reason(r, "%d output%s x %d data set%s match%s%s%s", mi->n_outputs,
               mi->n_outputs == 1 ? "" : "s", n_sets, n_sets == 1 ? "" : "s",
               r->frozen[0] ? " (constant inputs: " : "", r->frozen, r->frozen[0] ? ")" : "");
  } else if (r->status == RT_FAIL && err > 0) {
    r->max_err = err;
  }
out:
  free(mi);
  free(sets);
  wf_diag_set_sink(NULL, NULL);
}
