/* raise-attention: the exported attention chain -> attention(q, k, v[, mask]) {scale, causal}.
 *
 *   s = matmul(q, kT)                 kT = transpose(k) (last two dims swapped), or any [.., D, T]
 *   s = s * c | s / c                 scale factors (scalar constants), also on q and kT
 *   s = s + mask                      additive mask (either operand order)
 *   s = where(keep, s, -big)          bool mask; where(drop, -big, s) as GPT-2 exports it
 *   p = softmax(s) {axis = -1}        casts to the value's own dtype anywhere on the way
 *   y = matmul(p, v)
 *
 * Rank 3 ([B·H, S, D], as torch's nn.MultiheadAttention computes it): the same chain, raised
 * to attention over the operands reshaped to [1, B·H, S, D] and the result reshaped back.
 *
 * Head grouping: k and v are taken from before a repeat of their heads when the repeat is
 * the grouping attention uses (query head h reads kv head h / n): HF's repeat_kv
 * (unsqueeze/expand/reshape), torch 1.13's repeat_interleave export (split into heads, each
 * unsqueezed, expanded and reshaped, concatenated back), or an expand of a single kv head
 * (MQA). A head-tiling repeat (h reads h % Hkv) is not a repeat_interleave and is kept.
 *
 * Masks: a constant mask (additive with 0 / <= -1e4 entries, or bool) that is exactly the
 * bottom-right aligned lower triangle (key j visible to query i iff j <= i + T - S) becomes
 * `causal = true`; other masks stay as the mask operand (one at most besides a causal one).
 * "-big" is -inf, or a finite fill <= -1e4 (finfo.min, -1e4, -1e9), which gives the same
 * softmax as -inf unless a whole row is masked; so a finite fill is raised only with a
 * constant mask that leaves every row some key. A mask applied after a scale factor would
 * be scaled too: only a -inf / -big fill with a positive scale survives that unchanged.
 * The score chain (scores, scaled scores, masked scores, probabilities) must be used only
 * inside the pattern, so attention weights that are also returned keep the chain. */
#include <math.h>
#include <string.h>

#include "ir/rules.h"
#include "passes/raise.h"

#define BIG_NEGATIVE (-1e4)

typedef struct att_match {
  wf_raise_ops ops;
  wf_value q, kt;
  double scale;
  double scale_above; /* product of the scale factors met above (after) the first mask */
  int seen_scale;
  wf_value add_mask;
  wf_value bool_mask; /* the where condition */
  int bool_drop;      /* the condition marks dropped keys (where(c, -big, s)) */
  double fill, fill_scale;
} att_match;

/* ---- the score chain ----------------------------------------------------------------------- */

static int scores(wf_raise *r, wf_value v, att_match *mt, int depth);

static int scale_factor(wf_raise *r, wf_op *op, wf_value s, double k, att_match *mt, int depth) {
  if (!isfinite(k) || k == 0.0) return 0;
  att_match save = *mt;
  wf_raise_push(&mt->ops, op);
  mt->scale *= k;
  if (!mt->add_mask && !mt->bool_mask) mt->scale_above *= k, mt->seen_scale = 1;
  if (scores(r, s, mt, depth + 1)) return 1;
  *mt = save;
  return 0;
}

static int scores(wf_raise *r, wf_value v, att_match *mt, int depth) {
  if (depth > 12) return 0;
  v = wf_raise_peel(r, v, &mt->ops);
  wf_value a, b;
  wf_op *op;
  double k;
  if ((op = wf_raise_def(r, v, WF_OP_MATMUL))) {
    wf_raise_push(&mt->ops, op);
    mt->q = op->operands[0];
    mt->kt = op->operands[1];
    return 1;
  }
  if ((op = wf_raise_bin(r, v, WF_OP_MUL, &a, &b))) {
    if (wf_raise_scalar(r, b, &k) && scale_factor(r, op, a, k, mt, depth)) return 1;
    if (wf_raise_scalar(r, a, &k) && scale_factor(r, op, b, k, mt, depth)) return 1;
    return 0;
  }
  if ((op = wf_raise_bin(r, v, WF_OP_DIV, &a, &b)))
    return wf_raise_scalar(r, b, &k) && k != 0.0 && scale_factor(r, op, a, 1.0 / k, mt, depth);
  if ((op = wf_raise_bin(r, v, WF_OP_ADD, &a, &b))) {
    if (mt->add_mask) return 0;
    for (int side = 0; side < 2; side++) {
      att_match save = *mt;
      wf_raise_push(&mt->ops, op);
      mt->add_mask = side ? a : b;
      if (scores(r, side ? b : a, mt, depth + 1)) return 1;
      *mt = save;
    }
    return 0;
  }
  if ((op = wf_raise_def(r, v, WF_OP_WHERE)) && !mt->bool_mask) {
    wf_value c = op->operands[0], x = op->operands[1], y = op->operands[2];
    for (int drop = 0; drop < 2; drop++) {
      double fill;
      if (!wf_raise_scalar(r, drop ? x : y, &fill) || !(fill <= BIG_NEGATIVE)) continue;
      att_match save = *mt;
      wf_raise_push(&mt->ops, op);
      mt->bool_mask = c;
      mt->bool_drop = drop;
      mt->fill = fill;
      mt->fill_scale = mt->scale_above;
      if (scores(r, drop ? y : x, mt, depth + 1)) return 1;
      *mt = save;
    }
  }
  return 0;
}

/* ---- head repeats ------------------------------------------------------------------------- */

static int dims_eq(const wf_type *t, int rank, const int64_t *d) {
  if (t->rank != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != d[i]) return 0;
  return 1;
}

/* v = reshape(expand(reshape(k0))): [B,H,T,D] -> [B,H,1,T,D] -> [B,H,n,T,D] -> [B,H*n,T,D]. */
static wf_value unrepeat_expand(wf_raise *r, wf_value v) {
  int expand = wf_raise_opcode("expand");
  if (expand < 0) return WF_NO_VALUE;
  const wf_type *t = wf_raise_type(r, v);
  wf_op *e = wf_raise_def(r, v, expand);
  if (e) { /* MQA: one kv head expanded to all */
    const wf_type *k = wf_raise_type(r, e->operands[0]);
    int64_t d[4] = {t->dims[0], 1, t->dims[2], t->dims[3]};
    return t->rank == 4 && dims_eq(k, 4, d) ? e->operands[0] : WF_NO_VALUE;
  }
  wf_op *r2 = wf_raise_def(r, v, WF_OP_RESHAPE);
  e = r2 ? wf_raise_def(r, r2->operands[0], expand) : NULL;
  wf_op *r1 = e ? wf_raise_def(r, e->operands[0], WF_OP_RESHAPE) : NULL;
  if (!r1 || t->rank != 4) return WF_NO_VALUE;
  const wf_type *k = wf_raise_type(r, r1->operands[0]), *ex = wf_raise_type(r, e->results[0]);
  if (k->rank != 4 || ex->rank != 5 || k->dims[1] == 0) return WF_NO_VALUE;
  int64_t n = t->dims[1] / k->dims[1];
  int64_t du[5] = {k->dims[0], k->dims[1], 1, k->dims[2], k->dims[3]};
  int64_t de[5] = {k->dims[0], k->dims[1], n, k->dims[2], k->dims[3]};
  int64_t dt[4] = {k->dims[0], k->dims[1] * n, k->dims[2], k->dims[3]};
  if (!dims_eq(wf_raise_type(r, r1->results[0]), 5, du) || !dims_eq(ex, 5, de) || !dims_eq(t, 4, dt))
    return WF_NO_VALUE;
  return r1->operands[0];
}

/* v = concat_h(rep(split_h(k0)[0]), rep(split_h(k0)[1]), ...): torch 1.13's repeat_interleave. */
static wf_value unrepeat_concat(wf_raise *r, wf_value v) {
  wf_op *cat = wf_raise_def(r, v, WF_OP_CONCAT);
  if (!cat || wf_raise_type(r, v)->rank != 4 || wf_norm_axis(wf_op_int(r->f, cat, "axis", 0), 4) != 1)
    return WF_NO_VALUE;
  wf_op *split = NULL;
  for (int i = 0; i < cat->n_operands; i++) {
    wf_value part = unrepeat_expand(r, cat->operands[i]);
    wf_op *s = part ? wf_raise_def(r, part, WF_OP_SPLIT) : NULL;
    if (!s || (split && s != split) || s->n_results != cat->n_operands || s->results[i] != part) return WF_NO_VALUE;
    if (wf_raise_type(r, part)->dims[1] != 1) return WF_NO_VALUE;
    split = s;
  }
  const wf_type *k = wf_raise_type(r, split->operands[0]);
  if (k->rank != 4 || wf_norm_axis(wf_op_int(r->f, split, "axis", 0), 4) != 1) return WF_NO_VALUE;
  /* every part repeats its head the same number of times */
  int64_t n = wf_raise_type(r, v)->dims[1] / k->dims[1];
  for (int i = 0; i < cat->n_operands; i++)
    if (wf_raise_type(r, cat->operands[i])->dims[1] != n) return WF_NO_VALUE;
  return split->operands[0];
}

static wf_value unrepeat(wf_raise *r, wf_value v) {
  wf_value k = unrepeat_expand(r, v);
  return k ? k : unrepeat_concat(r, v);
}

/* ---- masks --------------------------------------------------------------------------------- */

typedef enum { MASK_NOT_CAUSAL, MASK_CAUSAL, MASK_UNKNOWN } mask_kind;

/* Whether a constant mask is exactly the bottom-right aligned causal triangle over [S, T].
 * additive: allowed = 0, else <= -1e4; bool: allowed = keep (drop inverts). Also says
 * whether some row keeps no key (*empty_row). */
static mask_kind causal_kind(wf_raise *r, wf_value m, int is_bool, int drop, int64_t s, int64_t t, int *empty_row) {
  const wf_type *mt = wf_raise_type(r, m);
  *empty_row = 0;
  /* up to 8192 x 8192 (the exporter's [T, T] mask at T = 8192: 256 MiB as f32 on the host) */
  if (wf_type_numel(mt) > (1 << 26)) return MASK_UNKNOWN;
  wf_tensor *x = wf_raise_const_tensor(r, m);
  if (!x) return MASK_UNKNOWN;
  int64_t ms = mt->rank >= 2 ? mt->dims[mt->rank - 2] : 1, mtl = mt->rank >= 1 ? mt->dims[mt->rank - 1] : 1;
  int causal = ms == s && mtl == t;
  int64_t rows = wf_tensor_numel(x) / (mtl ? mtl : 1);
  for (int64_t row = 0; row < rows; row++) {
    int64_t i = row % ms;
    int any = 0;
    for (int64_t j = 0; j < mtl; j++) {
      double v = wf_tensor_get(x, row * mtl + j);
      int keep = is_bool ? (v != 0.0) != drop : !(v <= BIG_NEGATIVE);
      any |= keep;
      if (causal) {
        int allowed = j <= i + (t - s);
        if (allowed != keep || (!is_bool && keep && v != 0.0)) causal = 0;
      }
    }
    if (!any) *empty_row = 1;
  }
  wf_tensor_free(x);
  return causal ? MASK_CAUSAL : MASK_NOT_CAUSAL;
}

static int broadcasts_to(const wf_type *m, int rank, const int64_t *d) {
  if (m->rank > rank) return 0;
  for (int i = 0; i < m->rank; i++) {
    int64_t a = m->dims[m->rank - 1 - i], b = d[rank - 1 - i];
    if (a != b && a != 1) return 0;
  }
  return 1;
}

/* ---- the match ----------------------------------------------------------------------------- */

/* t as rank 4: a rank-3 [N, S, D] (torch's nn.MultiheadAttention: batch and heads merged)
 * with a leading 1. */
static wf_type lift(const wf_type *t) {
  if (t->rank != 3) return *t;
  int64_t d[4] = {1, t->dims[0], t->dims[1], t->dims[2]};
  return wf_type_make(t->dtype, 4, d);
}

/* v reshaped to its lifted type, before root (rank 4 already: v). */
static wf_value lifted(wf_raise *r, wf_op *root, wf_value v) {
  const wf_type *t = wf_raise_type(r, v);
  if (t->rank == 4) return v;
  wf_type l = lift(t);
  return wf_raise_build(r, root, WF_OP_RESHAPE, 1, &v, &l)->results[0];
}

static int match(wf_raise *r, wf_op *root) {
  if (root->code != WF_OP_MATMUL) return 0;
  att_match mt;
  memset(&mt, 0, sizeof mt);
  mt.scale = mt.scale_above = 1.0;
  wf_raise_push(&mt.ops, root);
  wf_value pv = wf_raise_peel(r, root->operands[0], &mt.ops);
  wf_op *sm = wf_raise_def(r, pv, WF_OP_SOFTMAX);
  if (!sm) return 0;
  const wf_type *st = wf_raise_type(r, pv);
  int rank = st->rank; /* 4, or 3 for [B·H, S, T] (lifted to [1, B·H, S, T]) */
  if ((rank != 4 && rank != 3) || wf_norm_axis(wf_op_int(r->f, sm, "axis", -1), rank) != rank - 1) return 0;
  wf_raise_push(&mt.ops, sm);
  if (!scores(r, sm->operands[0], &mt, 0)) return 0;

  /* q and kT may carry scale factors of their own (scaled before the product) */
  wf_value q = mt.q, kt = mt.kt, a, b;
  double k;
  for (int side = 0; side < 2; side++) {
    wf_value *p = side ? &kt : &q;
    wf_op *m = wf_raise_bin(r, *p, WF_OP_MUL, &a, &b), *dv = m ? NULL : wf_raise_bin(r, *p, WF_OP_DIV, &a, &b);
    if ((!m && !dv) || wf_raise_uses(r, *p) != 1) continue;
    if (dv) { /* q / c */
      if (wf_raise_scalar(r, b, &k) && k != 0.0 && wf_raise_same_shape(r, a, *p)) *p = a, mt.scale /= k;
      continue;
    }
    if (wf_raise_scalar(r, b, &k) && wf_raise_same_shape(r, a, *p)) *p = a, mt.scale *= k;
    else if (wf_raise_scalar(r, a, &k) && wf_raise_same_shape(r, b, *p)) *p = b, mt.scale *= k;
  }
  wf_type qt4 = lift(wf_raise_type(r, q)), ktt4 = lift(wf_raise_type(r, kt));
  const wf_type *qt = &qt4, *ktt = &ktt4;
  if (wf_raise_type(r, q)->rank != rank || wf_raise_type(r, kt)->rank != rank || !wf_dtype_is_float(qt->dtype))
    return 0;
  int64_t nb = qt->dims[0], hq = qt->dims[1], s = qt->dims[2], d = qt->dims[3], t = ktt->dims[3];

  /* k [B, Hk, T, D] from kT [B, Hk, D, T] (a rank-3 kT keeps its transpose: head-layout sees
   * through it) */
  wf_value kk = WF_NO_VALUE;
  int64_t perm[4] = {0, 1, 3, 2};
  wf_op *tr = rank == 4 ? wf_raise_def(r, kt, WF_OP_TRANSPOSE) : NULL;
  const wf_attr *pa = tr ? wf_op_attr(r->f, tr, "perm") : NULL;
  if (pa && pa->kind == WF_ATTR_INTS && pa->u.ints.n == 4) {
    int64_t p2[4] = {pa->u.ints.v[0], pa->u.ints.v[1], pa->u.ints.v[3], pa->u.ints.v[2]};
    if (p2[0] == 0 && p2[1] == 1 && p2[2] == 2 && p2[3] == 3) kk = tr->operands[0];
    else memcpy(perm, p2, sizeof perm), kt = tr->operands[0];
  }
  wf_value vv = wf_raise_strip_casts(r, root->operands[1]);
  wf_value k0 = kk ? unrepeat(r, kk) : WF_NO_VALUE, v0 = rank == 4 ? unrepeat(r, vv) : WF_NO_VALUE;
  int absorbed = 0;
  if (k0 && v0 && wf_raise_type(r, k0)->dims[1] == wf_raise_type(r, v0)->dims[1]) {
    kk = k0, vv = v0, absorbed = 1;
  }
  wf_type vt4 = lift(wf_raise_type(r, vv)), rt4 = lift(wf_raise_type(r, root->results[0]));
  const wf_type *vt = &vt4;
  int64_t hk = kk ? wf_raise_type(r, kk)->dims[1] : ktt->dims[1];
  if (wf_raise_type(r, vv)->rank != rank || vt->dtype != qt->dtype || ktt->dtype != qt->dtype) return 0;
  if (ktt->dims[2] != d || vt->dims[0] != nb || vt->dims[1] != hk || vt->dims[2] != t || hk <= 0 || hq % hk) return 0;
  if ((kk ? wf_raise_type(r, kk)->dims[0] : ktt->dims[0]) != nb) return 0;
  int64_t odims[4] = {nb, hq, s, vt->dims[3]}, sdims[4] = {nb, hq, s, t};
  if (wf_raise_type(r, root->results[0])->rank != rank || !dims_eq(&rt4, 4, odims) || rt4.dtype != qt->dtype)
    return 0;

  /* masks */
  int causal = 0, empty = 0, invert = 0;
  wf_value mask = WF_NO_VALUE;
  if (mt.add_mask) {
    const wf_type *m = wf_raise_type(r, mt.add_mask);
    if (m->dtype != qt->dtype || !broadcasts_to(m, 4, sdims)) return 0;
    mask_kind kind = causal_kind(r, mt.add_mask, 0, 0, s, t, &empty);
    if (mt.seen_scale && !(kind == MASK_CAUSAL && mt.scale_above > 0)) return 0; /* a scaled mask */
    if (kind == MASK_CAUSAL) causal = 1;
    else mask = mt.add_mask;
  }
  if (mt.bool_mask) {
    const wf_type *m = wf_raise_type(r, mt.bool_mask);
    if (m->dtype != WF_BOOL || !broadcasts_to(m, 4, sdims)) return 0;
    if (!(mt.fill_scale > 0) || !(mt.fill * mt.fill_scale <= BIG_NEGATIVE)) return 0;
    mask_kind kind = causal_kind(r, mt.bool_mask, 1, mt.bool_drop, s, t, &empty);
    if (kind == MASK_CAUSAL && !causal) {
      causal = 1;
    } else {
      /* a finite fill equals -inf only when every row keeps a key, known for constants */
      if (mask || (kind == MASK_UNKNOWN && !isinf(mt.fill)) || (kind == MASK_NOT_CAUSAL && empty && !isinf(mt.fill)))
        return 0;
      mask = mt.bool_mask;
      invert = mt.bool_drop;
    }
  }
  if (!wf_raise_ops_ok(&mt.ops) || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) return 0;

  /* rewrite */
  if (!kk && rank == 3) { /* [N, D, T] -> [N, T, D] */
    const wf_type *src = wf_raise_type(r, kt);
    wf_type tk = wf_type_make(src->dtype, 3, (int64_t[]){src->dims[0], src->dims[2], src->dims[1]});
    wf_op *t2 = wf_raise_build(r, root, WF_OP_TRANSPOSE, 1, &kt, &tk);
    wf_op_set_ints(r->f, t2, "perm", 3, (int64_t[]){0, 2, 1});
    kk = t2->results[0];
  } else if (!kk) {
    const wf_type *src = wf_raise_type(r, kt);
    wf_type tk = wf_type_make(src->dtype, 4, (int64_t[]){src->dims[perm[0]], src->dims[perm[1]], src->dims[perm[2]], src->dims[perm[3]]});
    wf_op *t2 = wf_raise_build(r, root, WF_OP_TRANSPOSE, 1, &kt, &tk);
    wf_op_set_ints(r->f, t2, "perm", 4, perm);
    kk = t2->results[0];
  }
  if (mask && invert) {
    const wf_type *m = wf_raise_type(r, mask);
    mask = wf_raise_build(r, root, WF_OP_NOT, 1, &mask, m)->results[0];
  }
  wf_value ops[4] = {lifted(r, root, q), lifted(r, root, kk), lifted(r, root, vv), mask};
  wf_op *op = wf_raise_build(r, root, WF_OP_ATTENTION, mask ? 4 : 3, ops, rank == 3 ? &rt4 : NULL);
  wf_op_set_float(r->f, op, "scale", mt.scale);
  if (causal) wf_op_set_attr(r->f, op, (wf_attr){wf_intern(r->m, "causal"), WF_ATTR_BOOL, {.i = 1}});
  wf_value res = op->results[0];
  if (rank == 3) res = wf_raise_build(r, root, WF_OP_RESHAPE, 1, &res, NULL)->results[0];
  wf_raise_replace(r, root, res);
  wf_pass_stat_add(r->ctx, "attention", 1);
  if (causal) wf_pass_stat_add(r->ctx, "causal-mask", 1);
  if (absorbed) wf_pass_stat_add(r->ctx, "kv-repeat-absorbed", 1);
  return 1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"attention", "causal-mask", "kv-repeat-absorbed"};
const wf_pass_info wf_pass_raise_attention = {
    "raise-attention", "Raise matmul/scale/mask/softmax/matmul chains (MHA, GQA, MQA) to attention", NULL, 0, stats, 3,
    run,
};
