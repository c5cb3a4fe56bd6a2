/* Reference kernel of argmax (ONNX ArgMax): along `axis`, the i64 index of the largest
 * element; ties go to the first index (the last with select_last_index), as ONNX and torch
 * specify. NaN counts as larger than any number (numpy's argmax, which the ONNX reference
 * follows): the first NaN wins. Floats compare as double, integers exactly. */
#include <math.h>

#include "ir/kernels/kernels.h"

int wf_kern_ARGMAX(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *o = k->out[0];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", 0), a->rank);
  int last = wf_rule_bool(k->f, k->op, "select_last_index", 0);
  int is_int = wf_kis_int(a);
  int64_t n = a->dims[axis], outer = wf_kprod(a->dims, 0, axis), inner = wf_kprod(a->dims, axis + 1, a->rank);
  for (int64_t ou = 0; ou < outer; ou++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t best = 0, bi = 0;
      double bf = 0;
      for (int64_t j = 0; j < n; j++) {
        int64_t e = (ou * n + j) * inner + in;
        int better;
        if (is_int) {
          int64_t v = wf_kget_int(a, e);
          better = j == 0 || v > bi || (last && v == bi);
          if (better) bi = v;
        } else {
          double v = wf_tensor_get(a, e);
          if (j == 0) better = 1;
          else if (isnan(bf)) better = last && isnan(v);
          else better = isnan(v) || v > bf || (last && v == bf);
          if (better) bf = v;
        }
        if (better) best = j;
      }
      ((int64_t *)o->data)[ou * inner + in] = best;
    }
  return 0;
}
