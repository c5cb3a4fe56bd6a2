/* raise-silu: x * sigmoid(x) (either operand order; torch exports F.silu this way) -> silu(x).
 * The sigmoid must feed only this multiply. */
#include "passes/raise.h"

static int match(wf_raise *r, wf_op *root) {
  wf_value a, b;
  if (root->n_results != 1 || !wf_raise_bin(r, root->results[0], WF_OP_MUL, &a, &b)) return 0;
  for (int side = 0; side < 2; side++) {
    wf_value x = side ? b : a, s = side ? a : b;
    wf_op *sig = wf_raise_def(r, s, WF_OP_SIGMOID);
    if (!sig || wf_raise_strip_casts(r, sig->operands[0]) != wf_raise_strip_casts(r, x)) continue;
    x = wf_raise_strip_casts(r, x);
    wf_op *ops[2] = {root, sig};
    if (!wf_raise_same_shape(r, root->results[0], x) || !wf_raise_closed(r, ops, 2, root)) continue;
    wf_op *op = wf_raise_build(r, root, WF_OP_SILU, 1, &x, NULL);
    wf_raise_replace(r, root, op->results[0]);
    wf_pass_stat_add(r->ctx, "silu", 1);
    return 1;
  }
  return 0;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"silu"};
const wf_pass_info wf_pass_raise_silu = {
    "raise-silu", "Raise x * sigmoid(x) to silu", NULL, 0, stats, 1, run,
};
