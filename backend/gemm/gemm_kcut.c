/* Cutting a dist.gemm's K on a W x H region (docs/gemm.md, "Non-square regions"): whether the
 * default blocks cut K in lcm(W, H) tiles, and the padding that makes them when they do not.
 * The chooser (gemm_choose.c) asks before an algorithm is set, the lowerings, the blocks
 * (wf_lower_block) and the manifest after, and all must agree. Padding is free only where the
 * host writes the data: graph inputs and constants whose one use is the GEMM (any other use
 * would see the larger blocks). Both such operands pad K to L ceil(K/L); one alone pads to the
 * other's cuts when those make whole tiles. */
#include "backend/gemm/gemm_kcut.h"

#include <string.h>

#include "ir/support/intmath.h"

int wf_gemm_rect_k_fits(int w, int h, int64_t K) {
  if (w == 1 || h == 1) return 1; /* one operand holds the whole K: it is cut as the other's */
  int64_t l = wf_lcm(w, h);
  int64_t ka = (K + w - 1) / w, kb = (K + h - 1) / h;
  return ka * w == kb * h && (ka * w) % l == 0;
}

/* The op using v when v is a graph input or constant with exactly one use (the function's
 * results are a use too), else NULL; *as = the operand position. */
const wf_op *wf_gemm_only_use(const wf_func *f, wf_value v, int *as) {
  const wf_value_info *vi = &f->values[v];
  if (vi->kind == WF_VAL_RESULT || vi->type.rank < 1) return NULL;
  /* a constant read through two values is used twice */
  for (uint32_t i = 1; vi->kind == WF_VAL_GLOBAL && i < f->n_values; i++)
    if (i != v && f->values[i].kind == WF_VAL_GLOBAL && f->values[i].index == vi->index) return NULL;
  const wf_op *use = NULL;
  int n = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
    if (op->operands[i] != v) continue;
    use = op;
    *as = i;
    n++;
  }
  return n == 1 ? use : NULL;
}

int64_t wf_gemm_k_paddable(const wf_func *f, const wf_op *op, int w, int h) {
  if (w == h || w < 2 || h < 2 || (op->code != WF_OP_MATMUL && op->code != WF_OP_DIST_GEMM)) return 0;
  const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
  if (tb->rank < 2 || ta->layout.rank != ta->rank || tb->layout.rank != tb->rank ||
      ta->layout.dims[ta->rank - 1].split != WF_AXIS_X || tb->layout.dims[tb->rank - 2].split != WF_AXIS_Y)
    return 0;
  int64_t K = ta->dims[ta->rank - 1], l = wf_lcm(w, h);
  if (wf_gemm_rect_k_fits(w, h, K)) return 0;
  int ua = -1, ub = -1;
  int pa = wf_gemm_only_use(f, op->operands[0], &ua) == op && ua == 0;
  int pb = wf_gemm_only_use(f, op->operands[1], &ub) == op && ub == 1;
  if (pa && pb) return (K + l - 1) / l * l;
  /* One operand computed: it keeps partition's blocks, and the other is padded to meet its
   * cuts when they make whole lcm tiles (Gemm(transA=1) on 5x2: A = transpose(a) has K = 6
   * in 5 blocks of 2, 10 = lcm; B's 2 blocks of 3 become 2 of 5). */
  int64_t cut = pa ? (K + h - 1) / h * h : pb ? (K + w - 1) / w * w : 0;
  return cut % l == 0 ? cut : 0;
}

int64_t wf_gemm_rect_k_padded(const wf_func *f, const wf_op *op, int w, int h) {
  if (op->code != WF_OP_DIST_GEMM) return 0;
  const char *algo = wf_op_str(f, op, "algo", "meshgemm");
  if (strcmp(algo, "meshgemm") && strcmp(algo, "cannon")) return 0;
  return wf_gemm_k_paddable(f, op, w, h);
}

int64_t wf_gemm_rect_k_pad(const wf_func *f, wf_value v, int d, int w, int h) {
  int as = -1;
  const wf_type *t = wf_value_type(f, v);
  /* (wf_lower_block asks for every dim of every block: the cheap tests first) */
  if (w == h || w < 2 || h < 2 || d < t->rank - 2 || f->values[v].kind == WF_VAL_RESULT) return 0;
  const wf_op *use = wf_gemm_only_use(f, v, &as);
  if (!use || as > 1) return 0;
  if (d != (as == 0 ? t->rank - 1 : t->rank - 2)) return 0; /* not K */
  return wf_gemm_rect_k_padded(f, use, w, h);
}
