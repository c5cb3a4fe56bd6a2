/* Diagnostics: located user errors, warnings and notes; internal errors; progress lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waferc/diag.h"

static wf_diag_sink g_sink;
static void *g_sink_user;
static unsigned g_errors;
static const char *g_program = "waferc";
static int g_quiet;
static int g_progress_shown;

/* File names live for the process: a small list is enough (a handful of files per run). */
typedef struct file_name {
  struct file_name *next;
  char name[];
} file_name;
static file_name *g_files;

const char *wf_loc_file(const char *path) {
  if (!path) return NULL;
  for (file_name *f = g_files; f; f = f->next)
    if (strcmp(f->name, path) == 0) return f->name;
  size_t n = strlen(path);
  file_name *f = malloc(sizeof *f + n + 1);
  if (!f) abort();
  memcpy(f->name, path, n + 1);
  f->next = g_files;
  g_files = f;
  return f->name;
}

/* Described locations: one entry per (file, line); looked up only when a diagnostic is
 * printed, so a sorted index is not worth keeping. */
typedef struct loc_name {
  const char *file;
  uint32_t line;
  char *text;
} loc_name;
static loc_name *g_names;
static size_t g_n_names, g_cap_names;

static loc_name *find_name(wf_loc loc) {
  if (!loc.file || !loc.line) return NULL;
  for (size_t i = g_n_names; i-- > 0;)
    if (g_names[i].line == loc.line && g_names[i].file == loc.file) return &g_names[i];
  return NULL;
}

void wf_loc_describe(wf_loc loc, const char *text) {
  if (!loc.file || !loc.line || !text) return;
  loc.file = wf_loc_file(loc.file);
  char *copy = strdup(text);
  if (!copy) abort();
  loc_name *n = find_name(loc);
  if (n) {
    free(n->text);
    n->text = copy;
    return;
  }
  if (g_n_names == g_cap_names) {
    g_cap_names = g_cap_names ? 2 * g_cap_names : 64;
    g_names = realloc(g_names, g_cap_names * sizeof *g_names);
    if (!g_names) abort();
  }
  g_names[g_n_names++] = (loc_name){loc.file, loc.line, copy};
}

const char *wf_loc_description(wf_loc loc) {
  loc_name *n = find_name(loc);
  return n ? n->text : NULL;
}

void wf_diag_set_sink(wf_diag_sink sink, void *user) {
  g_sink = sink;
  g_sink_user = user;
}

void wf_diag_set_program(const char *name) { g_program = name; }
unsigned wf_diag_error_count(void) { return g_errors; }
void wf_diag_reset(void) { g_errors = 0; }

static const char *sev_name(wf_severity s) {
  return s == WF_SEV_ERROR ? "error" : s == WF_SEV_WARNING ? "warning" : "note";
}

static void emit(wf_severity sev, wf_loc loc, const char *where, const char *msg) {
  if (sev == WF_SEV_ERROR) g_errors++;
  if (g_sink) {
    if (!loc.file && where) loc.file = wf_loc_file(where); /* the sink sees which file it was */
    g_sink(sev, loc, msg, g_sink_user);
    return;
  }
  wf_progress_done();
  const char *named = wf_loc_description(loc);
  if (named)
    fprintf(stderr, "%s: %s: %s\n", named, sev_name(sev), msg);
  else if (loc.file && loc.line)
    fprintf(stderr, "%s:%u:%u: %s: %s\n", loc.file, loc.line, loc.col ? loc.col : 1, sev_name(sev), msg);
  else if (loc.file)
    fprintf(stderr, "%s: %s: %s\n", loc.file, sev_name(sev), msg);
  else
    fprintf(stderr, "%s: %s: %s\n", where ? where : g_program, sev_name(sev), msg);
}

void wf_verror(wf_severity sev, wf_loc loc, const char *fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  emit(sev, loc, NULL, buf);
}

#define WF_DIAG_FN(fn, sev)                 \
  void fn(wf_loc loc, const char *fmt, ...) { \
    va_list ap;                             \
    va_start(ap, fmt);                      \
    wf_verror(sev, loc, fmt, ap);           \
    va_end(ap);                             \
  }
WF_DIAG_FN(wf_error, WF_SEV_ERROR)
WF_DIAG_FN(wf_warning, WF_SEV_WARNING)
WF_DIAG_FN(wf_note, WF_SEV_NOTE)

void wf_error_at(const char *where, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  emit(WF_SEV_ERROR, WF_LOC_NONE, where, buf);
}

_Noreturn void wf_internal_error(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "%s: internal error at %s:%d: ", g_program, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nThis is a bug in waferc; please report it with the input that caused it.\n");
  abort();
}

int wf_progress_enabled(void) { return !g_quiet && isatty(STDERR_FILENO); }
void wf_progress_set_quiet(int quiet) { g_quiet = quiet; }

void wf_progress(const char *fmt, ...) {
  if (!wf_progress_enabled()) return;
  va_list ap;
  fputs("\r\033[K", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  g_progress_shown = 1;
}

void wf_progress_done(void) {
  if (!g_progress_shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  g_progress_shown = 0;
}
