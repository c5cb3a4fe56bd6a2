/* Emitting IR ops for a node, with constant folding.
 *
 * Result types come from the op table's shape rules (wf_infer_result_types), so the importer
 * infers shapes with exactly the rules the verifier checks. An op whose operands are all host
 * constants is not emitted: it is built into a one-op scratch function and run by the
 * reference interpreter (wf_interpret), and its results become constants. That is how the
 * exporters' shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ...) vanish
 * once the input shapes are fixed, with the same kernels that define the ops' semantics. */
#include <stdint.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

#define MAX_RES 64
#define OX_NOT_FOLDED (-1)

static void apply_attrs(wf_func *f, wf_op *op, int n_attr, const ox_attrv *attrs) {
  for (int i = 0; i < n_attr; i++) {
    const ox_attrv *a = &attrs[i];
    switch (a->kind) {
    case WF_ATTR_INT: wf_op_set_int(f, op, a->name, a->i); break;
    case WF_ATTR_FLOAT: wf_op_set_float(f, op, a->name, a->f); break;
    case WF_ATTR_IDENT: wf_op_set_ident(f, op, a->name, a->s); break;
    case WF_ATTR_STR: wf_op_set_str(f, op, a->name, a->s); break;
    case WF_ATTR_INTS: wf_op_set_ints(f, op, a->name, a->n, a->ints); break;
    case WF_ATTR_BOOL: {
      wf_attr at;
      memset(&at, 0, sizeof at);
      at.name = wf_intern(f->module, a->name);
      at.kind = WF_ATTR_BOOL;
      at.u.i = a->i != 0;
      wf_op_set_attr(f, op, at);
      break;
    }
    default: WF_UNREACHABLE("attribute kind");
    }
  }
}

/* Creates op (unlinked) in f and infers its result types into the values. */
static wf_op *build(ox_nctx *n, wf_func *f, wf_opcode code, int n_in, const wf_value *ops, int n_attr,
                    const ox_attrv *attrs, int n_res, const wf_type *decl, wf_type *inferred) {
  wf_type tmp[MAX_RES];
  for (int r = 0; r < n_res; r++) tmp[r] = decl ? decl[r] : wf_type_make(WF_F32, 0, NULL);
  wf_op *op = wf_op_new(f, code, n_in, ops, n_res, tmp, n->eloc);
  apply_attrs(f, op, n_attr, attrs);
  if (wf_infer_result_types(f, op, inferred) != 0) return NULL;
  for (int r = 0; r < n_res; r++)
    if (!wf_dims_fit(inferred[r].rank, inferred[r].dims)) {
      ox_err(n, "result %d would be %s: a tensor holds at most 2^40 elements (zero dims aside)", r,
             ox_shape_str(&inferred[r]));
      return NULL;
    }
  for (int r = 0; r < n_res; r++) *wf_value_type(f, op->results[r]) = inferred[r];
  return op;
}

static int fold(ox_nctx *n, wf_opcode code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                int n_res, const wf_type *decl, ox_val **out) {
  if (ox_memo_find(n->cx, (int)code, n_in, in, n_attr, attrs, decl, n_res, out)) return WF_EXIT_OK;
  wf_module *sm = wf_module_new();
  wf_func *sf = wf_func_new(sm, "fold", n->eloc);
  wf_value args[64];
  wf_tensor *ks[64];
  WF_ASSERT(n_in <= 64);
  for (int i = 0; i < n_in; i++) {
    args[i] = wf_func_add_arg(sf, in[i]->type, NULL);
    ks[i] = in[i]->k;
  }
  wf_type inferred[MAX_RES];
  int rc = WF_EXIT_INPUT;
  wf_op *op = build(n, sf, code, n_in, args, n_attr, attrs, n_res, decl, inferred);
  /* Folding may not grow the constants without bound: results larger than their operands (an
   * Expand of three numbers to 10^9 elements, say) take the growth in bytes from the import's
   * budget (ox_host_budget); past it, the op stays an op, so a file of a kilobyte cannot make
   * the importer allocate gigabytes, and what does not fit the mesh is refused where sizes are
   * checked. Shape subgraphs, masks and a weight's Transpose or Cast fold as before. */
  int64_t in_bytes = 0, out_bytes = 0;
  for (int i = 0; i < n_in; i++) in_bytes += (int64_t)wf_tensor_bytes(ks[i]);
  for (int r = 0; op && r < n_res; r++) {
    int64_t e = (int64_t)wf_dtype_size(inferred[r].dtype); /* without overflow: a hostile shape saturates */
    for (int d = 0; d < inferred[r].rank; d++) {
      int64_t v = inferred[r].dims[d];
      e = v < 0 || (v > 0 && e > INT64_MAX / v) ? INT64_MAX : e * v;
    }
    out_bytes = out_bytes > INT64_MAX - e ? INT64_MAX : out_bytes + e;
  }
  if (op && out_bytes > in_bytes && ox_host_budget(n->cx, out_bytes - in_bytes)) {
    wf_module_free(sm);
    return OX_NOT_FOLDED;
  }
  if (op) {
    wf_op_insert_before(sf, NULL, op);
    wf_op_append(sf, WF_OP_RETURN, n_res, op->results, 0, NULL, n->eloc);
    wf_func_set_result_types(sf, n_res, inferred);
    wf_tensor *outs[MAX_RES];
    int got = 0;
    if (wf_interpret(sm, "fold", n_in, ks, outs, n_res, &got) == 0 && got == n_res) {
      for (int r = 0; r < n_res; r++) out[r] = ox_const_new(n->cx, outs[r]);
      ox_memo_add(n->cx, (int)code, n_in, in, n_attr, attrs, decl, n_res, out);
      rc = WF_EXIT_OK;
    }
  }
  wf_module_free(sm);
  return rc;
}

int ox_emit(ox_nctx *n, wf_opcode code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
            int n_res, const wf_type *decl, ox_val **out) {
  WF_ASSERT(n_res <= MAX_RES);
  int all_const = n_in > 0;
  for (int i = 0; i < n_in; i++) all_const &= in[i]->k != NULL;
  if (all_const) {
    int rc = fold(n, code, n_in, in, n_attr, attrs, n_res, decl, out);
    if (rc != OX_NOT_FOLDED) return rc;
  }
  wf_func *f = ox_func(n->cx);
  wf_value ops[64];
  wf_value *opv = n_in <= 64 ? ops : wf_arena_alloc(f->module->arena, (size_t)n_in * sizeof *opv);
  for (int i = 0; i < n_in; i++) opv[i] = ox_ir_value(n, in[i]);
  wf_type inferred[MAX_RES];
  wf_op *op = build(n, f, code, n_in, opv, n_attr, attrs, n_res, decl, inferred);
  if (!op) return WF_EXIT_INPUT;
  op->loc = n->oploc;
  wf_op_insert_before(f, NULL, op);
  for (int r = 0; r < n_res; r++) {
    out[r] = ox_val_new(n->cx, &inferred[r]);
    out[r]->v = op->results[r];
  }
  return WF_EXIT_OK;
}

ox_val *ox_emit1(ox_nctx *n, wf_opcode code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                 const wf_type *decl) {
  ox_val *out = NULL;
  return ox_emit(n, code, n_in, in, n_attr, attrs, 1, decl, &out) == 0 ? out : NULL;
}

ox_val *ox_reshape(ox_nctx *n, ox_val *x, int rank, const int64_t *dims) {
  wf_type t = wf_type_make(x->type.dtype, rank, dims);
  if (wf_type_same_shape(&t, &x->type)) return x;
  return ox_emit1(n, WF_OP_RESHAPE, 1, &x, 0, NULL, &t);
}

ox_val *ox_cast(ox_nctx *n, ox_val *x, wf_dtype to) {
  if (x->type.dtype == to) return x;
  ox_attrv a = OX_A_IDENT("to", wf_dtype_name(to));
  return ox_emit1(n, WF_OP_CAST, 1, &x, 1, &a, NULL);
}

ox_val *ox_transpose(ox_nctx *n, ox_val *x, int rank, const int64_t *perm) {
  int identity = 1;
  for (int i = 0; i < rank; i++) identity &= perm[i] == i;
  if (identity && rank == x->type.rank) return x;
  ox_attrv a = OX_A_INTS("perm", rank, perm);
  return ox_emit1(n, WF_OP_TRANSPOSE, 1, &x, 1, &a, NULL);
}

ox_val *ox_scalar(ox_nctx *n, wf_dtype dt, double v) {
  wf_tensor *k = wf_tensor_new(dt, 0, NULL);
  wf_tensor_set(k, 0, v);
  return ox_const_new(n->cx, k);
}
