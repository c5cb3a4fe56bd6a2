/* The op table's rule dispatch (an X-macro over ops.def) and the cost estimates; the helpers
 * the rules, the verifier and the kernels share are rules_util.c. */
#include <stdlib.h>
#include <string.h>

#include "ir/rules.h"

typedef int (*rule_fn)(wf_func *f, const wf_op *op, wf_type *out);
typedef int64_t (*cost_fn)(const wf_func *f, const wf_op *op);

static const struct {
  rule_fn infer;
  cost_fn flops;
} g_rules[WF_OP_COUNT] = {
#define WF_OP(id, text, nin, nout, flags, rule, attrs) [WF_OP_##id] = {wf_rule_##rule, wf_cost_##rule},
#include "waferc/ops.def"
#undef WF_OP
};

int wf_infer_result_types(wf_func *f, const wf_op *op, wf_type *out) {
  WF_ASSERT((unsigned)op->code < WF_OP_COUNT);
  const wf_opinfo *info = &wf_opinfos[op->code];
  /* The verifier checks counts first; this guards direct callers (passes) too. */
  if (info->n_operands >= 0 && op->n_operands != info->n_operands) {
    wf_error(op->loc, "'%s' takes %d operand%s, got %d", info->name, info->n_operands,
             info->n_operands == 1 ? "" : "s", op->n_operands);
    return -1;
  }
  if (info->n_results >= 0 && op->n_results != info->n_results) {
    wf_error(op->loc, "'%s' has %d result%s, got %d", info->name, info->n_results,
             info->n_results == 1 ? "" : "s", op->n_results);
    return -1;
  }
  return g_rules[op->code].infer(f, op, out);
}

int64_t wf_op_flops(const wf_func *f, const wf_op *op) {
  WF_ASSERT((unsigned)op->code < WF_OP_COUNT);
  return g_rules[op->code].flops(f, op);
}

int64_t wf_op_bytes(const wf_func *f, const wf_op *op) {
  int64_t b = 0;
  for (int i = 0; i < op->n_operands; i++) b += (int64_t)wf_type_bytes(wf_value_type(f, op->operands[i]));
  for (int i = 0; i < op->n_results; i++) b += (int64_t)wf_type_bytes(wf_value_type(f, op->results[i]));
  return b;
}
