/* wafer-moe's shared command-line pieces (options.c) and its subcommands. */
#ifndef WAFERC_TOOLS_WAFER_MOE_H
#define WAFERC_TOOLS_WAFER_MOE_H

#include <cjson/cJSON.h>

#include "runtime/die/moe.h"

typedef struct moe_opts {
  const char *target;   /* die target preset or path */
  const char *dies;     /* --dies=WxH (required) */
  const char *wafers;   /* --wafers=K or KxL */
  const char *model;
  const char *heatmap;  /* --heatmap DIR */
  const char *platform; /* --platform FILE: keep the SimGrid XML there */
} moe_opts;

/* Takes --target, --dies, --wafers, --model, --heatmap, --platform from argv[i] when it is one
 * of them: 1 (taken), 0 (not one of them), -1 (reported: a missing value). */
int moe_common_opt(int argc, char **argv, int *i, moe_opts *o);
/* The value of `--name=V` or `--name V` at argv[*i] (advancing *i), or NULL if argv[*i] is not
 * that option; *bad is set when the option has no value. */
const char *moe_opt_value(int argc, char **argv, int *i, const char *name, int *bad);
/* Loads the die target, applies --dies and --wafers, and finds --model. A WF_EXIT_* code. */
int moe_setup(const moe_opts *o, wf_die_system *s, const wf_moe_model **model);
/* The platform path: --platform, or a file in a fresh temporary directory (removed by
 * moe_platform_done). NULL after reporting. */
char *moe_platform_path(const moe_opts *o);
void moe_platform_done(const moe_opts *o, char *path);
int moe_parse_int(const char *opt, const char *v, long lo, long hi, long *out);
int moe_parse_double(const char *opt, const char *v, double lo, double *out);
void moe_print_json(cJSON *root);
/* The end of a subcommand that simulated: closes the engine, removes the platform (as
 * moe_platform_done), then prints root when rc is 0 or drops it; returns rc. */
int moe_finish(const moe_opts *o, wf_die_engine *e, char *xml, cJSON *root, int rc);
void moe_unknown_option(const char *sub, const char *arg, const char *const *known, int n);

int moe_cmd_mapping(int argc, char **argv);
int moe_cmd_balance(int argc, char **argv);
int moe_cmd_trace(int argc, char **argv);

#endif
