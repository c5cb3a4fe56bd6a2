/* Reference kernel of gather_elements (ONNX GatherElements): out has the shape of indices and
 * out[p] = data[p with p[axis] = indices[p]]. Negative indices count from the end; anything
 * outside [-n, n) is a located error. */
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_GATHER_ELEMENTS(const wf_kctx *k) {
  const wf_tensor *d = k->in[0], *ix = k->in[1];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), d->rank);
  int64_t dstride[WF_MAX_RANK];
  wf_kstrides(d, dstride);
  int64_t n = wf_tensor_numel(ix), dim = d->dims[axis];
  size_t es = wf_dtype_size(d->dtype);
  for (int64_t e = 0; e < n; e++) {
    int64_t off = wf_kelem_offset(k, "gather_elements", ix, e, axis, dim, dstride);
    if (off < 0) return -1;
    memcpy((char *)o->data + (size_t)e * es, (const char *)d->data + (size_t)off * es, es);
  }
  return 0;
}
