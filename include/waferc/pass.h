/* waferc — passes, pipelines and plugins.
 *
 * A pass is a descriptor: kebab-case name, one-line summary, typed options, statistics and a
 * run function. Built-in passes and plugin passes register the same way, through
 * WF_PASS_PLUGIN (a plugin) or wf_pass_register (built in).
 *
 *   static const wf_pass_option opts[] = {
 *     {"mesh", WF_OPT_STRING, "4x4", "mesh the region spans"},
 *   };
 *   static const char *const stats[] = {"ops-partitioned"};
 *   static int run(wf_module *m, wf_pass_ctx *ctx) {
 *     ... wf_pass_stat_add(ctx, "ops-partitioned", 1); wf_pass_set_changed(ctx); ...
 *     return 0;                                      // nonzero = failed (errors reported)
 *   }
 *   const wf_pass_info my_pass = {"partition", "Assign layouts ...", opts, 1, stats, 1, run};
 *
 * Pipelines are text: "canonicalize,partition{mesh=4x4},dce" parses and prints back
 * identically (options print in the order given).
 */
#ifndef WAFERC_PASS_H
#define WAFERC_PASS_H

#include "waferc/ir.h"
#include "waferc/target.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wf_opt_kind { WF_OPT_INT, WF_OPT_BOOL, WF_OPT_STRING, WF_OPT_FLOAT } wf_opt_kind;

typedef struct wf_pass_option {
  const char *name;          /* kebab-case */
  wf_opt_kind kind;
  const char *default_value; /* text form, parsed like a pipeline value */
  const char *help;
} wf_pass_option;

typedef struct wf_pass_ctx wf_pass_ctx;

typedef struct wf_pass_info {
  const char *name;    /* kebab-case, unique */
  const char *summary; /* one line */
  const wf_pass_option *options;
  int n_options;
  const char *const *stats; /* statistic names, kebab-case */
  int n_stats;
  int (*run)(wf_module *m, wf_pass_ctx *ctx); /* 0 = success; a WF_EXIT_* code is passed on */
} wf_pass_info;

/* Inside a pass. Option getters return the pipeline's value or the option's default. */
int64_t wf_pass_opt_int(wf_pass_ctx *ctx, const char *name);
int wf_pass_opt_bool(wf_pass_ctx *ctx, const char *name);
double wf_pass_opt_float(wf_pass_ctx *ctx, const char *name);
const char *wf_pass_opt_str(wf_pass_ctx *ctx, const char *name);
void wf_pass_stat_add(wf_pass_ctx *ctx, const char *stat, int64_t delta);
void wf_pass_set_changed(wf_pass_ctx *ctx);     /* the pass modified the module */
const wf_target *wf_pass_target(wf_pass_ctx *ctx); /* the compile's target (never NULL) */
wf_arena *wf_pass_scratch(wf_pass_ctx *ctx);    /* reset after the pass */

/* ---- registry ---------------------------------------------------------------------- */

typedef struct wf_pass_registry wf_pass_registry;
/* The process-wide registry, holding the built-in passes. */
wf_pass_registry *wf_pass_registry_global(void);
/* Returns 0, or nonzero (and reports) if the name is taken or the descriptor is malformed. */
int wf_pass_register(wf_pass_registry *r, const wf_pass_info *info);
const wf_pass_info *wf_pass_lookup(wf_pass_registry *r, const char *name);
int wf_pass_count(wf_pass_registry *r);
const wf_pass_info *wf_pass_at(wf_pass_registry *r, int i);

/* ---- plugins ----------------------------------------------------------------------- */

#define WF_PLUGIN_API_VERSION 1
#define WF_PLUGIN_ENTRY_SYMBOL "wf_plugin_get_info"

typedef struct wf_plugin_info {
  uint32_t api_version; /* WF_PLUGIN_API_VERSION the plugin was built against */
  const char *name;
  const char *version;
  void (*register_fn)(wf_pass_registry *r);
} wf_plugin_info;

/* Writes a plugin's entry point:  WF_PASS_PLUGIN("my-plugin", "1.0", my_register)  */
#define WF_PASS_PLUGIN(NAME, VERSION, REGISTER_FN)                                          \
  __attribute__((visibility("default"))) const wf_plugin_info *wf_plugin_get_info(void) {   \
    static const wf_plugin_info info = {WF_PLUGIN_API_VERSION, NAME, VERSION, REGISTER_FN}; \
    return &info;                                                                           \
  }

/* Loads a plugin: dlopen, looks up the entry, checks api_version BEFORE calling register_fn
 * ("got N, supported M"). Returns 0 on success; reports errors itself. */
int wf_plugin_load(wf_pass_registry *r, const char *path);

/* ---- pipelines and the pass manager ------------------------------------------------ */

typedef struct wf_pipeline wf_pipeline;
/* Parses "a,b{k=v,k2=v2},c"; checks pass names and options against the registry.
 * Errors name the position in the string. NULL on error. */
wf_pipeline *wf_pipeline_parse(wf_pass_registry *r, const char *text);
char *wf_pipeline_print(const wf_pipeline *p); /* malloc'd; round-trips */
void wf_pipeline_free(wf_pipeline *p);

typedef struct wf_pm_opts {
  int verify_each;               /* verify after every pass (default 1) */
  const char *print_before;      /* comma-separated pass names, or NULL */
  const char *print_after;       /* comma-separated pass names, or NULL */
  int print_after_all;
  int print_after_change;
  const char *dump_dir;          /* numbered dumps NN_pass.wir; NULL = none */
  int timing;                    /* per-pass wall time + statistics report to stderr */
  int statistics;                /* statistics report to stderr */
  FILE *print_stream;            /* where --print-ir-* goes (default stderr) */
  wf_print_opts print_opts;
  const wf_target *target;       /* the compile's target */
} wf_pm_opts;
void wf_pm_opts_init(wf_pm_opts *o);

/* Runs the pipeline on m. Returns a WF_EXIT_* code (0 = success). On a pass failure, writes a
 * reproducer (the module before the pass plus the pipeline) when a dump_dir is set. */
int wf_pipeline_run(const wf_pipeline *p, wf_module *m, const wf_pm_opts *opts);

/* Registers the built-in passes into the global registry (idempotent). */
void wf_register_builtin_passes(void);

#ifdef __cplusplus
}
#endif
#endif
