/* A test plugin whose pass breaks the module on purpose, so the pass manager's failure paths
 * (verification after a pass, a failing pass, reproducers) can be tested. Built in-tree for
 * tests only.
 *
 *   test-break-ir              gives the first op's first result a wrong shape (the verifier
 *                              must catch it)
 *   test-break-ir{fail=true}   reports an error and returns failure
 *   test-break-ir{crash=true}  aborts, as a failed assertion in a pass would
 */
#include <stdlib.h>

#include <waferc/pass.h>

static int run(wf_module *m, wf_pass_ctx *ctx) {
  if (wf_pass_opt_bool(ctx, "crash")) abort();
  if (wf_pass_opt_bool(ctx, "fail")) {
    wf_error(WF_LOC_NONE, "test-break-ir: failing on request");
    return 1;
  }
  for (int fi = 0; fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    for (wf_op *op = f->first; op; op = op->next) {
      if (op->n_results == 0) continue;
      wf_type *t = wf_value_type(f, op->results[0]);
      /* One more leading dimension than the op produces: a shape the verifier rejects. */
      if (t->rank >= WF_MAX_RANK) continue;
      for (int d = t->rank; d > 0; d--) t->dims[d] = t->dims[d - 1];
      t->dims[0] = 3;
      t->rank++;
      wf_pass_set_changed(ctx);
      return 0;
    }
  }
  return 0;
}

static const wf_pass_option options[] = {
    {"fail", WF_OPT_BOOL, "false", "report an error instead"},
    {"crash", WF_OPT_BOOL, "false", "abort instead"},
};
static const wf_pass_info break_ir = {"test-break-ir", "Corrupt the module (tests only)", options, 2, NULL, 0, run};

static void register_passes(wf_pass_registry *r) { wf_pass_register(r, &break_ir); }

WF_PASS_PLUGIN("test-break-ir", "0.0", register_passes)
