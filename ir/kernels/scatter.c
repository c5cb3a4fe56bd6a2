/* Reference kernel of scatter_elements (ONNX ScatterElements): a copy of data where, for
 * every element position p of indices, out[p with p[axis] = indices[p]] = updates[p]
 * (reduction none), or combined with it by add / mul / max / min. Updates apply in row-major
 * order, so with reduction none a repeated index keeps the last update. Negative indices count
 * from the end; anything outside [-n, n) is a located error. */
#include <math.h>
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_SCATTER_ELEMENTS(const wf_kctx *k) {
  const wf_tensor *d = k->in[0], *ix = k->in[1], *u = k->in[2];
  wf_tensor *o = k->out[0];
  memcpy(o->data, d->data, wf_tensor_bytes(d));
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), d->rank);
  const char *red = wf_op_str(k->f, k->op, "reduction", "none");
  int mode = !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2 : !strcmp(red, "max") ? 3 : !strcmp(red, "min") ? 4 : 0;
  int64_t dstride[WF_MAX_RANK];
  wf_kstrides(d, dstride);
  int64_t n = wf_tensor_numel(ix), dim = d->dims[axis];
  size_t es = wf_dtype_size(d->dtype);
  for (int64_t e = 0; e < n; e++) {
    int64_t off = wf_kelem_offset(k, "scatter_elements", ix, e, axis, dim, dstride);
    if (off < 0) return -1;
    if (mode == 0) {
      memcpy((char *)o->data + (size_t)off * es, (const char *)u->data + (size_t)e * es, es);
    } else if (wf_kis_int(o)) {
      int64_t a = wf_kget_int(o, off), b = wf_kget_int(u, e);
      uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
      wf_kset_int(o, off, mode == 1 ? (int64_t)(ua + ub) : mode == 2 ? (int64_t)(ua * ub) : mode == 3 ? (a > b ? a : b) : (a < b ? a : b));
    } else {
      double a = wf_tensor_get(o, off), b = wf_tensor_get(u, e);
      wf_tensor_set(o, off, mode == 1 ? a + b : mode == 2 ? a * b : mode == 3 ? fmax(a, b) : fmin(a, b));
    }
  }
  return 0;
}
