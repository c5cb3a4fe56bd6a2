/* Reference kernel of trilu (ONNX Trilu): over the last two dims [.., R, C], element (i, j)
 * is kept when j - i >= k (upper) or j - i <= k (lower), and zeroed (false) otherwise. */
#include <string.h>

#include "ir/kernels/kernels.h"

int wf_kern_TRILU(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int upper = wf_rule_bool(k->f, k->op, "upper", 1);
  int64_t diag = wf_rule_int(k->f, k->op, "k", 0);
  int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
  size_t es = wf_dtype_size(a->dtype);
  int64_t n = wf_tensor_numel(a);
  /* the result arrives zeroed: copy only the kept elements */
  for (int64_t e = 0; e < n; e++) {
    int64_t j = e % cols, i = (e / cols) % rows;
    int keep = upper ? j - i >= diag : j - i <= diag;
    if (keep) memcpy((char *)o->data + (size_t)e * es, (const char *)a->data + (size_t)e * es, es);
  }
  return 0;
}
