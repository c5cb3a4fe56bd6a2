/* Reference kernels of reduce_sum / reduce_mean / reduce_max over `axes` (empty = all),
 * accumulating floats in double and integers exactly in int64. NaN propagates through max.
 * An empty reduction gives 0 (sum), NaN (mean), -inf or the dtype's minimum (max). */
#include <math.h>
#include <stdlib.h>

#include "ir/kernels/kernels.h"

static int reduce(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  wf_opcode c = k->op->code;
  int n;
  const int64_t *axes = wf_rule_ints(k->f, k->op, "axes", &n);
  int red[WF_MAX_RANK] = {0};
  for (int i = 0; i < a->rank; i++) red[i] = n == 0;
  for (int i = 0; i < n; i++) red[wf_norm_axis(axes[i], a->rank)] = 1;
  /* output stride of each input dim (0 for reduced ones), independent of keepdims */
  int64_t ostride[WF_MAX_RANK], s = 1;
  for (int i = a->rank - 1; i >= 0; i--) {
    ostride[i] = red[i] ? 0 : s;
    if (!red[i]) s *= a->dims[i];
  }
  int64_t on = wf_tensor_numel(o), in = wf_tensor_numel(a);
  int isint = wf_kis_int(a);
  double *acc = malloc(sizeof(double) * (size_t)(on ? on : 1));
  int64_t *iacc = malloc(sizeof(int64_t) * (size_t)(on ? on : 1));
  WF_ASSERT(acc && iacc);
  for (int64_t j = 0; j < on; j++) {
    acc[j] = c == WF_OP_REDUCE_MAX ? -INFINITY : 0.0;
    iacc[j] = c == WF_OP_REDUCE_MAX ? (a->dtype == WF_I32 ? INT32_MIN : INT64_MIN) : 0;
  }
  for (int64_t i = 0; i < in; i++) {
    int64_t rem = i, oi = 0;
    for (int d = a->rank - 1; d >= 0; d--) {
      oi += (rem % a->dims[d]) * ostride[d];
      rem /= a->dims[d];
    }
    if (isint) {
      int64_t v = wf_kget_int(a, i);
      if (c == WF_OP_REDUCE_MAX) iacc[oi] = v > iacc[oi] ? v : iacc[oi];
      else iacc[oi] = (int64_t)((uint64_t)iacc[oi] + (uint64_t)v);
    } else {
      double v = wf_tensor_get(a, i);
      if (c == WF_OP_REDUCE_MAX) acc[oi] = (v > acc[oi] || isnan(v)) && !isnan(acc[oi]) ? v : acc[oi];
      else acc[oi] += v;
    }
  }
  int64_t count = on ? in / on : 0;
  for (int64_t j = 0; j < on; j++) {
    if (isint) wf_kset_int(o, j, iacc[j]);
    else wf_tensor_set(o, j, c == WF_OP_REDUCE_MEAN ? acc[j] / (double)count : acc[j]);
  }
  free(acc);
  free(iacc);
  return 0;
}

int wf_kern_REDUCE_SUM(const wf_kctx *k) { return reduce(k); }
int wf_kern_REDUCE_MEAN(const wf_kctx *k) { return reduce(k); }
int wf_kern_REDUCE_MAX(const wf_kctx *k) { return reduce(k); }
