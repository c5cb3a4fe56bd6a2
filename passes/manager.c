/* The pass manager: runs a parsed pipeline on a module, verifying after each pass, printing
 * and dumping IR on request, timing passes, collecting statistics, and leaving a reproducer
 * behind when a pass fails (docs/passes.md). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ir/support/fsutil.h"
#include "passes/pass_internal.h"

void wf_pm_opts_init(wf_pm_opts *o) {
  memset(o, 0, sizeof *o);
  o->verify_each = 1;
  o->print_opts = WF_PRINT_OPTS_DEFAULT;
}

/* Is `name` one of the comma-separated names in `list`? */
static int in_list(const char *list, const char *name) {
  if (!list) return 0;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == n && strncmp(p, name, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void print_dump(FILE *out, const char *when, const char *pass, const char *text) {
  fprintf(out, "// -----// IR Dump %s %s //----- //\n%s", when, pass, text);
  fflush(out);
}

/* ---- reproducers --------------------------------------------------------------------- */

/* The reproducer for the pass about to run is prepared before it runs, so a crashing pass
 * (SIGSEGV, abort from an assertion) can still leave it behind: the signal handler only
 * calls open/write/close, which are async-signal-safe. */
static char *g_crash_path;
static char *g_crash_text;
static struct sigaction g_old_segv, g_old_abrt, g_old_bus, g_old_fpe;

static void crash_handler(int sig) {
  if (g_crash_path && g_crash_text) {
    int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
      size_t n = strlen(g_crash_text), off = 0;
      while (off < n) {
        ssize_t k = write(fd, g_crash_text + off, n - off);
        if (k <= 0) break;
        off += (size_t)k;
      }
      close(fd);
      static const char msg[] = "waferc: a pass crashed; reproducer written to ";
      if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0 ||
          write(STDERR_FILENO, g_crash_path, strlen(g_crash_path)) < 0 || write(STDERR_FILENO, "\n", 1) < 0) {
      }
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void crash_guard(int on) {
  if (on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = crash_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
    sigaction(SIGABRT, &sa, &g_old_abrt);
    sigaction(SIGBUS, &sa, &g_old_bus);
    sigaction(SIGFPE, &sa, &g_old_fpe);
  } else {
    sigaction(SIGSEGV, &g_old_segv, NULL);
    sigaction(SIGABRT, &g_old_abrt, NULL);
    sigaction(SIGBUS, &g_old_bus, NULL);
    sigaction(SIGFPE, &g_old_fpe, NULL);
  }
}

/* Shell-quotes `s` in single quotes. malloc'd. */
static char *shell_quote(const char *s) {
  size_t n = 2;
  for (const char *p = s; *p; p++) n += *p == '\'' ? 4 : 1;
  char *q = malloc(n + 1), *o = q;
  WF_ASSERT(q);
  *o++ = '\'';
  for (const char *p = s; *p; p++) {
    if (*p == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *p;
    }
  }
  *o++ = '\'';
  *o = '\0';
  return q;
}

static char *reproducer_text(const wf_pipeline_pass *pp, const wf_target *t, const char *module_text) {
  char *pipe = wf_pipeline_pass_print(pp);
  char *quoted = shell_quote(pipe);
  size_t n = strlen(quoted) + strlen(module_text) + strlen(t->name) + 160;
  char *s = malloc(n);
  WF_ASSERT(s);
  snprintf(s, n, "// reproduce: wafer-opt reproducer.wir --pass-pipeline=%s --target=%s --mesh=%dx%d\n%s", quoted,
           t->name, t->mesh_w, t->mesh_h, module_text);
  free(pipe);
  free(quoted);
  return s;
}

/* ---- reports ------------------------------------------------------------------------- */

typedef struct pass_record {
  double ms;
  int64_t *stats;
} pass_record;

static void print_stats(FILE *out, const wf_pass_info *info, const int64_t *stats, const char *indent) {
  for (int s = 0; s < info->n_stats; s++)
    fprintf(out, "%s%s: %lld\n", indent, info->stats[s], (long long)stats[s]);
}

static void report(const wf_pipeline *p, const pass_record *rec, int n_run, const wf_pm_opts *o) {
  if (o->timing) {
    double total = 0;
    for (int i = 0; i < n_run; i++) total += rec[i].ms;
    fprintf(stderr, "===- pass timing report (wall clock) -===\n");
    fprintf(stderr, "  %10s  %6s  %s\n", "time (ms)", "share", "pass");
    for (int i = 0; i < n_run; i++) {
      const wf_pass_info *info = p->passes[i].info;
      fprintf(stderr, "  %10.3f  %5.1f%%  %s\n", rec[i].ms, total > 0 ? 100.0 * rec[i].ms / total : 0.0, info->name);
      print_stats(stderr, info, rec[i].stats, "                        ");
    }
    fprintf(stderr, "  %10.3f  %5.1f%%  total\n", total, 100.0);
  } else if (o->statistics) {
    fprintf(stderr, "===- pass statistics -===\n");
    for (int i = 0; i < n_run; i++) {
      const wf_pass_info *info = p->passes[i].info;
      if (!info->n_stats) continue;
      fprintf(stderr, "%s\n", info->name);
      print_stats(stderr, info, rec[i].stats, "  ");
    }
  }
}

/* ---- the run loop -------------------------------------------------------------------- */

/* A numbered dump holds exactly the printed module, so `wafer-opt NN_pass.wir` prints it back
 * byte for byte; the file name says which pass it follows. */
static int write_dump(const char *dir, int index, const char *pass, const char *text) {
  char name[256];
  snprintf(name, sizeof name, "%02d_%s.wir", index, pass);
  char *path = wf_path_join(dir, name);
  int rc = wf_write_text_file(path, text);
  free(path);
  return rc;
}

static int write_reproducer(const char *dir, const char *text) {
  char *path = wf_path_join(dir, "reproducer.wir");
  int rc = wf_write_text_file(path, text);
  if (rc == 0) wf_note(WF_LOC_NONE, "reproducer written to %s", path);
  free(path);
  return rc;
}

int wf_pipeline_run(const wf_pipeline *p, wf_module *m, const wf_pm_opts *opts) {
  wf_pm_opts defaults;
  if (!opts) {
    wf_pm_opts_init(&defaults);
    opts = &defaults;
  }
  FILE *out = opts->print_stream ? opts->print_stream : stderr;
  const wf_print_opts *popts = &opts->print_opts;

  wf_target default_target;
  const wf_target *target = opts->target;
  if (!target) {
    if (wf_target_load("test4x4", &default_target) != 0) {
      wf_error(WF_LOC_NONE, "the pass manager needs a target and the default 'test4x4' did not load");
      return WF_EXIT_INPUT;
    }
    target = &default_target;
  }

  if (opts->dump_dir && wf_mkdir_p(opts->dump_dir) != 0) return WF_EXIT_IO;

  /* `before` is the module text going into the current pass: needed for change detection,
   * numbered dumps and reproducers. */
  int need_before = opts->print_after_change || opts->dump_dir;
  char *before = need_before ? wf_print_module_str(m, popts) : NULL;
  if (opts->dump_dir && write_dump(opts->dump_dir, 0, "input", before) != 0) {
    free(before);
    return WF_EXIT_IO;
  }

  pass_record *rec = calloc((size_t)p->n + 1, sizeof *rec);
  WF_ASSERT(rec);
  wf_arena *scratch = wf_arena_new();
  int rc = WF_EXIT_OK, n_run = 0;

  for (int i = 0; i < p->n && rc == WF_EXIT_OK; i++) {
    const wf_pipeline_pass *pp = &p->passes[i];
    const wf_pass_info *info = pp->info;
    char *repro = opts->dump_dir ? reproducer_text(pp, target, before) : NULL;
    char *crash_path = repro ? wf_path_join(opts->dump_dir, "reproducer.wir") : NULL;

    if (in_list(opts->print_before, info->name)) {
      char *t = wf_print_module_str(m, popts);
      print_dump(out, "Before", info->name, t);
      free(t);
    }
    wf_progress("running pass %s", info->name);

    rec[i].stats = calloc((size_t)info->n_stats + 1, sizeof *rec[i].stats);
    WF_ASSERT(rec[i].stats);
    wf_pass_ctx ctx = {pp, rec[i].stats, 0, target, scratch};
    unsigned errors_before = wf_diag_error_count();

    g_crash_path = crash_path;
    g_crash_text = repro;
    if (repro) crash_guard(1);
    double t0 = now_ms();
    int prc = info->run(m, &ctx);
    rec[i].ms = now_ms() - t0;
    if (repro) crash_guard(0);
    g_crash_path = g_crash_text = NULL;
    n_run = i + 1;
    wf_arena_reset(scratch);

    if (prc != 0) {
      wf_error(WF_LOC_NONE, "pass '%s' failed", info->name);
      rc = prc >= WF_EXIT_INPUT && prc <= WF_EXIT_IO ? prc : WF_EXIT_INPUT;
    } else if (opts->verify_each && wf_verify_module(m) != 0) {
      wf_error(WF_LOC_NONE, "module verification failed after pass '%s'", info->name);
      rc = WF_EXIT_INPUT;
    } else if (wf_diag_error_count() != errors_before) {
      /* A pass that reports an error but returns 0 still failed. */
      wf_error(WF_LOC_NONE, "pass '%s' reported errors", info->name);
      rc = WF_EXIT_INPUT;
    }
    if (rc != WF_EXIT_OK) {
      if (repro) write_reproducer(opts->dump_dir, repro);
      else wf_note(WF_LOC_NONE, "rerun with --dump-dir=DIR to get a reproducer");
      free(repro);
      free(crash_path);
      break;
    }

    int want_after = opts->print_after_all || in_list(opts->print_after, info->name);
    char *after = NULL;
    if (need_before || want_after) after = wf_print_module_str(m, popts);
    int changed = ctx.changed || (before && strcmp(before, after) != 0);
    if (want_after || (opts->print_after_change && changed)) print_dump(out, "After", info->name, after);
    if (opts->dump_dir && write_dump(opts->dump_dir, i + 1, info->name, after) != 0) rc = WF_EXIT_IO;
    free(before);
    before = need_before ? after : NULL;
    if (!need_before) free(after);
    free(repro);
    free(crash_path);
  }
  wf_progress_done();
  report(p, rec, n_run, opts);
  for (int i = 0; i < p->n; i++) free(rec[i].stats);
  free(rec);
  free(before);
  wf_arena_free(scratch);
  return rc;
}
