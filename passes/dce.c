/* dce: removes pure ops none of whose results are used.
 *
 * One backward walk is enough: in SSA order every use follows its definition, so by the time
 * the walk reaches an op, all of its users have been seen (and removed if dead). */
#include <string.h>

#include "waferc/pass.h"

static int64_t dce_func(wf_func *f, wf_arena *scratch) {
  int32_t *uses = wf_arena_alloc(scratch, (size_t)(f->n_values + 1) * sizeof *uses);
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]++;
  int64_t removed = 0;
  for (wf_op *op = f->last, *prev; op; op = prev) {
    prev = op->prev;
    if (!(wf_opinfos[op->code].flags & WF_OPF_PURE)) continue;
    int live = 0;
    for (int r = 0; r < op->n_results; r++) live |= uses[op->results[r]] != 0;
    if (live) continue;
    for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]--;
    wf_op_unlink(f, op);
    removed++;
  }
  return removed;
}

static int dce_run(wf_module *m, wf_pass_ctx *ctx) {
  int64_t removed = 0;
  for (int i = 0; i < m->n_funcs; i++) removed += dce_func(m->funcs[i], wf_pass_scratch(ctx));
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
