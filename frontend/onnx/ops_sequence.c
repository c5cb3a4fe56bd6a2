/* Importers of the sequence ops. A sequence is an import-time list of tensor values (ox_val
 * with is_seq): the ops that build, index and split sequences only move values around, and
 * the tensors themselves stay ordinary IR values or constants. SplitToSequence becomes a
 * split (or slices), ConcatFromSequence a concat. Positions must be constants. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

static ox_val *seq_in(ox_nctx *n, int i) {
  ox_val *v = ox_in(n, i);
  if (v && !v->is_seq) {
    ox_err(n, "input %d must be a sequence, got the tensor %s", i, ox_shape_str(&v->type));
    return NULL;
  }
  return v;
}

static ox_val *tensor_in(ox_nctx *n, int i) {
  ox_val *v = ox_in(n, i);
  if (v && v->is_seq) {
    ox_err(n, "input %d must be a tensor, got a sequence", i);
    return NULL;
  }
  return v;
}

/* Optional constant position input i: *pos = dflt when absent. Negative positions count from
 * the end; the valid range is [0, len] (insert) or [0, len) (at, erase). */
static int position(ox_nctx *n, int i, int64_t len, int64_t dflt, int allow_end, int64_t *pos) {
  *pos = dflt;
  if (i >= n->n_in || !n->in[i]) return WF_EXIT_OK;
  ox_val *v = n->in[i];
  if (v->is_seq || !v->k)
    return ox_unsupported(n, "input %d (position) must be a constant once shapes are known", i);
  if (wf_tensor_numel(v->k) != 1 || (v->k->dtype != WF_I64 && v->k->dtype != WF_I32)) {
    ox_err(n, "input %d (position) must be one int32 or int64, got %s", i, ox_shape_str(&v->type));
    return WF_EXIT_INPUT;
  }
  int64_t given = ox_int_at(v->k, 0);
  int64_t p = given < 0 ? given + len : given; /* len >= 0: no overflow */
  if (p < 0 || p > len || (p == len && !allow_end)) {
    ox_err(n, "position %lld is out of range for a sequence of %lld tensors", (long long)given, (long long)len);
    return WF_EXIT_INPUT;
  }
  *pos = p;
  return WF_EXIT_OK;
}

int ox_imp_sequence_empty(ox_nctx *n) {
  int64_t t = ox_attr_int(n, "dtype", OX_FLOAT);
  wf_dtype dt;
  int conv = 0;
  if (n->failed) return WF_EXIT_INPUT;
  if (t < 0 || t > 64 || ox_dtype_from_onnx((int32_t)t, &dt, &conv) != 0 || conv == 2)
    return ox_unsupported(n, "sequences of %s are not supported", ox_onnx_type_name((int32_t)t));
  return ox_set_out(n, 0, ox_seq_new(n->cx, dt, 0, NULL));
}

int ox_imp_sequence_construct(ox_nctx *n) {
  if (n->n_in < 1) {
    ox_err(n, "SequenceConstruct needs at least one input");
    return WF_EXIT_INPUT;
  }
  for (int i = 0; i < n->n_in; i++) {
    ox_val *v = tensor_in(n, i);
    if (!v) return WF_EXIT_INPUT;
    if (v->type.dtype != n->in[0]->type.dtype) {
      ox_err(n, "input %d is %s but input 0 is %s: a sequence holds one element type", i, ox_shape_str(&v->type),
             ox_shape_str(&n->in[0]->type));
      return WF_EXIT_INPUT;
    }
  }
  return ox_set_out(n, 0, ox_seq_new(n->cx, n->in[0]->type.dtype, n->n_in, n->in));
}

int ox_imp_sequence_insert(ox_nctx *n) {
  ox_val *s = seq_in(n, 0), *t = tensor_in(n, 1);
  if (!s || !t) return WF_EXIT_INPUT;
  if (t->type.dtype != s->type.dtype) {
    ox_err(n, "cannot insert %s into a sequence of %s", ox_shape_str(&t->type), wf_dtype_name(s->type.dtype));
    return WF_EXIT_INPUT;
  }
  int64_t p;
  int rc = position(n, 2, s->n_items, s->n_items, 1, &p);
  if (rc) return rc;
  ox_val *r = ox_seq_new(n->cx, s->type.dtype, s->n_items + 1, s->items);
  for (int64_t i = s->n_items; i > p; i--) r->items[i] = r->items[i - 1];
  r->items[p] = t;
  return ox_set_out(n, 0, r);
}

int ox_imp_sequence_erase(ox_nctx *n) {
  ox_val *s = seq_in(n, 0);
  if (!s) return WF_EXIT_INPUT;
  if (s->n_items == 0) {
    ox_err(n, "cannot erase from an empty sequence");
    return WF_EXIT_INPUT;
  }
  int64_t p;
  int rc = position(n, 1, s->n_items, s->n_items - 1, 0, &p);
  if (rc) return rc;
  ox_val *r = ox_seq_new(n->cx, s->type.dtype, s->n_items, s->items);
  for (int64_t i = p; i + 1 < s->n_items; i++) r->items[i] = r->items[i + 1];
  r->n_items--;
  return ox_set_out(n, 0, r);
}

int ox_imp_sequence_at(ox_nctx *n) {
  ox_val *s = seq_in(n, 0);
  if (!s || !ox_in(n, 1)) return WF_EXIT_INPUT;
  int64_t p;
  int rc = position(n, 1, s->n_items, 0, 0, &p);
  if (rc) return rc;
  return ox_set_out(n, 0, s->items[p]);
}

int ox_imp_sequence_length(ox_nctx *n) {
  ox_val *s = seq_in(n, 0);
  if (!s) return WF_EXIT_INPUT;
  return ox_set_out(n, 0, ox_scalar(n, WF_I64, (double)s->n_items));
}

int ox_imp_split_to_sequence(ox_nctx *n) {
  ox_val *x = tensor_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int rank = x->type.rank;
  int64_t ax = ox_attr_int(n, "axis", 0), keepdims = ox_attr_int(n, "keepdims", 1);
  if (n->failed) return WF_EXIT_INPUT;
  if (ax < -rank || ax >= rank) {
    ox_err(n, "axis %lld is out of range for %s", (long long)ax, ox_shape_str(&x->type));
    return WF_EXIT_INPUT;
  }
  int axis = (int)(ax < 0 ? ax + rank : ax);
  int64_t dim = x->type.dims[axis];
  int64_t *sizes = NULL;
  int ns = 0, rc, squeeze = 0;
  if (n->n_in > 1 && n->in[1]) {
    ox_val *sp = n->in[1];
    if (sp->is_seq || !sp->k) return ox_unsupported(n, "input 1 (split) must be a constant once shapes are known");
    if (sp->k->rank == 0) { /* chunks of one size, the last one shorter */
      int64_t each = ox_int_at(sp->k, 0);
      if (each <= 0) {
        ox_err(n, "split size %lld must be positive", (long long)each);
        return WF_EXIT_INPUT;
      }
      ns = (int)(dim / each + (dim % each != 0)); /* no dim + each - 1: each may be near INT64_MAX */
      sizes = malloc(((size_t)ns + 1) * sizeof *sizes);
      WF_ASSERT(sizes);
      for (int i = 0; i < ns; i++) sizes[i] = dim - each * i < each ? dim - each * i : each;
    } else if ((rc = ox_in_ints(n, 1, "split", &sizes, &ns)) != 0) {
      return rc;
    }
  } else { /* pieces of 1, squeezed unless keepdims */
    ns = (int)dim;
    sizes = malloc(((size_t)ns + 1) * sizeof *sizes);
    WF_ASSERT(sizes);
    for (int i = 0; i < ns; i++) sizes[i] = 1;
    squeeze = !keepdims;
  }
  int64_t total = 0;
  int negative = 0;
  for (int i = 0; i < ns; i++) {
    negative |= sizes[i] < 0;
    total += sizes[i];
  }
  if (negative || total != dim) {
    ox_err(n, "split sizes do not add up to dim %d of %s (%lld)", axis, ox_shape_str(&x->type), (long long)dim);
    free(sizes);
    return WF_EXIT_INPUT;
  }
  ox_val **items = malloc(((size_t)ns + 1) * sizeof *items);
  WF_ASSERT(items);
  rc = WF_EXIT_OK;
  if (ns == 1) {
    items[0] = x;
  } else if (ns > 1 && ns <= 64) { /* the form of Split, so raisings see the same graph */
    ox_attrv at[2] = {OX_A_INT("axis", axis), OX_A_INTS("sizes", ns, sizes)};
    rc = ox_emit(n, WF_OP_SPLIT, 1, &x, 2, at, ns, NULL, items);
  } else {
    int64_t start = 0, step = 1, ax64 = axis;
    for (int i = 0; rc == 0 && i < ns; i++) {
      int64_t end = start + sizes[i];
      ox_attrv at[4] = {OX_A_INTS("starts", 1, &start), OX_A_INTS("ends", 1, &end), OX_A_INTS("axes", 1, &ax64),
                        OX_A_INTS("steps", 1, &step)};
      if (!(items[i] = ox_emit1(n, WF_OP_SLICE, 1, &x, 4, at, NULL))) rc = WF_EXIT_INPUT;
      start = end;
    }
  }
  for (int i = 0; rc == 0 && squeeze && i < ns; i++) {
    int64_t dims[WF_MAX_RANK];
    for (int d = 0, k = 0; d < rank; d++)
      if (d != axis) dims[k++] = x->type.dims[d];
    if (!(items[i] = ox_reshape(n, items[i], rank - 1, dims))) rc = WF_EXIT_INPUT;
  }
  if (rc == 0) rc = ox_set_out(n, 0, ox_seq_new(n->cx, x->type.dtype, ns, items));
  free(items);
  free(sizes);
  return rc;
}

int ox_imp_concat_from_sequence(ox_nctx *n) {
  ox_val *s = seq_in(n, 0);
  if (!s) return WF_EXIT_INPUT;
  if (!ox_attr(n, "axis")) {
    ox_err(n, "attribute 'axis' is required");
    return WF_EXIT_INPUT;
  }
  int64_t axis = ox_attr_int(n, "axis", 0), new_axis = ox_attr_int(n, "new_axis", 0);
  if (n->failed) return WF_EXIT_INPUT;
  if (s->n_items == 0) {
    ox_err(n, "cannot concatenate an empty sequence");
    return WF_EXIT_INPUT;
  }
  ox_val **parts = malloc((size_t)s->n_items * sizeof *parts);
  WF_ASSERT(parts);
  int rc = WF_EXIT_OK;
  for (int i = 0; rc == 0 && i < s->n_items; i++) {
    parts[i] = s->items[i];
    if (!new_axis) continue;
    /* new_axis: each tensor gets a dim of 1 at axis (which may be rank: -rank-1 .. rank) */
    const wf_type *t = &parts[i]->type;
    int64_t a = axis < 0 ? axis + t->rank + 1 : axis;
    if (a < 0 || a > t->rank || t->rank >= WF_MAX_RANK) {
      ox_err(n, "axis %lld is out of range for new_axis on %s", (long long)axis, ox_shape_str(t));
      rc = WF_EXIT_INPUT;
      break;
    }
    int64_t dims[WF_MAX_RANK];
    for (int d = 0, k = 0; d <= t->rank; d++) dims[d] = d == a ? 1 : t->dims[k++];
    if (!(parts[i] = ox_reshape(n, parts[i], t->rank + 1, dims))) rc = WF_EXIT_INPUT;
  }
  if (rc == 0) {
    int rank = parts[0]->type.rank;
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
      ox_err(n, "axis %lld is out of range for %s", (long long)axis, ox_shape_str(&parts[0]->type));
      rc = WF_EXIT_INPUT;
    } else if (s->n_items == 1) {
      rc = ox_set_out(n, 0, parts[0]);
    } else {
      ox_attrv at = OX_A_INT("axis", a);
      ox_val *r = ox_emit1(n, WF_OP_CONCAT, s->n_items, parts, 1, &at, NULL);
      rc = r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
    }
  }
  free(parts);
  return rc;
}
