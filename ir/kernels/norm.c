/* Reference kernels of layernorm and rmsnorm (ONNX LayerNormalization semantics): each
 * row is the block of dims [axis, rank); statistics are in double.
 *   layernorm: y = (x - mean) / sqrt(var + eps) * scale + bias   (var is the biased variance)
 *   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * scale
 * scale and bias broadcast (numpy, right-aligned) over the normalized dims. */
#include <math.h>

#include "ir/kernels/kernels.h"

static int norm(const wf_kctx *k, int layer) {
  const wf_tensor *x = k->in[0], *scale = k->in[1], *bias = layer ? k->in[2] : NULL;
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", -1), x->rank);
  WF_ASSERT(axis >= 0);
  double eps = wf_rule_float(k->f, k->op, "epsilon", layer ? 1e-5 : 1e-6);
  int nr = x->rank - axis;
  const int64_t *nd = x->dims + axis;
  int64_t rows = wf_kprod(x->dims, 0, axis), n = wf_kprod(x->dims, axis, x->rank);
  for (int64_t r = 0; r < rows; r++) {
    int64_t base = r * n;
    double mean = 0.0, ss = 0.0;
    if (layer) {
      for (int64_t j = 0; j < n; j++) mean += wf_tensor_get(x, base + j);
      mean = n ? mean / (double)n : 0.0;
    }
    for (int64_t j = 0; j < n; j++) {
      double d = wf_tensor_get(x, base + j) - mean;
      ss += d * d;
    }
    double inv = 1.0 / sqrt((n ? ss / (double)n : 0.0) + eps);
    for (int64_t j = 0; j < n; j++) {
      double y = (wf_tensor_get(x, base + j) - mean) * inv;
      y *= wf_tensor_get(scale, wf_kbcast_index_shape(scale->rank, scale->dims, nr, nd, j));
      if (bias) y += wf_tensor_get(bias, wf_kbcast_index_shape(bias->rank, bias->dims, nr, nd, j));
      wf_tensor_set(o, base + j, y);
    }
  }
  return 0;
}

int wf_kern_LAYERNORM(const wf_kctx *k) { return norm(k, 1); }
int wf_kern_RMSNORM(const wf_kctx *k) { return norm(k, 0); }
