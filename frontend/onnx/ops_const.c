/* Importers of the ops that make constants on the host: Constant, ConstantOfShape, Shape,
 * Size, Range. The IR has static shapes, so Shape and Size are always constants; the others
 * need constant inputs (true of exporters' shape subgraphs once input shapes are fixed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

static int out_const(ox_nctx *n, wf_tensor *k) { return ox_set_out(n, 0, ox_const_new(n->cx, k)); }

int ox_imp_constant(ox_nctx *n) {
  const Onnx__AttributeProto *a;
  if (n->node->n_attr != 1) {
    ox_err(n, "Constant needs exactly one attribute (value, value_float, ...), got %d", n->node->n_attr);
    return WF_EXIT_INPUT;
  }
  if ((a = ox_attr(n, "value"))) {
    if (!a->t) {
      ox_err(n, "attribute 'value' must be a tensor");
      return WF_EXIT_INPUT;
    }
    wf_tensor *k = ox_tensor_from_proto(a->t, ox_model_dir(n->cx), n->eloc);
    return k ? out_const(n, k) : WF_EXIT_INPUT;
  }
  if ((a = ox_attr(n, "value_float"))) {
    wf_tensor *k = wf_tensor_new(WF_F32, 0, NULL);
    ((float *)k->data)[0] = (float)ox_attr_float(n, "value_float", 0);
    return n->failed ? (wf_tensor_free(k), WF_EXIT_INPUT) : out_const(n, k);
  }
  if ((a = ox_attr(n, "value_int"))) {
    wf_tensor *k = wf_tensor_new(WF_I64, 0, NULL);
    ((int64_t *)k->data)[0] = ox_attr_int(n, "value_int", 0);
    return n->failed ? (wf_tensor_free(k), WF_EXIT_INPUT) : out_const(n, k);
  }
  if ((a = ox_attr(n, "value_floats"))) {
    int64_t len = (int64_t)a->n_floats;
    wf_tensor *k = wf_tensor_new(WF_F32, 1, &len);
    if (len) memcpy(k->data, a->floats, (size_t)len * sizeof(float));
    return out_const(n, k);
  }
  if ((a = ox_attr(n, "value_ints"))) {
    int64_t len = (int64_t)a->n_ints;
    wf_tensor *k = wf_tensor_new(WF_I64, 1, &len);
    if (len) memcpy(k->data, a->ints, (size_t)len * sizeof(int64_t));
    return out_const(n, k);
  }
  return ox_unsupported(n, "Constant attribute '%s' is not supported (strings and sparse tensors are not)",
                        n->node->attr[0]->name);
}

int ox_imp_constant_of_shape(ox_nctx *n) {
  int64_t *shape;
  int ns;
  int rc = ox_in_ints(n, 0, "shape", &shape, &ns);
  if (rc) return rc;
  int64_t numel = 1;
  for (int i = 0; i < ns; i++) {
    if (shape[i] < 0 || (shape[i] && numel > OX_HOST_BYTES_MAX / shape[i])) {
      ox_err(n, "invalid or too large shape (dim %d is %lld): the importer makes constants of at most "
                OX_HOST_BUDGET_TEXT " on the host",
             i, (long long)shape[i]);
      free(shape);
      return WF_EXIT_INPUT;
    }
    numel *= shape[i];
  }
  if (ns > WF_MAX_RANK) {
    ox_err(n, "shape of rank %d (at most %d)", ns, WF_MAX_RANK);
    free(shape);
    return WF_EXIT_INPUT;
  }
  wf_tensor *fill = NULL;
  const Onnx__AttributeProto *a = ox_attr(n, "value");
  if (a && a->t) {
    fill = ox_tensor_from_proto(a->t, ox_model_dir(n->cx), n->eloc);
    if (!fill || wf_tensor_numel(fill) != 1) {
      if (fill) ox_err(n, "attribute 'value' must hold one element");
      wf_tensor_free(fill);
      free(shape);
      return WF_EXIT_INPUT;
    }
  }
  /* made once: every layer of an export makes its own [T, T] mask from the same shape and fill
   * (host_memo.c); the key is the shape, the dtype and the fill's bits */
  wf_dtype dt = fill ? fill->dtype : WF_F32;
  size_t es = wf_dtype_size(dt);
  int64_t bits = 0;
  if (fill) memcpy(&bits, fill->data, es < sizeof bits ? es : sizeof bits);
  ox_attrv key[3] = {OX_A_INTS("shape", ns, shape), OX_A_INT("dtype", (int64_t)dt), OX_A_INT("fill", bits)};
  ox_val *made;
  if (ox_memo_find(n->cx, OX_MEMO_CONSTANT_OF_SHAPE, 0, NULL, 3, key, NULL, 1, &made)) {
    wf_tensor_free(fill);
    free(shape);
    return ox_set_out(n, 0, made);
  }
  if (numel > OX_HOST_BYTES_MAX / (int64_t)es || ox_host_budget(n->cx, numel * (int64_t)es)) {
    ox_err(n, "a constant of %lld elements (%lld bytes) is past what the importer makes on the host (" OX_HOST_BUDGET_TEXT
              " over the import)",
           (long long)numel, (long long)numel * (long long)es);
    wf_tensor_free(fill);
    free(shape);
    return WF_EXIT_INPUT;
  }
  wf_tensor *k = wf_tensor_new(dt, ns, shape);
  if (fill) {
    for (int64_t i = 0; i < numel; i++) memcpy((char *)k->data + (size_t)i * es, fill->data, es);
    wf_tensor_free(fill);
  }
  made = ox_const_new(n->cx, k);
  ox_memo_add(n->cx, OX_MEMO_CONSTANT_OF_SHAPE, 0, NULL, 3, key, NULL, 1, &made);
  free(shape);
  return ox_set_out(n, 0, made);
}

int ox_imp_shape(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t rank = x->type.rank;
  int64_t start = ox_attr_int(n, "start", 0), end = ox_attr_int(n, "end", rank);
  if (n->failed) return WF_EXIT_INPUT;
  /* opset 15: negative counts from the back, then clamp to [0, rank] */
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < 0 ? 0 : end > rank ? rank : end;
  int64_t len = end > start ? end - start : 0;
  wf_tensor *k = wf_tensor_new(WF_I64, 1, &len);
  for (int64_t i = 0; i < len; i++) ((int64_t *)k->data)[i] = x->type.dims[start + i];
  return out_const(n, k);
}

int ox_imp_size(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  wf_tensor *k = wf_tensor_new(WF_I64, 0, NULL);
  ((int64_t *)k->data)[0] = wf_type_numel(&x->type);
  return out_const(n, k);
}

int ox_imp_range(ox_nctx *n) {
  ox_val *v[3];
  for (int i = 0; i < 3; i++) {
    if (!(v[i] = ox_in(n, i))) return WF_EXIT_INPUT;
    if (!v[i]->k) return ox_unsupported(n, "input %d must be a constant once shapes are known", i);
    if (wf_tensor_numel(v[i]->k) != 1 || v[i]->k->dtype != v[0]->k->dtype) {
      ox_err(n, "start, limit and delta must be scalars of one type");
      return WF_EXIT_INPUT;
    }
  }
  wf_dtype dt = v[0]->k->dtype;
  int is_int = dt == WF_I32 || dt == WF_I64;
  double s = wf_tensor_get(v[0]->k, 0), l = wf_tensor_get(v[1]->k, 0), d = wf_tensor_get(v[2]->k, 0);
  if (d == 0 || dt == WF_BOOL) {
    ox_err(n, "delta is 0 (or the type is bool)");
    return WF_EXIT_INPUT;
  }
  double cnt = ceil((l - s) / d);
  if (!(cnt <= (double)OX_HOST_BYTES_MAX)) {
    ox_err(n, "the range has too many elements (the importer makes constants of at most " OX_HOST_BUDGET_TEXT
              " on the host)");
    return WF_EXIT_INPUT;
  }
  int64_t len = cnt > 0 ? (int64_t)cnt : 0;
  ox_val *made;
  if (ox_memo_find(n->cx, OX_MEMO_RANGE, 3, v, 0, NULL, NULL, 1, &made)) return ox_set_out(n, 0, made);
  if (ox_host_budget(n->cx, len * (int64_t)wf_dtype_size(dt))) {
    ox_err(n, "a range of %lld elements is past what the importer makes on the host (" OX_HOST_BUDGET_TEXT
              " over the import)",
           (long long)len);
    return WF_EXIT_INPUT;
  }
  wf_tensor *k = wf_tensor_new(dt, 1, &len);
  for (int64_t i = 0; i < len; i++) {
    if (is_int) {
      int64_t si = dt == WF_I64 ? ((int64_t *)v[0]->k->data)[0] : ((int32_t *)v[0]->k->data)[0];
      int64_t di = dt == WF_I64 ? ((int64_t *)v[2]->k->data)[0] : ((int32_t *)v[2]->k->data)[0];
      if (dt == WF_I64) ((int64_t *)k->data)[i] = si + i * di;
      else ((int32_t *)k->data)[i] = (int32_t)(si + i * di);
    } else {
      /* the reference accumulates start + i*delta in the type */
      wf_tensor_set(k, i, s + (double)i * d);
    }
  }
  made = ox_const_new(n->cx, k);
  ox_memo_add(n->cx, OX_MEMO_RANGE, 3, v, 0, NULL, NULL, 1, &made);
  return ox_set_out(n, 0, made);
}
