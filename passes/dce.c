/* dce: removes pure ops none of whose results are used (wf_func_remove_dead_ops). */
#include "waferc/pass.h"

static int dce_run(wf_module *m, wf_pass_ctx *ctx) {
  int64_t removed = 0;
  for (int i = 0; i < m->n_funcs; i++) removed += wf_func_remove_dead_ops(m->funcs[i]);
  if (removed) {
    wf_pass_stat_add(ctx, "ops-removed", removed);
    wf_pass_set_changed(ctx);
  }
  return 0;
}

static const char *const dce_stats[] = {"ops-removed"};

const wf_pass_info wf_pass_dce = {
    "dce", "Remove pure ops whose results are unused", NULL, 0, dce_stats, 1, dce_run,
};
