/* Importers of ReduceMean/ReduceSum/ReduceMax, ArgMax, Softmax and LayerNormalization. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

int ox_imp_reduce(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  const char *t = n->node->op_type;
  wf_opcode code = !strcmp(t, "ReduceMean") ? WF_OP_REDUCE_MEAN : !strcmp(t, "ReduceSum") ? WF_OP_REDUCE_SUM : WF_OP_REDUCE_MAX;
  /* axes moved from an attribute to an input: ReduceSum at 13, the others at 18 */
  int axes_as_input = n->opset >= (code == WF_OP_REDUCE_SUM ? 13 : 18);
  int64_t *axes = NULL;
  int na = -1;
  if (axes_as_input) {
    if (n->n_in > 1 && n->in[1]) {
      int rc = ox_in_ints(n, 1, "axes", &axes, &na);
      if (rc) return rc;
    }
  } else {
    const int64_t *a = ox_attr_ints(n, "axes", &na);
    if (na >= 0) {
      axes = malloc(((size_t)na + 1) * sizeof *axes);
      WF_ASSERT(axes);
      if (na) memcpy(axes, a, (size_t)na * sizeof *axes);
    }
  }
  int keep = ox_attr_int(n, "keepdims", 1) != 0;
  int noop = ox_attr_int(n, "noop_with_empty_axes", 0) != 0;
  if (n->failed) {
    free(axes);
    return WF_EXIT_INPUT;
  }
  if (na <= 0 && noop) {
    free(axes);
    return ox_set_out(n, 0, x);
  }
  int64_t all[WF_MAX_RANK];
  if (na <= 0) { /* reduce over every axis, written out so the IR says what it does */
    for (int i = 0; i < x->type.rank; i++) all[i] = i;
    na = x->type.rank;
  } else {
    memcpy(all, axes, (size_t)(na < WF_MAX_RANK ? na : WF_MAX_RANK) * sizeof *all);
    if (na > WF_MAX_RANK) {
      ox_err(n, "%d reduction axes for %s", na, ox_shape_str(&x->type));
      free(axes);
      return WF_EXIT_INPUT;
    }
  }
  free(axes);
  ox_attrv at[2] = {OX_A_INTS("axes", na, all), OX_A_BOOL("keepdims", keep)};
  ox_val *r = ox_emit1(n, code, 1, &x, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_softmax(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int rank = x->type.rank;
  int64_t ax = ox_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  if (n->failed) return WF_EXIT_INPUT;
  if (ax < -rank || ax >= rank || rank == 0) {
    ox_err(n, "axis %lld is out of range for %s", (long long)ax, ox_shape_str(&x->type));
    return WF_EXIT_INPUT;
  }
  int axis = (int)(ax < 0 ? ax + rank : ax);
  ox_val *r;
  if (n->opset >= 13 || axis == rank - 1) {
    ox_attrv at = OX_A_INT("axis", axis == rank - 1 ? -1 : axis);
    r = ox_emit1(n, WF_OP_SOFTMAX, 1, &x, 1, &at, NULL);
  } else {
    /* before opset 13 the input is seen as 2-D [prod(dims[:axis]), prod(dims[axis:])] */
    int64_t d2[2] = {1, 1};
    for (int i = 0; i < rank; i++) d2[i < axis ? 0 : 1] *= x->type.dims[i];
    ox_val *y = ox_reshape(n, x, 2, d2);
    ox_attrv at = OX_A_INT("axis", -1);
    if (y) y = ox_emit1(n, WF_OP_SOFTMAX, 1, &y, 1, &at, NULL);
    r = y ? ox_reshape(n, y, rank, x->type.dims) : NULL;
  }
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

/* The optional outputs Mean and InvStdDev = 1/sqrt(var + eps), over dims [axis, rank) with
 * kept dims; of the stash type (f32 by default). Training-mode exports use them. */
static int layernorm_stats(ox_nctx *n, ox_val *x) {
  int rank = x->type.rank;
  int64_t ax = ox_attr_int(n, "axis", -1);
  double eps = (float)ox_attr_float(n, "epsilon", 1e-5);
  if (n->failed || ax < -rank || ax >= rank) {
    if (!n->failed) ox_err(n, "axis %lld is out of range for %s", (long long)ax, ox_shape_str(&x->type));
    return -1;
  }
  int64_t axes[WF_MAX_RANK];
  int na = 0;
  for (int i = (int)(ax < 0 ? ax + rank : ax); i < rank; i++) axes[na++] = i;
  ox_attrv at[2] = {OX_A_INTS("axes", na, axes), OX_A_BOOL("keepdims", 1)};
  ox_val *xf = ox_cast(n, x, WF_F32);
  ox_val *mean = xf ? ox_emit1(n, WF_OP_REDUCE_MEAN, 1, &xf, 2, at, NULL) : NULL;
  if (!mean) return -1;
  ox_val *d[2] = {xf, mean};
  ox_val *c = ox_emit1(n, WF_OP_SUB, 2, d, 0, NULL, NULL);
  ox_val *sq[2] = {c, c};
  ox_val *c2 = c ? ox_emit1(n, WF_OP_MUL, 2, sq, 0, NULL, NULL) : NULL;
  ox_val *var = c2 ? ox_emit1(n, WF_OP_REDUCE_MEAN, 1, &c2, 2, at, NULL) : NULL;
  ox_val *ve[2] = {var, ox_scalar(n, WF_F32, eps)};
  ox_val *s = var ? ox_emit1(n, WF_OP_ADD, 2, ve, 0, NULL, NULL) : NULL;
  if (s) s = ox_emit1(n, WF_OP_SQRT, 1, &s, 0, NULL, NULL);
  if (s) s = ox_emit1(n, WF_OP_RECIPROCAL, 1, &s, 0, NULL, NULL);
  if (!s) return -1;
  ox_set_out(n, 1, mean);
  ox_set_out(n, 2, s);
  return 0;
}

int ox_imp_layernorm(ox_nctx *n) {
  ox_val *x = ox_in(n, 0), *scale = ox_in(n, 1);
  if (!x || !scale) return WF_EXIT_INPUT;
  if ((ox_out_used(n, 1) || ox_out_used(n, 2)) && layernorm_stats(n, x) != 0) return WF_EXIT_INPUT;
  ox_val *bias = n->n_in > 2 ? n->in[2] : NULL;
  if (!bias) { /* the IR's layernorm always takes a bias */
    wf_tensor *z = wf_tensor_new(scale->type.dtype, scale->type.rank, scale->type.dims);
    bias = ox_const_new(n->cx, z);
  }
  int64_t axis = ox_attr_int(n, "axis", -1);
  double eps = ox_attr_float(n, "epsilon", 1e-5);
  if (n->failed) return WF_EXIT_INPUT;
  /* epsilon is a float attribute in ONNX: keep the f32 value's exact double */
  ox_attrv at[2] = {OX_A_INT("axis", axis), OX_A_FLOAT("epsilon", (double)(float)eps)};
  ox_val *ins[3] = {x, scale, bias};
  ox_val *r = ox_emit1(n, WF_OP_LAYERNORM, 3, ins, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

/* ArgMax: the attributes map one to one (select_last_index exists from opset 12; before it
 * ties always went to the first index, its default). The result is i64. */
int ox_imp_argmax(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t axis = ox_attr_int(n, "axis", 0);
  int keep = ox_attr_int(n, "keepdims", 1) != 0;
  int last = n->opset >= 12 && ox_attr_int(n, "select_last_index", 0) != 0;
  if (n->failed) return WF_EXIT_INPUT;
  ox_attrv at[3] = {OX_A_INT("axis", axis), OX_A_BOOL("keepdims", keep), OX_A_BOOL("select_last_index", last)};
  ox_val *r = ox_emit1(n, WF_OP_ARGMAX, 1, &x, 3, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}
