/* What every wafer-bench subcommand does: compile IR text to a plan with the backend, load
 * it, simulate it and read back cycles and outputs — library calls, no subprocesses. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "ir/support/fsutil.h"
#include "tools/wafer-bench/bench.h"
#include "waferc/backend.h"
#include "waferc/diag.h"

const char *wf_bench_opt(const char *arg, const char *name) {
  size_t n = strlen(name);
  if (strncmp(arg, "--", 2) || strncmp(arg + 2, name, n) || arg[2 + n] != '=') return NULL;
  return arg + 3 + n;
}

int64_t wf_bench_int(const char *name, const char *v) {
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 1) {
    fprintf(stderr, "wafer-bench: --%s needs a positive integer, got '%s'\n", name, v);
    return -1;
  }
  return x;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* The temporary plan directory being written, removed at exit when the run stops before
 * wf_bench_rmplan (out of host memory: diag.h's exit 7 runs the atexit handlers). */
static char g_live[4096];

static void rm_live(void) {
  if (g_live[0]) nftw(g_live, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int wf_bench_tmpdir(char *dir, const char *stem) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, 4096, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", stem);
  if (!mkdtemp(dir)) {
    wf_error_at(dir, "cannot create a temporary plan directory");
    return WF_EXIT_IO;
  }
  static int registered;
  if (!registered) registered = !atexit(rm_live);
  snprintf(g_live, sizeof g_live, "%s", dir);
  return 0;
}

void wf_bench_rmplan(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  if (!strcmp(dir, g_live)) g_live[0] = 0;
}

int wf_bench_run(const char *ir_text, const wf_target *t, const char *keep_dir,
                 const wf_tensor *input, int64_t *cycles, wf_tensor **out, char *plan_dir) {
  return wf_bench_run_phases(ir_text, t, keep_dir, input, cycles, out, plan_dir, NULL);
}

int wf_bench_compile(const char *ir_text, const wf_target *t, const char *keep_dir, char *plan_dir) {
  if (keep_dir) {
    snprintf(plan_dir, 4096, "%s", keep_dir);
  } else if (wf_bench_tmpdir(plan_dir, "wafer-bench")) {
    return WF_EXIT_IO;
  }
  wf_module *m = wf_parse_string(ir_text, "wafer-bench.wir");
  if (!m) return WF_EXIT_INPUT;
  int rc = wf_verify_module(m) ? WF_EXIT_INPUT : 0;
  wf_plan_opts o = WF_PLAN_OPTS_DEFAULT;
  o.compiler_flags = "wafer-bench";
  o.quiet = 1;
  if (!rc) rc = wf_backend_emit_plan(m, t, plan_dir, &o);
  wf_module_free(m);
  return rc;
}

int wf_bench_run_phases(const char *ir_text, const wf_target *t, const char *keep_dir, const wf_tensor *input,
                        int64_t *cycles, wf_tensor **out, char *plan_dir, int64_t phases[6]) {
  if (phases) phases[0] = -1;
  int rc = wf_bench_compile(ir_text, t, keep_dir, plan_dir);
  if (rc) return rc;
  wf_plan *p = wf_plan_load(plan_dir);
  if (!p) return WF_EXIT_INPUT;
  wf_sim_opts so = WF_SIM_OPTS_DEFAULT;
  so.mode = input ? WF_SIM_FUNCTIONAL : WF_SIM_TIMING;
  wf_sim *s = wf_sim_new(p, &so);
  if (!s) {
    wf_plan_free(p);
    return WF_EXIT_RUNTIME;
  }
  if (input && p->n_inputs > 0) rc = wf_sim_set_input(s, p->inputs[0].name, input) ? WF_EXIT_INPUT : 0;
  if (!rc) rc = wf_sim_run(s);
  *cycles = wf_sim_cycles(s);
  if (!rc && phases && !wf_sim_op_phases(s, 0, phases, phases + 3)) phases[0] = -1;
  if (!rc && out) *out = input ? wf_sim_output(s, 0) : NULL;
  wf_sim_free(s);
  wf_plan_free(p);
  return rc;
}

/* The manifest is our own output (cJSON-printed): the first `"key":` after `"ops"` is op 0's. */
int wf_bench_manifest_field(const char *plan_dir, const char *key, char *buf, size_t cap) {
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.json", plan_dir);
  char *text = wf_read_file(path, NULL);
  if (!text) return -1;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *ops = strstr(text, "\"ops\":");
  const char *k = ops ? strstr(ops, pat) : NULL;
  int rc = -1;
  if (k) {
    k += strlen(pat);
    while (*k == ' ' || *k == '\t') k++;
    size_t i = 0;
    if (*k == '"') {
      for (k++; *k && *k != '"' && i + 1 < cap; k++) {
        if (*k == '\\' && k[1]) k++;
        buf[i++] = *k;
      }
    } else {
      while (*k && *k != ',' && *k != '\n' && *k != '}' && i + 1 < cap) buf[i++] = *k++;
    }
    buf[i] = 0;
    rc = 0;
  }
  free(text);
  return rc;
}

void wf_bench_json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    if ((unsigned char)*s >= 0x20) fputc(*s, out);
  }
  fputc('"', out);
}
