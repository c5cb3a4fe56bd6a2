/* Reductions over the local block and the allreduce that completes them across the mesh.
 *
 * A tensor's PE block is rows x cols, row-major (every dim but the last folded into rows).
 * A reduction over the last dim gives one value per row (rmax / rsum); over the dim before
 * it, one per column. When the reduced dim is split along an axis, the partial results are
 * combined by an allreduce along that axis, so every PE of the line ends with the full
 * statistic for its rows (or columns) — what softmax, layernorm and rmsnorm broadcast back.
 *
 * The allreduce is phase 1's chain: partials flow to position 0 of the line, combined as
 * they arrive (recvadd / recvmax), then position 0 floods the result back. Every value
 * crosses the fabric as wavelets. */
#include <string.h>

#include "backend/lower_collective.h"
#include "waferc/diag.h"

int64_t wf_lower_elem_cost(const wf_target *t, wf_peop op) {
  switch (wf_peops[op].cost) {
    case WF_PECOST_EXP: return t->exp_cycles;
    case WF_PECOST_DIV: return t->div_cycles;
    default: return 1;
  }
}

/* Records a library allreduce in the current op's manifest `explain` (a softmax or norm may
 * hold two): "allreduce-x:ring (len 4, 61 cycles predicted)". */
static void note_collective(wf_lower *L, const wf_coll_result *res, int axis, int64_t len) {
  char *e = L->ops[L->n_ops].explain;
  size_t n = strlen(e);
  snprintf(e + n, sizeof L->ops[0].explain - n, "%sallreduce-%s:%s (%lld words, %.0f cycles predicted)",
           n ? "; " : "", axis == WF_AXIS_X ? "x" : "y", wf_coll_algo_name(res->algo), (long long)len,
           res->predicted);
}

int wf_lower_allreduce(wf_lower *L, int sym, int64_t len, int axis, int is_max, wf_loc loc,
                       int64_t *cycles) {
  int along_x = axis == WF_AXIS_X;
  int pes = along_x ? L->w : L->h;
  if (pes <= 1) return 0;
  if (L->reduce_algo != -2) {
    /* waferc --reduce-algo: the collectives library, forced or the model's choice (a ring
     * cannot combine maxima: a max takes the model's choice among the trees) */
    wf_coll_line ln = {axis, pes, wf_guard0()};
    int algo = L->reduce_algo == WF_COLL_RING && is_max ? -1 : L->reduce_algo;
    wf_coll_result res;
    memset(&res, 0, sizeof res);
    int rc = wf_lower_coll_allreduce(L, &ln, algo, sym, len, is_max ? WF_PEOP_RECVMAX : WF_PEOP_RECVADD,
                                     loc, &res);
    if (cycles) *cycles += (int64_t)(res.predicted + 0.5);
    note_collective(L, &res, axis, len);
    return rc;
  }
  int cred = wf_lower_color(L, along_x ? WF_COLOR_REDUCE_X : WF_COLOR_REDUCE_Y, loc);
  int cbc = wf_lower_color(L, along_x ? WF_COLOR_BCAST_X : WF_COLOR_BCAST_Y, loc);
  if (cred < 0 || cbc < 0) return WF_EXIT_NOFIT;
  wf_peop recv_op = is_max ? WF_PEOP_RECVMAX : WF_PEOP_RECVADD;
  wf_pe_term pos = wf_term(along_x ? WF_TERM_X : WF_TERM_Y, 0);
  wf_pe_term last = wf_term(along_x ? WF_TERM_W : WF_TERM_H, -1), zero = wf_term_int(0);
  wf_pe_guard far_end = wf_guard0(), not_far = wf_guard0(), middle = wf_guard0(),
              root = wf_guard0(), rest = wf_guard0();
  wf_guard_add(&far_end, pos, WF_CMP_EQ, last);
  wf_guard_add(&not_far, pos, WF_CMP_LT, last);
  wf_guard_add(&middle, pos, WF_CMP_GT, zero);
  wf_guard_add(&middle, pos, WF_CMP_LT, last);
  wf_guard_add(&root, pos, WF_CMP_EQ, zero);
  wf_guard_add(&rest, pos, WF_CMP_GT, zero);
  wf_pe_arg n = wf_arg_int(len), s = wf_arg_sym(sym);
  wf_emit(L, &far_end, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cred), s, n});
  wf_emit(L, &not_far, recv_op, (wf_pe_arg[]){wf_arg_int(cred), s, n});
  wf_emit(L, &middle, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cred), s, n});
  wf_emit(L, &root, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cbc), s, n});
  wf_emit(L, &rest, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(cbc), s, n});
  if (cycles) *cycles += wf_cost_chain_allreduce(L->t, len, pes);
  return 0;
}

int wf_lower_row_stat(wf_lower *L, int dst, int src, int64_t rows, int64_t cols, int is_max,
                      int split_x, wf_loc loc, int64_t *cycles) {
  wf_emit(L, NULL, is_max ? WF_PEOP_RMAX : WF_PEOP_RSUM,
          (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(src), wf_arg_int(rows), wf_arg_int(cols)});
  if (cycles) *cycles += rows * cols;
  return split_x ? wf_lower_allreduce(L, dst, rows, WF_AXIS_X, is_max, loc, cycles) : 0;
}

int wf_lower_col_stat(wf_lower *L, int dst, int src, int64_t rows, int64_t cols, int is_max,
                      int split_y, wf_loc loc, int64_t *cycles) {
  if (is_max) {
    /* Row by row into dst: rows - 1 elementwise maxima of one row each. */
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(src), wf_arg_int(cols)});
    for (int64_t i = 1; i < rows; i++) {
      wf_pe_arg row = wf_arg_sym(src);
      row.off = (int32_t)(i * cols);
      wf_emit(L, NULL, WF_PEOP_MAX,
              (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(dst), row, wf_arg_int(1), wf_arg_int(cols),
                            wf_arg_int(WF_BMODE_IJ)});
    }
    if (cycles) *cycles += rows * cols;
  } else {
    /* Column sums as a [1 x rows] . [rows x cols] product with a row of ones (exp(0)). */
    int ones = wf_lower_temp(L, "$ones", rows * 4);
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(ones), wf_arg_int(rows)});
    wf_emit(L, NULL, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(ones), wf_arg_sym(ones), wf_arg_int(rows)});
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_int(cols)});
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(ones), wf_arg_sym(src), wf_arg_int(1),
                          wf_arg_int(rows), wf_arg_int(cols)});
    if (cycles) *cycles += rows * (1 + L->t->exp_cycles) + cols + rows * cols / L->t->fmac_per_cycle;
  }
  return split_y ? wf_lower_allreduce(L, dst, cols, WF_AXIS_Y, is_max, loc, cycles) : 0;
}
