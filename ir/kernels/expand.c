/* Reference kernel of expand: numpy broadcasting of the operand to the result shape (bytes
 * copied, exact for every dtype). */
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_EXPAND(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  size_t es = wf_dtype_size(o->dtype);
  int64_t n = wf_tensor_numel(o);
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)o->data + (size_t)i * es, (const char *)a->data + (size_t)wf_kbcast_index(a, o, i) * es, es);
  return 0;
}
