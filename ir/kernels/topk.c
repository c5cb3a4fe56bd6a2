/* Reference kernel of topk (ONNX TopK): along `axis`, the k largest (or smallest) elements
 * and their i64 indices. Ties go to the lower index, as ONNX specifies; NaN counts as larger
 * than any number. Results are in sorted order (sorted=false allows any order: sorted is a
 * valid choice). Floats compare as double, integers exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/kernels/kernels.h"

typedef struct topk_item {
  double f;
  int64_t i;   /* integer value */
  int64_t idx; /* position along the axis */
} topk_item;

static int g_largest, g_is_int; /* set per call; qsort has no context argument */

/* -1 when a should come before b. */
static int item_cmp(const void *pa, const void *pb) {
  const topk_item *a = pa, *b = pb;
  int c = 0;
  if (g_is_int) c = a->i < b->i ? -1 : a->i > b->i;
  else if (isnan(a->f) || isnan(b->f)) c = isnan(a->f) && isnan(b->f) ? 0 : isnan(a->f) ? 1 : -1;
  else c = a->f < b->f ? -1 : a->f > b->f;
  if (g_largest) c = -c;
  if (c) return c;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int wf_kern_TOPK(const wf_kctx *k) {
  const wf_tensor *a = k->in[0];
  wf_tensor *vals = k->out[0], *idx = k->out[1];
  int axis = wf_norm_axis(wf_rule_int(k->f, k->op, "axis", -1), a->rank);
  int64_t kk = wf_rule_int(k->f, k->op, "k", 0);
  g_largest = wf_rule_bool(k->f, k->op, "largest", 1);
  g_is_int = wf_kis_int(a);
  int64_t n = a->dims[axis], outer = wf_kprod(a->dims, 0, axis), inner = wf_kprod(a->dims, axis + 1, a->rank);
  topk_item *items = malloc((size_t)(n ? n : 1) * sizeof *items);
  WF_ASSERT(items);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      for (int64_t j = 0; j < n; j++) {
        int64_t e = (o * n + j) * inner + in;
        items[j].idx = j;
        if (g_is_int) items[j].i = wf_kget_int(a, e);
        else items[j].f = wf_tensor_get(a, e);
      }
      qsort(items, (size_t)n, sizeof *items, item_cmp);
      for (int64_t j = 0; j < kk; j++) {
        int64_t e = (o * kk + j) * inner + in;
        if (g_is_int) wf_kset_int(vals, e, items[j].i);
        else wf_tensor_set(vals, e, items[j].f);
        ((int64_t *)idx->data)[e] = items[j].idx;
      }
    }
  free(items);
  return 0;
}
