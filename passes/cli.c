/* Command-line handling shared by waferc and wafer-opt (passes/cli.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passes/cli.h"
#include "passes/pass_internal.h"

void wf_cli_init(wf_cli *c, const char *tool) {
  memset(c, 0, sizeof *c);
  c->tool = tool;
  c->target_name = "test4x4";
  wf_pm_opts_init(&c->pm);
  c->pm.print_opts.elide_elements_above = WF_CLI_ELIDE_DEFAULT; /* dumps stay readable */
  c->output_whole = strcmp(tool, "wafer-opt") == 0; /* its output is the transformed model */
  wf_diag_set_program(tool);
}

int wf_cli_opt(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    wf_error(WF_LOC_NONE, "option '%s' needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

static int parse_count(const char *opt, const char *text, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (!*text || *end || errno || v < 0) {
    wf_error(WF_LOC_NONE, "option '%s' expects a non-negative integer, got '%s'", opt, text);
    return -1;
  }
  *out = v;
  return 1;
}

int wf_cli_parse_common(wf_cli *c, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = NULL;
  int k;
#define WITH_VALUE(NAME, ACTION)                  \
  if ((k = wf_cli_opt(argc, argv, i, NAME, &v))) { \
    if (k < 0) return -1;                         \
    ACTION;                                       \
    return 1;                                     \
  }
  WITH_VALUE("--pass-pipeline", c->pipeline = v)
  WITH_VALUE("--load-pass-plugin", {
    if (c->n_plugins == WF_CLI_MAX_PLUGINS) {
      wf_error(WF_LOC_NONE, "too many --load-pass-plugin options (at most %d)", WF_CLI_MAX_PLUGINS);
      return -1;
    }
    c->plugins[c->n_plugins++] = v;
  })
  WITH_VALUE("--print-ir-before", c->pm.print_before = v)
  WITH_VALUE("--print-ir-after", c->pm.print_after = v)
  WITH_VALUE("--dump-dir", c->pm.dump_dir = v)
  WITH_VALUE("--elide-elements-above", {
    c->elide_given = 1;
    return parse_count("--elide-elements-above", v, &c->pm.print_opts.elide_elements_above);
  })
  WITH_VALUE("--target", {
    c->target_name = v;
    c->target_given = 1;
  })
  WITH_VALUE("--mesh", {
    c->mesh = v;
    c->target_given = 1;
  })
#undef WITH_VALUE
  static const struct {
    const char *name;
    size_t offset;
  } flags[] = {
      {"--print-ir-after-all", offsetof(wf_cli, pm.print_after_all)},
      {"--print-ir-after-change", offsetof(wf_cli, pm.print_after_change)},
      {"--timing", offsetof(wf_cli, pm.timing)},
      {"--statistics", offsetof(wf_cli, pm.statistics)},
      {"--print-debuginfo", offsetof(wf_cli, pm.print_opts.print_locations)},
      {"--list-passes", offsetof(wf_cli, list_passes)},
      {"--list-targets", offsetof(wf_cli, list_targets)},
      {"--print-pipeline", offsetof(wf_cli, print_pipeline)},
      {"-q", offsetof(wf_cli, quiet)},
      {"--quiet", offsetof(wf_cli, quiet)},
  };
  for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
    if (strcmp(a, flags[f].name) == 0) {
      *(int *)((char *)c + flags[f].offset) = 1;
      if (c->quiet) wf_progress_set_quiet(1);
      return 1;
    }
  if (strcmp(a, "--print-constants") == 0) {
    c->pm.print_opts.elide_elements_above = -1;
    c->elide_given = 1;
    return 1;
  }
  if (strcmp(a, "--no-verify") == 0) {
    c->pm.verify_each = 0;
    return 1;
  }
  return 0;
}

static int check_pass_list(wf_cli *c, const char *opt, const char *list) {
  if (!list) return 0;
  wf_pass_registry *r = wf_pass_registry_global();
  int bad = 0;
  const char *p = list;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    if (!wf_pass_lookup(r, name)) {
      const char *near = wf_pass_closest(r, name);
      if (near) wf_error(WF_LOC_NONE, "%s: unknown pass '%s'; did you mean '%s'?", opt, name, near);
      else wf_error(WF_LOC_NONE, "%s: unknown pass '%s' (see %s --list-passes)", opt, name, c->tool);
      bad = 1;
    }
    if (!e) break;
    p = e + 1;
  }
  return bad;
}

int wf_cli_load_passes(wf_cli *c) {
  wf_register_builtin_passes();
  for (int i = 0; i < c->n_plugins; i++) {
    int rc = wf_plugin_load(wf_pass_registry_global(), c->plugins[i]);
    if (rc) return rc;
  }
  if (check_pass_list(c, "--print-ir-before", c->pm.print_before) |
      check_pass_list(c, "--print-ir-after", c->pm.print_after))
    return WF_EXIT_USAGE;
  return WF_EXIT_OK;
}

int wf_cli_load_target(wf_cli *c) {
  if (wf_target_load(c->target_name, &c->target) != 0) return wf_exit_for_target(c->target_name);
  if (c->mesh && wf_target_set_mesh(&c->target, c->mesh) != 0) return WF_EXIT_USAGE;
  c->pm.target = &c->target;
  return WF_EXIT_OK;
}

wf_pipeline *wf_cli_parse_pipeline(wf_cli *c, const char *text) {
  (void)c;
  return wf_pipeline_parse(wf_pass_registry_global(), text);
}

wf_module *wf_cli_read_module(const char *path, int *rc) {
  *rc = WF_EXIT_INPUT;
  if (strcmp(path, "-") != 0) {
    FILE *f = fopen(path, "r");
    if (!f) {
      wf_error_at(path, "cannot open: %s", strerror(errno));
      *rc = WF_EXIT_IO;
      return NULL;
    }
    fclose(f);
    return wf_parse_file(path);
  }
  size_t n = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  WF_ASSERT(buf);
  size_t k;
  while ((k = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
    n += k;
    if (cap - n - 1 == 0) {
      cap *= 2;
      buf = realloc(buf, cap);
      WF_ASSERT(buf);
    }
  }
  if (ferror(stdin)) {
    wf_error_at("<stdin>", "cannot read: %s", strerror(errno));
    *rc = WF_EXIT_IO;
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  wf_diag_add_source("<stdin>", buf, n); /* later errors (the verifier's) show its lines too */
  wf_module *m = wf_parse_string(buf, "<stdin>");
  free(buf);
  return m;
}

/* The temporary file wf_cli_write_module is writing, removed at exit when the tool stops
 * before it is renamed into place (out of host memory: diag.h's exit 7 runs the atexit
 * handlers), so an -o file is never left half-written. */
static char *g_live_tmp;

static void remove_live_tmp(void) {
  if (g_live_tmp) unlink(g_live_tmp);
}

/* A new file beside `path` to write the module into, opened for writing in *f, with the
 * mode `path` has (or would get); NULL when there is none (errno set). */
static char *open_beside(const char *path, const struct stat *old, FILE **f) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  WF_ASSERT(tmp != NULL);
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  snprintf(tmp, n + 16, "%.*s.%s.XXXXXX", (int)dir, path, path + dir);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return NULL;
  }
  mode_t mode = old ? old->st_mode & 07777 : 0666;
  if (!old) {
    mode_t mask = umask(0);
    umask(mask);
    mode &= ~mask;
  }
  if (fchmod(fd, mode) != 0 || !(*f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(tmp);
    free(tmp);
    errno = e;
    return NULL;
  }
  return tmp;
}

int wf_cli_write_module(const wf_cli *c, const char *path, const wf_module *m) {
  wf_print_opts o = c->pm.print_opts;
  if (c->output_whole && !c->elide_given) o.elide_elements_above = -1;
  if (!path || strcmp(path, "-") == 0) {
    wf_print_module(stdout, m, &o);
    return fflush(stdout) == 0 ? WF_EXIT_OK : WF_EXIT_IO;
  }
  /* A regular file (or a new one) is written beside it and renamed over it once complete;
   * anything else (a device such as /dev/null, a pipe, a symbolic link) is written in place. */
  struct stat st;
  int exists = lstat(path, &st) == 0;
  char *tmp = NULL;
  FILE *f = NULL;
  if (!exists || S_ISREG(st.st_mode)) {
    tmp = open_beside(path, exists ? &st : NULL, &f);
    if (!tmp) {
      wf_error_at(path, "cannot open for writing: %s", strerror(errno));
      return WF_EXIT_IO;
    }
    static int registered;
    if (!registered) registered = !atexit(remove_live_tmp);
    g_live_tmp = tmp;
  } else if (!(f = fopen(path, "w"))) {
    wf_error_at(path, "cannot open for writing: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  wf_print_module(f, m, &o);
  int rc = WF_EXIT_OK;
  if (ferror(f) | (fclose(f) != 0) || (tmp && rename(tmp, path) != 0)) {
    wf_error_at(path, "cannot write: %s", strerror(errno));
    rc = WF_EXIT_IO;
  }
  if (tmp) {
    if (rc) unlink(tmp);
    g_live_tmp = NULL;
    free(tmp);
  }
  return rc;
}

/* The shared options, for "did you mean" (wf_cli_parse_common is the authority). */
static const char *const common_options[] = {
    "--pass-pipeline", "--load-pass-plugin", "--print-ir-before", "--print-ir-after", "--dump-dir",
    "--elide-elements-above", "--target", "--mesh", "--print-ir-after-all", "--print-ir-after-change",
    "--timing", "--statistics", "--print-debuginfo", "--list-passes", "--list-targets",
    "--print-pipeline", "--quiet", "--no-verify", "--help", "--version"};

void wf_cli_unknown_option(const wf_cli *c, const char *arg, const char *const *own, int n_own) {
  enum { N_COMMON = sizeof common_options / sizeof common_options[0] };
  const char *all[N_COMMON + 64];
  int n = 0;
  for (int i = 0; i < N_COMMON; i++) all[n++] = common_options[i];
  for (int i = 0; i < n_own && n < N_COMMON + 64; i++) all[n++] = own[i];
  wf_error_unknown_option(c->tool, arg, all, n);
}

void wf_cli_print_common_help(FILE *out) {
  fputs("Passes:\n"
        "  --pass-pipeline=P          run pipeline P, e.g. 'canonicalize,dce' (docs/passes.md)\n"
        "  --load-pass-plugin=PATH    load a pass plugin (repeatable)\n"
        "  --list-passes              list passes with their options and statistics\n"
        "  --print-pipeline           print the parsed pipeline and exit\n"
        "  --print-ir-before=A,B      print the IR before the named passes (to stderr)\n"
        "  --print-ir-after=A,B       print the IR after the named passes\n"
        "  --print-ir-after-all       print the IR after every pass\n"
        "  --print-ir-after-change    print the IR after passes that changed it\n"
        "  --dump-dir=DIR             write DIR/00_input.wir, DIR/01_<pass>.wir, ... and, when a\n"
        "                             pass fails, DIR/reproducer.wir\n"
        "  --no-verify                do not verify the IR after each pass\n"
        "  --timing                   report wall time and statistics per pass (stderr)\n"
        "  --statistics               report pass statistics (stderr)\n"
        "  --elide-elements-above=N   print inline constants of more than N elements as dense<elided>\n"
        "                             (default 16) in dumps, reproducers and waferc --emit=ir\n"
        "  --print-constants          print every constant in full (no dense<elided>)\n"
        "  --print-debuginfo          print op locations loc(\"file\":line:col)\n"
        "Target:\n"
        "  --target=NAME              device preset (default test4x4) or a .target file\n"
        "  --mesh=WxH                 mesh the compile uses (default: the preset's)\n",
        out);
}

void wf_cli_list_passes(FILE *out) {
  wf_pass_registry *r = wf_pass_registry_global();
  for (int i = 0; i < wf_pass_count(r); i++) {
    const wf_pass_info *p = wf_pass_at(r, i);
    const char *origin = wf_pass_origin(r, p->name);
    fprintf(out, "%-24s %s", p->name, p->summary);
    if (origin) fprintf(out, "  [%s]", origin);
    fputc('\n', out);
    for (int k = 0; k < p->n_options; k++) {
      const wf_pass_option *o = &p->options[k];
      fprintf(out, "    %s=<%s> (default %s)  %s\n", o->name, wf_opt_kind_name(o->kind),
              o->default_value && *o->default_value ? o->default_value : "\"\"", o->help ? o->help : "");
    }
    if (p->n_stats) {
      fprintf(out, "    statistics:");
      for (int k = 0; k < p->n_stats; k++) fprintf(out, "%s %s", k ? "," : "", p->stats[k]);
      fputc('\n', out);
    }
  }
}
