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
 * view of the rows (DeepSeek's combine). */
#include "passes/decompose.h"

static wf_op *def_of(const wf_func *f, wf_value v, wf_opcode code) {
  const wf_value_info *vi = &f->values[v];
  return vi->kind == WF_VAL_RESULT && vi->def && vi->def->code == code ? vi->def : NULL;
}

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

/* slice(v, start:end:step) along axis, of type t, before op. */
static wf_value slice_before(wf_func *f, wf_op *op, wf_value v, const wf_type *t, int64_t start, int64_t end,
                             int64_t axis, int64_t step) {
  wf_op *sl = wf_op_new(f, WF_OP_SLICE, 1, &v, 1, t, op->loc);
  wf_op_set_ints(f, sl, "starts", 1, &start);
  wf_op_set_ints(f, sl, "ends", 1, &end);
  wf_op_set_ints(f, sl, "axes", 1, &axis);
  wf_op_set_ints(f, sl, "steps", 1, &step);
  wf_op_insert_before(f, op, sl);
  return sl->results[0];
}

/* Replaces the reduce_sum op by sum_i slice(gates gv, i, i + 1, last axis) * ev[i], in order,
 * keeping its name; the reduce is unlinked. */
static void weighted_sum(wf_module *m, wf_func *f, wf_op *op, wf_value gv, const wf_value *ev, int64_t N) {
  const wf_type *gt = wf_value_type(f, gv);
  wf_type yt = wf_rewrite_type(wf_value_type(f, op->results[0])), colt = wf_rewrite_type(gt);
  colt.dims[colt.rank - 1] = 1;
  wf_value acc = 0;
  for (int64_t i = 0; i < N; i++) {
    wf_value mo[2] = {slice_before(f, op, gv, &colt, i, i + 1, gt->rank - 1, 1), ev[i]};
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
  wf_value old = op->results[0];
  wf_value_replace_uses(f, old, acc);
  if (f->values[old].name) wf_value_set_name(f, acc, wf_str(m, f->values[old].name));
  wf_op_unlink(f, op);
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
    rx = def_of(f, mul->operands[s], WF_OP_RESHAPE);
    gr = def_of(f, mul->operands[1 - s], WF_OP_RESHAPE);
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
  for (int64_t j = 0; j < K; j++) ev[j] = slice_before(f, op, xv, &rowt, j, T * K, 0, K);
  weighted_sum(m, f, op, gv, ev, K);
  unlink_if_dead(f, mul);
  unlink_if_dead(f, gr);
  unlink_if_dead(f, rx);
  return 1;
}

int wf_partition_moe_combine(wf_module *m, wf_func *f) {
  int n = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    if (op->code != WF_OP_REDUCE_SUM || wf_op_int(f, op, "keepdims", 1) != 0) continue;
    const wf_attr *axes = wf_op_attr(f, op, "axes");
    wf_op *mul = def_of(f, op->operands[0], WF_OP_MUL);
    if (!axes || axes->u.ints.n != 1 || !mul || wf_value_use_count(f, mul->results[0]) != 1) continue;
    const wf_type *st = wf_value_type(f, mul->results[0]);
    int r = st->rank, a = (int)(axes->u.ints.v[0] < 0 ? axes->u.ints.v[0] + r : axes->u.ints.v[0]);
    if (r < 3 || a != r - 2 || st->dtype != WF_F32) continue;
    wf_op *cat = NULL, *gr = NULL;
    for (int s = 0; s < 2 && !cat; s++) {
      cat = def_of(f, mul->operands[s], WF_OP_CONCAT);
      gr = def_of(f, mul->operands[1 - s], WF_OP_RESHAPE);
      if (!cat || !gr) cat = NULL;
    }
    if (!cat) {
      n += rows_combine(m, f, op, mul, st);
      continue;
    }
    int64_t cax = wf_op_int(f, cat, "axis", 0);
    const wf_type *ct = wf_value_type(f, cat->results[0]), *g3 = wf_value_type(f, gr->results[0]);
    wf_value gv = gr->operands[0];
    const wf_type *gt = wf_value_type(f, gv);
    int64_t N = st->dims[a];
    if ((cax < 0 ? cax + r : cax) != a || ct->rank != r || ct->dims[a] != N || cat->n_operands != N ||
        !inserts_one(gt, g3, r - 1) || g3->dims[a] != N || gt->dtype != WF_F32)
      continue;
    /* the mul must not broadcast the stack itself: S and the product have one shape */
    int same = 1;
    for (int d = 0; d < r; d++) same &= ct->dims[d] == st->dims[d];
    wf_value ev[64];
    int ok = same && N <= 64;
    for (int i = 0; ok && i < N; i++) {
      wf_op *rs = def_of(f, cat->operands[i], WF_OP_RESHAPE);
      ok = rs && inserts_one(wf_value_type(f, rs->operands[0]), wf_value_type(f, cat->operands[i]), a);
      if (ok) ev[i] = rs->operands[0];
    }
    if (!ok) continue;
    weighted_sum(m, f, op, gv, ev, N);
    unlink_if_dead(f, mul);
    unlink_if_dead(f, gr);
    if (wf_value_use_count(f, cat->results[0]) == 0) {
      wf_op *rs[64];
      for (int i = 0; i < N; i++) rs[i] = def_of(f, cat->operands[i], WF_OP_RESHAPE);
      wf_op_unlink(f, cat);
      for (int i = 0; i < N; i++) unlink_if_dead(f, rs[i]);
    }
    n++;
  }
  return n;
}
