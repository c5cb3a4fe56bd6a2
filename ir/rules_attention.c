/* Shape rule, operand checks and cost of attention(q, k, v[, mask]) {scale, causal}.
 *
 *   q [B, Hq, S, D], k [B, Hkv, T, D], v [B, Hkv, T, Dv]  ->  [B, Hq, S, Dv]
 *
 * Hq must be a multiple of Hkv (MHA: equal, GQA: a divisor, MQA: 1); query head h reads kv
 * head h / (Hq / Hkv), the grouping HF's repeat_kv builds with Unsqueeze/Expand/Reshape.
 * The optional mask is additive (the dtype of q) or bool (true = attend), and broadcasts
 * (numpy, right-aligned) to [B, Hq, S, T]. Semantics in docs/ops.md. */
#include <math.h>

#include "ir/rules.h"

#define TS(t) wf_rule_type_str(f, (t))

static int bcast_to(const wf_type *s, int rt, const int64_t *t) {
  if (s->rank > rt) return 0;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[s->rank - 1 - i], e = t[rt - 1 - i];
    if (d != e && d != 1) return 0;
  }
  return 1;
}

int wf_rule_attention(wf_func *f, const wf_op *op, wf_type *out) {
  if (op->n_operands != 3 && op->n_operands != 4) {
    wf_error(op->loc, "'attention' takes 3 or 4 operands (q, k, v[, mask]), got %d", op->n_operands);
    return -1;
  }
  const wf_type *q = wf_rule_in(f, op, 0), *k = wf_rule_in(f, op, 1), *v = wf_rule_in(f, op, 2);
  static const char *const names[] = {"q", "k", "v"};
  const wf_type *qkv[] = {q, k, v};
  for (int i = 0; i < 3; i++) {
    if (!wf_dtype_is_float(qkv[i]->dtype) || qkv[i]->dtype != q->dtype) {
      wf_error(op->loc, "'attention' %s must be floating point and of the dtype of q, got %s", names[i],
               TS(qkv[i]));
      return -1;
    }
    if (qkv[i]->rank != 4) {
      wf_error(op->loc, "'attention' %s must have rank 4 ([batch, heads, seq, head_dim]), got %s", names[i],
               TS(qkv[i]));
      return -1;
    }
  }
  int64_t b = q->dims[0], hq = q->dims[1], s = q->dims[2], d = q->dims[3];
  int64_t hkv = k->dims[1], t = k->dims[2];
  if (k->dims[0] != b || v->dims[0] != b || k->dims[3] != d || v->dims[1] != hkv || v->dims[2] != t) {
    wf_error(op->loc, "'attention' shapes do not agree: q %s, k %s, v %s (want k [B, Hkv, T, D], v [B, Hkv, T, Dv])",
             TS(q), TS(k), TS(v));
    return -1;
  }
  if (hkv <= 0 || hq % hkv != 0) {
    wf_error(op->loc, "'attention' query heads (%lld) must be a multiple of key/value heads (%lld)",
             (long long)hq, (long long)hkv);
    return -1;
  }
  int64_t sdims[4] = {b, hq, s, t};
  if (op->n_operands == 4) {
    const wf_type *m = wf_rule_in(f, op, 3);
    if (m->dtype != WF_BOOL && m->dtype != q->dtype) {
      wf_error(op->loc, "'attention' mask must be bool or of the dtype of q, got %s", TS(m));
      return -1;
    }
    if (!bcast_to(m, 4, sdims)) {
      wf_error(op->loc, "'attention' mask %s does not broadcast to the scores [%lld, %lld, %lld, %lld]", TS(m),
               (long long)b, (long long)hq, (long long)s, (long long)t);
      return -1;
    }
  }
  const wf_attr *sc = wf_op_attr(f, op, "scale");
  if (!sc) {
    wf_error(op->loc, "'attention' needs a 'scale' attribute");
    return -1;
  }
  double scale = wf_rule_float(f, op, "scale", 1.0);
  if (!isfinite(scale)) {
    wf_error(op->loc, "'attention' scale must be finite, got %g", scale);
    return -1;
  }
  int64_t odims[4] = {b, hq, s, v->dims[3]};
  *out = wf_rule_type(q->dtype, 4, odims);
  return 0;
}

/* Two matmuls (2 flops per multiply-add) plus ~5 per score for scale, mask and softmax. */
int64_t wf_cost_attention(const wf_func *f, const wf_op *op) {
  const wf_type *q = wf_rule_in(f, op, 0), *k = wf_rule_in(f, op, 1), *v = wf_rule_in(f, op, 2);
  if (q->rank != 4 || k->rank != 4 || v->rank != 4) return 0;
  int64_t scores = q->dims[0] * q->dims[1] * q->dims[2] * k->dims[2];
  return scores * (2 * q->dims[3] + 2 * v->dims[3] + 5);
}
