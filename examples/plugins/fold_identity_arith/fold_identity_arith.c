/* Example pass plugin: fold-identity-arith.
 *
 * Folds arithmetic with a constant that does nothing:
 *   mul(x, c) and mul(c, x) where every element of c is 1   ->  x
 *   div(x, c)               where every element of c is 1   ->  x
 *   add(x, c), add(c, x), sub(x, c)  where c is all 0       ->  x
 * only when the result has exactly x's type (a constant that broadcasts x to a larger shape
 * is not an identity). Exporters emit such ops around scaled attention and residuals.
 *
 * Build it in-tree or out of tree against an installed waferc (see README.md), then:
 *   wafer-opt --load-pass-plugin=./fold_identity_arith.so \
 *             --pass-pipeline='fold-identity-arith{max-elements=64},dce' model.wir
 */
#include <waferc/pass.h>
#include <waferc/tensor.h>

/* Is global operand `v` a small constant whose every element equals `want`? */
static int is_all(wf_module *m, wf_func *f, wf_value v, double want, int64_t max_elements) {
  const wf_value_info *vi = wf_value_get(f, v);
  if (vi->kind != WF_VAL_GLOBAL) return 0;
  const wf_global *g = &m->globals[vi->index];
  /* Only data already in the module: reading weight files in an optimization pass would
   * make the pass cost as much as loading the model. */
  if (g->kind != WF_DATA_SPLAT && g->kind != WF_DATA_INLINE) return 0;
  if (g->kind == WF_DATA_INLINE && wf_type_numel(&g->type) > max_elements) return 0;
  wf_tensor *t = wf_global_tensor(m, vi->index);
  if (!t) return 0;
  int all = 1;
  for (int64_t i = 0, n = wf_tensor_numel(t); i < n && all; i++) all = wf_tensor_get(t, i) == want;
  wf_tensor_free(t);
  return all;
}

/* Which operand (0 or 1) passes through unchanged, or -1. */
static int identity_operand(wf_module *m, wf_func *f, const wf_op *op, int64_t max_elements) {
  int commutes = op->code == WF_OP_MUL || op->code == WF_OP_ADD;
  double unit = op->code == WF_OP_MUL || op->code == WF_OP_DIV ? 1.0 : 0.0;
  for (int keep = 0; keep < (commutes ? 2 : 1); keep++) {
    wf_value x = op->operands[keep], c = op->operands[1 - keep];
    if (wf_type_equal(wf_value_type(f, x), wf_value_type(f, op->results[0])) &&
        is_all(m, f, c, unit, max_elements))
      return keep;
  }
  return -1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) {
  int64_t max_elements = wf_pass_opt_int(ctx, "max-elements");
  for (int fi = 0; fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    for (wf_op *op = f->first, *next; op; op = next) {
      next = op->next;
      const char *stat;
      switch (op->code) {
      case WF_OP_MUL: stat = "mul-by-one"; break;
      case WF_OP_DIV: stat = "div-by-one"; break;
      case WF_OP_ADD: stat = "add-zero"; break;
      case WF_OP_SUB: stat = "sub-zero"; break;
      default: continue;
      }
      int keep = identity_operand(m, f, op, max_elements);
      if (keep < 0) continue;
      wf_value_replace_uses(f, op->results[0], op->operands[keep]);
      wf_op_unlink(f, op);
      wf_pass_stat_add(ctx, stat, 1);
      wf_pass_set_changed(ctx);
    }
  }
  return 0;
}

static const wf_pass_option options[] = {
    {"max-elements", WF_OPT_INT, "1024", "inline constants with more elements are not inspected"},
};
static const char *const stats[] = {"mul-by-one", "div-by-one", "add-zero", "sub-zero"};
static const wf_pass_info fold_identity_arith = {
    "fold-identity-arith", "Fold x*1, x/1, x+0 and x-0 with constant 1 or 0", options, 1, stats, 4, run,
};

static void register_passes(wf_pass_registry *r) { wf_pass_register(r, &fold_identity_arith); }

WF_PASS_PLUGIN("fold-identity-arith", "1.0", register_passes)
