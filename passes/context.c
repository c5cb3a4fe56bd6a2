/* The accessors a pass uses on its context: options, statistics, target, scratch memory.
 * Asking for an option or statistic the descriptor does not declare is a bug in the pass. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* Finds the declared option `name` and the pipeline's value for it, if one was given. */
static const wf_pass_option *lookup(wf_pass_ctx *ctx, const char *name, wf_opt_kind kind,
                                    const wf_opt_value **given) {
  const wf_pass_info *info = ctx->pass->info;
  *given = NULL;
  for (int i = 0; i < ctx->pass->n_opts; i++)
    if (strcmp(ctx->pass->opts[i].spec->name, name) == 0) *given = &ctx->pass->opts[i];
  for (int i = 0; i < info->n_options; i++) {
    if (strcmp(info->options[i].name, name) != 0) continue;
    if (info->options[i].kind != kind)
      wf_internal_error(__FILE__, __LINE__, "pass '%s' reads option '%s' as %s but declares it %s", info->name,
                        name, wf_opt_kind_name(kind), wf_opt_kind_name(info->options[i].kind));
    return &info->options[i];
  }
  wf_internal_error(__FILE__, __LINE__, "pass '%s' reads undeclared option '%s'", info->name, name);
}

static wf_opt_value value_of(wf_pass_ctx *ctx, const char *name, wf_opt_kind kind) {
  const wf_opt_value *given;
  const wf_pass_option *spec = lookup(ctx, name, kind, &given);
  wf_opt_value v;
  char why[128];
  if (given) {
    v = *given;
    v.text = v.str = NULL;
    return v;
  }
  /* Defaults were checked at registration, so this parse cannot fail. */
  int rc = wf_opt_value_parse(kind, spec->default_value ? spec->default_value : "", &v, why);
  WF_ASSERT(rc == 0);
  wf_opt_value copy = v;
  copy.text = copy.str = NULL;
  wf_opt_value_clear(&v);
  return copy;
}

int64_t wf_pass_opt_int(wf_pass_ctx *ctx, const char *name) { return value_of(ctx, name, WF_OPT_INT).i; }
int wf_pass_opt_bool(wf_pass_ctx *ctx, const char *name) { return (int)value_of(ctx, name, WF_OPT_BOOL).i; }
double wf_pass_opt_float(wf_pass_ctx *ctx, const char *name) { return value_of(ctx, name, WF_OPT_FLOAT).f; }

const char *wf_pass_opt_str(wf_pass_ctx *ctx, const char *name) {
  const wf_opt_value *given;
  const wf_pass_option *spec = lookup(ctx, name, WF_OPT_STRING, &given);
  if (given) return given->str;
  /* The string lives in the scratch arena: valid for the rest of the pass. */
  wf_opt_value v;
  char why[128];
  int rc = wf_opt_value_parse(WF_OPT_STRING, spec->default_value ? spec->default_value : "", &v, why);
  WF_ASSERT(rc == 0);
  char *s = wf_arena_strdup(ctx->scratch, v.str);
  wf_opt_value_clear(&v);
  return s;
}

void wf_pass_stat_add(wf_pass_ctx *ctx, const char *stat, int64_t delta) {
  const wf_pass_info *info = ctx->pass->info;
  for (int i = 0; i < info->n_stats; i++)
    if (strcmp(info->stats[i], stat) == 0) {
      ctx->stats[i] += delta;
      return;
    }
  wf_internal_error(__FILE__, __LINE__, "pass '%s' adds to undeclared statistic '%s'", info->name, stat);
}

void wf_pass_set_changed(wf_pass_ctx *ctx) { ctx->changed = 1; }
const wf_target *wf_pass_target(wf_pass_ctx *ctx) { return ctx->target; }
wf_arena *wf_pass_scratch(wf_pass_ctx *ctx) { return ctx->scratch; }
