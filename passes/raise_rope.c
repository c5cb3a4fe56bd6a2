/* raise-rope: rotary position embeddings as exporters write them -> rope(x, cos, sin).
 *
 *   rotate-half (GPT-NeoX / HF Llama):  x * cos + concat(-x2, x1) * sin
 *       x1 = x[..., :h], x2 = x[..., h:] (two slices, or one split in halves), h = D / 2
 *   interleaved (GPT-J):                x * cos + flatten(stack(-x[..., 1::2], x[..., ::2])) * sin
 *       the stack written as unsqueeze (reshape) + concat, the flatten as a reshape
 *
 *   pairwise (Meta's LLaMA, real form): flatten(stack(xe cos - xo sin, xe sin + xo cos))
 *       xe = x[..., ::2], xo = x[..., 1::2] (or the pairs view x.reshape(..., D/2, 2) indexed
 *       [..., 0] / [..., 1], or unbound), half tables [..., S, D/2]
 *
 * Sums and products in either operand order. cos and sin must broadcast to x with one axis
 * besides the last that is not 1, the position axis: [..., S, D] tables with leading 1s over
 * x [..., S, D] (reshaped to [S, D] in the rewrite), or a position axis elsewhere, as in
 * x [B, S, H, D] with tables [1, S, 1, D] (rope then runs between two transposes that swap it
 * with the second-to-last axis). The
 * interleaved op reads the angle at each even position for both members of a pair, so that
 * form is raised only when cos and sin are constants whose pairs are equal (as GPT-J's
 * duplicate_interleave builds them); anything else would change the numbers. */
#include <string.h>

#include "ir/rules.h"
#include "passes/raise.h"

typedef struct rope_match {
  wf_raise_ops ops;
  wf_value x;
} rope_match;

static void push(rope_match *mt, wf_op *op) { wf_raise_push(&mt->ops, op); }

/* op is a slice of one axis, the last: fills first index, count and step. */
static int last_axis_slice(wf_raise *r, wf_op *op, int64_t *first, int64_t *count, int64_t *step) {
  const wf_attr *st = wf_op_attr(r->f, op, "starts"), *en = wf_op_attr(r->f, op, "ends");
  const wf_attr *ax = wf_op_attr(r->f, op, "axes"), *sp = wf_op_attr(r->f, op, "steps");
  const wf_type *t = wf_raise_type(r, op->operands[0]);
  if (!st || !en || !ax || !sp || st->kind != WF_ATTR_INTS || en->kind != WF_ATTR_INTS ||
      ax->kind != WF_ATTR_INTS || sp->kind != WF_ATTR_INTS || st->u.ints.n != 1 || en->u.ints.n != 1 ||
      ax->u.ints.n != 1 || sp->u.ints.n != 1 || sp->u.ints.v[0] == 0)
    return 0;
  if (wf_norm_axis(ax->u.ints.v[0], t->rank) != t->rank - 1) return 0;
  *step = sp->u.ints.v[0];
  wf_slice_resolve(t->dims[t->rank - 1], st->u.ints.v[0], en->u.ints.v[0], *step, first, count);
  return 1;
}

/* v = x[..., first : first + count*step : step]; returns x. */
static wf_value slice_of(wf_raise *r, wf_value v, int64_t first, int64_t count, int64_t step, rope_match *mt) {
  wf_op *op = wf_raise_def(r, v, WF_OP_SLICE);
  int64_t f, c, s;
  if (!op || !last_axis_slice(r, op, &f, &c, &s) || f != first || c != count || (c > 1 && s != step)) return WF_NO_VALUE;
  push(mt, op);
  return op->operands[0];
}

/* v = half `which` (0 = first, 1 = second) of x along the last axis: a slice or a split. */
static wf_value half_of(wf_raise *r, wf_value v, int which, int64_t d, rope_match *mt) {
  wf_value x = slice_of(r, v, which ? d / 2 : 0, d / 2, 1, mt);
  if (x) return x;
  wf_op *sp = wf_raise_def(r, v, WF_OP_SPLIT);
  if (!sp || sp->n_results != 2 || sp->results[which] != v) return WF_NO_VALUE;
  const wf_type *t = wf_raise_type(r, sp->operands[0]);
  if (wf_norm_axis(wf_op_int(r->f, sp, "axis", 0), t->rank) != t->rank - 1) return WF_NO_VALUE;
  if (wf_raise_type(r, sp->results[0])->dims[t->rank - 1] != d / 2) return WF_NO_VALUE;
  push(mt, sp);
  return sp->operands[0];
}

static int concat_last(wf_raise *r, wf_op *cat) {
  const wf_type *t = wf_raise_type(r, cat->results[0]);
  return cat->n_operands == 2 && wf_norm_axis(wf_op_int(r->f, cat, "axis", 0), t->rank) == t->rank - 1;
}

/* rot = concat(-x2, x1): returns x. */
static wf_value rotate_half_of(wf_raise *r, wf_value rot, rope_match *mt) {
  wf_op *cat = wf_raise_def(r, rot, WF_OP_CONCAT);
  if (!cat || !concat_last(r, cat)) return WF_NO_VALUE;
  const wf_type *t = wf_raise_type(r, rot);
  int64_t d = t->dims[t->rank - 1];
  wf_op *neg = wf_raise_def(r, cat->operands[0], WF_OP_NEG);
  if (!neg || d % 2) return WF_NO_VALUE;
  push(mt, cat);
  push(mt, neg);
  wf_value x2 = half_of(r, neg->operands[0], 1, d, mt), x1 = half_of(r, cat->operands[1], 0, d, mt);
  return x1 && x1 == x2 ? x1 : WF_NO_VALUE;
}

/* v = reshape(u) adding a trailing 1, with a neg before or after when `negated`. */
static wf_value unsqueezed(wf_raise *r, wf_value v, int negated, rope_match *mt) {
  wf_op *n1 = negated ? wf_raise_def(r, v, WF_OP_NEG) : NULL;
  wf_op *rs = wf_raise_def(r, n1 ? n1->operands[0] : v, WF_OP_RESHAPE);
  if (!rs) return WF_NO_VALUE;
  wf_value u = rs->operands[0];
  wf_op *n2 = negated && !n1 ? wf_raise_def(r, u, WF_OP_NEG) : NULL;
  if (negated && !n1 && !n2) return WF_NO_VALUE;
  const wf_type *a = wf_raise_type(r, u), *b = wf_raise_type(r, rs->results[0]);
  if (b->rank != a->rank + 1 || b->dims[b->rank - 1] != 1) return WF_NO_VALUE;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return WF_NO_VALUE;
  push(mt, rs);
  if (n1) push(mt, n1);
  if (n2) push(mt, n2);
  return n2 ? n2->operands[0] : u;
}

/* rot = reshape(concat(unsqueeze(-x[..., 1::2]), unsqueeze(x[..., ::2]))): returns x. */
static wf_value rotate_pairs_of(wf_raise *r, wf_value rot, rope_match *mt) {
  wf_op *fl = wf_raise_def(r, rot, WF_OP_RESHAPE);
  wf_op *cat = fl ? wf_raise_def(r, fl->operands[0], WF_OP_CONCAT) : NULL;
  if (!cat || !concat_last(r, cat)) return WF_NO_VALUE;
  const wf_type *t = wf_raise_type(r, rot), *c = wf_raise_type(r, cat->results[0]);
  int64_t d = t->dims[t->rank - 1];
  if (c->rank != t->rank + 1 || c->dims[c->rank - 1] != 2 || c->dims[c->rank - 2] * 2 != d) return WF_NO_VALUE;
  push(mt, fl);
  push(mt, cat);
  wf_value odd = unsqueezed(r, cat->operands[0], 1, mt), even = unsqueezed(r, cat->operands[1], 0, mt);
  if (!odd || !even) return WF_NO_VALUE;
  wf_value xo = slice_of(r, odd, 1, d / 2, 2, mt), xe = slice_of(r, even, 0, d / 2, 2, mt);
  return xo && xo == xe ? xo : WF_NO_VALUE;
}

/* The axis of x [..., D] that a cos/sin table indexes by position: the table broadcasts to x
 * (trailing axes aligned) with last dim `dl` and at most one other axis not 1, which must equal
 * x's; that axis is S. A table with no such axis (one position) takes x's second-to-last axis
 * when it is 1, else the last axis before it that is 1. -1 when c is no such table. */
static int table_axis(wf_raise *r, wf_value c, const wf_type *xt, int64_t dl) {
  const wf_type *ct = wf_raise_type(r, c);
  if (ct->dtype != xt->dtype || ct->rank < 1 || xt->rank < 2 || ct->rank > xt->rank || ct->dims[ct->rank - 1] != dl)
    return -1;
  int lead = xt->rank - ct->rank, k = -1;
  for (int i = 0; i < ct->rank - 1; i++) {
    if (ct->dims[i] == 1) continue;
    if (k >= 0 || ct->dims[i] != xt->dims[i + lead]) return -1;
    k = i + lead;
  }
  for (int i = xt->rank - 2; k < 0 && i >= 0; i--)
    if (xt->dims[i] == 1) k = i;
  return k;
}

/* Both tables index the same axis of x. */
static int tables_axis(wf_raise *r, wf_value c, wf_value s, const wf_type *xt, int64_t dl) {
  int k = table_axis(r, c, xt, dl);
  return k >= 0 && table_axis(r, s, xt, dl) == k ? k : -1;
}

/* Constant tables whose pairs (2i, 2i+1) hold equal values. */
static int pairs_equal(wf_raise *r, wf_value c) {
  wf_tensor *t = wf_raise_const_tensor(r, c);
  int ok = t != NULL;
  for (int64_t i = 0; ok && i + 1 < (t ? wf_tensor_numel(t) : 0); i += 2) ok = wf_tensor_get(t, i) == wf_tensor_get(t, i + 1);
  wf_tensor_free(t);
  return ok;
}

/* The table as [S, D]: a reshape of c, or (pairs) a new constant with each entry twice. */
static wf_value as_table(wf_raise *r, wf_op *root, wf_value c, int64_t s, int64_t d, int pairs) {
  const wf_type *ct = wf_raise_type(r, c);
  int64_t dims[2] = {s, d};
  if (pairs) {
    wf_tensor *t = wf_raise_const_tensor(r, c), *u = wf_tensor_new(ct->dtype, 2, dims);
    for (int64_t i = 0; i < s * d; i++) wf_tensor_set(u, i, wf_tensor_get(t, i / 2));
    int g = wf_module_add_data_global(r->m, "raise.rope_table", wf_type_make(ct->dtype, 2, dims), u->data);
    wf_value v = wf_func_global_value(r->f, g);
    wf_tensor_free(t);
    wf_tensor_free(u);
    return v;
  }
  if (ct->rank == 2 && ct->dims[0] == s) return c;
  wf_type t = wf_type_make(ct->dtype, 2, dims);
  return wf_raise_build(r, root, WF_OP_RESHAPE, 1, &c, &t)->results[0];
}

/* x with axes k and rank-2 swapped. */
static wf_value transposed(wf_raise *r, wf_op *root, wf_value x, int k) {
  const wf_type *xt = wf_raise_type(r, x);
  int64_t perm[WF_MAX_RANK], dims[WF_MAX_RANK];
  for (int i = 0; i < xt->rank; i++) perm[i] = i;
  perm[k] = xt->rank - 2, perm[xt->rank - 2] = k;
  for (int i = 0; i < xt->rank; i++) dims[i] = xt->dims[perm[i]];
  wf_type t = wf_type_make(xt->dtype, xt->rank, dims);
  wf_op *op = wf_raise_build(r, root, WF_OP_TRANSPOSE, 1, &x, &t);
  wf_op_set_ints(r->f, op, "perm", xt->rank, perm);
  return op->results[0];
}

/* rope(x, cos, sin) replacing root, with the tables indexed along x's axis k: when k is not the
 * second-to-last, x is transposed there and back (swapping the two axes), which head-layout
 * folds into its column map (passes/head_view.c). `pairs`: half tables of the pairwise form.
 * A root of another shape than x (the pairwise form's flatten fused with an unsqueeze) is the
 * rope's result reshaped: the elements are in the same row-major order. */
static void build(wf_raise *r, wf_op *root, wf_value x, wf_value cs, wf_value sn, int k, int inter, int pairs) {
  const wf_type *xt = wf_raise_type(r, x);
  int last2 = xt->rank - 2;
  int64_t d = xt->dims[xt->rank - 1];
  wf_value xin = k == last2 ? x : transposed(r, root, x, k);
  int64_t s = xt->dims[k];
  wf_value ops[3] = {xin, as_table(r, root, cs, s, d, pairs), as_table(r, root, sn, s, d, pairs)};
  wf_type it = *wf_raise_type(r, xin);
  wf_op *op = wf_raise_build(r, root, WF_OP_ROPE, 3, ops, &it);
  if (inter) wf_op_set_attr(r->f, op, (wf_attr){wf_intern(r->m, "interleaved"), WF_ATTR_BOOL, {.i = 1}});
  wf_value out = op->results[0];
  if (k != last2) out = transposed(r, root, out, k);
  if (wf_raise_same_shape(r, root->results[0], out))
    wf_value_get(r->f, out)->name = wf_value_get(r->f, root->results[0])->name;
  else
    out = wf_raise_build(r, root, WF_OP_RESHAPE, 1, &out, NULL)->results[0];
  wf_raise_replace(r, root, out);
  wf_pass_stat_add(r->ctx, inter ? "rope-interleaved" : "rope-half", 1);
}

static int match(wf_raise *r, wf_op *root) {
  wf_value a, b;
  if (root->n_results != 1 || !wf_raise_bin(r, root->results[0], WF_OP_ADD, &a, &b)) return 0;
  for (int order = 0; order < 8; order++) {
    wf_value pa = order & 1 ? b : a, pb = order & 1 ? a : b; /* pa = x * cos, pb = rot * sin */
    wf_value a1, a2, b1, b2;
    wf_op *ma = wf_raise_bin(r, pa, WF_OP_MUL, &a1, &a2), *mb = wf_raise_bin(r, pb, WF_OP_MUL, &b1, &b2);
    if (!ma || !mb) continue;
    wf_value rot = order & 2 ? b2 : b1, sn = order & 2 ? b1 : b2;
    int inter = (order & 4) != 0;
    rope_match mt = {0};
    push(&mt, root);
    push(&mt, ma);
    push(&mt, mb);
    wf_value x = inter ? rotate_pairs_of(r, rot, &mt) : rotate_half_of(r, rot, &mt);
    if (!x || (a1 != x && a2 != x)) continue;
    wf_value cs = a1 == x ? a2 : a1;
    const wf_type *xt = wf_raise_type(r, x);
    if (!wf_dtype_is_float(xt->dtype) || xt->dims[xt->rank - 1] % 2 || !wf_raise_same_shape(r, root->results[0], x))
      continue;
    int k = tables_axis(r, cs, sn, xt, xt->dims[xt->rank - 1]);
    if (k < 0) continue;
    if (inter && (!pairs_equal(r, cs) || !pairs_equal(r, sn))) continue;
    if (!wf_raise_ops_ok(&mt.ops) || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) continue;
    build(r, root, x, cs, sn, k, inter, 0);
    return 1;
  }
  return 0;
}

/* The pairwise form (Meta's LLaMA without complex numbers): with xe = x[..., ::2] and
 * xo = x[..., 1::2], out = flatten(stack(xe c - xo s, xe s + xo c)) for half tables c, s
 * [..., S, D/2]. It is rope {interleaved} with each table entry doubled: the same products
 * and sums, so the same numbers. Matched from the flatten (a reshape). */
/* u is a pairs view [..., D/2, 2]. */
static int pairs_view(wf_raise *r, wf_value u, int64_t d) {
  const wf_type *b = wf_raise_type(r, u);
  return b->rank >= 2 && b->dims[b->rank - 1] == 2 && b->dims[b->rank - 2] == d / 2;
}

/* v = the members `first` (0 or 1) of x's pairs: x[..., first::2] (returns x, *pv = 0), or of
 * a pairs view u [..., D/2, 2] of x, u[..., first] (a gather) or u.unbind(-1)[first] (split +
 * squeeze) (returns u, *pv = 1). */
static wf_value pair_member(wf_raise *r, wf_value v, int64_t first, int64_t d, int *pv, rope_match *mt) {
  wf_value x = slice_of(r, v, first, d / 2, 2, mt);
  *pv = 0;
  if (x) return x;
  *pv = 1;
  wf_op *g = wf_raise_def(r, v, WF_OP_GATHER), *sq = g ? NULL : wf_raise_def(r, v, WF_OP_RESHAPE), *sp = NULL;
  if (g) {
    const wf_type *t = wf_raise_type(r, g->operands[0]);
    wf_tensor *ix = wf_raise_const_tensor(r, g->operands[1]);
    int ok = ix && ix->rank == 0 && wf_tensor_get(ix, 0) == (double)first &&
             wf_norm_axis(wf_op_int(r->f, g, "axis", 0), t->rank) == t->rank - 1 && pairs_view(r, g->operands[0], d);
    wf_tensor_free(ix);
    if (!ok) return WF_NO_VALUE;
    push(mt, g);
    return g->operands[0];
  }
  if (sq && (sp = wf_raise_def(r, sq->operands[0], WF_OP_SPLIT)) != NULL && sp->n_results == 2 &&
      sp->results[first] == sq->operands[0]) {
    const wf_type *t = wf_raise_type(r, sp->operands[0]);
    if (wf_norm_axis(wf_op_int(r->f, sp, "axis", 0), t->rank) != t->rank - 1 ||
        wf_raise_type(r, v)->rank != t->rank - 1 || !pairs_view(r, sp->operands[0], d))
      return WF_NO_VALUE;
    push(mt, sq);
    push(mt, sp);
    return sp->operands[0];
  }
  return WF_NO_VALUE;
}

/* v = pair_member(x, first) · t (either order): returns pair_member's value and sets *t. */
static wf_value mul_slice(wf_raise *r, wf_value v, int64_t first, int64_t d, wf_value *t, int *pv, rope_match *mt) {
  wf_value a[2];
  wf_op *m = wf_raise_bin(r, v, WF_OP_MUL, &a[0], &a[1]);
  for (int i = 0; m && i < 2; i++) {
    wf_value x = pair_member(r, a[i], first, d, pv, mt);
    if (!x) continue;
    push(mt, m);
    *t = a[1 - i];
    return x;
  }
  return WF_NO_VALUE;
}

static int match_pairs(wf_raise *r, wf_op *root) {
  wf_op *cat = root->code == WF_OP_RESHAPE ? wf_raise_def(r, root->operands[0], WF_OP_CONCAT) : NULL;
  if (!cat || !concat_last(r, cat)) return 0;
  const wf_type *t = wf_raise_type(r, root->results[0]), *ct = wf_raise_type(r, cat->results[0]);
  if (ct->rank < 2 || ct->dims[ct->rank - 1] != 2) return 0;
  int64_t d = 2 * ct->dims[ct->rank - 2];
  rope_match mt = {0};
  push(&mt, root);
  push(&mt, cat);
  wf_value ev = unsqueezed(r, cat->operands[0], 0, &mt), od = unsqueezed(r, cat->operands[1], 0, &mt), p[2], q[2];
  wf_op *sub = ev ? wf_raise_bin(r, ev, WF_OP_SUB, &p[0], &p[1]) : NULL;
  wf_op *add = od ? wf_raise_bin(r, od, WF_OP_ADD, &q[0], &q[1]) : NULL;
  if (!sub || !add) return 0;
  push(&mt, sub);
  push(&mt, add);
  wf_value cs = WF_NO_VALUE, sn = WF_NO_VALUE, sn2 = WF_NO_VALUE, cs2 = WF_NO_VALUE;
  int pv[4];
  wf_value x = mul_slice(r, p[0], 0, d, &cs, &pv[0], &mt);
  if (!x || mul_slice(r, p[1], 1, d, &sn, &pv[1], &mt) != x) return 0;
  int ok = 0;
  for (int i = 0; i < 2 && !ok; i++)
    ok = mul_slice(r, q[i], 0, d, &sn2, &pv[2], &mt) == x && mul_slice(r, q[1 - i], 1, d, &cs2, &pv[3], &mt) == x;
  if (!ok || cs2 != cs || sn2 != sn || pv[0] != pv[1] || pv[0] != pv[2] || pv[0] != pv[3]) return 0;
  /* x [..., D]: the sliced value, or what the pairs view was reshaped from (reshaped again
   * when it has another shape: exporters fuse the head split into the pairs view) */
  const wf_type *ut = wf_raise_type(r, x);
  int64_t dims[WF_MAX_RANK];
  int rank = pv[0] ? ut->rank - 1 : ut->rank;
  memcpy(dims, ut->dims, (size_t)rank * sizeof *dims);
  dims[rank - 1] = d;
  wf_type xt = wf_type_make(ut->dtype, rank, dims);
  wf_op *rs = pv[0] ? wf_raise_def(r, x, WF_OP_RESHAPE) : NULL;
  if (rs) push(&mt, rs);
  if (xt.dims[rank - 1] != d || wf_type_numel(t) != wf_type_numel(&xt) || !wf_dtype_is_float(t->dtype)) return 0;
  int k = tables_axis(r, cs, sn, &xt, d / 2);
  if (k < 0) return 0;
  wf_tensor *tc = wf_raise_const_tensor(r, cs), *ts = wf_raise_const_tensor(r, sn);
  ok = tc && ts;
  wf_tensor_free(tc);
  wf_tensor_free(ts);
  if (!ok || !wf_raise_ops_ok(&mt.ops) || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) return 0;
  if (pv[0]) {
    wf_value src = rs ? rs->operands[0] : x;
    x = wf_type_same_shape(wf_raise_type(r, src), &xt) ? src
                                                       : wf_raise_build(r, root, WF_OP_RESHAPE, 1, &src, &xt)->results[0];
  }
  build(r, root, x, cs, sn, k, 1, 1);
  return 1;
}

static int match_any(wf_raise *r, wf_op *root) { return match(r, root) || match_pairs(r, root); }

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match_any); }

static const char *const stats[] = {"rope-half", "rope-interleaved"};
const wf_pass_info wf_pass_raise_rope = {
    "raise-rope", "Raise rotary embeddings (rotate-half and interleaved forms) to rope", NULL, 0, stats, 2, run,
};
