/* waferc — diagnostics: located user errors and internal assertions.
 *
 * Two channels (STYLE.md §5):
 *   - user errors carry a location and are counted; the tool exits with a documented code;
 *       wf_error(loc, "unknown op '%s'", name);   ->  model.wir:12:7: error: unknown op 'foo'
 *   - internal bugs use WF_ASSERT / WF_UNREACHABLE, print file:line and abort().
 */
#ifndef WAFERC_DIAG_H
#define WAFERC_DIAG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes shared by every waferc tool (documented in README.md, "Exit codes"). */
enum {
  WF_EXIT_OK = 0,          /* success */
  WF_EXIT_INPUT = 1,       /* bad input: malformed file, verifier failure, corrupt plan */
  WF_EXIT_USAGE = 2,       /* bad command line */
  WF_EXIT_UNSUPPORTED = 3, /* valid input using something waferc does not support yet */
  WF_EXIT_NOFIT = 4,       /* does not fit the target: SRAM, mesh, colors */
  WF_EXIT_RUNTIME = 5,     /* simulation failed: deadlock, SRAM overflow at run time */
  WF_EXIT_IO = 6,          /* cannot read or write a file or directory */
  WF_EXIT_NOMEM = 7,       /* the host ran out of memory (an allocation failed) */
  /* internal errors abort(): the shell reports 134 (SIGABRT) */
};

/* A source location. `file` is interned by wf_loc_file() and lives for the process. */
typedef struct wf_loc {
  const char *file; /* NULL = unknown location */
  uint32_t line;    /* 1-based; 0 = unknown */
  uint32_t col;     /* 1-based; 0 = unknown */
} wf_loc;

#define WF_LOC_NONE ((wf_loc){NULL, 0, 0})

/* Interns a file name for use in wf_loc (process lifetime, never freed). */
const char *wf_loc_file(const char *path);
static inline wf_loc wf_loc_make(const char *file, uint32_t line, uint32_t col) {
  wf_loc l = {wf_loc_file(file), line, col};
  return l;
}

/* Gives `loc` a readable name that diagnostics print in place of `file:line:col`. The ONNX
 * importer names each node's location `model.onnx: node 'n' (MatMul, opset 14)`, so an
 * error a later pass reports on an op from that node names the node, not its index. The
 * text is copied; a later call for the same (file, line) replaces it. */
void wf_loc_describe(wf_loc loc, const char *text);
/* The name given to loc's (file, line) by wf_loc_describe, or NULL. */
const char *wf_loc_description(wf_loc loc);

typedef enum wf_severity { WF_SEV_ERROR, WF_SEV_WARNING, WF_SEV_NOTE } wf_severity;

/* Diagnostics go to a sink (stderr by default). Tests may redirect them. */
typedef void (*wf_diag_sink)(wf_severity sev, wf_loc loc, const char *msg, void *user);
void wf_diag_set_sink(wf_diag_sink sink, void *user); /* NULL restores stderr */
/* The current sink (NULL: stderr), so that a nested redirection can put it back. */
wf_diag_sink wf_diag_get_sink(void **user);

void wf_error(wf_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wf_warning(wf_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wf_note(wf_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wf_verror(wf_severity sev, wf_loc loc, const char *fmt, va_list ap);
/* Error without a source location, prefixed by a context such as a file or tool name:
 *   wf_error_at("plan/manifest.json", "missing key 'mesh'")  ->  plan/manifest.json: error: ... */
void wf_error_at(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Source lines under located diagnostics, clang-style:
 *   model.wir:5:10: error: unknown op 'frob'; did you mean 'exp'?
 *       %0 = frob(%x) : f32[4]
 *            ^
 * A file's line is read back from disk when needed; text that is not on disk (standard
 * input) is registered with wf_diag_add_source (copied, kept for the process), and the
 * parser names the text it is parsing with wf_diag_push_source (not copied; pass NULL to
 * end). wf_diag_set_snippets(0) turns the lines off. */
void wf_diag_add_source(const char *file, const char *text, size_t len);
void wf_diag_push_source(const char *file, const char *text, size_t len);
void wf_diag_set_snippets(int on);

/* The name in names[0..n) closest to `word` by edit distance, when close enough to be a
 * likely typo (a third of the word's length, at most 3 edits; none for words under 3
 * letters); NULL otherwise. For
 * "did you mean" hints on unknown options, ops and passes. */
const char *wf_closest_name(const char *word, const char *const *names, int n);

/* Reports an unknown command-line option `arg` of `tool` ("--gemm-algoo=x"), suggesting the
 * closest of the tool's `options` (compared without any "=value"). */
void wf_error_unknown_option(const char *tool, const char *arg, const char *const *options, int n);

/* The exit code for a file a reader rejected: WF_EXIT_IO when `path` cannot be read at all
 * (missing, no permission), else `otherwise` (its content was bad: WF_EXIT_INPUT). */
int wf_exit_for_file(const char *path, int otherwise);
/* The same for wf_target_load(name_or_path): a target file that cannot be read is
 * WF_EXIT_IO, an unknown preset name WF_EXIT_USAGE, a bad target file WF_EXIT_INPUT. */
int wf_exit_for_target(const char *name_or_path);

unsigned wf_diag_error_count(void);
void wf_diag_reset(void);
/* Name printed before messages that have no location at all (e.g. "waferc"). */
void wf_diag_set_program(const char *name);

/* Internal invariants. Never for user input. */
_Noreturn void wf_internal_error(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define WF_ASSERT(cond)                                                                  \
  do {                                                                                   \
    if (!(cond)) wf_internal_error(__FILE__, __LINE__, "assertion failed: %s", #cond);   \
  } while (0)
#define WF_UNREACHABLE(msg) wf_internal_error(__FILE__, __LINE__, "unreachable: %s", msg)

/* Progress lines on a terminal only (stderr is a tty and not quiet). */
int wf_progress_enabled(void);
void wf_progress_set_quiet(int quiet);
void wf_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wf_progress_done(void);

#ifdef __cplusplus
}
#endif
#endif
