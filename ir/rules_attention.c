/* Shape rule, operand checks and cost of attention(q, k, v[, mask]) {scale, causal}.
 *
 *   q [B, Hq, S, D], k [B, Hkv, T, D], v [B, Hkv, T, Dv]  ->  [B, Hq, S, Dv]
 *
 * Hq must be a multiple of Hkv (MHA: equal, GQA: a divisor, MQA: 1); query head h reads kv
 * head h / (Hq / Hkv), the grouping HF's repeat_kv builds with Unsqueeze/Expand/Reshape.
 * The optional mask is additive (the dtype of q) or bool (true = attend), and broadcasts
 * (numpy, right-aligned) to [B, Hq, S, T]. Semantics in docs/ops.md.
 *
 * Packed form (heads > 0; passes/head_layout.c writes it): q [B, S, N], k [B, T, N],
 * v [B, T, N] -> [B, S, N], head h on columns [h hd, (h+1) hd), hd = head_dim, heads hd <= N,
 * one kv head per query head (GQA's sharing is in the weights by then) unless kv_heads > 0:
 * then k, v [B, T, Nkv] hold kv_heads heads and head h reads kv head h / (heads / kv_heads);
 * or kv_gather = [m, group, parts, sub] (wf_attn_gather_of: each kv head cut over m columns);
 * no mask operand. */
#include <math.h>
#include <string.h>

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

int wf_attn_gather_of(const wf_func *f, const wf_op *op, int64_t hd, wf_attn_gather *g) {
  int n;
  const int64_t *v = wf_rule_ints(f, op, "kv_gather", &n);
  if (n < 0) return 0;
  if (n != 4) return -1;
  *g = (wf_attn_gather){v[0], v[1], v[2], v[3]};
  if (g->m < 1 || g->group < 1 || g->parts < 1 || g->sub < 1 || g->m > (1 << 20) || g->group > (1 << 20) ||
      g->sub > (1 << 20) || g->m % g->parts || hd < 1 || hd % g->parts || g->sub * (g->m / g->parts) < hd / g->parts)
    return -1;
  return 1;
}

int64_t wf_attn_gather_col(const wf_attn_gather *g, int64_t hd, int64_t h, int64_t e) {
  int64_t b = hd / g->parts, mp = g->m / g->parts, p = e / b, rr = e % b;
  return ((h / g->group) * g->m + p * mp + rr / g->sub) * g->sub + rr % g->sub;
}

int64_t wf_attn_q_col(const wf_attn_gather *g, int64_t hd, int64_t h, int64_t e) {
  int64_t k = wf_attn_gather_col(g, hd, h, e), x = k / g->sub;
  return (x * g->group + h % g->group) * g->sub + k % g->sub;
}

int wf_attn_colocated(const wf_func *f, const wf_op *op, int64_t hd, wf_attn_gather *g) {
  int gat = wf_attn_gather_of(f, op, hd, g);
  if (!wf_rule_bool(f, op, "q_colocated", 0)) return 0;
  return gat > 0 ? 1 : -1;
}

static int rule_packed(wf_func *f, const wf_op *op, int64_t heads, wf_type *out) {
  int64_t hd = wf_op_int(f, op, "head_dim", 0);
  if (op->n_operands != 3) {
    wf_error(op->loc, "packed 'attention' (heads = %lld) takes 3 operands (q, k, v), got %d", (long long)heads,
             op->n_operands);
    return -1;
  }
  const wf_type *q = wf_rule_in(f, op, 0), *k = wf_rule_in(f, op, 1), *v = wf_rule_in(f, op, 2);
  const wf_type *qkv[] = {q, k, v};
  for (int i = 0; i < 3; i++)
    if (qkv[i]->rank != 3 || !wf_dtype_is_float(qkv[i]->dtype) || qkv[i]->dtype != q->dtype) {
      wf_error(op->loc, "packed 'attention' operands must be floating point [B, S, N] of one dtype, got %s, %s, %s",
               TS(q), TS(k), TS(v));
      return -1;
    }
  int64_t kvh = wf_op_int(f, op, "kv_heads", 0);
  wf_attn_gather ga;
  int gat = wf_attn_gather_of(f, op, hd, &ga);
  if (gat < 0 || (gat && (kvh || heads % ga.group || (heads / ga.group) * ga.m * ga.sub > k->dims[2]))) {
    wf_error(op->loc, "packed 'attention': kv_gather must be [m, group, parts, sub] with group dividing heads = %lld, "
                      "parts dividing m and head_dim = %lld, m/parts columns of sub covering a part, the kv heads "
                      "within k's %lld columns, and no kv_heads", (long long)heads, (long long)hd, (long long)k->dims[2]);
    return -1;
  }
  int coloc = wf_attn_colocated(f, op, hd, &ga);
  if (coloc < 0 || (coloc && (heads / ga.group) * ga.m * ga.group * ga.sub > q->dims[2])) {
    wf_error(op->loc, "packed 'attention': q_colocated needs a kv_gather, and q's %lld columns must hold the "
                      "%lld query heads' pieces", (long long)q->dims[2], (long long)heads);
    return -1;
  }
  if (gat) kvh = -2; /* k's width is the gather's, not q's */
  if (kvh < -2 || kvh == -1 || (kvh > 0 && (heads % kvh || kvh * hd > k->dims[2]))) {
    wf_error(op->loc, "packed 'attention': kv_heads = %lld must divide heads = %lld and fit k's %lld columns",
             (long long)kvh, (long long)heads, (long long)k->dims[2]);
    return -1;
  }
  if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] || (kvh == 0 && k->dims[2] != q->dims[2]) ||
      v->dims[2] != k->dims[2] || v->dims[1] != k->dims[1]) {
    wf_error(op->loc, "packed 'attention' shapes do not agree: q %s, k %s, v %s (want k, v [B, T, N])", TS(q),
             TS(k), TS(v));
    return -1;
  }
  if (hd <= 0 || heads * hd > q->dims[2]) {
    wf_error(op->loc, "packed 'attention': %lld heads of head_dim %lld do not fit in %lld columns", (long long)heads,
             (long long)hd, (long long)q->dims[2]);
    return -1;
  }
  if (!wf_op_attr(f, op, "scale") || !isfinite(wf_rule_float(f, op, "scale", 1.0))) {
    wf_error(op->loc, "'attention' needs a finite 'scale' attribute");
    return -1;
  }
  *out = wf_rule_type(q->dtype, 3, q->dims);
  return 0;
}

int wf_rule_attention(wf_func *f, const wf_op *op, wf_type *out) {
  int64_t heads = wf_op_int(f, op, "heads", 0);
  if (heads < 0) {
    wf_error(op->loc, "'attention' heads must be >= 0, got %lld", (long long)heads);
    return -1;
  }
  if (heads > 0) return rule_packed(f, op, heads, out);
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
  int64_t heads = wf_op_int(f, op, "heads", 0), hd = wf_op_int(f, op, "head_dim", 0);
  if (heads > 0 && q->rank == 3 && k->rank == 3) /* per head: S T scores of hd-long dots, twice */
    return q->dims[0] * heads * q->dims[1] * k->dims[1] * (4 * hd + 5);
  if (q->rank != 4 || k->rank != 4 || v->rank != 4) return 0;
  int64_t scores = q->dims[0] * q->dims[1] * q->dims[2] * k->dims[2];
  return scores * (2 * q->dims[3] + 2 * v->dims[3] + 5);
}

/* decode_attention(q, k, v, k_cache, v_cache) {scale, heads, head_dim, kv_heads}: q [B, 1, N],
 * k/v [B, 1, Nk], caches [B, C, Nk] -> [B, 1, N] (ops.def). */
int wf_rule_decode_attention(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *t[5];
  for (int i = 0; i < 5; i++) t[i] = wf_rule_in(f, op, i);
  for (int i = 0; i < 5; i++)
    if (t[i]->rank != 3 || t[i]->dtype != t[0]->dtype || !wf_dtype_is_float(t[i]->dtype)) {
      wf_error(op->loc, "'decode_attention' operands must be floating point [B, S, N] of one dtype, got %s, %s, %s, %s, %s",
               TS(t[0]), TS(t[1]), TS(t[2]), TS(t[3]), TS(t[4]));
      return -1;
    }
  int64_t b = t[0]->dims[0], nk = t[1]->dims[2], heads = wf_op_int(f, op, "heads", 0);
  int64_t hd = wf_op_int(f, op, "head_dim", 0), kvh = wf_op_int(f, op, "kv_heads", 0);
  if (t[0]->dims[1] != 1 || t[1]->dims[1] != 1 || t[2]->dims[1] != 1) {
    wf_error(op->loc, "'decode_attention' takes one token: q, k and v must be [B, 1, N], got %s, %s, %s", TS(t[0]),
             TS(t[1]), TS(t[2]));
    return -1;
  }
  for (int i = 1; i < 5; i++)
    if (t[i]->dims[0] != b || t[i]->dims[2] != nk || (i >= 3 && t[i]->dims[1] != t[3]->dims[1])) {
      wf_error(op->loc, "'decode_attention' shapes do not agree: k %s, v %s, k_cache %s, v_cache %s (want [B, 1, Nk] "
                        "and [B, C, Nk])", TS(t[1]), TS(t[2]), TS(t[3]), TS(t[4]));
      return -1;
    }
  wf_attn_gather ga;
  int coloc = hd > 0 ? wf_attn_colocated(f, op, hd, &ga) : 0;
  if (coloc < 0 || (coloc && (kvh || heads % ga.group || (heads / ga.group) * ga.m * ga.sub > nk ||
                              (heads / ga.group) * ga.m * ga.group * ga.sub > t[0]->dims[2]))) {
    wf_error(op->loc, "'decode_attention': q_colocated needs a kv_gather [m, group, parts, sub] whose kv heads fit k %s "
                      "and whose query heads fit q %s, and no kv_heads", TS(t[1]), TS(t[0]));
    return -1;
  }
  if (!coloc && wf_op_attr(f, op, "kv_gather")) {
    wf_error(op->loc, "'decode_attention': kv_gather without q_colocated (gathered kv heads have no decode form)");
    return -1;
  }
  if (heads <= 0 || hd <= 0 || heads * hd > t[0]->dims[2] || kvh < 0 || (kvh > 0 && (heads % kvh || kvh * hd > nk)) ||
      (kvh == 0 && !coloc && nk != t[0]->dims[2])) {
    wf_error(op->loc, "'decode_attention': %lld heads of head_dim %lld (kv_heads %lld) do not fit q %s and k %s",
             (long long)heads, (long long)hd, (long long)kvh, TS(t[0]), TS(t[1]));
    return -1;
  }
  if (!wf_op_attr(f, op, "scale") || !isfinite(wf_rule_float(f, op, "scale", 1.0))) {
    wf_error(op->loc, "'decode_attention' needs a finite 'scale' attribute");
    return -1;
  }
  *out = wf_rule_type(t[0]->dtype, 3, t[0]->dims);
  return 0;
}

/* Per head: C + 1 scores of hd-long dots, and as many rows of V. */
int64_t wf_cost_decode_attention(const wf_func *f, const wf_op *op) {
  const wf_type *q = wf_rule_in(f, op, 0), *kc = wf_rule_in(f, op, 3);
  int64_t heads = wf_op_int(f, op, "heads", 0), hd = wf_op_int(f, op, "head_dim", 0);
  if (q->rank != 3 || kc->rank != 3) return 0;
  return q->dims[0] * heads * (kc->dims[1] + 1) * (4 * hd + 5);
}

/* kv_switch(x) {out, region, block, heads, slots, swap} (ops.def). */
int wf_kv_switch_of(const wf_func *f, const wf_op *op, wf_kv_switch *s) {
  const wf_type *x = wf_rule_in(f, op, 0);
  int no, nr, nb, nh, ns;
  const int64_t *o = wf_rule_ints(f, op, "out", &no), *r = wf_rule_ints(f, op, "region", &nr);
  const int64_t *b = wf_rule_ints(f, op, "block", &nb), *h = wf_rule_ints(f, op, "heads", &nh);
  const int64_t *sl = wf_rule_ints(f, op, "slots", &ns);
  if ((x->rank != 3 && x->rank != 2) || x->dtype != WF_F32) {
    wf_error(op->loc, "'kv_switch' takes an f32 [B, L, N] cache or [K, N] weight, got %s", TS(x));
    return -1;
  }
  int nc;
  const int64_t *cm = wf_rule_ints(f, op, "cols", &nc);
  if (nc < 0) nc = 0;
  if (no != 2 || nr != 2 || nb != 2 || (nc ? nh > 0 || ns > 0 : nh != 3 || ns < 1)) {
    wf_error(op->loc, "'kv_switch' needs out = [R, N], region = [W, H], block = [cap, cb], and either heads = "
                      "[src_dp, dst_dp, d] with a non-empty slots list or cols");
    return -1;
  }
  static const int64_t whole[3] = {1, 1, 1}; /* cols: every column its own slot */
  if (nc) h = whole;
  int r0 = x->rank - 2; /* the rows' dim: a weight [K, N] is one matrix (B = 1) */
  *s = (wf_kv_switch){o[0], o[1], r[0], r[1], b[0], b[1], h[0], h[1], h[2], x->dims[r0], x->dims[r0 + 1], 0,
                      nc ? NULL : sl, nc ? 0 : ns, r0 ? x->dims[0] : 1, (int)wf_op_int(f, op, "swap", 0), NULL, 0};
  if (s->swap && (r0 || s->swap != 1)) {
    wf_error(op->loc, "'kv_switch': swap = 1 takes a weight [K, N] (and swap is 0 or 1)");
    return -1;
  }
  if (s->wd < 1 || s->hd < 1 || s->cap < 1 || s->cbd < 1 || s->src_dp < 1 || s->dst_dp < 1 || s->d < 1 ||
      s->d > s->src_dp || s->d > s->dst_dp || s->L < 1) {
    wf_error(op->loc, "'kv_switch': region, block and heads must be positive with d <= both slot widths");
    return -1;
  }
  s->lbd = (s->L + s->hd - 1) / s->hd;
  if (s->rows < s->hd * s->cap || s->cols < s->wd * s->cbd || s->lbd > s->cap) {
    wf_error(op->loc, "'kv_switch': a result of [%lld, %lld] does not hold %lldx%lld blocks of [%lld, %lld], or %lld "
                      "tokens per row exceed %lld slots",
             (long long)s->rows, (long long)s->cols, (long long)s->wd, (long long)s->hd, (long long)s->cap,
             (long long)s->cbd, (long long)s->lbd, (long long)s->cap);
    return -1;
  }
  if (nc) {
    if (nc != s->cols) {
      wf_error(op->loc, "'kv_switch': cols has %d entries for %lld result columns", nc, (long long)s->cols);
      return -1;
    }
    for (int i = 0; i < nc; i++)
      if (cm[i] < -1 || cm[i] >= s->np) {
        wf_error(op->loc, "'kv_switch': result column %d reads column %lld, outside the operand's %lld", i,
                 (long long)cm[i], (long long)s->np);
        return -1;
      }
    s->colmap = cm, s->n_colmap = nc;
  }
  for (int i = 0; i < ns; i++)
    if (sl[i] < -1 || (sl[i] >= 0 && sl[i] * s->src_dp + s->d > s->np)) {
      wf_error(op->loc, "'kv_switch': slot %d reads source slot %lld, outside the operand's %lld columns", i,
               (long long)sl[i], (long long)s->np);
      return -1;
    }
  return 0;
}

int64_t wf_kv_switch_src(const wf_kv_switch *s, int64_t p, int64_t j, int64_t *t) {
  int64_t y = p / s->cap, slot = p % s->cap, x = j / s->cbd;
  if (y >= s->hd || x >= s->wd || slot >= s->lbd) return -1;
  *t = y * s->lbd + slot;
  if (s->colmap) return *t < s->L ? s->colmap[j] : -1;
  int64_t h = j / s->dst_dp, r = j % s->dst_dp;
  if (*t >= s->L || h >= s->n_slots || r >= s->d || s->slots[h] < 0) return -1;
  return s->slots[h] * s->src_dp + r;
}

int wf_rule_kv_switch(wf_func *f, const wf_op *op, wf_type *out) {
  wf_kv_switch s;
  if (wf_kv_switch_of(f, op, &s)) return -1;
  int64_t dims[3] = {s.batch, s.swap ? s.cols : s.rows, s.swap ? s.rows : s.cols};
  int rank = wf_rule_in(f, op, 0)->rank;
  *out = wf_rule_type(WF_F32, rank, dims + 3 - rank);
  return 0;
}

int64_t wf_cost_kv_switch(const wf_func *f, const wf_op *op) {
  (void)f, (void)op;
  return 0; /* data movement */
}

/* unskew(x, ix) {ring, tiles, k_tile, other_tile} (ops.def). */
int wf_unskew_of(const wf_func *f, const wf_op *op, wf_gemm_skew *u) {
  const char *ring = wf_op_str(f, op, "ring", "");
  *u = (wf_gemm_skew){!strcmp(ring, "plain")        ? WF_SKEW_PLAIN
                      : !strcmp(ring, "interleave") ? WF_SKEW_INTERLEAVE
                                                    : WF_SKEW_NONE,
                      0, 1, wf_op_int(f, op, "tiles", 0), wf_op_int(f, op, "k_tile", 0),
                      wf_op_int(f, op, "other_tile", 0)};
  if (!u->ring || u->tiles < 1 || u->k_tile < 1 || u->other_tile < 1) {
    wf_error(op->loc, "'unskew' needs ring = plain or interleave and positive tiles, k_tile and other_tile");
    return -1;
  }
  return 0;
}

int wf_rule_unskew(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *x = wf_rule_in(f, op, 0), *ix = wf_rule_in(f, op, 1);
  wf_gemm_skew u;
  if (x->rank != 2 || x->dtype != WF_F32 || ix->rank != 2 || ix->dtype != WF_F32) {
    wf_error(op->loc, "'unskew' takes an f32 matrix and its f32 [H, W n] gather indices, got %s and %s", TS(x), TS(ix));
    return -1;
  }
  if (wf_unskew_of(f, op, &u)) return -1;
  *out = wf_rule_type(WF_F32, 2, x->dims);
  return 0;
}

int64_t wf_cost_unskew(const wf_func *f, const wf_op *op) {
  (void)f, (void)op;
  return 0; /* data movement */
}
