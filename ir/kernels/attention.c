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
 * the end. A row with every key excluded is NaN, as softmax of all -inf is. The packed form
 * (heads > 0, passes/head_layout.c) is the same per head, on column ranges of [B, S, N]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/kernels/kernels.h"
#include "ir/rules.h"

/* The packed form (heads > 0): q [B, S, N], k/v [B, T, N], head h on columns
 * [h hd, (h+1) hd); the same computation per head, columns past heads * hd set to 0. */
static int packed(const wf_kctx *k, int64_t heads) {
  const wf_tensor *q = k->in[0], *kk = k->in[1], *v = k->in[2];
  wf_tensor *o = k->out[0];
  double scale = wf_rule_float(k->f, k->op, "scale", 1.0);
  int causal = wf_rule_bool(k->f, k->op, "causal", 0);
  int64_t hd = wf_op_int(k->f, k->op, "head_dim", 0);
  int64_t nb = q->dims[0], s_len = q->dims[1], n = q->dims[2], t_len = kk->dims[1], nk = kk->dims[2];
  int64_t kvh = wf_op_int(k->f, k->op, "kv_heads", 0), rep = kvh > 0 ? heads / kvh : 1;
  wf_attn_gather ga;
  int gat = wf_attn_gather_of(k->f, k->op, hd, &ga) > 0, coloc = wf_attn_colocated(k->f, k->op, hd, &ga) > 0;
  double *s = malloc(sizeof(double) * (size_t)(t_len ? t_len : 1));
  int64_t *col = malloc(sizeof(int64_t) * (size_t)hd); /* k's (and v's) column of each in-head index */
  int64_t *qc = malloc(sizeof(int64_t) * (size_t)hd);  /* q's (and the result's) */
  WF_ASSERT(s && col && qc);
  for (int64_t i = 0; i < wf_tensor_numel(o); i++) wf_tensor_set(o, i, 0.0);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t i = 0; i < s_len; i++) {
        int64_t qrow = (b * s_len + i) * n;
        for (int64_t e = 0; e < hd; e++) {
          col[e] = gat ? wf_attn_gather_col(&ga, hd, h, e) : (h / rep) * hd + e;
          qc[e] = coloc ? wf_attn_q_col(&ga, hd, h, e) : h * hd + e;
        }
        double mx = -INFINITY;
        for (int64_t j = 0; j < t_len; j++) {
          int64_t krow = (b * t_len + j) * nk;
          double dot = 0.0;
          for (int64_t e = 0; e < hd; e++) dot += wf_tensor_get(q, qrow + qc[e]) * wf_tensor_get(kk, krow + col[e]);
          s[j] = causal && j > i + (t_len - s_len) ? -INFINITY : scale * dot;
          if (s[j] > mx || isnan(s[j])) mx = s[j];
        }
        double sum = 0.0;
        for (int64_t j = 0; j < t_len; j++) sum += (s[j] = exp(s[j] - mx));
        for (int64_t e = 0; e < hd; e++) {
          double acc = 0.0;
          for (int64_t j = 0; j < t_len; j++) acc += s[j] / sum * wf_tensor_get(v, (b * t_len + j) * nk + col[e]);
          wf_tensor_set(o, qrow + qc[e], acc);
        }
      }
  free(s);
  free(col);
  free(qc);
  return 0;
}

int wf_kern_ATTENTION(const wf_kctx *k) {
  int64_t heads = wf_op_int(k->f, k->op, "heads", 0);
  if (heads > 0) return packed(k, heads);
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

/* The cache's occupancy is the host's, step by step (docs/generation.md): there is no
 * reference of one step alone. The reference of generation recomputes the whole sequence
 * (waferc --interpret --generate), which this op's compiled steps are checked against. */
int wf_kern_DECODE_ATTENTION(const wf_kctx *k) {
  wf_error(k->op->loc, "decode_attention runs on the mesh only: which cache slots hold tokens is set per step by "
                       "the host; the reference of generation is waferc --interpret --generate (the whole sequence "
                       "recomputed)");
  return -1;
}

/* kv_switch: every result element from the operand column wf_kv_switch_src names, or 0; with
 * swap, the result is that matrix transposed. */
int wf_kern_KV_SWITCH(const wf_kctx *k) {
  wf_kv_switch s;
  if (wf_kv_switch_of(k->f, k->op, &s)) return -1;
  const wf_tensor *x = k->in[0];
  wf_tensor *o = k->out[0];
  for (int64_t b = 0; b < s.batch; b++)
    for (int64_t p = 0; p < s.rows; p++)
      for (int64_t j = 0; j < s.cols; j++) {
        int64_t t = 0, c = wf_kv_switch_src(&s, p, j, &t);
        wf_tensor_set(o, s.swap ? j * s.rows + p : (b * s.rows + p) * s.cols + j,
                      c < 0 ? 0.0 : wf_tensor_get(x, (b * s.L + t) * s.np + c));
      }
  return 0;
}

/* unskew: the identity on the matrix (the skew is how the PEs hold it; the indices are theirs). */
int wf_kern_UNSKEW(const wf_kctx *k) {
  memcpy(k->out[0]->data, k->in[0]->data, wf_tensor_bytes(k->out[0]));
  return 0;
}
