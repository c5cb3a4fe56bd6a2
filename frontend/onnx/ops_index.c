/* Importers of Trilu, TopK, ScatterElements, GatherElements (IR ops trilu, topk,
 * scatter_elements, gather_elements) and OneHot (compares and wheres). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

int ox_imp_trilu(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t k = 0;
  if (n->n_in > 1 && n->in[1]) {
    int64_t *kv;
    int cnt;
    int rc = ox_in_ints(n, 1, "k", &kv, &cnt);
    if (rc) return rc;
    if (cnt != 1) {
      free(kv);
      ox_err(n, "input 1 (k) must hold one element");
      return WF_EXIT_INPUT;
    }
    k = kv[0];
    free(kv);
  }
  int upper = ox_attr_int(n, "upper", 1) != 0;
  if (n->failed) return WF_EXIT_INPUT;
  ox_attrv at[2] = {OX_A_BOOL("upper", upper), OX_A_INT("k", k)};
  ox_val *r = ox_emit1(n, WF_OP_TRILU, 1, &x, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_topk(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t k;
  if (n->opset < 10) {
    if (!ox_attr(n, "k")) {
      ox_err(n, "attribute 'k' is required");
      return WF_EXIT_INPUT;
    }
    k = ox_attr_int(n, "k", 0);
  } else {
    int64_t *kv;
    int cnt;
    int rc = ox_in_ints(n, 1, "K", &kv, &cnt);
    if (rc) return rc;
    if (cnt != 1) {
      free(kv);
      ox_err(n, "input 1 (K) must hold one element");
      return WF_EXIT_INPUT;
    }
    k = kv[0];
    free(kv);
  }
  ox_attrv at[4] = {OX_A_INT("k", k), OX_A_INT("axis", ox_attr_int(n, "axis", -1)),
                    OX_A_BOOL("largest", ox_attr_int(n, "largest", 1)), OX_A_BOOL("sorted", ox_attr_int(n, "sorted", 1))};
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *outs[2];
  int rc = ox_emit(n, WF_OP_TOPK, 1, &x, 4, at, 2, NULL, outs);
  if (rc) return rc;
  ox_set_out(n, 0, outs[0]);
  return ox_set_out(n, 1, outs[1]);
}

/* The reduction attribute of a scatter, checked against the opset; NULL after reporting. */
static const char *scatter_reduction(ox_nctx *n) {
  const char *red = ox_attr_str(n, "reduction", "none");
  if (n->failed) return NULL;
  int ok = !strcmp(red, "none") || (n->opset >= 16 && (!strcmp(red, "add") || !strcmp(red, "mul"))) ||
           (n->opset >= 18 && (!strcmp(red, "max") || !strcmp(red, "min")));
  if (!ok) {
    ox_err(n, "reduction '%s' is not defined at this opset", red);
    return NULL;
  }
  return red;
}

/* scatter_elements of ins (data, indices, updates) along axis, as output 0. */
static int scatter_out(ox_nctx *n, ox_val **ins, int64_t axis, const char *red) {
  char redbuf[16];
  snprintf(redbuf, sizeof redbuf, "%s", red);
  int rc = ox_list_scatter(n, ins, axis, redbuf, sizeof redbuf); /* NonZero's list ends here */
  if (rc) return rc;
  ox_attrv at[2] = {OX_A_INT("axis", axis), OX_A_IDENT("reduction", redbuf)};
  ox_val *r = ox_emit1(n, WF_OP_SCATTER_ELEMENTS, 3, ins, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_scatter(ox_nctx *n) {
  ox_val *ins[3] = {ox_in(n, 0), ox_in(n, 1), ox_in(n, 2)};
  if (!ins[0] || !ins[1] || !ins[2]) return WF_EXIT_INPUT;
  const char *red = scatter_reduction(n);
  int64_t axis = ox_attr_int(n, "axis", 0);
  if (!red || n->failed) return WF_EXIT_INPUT;
  return scatter_out(n, ins, axis, red);
}

/* ScatterND whose indices pick along the first dim only (their last dim is 1: torch's
 * `y[idx] = v` and index_put_): ScatterElements along axis 0, each index repeated over the
 * rest of its row. Indices of more dims are not imported. */
int ox_imp_scatter_nd(ox_nctx *n) {
  ox_val *data = ox_in(n, 0), *idx = ox_in(n, 1), *upd = ox_in(n, 2);
  if (!data || !idx || !upd) return WF_EXIT_INPUT;
  const char *red = scatter_reduction(n);
  if (!red) return WF_EXIT_INPUT;
  int r = data->type.rank, ri = idx->type.rank;
  if (r < 1 || ri < 1) {
    ox_err(n, "data and indices need a rank of at least 1, got %s and %s", ox_shape_str(&data->type), ox_shape_str(&idx->type));
    return WF_EXIT_INPUT;
  }
  if (idx->type.dims[ri - 1] != 1)
    return ox_unsupported(n, "indices %s address %lld dims; only 1 (rows of data) is imported",
                          ox_shape_str(&idx->type), (long long)idx->type.dims[ri - 1]);
  int64_t cnt = 1;
  for (int i = 0; i < ri - 1; i++) cnt *= idx->type.dims[i];
  int ok = upd->type.rank == ri - 1 + r - 1;
  for (int i = 0; ok && i < ri - 1; i++) ok = upd->type.dims[i] == idx->type.dims[i];
  for (int i = 1; ok && i < r; i++) ok = upd->type.dims[ri - 2 + i] == data->type.dims[i];
  if (!ok) {
    ox_err(n, "updates %s do not have the shape indices %s and data %s give", ox_shape_str(&upd->type),
           ox_shape_str(&idx->type), ox_shape_str(&data->type));
    return WF_EXIT_INPUT;
  }
  int64_t col[WF_MAX_RANK], full[WF_MAX_RANK];
  col[0] = full[0] = cnt;
  for (int i = 1; i < r; i++) {
    col[i] = 1;
    full[i] = data->type.dims[i];
  }
  ox_val *ic = ox_list_retag(n, ox_reshape(n, idx, r, col), idx);
  wf_type t = wf_type_make(idx->type.dtype, r, full);
  ox_val *ie = ic ? ox_list_retag(n, ox_emit1(n, WF_OP_EXPAND, 1, &ic, 0, NULL, &t), idx) : NULL;
  ox_val *u = ox_list_retag(n, ox_reshape(n, upd, r, full), upd);
  if (!ie || !u) return WF_EXIT_INPUT;
  ox_val *ins[3] = {data, ie, u};
  return scatter_out(n, ins, 0, red);
}

int ox_imp_gather_elements(ox_nctx *n) {
  ox_val *ins[2] = {ox_in(n, 0), ox_in(n, 1)};
  if (!ins[0] || !ins[1]) return WF_EXIT_INPUT;
  ox_attrv at = OX_A_INT("axis", ox_attr_int(n, "axis", 0));
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *r = ox_emit1(n, WF_OP_GATHER_ELEMENTS, 2, ins, 1, &at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

/* Element i of the vector v, rank 0: a constant bit for bit (an i64 past 2^53 too) when v is
 * one, else a gather. */
static ox_val *element(ox_nctx *n, ox_val *v, int64_t i) {
  if (!v->k) {
    ox_val *ins[2] = {v, ox_scalar(n, WF_I64, (double)i)};
    return ox_emit1(n, WF_OP_GATHER, 2, ins, 0, NULL, NULL);
  }
  wf_tensor *e = wf_tensor_new(v->k->dtype, 0, NULL);
  size_t sz = wf_dtype_size(v->k->dtype);
  memcpy(e->data, (const char *)v->k->data + (size_t)i * sz, sz);
  return ox_const_new(n->cx, e);
}

/* OneHot(indices, depth, values) {axis}: the output has a new dim of `depth` at axis, holding
 * values[1] where the index is the position j along it, or j - depth (a negative index counts
 * from the end), and values[0] elsewhere (an index outside [-depth, depth) matches nothing).
 * Emitted as the indices (as i64, the new dim of 1 inserted) compared with the constants
 * 0..depth-1 and -depth..-1 laid along axis, and two wheres; depth is a constant. */
int ox_imp_onehot(ox_nctx *n) {
  ox_val *idx = ox_in(n, 0), *dep = ox_in(n, 1), *val = ox_in(n, 2);
  if (!idx || !dep || !val) return WF_EXIT_INPUT;
  if (!dep->k) return ox_unsupported(n, "depth must be a constant once shapes are known");
  if (wf_tensor_numel(dep->k) != 1 || dep->k->dtype == WF_BOOL) {
    ox_err(n, "depth must be one number, got %s", ox_shape_str(&dep->type));
    return WF_EXIT_INPUT;
  }
  if (val->type.rank != 1 || val->type.dims[0] != 2) {
    ox_err(n, "values must be [off_value, on_value], got %s", ox_shape_str(&val->type));
    return WF_EXIT_INPUT;
  }
  if (idx->type.dtype == WF_BOOL) {
    ox_err(n, "indices must be numbers, got bool");
    return WF_EXIT_INPUT;
  }
  double dd = wf_tensor_get(dep->k, 0); /* a non-integer depth is cast to int64 (truncated) */
  int r = idx->type.rank;
  int64_t axis = ox_attr_int(n, "axis", -1);
  if (n->failed) return WF_EXIT_INPUT;
  if (!(dd >= 1 && dd <= (double)OX_HOST_BYTES_MAX)) {
    ox_err(n, "depth must be at least 1 and at most %lld, got %g", (long long)OX_HOST_BYTES_MAX, dd);
    return WF_EXIT_INPUT;
  }
  if (axis < -r - 1 || axis > r) {
    ox_err(n, "axis %lld is outside [%d, %d] for indices of rank %d", (long long)axis, -r - 1, r, r);
    return WF_EXIT_INPUT;
  }
  if (r + 1 > WF_MAX_RANK) return ox_unsupported(n, "the output's rank would be %d (the IR has at most %d)", r + 1, WF_MAX_RANK);
  int64_t depth = (int64_t)dd, a = axis < 0 ? axis + r + 1 : axis, ud[WF_MAX_RANK], pd[WF_MAX_RANK];
  if (ox_host_budget(n->cx, 2 * depth * (int64_t)sizeof(int64_t))) {
    ox_err(n, "a depth of %lld is past what the importer makes on the host (" OX_HOST_BUDGET_TEXT " over the import)",
           (long long)depth);
    return WF_EXIT_INPUT;
  }
  for (int d = 0; d <= r; d++) {
    ud[d] = d == a ? 1 : idx->type.dims[d < a ? d : d - 1];
    pd[d] = d == a ? depth : 1;
  }
  ox_val *i64 = ox_cast(n, idx, WF_I64), *u = i64 ? ox_reshape(n, i64, r + 1, ud) : NULL;
  wf_tensor *kp = wf_tensor_new(WF_I64, r + 1, pd), *kn = wf_tensor_new(WF_I64, r + 1, pd);
  for (int64_t j = 0; j < depth; j++) ((int64_t *)kp->data)[j] = j, ((int64_t *)kn->data)[j] = j - depth;
  ox_val *pos = ox_const_new(n->cx, kp), *neg = ox_const_new(n->cx, kn);
  ox_val *off = element(n, val, 0), *on = element(n, val, 1);
  if (!u || !off || !on) return WF_EXIT_INPUT;
  ox_val *e1 = ox_emit1(n, WF_OP_EQUAL, 2, (ox_val *[]){u, pos}, 0, NULL, NULL);
  ox_val *e2 = e1 ? ox_emit1(n, WF_OP_EQUAL, 2, (ox_val *[]){u, neg}, 0, NULL, NULL) : NULL;
  ox_val *w2 = e2 ? ox_emit1(n, WF_OP_WHERE, 3, (ox_val *[]){e2, on, off}, 0, NULL, NULL) : NULL;
  ox_val *w1 = w2 ? ox_emit1(n, WF_OP_WHERE, 3, (ox_val *[]){e1, on, w2}, 0, NULL, NULL) : NULL;
  return w1 ? ox_set_out(n, 0, w1) : WF_EXIT_INPUT;
}
