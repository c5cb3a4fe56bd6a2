/* Reference kernels of the data-movement ops: reshape, dist.relayout (identities on the
 * row-major data), transpose, concat, slice, split, gather. They copy bytes, so they are
 * exact for every dtype. */
#include <string.h>

#include "ir/kernels/kernels.h"

#define ES(t) wf_dtype_size((t)->dtype)

static int copy_all(const wf_kctx *k) {
  memcpy(k->out[0]->data, k->in[0]->data, wf_tensor_bytes(k->in[0]));
  return 0;
}

int wf_kern_RESHAPE(const wf_kctx *k) { return copy_all(k); }
int wf_kern_DIST_RELAYOUT(const wf_kctx *k) { return copy_all(k); }

int wf_kern_TRANSPOSE(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int n;
  const int64_t *perm = wf_rule_ints(k->f, k->op, "perm", &n);
  int64_t istride[WF_MAX_RANK];
  wf_kstrides(a, istride);
  size_t es = ES(a);
  int64_t total = wf_tensor_numel(o);
  for (int64_t i = 0; i < total; i++) {
    int64_t rem = i, src = 0;
    for (int d = o->rank - 1; d >= 0; d--) {
      src += (rem % o->dims[d]) * istride[perm[d]];
      rem /= o->dims[d];
    }
    memcpy((char *)o->data + (size_t)i * es, (const char *)a->data + (size_t)src * es, es);
  }
  return 0;
}

int wf_kern_CONCAT(const wf_kctx *k) {
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), o->rank);
  size_t es = ES(o);
  int64_t outer = wf_kprod(o->dims, 0, axis), inner = wf_kprod(o->dims, axis + 1, o->rank);
  int64_t orow = o->dims[axis] * inner, off = 0;
  for (int t = 0; t < k->n_in; t++) {
    const wf_tensor *a = k->in[t];
    int64_t row = a->dims[axis] * inner;
    for (int64_t r = 0; r < outer; r++)
      memcpy((char *)o->data + (size_t)(r * orow + off) * es,
             (const char *)a->data + (size_t)(r * row) * es, (size_t)row * es);
    off += row;
  }
  return 0;
}

int wf_kern_SLICE(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int n;
  const int64_t *starts = wf_rule_ints(k->f, k->op, "starts", &n);
  const int64_t *ends = wf_rule_ints(k->f, k->op, "ends", &n);
  const int64_t *axes = wf_rule_ints(k->f, k->op, "axes", &n);
  const int64_t *steps = wf_rule_ints(k->f, k->op, "steps", &n);
  int64_t first[WF_MAX_RANK], step[WF_MAX_RANK];
  for (int d = 0; d < a->rank; d++) first[d] = 0, step[d] = 1;
  for (int i = 0; i < n; i++) {
    int ax = wf_norm_axis(axes[i], a->rank);
    int64_t cnt;
    wf_slice_resolve(a->dims[ax], starts[i], ends[i], steps[i], &first[ax], &cnt);
    step[ax] = steps[i];
  }
  int64_t istride[WF_MAX_RANK];
  wf_kstrides(a, istride);
  size_t es = ES(a);
  int64_t total = wf_tensor_numel(o);
  for (int64_t i = 0; i < total; i++) {
    int64_t rem = i, src = 0;
    for (int d = o->rank - 1; d >= 0; d--) {
      src += (first[d] + (rem % o->dims[d]) * step[d]) * istride[d];
      rem /= o->dims[d];
    }
    memcpy((char *)o->data + (size_t)i * es, (const char *)a->data + (size_t)src * es, es);
  }
  return 0;
}

int wf_kern_SPLIT(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), a->rank);
  size_t es = ES(a);
  int64_t outer = wf_kprod(a->dims, 0, axis), inner = wf_kprod(a->dims, axis + 1, a->rank);
  int64_t irow = a->dims[axis] * inner, off = 0;
  for (int t = 0; t < k->n_out; t++) {
    wf_tensor *o = k->out[t];
    int64_t row = o->dims[axis] * inner;
    for (int64_t r = 0; r < outer; r++)
      memcpy((char *)o->data + (size_t)(r * row) * es,
             (const char *)a->data + (size_t)(r * irow + off) * es, (size_t)row * es);
    off += row;
  }
  return 0;
}

/* ONNX Gather: negative indices count from the end; anything outside [-n, n) is an error. */
int wf_kern_GATHER(const wf_kctx *k) {
  const wf_tensor *d = k->in[0], *ix = k->in[1];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), d->rank);
  size_t es = ES(d);
  int64_t outer = wf_kprod(d->dims, 0, axis), inner = wf_kprod(d->dims, axis + 1, d->rank);
  int64_t n = d->dims[axis], ni = wf_tensor_numel(ix);
  for (int64_t j = 0; j < ni; j++) {
    int64_t v = wf_kget_int(ix, j);
    if (v < -n || v >= n) {
      wf_error(k->op->loc, "'gather' index %lld (element %lld of the indices) is out of range for dim %d of size %lld",
               (long long)v, (long long)j, axis, (long long)n);
      return -1;
    }
    if (v < 0) v += n;
    for (int64_t r = 0; r < outer; r++)
      memcpy((char *)o->data + (size_t)((r * ni + j) * inner) * es,
             (const char *)d->data + (size_t)((r * n + v) * inner) * es, (size_t)inner * es);
  }
  return 0;
}

/* shift: out[.., i, ..] = a[.., i - by, ..] where that index exists, else 0 (ops.def). */
int wf_kern_SHIFT(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), a->rank);
  WF_ASSERT(axis >= 0); /* verified */
  int64_t by = wf_rule_int(k->f, k->op, "by", 0), n = a->dims[axis];
  size_t inner = (size_t)wf_kprod(a->dims, axis + 1, a->rank) * ES(a);
  int64_t outer = wf_kprod(a->dims, 0, axis);
  memset(o->data, 0, wf_tensor_bytes(o));
  for (int64_t p = 0; p < outer; p++)
    for (int64_t i = 0; i < n; i++) {
      int64_t s = i - by;
      if (s < 0 || s >= n) continue;
      memcpy((char *)o->data + (size_t)(p * n + i) * inner, (const char *)a->data + (size_t)(p * n + s) * inner, inner);
    }
  return 0;
}
