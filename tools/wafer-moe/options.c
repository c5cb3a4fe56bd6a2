/* wafer-moe's options shared by its subcommands: the die target, the system's size, the
 * model, the output places. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/support/cliopt.h"
#include "tools/wafer-moe/moe.h"
#include "waferc/diag.h"

const char *moe_opt_value(int argc, char **argv, int *i, const char *name, int *bad) {
  return wf_cli_value("wafer-moe", argc, argv, i, name, bad);
}

int moe_common_opt(int argc, char **argv, int *i, moe_opts *o) {
  static const char *const names[] = {"--target", "--dies", "--wafers", "--model", "--heatmap", "--platform"};
  const char **dst[] = {&o->target, &o->dies, &o->wafers, &o->model, &o->heatmap, &o->platform};
  for (int k = 0; k < 6; k++) {
    int bad = 0;
    const char *v = moe_opt_value(argc, argv, i, names[k], &bad);
    if (bad) return -1;
    if (v) {
      *dst[k] = v;
      return 1;
    }
  }
  return 0;
}

int moe_parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
  return wf_cli_long(opt, v, lo, hi, out);
}

int moe_parse_double(const char *opt, const char *v, double lo, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || *end || errno || !(x >= lo) || x > 1e30) {
    wf_error_at(opt, "bad value '%s': expected a number >= %g", v, lo);
    return -1;
  }
  *out = x;
  return 0;
}

static int parse_pair(const char *opt, const char *v, int *a, int *b, int allow_single) {
  char *end;
  long x = strtol(v, &end, 10), y;
  if (end != v && !*end && allow_single && x > 0 && x <= 64) {
    /* K wafers: the squarest grid, wider than tall. */
    long best = 1;
    for (long h = 1; h * h <= x; h++)
      if (x % h == 0) best = h;
    *a = (int)(x / best), *b = (int)best;
    return 0;
  }
  if (end == v || (*end != 'x' && *end != 'X') || x <= 0 || x > 1024) goto bad;
  const char *p = end + 1;
  y = strtol(p, &end, 10);
  if (end == p || *end || y <= 0 || y > 1024) goto bad;
  *a = (int)x, *b = (int)y;
  return 0;
bad:
  wf_error_at(opt, "bad value '%s': expected %s", v, allow_single ? "K or KxL (wafers)" : "WxH, e.g. 4x4");
  return -1;
}

int moe_setup(const moe_opts *o, wf_die_system *s, const wf_moe_model **model) {
  if (!o->dies) {
    wf_error_at("wafer-moe", "--dies=WxH is required (dies per wafer, e.g. --dies=4x4)");
    return WF_EXIT_USAGE;
  }
  if (!o->model) {
    wf_error_at("wafer-moe", "--model=NAME is required (deepseek-v3, qwen3, deepseek-v2, dbrx, mixtral-8x22b)");
    return WF_EXIT_USAGE;
  }
  int count;
  const wf_moe_model *all = wf_moe_models(&count);
  *model = wf_moe_model_find(o->model);
  if (!*model) {
    const char *names[16];
    for (int i = 0; i < count; i++) names[i] = all[i].name;
    const char *near = wf_closest_name(o->model, names, count);
    wf_error_at("--model", "unknown model '%s'%s%s%s (MoEntwine Table I: deepseek-v3, qwen3, deepseek-v2, dbrx, "
                "mixtral-8x22b)", o->model, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    return WF_EXIT_USAGE;
  }
  wf_die_target t;
  int rc = wf_die_target_load(o->target ? o->target : "moe-b200", &t);
  if (rc) return rc;
  if (parse_pair("--dies", o->dies, &t.dies_w, &t.dies_h, 0)) return WF_EXIT_USAGE;
  int ww = t.wafers_w, wh = t.wafers_h;
  if (o->wafers && parse_pair("--wafers", o->wafers, &ww, &wh, 1)) return WF_EXIT_USAGE;
  if ((long)ww * t.dies_w * wh * t.dies_h > 4096) {
    wf_error_at("--dies", "%dx%d wafers of %dx%d dies is over 4096 dies, more than wafer-moe simulates", ww, wh,
                t.dies_w, t.dies_h);
    return WF_EXIT_NOFIT;
  }
  wf_die_system_init(s, &t, ww, wh);
  return 0;
}

/* The temporary platform file and its directory, removed at exit when the run stops before
 * moe_platform_done (out of host memory: diag.h's exit 7 runs the atexit handlers). */
static char *g_live_platform;

static void remove_platform(char *path) {
  unlink(path);
  char *slash = strrchr(path, '/');
  if (slash) *slash = 0, rmdir(path), *slash = '/';
}

static void remove_live_platform(void) {
  if (g_live_platform) remove_platform(g_live_platform);
}

char *moe_platform_path(const moe_opts *o) {
  if (o->platform) {
    char *p = strdup(o->platform);
    WF_ASSERT(p != NULL); /* out of host memory: exit 7, said (ir/diag.c) */
    return p;
  }
  const char *tmp = getenv("TMPDIR");
  /* allocated before the directory is made, so a failed allocation leaves none behind */
  size_t n = strlen(tmp && *tmp ? tmp : "/tmp") + 64;
  char *p = malloc(n);
  WF_ASSERT(p != NULL);
  snprintf(p, n, "%s/wafer-moe.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(p)) {
    wf_error_at(p, "cannot create a temporary directory for the SimGrid platform: %s (set TMPDIR or --platform)",
                strerror(errno));
    free(p);
    return NULL;
  }
  strcat(p, "/platform.xml");
  static int registered;
  if (!registered) registered = !atexit(remove_live_platform);
  g_live_platform = p;
  return p;
}

void moe_platform_done(const moe_opts *o, char *path) {
  if (path && path == g_live_platform) g_live_platform = NULL;
  if (path && !o->platform) remove_platform(path);
  free(path);
}

void moe_print_json(cJSON *root) {
  char *text = cJSON_Print(root);
  WF_ASSERT(text != NULL); /* it fails only when an allocation does: out of host memory, exit 7 */
  printf("%s\n", text);
  free(text);
  cJSON_Delete(root);
}

int moe_finish(const moe_opts *o, wf_die_engine *e, char *xml, cJSON *root, int rc) {
  wf_die_engine_close(e);
  moe_platform_done(o, xml);
  if (rc) cJSON_Delete(root);
  else moe_print_json(root);
  return rc;
}

void moe_unknown_option(const char *sub, const char *arg, const char *const *known, int n) {
  char word[128];
  snprintf(word, sizeof word, "%s", arg);
  char *eq = strchr(word, '=');
  if (eq) *eq = 0;
  const char *near = wf_closest_name(word, known, n);
  if (near) wf_error_at(sub, "unknown option '%s'; did you mean '%s'?", word, near);
  else wf_error_at(sub, "unknown option '%s' (wafer-moe --help lists them)", word);
}
