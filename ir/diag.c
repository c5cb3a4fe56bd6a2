/* Diagnostics: located user errors, warnings and notes; internal errors; progress lines. */
#include <errno.h>
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
  WF_ASSERT(f);
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
  WF_ASSERT(copy);
  loc_name *n = find_name(loc);
  if (n) {
    free(n->text);
    n->text = copy;
    return;
  }
  if (g_n_names == g_cap_names) {
    g_cap_names = g_cap_names ? 2 * g_cap_names : 64;
    g_names = realloc(g_names, g_cap_names * sizeof *g_names);
    WF_ASSERT(g_names);
  }
  g_names[g_n_names++] = (loc_name){loc.file, loc.line, copy};
}

const char *wf_loc_description(wf_loc loc) {
  loc_name *n = find_name(loc);
  return n ? n->text : NULL;
}

wf_diag_sink wf_diag_get_sink(void **user) {
  if (user) *user = g_sink_user;
  return g_sink;
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

/* ---- source lines under diagnostics ---------------------------------------------------- */

/* The text being parsed right now (wf_diag_push_source) and texts that exist nowhere on disk
 * (standard input, registered with wf_diag_add_source); any other file is read back from
 * disk when a diagnostic needs one of its lines, keeping the last one read. */
typedef struct source {
  struct source *next;
  const char *file; /* interned */
  char *text;
  size_t len;
} source;
static source *g_sources;
static const char *g_active_file, *g_active_text;
static size_t g_active_len;
static source g_cached;
static int g_snippets = 1;

void wf_diag_add_source(const char *file, const char *text, size_t len) {
  source *s = malloc(sizeof *s);
  WF_ASSERT(s && (s->text = malloc(len + 1)));
  memcpy(s->text, text, len);
  s->text[len] = '\0';
  s->len = len;
  s->file = wf_loc_file(file);
  s->next = g_sources;
  g_sources = s;
}

void wf_diag_push_source(const char *file, const char *text, size_t len) {
  g_active_file = file ? wf_loc_file(file) : NULL;
  g_active_text = text;
  g_active_len = len;
}

void wf_diag_set_snippets(int on) { g_snippets = on; }

/* The text of `file`, or NULL when it cannot be had (gone, unreadable, a directory). */
static const char *source_text(const char *file, size_t *len) {
  if (file == g_active_file && g_active_text) {
    *len = g_active_len;
    return g_active_text;
  }
  for (source *s = g_sources; s; s = s->next)
    if (s->file == file) {
      *len = s->len;
      return s->text;
    }
  if (g_cached.file != file) {
    free(g_cached.text);
    g_cached.text = NULL;
    g_cached.file = file;
    /* Binary inputs (an ONNX model's locations are node indices) have no lines to show,
     * and a model's weights are not worth reading for one. */
    size_t fl = strlen(file);
    if (fl >= 5 && !strcmp(file + fl - 5, ".onnx")) return NULL;
    FILE *f = fopen(file, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || ftell(f) > (1L << 28) || fseek(f, 0, SEEK_SET) != 0) {
      fclose(f); /* over 256 MB, or not seekable (a pipe): no snippet */
      return NULL;
    }
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
      n += k;
      if (n == cap) buf = realloc(buf, cap *= 2);
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
      free(buf);
      return NULL;
    }
    g_cached.text = buf;
    g_cached.len = n;
  }
  *len = g_cached.len;
  return g_cached.text;
}

/* Prints line loc.line of its file and a caret under loc.col, as clang does. Lines longer
 * than a terminal are cut to a window around the column. Nothing when the text is not at
 * hand or the line does not look like text. */
static void print_snippet(wf_loc loc) {
  size_t len = 0;
  const char *text = source_text(loc.file, &len);
  if (!text) return;
  const char *p = text, *end = text + len;
  for (uint32_t l = 1; l < loc.line; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return;
    p = nl + 1;
  }
  const char *e = memchr(p, '\n', (size_t)(end - p));
  if (!e) e = end;
  if (e > p && e[-1] == '\r') e--;
  for (const char *q = p; q < e; q++)
    if (*q == '\0' || ((unsigned char)*q < 0x20 && *q != '\t')) return; /* binary */
  size_t n = (size_t)(e - p), col = loc.col ? loc.col - 1 : 0, from = 0;
  if (col > n) col = n;
  enum { WIDTH = 160, BEFORE = 60 };
  const char *lead = "", *tail = "";
  if (n > WIDTH) {
    from = col > BEFORE ? col - BEFORE : 0;
    if (from) lead = "...";
    if (n - from > WIDTH) tail = "...";
  }
  size_t shown = n - from > WIDTH ? WIDTH : n - from;
  fprintf(stderr, "%s%.*s%s\n%s", lead, (int)shown, p + from, tail, *lead ? "   " : "");
  for (size_t i = from; i < col; i++) fputc(p[i] == '\t' ? '\t' : ' ', stderr);
  fputs("^\n", stderr);
}

/* ---- "did you mean" ---------------------------------------------------------------------- */

/* Edit distance with adjacent transpositions ("inptu" is one edit from "input"; optimal
 * string alignment), capped: anything past `cap` is just "far". */
static size_t edit_distance(const char *a, const char *b, size_t cap) {
  size_t la = strlen(a), lb = strlen(b);
  if ((la > lb ? la - lb : lb - la) > cap || la > 63 || lb > 63) return cap + 1;
  size_t d[64][64];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb] > cap ? cap + 1 : d[la][lb];
}

const char *wf_closest_name(const char *word, const char *const *names, int n) {
  if (!word || !*word) return NULL;
  /* A third of the word, at most three edits: "canonicalise" finds "canonicalize"; a word
   * of one or two letters finds nothing ('w' is not a typo of 'x'). */
  size_t wl = strlen(word), cap = wl / 3 > 3 ? 3 : wl / 3;
  if (cap == 0) return NULL;
  const char *best = NULL;
  size_t best_d = cap + 1;
  for (int i = 0; i < n; i++) {
    if (!names[i] || !strcmp(names[i], word)) continue;
    size_t d = edit_distance(word, names[i], cap);
    if (d < best_d) best_d = d, best = names[i];
  }
  return best;
}

int wf_exit_for_file(const char *path, int otherwise) {
  return path && access(path, R_OK) != 0 ? WF_EXIT_IO : otherwise;
}

int wf_exit_for_target(const char *name) {
  size_t n = strlen(name);
  int is_path = strchr(name, '/') || (n >= 7 && !strcmp(name + n - 7, ".target")); /* as wf_target_load */
  return is_path ? wf_exit_for_file(name, WF_EXIT_INPUT) : WF_EXIT_USAGE;
}

void wf_error_unknown_option(const char *tool, const char *arg, const char *const *options, int n) {
  /* Compared without the dashes, which every option shares ("--help" is not "--keep"). */
  char word[128];
  const char *a = arg + strspn(arg, "-");
  snprintf(word, sizeof word, "%.*s", (int)strcspn(a, "="), a);
  const char *bare[256];
  int k = 0;
  for (int i = 0; i < n && k < 256; i++) bare[k++] = options[i] + strspn(options[i], "-");
  const char *near = wf_closest_name(word, bare, k);
  for (int i = 0; near && i < k; i++)
    if (bare[i] == near) near = options[i], i = k; /* the option as written, dashes and all */
  int tool_len = (int)strcspn(tool, " "); /* "wafer-bench gemm": wafer-bench has the --help */
  if (near)
    wf_error_at(tool, "unknown option '%s'; did you mean '%s'? (see %.*s --help)", arg, near, tool_len, tool);
  else
    wf_error_at(tool, "unknown option '%s' (see %.*s --help)", arg, tool_len, tool);
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
  else if (loc.file && loc.line) {
    fprintf(stderr, "%s:%u:%u: %s: %s\n", loc.file, loc.line, loc.col ? loc.col : 1, sev_name(sev), msg);
    if (g_snippets) print_snippet(loc);
  }
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
  /* An assertion on an allocation's result (WF_ASSERT(p) after malloc): the host is out of
   * memory, not a bug; malloc's failure set errno, which nothing after it has touched. */
  if (errno == ENOMEM) {
    fflush(stdout);
    fprintf(stderr, "%s: error: out of host memory (an allocation failed at %s:%d); free memory or run a smaller "
                    "model or mesh\n", g_program, file, line);
    exit(WF_EXIT_NOMEM);
  }
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
