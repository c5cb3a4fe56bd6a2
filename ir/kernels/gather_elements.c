/* Reference kernel of gather_elements (ONNX GatherElements): out has the shape of indices and
 * out[p] = data[p with p[axis] = indices[p]]. Negative indices count from the end; anything
 * outside [-n, n) is a located error. */
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_GATHER_ELEMENTS(const wf_kctx *k) {
  const wf_tensor *d = k->in[0], *ix = k->in[1];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), d->rank);
  int64_t dstride[WF_MAX_RANK], s = 1;
  for (int i = d->rank - 1; i >= 0; i--) dstride[i] = s, s *= d->dims[i];
  int64_t n = wf_tensor_numel(ix), dim = d->dims[axis];
  size_t es = wf_dtype_size(d->dtype);
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e, off = 0, v = wf_kget_int(ix, e);
    if (v < -dim || v >= dim) {
      wf_error(k->op->loc, "'gather_elements' index %lld (element %lld of the indices) is out of range for dim %d of size %lld",
               (long long)v, (long long)e, axis, (long long)dim);
      return -1;
    }
    if (v < 0) v += dim;
    for (int i = ix->rank - 1; i >= 0; i--) {
      int64_t c = rem % ix->dims[i];
      rem /= ix->dims[i];
      off += (i == axis ? v : c) * dstride[i];
    }
    memcpy((char *)o->data + (size_t)e * es, (const char *)d->data + (size_t)off * es, es);
  }
  return 0;
}
