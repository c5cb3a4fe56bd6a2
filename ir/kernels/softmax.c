/* Reference kernel of softmax along one axis: exp(x - max) / sum, in double. Subtracting
 * the row maximum keeps exp from overflowing; a row of -inf gives NaN, as in numpy. */
#include <math.h>

#include "ir/kernels/kernels.h"

int wf_kern_SOFTMAX(const wf_kctx *k) {
  const wf_tensor *x = k->in[0];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", -1), x->rank);
  WF_ASSERT(axis >= 0); /* verified */
  int64_t outer = wf_kprod(x->dims, 0, axis), n = x->dims[axis];
  int64_t inner = wf_kprod(x->dims, axis + 1, x->rank);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < inner; b++) {
      int64_t base = a * n * inner + b;
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < n; j++) {
        double v = wf_tensor_get(x, base + j * inner);
        if (v > mx || isnan(v)) mx = v;
      }
      for (int64_t j = 0; j < n; j++) sum += exp(wf_tensor_get(x, base + j * inner) - mx);
      for (int64_t j = 0; j < n; j++)
        wf_tensor_set(o, base + j * inner, exp(wf_tensor_get(x, base + j * inner) - mx) / sum);
    }
  return 0;
}
