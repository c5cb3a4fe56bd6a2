/* The stacked combine of a dense MoE block, for the partition pass. torch writes
 *
 *   y = (torch.stack([expert_i(x) ...], dim=-2) * gates.unsqueeze(-1)).sum(dim=-2)
 *
 * as reshape(e_i [.., E]) -> [.., 1, E] per expert, concat along -2 -> S [.., N, E],
 * reshape(gates [.., N]) -> [.., N, 1], mul, reduce_sum over -2. Under partition's rule the
 * rank-3 S would hold its leading dims (the tokens) whole while each e_i has them split along
 * y, a reblocking the reshape lowering refuses. Numerically the same and laid out by the rule
 * without any data movement is the form the per-expert export already has:
 *
 *   y = sum_i slice(gates, i, i + 1, last axis) * e_i
 *
 * which this rewrite builds (a slice of a column of the gate matrix, a broadcast mul, a chain
 * of adds, in expert order as the sum over N). The stacked ops are removed when nothing else
 * reads them. Any other shape of the pattern is left alone. rows_combine: the same sum over a
 * view of the rows (DeepSeek's combine); batched_combine: over the stack as a batched product
 * (`einsum("tn,tne->te")`). */
#include "passes/decompose.h"

/* x's dims equal y's with a 1 inserted at position at. */
static int inserts_one(const wf_type *x, const wf_type *y, int at) {
  if (y->rank != x->rank + 1 || y->dims[at] != 1) return 0;
  for (int d = 0, k = 0; d < y->rank; d++)
    if (d != at && y->dims[d] != x->dims[k++]) return 0;
  return 1;
}

static void unlink_if_dead(wf_func *f, wf_op *op) {
  if (op && op->n_results == 1 && wf_value_use_count(f, op->results[0]) == 0) wf_op_unlink(f, op);
}

/* The stack (a concat of N <= 64 reshapes) unlinked with its reshapes when nothing reads it. */
static void unlink_stack_if_dead(wf_func *f, wf_op *cat) {
  if (wf_value_use_count(f, cat->results[0]) != 0) return;
  wf_op *rs[64];
  int N = cat->n_operands;
  for (int i = 0; i < N; i++) rs[i] = wf_def_of(f, cat->operands[i], WF_OP_RESHAPE);
  wf_op_unlink(f, cat);
  for (int i = 0; i < N; i++) unlink_if_dead(f, rs[i]);
}

/* op's result replaced by v (keeping its name), op unlinked. */
static void replace_result(wf_func *f, wf_op *op, wf_value v) {
  wf_value_replace_named(f, op->results[0], v);
  wf_op_unlink(f, op);
}

/* Replaces the reduce_sum op by sum_i slice(gates gv, i, i + 1, last axis) * ev[i], in order,
 * keeping its name; the reduce is unlinked. */
static void weighted_sum(wf_module *m, wf_func *f, wf_op *op, wf_value gv, const wf_value *ev, int64_t N) {
  const wf_type *gt = wf_value_type(f, gv);
  wf_type yt = wf_rewrite_type(wf_value_type(f, op->results[0])), colt = wf_rewrite_type(gt);
  colt.dims[colt.rank - 1] = 1;
  wf_value acc = 0;
  for (int64_t i = 0; i < N; i++) {
    wf_value mo[2] = {wf_op_insert_slice(f, op, gv, colt, i, i + 1, gt->rank - 1, 1, op->loc), ev[i]};
    wf_op *mi = wf_op_new(f, WF_OP_MUL, 2, mo, 1, &yt, op->loc);
    wf_op_insert_before(f, op, mi);
    if (i == 0) {
      acc = mi->results[0];
      continue;
    }
    wf_value ao[2] = {acc, mi->results[0]};
    wf_op *ad = wf_op_new(f, WF_OP_ADD, 2, ao, 1, &yt, op->loc);
    wf_op_insert_before(f, op, ad);
    acc = ad->results[0];
  }
  replace_result(f, op, acc);
}

/* The same sum when the stack is a reshape of the experts' outputs as rows, DeepSeek's
 * `(out.view(T, k, E) * w.unsqueeze(-1)).sum(1)` with out [T k, E] (slot j of token t in row
 * t k + j): y = sum_j slice(w, j, j + 1, last axis) * rows j, j + k, .. of out (a strided
 * slice), so the [T, k, E] view, whose tokens the rule would hold whole, is not made. */
static int rows_combine(wf_module *m, wf_func *f, wf_op *op, wf_op *mul, const wf_type *st) {
  if (st->rank != 3) return 0;
  int64_t T = st->dims[0], K = st->dims[1], E = st->dims[2];
  wf_op *rx = NULL, *gr = NULL;
  for (int s = 0; s < 2 && !rx; s++) {
    rx = wf_def_of(f, mul->operands[s], WF_OP_RESHAPE);
    gr = wf_def_of(f, mul->operands[1 - s], WF_OP_RESHAPE);
    const wf_type *xt = rx ? wf_value_type(f, rx->operands[0]) : NULL;
    const wf_type *x3 = rx ? wf_value_type(f, rx->results[0]) : NULL;
    if (!rx || !gr || xt->rank != 2 || xt->dims[0] != T * K || xt->dims[1] != E || x3->rank != 3 ||
        x3->dims[0] != T || x3->dims[1] != K || x3->dims[2] != E)
      rx = NULL;
  }
  if (!rx || K > 64) return 0;
  wf_value xv = rx->operands[0], gv = gr->operands[0];
  const wf_type *gt = wf_value_type(f, gv);
  if (gt->rank != 2 || !inserts_one(gt, wf_value_type(f, gr->results[0]), 2) || gt->dims[0] != T ||
      gt->dims[1] != K || gt->dtype != WF_F32)
    return 0;
  wf_type rowt = wf_rewrite_type(wf_value_type(f, op->results[0]));
  wf_value ev[64];
  for (int64_t j = 0; j < K; j++) ev[j] = wf_op_insert_slice(f, op, xv, rowt, j, T * K, 0, K, op->loc);
  weighted_sum(m, f, op, gv, ev, K);
  unlink_if_dead(f, mul);
  unlink_if_dead(f, gr);
  unlink_if_dead(f, rx);
  return 1;
}

/* The stacked combine at op (a reduce_sum) rewritten, or the [T, k, E] one (rows_combine):
 * 1, else 0. */
static int stacked_combine(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_REDUCE_SUM || wf_op_int(f, op, "keepdims", 1) != 0) return 0;
  const wf_attr *axes = wf_op_attr(f, op, "axes");
  wf_op *mul = wf_def_of(f, op->operands[0], WF_OP_MUL);
  if (!axes || axes->u.ints.n != 1 || !mul || wf_value_use_count(f, mul->results[0]) != 1) return 0;
  const wf_type *st = wf_value_type(f, mul->results[0]);
  int r = st->rank, a = (int)(axes->u.ints.v[0] < 0 ? axes->u.ints.v[0] + r : axes->u.ints.v[0]);
  if (r < 3 || a != r - 2 || st->dtype != WF_F32) return 0;
  wf_op *cat = NULL, *gr = NULL;
  for (int s = 0; s < 2 && !cat; s++) {
    cat = wf_def_of(f, mul->operands[s], WF_OP_CONCAT);
    gr = wf_def_of(f, mul->operands[1 - s], WF_OP_RESHAPE);
    if (!cat || !gr) cat = NULL;
  }
  if (!cat) return rows_combine(m, f, op, mul, st);
  int64_t cax = wf_op_int(f, cat, "axis", 0);
  const wf_type *ct = wf_value_type(f, cat->results[0]), *g3 = wf_value_type(f, gr->results[0]);
  wf_value gv = gr->operands[0];
  const wf_type *gt = wf_value_type(f, gv);
  int64_t N = st->dims[a];
  if ((cax < 0 ? cax + r : cax) != a || ct->rank != r || ct->dims[a] != N || cat->n_operands != N ||
      !inserts_one(gt, g3, r - 1) || g3->dims[a] != N || gt->dtype != WF_F32)
    return 0;
  /* the mul must not broadcast the stack itself: S and the product have one shape */
  int same = 1;
  for (int d = 0; d < r; d++) same &= ct->dims[d] == st->dims[d];
  wf_value ev[64];
  int ok = same && N <= 64;
  for (int i = 0; ok && i < N; i++) {
    wf_op *rs = wf_def_of(f, cat->operands[i], WF_OP_RESHAPE);
    ok = rs && inserts_one(wf_value_type(f, rs->operands[0]), wf_value_type(f, cat->operands[i]), a);
    if (ok) ev[i] = rs->operands[0];
  }
  if (!ok) return 0;
  weighted_sum(m, f, op, gv, ev, N);
  unlink_if_dead(f, mul);
  unlink_if_dead(f, gr);
  unlink_stack_if_dead(f, cat);
  return 1;
}

/* The combine as a batched product, `einsum("tn,tne->te", gates, stack)`, which torch exports
 * as reshape(matmul(reshape(gates) -> [T, 1, N], concat(reshape(e_i) -> [T, 1, E], axis 1)))
 * -> [T, E] at op (the last reshape): the same weighted sum (weighted_sum), 1, else 0. The
 * batched product would hold each token's N x E stack on the PEs of its row. */
static int batched_combine(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_RESHAPE) return 0;
  const wf_type *yt = wf_value_type(f, op->results[0]);
  wf_op *mm = wf_def_of(f, op->operands[0], WF_OP_MATMUL);
  if (yt->rank != 2 || yt->dtype != WF_F32 || !mm || wf_value_use_count(f, mm->results[0]) != 1 ||
      !inserts_one(yt, wf_value_type(f, mm->results[0]), 1))
    return 0;
  wf_op *gr = wf_def_of(f, mm->operands[0], WF_OP_RESHAPE), *cat = wf_def_of(f, mm->operands[1], WF_OP_CONCAT);
  if (!gr || !cat || wf_op_int(f, cat, "axis", 0) != 1 || wf_value_use_count(f, gr->results[0]) != 1) return 0;
  wf_value gv = gr->operands[0];
  const wf_type *gt = wf_value_type(f, gv), *ct = wf_value_type(f, cat->results[0]);
  int64_t T = yt->dims[0], N = cat->n_operands;
  if (gt->rank != 2 || gt->dtype != WF_F32 || gt->dims[0] != T || gt->dims[1] != N || N < 2 || N > 64 ||
      !inserts_one(gt, wf_value_type(f, gr->results[0]), 1) || ct->rank != 3 || ct->dims[1] != N)
    return 0;
  wf_value ev[64];
  for (int i = 0; i < N; i++) {
    wf_op *rs = wf_def_of(f, cat->operands[i], WF_OP_RESHAPE);
    if (!rs || !inserts_one(wf_value_type(f, rs->operands[0]), wf_value_type(f, cat->operands[i]), 1) ||
        !wf_type_same_shape(wf_value_type(f, rs->operands[0]), yt))
      return 0;
    ev[i] = rs->operands[0];
  }
  weighted_sum(m, f, op, gv, ev, N);
  wf_op_unlink(f, mm);
  wf_op_unlink(f, gr);
  unlink_stack_if_dead(f, cat);
  return 1;
}

/* Applies a rewrite to every op of f (it may unlink the op and those before it); the count. */
static int each_op(wf_module *m, wf_func *f, int (*rewrite)(wf_module *, wf_func *, wf_op *)) {
  int n = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    n += rewrite(m, f, op);
  }
  return n;
}

static int combine(wf_module *m, wf_func *f, wf_op *op) {
  return stacked_combine(m, f, op) || batched_combine(m, f, op);
}

int wf_partition_moe_combine(wf_module *m, wf_func *f) { return each_op(m, f, combine); }

/* ---- DeepSeek-V3's grouped gate -------------------------------------------------------------
 * The scores [T, N] viewed as [T, G, S] (G groups of S experts): the sum of each group's k best
 *
 *   reduce_sum(topk(reshape(X -> [T, G, S]), k).values, -1)            [T, G]
 *     -> concat_g reduce_sum(topk(slice(X, g S .. g S + S, axis 1), k).values, -1, keepdims)
 *
 * and the chosen groups' mask spread over their experts
 *
 *   reshape(expand(reshape(M [T, G] -> [T, G, 1]) -> [T, G, S]) -> [T, G S])
 *     -> concat_g expand(slice(M, g .. g + 1, axis 1) -> [T, S])
 *
 * the same numbers with rank-2 values that partition's rule lays out without moving rows (the
 * [T, G, S] views would hold the tokens whole). Left alone unless exactly so. */
/* op's [T, ..] result replaced by the concat of the G parts along axis 1. */
static void replace_by_columns(wf_module *m, wf_func *f, wf_op *op, const wf_value *parts, int64_t G) {
  wf_type rt = wf_rewrite_type(wf_value_type(f, op->results[0]));
  wf_op *cat = wf_op_new(f, WF_OP_CONCAT, (int)G, parts, 1, &rt, op->loc);
  wf_op_set_int(f, cat, "axis", 1);
  wf_op_insert_before(f, op, cat);
  replace_result(f, op, cat->results[0]);
}

static int group_topk(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_REDUCE_SUM || wf_op_int(f, op, "keepdims", 1) != 0) return 0;
  const wf_attr *axes = wf_op_attr(f, op, "axes");
  wf_op *tk = wf_def_of(f, op->operands[0], WF_OP_TOPK);
  if (!axes || axes->u.ints.n != 1 || !tk || tk->results[0] != op->operands[0] ||
      wf_value_use_count(f, tk->results[1]) || wf_value_use_count(f, tk->results[0]) != 1)
    return 0;
  wf_op *rs = wf_def_of(f, tk->operands[0], WF_OP_RESHAPE);
  const wf_type *t3 = wf_value_type(f, tk->operands[0]);
  int64_t ta = wf_op_int(f, tk, "axis", -1), ra = axes->u.ints.v[0];
  if (!rs || t3->rank != 3 || (ta != -1 && ta != 2) || (ra != -1 && ra != 2)) return 0;
  wf_value xv = rs->operands[0];
  const wf_type *xt = wf_value_type(f, xv);
  int64_t T = t3->dims[0], G = t3->dims[1], S = t3->dims[2], k = wf_op_int(f, tk, "k", 1);
  if (xt->rank != 2 || xt->dims[0] != T || xt->dims[1] != G * S || xt->dtype != WF_F32 || G > 64) return 0;
  wf_type st = wf_rewrite_type(xt), vt = st, it = st, ct = st;
  st.dims[1] = S, vt.dims[1] = k, it.dims[1] = k, it.dtype = WF_I64, ct.dims[1] = 1;
  wf_value parts[64];
  for (int64_t g = 0; g < G; g++) {
    wf_value sl = wf_op_insert_slice(f, op, xv, st, g * S, g * S + S, 1, 1, op->loc);
    wf_type rt[2] = {vt, it};
    wf_op *t2 = wf_op_new(f, WF_OP_TOPK, 1, &sl, 2, rt, op->loc);
    wf_op_set_int(f, t2, "k", k);
    wf_op_set_int(f, t2, "axis", -1);
    const wf_attr *lg = wf_op_attr(f, tk, "largest");
    if (lg) wf_op_set_attr(f, t2, *lg);
    wf_op_insert_before(f, op, t2);
    wf_op *su = wf_op_new(f, WF_OP_REDUCE_SUM, 1, &t2->results[0], 1, &ct, op->loc);
    int64_t last = -1;
    wf_op_set_ints(f, su, "axes", 1, &last);
    wf_op_set_attr(f, su, (wf_attr){wf_intern(m, "keepdims"), WF_ATTR_BOOL, {.i = 1}});
    wf_op_insert_before(f, op, su);
    parts[g] = su->results[0];
  }
  replace_by_columns(m, f, op, parts, G);
  wf_op_unlink(f, tk);
  unlink_if_dead(f, rs);
  return 1;
}

static int group_expand(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_RESHAPE) return 0;
  wf_op *ex = wf_def_of(f, op->operands[0], WF_OP_EXPAND);
  wf_op *un = ex ? wf_def_of(f, ex->operands[0], WF_OP_RESHAPE) : NULL;
  if (!un || wf_value_use_count(f, ex->results[0]) != 1) return 0;
  const wf_type *rt = wf_value_type(f, op->results[0]), *et = wf_value_type(f, ex->results[0]);
  wf_value mv = un->operands[0];
  const wf_type *mt = wf_value_type(f, mv);
  if (mt->rank != 2 || et->rank != 3 || rt->rank != 2 || !inserts_one(mt, wf_value_type(f, un->results[0]), 2)) return 0;
  int64_t T = mt->dims[0], G = mt->dims[1], S = et->dims[2];
  if (et->dims[0] != T || et->dims[1] != G || rt->dims[0] != T || rt->dims[1] != G * S || G > 64) return 0;
  wf_type colt = wf_rewrite_type(mt), wt = colt;
  colt.dims[1] = 1, wt.dims[1] = S;
  wf_value parts[64];
  for (int64_t g = 0; g < G; g++) {
    wf_value c = wf_op_insert_slice(f, op, mv, colt, g, g + 1, 1, 1, op->loc);
    parts[g] = wf_op_insert_new(f, op, WF_OP_EXPAND, 1, &c, wt, op->loc);
  }
  replace_by_columns(m, f, op, parts, G);
  unlink_if_dead(f, ex);
  unlink_if_dead(f, un);
  return 1;
}

static int grouped_gate(wf_module *m, wf_func *f, wf_op *op) { return group_topk(m, f, op) || group_expand(m, f, op); }

int wf_partition_moe_groups(wf_module *m, wf_func *f) { return each_op(m, f, grouped_gate); }
