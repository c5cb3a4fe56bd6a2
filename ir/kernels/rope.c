/* Reference kernel of rope(x, cos, sin): x [..., S, D], cos/sin [S, D], broadcast over the
 * leading dims. Per row s of x (position s), with c = cos[s], n = sin[s], h = D/2:
 *   interleaved = false (rotate-half, as GPT-NeoX / Llama in HF):
 *     out[j]   = x[j]   * c[j]   - x[j+h] * n[j]       for j <  h
 *     out[j+h] = x[j+h] * c[j+h] + x[j]   * n[j+h]     for j <  h
 *     i.e. out = x*cos + rotate_half(x)*sin, rotate_half(x) = concat(-x[h:], x[:h]).
 *   interleaved = true (pairs (x[2i], x[2i+1]), as GPT-J), using the angle at the even
 *   position for both members of the pair:
 *     out[2i]   = x[2i]   * c[2i] - x[2i+1] * n[2i]
 *     out[2i+1] = x[2i+1] * c[2i] + x[2i]   * n[2i] */
#include "ir/kernels/kernels.h"

int wf_kern_ROPE(const wf_kctx *k) {
  const wf_tensor *x = k->in[0], *cs = k->in[1], *sn = k->in[2];
  wf_tensor *o = k->out[0];
  int inter = wf_rule_bool(k->f, k->op, "interleaved", 0);
  int64_t s_len = x->dims[x->rank - 2], d = x->dims[x->rank - 1], h = d / 2;
  int64_t rows = wf_kprod(x->dims, 0, x->rank - 1);
  for (int64_t r = 0; r < rows; r++) {
    int64_t base = r * d, pos = (r % s_len) * d;
    for (int64_t j = 0; j < h; j++) {
      int64_t i0 = inter ? 2 * j : j, i1 = inter ? 2 * j + 1 : j + h;
      double x0 = wf_tensor_get(x, base + i0), x1 = wf_tensor_get(x, base + i1);
      double c0 = wf_tensor_get(cs, pos + i0), n0 = wf_tensor_get(sn, pos + i0);
      double c1 = inter ? c0 : wf_tensor_get(cs, pos + i1);
      double n1 = inter ? n0 : wf_tensor_get(sn, pos + i1);
      wf_tensor_set(o, base + i0, x0 * c0 - x1 * n0);
      wf_tensor_set(o, base + i1, x1 * c1 + x0 * n1);
    }
  }
  return 0;
}

/* rotate_pairs(x, c, s): per row r (position r % S) and pair (2i, 2i+1):
 *   out[2i]   = x[2i]   * c[2i]   + x[2i+1] * s[2i]
 *   out[2i+1] = x[2i+1] * c[2i+1] + x[2i]   * s[2i+1] */
int wf_kern_ROTATE_PAIRS(const wf_kctx *k) {
  const wf_tensor *x = k->in[0], *cs = k->in[1], *sn = k->in[2];
  wf_tensor *o = k->out[0];
  int64_t s_len = x->dims[x->rank - 2], d = x->dims[x->rank - 1];
  int64_t rows = wf_kprod(x->dims, 0, x->rank - 1);
  for (int64_t r = 0; r < rows; r++) {
    int64_t base = r * d, pos = (r % s_len) * d;
    for (int64_t j = 0; j < d; j += 2) {
      double x0 = wf_tensor_get(x, base + j), x1 = wf_tensor_get(x, base + j + 1);
      wf_tensor_set(o, base + j, x0 * wf_tensor_get(cs, pos + j) + x1 * wf_tensor_get(sn, pos + j));
      wf_tensor_set(o, base + j + 1, x1 * wf_tensor_get(cs, pos + j + 1) + x0 * wf_tensor_get(sn, pos + j + 1));
    }
  }
  return 0;
}
