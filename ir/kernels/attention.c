/* Reference kernel of attention(q, k, v[, mask]) {scale, causal}, in double:
 *
 *   for each batch b, query head h (kv head g = h / (Hq / Hkv)), query row i:
 *     s[j] = scale * sum_d q[b,h,i,d] * k[b,g,j,d]        j < T
 *     s[j] += mask[.., i, j]         (additive mask)    or  s[j] = -inf where !mask (bool)
 *     s[j] = -inf where causal and j > i + (T - S)      (bottom-right aligned, as HF and
 *                                                        flash attention with a KV cache)
 *     out[b,h,i,:] = sum_j softmax(s)[j] * v[b,g,j,:]
 *
 * which is the unfused matmul / scale / add / softmax / matmul chain with one rounding at
 * the end. A row with every key excluded is NaN, as softmax of all -inf is. */
#include <math.h>
#include <stdlib.h>

#include "ir/kernels/kernels.h"

int wf_kern_ATTENTION(const wf_kctx *k) {
  const wf_tensor *q = k->in[0], *kk = k->in[1], *v = k->in[2], *mask = k->n_in > 3 ? k->in[3] : NULL;
  wf_tensor *o = k->out[0];
  double scale = wf_rule_float(k->f, k->op, "scale", 1.0);
  int causal = wf_rule_bool(k->f, k->op, "causal", 0);
  int64_t nb = q->dims[0], hq = q->dims[1], s_len = q->dims[2], d = q->dims[3];
  int64_t hkv = kk->dims[1], t_len = kk->dims[2], dv = v->dims[3], group = hq / hkv;
  int64_t sdims[4] = {nb, hq, s_len, t_len};
  double *s = malloc(sizeof(double) * (size_t)(t_len ? t_len : 1));
  double *acc = malloc(sizeof(double) * (size_t)(dv ? dv : 1));
  WF_ASSERT(s && acc);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t h = 0; h < hq; h++) {
      int64_t g = h / group;
      int64_t qb = (b * hq + h) * s_len * d, kb = (b * hkv + g) * t_len * d, vb = (b * hkv + g) * t_len * dv;
      for (int64_t i = 0; i < s_len; i++) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < t_len; j++) {
          double dot = 0.0;
          for (int64_t e = 0; e < d; e++) dot += wf_tensor_get(q, qb + i * d + e) * wf_tensor_get(kk, kb + j * d + e);
          double sc = scale * dot;
          if (mask) {
            int64_t mi = wf_kbcast_index_shape(mask->rank, mask->dims, 4, sdims, ((b * hq + h) * s_len + i) * t_len + j);
            if (mask->dtype == WF_BOOL) sc = wf_kget_int(mask, mi) ? sc : -INFINITY;
            else sc += wf_tensor_get(mask, mi);
          }
          if (causal && j > i + (t_len - s_len)) sc = -INFINITY;
          s[j] = sc;
          if (sc > mx || isnan(sc)) mx = sc;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < t_len; j++) sum += (s[j] = exp(s[j] - mx));
        for (int64_t e = 0; e < dv; e++) acc[e] = 0.0;
        for (int64_t j = 0; j < t_len; j++) {
          double p = s[j] / sum;
          for (int64_t e = 0; e < dv; e++) acc[e] += p * wf_tensor_get(v, vb + j * dv + e);
        }
        for (int64_t e = 0; e < dv; e++) wf_tensor_set(o, ((b * hq + h) * s_len + i) * dv + e, acc[e]);
      }
    }
  free(s);
  free(acc);
  return 0;
}
