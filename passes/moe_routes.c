/* moe-routes: makes each MoE router's choice a result of the function, so that a plan can
 * report how many tokens went to each expert (docs/moe-plans.md, "Tokens per expert").
 *
 * A router is a `topk` whose indices (its second result) a `scatter_elements` or
 * `gather_elements` reads as its indices, or a one-hot compares (`equal` of the indices
 * reshaped, ir/rules.h): the k experts each token goes to, over the last
 * axis of the gate matrix ([.., N]: N experts); or an `argmax` over that axis compared with
 * expert numbers (a top-1 router: Switch, GShard's two choices, token lists), its indices
 * returned as a [.., 1] column. Those indices are appended to the return, in
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

/* An argmax's [..] indices as the [.., 1] column a route is (the manifest's k = 1), laid out
 * as the argmax keeps its rows, the new dim held whole; inserted after the argmax. */
static wf_value as_column(wf_func *f, wf_op *am, wf_value idx) {
  wf_type t = *wf_value_type(f, idx);
  t.dims[t.rank] = 1;
  if (t.layout.rank == t.rank) {
    t.layout.dims[t.rank] = (wf_layout_dim){wf_intern(f->module, "K"), WF_AXIS_NONE, WF_AXIS_NONE};
    t.layout.rank++;
  }
  t.rank++;
  wf_op *rs = wf_op_new(f, WF_OP_RESHAPE, 1, &idx, 1, &t, am->loc);
  wf_op_insert_after(f, am, rs);
  return rs->results[0];
}

static int run_func(wf_func *f, wf_pass_ctx *ctx) {
  wf_op *ret = wf_func_return(f);
  if (!ret) return 0;
  int n = ret->n_operands, cap = n + 8;
  wf_value *ops = malloc((size_t)cap * sizeof *ops);
  WF_ASSERT(ops); /* out of host memory: exit 7, said (ir/diag.c) */
  for (int i = 0; i < n; i++) ops[i] = ret->operands[i];
  int added = 0;
  wf_func_foreach_op(f, op) {
    int am = wf_argmax_is_moe_route(f, op);
    if (!am && !wf_topk_is_moe_route(f, op)) continue;
    wf_value idx = op->results[am ? 0 : 1];
    int have = 0;
    for (int i = 0; i < n && !have; i++) have = ops[i] == idx || wf_unreshaped(f, ops[i]) == idx;
    if (have) continue;
    if (am && wf_op_int(f, op, "keepdims", 1) == 0) idx = as_column(f, op, idx); /* [.., 1]: k = 1 */
    if (n == cap) {
      ops = realloc(ops, (size_t)(cap *= 2) * sizeof *ops);
      WF_ASSERT(ops);
    }
    ops[n++] = idx;
    char name[64];
    snprintf(name, sizeof name, "moe_route_%d", added++);
    wf_value_set_name(f, idx, name);
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
