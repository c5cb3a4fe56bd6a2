/* Private to passes/: the registry, parsed pipelines and the pass context.
 * Only the files in passes/ include this; everyone else goes through waferc/pass.h. */
#ifndef WAFERC_PASS_INTERNAL_H
#define WAFERC_PASS_INTERNAL_H

#include "waferc/pass.h"

typedef struct wf_registered_pass {
  const wf_pass_info *info;
  const char *origin; /* NULL = built in; else "plugin NAME VERSION (PATH)" */
} wf_registered_pass;

struct wf_pass_registry {
  wf_registered_pass *v; /* in registration order */
  int n, cap;
};

/* The plugin loader sets this while a plugin's register_fn runs, so the registry can record
 * where each pass came from (shown by --list-passes). */
void wf_pass_registry_set_origin(const char *origin);
const char *wf_pass_origin(wf_pass_registry *r, const char *name);
/* The registered pass whose name is closest to `name` (a likely typo), or NULL. */
const char *wf_pass_closest(wf_pass_registry *r, const char *name);

/* A typed option value. `text` is exactly as written in the pipeline (quoted strings keep
 * their quotes), so printing a pipeline gives back its text. */
typedef struct wf_opt_value {
  const wf_pass_option *spec;
  char *text;
  char *str; /* STRING: the value with quotes removed and escapes resolved */
  int64_t i; /* INT, BOOL */
  double f;  /* FLOAT */
} wf_opt_value;

typedef struct wf_pipeline_pass {
  const wf_pass_info *info;
  int braces; /* written with {...} (possibly empty): printed back the same way */
  int n_opts;
  wf_opt_value *opts;
} wf_pipeline_pass;

struct wf_pipeline {
  int n;
  wf_pipeline_pass *passes;
};

/* Parses `text` as a value of `kind` into `out` (text and str are malloc'd). Returns 0, or
 * nonzero with a reason in `why` (which must hold 128 bytes). */
int wf_opt_value_parse(wf_opt_kind kind, const char *text, wf_opt_value *out, char *why);
/* Limits on a value from a pipeline string, which is user input and sizes work a pass does
 * (a loop per mesh column, a cache of `capacity` slots): an int within +-WF_OPT_INT_LIMIT, and
 * an option named "mesh" (a WxH region, by convention of every pass that takes one) with
 * sides in 1..WF_OPT_MESH_SIDE and at most WF_OPT_MESH_PES PEs. 0, or 1 with why[128] set. */
#define WF_OPT_INT_LIMIT INT64_C(2147483647)
#define WF_OPT_MESH_SIDE 65536
#define WF_OPT_MESH_PES (1 << 20) /* a whole WSE-3 (762x1172) and more */
int wf_opt_value_check(const wf_pass_option *spec, const wf_opt_value *v, char *why);
void wf_opt_value_clear(wf_opt_value *v);
const char *wf_opt_kind_name(wf_opt_kind kind);

/* What a running pass sees (waferc/pass.h's accessors). */
struct wf_pass_ctx {
  const wf_pipeline_pass *pass; /* the pipeline entry being run: info + option values */
  int64_t *stats;               /* one counter per info->stats[i] */
  int changed;                  /* set by wf_pass_set_changed */
  const wf_target *target;
  wf_arena *scratch;
};

/* Prints one pipeline entry ("name{k=v,...}"), malloc'd; used for reproducers. */
char *wf_pipeline_pass_print(const wf_pipeline_pass *p);

#endif
