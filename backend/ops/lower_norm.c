/* layernorm and rmsnorm over the last axis of a partitioned tensor (split along x):
 *
 *   layernorm: mean = allreduce_x(rsum(x)) / N, d = x - mean,
 *              y = d * rsqrt(allreduce_x(rsum(d*d)) / N + eps) * scale + bias
 *   rmsnorm:   y = x * rsqrt(allreduce_x(rsum(x*x)) / N + eps) * scale
 *
 * N is the full length of the axis, not the block's: the allreduce makes every PE of a row
 * hold the whole row's sums. Over a padded axis the sums read only the real elements
 * (lower_reduce.c), so neither x's padding nor the d = x - mean it turns into enters them. 1/N and eps are one-element constants in weights.bin; the
 * statistics are m x 1 blocks, so `mul stat, stat, k, m, 1, j` applies a constant. */
#include <stdlib.h>

#include "backend/resources/lower.h"
#include "waferc/diag.h"

/* The broadcast mode of an affine parameter (scale, bias) against the m x n block. */
static int param_mode(wf_lower *L, const wf_op *op, wf_value p, int64_t m, int64_t n, int *mode) {
  const wf_type *pt = wf_value_type(L->f, p), *xt = wf_value_type(L->f, op->operands[0]);
  int64_t pm, pn;
  wf_lower_block(L, p, &pm, &pn);
  int last = xt->rank - 1;
  int same_split = pt->layout.dims[pt->rank - 1].split == xt->layout.dims[last].split;
  if (pm == 1 && pn == n && same_split) *mode = WF_BMODE_J;
  else if (pm == m && pn == n && pt->rank == xt->rank && same_split) *mode = WF_BMODE_IJ;
  else {
    wf_error(op->loc, "'%s': its scale/bias operand must have the normalized axis' length "
                      "(or the input's shape)", wf_opinfos[op->code].name);
    return WF_EXIT_UNSUPPORTED;
  }
  return 0;
}

int wf_lower_norm(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  int layer = op->code == WF_OP_LAYERNORM;
  wf_value xv = op->operands[0], yv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv);
  int64_t axis = wf_op_int(L->f, op, "axis", -1);
  if (axis != -1 && axis != t->rank - 1) {
    wf_error(op->loc, "'%s' over axis %lld is not supported: the lowering normalizes the last "
                      "axis", wf_opinfos[op->code].name, (long long)axis);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t m, n, cyc = 0;
  wf_lower_block(L, xv, &m, &n);
  int smode, bmode = 0, rc;
  if ((rc = param_mode(L, op, op->operands[1], m, n, &smode))) return rc;
  if (layer && (rc = param_mode(L, op, op->operands[2], m, n, &bmode))) return rc;
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  wf_axis_view v = wf_lower_axis_view(L, t, b, t->rank - 1); /* m x n: outer m, inner 1 */
  double eps = wf_op_float(L->f, op, "epsilon", layer ? 1e-5 : 1e-6);
  int sx = wf_lower_sym(L, xv), sy = wf_lower_sym(L, yv);
  int ss = wf_lower_sym(L, op->operands[1]), sb = layer ? wf_lower_sym(L, op->operands[2]) : -1;
  int kn = wf_lower_scalar(L, (float)(1.0 / (double)t->dims[t->rank - 1]));
  int ke = wf_lower_scalar(L, (float)eps);
  int stat = wf_lower_temp(L, "$stat", m * 4), sq = wf_lower_temp(L, "$sq", m * n * 4);
  int centered = sx;
  if (layer) {
    if ((rc = wf_lower_axis_stat(L, stat, sx, &v, 0, op->loc, &cyc))) return rc;
    wf_emit_bin(L, WF_PEOP_MUL, stat, stat, kn, m, 1, WF_BMODE_J);
    wf_emit_bin(L, WF_PEOP_SUB, sy, sx, stat, m, n, WF_BMODE_I);
    centered = sy;
    cyc += m + m * n;
  }
  wf_emit_bin(L, WF_PEOP_MUL, sq, centered, centered, m, n, WF_BMODE_IJ);
  if ((rc = wf_lower_axis_stat(L, stat, sq, &v, 0, op->loc, &cyc))) return rc;
  wf_emit_bin(L, WF_PEOP_MUL, stat, stat, kn, m, 1, WF_BMODE_J);
  wf_emit_bin(L, WF_PEOP_ADD, stat, stat, ke, m, 1, WF_BMODE_J);
  wf_emit(L, NULL, WF_PEOP_RSQRT, (wf_pe_arg[]){wf_arg_sym(stat), wf_arg_sym(stat), wf_arg_int(m)});
  wf_emit_bin(L, WF_PEOP_MUL, sy, centered, stat, m, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MUL, sy, sy, ss, m, n, smode);
  if (layer) wf_emit_bin(L, WF_PEOP_ADD, sy, sy, sb, m, n, bmode);
  cyc += m * n * (3 + layer) + m * (2 + L->t->div_cycles);
  /* A padded axis split along x (or y, a decode step's token): the PEs holding padding columns zero them (times a 1/0 mask
   * of their block's columns), so the result's padding is 0 whatever the scale, shift and
   * statistics put there, and a matmul may contract over it (partition_pad.c). */
  if (v.split != WF_AXIS_NONE && v.full < v.len * v.parts) {
    float *mask = malloc((size_t)n * sizeof *mask);
    WF_ASSERT(mask);
    for (int px = 0; px < v.parts; px++) {
      int64_t real = v.full - (int64_t)px * n;
      if (real >= n) continue;
      for (int64_t c = 0; c < n; c++) mask[c] = c < real ? 1.0f : 0.0f;
      int km = wf_lower_const_block(L, mask, n);
      wf_pe_guard g = wf_guard0();
      wf_gadd(&g, wf_term(v.split == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0), WF_CMP_EQ, wf_term(WF_TERM_INT, px));
      wf_emit(L, &g, WF_PEOP_MUL,
              (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_sym(km), wf_arg_int(m), wf_arg_int(n),
                            wf_arg_int(WF_BMODE_J)});
    }
    free(mask);
    cyc += m * n;
  }
  out->lowering = wf_lower_stat_name(L, v.split ? 1u << v.split : 0, v.full < v.len * v.parts, out);
  out->predicted = cyc;
  return 0;
}
