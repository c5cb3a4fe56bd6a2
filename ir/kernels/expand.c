/* Reference kernel of expand: numpy broadcasting of the operand to the result shape (bytes
 * copied, exact for every dtype). The result is written in blocks: the trailing dims the
 * operand holds whole are one contiguous copy per block, and trailing dims it broadcasts
 * repeat one element, so the index arithmetic runs once per block, not per element (a large
 * constant the ONNX importer folds, docs/onnx.md "Host memory"). */
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_EXPAND(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  size_t es = wf_dtype_size(o->dtype);
  int64_t n = wf_tensor_numel(o), inner = 1, rep = 1;
  int d = o->rank - 1, e = a->rank - 1;
  for (; d >= 0 && e >= 0 && a->dims[e] == o->dims[d]; d--, e--) inner *= o->dims[d]; /* held whole */
  if (inner == 1)
    for (; d >= 0 && (e < 0 || a->dims[e] == 1); d--, e--) rep *= o->dims[d]; /* broadcast */
  int64_t blk = inner * rep;
  if (!blk) return 0;
  for (int64_t b = 0; b < n; b += blk) {
    const char *src = (const char *)a->data + (size_t)wf_kbcast_index(a, o, b) * es;
    char *dst = (char *)o->data + (size_t)b * es;
    if (rep == 1) {
      memcpy(dst, src, (size_t)inner * es);
      continue;
    }
    memcpy(dst, src, es); /* one element, doubled until the run is full */
    for (int64_t done = 1; done < rep;) {
      int64_t m = done < rep - done ? done : rep - done;
      memcpy(dst + (size_t)done * es, dst, (size_t)m * es);
      done += m;
    }
  }
  return 0;
}
