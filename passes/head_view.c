/* Attention operands as views of a projection (see head_view.h).
 *
 * A view is tracked as an offset and, per dimension, a list of factors (size n, stride s) in
 * p's row-major index space: the index i of a dimension is written in the mixed radix of its
 * factors, most significant first, and adds digit·s to the offset. p [B, S, N] starts as
 * {(B, S N)}, {(S, N)}, {(N, 1)}. A reshape regroups the factors (splitting one when a new
 * dimension ends inside it), a transpose permutes the dimensions, a slice or split of a
 * dimension with one factor moves the offset and scales the stride, a gather of one index
 * moves the offset, and an expand adds factors of stride 0. Factors of size 1 are dropped and
 * neighbours that are contiguous (s1 = n2 s2) merged, so equal views have equal lists.
 *
 * v4 [B, H, S, D] is a head view of p when its B and S dimensions are p's own ({(B, S N)} and
 * {(S, N)}): then v4[b, h, s, d] = p[b, s, col(h, d)]. A rope on the chain rotates along its
 * input's last axis with tables indexed by its second-to-last; it may be moved to v4 itself
 * when those two dimensions are v4's D and S and its input is injective (no stride 0 before
 * it): then every element meets the same partner and table entry in both places. */
#include <stdlib.h>
#include <string.h>

#include "ir/rules.h"
#include "passes/head_view.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

#define HV_RANK 8
#define HV_FACT 16
#define HV_CHAIN 48 /* ops on the way from p to v4 */

typedef struct hv_fact {
  int64_t n, s;
} hv_fact;

typedef struct hv_dim {
  int nf;
  hv_fact f[HV_FACT];
} hv_dim;

typedef struct hv_shape {
  int rank;
  hv_dim d[HV_RANK];
  int64_t off;
} hv_shape;

static int64_t dim_size(const hv_dim *d) {
  int64_t n = 1;
  for (int i = 0; i < d->nf; i++) n *= d->f[i].n;
  return n;
}

static void normalize(hv_dim *d) {
  int k = 0;
  for (int i = 0; i < d->nf; i++) {
    hv_fact x = d->f[i];
    if (x.n == 1) continue;
    if (k && d->f[k - 1].s == x.n * x.s) {
      d->f[k - 1].n *= x.n;
      d->f[k - 1].s = x.s;
      continue;
    }
    d->f[k++] = x;
  }
  d->nf = k;
}

static int push(hv_dim *d, int64_t n, int64_t s) {
  if (n == 1) return 1;
  if (d->nf == HV_FACT) return 0;
  d->f[d->nf++] = (hv_fact){n, s};
  return 1;
}

static int same_dim(const hv_dim *a, const hv_dim *b) {
  if (a->nf != b->nf) return 0;
  for (int i = 0; i < a->nf; i++)
    if (a->f[i].n != b->f[i].n || a->f[i].s != b->f[i].s) return 0;
  return 1;
}

/* The offset of index i of dimension d. */
static int64_t index_off(const hv_dim *d, int64_t i) {
  int64_t off = 0;
  for (int k = d->nf - 1; k >= 0; k--) {
    off += (i % d->f[k].n) * d->f[k].s;
    i /= d->f[k].n;
  }
  return off;
}

static int shape_is(const hv_shape *sh, const wf_type *t) {
  if (sh->rank != t->rank) return 0;
  for (int i = 0; i < t->rank; i++)
    if (dim_size(&sh->d[i]) != t->dims[i]) return 0;
  return 1;
}

static int do_reshape(hv_shape *sh, const wf_type *out) {
  if (out->rank > HV_RANK) return 0;
  hv_fact flat[HV_RANK * HV_FACT];
  int nf = 0, at = 0;
  for (int i = 0; i < sh->rank; i++)
    for (int k = 0; k < sh->d[i].nf; k++) flat[nf++] = sh->d[i].f[k];
  hv_shape r = {out->rank, {{0}}, sh->off};
  for (int j = 0; j < out->rank; j++) {
    int64_t need = out->dims[j];
    while (need > 1) {
      if (at == nf) return 0;
      hv_fact *x = &flat[at];
      if (x->n <= need && need % x->n == 0) {
        if (!push(&r.d[j], x->n, x->s)) return 0;
        need /= x->n;
        at++;
      } else if (x->n % need == 0) {
        if (!push(&r.d[j], need, x->s * (x->n / need))) return 0;
        x->n /= need;
        need = 1;
      } else {
        return 0;
      }
    }
    normalize(&r.d[j]);
  }
  if (at != nf) return 0;
  *sh = r;
  return 1;
}

static int do_transpose(wf_func *f, const wf_op *op, hv_shape *sh) {
  int n;
  const int64_t *perm = wf_rule_ints(f, op, "perm", &n);
  hv_shape r = *sh;
  if (!perm || n != sh->rank) return 0;
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n) return 0;
    r.d[i] = sh->d[perm[i]];
  }
  *sh = r;
  return 1;
}

static int do_expand(hv_shape *sh, const wf_type *out) {
  if (out->rank > HV_RANK || out->rank < sh->rank) return 0;
  hv_shape r = {out->rank, {{0}}, sh->off};
  int lead = out->rank - sh->rank;
  for (int j = 0; j < out->rank; j++) {
    int64_t in = j < lead ? 1 : dim_size(&sh->d[j - lead]);
    if (in == out->dims[j]) {
      if (j >= lead) r.d[j] = sh->d[j - lead];
    } else if (in == 1) {
      push(&r.d[j], out->dims[j], 0);
    } else {
      return 0;
    }
  }
  *sh = r;
  return 1;
}

/* Elements [first, first + count·step) of dimension a, which must have at most one factor. */
static int take(hv_shape *sh, int a, int64_t first, int64_t count, int64_t step) {
  hv_dim *d = &sh->d[a];
  if (d->nf > 1) return 0;
  int64_t s = d->nf ? d->f[0].s : 0;
  sh->off += first * s;
  d->nf = 0;
  push(d, count, s * step);
  return 1;
}

static int do_slice(wf_func *f, const wf_op *op, hv_shape *sh) {
  int ns, ne, na, np;
  const int64_t *st = wf_rule_ints(f, op, "starts", &ns), *en = wf_rule_ints(f, op, "ends", &ne);
  const int64_t *ax = wf_rule_ints(f, op, "axes", &na), *sp = wf_rule_ints(f, op, "steps", &np);
  if (!st || !en || !ax || !sp || ns != ne || ns != na || ns != np) return 0;
  for (int i = 0; i < ns; i++) {
    int a = wf_norm_axis(ax[i], sh->rank);
    if (a < 0 || sp[i] == 0) return 0;
    int64_t first, count;
    wf_slice_resolve(dim_size(&sh->d[a]), st[i], en[i], sp[i], &first, &count);
    if (!take(sh, a, first, count, sp[i])) return 0;
  }
  return 1;
}

static int do_split(wf_func *f, const wf_op *op, wf_value v, hv_shape *sh) {
  int a = wf_norm_axis(wf_op_int(f, op, "axis", 0), sh->rank);
  if (a < 0) return 0;
  int64_t first = 0;
  for (int i = 0; i < op->n_results; i++) {
    int64_t n = wf_value_type(f, op->results[i])->dims[a];
    if (op->results[i] == v) return take(sh, a, first, n, 1);
    first += n;
  }
  return 0;
}

/* A gather of one constant index: the dimension goes (a rank-0 index) or keeps size 1. */
static int do_gather(wf_module *m, wf_func *f, const wf_op *op, hv_shape *sh) {
  const wf_value_info *iv = wf_value_get(f, op->operands[1]);
  int a = wf_norm_axis(wf_op_int(f, op, "axis", 0), sh->rank);
  if (a < 0 || iv->kind != WF_VAL_GLOBAL || iv->index < 0 || wf_type_numel(&iv->type) != 1 || iv->type.rank > 1)
    return 0;
  wf_tensor *t = wf_global_tensor(m, iv->index);
  if (!t) return 0;
  int64_t n = dim_size(&sh->d[a]), i = (int64_t)wf_tensor_get(t, 0);
  wf_tensor_free(t);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return 0;
  sh->off += index_off(&sh->d[a], i);
  sh->d[a].nf = 0;
  if (iv->type.rank == 0) {
    memmove(&sh->d[a], &sh->d[a + 1], (size_t)(sh->rank - a - 1) * sizeof sh->d[0]);
    sh->rank--;
  }
  return 1;
}

static int injective(const hv_shape *sh) {
  for (int i = 0; i < sh->rank; i++)
    for (int k = 0; k < sh->d[i].nf; k++)
      if (sh->d[i].f[k].s == 0) return 0;
  return 1;
}

static wf_op *def_of(wf_func *f, wf_value v) {
  const wf_value_info *vi = wf_value_get(f, v);
  return vi->kind == WF_VAL_RESULT ? vi->def : NULL;
}

typedef struct hv_ctx {
  wf_module *m;
  wf_func *f;
  wf_value p;
  int64_t pb, ps, pn; /* the projection's [B, S, N] (before a transpose of its input) */
  int transposed;
  wf_op *rope;
  hv_dim rope_s, rope_d;
  int ops;
  const char *why;
} hv_ctx;

/* v = matmul(transpose(x) {1, 0, 2}, W) [+ b]: a projection of x with its first two axes
 * swapped, which is that projection of x transposed (torch's nn.MultiheadAttention works on
 * [S, B, E]). */
static int proj_of_transposed(wf_func *f, wf_value v) {
  wf_op *op = def_of(f, v);
  if (op && op->code == WF_OP_ADD)
    for (int i = 0; i < 2; i++) {
      wf_op *mm = def_of(f, op->operands[i]);
      if (mm && mm->code == WF_OP_MATMUL && wf_value_get(f, op->operands[1 - i])->kind == WF_VAL_GLOBAL) op = mm;
    }
  if (!op || op->code != WF_OP_MATMUL) return 0;
  wf_op *tr = def_of(f, op->operands[0]);
  int n;
  const int64_t *perm = tr && tr->code == WF_OP_TRANSPOSE ? wf_rule_ints(f, tr, "perm", &n) : NULL;
  return perm && n == 3 && perm[0] == 1 && perm[1] == 0 && perm[2] == 2;
}

static int view_op(wf_func *f, const wf_op *op) {
  switch (op->code) {
    case WF_OP_TRANSPOSE: case WF_OP_EXPAND: case WF_OP_SLICE: case WF_OP_SPLIT: case WF_OP_GATHER:
    case WF_OP_ROPE: case WF_OP_CONCAT:
      return 1;
    case WF_OP_RESHAPE: {
      wf_op *in = def_of(f, op->operands[0]);
      return !in || in->code != WF_OP_GEMM;
    }
    default: return 0;
  }
}

static int hv_fail(hv_ctx *c, const char *why) {
  if (!c->why) c->why = why;
  return 0;
}

static int trace(hv_ctx *c, wf_value v, hv_shape *sh);

/* Parts equal but for offsets off_0 + i delta: the concatenation adds a factor (parts, delta). */
static int do_concat(hv_ctx *c, const wf_op *op, hv_shape *sh) {
  const wf_type *t = wf_value_type(c->f, op->results[0]);
  int a = wf_norm_axis(wf_op_int(c->f, op, "axis", 0), t->rank);
  if (a < 0 || !trace(c, op->operands[0], sh)) return 0;
  int64_t delta = 0;
  for (int i = 1; i < op->n_operands; i++) {
    hv_shape part;
    if (!trace(c, op->operands[i], &part)) return 0;
    int same = part.rank == sh->rank;
    for (int k = 0; same && k < part.rank; k++) same = same_dim(&part.d[k], &sh->d[k]);
    if (i == 1) delta = part.off - sh->off;
    if (!same || part.off != sh->off + i * delta) return 0;
  }
  if (op->n_operands > 1) {
    hv_dim *d = &sh->d[a];
    if (d->nf == HV_FACT) return 0;
    memmove(&d->f[1], &d->f[0], (size_t)d->nf * sizeof d->f[0]);
    d->f[0] = (hv_fact){op->n_operands, delta};
    d->nf++;
    normalize(d);
  }
  return 1;
}

/* The view v of p as a shape of factors; p is found at the first op that is no view. */
static int trace(hv_ctx *c, wf_value v, hv_shape *sh) {
  wf_op *op = def_of(c->f, v);
  const wf_type *vt = wf_value_type(c->f, v);
  if (++c->ops > HV_CHAIN) return hv_fail(c, "a chain of views from the projection to q, k or v longer than 48 ops");
  if (!op || !view_op(c->f, op)) {
    if (c->p != WF_NO_VALUE && c->p != v) return hv_fail(c, "q, k or v joins views of two different values");
    if (vt->rank != 3) return hv_fail(c, "q, k or v is not a view of a [B, S, N] projection");
    c->p = v;
    c->transposed = proj_of_transposed(c->f, v);
    c->pb = vt->dims[c->transposed], c->ps = vt->dims[1 - c->transposed], c->pn = vt->dims[2];
    *sh = (hv_shape){3, {{0}}, 0};
    push(&sh->d[c->transposed], c->pb, c->ps * c->pn);
    push(&sh->d[1 - c->transposed], c->ps, c->pn);
    push(&sh->d[2], c->pn, 1);
    return 1;
  }
  if (op->code == WF_OP_CONCAT) {
    if (!do_concat(c, op, sh)) return hv_fail(c, "q, k or v concatenates views that are not evenly spaced");
    return shape_is(sh, vt) || hv_fail(c, "q, k or v is not a view of the projection's columns");
  }
  if (!trace(c, op->operands[0], sh)) return 0;
  int ok = 1;
  switch (op->code) {
    case WF_OP_RESHAPE: ok = do_reshape(sh, vt); break;
    case WF_OP_TRANSPOSE: ok = do_transpose(c->f, op, sh); break;
    case WF_OP_EXPAND: ok = do_expand(sh, vt); break;
    case WF_OP_SLICE: ok = do_slice(c->f, op, sh); break;
    case WF_OP_SPLIT: ok = do_split(c->f, op, v, sh); break;
    case WF_OP_GATHER: ok = do_gather(c->m, c->f, op, sh); break;
    case WF_OP_ROPE:
      if (c->rope && c->rope != op) return hv_fail(c, "two ropes on the way from the projection to q or k");
      if (sh->rank < 2 || !injective(sh)) return hv_fail(c, "a rope over a repeated (expanded) tensor");
      c->rope = op, c->rope_s = sh->d[sh->rank - 2], c->rope_d = sh->d[sh->rank - 1];
      break;
    default: ok = 0;
  }
  if (!ok || !shape_is(sh, vt))
    return hv_fail(c, "q, k or v is not a view of the projection's columns (a reshape, transpose, slice or gather "
                      "that mixes the batch or sequence axes with the heads)");
  return 1;
}

int wf_head_view_match(wf_module *m, wf_func *f, wf_value v4, wf_head_view *hv, const char **why) {
  memset(hv, 0, sizeof *hv);
  const wf_type *t4 = wf_value_type(f, v4);
  if (t4->rank != 4) return *why = "q, k or v is not [B, H, S, D]", 0;
  hv_ctx c = {m, f, WF_NO_VALUE, 0, 0, 0, 0, NULL, {0}, {0}, 0, NULL};
  hv_shape sh;
  if (!trace(&c, v4, &sh)) return *why = c.why, 0;
  int64_t nn = c.pn;
  hv_dim bdim = {0}, sdim = {0};
  push(&bdim, c.pb, c.ps * nn);
  push(&sdim, c.ps, nn);
  /* [1, B·H, S, D] (nn.MultiheadAttention's heads of all batch elements on one axis): the
   * batch is the head axis's outer factor, unfolded into [B, H, S, D] */
  int64_t heads = t4->dims[1];
  hv->folded = 1;
  if (c.pb > 1 && sh.d[0].nf == 0 && sh.d[1].nf > 0 && sh.d[1].f[0].n == bdim.f[0].n && sh.d[1].f[0].s == bdim.f[0].s) {
    sh.d[0] = bdim;
    memmove(&sh.d[1].f[0], &sh.d[1].f[1], (size_t)(sh.d[1].nf - 1) * sizeof sh.d[1].f[0]);
    sh.d[1].nf--;
    hv->folded = c.pb;
    heads /= c.pb;
  }
  if (!same_dim(&sh.d[0], &bdim) || !same_dim(&sh.d[2], &sdim))
    return *why = "q, k or v is not [B, H, S, D] with the projection's own batch and sequence axes", 0;
  if (c.rope && (!same_dim(&c.rope_s, &sh.d[2]) || !same_dim(&c.rope_d, &sh.d[3])))
    return *why = "a rope along other axes than the head's sequence and head dims", 0;
  hv->p = c.p, hv->rope = c.rope, hv->transposed = c.transposed;
  hv->heads = heads, hv->d = t4->dims[3];
  hv->col = malloc((size_t)(hv->heads * hv->d) * sizeof *hv->col);
  WF_ASSERT(hv->col); /* out of host memory: exit 7, said (ir/diag.c) */
  for (int64_t h = 0; h < hv->heads; h++)
    for (int64_t r = 0; r < hv->d; r++) {
      int64_t col = sh.off + index_off(&sh.d[1], h) + index_off(&sh.d[3], r);
      if (col < 0 || col >= nn) {
        wf_head_view_free(hv);
        return *why = "q, k or v reads outside the projection's columns", 0;
      }
      hv->col[h * hv->d + r] = col;
    }
  return 1;
}

void wf_head_view_free(wf_head_view *hv) {
  free(hv->col);
  hv->col = NULL;
}

static int repeats(const wf_head_view *hv, int64_t n) {
  for (int64_t h = 0; h < hv->heads; h++)
    if (memcmp(&hv->col[h * hv->d], &hv->col[(h - h % n) * hv->d], (size_t)hv->d * sizeof *hv->col)) return 0;
  return 1;
}

int64_t wf_head_view_repeat(const wf_head_view *hv) {
  for (int64_t n = hv->heads; n > 1; n--)
    if (hv->heads % n == 0 && repeats(hv, n)) return n;
  return 1;
}

void wf_head_view_dedup(wf_head_view *hv, int64_t n) {
  if (n <= 1) return;
  for (int64_t h = 0; h < hv->heads / n; h++)
    memmove(&hv->col[h * hv->d], &hv->col[h * n * hv->d], (size_t)hv->d * sizeof *hv->col);
  hv->heads /= n;
}

/* ---- forward: the order a chain of views keeps ------------------------------------------- */

/* All of sh's factors in one list, most significant first, normalized. */
static hv_dim flat(const hv_shape *sh) {
  hv_dim all = {0};
  for (int i = 0; i < sh->rank; i++)
    for (int k = 0; k < sh->d[i].nf; k++)
      if (all.nf < HV_FACT) all.f[all.nf++] = sh->d[i].f[k];
  normalize(&all);
  return all;
}

/* The op using v, when it is its only use. */
static wf_op *only_use(wf_func *f, wf_value v) {
  wf_op *use = NULL;
  int n = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) if (op->operands[i] == v) {
      use = op;
      n++;
    }
  return n == 1 ? use : NULL;
}

wf_value wf_head_view_follow(wf_func *f, wf_value from, const wf_type *as, const int *order, wf_head_view_stop stop,
                             const void *arg) {
  const wf_type *t = as ? as : wf_value_type(f, from);
  if (t->rank > HV_RANK) return WF_NO_VALUE;
  hv_shape sh = {t->rank, {{0}}, 0}, want = {t->rank, {{0}}, 0};
  int64_t stride = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    push(&sh.d[i], t->dims[i], stride);
    stride *= t->dims[i];
  }
  for (int i = 0; i < t->rank; i++) want.d[i] = sh.d[order[i]];
  hv_dim goal = flat(&want);
  wf_value v = from;
  for (int steps = 0; steps < HV_CHAIN; steps++) {
    hv_dim got = flat(&sh);
    if (same_dim(&got, &goal) && stop(f, v, arg)) return v;
    wf_op *op = only_use(f, v);
    if (!op || op->operands[0] != v || op->n_results != 1) return WF_NO_VALUE;
    const wf_type *ot = wf_value_type(f, op->results[0]);
    int ok = op->code == WF_OP_RESHAPE ? do_reshape(&sh, ot) : op->code == WF_OP_TRANSPOSE ? do_transpose(f, op, &sh) : 0;
    if (!ok || !shape_is(&sh, ot)) return WF_NO_VALUE;
    v = op->results[0];
  }
  return WF_NO_VALUE;
}
