/* Command-line handling shared by waferc and wafer-opt: pass plugins, pipelines, the pass
 * manager's flags, targets, and reading/writing modules. Part of libwaferc, private to the
 * tools (not installed).
 *
 *   wf_cli c;
 *   wf_cli_init(&c, "wafer-opt");
 *   for (int i = 1; i < argc; i++) {
 *     int k = wf_cli_parse_common(&c, argc, argv, &i);
 *     if (k < 0) return WF_EXIT_USAGE;
 *     if (k == 0) ... the tool's own options ...
 *   }
 *   if ((rc = wf_cli_load_passes(&c)) != 0) return rc;
 */
#ifndef WAFERC_PASSES_CLI_H
#define WAFERC_PASSES_CLI_H

#include <stdio.h>

#include "waferc/pass.h"

#define WF_CLI_MAX_PLUGINS 64
/* Inline constants of more elements print as dense<elided> unless --elide-elements-above or
 * --print-constants says otherwise (docs/ir-text-format.md). */
#define WF_CLI_ELIDE_DEFAULT 16

typedef struct wf_cli {
  const char *tool;                          /* "waferc", "wafer-opt" */
  const char *pipeline;                      /* --pass-pipeline; NULL = the tool's default */
  const char *plugins[WF_CLI_MAX_PLUGINS];   /* --load-pass-plugin, in order */
  int n_plugins;
  wf_pm_opts pm;                             /* --print-ir-*, --dump-dir, --timing, ... */
  const char *target_name;                   /* --target; default "test4x4" */
  const char *mesh;                          /* --mesh=WxH; NULL = the preset's default */
  int target_given;                          /* --target or --mesh was on the command line */
  int list_passes;                           /* --list-passes */
  int list_targets;                          /* --list-targets */
  int print_pipeline;                        /* --print-pipeline */
  int quiet;                                 /* -q */
  int elide_given;                           /* --elide-elements-above or --print-constants */
  int output_whole;                          /* the tool's output keeps every constant unless
                                                elide_given (wafer-opt: it is the model) */
  wf_target target;                          /* loaded by wf_cli_load_target */
} wf_cli;

void wf_cli_init(wf_cli *c, const char *tool);

/* Matches argv[*i] against option `name` taking a value, as `--name=V` or `--name V`
 * (advancing *i). Returns 1 and sets *value, 0 if argv[*i] is another option, or -1 (after
 * reporting) if the value is missing. */
int wf_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

/* Consumes argv[*i] (and its value) if it is one of the shared options above. Returns 1 if
 * consumed, 0 if it is not a shared option, -1 on bad usage (reported). */
int wf_cli_parse_common(wf_cli *c, int argc, char **argv, int *i);

/* Registers the built-in passes, loads the plugins, and checks the pass names given to
 * --print-ir-before/--print-ir-after. Returns a WF_EXIT_* code. */
int wf_cli_load_passes(wf_cli *c);

/* Loads --target/--mesh into c->target and points c->pm.target at it. WF_EXIT_* code. */
int wf_cli_load_target(wf_cli *c);

/* Parses the pipeline text; NULL (reported) on error. */
wf_pipeline *wf_cli_parse_pipeline(wf_cli *c, const char *text);

/* Reads a .wir module from a path, or from standard input for "-". NULL (reported) on error,
 * with *rc set to WF_EXIT_IO (cannot read) or WF_EXIT_INPUT (does not parse). */
wf_module *wf_cli_read_module(const char *path, int *rc);
/* Prints m to `path` (NULL or "-" = standard output) with c's print options (every constant
 * in full when c->output_whole and no elision flag was given). WF_EXIT_* code. */
int wf_cli_write_module(const wf_cli *c, const char *path, const wf_module *m);

/* Reports an unknown option of c->tool, suggesting the closest of the shared options and
 * the tool's own `own[0..n_own)`. */
void wf_cli_unknown_option(const wf_cli *c, const char *arg, const char *const *own, int n_own);

void wf_cli_print_common_help(FILE *out);
void wf_cli_list_passes(FILE *out);

#endif
