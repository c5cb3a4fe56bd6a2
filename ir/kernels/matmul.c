/* Reference kernels of matmul (numpy matmul: batched, broadcasting batch dims, 1-D operands
 * promoted and their unit dim dropped) and gemm (ONNX Gemm: alpha * A' B' + beta * C, C
 * broadcast to [M, N]). Dot products accumulate in double (int64 for integers, exact). */
#include <stdlib.h>

#include "ir/kernels/kernels.h"

/* Whole tensor as doubles, so the inner loop is plain arithmetic. */
static double *as_f64(const wf_tensor *t) {
  int64_t n = wf_tensor_numel(t);
  double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
  WF_ASSERT(d != NULL);
  for (int64_t i = 0; i < n; i++) d[i] = wf_tensor_get(t, i);
  return d;
}

int wf_kern_MATMUL(const wf_kctx *k) {
  const wf_tensor *a = k->in[0], *b = k->in[1];
  wf_tensor *o = k->out[0];
  int ra = a->rank, rb = b->rank;
  int64_t m = ra >= 2 ? a->dims[ra - 2] : 1, kk = a->dims[ra - 1];
  int64_t n = rb >= 2 ? b->dims[rb - 1] : 1;
  int abr = ra > 2 ? ra - 2 : 0, bbr = rb > 2 ? rb - 2 : 0;
  int obr = o->rank - (ra >= 2) - (rb >= 2);
  int64_t nb = wf_kprod(o->dims, 0, obr);
  int isint = wf_kis_int(o);
  double *da = isint ? NULL : as_f64(a), *db = isint ? NULL : as_f64(b);
  double *row = malloc(sizeof(double) * (size_t)(n ? n : 1));
  WF_ASSERT(row != NULL);
  for (int64_t bi = 0; bi < nb; bi++) {
    int64_t oa = wf_kbcast_index_shape(abr, a->dims, obr, o->dims, bi) * m * kk;
    int64_t ob = wf_kbcast_index_shape(bbr, b->dims, obr, o->dims, bi) * kk * n;
    for (int64_t i = 0; i < m; i++) {
      if (isint) {
        for (int64_t j = 0; j < n; j++) {
          uint64_t s = 0; /* wraps like the dtype would, without signed overflow */
          for (int64_t p = 0; p < kk; p++)
            s += (uint64_t)wf_kget_int(a, oa + i * kk + p) * (uint64_t)wf_kget_int(b, ob + p * n + j);
          wf_kset_int(o, (bi * m + i) * n + j, (int64_t)s);
        }
        continue;
      }
      /* i-p-j order walks b and the accumulator row contiguously */
      for (int64_t j = 0; j < n; j++) row[j] = 0.0;
      for (int64_t p = 0; p < kk; p++) {
        double x = da[oa + i * kk + p];
        const double *bp = db + ob + p * n;
        for (int64_t j = 0; j < n; j++) row[j] += x * bp[j];
      }
      for (int64_t j = 0; j < n; j++) wf_tensor_set(o, (bi * m + i) * n + j, row[j]);
    }
  }
  free(row);
  free(da);
  free(db);
  return 0;
}

int wf_kern_GEMM(const wf_kctx *k) {
  const wf_tensor *a = k->in[0], *b = k->in[1], *c = k->n_in == 3 ? k->in[2] : NULL;
  wf_tensor *o = k->out[0];
  int ta = wf_rule_bool(k->f, k->op, "trans_a", 0), tb = wf_rule_bool(k->f, k->op, "trans_b", 0);
  double alpha = wf_rule_float(k->f, k->op, "alpha", 1.0);
  double beta = wf_rule_float(k->f, k->op, "beta", 1.0);
  int64_t m = o->dims[0], n = o->dims[1], kk = a->dims[ta ? 0 : 1];
  double *da = as_f64(a), *db = as_f64(b);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < kk; p++) {
        double x = ta ? da[p * m + i] : da[i * kk + p];
        double y = tb ? db[j * kk + p] : db[p * n + j];
        s += x * y;
      }
      s *= alpha;
      if (c) s += beta * wf_tensor_get(c, wf_kbcast_index_shape(c->rank, c->dims, 2, o->dims, i * n + j));
      wf_tensor_set(o, i * n + j, s);
    }
  free(da);
  free(db);
  return 0;
}
