/* TEMPLATE for a new op's reference kernel (this file is excluded from the build).
 *
 * Adding an op, e.g. `abs`:
 *   1. one line in include/waferc/ops.def:
 *        WF_OP(ABS, "abs", 1, 1, WF_OPF_PURE | WF_OPF_ELEMENTWISE, unary, "")
 *      choosing an existing shape-rule family (ir/rules_*.c) or adding wf_rule_<family> and
 *      wf_cost_<family> there (declared in ir/rules.h);
 *   2. copy this file to ir/kernels/abs.c and write wf_kern_ABS;
 *   3. a row in docs/ops.md, a unit test in tests/unit/test_interp.c and a lit test.
 * The enum, the printer, the parser, the verifier's attribute checks and the interpreter's
 * dispatch all come from the ops.def line.
 *
 * Contract (ir/kernels/kernels.h): k->in[0..n_in) are the operands, k->out[0..n_out) the
 * results, allocated (zeroed) from the op's verified result types. Read floats with
 * wf_tensor_get (double) and store with wf_tensor_set (rounds once to the dtype); integers
 * with wf_kget_int / wf_kset_int (exact). Attributes: wf_rule_int / wf_rule_float /
 * wf_rule_bool / wf_rule_ints (defaults must match ops.def). A data-dependent failure
 * (an index out of range) is wf_error(k->op->loc, "'<op>' ...") and a nonzero return. */
#include <math.h>

#include "ir/kernels/kernels.h"

int wf_kern_ABS(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int64_t n = wf_tensor_numel(o);
  for (int64_t i = 0; i < n; i++) {
    if (wf_kis_int(a)) {
      int64_t v = wf_kget_int(a, i);
      wf_kset_int(o, i, v < 0 ? (int64_t)(0 - (uint64_t)v) : v);
    } else {
      wf_tensor_set(o, i, fabs(wf_tensor_get(a, i)));
    }
  }
  return 0;
}
