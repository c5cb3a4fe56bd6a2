/* moe-routes: makes each MoE router's choice a result of the function, so that a plan can
 * report how many tokens went to each expert (docs/moe-plans.md, "Tokens per expert").
 *
 * A router is a `topk` whose indices (its second result) a `scatter_elements` or
 * `gather_elements` reads as its indices, or a one-hot compares (`equal` of the indices
 * reshaped, ir/rules.h): the k experts each token goes to, over the last
 * axis of the gate matrix ([.., N]: N experts). Those indices are appended to the return, in
 * program order and named moe_route_<i>, unless the function already returns them. The plan's
 * emitter lists them in the manifest's `moe` (backend/plan/manifest.c), and waferrun counts
 * them per expert.
 *
 * It runs after partition (the indices keep the layout partition gave them; a result needs no
 * other) and changes nothing that is computed. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/rules.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

static const char *const stats[] = {"routes"};

static int run_func(wf_func *f, wf_pass_ctx *ctx) {
  wf_op *ret = wf_func_return(f);
  if (!ret) return 0;
  int n = ret->n_operands, cap = n + 8;
  wf_value *ops = malloc((size_t)cap * sizeof *ops);
  WF_ASSERT(ops); /* out of host memory: exit 7, said (ir/diag.c) */
  for (int i = 0; i < n; i++) ops[i] = ret->operands[i];
  int added = 0;
  wf_func_foreach_op(f, op) {
    if (!wf_topk_is_moe_route(f, op)) continue;
    int have = 0;
    for (int i = 0; i < n && !have; i++) have = ops[i] == op->results[1];
    if (have) continue;
    if (n == cap) {
      ops = realloc(ops, (size_t)(cap *= 2) * sizeof *ops);
      WF_ASSERT(ops);
    }
    ops[n++] = op->results[1];
    char name[64];
    snprintf(name, sizeof name, "moe_route_%d", added++);
    wf_value_set_name(f, op->results[1], name);
  }
  if (added) {
    wf_op *nr = wf_op_new(f, WF_OP_RETURN, n, ops, 0, NULL, ret->loc);
    wf_op_insert_before(f, ret, nr);
    wf_op_unlink(f, ret);
    wf_type *types = malloc((size_t)n * sizeof *types);
    WF_ASSERT(types);
    for (int i = 0; i < n; i++) types[i] = *wf_value_type(f, ops[i]);
    wf_func_set_result_types(f, n, types);
    free(types);
    wf_pass_stat_add(ctx, "routes", added);
  }
  free(ops);
  return 0;
}

static int run(wf_module *m, wf_pass_ctx *ctx) {
  for (int i = 0; i < m->n_funcs; i++) {
    int rc = run_func(m->funcs[i], ctx);
    if (rc) return rc;
  }
  return 0;
}

const wf_pass_info wf_pass_moe_routes = {
    "moe-routes", "Return each MoE router's expert indices (topk read by scatter/gather_elements), for the report",
    NULL, 0, stats, 1, run,
};
