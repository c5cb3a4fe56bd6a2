/* Indexing by computed positions, for the partition pass: what a sparse (token-dispatching)
 * MoE block writes. PyTorch's expert-choice or capacity-bound dispatch
 *
 *   idx = topk(probs.t(), C).indices            # [N, C]: each expert's tokens
 *   xi  = x[idx[i]]                             # Gather of x's rows by computed ids
 *   y   = y.index_add(0, idx[i], expert_i(xi) * w[i, :, None])
 *
 * exports as gather(idx, i) (a rank-0 constant index), gather(x, ids) along axis 0 and
 * scatter_elements(zeros, expand(ids), updates) along axis 0. The mesh lowers a gather of a
 * constant table's rows by token ids (lower_index.c) and gather_elements / scatter_elements
 * along the last axis (lower_topk.c), so before layouts are assigned:
 *
 *   gather(x, k), k a rank-0 constant   -> reshape(slice(x, k:k+1))         (the axis dropped)
 *   gather(x, ids) [C, E], x computed    -> transpose(gather_elements(transpose(x),
 *                                            expand(ids as [1, C]) [E, C], last axis))
 *   gather(x [T], ids) [C], x computed   -> gather_elements(x as [1, T], ids as [1, C]) as [C]
 *   scatter_elements(d, i, u), axis 0,    -> transpose(scatter_elements(transpose(d),
 *     rank 2                                  transpose(i), transpose(u), last axis))
 *   gather_elements(d, i), axis 0, rank 2 -> transpose(gather_elements(transpose(d),
 *                                            transpose(i), last axis))
 *
 * (torch's x.gather(0, ids[:, None].expand(-1, E)) and y.scatter_add(0, the same, u) are the
 * last two.)
 *
 * Numerically the same ops (gather_elements and scatter_elements select, they do not add
 * unless the reduction does). The transposes are small fabric transposes of the [T, E]
 * activations. Any other shape is left for partition to refuse by name. */
#include "passes/decompose.h"
#include "waferc/tensor.h"

static wf_type swapped(const wf_type *t) {
  wf_type r = wf_rewrite_type(t);
  r.dims[0] = t->dims[1], r.dims[1] = t->dims[0];
  return r;
}

static wf_value transpose2(wf_func *f, wf_op *pos, wf_value v) {
  wf_value r = wf_op_insert_new(f, pos, WF_OP_TRANSPOSE, 1, &v, swapped(wf_value_type(f, v)), pos->loc);
  static const int64_t perm[2] = {1, 0};
  wf_op_set_ints(f, f->values[r].def, "perm", 2, perm);
  return r;
}

/* old's uses read new instead, and new takes old's name (a returned value keeps its name in
 * the plan's outputs). */

static int normal_axis(const wf_func *f, const wf_op *op, int rank) {
  int64_t a = wf_op_int(f, op, "axis", 0);
  return (int)(a < 0 ? a + rank : a);
}

static int is_int(wf_dtype d) { return d == WF_I64 || d == WF_I32; }

/* gather(x, k) with k a rank-0 constant in range -> reshape(slice(x, k:k+1)) */
static int scalar_index(wf_module *m, wf_func *f, wf_op *op) {
  const wf_value_info *iv = &f->values[op->operands[1]];
  const wf_type *xt = wf_value_type(f, op->operands[0]);
  if (iv->kind != WF_VAL_GLOBAL || iv->type.rank != 0 || xt->rank < 1) return 0;
  int axis = normal_axis(f, op, xt->rank);
  if (axis < 0 || axis >= xt->rank) return 0;
  wf_tensor *t = wf_global_tensor(m, iv->index);
  if (!t) return 0;
  int64_t k = (int64_t)wf_tensor_get(t, 0);
  wf_tensor_free(t);
  if (k < 0) k += xt->dims[axis];
  if (k < 0 || k >= xt->dims[axis]) return 0; /* the interpreter's to report */
  wf_type st = wf_rewrite_type(xt);
  st.dims[axis] = 1;
  wf_value sv = wf_op_insert_slice(f, op, op->operands[0], st, k, k + 1, axis, 1, op->loc);
  wf_value rv = wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &sv, wf_rewrite_type(wf_value_type(f, op->results[0])), op->loc);
  wf_value_replace_named(f, op->results[0], rv);
  return 1;
}

/* t as a [1, n] row */
static wf_value as_row(wf_func *f, wf_op *pos, wf_value v) {
  wf_type r = wf_rewrite_type(wf_value_type(f, v));
  r.rank = 2, r.dims[1] = r.dims[0], r.dims[0] = 1;
  return wf_op_insert_new(f, pos, WF_OP_RESHAPE, 1, &v, r, pos->loc);
}

/* gather(x, ids [C]) along axis 0 of a computed x: [T, E] -> [C, E] by gather_elements on
 * x^T with the ids expanded over E; [T] -> [C] by gather_elements on x as a row */
static int computed_rows(wf_module *m, wf_func *f, wf_op *op) {
  wf_value xv = op->operands[0], iv = op->operands[1];
  const wf_type *xt = wf_value_type(f, xv), *it = wf_value_type(f, iv);
  /* (at most 4096 rows: gather_elements' axis, lower_topk.c; a larger table keeps the gather's
   * own message) */
  if (f->values[xv].kind == WF_VAL_GLOBAL || xt->rank > 2 || it->rank != 1 || !is_int(it->dtype) ||
      normal_axis(f, op, xt->rank) != 0 || xt->dims[0] > 4096)
    return 0;
  int64_t C = it->dims[0], E = xt->rank == 2 ? xt->dims[1] : 1;
  wf_value data = xt->rank == 2 ? transpose2(f, op, xv) : as_row(f, op, xv), ie = as_row(f, op, iv);
  if (E > 1) {
    wf_type ex = wf_rewrite_type(wf_value_type(f, ie));
    ex.dims[0] = E;
    ie = wf_op_insert_new(f, op, WF_OP_EXPAND, 1, &ie, ex, op->loc);
  }
  wf_type gt = wf_rewrite_type(xt);
  gt.rank = 2, gt.dims[0] = E, gt.dims[1] = C;
  wf_value ops[2] = {data, ie};
  wf_value g = wf_op_insert_new(f, op, WF_OP_GATHER_ELEMENTS, 2, ops, gt, op->loc);
  wf_op_set_int(f, f->values[g].def, "axis", 1);
  wf_value r = xt->rank == 2 ? transpose2(f, op, g)
                             : wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &g, wf_rewrite_type(wf_value_type(f, op->results[0])),
                                                op->loc);
  wf_value_replace_named(f, op->results[0], r);
  return 1;
}

/* scatter_elements(d [T, E], i [C, E], u [C, E]) or gather_elements(d [T, E], i [C, E]) along
 * axis 0 (torch's index_add, scatter_add, x.gather(0, ids expanded over E)) -> the same op
 * along the last axis of the operands' transposes, transposed back */
static int rows_on_transposes(wf_func *f, wf_op *op) {
  const wf_type *dt = wf_value_type(f, op->operands[0]);
  if (dt->rank != 2 || wf_value_type(f, op->operands[1])->rank != 2 || normal_axis(f, op, 2) != 0) return 0;
  wf_value ops[3];
  int n = op->n_operands < 3 ? op->n_operands : 3;
  for (int i = 0; i < n; i++) ops[i] = transpose2(f, op, op->operands[i]);
  wf_value s = wf_op_insert_new(f, op, op->code, n, ops, swapped(wf_value_type(f, op->results[0])), op->loc);
  wf_op *sc = f->values[s].def;
  wf_op_set_int(f, sc, "axis", 1);
  const char *red = wf_op_str(f, op, "reduction", NULL);
  if (red) wf_op_set_str(f, sc, "reduction", red);
  wf_value_replace_named(f, op->results[0], transpose2(f, op, s));
  return 1;
}

int wf_partition_dispatch(wf_module *m, wf_func *f) {
  int n = 0;
  wf_func_foreach_op(f, op) {
    if (op->code == WF_OP_GATHER) n += scalar_index(m, f, op) || computed_rows(m, f, op);
    else if (op->code == WF_OP_SCATTER_ELEMENTS || op->code == WF_OP_GATHER_ELEMENTS) n += rows_on_transposes(f, op);
  }
  if (n) wf_func_remove_dead_ops(f);
  return n;
}
