/* Reference kernels of dist.gemm, dist.gemm_t and dist.gemv_t: numerically a rank-2 matmul (with B
 * transposed for gemm_t) whatever the algorithm (the algorithm only decides how the blocks
 * travel over the fabric). */
#include "ir/kernels/kernels.h"

int wf_kern_DIST_GEMM(const wf_kctx *k) { return wf_kern_MATMUL(k); }

/* C[i][j] = sum_p A[i][p] B[j][p], accumulated in double like matmul's kernel; A's leading
 * dims fold into its rows i. */
int wf_kern_DIST_GEMM_T(const wf_kctx *k) {
  const wf_tensor *a = k->in[0], *b = k->in[1];
  wf_tensor *o = k->out[0];
  int64_t kk = a->dims[a->rank - 1], n = b->dims[0], m = 1;
  for (int d = 0; d + 1 < a->rank; d++) m *= a->dims[d];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < kk; p++) s += wf_tensor_get(a, i * kk + p) * wf_tensor_get(b, j * kk + p);
      wf_tensor_set(o, i * n + j, s);
    }
  return 0;
}

int wf_kern_DIST_GEMV_T(const wf_kctx *k) { return wf_kern_DIST_GEMM_T(k); }
