/* Importers of the shape and data-movement ops: Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Concat, Split, Slice, Gather, Expand, Tile. Shape-like operands (Reshape's shape,
 * Slice's starts, ...) must be constants once input shapes are fixed: the folding of shape
 * subgraphs makes them so. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"
#include "ir/rules.h"

static int done(ox_nctx *n, ox_val *r) { return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT; }

/* Axes from an INTS attribute (before `since`) or a constant input 1. *na = -1: none given. */
int ox_axes(ox_nctx *n, int since, int64_t **axes, int *na) {
  *axes = NULL;
  *na = -1;
  if (n->opset < since) {
    const int64_t *a = ox_attr_ints(n, "axes", na);
    if (n->failed) return WF_EXIT_INPUT;
    if (*na >= 0) {
      *axes = malloc(((size_t)*na + 1) * sizeof **axes);
      WF_ASSERT(*axes);
      if (*na) memcpy(*axes, a, (size_t)*na * sizeof **axes);
    }
    return WF_EXIT_OK;
  }
  if (n->n_in > 1 && n->in[1]) return ox_in_ints(n, 1, "axes", axes, na);
  return WF_EXIT_OK;
}

int ox_imp_reshape(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *shape;
  int ns;
  int rc = ox_in_ints(n, 1, "shape", &shape, &ns);
  if (rc) return rc;
  int allowzero = ox_attr_int(n, "allowzero", 0) != 0;
  if (!allowzero) ox_torch_repeat_reshape(n, x, shape, ns);
  int64_t dims[WF_MAX_RANK], known = 1;
  int infer = -1;
  rc = WF_EXIT_INPUT;
  if (ns > WF_MAX_RANK) {
    ox_err(n, "target shape has rank %d (at most %d)", ns, WF_MAX_RANK);
    goto out;
  }
  for (int i = 0; i < ns; i++) {
    int64_t d = shape[i];
    if (d == 0 && !allowzero) {
      if (i >= x->type.rank) {
        ox_err(n, "shape entry %d is 0 (copy the input dim) but the input %s has no dim %d", i, ox_shape_str(&x->type), i);
        goto out;
      }
      d = x->type.dims[i];
    }
    if (d == -1) {
      if (infer >= 0) {
        ox_err(n, "shape has more than one -1");
        goto out;
      }
      infer = i;
      d = 1;
    } else if (d < 0) {
      ox_err(n, "shape entry %d is %lld", i, (long long)d);
      goto out;
    }
    dims[i] = d;
    if (__builtin_mul_overflow(known, d, &known)) { /* a hostile shape: the product past int64 */
      ox_err(n, "shape's entries multiply past 2^63 elements");
      goto out;
    }
  }
  int64_t numel = wf_type_numel(&x->type);
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      ox_err(n, "cannot reshape %s (%lld elements) to a shape with -1 and %lld known elements", ox_shape_str(&x->type),
             (long long)numel, (long long)known);
      goto out;
    }
    dims[infer] = numel / known;
  } else if (known != numel) {
    wf_type t = wf_type_make(x->type.dtype, ns, dims);
    ox_err(n, "cannot reshape %s (%lld elements) to %s (%lld elements)", ox_shape_str(&x->type), (long long)numel,
           ox_shape_str(&t), (long long)known);
    goto out;
  }
  rc = done(n, ox_reshape(n, x, ns, dims));
out:
  free(shape);
  return n->failed ? WF_EXIT_INPUT : rc;
}

int ox_imp_flatten(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int rank = x->type.rank;
  int64_t ax = ox_attr_int(n, "axis", 1);
  if (n->failed) return WF_EXIT_INPUT;
  if (ax < -rank || ax > rank) {
    ox_err(n, "axis %lld is out of range for %s", (long long)ax, ox_shape_str(&x->type));
    return WF_EXIT_INPUT;
  }
  if (ax < 0) ax += rank;
  int64_t d[2] = {1, 1};
  for (int i = 0; i < rank; i++) d[i < ax ? 0 : 1] *= x->type.dims[i];
  return done(n, ox_reshape(n, x, 2, d));
}

int ox_imp_squeeze(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *axes;
  int na, rank = x->type.rank;
  int rc = ox_axes(n, 13, &axes, &na);
  if (rc) return rc;
  int drop[WF_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank || x->type.dims[a < 0 ? a + rank : a] != 1) {
      ox_err(n, "cannot squeeze axis %lld of %s (out of range or not 1)", (long long)a, ox_shape_str(&x->type));
      free(axes);
      return WF_EXIT_INPUT;
    }
    drop[a < 0 ? a + rank : a] = 1;
  }
  free(axes);
  int64_t dims[WF_MAX_RANK];
  int r = 0;
  for (int i = 0; i < rank; i++)
    if (!(na > 0 ? drop[i] : x->type.dims[i] == 1)) dims[r++] = x->type.dims[i];
  return done(n, ox_reshape(n, x, r, dims));
}

int ox_imp_unsqueeze(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *axes;
  int na;
  int rc = ox_axes(n, 13, &axes, &na);
  if (rc) return rc;
  if (na < 0) {
    ox_err(n, "axes are required");
    return WF_EXIT_INPUT;
  }
  int rank = x->type.rank + na;
  int ins[WF_MAX_RANK + 1] = {0};
  rc = WF_EXIT_OK;
  if (rank > WF_MAX_RANK) {
    ox_err(n, "the result would have rank %d (at most %d)", rank, WF_MAX_RANK);
    rc = WF_EXIT_INPUT;
  }
  for (int i = 0; rc == 0 && i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || ins[a]) {
      ox_err(n, "axis %lld is out of range or repeated for a result of rank %d", (long long)axes[i], rank);
      rc = WF_EXIT_INPUT;
    } else {
      ins[a] = 1;
    }
  }
  free(axes);
  if (rc) return rc;
  int64_t dims[WF_MAX_RANK];
  for (int i = 0, j = 0; i < rank; i++) dims[i] = ins[i] ? 1 : x->type.dims[j++];
  return done(n, ox_reshape(n, x, rank, dims));
}

int ox_imp_transpose(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int np, rank = x->type.rank;
  const int64_t *perm = ox_attr_ints(n, "perm", &np);
  if (n->failed) return WF_EXIT_INPUT;
  int64_t p[WF_MAX_RANK];
  if (np < 0) {
    for (int i = 0; i < rank; i++) p[i] = rank - 1 - i;
  } else if (np != rank) {
    ox_err(n, "perm has %d entries but the input %s has rank %d", np, ox_shape_str(&x->type), rank);
    return WF_EXIT_INPUT;
  } else {
    memcpy(p, perm, (size_t)np * sizeof *p);
  }
  ox_attrv at = OX_A_INTS("perm", rank, p);
  return done(n, ox_emit1(n, WF_OP_TRANSPOSE, 1, &x, 1, &at, NULL));
}

int ox_imp_concat(ox_nctx *n) {
  if (!ox_attr(n, "axis")) {
    ox_err(n, "attribute 'axis' is required");
    return WF_EXIT_INPUT;
  }
  int64_t axis = ox_attr_int(n, "axis", 0);
  if (n->failed || n->n_in < 1) return WF_EXIT_INPUT;
  for (int i = 0; i < n->n_in; i++)
    if (!ox_in(n, i)) return WF_EXIT_INPUT;
  ox_attrv at = OX_A_INT("axis", axis);
  return done(n, ox_emit1(n, WF_OP_CONCAT, n->n_in, n->in, 1, &at, NULL));
}

int ox_imp_split(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int rank = x->type.rank;
  int64_t ax = ox_attr_int(n, "axis", 0);
  if (n->failed) return WF_EXIT_INPUT;
  if (ax < -rank || ax >= rank) {
    ox_err(n, "axis %lld is out of range for %s", (long long)ax, ox_shape_str(&x->type));
    return WF_EXIT_INPUT;
  }
  int axis = (int)(ax < 0 ? ax + rank : ax);
  int nout = ox_n_out(n);
  int64_t *sizes = NULL;
  int ns = -1, rc = WF_EXIT_OK;
  if (n->opset < 13) {
    const int64_t *s = ox_attr_ints(n, "split", &ns);
    if (ns >= 0) {
      sizes = malloc(((size_t)ns + 1) * sizeof *sizes);
      WF_ASSERT(sizes);
      if (ns) memcpy(sizes, s, (size_t)ns * sizeof *sizes);
    }
  } else if (n->n_in > 1 && n->in[1]) {
    if ((rc = ox_in_ints(n, 1, "split", &sizes, &ns)) != 0) return rc;
  }
  int64_t dim = x->type.dims[axis];
  if (ns < 0) { /* equal parts; from opset 18 the last may be smaller (num_outputs) */
    int64_t parts = n->opset >= 18 ? ox_attr_int(n, "num_outputs", nout) : nout;
    if (parts != nout || parts < 1) {
      ox_err(n, "num_outputs %lld does not match the node's %d outputs", (long long)parts, nout);
      return WF_EXIT_INPUT;
    }
    int64_t each = n->opset >= 18 ? (dim + parts - 1) / parts : dim / parts;
    if (n->opset < 18 && dim % parts != 0) {
      ox_err(n, "dim %d of %s (%lld) does not split into %d equal parts", axis, ox_shape_str(&x->type), (long long)dim, nout);
      return WF_EXIT_INPUT;
    }
    sizes = malloc((size_t)nout * sizeof *sizes);
    WF_ASSERT(sizes);
    for (int i = 0; i < nout; i++) {
      int64_t left = dim - each * i;
      sizes[i] = left < 0 ? 0 : left < each ? left : each;
    }
    ns = nout;
  }
  if (ns != nout || nout > 64) {
    ox_err(n, "%d split sizes for %d outputs", ns, nout);
    free(sizes);
    return WF_EXIT_INPUT;
  }
  ox_attrv at[2] = {OX_A_INT("axis", axis), OX_A_INTS("sizes", ns, sizes)};
  ox_val *outs[64];
  rc = ox_emit(n, WF_OP_SPLIT, 1, &x, 2, at, nout, NULL, outs);
  free(sizes);
  for (int i = 0; rc == 0 && i < nout; i++) ox_set_out(n, i, outs[i]);
  return rc;
}

int ox_imp_slice(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int rank = x->type.rank;
  int64_t *v[4] = {NULL, NULL, NULL, NULL}; /* starts, ends, axes, steps */
  int cnt[4] = {-1, -1, -1, -1}, rc = WF_EXIT_OK;
  static const char *const what[4] = {"starts", "ends", "axes", "steps"};
  for (int k = 0; k < 4; k++) {
    if (n->opset < 10) {
      if (k == 3) break;
      const int64_t *a = ox_attr_ints(n, what[k], &cnt[k]);
      if (cnt[k] >= 0) {
        v[k] = malloc(((size_t)cnt[k] + 1) * sizeof *v[k]);
        WF_ASSERT(v[k]);
        if (cnt[k]) memcpy(v[k], a, (size_t)cnt[k] * sizeof *v[k]);
      }
    } else if (k < 2 || (n->n_in > k + 1 && n->in[k + 1])) {
      if ((rc = ox_in_ints(n, k + 1, what[k], &v[k], &cnt[k])) != 0) goto out;
    }
  }
  rc = WF_EXIT_INPUT;
  if (n->failed) goto out;
  int ns = cnt[0];
  if (ns < 0 || cnt[1] != ns || (cnt[2] >= 0 && cnt[2] != ns) || (cnt[3] >= 0 && cnt[3] != ns) || ns > rank) {
    ox_err(n, "starts, ends, axes and steps must have one length (at most the rank %d)", rank);
    goto out;
  }
  int64_t axes[WF_MAX_RANK], steps[WF_MAX_RANK];
  for (int i = 0; i < ns; i++) {
    axes[i] = cnt[2] >= 0 ? v[2][i] : i;
    steps[i] = cnt[3] >= 0 ? v[3][i] : 1;
    if (axes[i] < -rank || axes[i] >= rank) {
      ox_err(n, "axis %lld is out of range for %s", (long long)axes[i], ox_shape_str(&x->type));
      goto out;
    }
    if (axes[i] < 0) axes[i] += rank;
    if (steps[i] == 0) {
      ox_err(n, "step %d is 0", i);
      goto out;
    }
  }
  ox_attrv at[4] = {OX_A_INTS("starts", ns, v[0]), OX_A_INTS("ends", ns, v[1]), OX_A_INTS("axes", ns, axes),
                    OX_A_INTS("steps", ns, steps)};
  rc = done(n, ox_emit1(n, WF_OP_SLICE, 1, &x, 4, at, NULL));
out:
  for (int k = 0; k < 4; k++) free(v[k]);
  return rc;
}

/* Gather of a computed value along a dim other than the first by NonZero's list (its rows
 * picked entry by entry, nonzero_list.c): the dim is brought to the front (only leading dims of
 * 1 before it: a reshape) so that the mesh's gather of rows takes it, and put back after. */
static ox_val *gather_list_rows(ox_nctx *n, ox_val *x, ox_val *ids, int axis) {
  int r = x->type.rank, ri = ids->type.rank;
  for (int i = 0; i < axis; i++)
    if (x->type.dims[i] != 1) return NULL; /* not this form: the plain gather */
  int64_t rows[WF_MAX_RANK], outd[WF_MAX_RANK];
  int nr = 0, no = 0;
  for (int i = axis; i < r; i++) rows[nr++] = x->type.dims[i];
  for (int i = 0; i < axis; i++) outd[no++] = 1;
  for (int i = 0; i < ri; i++) outd[no++] = ids->type.dims[i];
  for (int i = axis + 1; i < r; i++) outd[no++] = x->type.dims[i];
  if (no > WF_MAX_RANK) return NULL;
  ox_val *t = ox_reshape(n, x, nr, rows);
  ox_attrv at0 = OX_A_INT("axis", 0);
  ox_val *g = t ? ox_emit1(n, WF_OP_GATHER, 2, (ox_val *[]){t, ids}, 1, &at0, NULL) : NULL;
  return g ? ox_reshape(n, g, no, outd) : NULL;
}

int ox_imp_gather(ox_nctx *n) {
  ox_val *ins[2] = {ox_in(n, 0), ox_in(n, 1)};
  if (!ins[0] || !ins[1]) return WF_EXIT_INPUT;
  int64_t ax = ox_attr_int(n, "axis", 0);
  ox_attrv at = OX_A_INT("axis", ax);
  if (n->failed) return WF_EXIT_INPUT;
  int r = ins[0]->type.rank, axis = (int)(ax < 0 ? ax + r : ax);
  if (ins[1]->list && !ins[0]->k && axis > 0 && axis < r) {
    ox_val *g = gather_list_rows(n, ins[0], ins[1], axis);
    if (g) return done(n, g);
  }
  if (ins[0]->k && !ins[1]->k && axis == 0 && r > 2 && ins[1]->type.rank + r - 1 <= WF_MAX_RANK) {
    /* rows of a constant of rank > 2 (stacked experts' weights by each token's expert):
     * the rows of the constant as a [V, rest] table (the mesh's gather), reshaped back */
    int64_t flat[2] = {ins[0]->type.dims[0], 1}, outd[WF_MAX_RANK];
    int no = 0;
    for (int i = 1; i < r; i++) flat[1] *= ins[0]->type.dims[i];
    for (int i = 0; i < ins[1]->type.rank; i++) outd[no++] = ins[1]->type.dims[i];
    for (int i = 1; i < r; i++) outd[no++] = ins[0]->type.dims[i];
    ox_val *t = ox_reshape(n, ins[0], 2, flat);
    ox_val *g = t ? ox_emit1(n, WF_OP_GATHER, 2, (ox_val *[]){t, ins[1]}, 1, &at, NULL) : NULL;
    return done(n, g ? ox_reshape(n, g, no, outd) : NULL);
  }
  return done(n, ox_emit1(n, WF_OP_GATHER, 2, ins, 1, &at, NULL));
}

/* Tile(x, repeats), repeats a constant: each dim d repeated r > 1 times becomes a dim of r
 * inserted before it (a reshape), broadcast (an expand) and merged with it (a reshape), so the
 * mesh sees the ops it lowers already (Llama 4's MoE tiles its tokens once per expert). */
int ox_imp_tile(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *rep;
  int nr;
  int rc = ox_in_ints(n, 1, "repeats", &rep, &nr);
  if (rc) return rc;
  int r = x->type.rank, ni = r;
  if (nr != r) {
    ox_err(n, "repeats holds %d elements; input %s has rank %d (one per dim)", nr, ox_shape_str(&x->type), r);
    free(rep);
    return WF_EXIT_INPUT;
  }
  for (int i = 0; i < r; i++) {
    int64_t d = x->type.dims[i];
    if (rep[i] <= 0 || (d > 0 && rep[i] > INT64_MAX / d)) {
      int64_t v = rep[i];
      free(rep);
      if (v == 0) return ox_unsupported(n, "repeats[%d] = 0 makes an empty tensor", i);
      ox_err(n, "repeats[%d] = %lld is %s", i, (long long)v, v < 0 ? "negative" : "too large (the tiled dim overflows int64)");
      return WF_EXIT_INPUT;
    }
    ni += rep[i] > 1; /* a dim of rep[i] inserted before it */
  }
  if (ni > WF_MAX_RANK) {
    free(rep);
    return ox_unsupported(n, "tiling %s along that many dims needs a rank past the IR's %d", ox_shape_str(&x->type), WF_MAX_RANK);
  }
  int64_t ins[WF_MAX_RANK], big[WF_MAX_RANK], outd[WF_MAX_RANK];
  for (int i = 0, j = 0; i < r; i++) {
    if (rep[i] > 1) ins[j] = 1, big[j++] = rep[i];
    ins[j] = big[j] = x->type.dims[i];
    j++;
    outd[i] = rep[i] * x->type.dims[i];
  }
  free(rep);
  if (ni == r) return ox_set_out(n, 0, x); /* every repeat is 1 */
  wf_type t = wf_type_make(x->type.dtype, ni, big);
  ox_val *u = ox_reshape(n, x, ni, ins);
  ox_val *e = u ? ox_emit1(n, WF_OP_EXPAND, 1, &u, 0, NULL, &t) : NULL;
  return done(n, e ? ox_reshape(n, e, r, outd) : NULL);
}

int ox_imp_expand(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *shape;
  int ns;
  int rc = ox_in_ints(n, 1, "shape", &shape, &ns);
  if (rc) return rc;
  int rank;
  int64_t dims[WF_MAX_RANK];
  /* bidirectional: the result is the broadcast of both shapes */
  if (ns > WF_MAX_RANK || wf_broadcast_shape(x->type.rank, x->type.dims, ns, shape, &rank, dims) != 0) {
    char want[160] = "";
    for (int i = 0, u = 0; i < ns && i < WF_MAX_RANK && u < (int)sizeof want; i++)
      u += snprintf(want + u, sizeof want - (size_t)u, "%s%lld", i ? ", " : "", (long long)shape[i]);
    ox_err(n, "input %s does not broadcast with shape [%s%s] (%d dims; none may be negative)",
           ox_shape_str(&x->type), want, ns > WF_MAX_RANK ? ", ..." : "", ns);
    free(shape);
    return WF_EXIT_INPUT;
  }
  free(shape);
  wf_type t = wf_type_make(x->type.dtype, rank, dims);
  if (wf_type_same_shape(&t, &x->type)) return ox_set_out(n, 0, x);
  return done(n, ox_emit1(n, WF_OP_EXPAND, 1, &x, 0, NULL, &t));
}
