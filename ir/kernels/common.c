/* Helpers shared by the reference kernels: exact integer access and broadcasting. */
#include "ir/kernels/kernels.h"

int64_t wf_kget_int(const wf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case WF_I32: return ((const int32_t *)t->data)[i];
  case WF_I64: return ((const int64_t *)t->data)[i];
  case WF_BOOL: return ((const uint8_t *)t->data)[i] != 0;
  default: return (int64_t)wf_tensor_get(t, i);
  }
}

void wf_kset_int(wf_tensor *t, int64_t i, int64_t v) {
  switch (t->dtype) {
  case WF_I32: ((int32_t *)t->data)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
  case WF_I64: ((int64_t *)t->data)[i] = v; break;
  case WF_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
  default: wf_tensor_set(t, i, (double)v); break;
  }
}

int64_t wf_kbcast_index_shape(int rank, const int64_t *dims, int orank, const int64_t *odims,
                              int64_t i) {
  int64_t off = 0, stride = 1;
  /* walk the output dims from the innermost; input dims align to the right */
  for (int d = orank - 1, e = rank - 1; d >= 0; d--, e--) {
    int64_t c = i % odims[d];
    i /= odims[d];
    if (e < 0) continue;
    if (dims[e] != 1) off += c * stride;
    stride *= dims[e];
  }
  return off;
}

int64_t wf_kbcast_index(const wf_tensor *in, const wf_tensor *out, int64_t i) {
  return wf_kbcast_index_shape(in->rank, in->dims, out->rank, out->dims, i);
}

int64_t wf_kprod(const int64_t *dims, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= dims[i];
  return p;
}

void wf_kstrides(const wf_tensor *t, int64_t *out) {
  int64_t s = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    out[d] = s;
    s *= t->dims[d];
  }
}

int64_t wf_kelem_offset(const wf_kctx *k, const char *who, const wf_tensor *ix, int64_t e, int axis, int64_t dim,
                        const int64_t *dstride) {
  int64_t rem = e, off = 0, v = wf_kget_int(ix, e);
  if (v < -dim || v >= dim) {
    wf_error(k->op->loc, "'%s' index %lld (element %lld of the indices) is out of range for dim %d of size %lld", who,
             (long long)v, (long long)e, axis, (long long)dim);
    return -1;
  }
  if (v < 0) v += dim;
  for (int i = ix->rank - 1; i >= 0; i--) {
    int64_t c = rem % ix->dims[i];
    rem /= ix->dims[i];
    off += (i == axis ? v : c) * dstride[i];
  }
  return off;
}
