/* The pass manager: change detection by printed text, exit codes of failing passes,
 * statistics per pipeline entry, numbered dumps, and option defaults seen by a pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waferc/pass.h"

#include "wf_test.h"

static char diags[8192];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)user;
  strncat(diags, msg, sizeof diags - strlen(diags) - 2);
  strcat(diags, "\n");
}

/* f(x) = exp(x), plus a dead neg. */
static wf_module *make_module(void) {
  wf_module *m = wf_module_new();
  wf_func *f = wf_func_new(m, "main", WF_LOC_NONE);
  wf_type t = wf_type_make(WF_F32, 2, (int64_t[]){2, 3});
  wf_value x = wf_func_add_arg(f, t, "x");
  wf_op_append(f, WF_OP_NEG, 1, &x, 1, &t, WF_LOC_NONE);
  wf_op *e = wf_op_append(f, WF_OP_EXP, 1, &x, 1, &t, WF_LOC_NONE);
  wf_op_append(f, WF_OP_RETURN, 1, &e->results[0], 0, NULL, WF_LOC_NONE);
  wf_func_set_result_types(f, 1, &t);
  return m;
}

/* Renames the argument without telling the manager: only the text comparison sees it. */
static int sneaky_run(wf_module *m, wf_pass_ctx *ctx) {
  (void)ctx;
  wf_value_set_name(m->funcs[0], m->funcs[0]->args[0], "renamed");
  return 0;
}
static int nofit_run(wf_module *m, wf_pass_ctx *ctx) {
  (void)m, (void)ctx;
  wf_error(WF_LOC_NONE, "does not fit");
  return WF_EXIT_NOFIT;
}
static int quiet_error_run(wf_module *m, wf_pass_ctx *ctx) {
  (void)m, (void)ctx;
  wf_error(WF_LOC_NONE, "reported but returned 0");
  return 0;
}
static int seen_iters = -1;
static const char *seen_mesh;
static int opts_run(wf_module *m, wf_pass_ctx *ctx) {
  (void)m;
  seen_iters = (int)wf_pass_opt_int(ctx, "iters");
  seen_mesh = wf_pass_opt_str(ctx, "mesh");
  seen_mesh = seen_mesh ? strdup(seen_mesh) : NULL;
  CHECK(wf_pass_target(ctx) != NULL, "a pass always has a target");
  CHECK(wf_pass_scratch(ctx) != NULL, "a pass always has scratch memory");
  return 0;
}

static const wf_pass_option test_opts[] = {
    {"iters", WF_OPT_INT, "7", "n"},
    {"mesh", WF_OPT_STRING, "4x4", "m"},
};
static const wf_pass_info p_sneaky = {"test-sneaky", "t", NULL, 0, NULL, 0, sneaky_run};
static const wf_pass_info p_nofit = {"test-nofit", "t", NULL, 0, NULL, 0, nofit_run};
static const wf_pass_info p_quiet = {"test-quiet-error", "t", NULL, 0, NULL, 0, quiet_error_run};
static const wf_pass_info p_opts = {"test-opts", "t", test_opts, 2, NULL, 0, opts_run};

static char *run_capture(const char *pipeline, wf_pm_opts *o, int *rc) {
  wf_pipeline *p = wf_pipeline_parse(wf_pass_registry_global(), pipeline);
  CHECK(p != NULL, "pipeline '%s' parses: %s", pipeline, diags);
  wf_module *m = make_module();
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  o->print_stream = f;
  *rc = p ? wf_pipeline_run(p, m, o) : -1;
  fclose(f);
  wf_pipeline_free(p);
  wf_module_free(m);
  return buf;
}

int main(void) {
  wf_diag_set_sink(sink, NULL);
  wf_register_builtin_passes();
  wf_register_builtin_passes(); /* idempotent */
  wf_pass_registry *r = wf_pass_registry_global();
  CHECK(wf_pass_lookup(r, "dce") && wf_pass_lookup(r, "canonicalize"), "built-ins registered");
  CHECK(wf_pass_register(r, &p_sneaky) == 0 && wf_pass_register(r, &p_nofit) == 0 &&
            wf_pass_register(r, &p_quiet) == 0 && wf_pass_register(r, &p_opts) == 0,
        "test passes register: %s", diags);

  wf_pm_opts o;
  int rc;
  /* dce changes the module, canonicalize then does not, the sneaky pass changes it without
   * saying so: after-change prints exactly dce and test-sneaky. */
  wf_pm_opts_init(&o);
  o.print_after_change = 1;
  char *out = run_capture("dce,canonicalize,test-sneaky", &o, &rc);
  CHECK(rc == 0, "rc %d: %s", rc, diags);
  CHECK(strstr(out, "IR Dump After dce") != NULL, "dce changed the module:\n%s", out);
  CHECK(strstr(out, "IR Dump After canonicalize") == NULL, "canonicalize changed nothing:\n%s", out);
  CHECK(strstr(out, "IR Dump After test-sneaky") != NULL, "text comparison sees the rename:\n%s", out);
  CHECK(strstr(out, "%renamed") != NULL, "the printed module is the one after the pass:\n%s", out);
  free(out);

  /* A pass returning a WF_EXIT_* code: the manager returns it. The pass said why (the
   * input does not fit): that is the whole message, with no "pass failed" and no
   * reproducer, which would suggest a compiler bug. */
  wf_pm_opts_init(&o);
  diags[0] = '\0';
  out = run_capture("dce,test-nofit,canonicalize", &o, &rc);
  CHECK(rc == WF_EXIT_NOFIT, "rc %d, expected WF_EXIT_NOFIT", rc);
  CHECK(strstr(diags, "does not fit") != NULL, "the pass's own error: %s", diags);
  CHECK(strstr(diags, "failed") == NULL && strstr(diags, "reproducer") == NULL, "nothing added: %s", diags);
  free(out);

  /* Errors reported by a pass that returns 0 still fail the run. */
  diags[0] = '\0';
  out = run_capture("test-quiet-error", &o, &rc);
  CHECK(rc == WF_EXIT_INPUT, "rc %d, expected WF_EXIT_INPUT", rc);
  CHECK(strstr(diags, "pass 'test-quiet-error' reported errors") != NULL, "%s", diags);
  free(out);

  /* Options: defaults, then pipeline values. */
  diags[0] = '\0';
  out = run_capture("test-opts", &o, &rc);
  CHECK(rc == 0 && seen_iters == 7 && seen_mesh && strcmp(seen_mesh, "4x4") == 0, "defaults: %d %s (%s)",
        seen_iters, seen_mesh ? seen_mesh : "(null)", diags);
  free(out);
  free((void *)seen_mesh);
  out = run_capture("test-opts{mesh=\"8x2\",iters=-3}", &o, &rc);
  CHECK(rc == 0 && seen_iters == -3 && seen_mesh && strcmp(seen_mesh, "8x2") == 0, "given: %d %s", seen_iters,
        seen_mesh ? seen_mesh : "(null)");
  free(out);
  free((void *)seen_mesh);

  /* Numbered dumps, input first; a reproducer only on failure. */
  char dir[] = "/tmp/wf_test_pm_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char sub[64], path[128];
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  wf_pm_opts_init(&o);
  o.dump_dir = sub;
  out = run_capture("canonicalize,dce", &o, &rc);
  CHECK(rc == 0, "rc %d: %s", rc, diags);
  free(out);
  const char *expect[] = {"00_input.wir", "01_canonicalize.wir", "02_dce.wir"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", sub, expect[i]);
    CHECK(access(path, R_OK) == 0, "%s written", path);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/reproducer.wir", sub);
  CHECK(access(path, F_OK) != 0, "no reproducer after a successful run");
  out = run_capture("dce,test-nofit", &o, &rc);
  free(out);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "reproducer written on failure");
  if (f) {
    char line[256] = "";
    CHECK(fgets(line, sizeof line, f) != NULL, "reproducer has a first line");
    CHECK(strncmp(line, "// reproduce: wafer-opt reproducer.wir --pass-pipeline='test-nofit'", 66) == 0,
          "first line: %s", line);
    char rest[4096] = "";
    size_t k = fread(rest, 1, sizeof rest - 1, f);
    rest[k] = '\0';
    CHECK(strstr(rest, "neg(") == NULL && strstr(rest, "exp(") != NULL,
          "reproducer holds the module after dce, before the failing pass:\n%s", rest);
    fclose(f);
  }
  unlink(path);
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", sub, expect[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/02_test-nofit.wir", sub);
  CHECK(access(path, F_OK) != 0, "no dump for the failed pass");
  rmdir(sub);
  snprintf(path, sizeof path, "%s/a", dir);
  rmdir(path);
  rmdir(dir);

  if (g_failures) fprintf(stderr, "test_pass_manager: %d check(s) failed\n", g_failures);
  else printf("test_pass_manager: all checks passed\n");
  return g_failures != 0;
}
