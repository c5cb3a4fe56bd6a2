/* Reference kernel of dist.gemm: numerically a rank-2 matmul whatever the algorithm (the
 * algorithm only decides how the blocks travel over the fabric). */
#include "ir/kernels/kernels.h"

int wf_kern_DIST_GEMM(const wf_kctx *k) { return wf_kern_MATMUL(k); }
