/* raise-rope: rotary position embeddings as exporters write them -> rope(x, cos, sin).
 *
 *   rotate-half (GPT-NeoX / HF Llama):  x * cos + concat(-x2, x1) * sin
 *       x1 = x[..., :h], x2 = x[..., h:] (two slices, or one split in halves), h = D / 2
 *   interleaved (GPT-J):                x * cos + flatten(stack(-x[..., 1::2], x[..., ::2])) * sin
 *       the stack written as unsqueeze (reshape) + concat, the flatten as a reshape
 *
 * Sums and products in either operand order. cos and sin must broadcast to x as [S, D]
 * tables: shape [..., S, D] with leading 1s (reshaped to [S, D] in the rewrite). The
 * interleaved op reads the angle at each even position for both members of a pair, so that
 * form is raised only when cos and sin are constants whose pairs are equal (as GPT-J's
 * duplicate_interleave builds them); anything else would change the numbers. */
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

/* A cos/sin table usable for x [..., S, D]: [..., S, D] with leading 1s. */
static int table_fits(wf_raise *r, wf_value c, wf_value x) {
  const wf_type *ct = wf_raise_type(r, c), *xt = wf_raise_type(r, x);
  if (ct->dtype != xt->dtype || ct->rank < 2 || xt->rank < 2 || ct->rank > xt->rank) return 0;
  if (ct->dims[ct->rank - 1] != xt->dims[xt->rank - 1] || ct->dims[ct->rank - 2] != xt->dims[xt->rank - 2]) return 0;
  for (int i = 0; i < ct->rank - 2; i++)
    if (ct->dims[i] != 1) return 0;
  return 1;
}

/* Constant tables whose pairs (2i, 2i+1) hold equal values. */
static int pairs_equal(wf_raise *r, wf_value c) {
  wf_tensor *t = wf_raise_const_tensor(r, c);
  int ok = t != NULL;
  for (int64_t i = 0; ok && i + 1 < (t ? wf_tensor_numel(t) : 0); i += 2) ok = wf_tensor_get(t, i) == wf_tensor_get(t, i + 1);
  wf_tensor_free(t);
  return ok;
}

static wf_value as_table(wf_raise *r, wf_op *root, wf_value c) {
  const wf_type *ct = wf_raise_type(r, c);
  if (ct->rank == 2) return c;
  wf_type t = wf_type_make(ct->dtype, 2, ct->dims + ct->rank - 2);
  return wf_raise_build(r, root, WF_OP_RESHAPE, 1, &c, &t)->results[0];
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
    if (!table_fits(r, cs, x) || !table_fits(r, sn, x)) continue;
    if (inter && (!pairs_equal(r, cs) || !pairs_equal(r, sn))) continue;
    if (!wf_raise_ops_ok(&mt.ops) || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) continue;
    wf_value ops[3] = {x, as_table(r, root, cs), as_table(r, root, sn)};
    wf_op *op = wf_raise_build(r, root, WF_OP_ROPE, 3, ops, NULL);
    if (inter) wf_op_set_attr(r->f, op, (wf_attr){wf_intern(r->m, "interleaved"), WF_ATTR_BOOL, {.i = 1}});
    wf_raise_replace(r, root, op->results[0]);
    wf_pass_stat_add(r->ctx, inter ? "rope-interleaved" : "rope-half", 1);
    return 1;
  }
  return 0;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"rope-half", "rope-interleaved"};
const wf_pass_info wf_pass_raise_rope = {
    "raise-rope", "Raise rotary embeddings (rotate-half and interleaved forms) to rope", NULL, 0, stats, 2, run,
};
