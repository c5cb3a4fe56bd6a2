/* transpose of the last two dims of a matrix split over a square P x P region (a relayout
 * over the fabric; docs/partition.md).
 *
 * X [R, C] {R_y, C_x}: PE (x, y) holds block (y, x). Xᵀ [C, R] {C_y, R_x}: PE (x, y) needs
 * block (y, x) of Xᵀ, i.e. X's block (x, y)ᵀ, held by PE (y, x) — the mirror image across
 * the diagonal. One class cannot name "my mirror" as a route, so the block travels in two
 * broadcasts whose senders are plain guards. Step k of P, for every row y at once:
 *
 *   PE (k, y) multicasts its block along row y       (row-broadcast color, as SUMMA's A)
 *   the diagonal PE (y, y) multicasts what it got    (column-broadcast color, as SUMMA's B)
 *     along column y
 *   PE (y, k) keeps it, transposed locally: its block (k, y) of Xᵀ is X's (y, k)ᵀ
 *
 * so after P steps row k of the result has been written, one PE per column per step. Every
 * PE takes every broadcast (a flooding broadcast is consumed by all), which costs two block
 * transfers per step: 2·P·(block) wavelets per PE, SUMMA's order. Batch dims (never split)
 * are transposed matrix by matrix, at their word offsets. Non-square regions give the
 * result blocks another shape than the operand's (⌈C/H⌉ x ⌈R/W⌉ vs ⌈R/H⌉ x ⌈C/W⌉): the
 * two-phase relayout of lower_relayout.c moves them. */
#include "backend/collectives/lower_relayout.h"
#include "waferc/diag.h"

/* The mirror's cycles: count * P steps of mn-word blocks, pipelined. Step k + 1 cannot start
 * before two chains of step k end (docs/partition.md, "Transpose over the fabric"):
 *   - near the diagonal: PE (k+1, k+1)'s column broadcast needs the row PE (k, k+1) sent one hop
 *     away, and PE (k+1, y), the next row sender, needs that column: two transfers of
 *     mn + 2 T_R + hop, each with its swset and its receiver's store cycle;
 *   - row k transposes what it kept (mn) after its row and column transfers (2 mn, two swsets,
 *     two store cycles); a flooding broadcast moves only when every receiver takes it, so row
 *     k's lag holds back step k + 1's columns, and with them every row.
 * The rest of the broadcasts' distance is paid once: the last step's farthest receiver.
 * (Charging every step both broadcasts' whole distance over-predicted the mirror 4.5x on
 * 32 x 32; BENCHMARKS.md, "Predictions of the mirror transpose".) */
static int64_t bcast_transpose_cycles(const wf_target *t, int P, int64_t count, int64_t mn) {
  int64_t chain = 2 * (mn + 2 * t->ramp_cycles + t->hop_cycles) + 4, row = 3 * mn + 4;
  return count * P * (chain > row ? chain : row) + (int64_t)(P > 2 ? P - 2 : 0) * t->hop_cycles;
}

/* W x H, W != H: each matrix of the batch through the two-phase relayout. */
static int lower_rect(wf_lower *L, const wf_op *op, wf_lowered_op *out, int64_t count, int64_t m, int64_t n) {
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *xt = wf_value_type(L->f, xv);
  int64_t rrows, rn;
  wf_lower_block(L, rv, &rrows, &rn);
  wf_relayout_tr t = {wf_lower_sym(L, xv), wf_lower_sym(L, rv), 0, 0, xt->dims[xt->rank - 2], xt->dims[xt->rank - 1],
                      m, n, rrows / count, rn};
  out->predicted = 0;
  for (int64_t i = 0; i < count; i++) {
    t.src_off = i * m * n;
    t.dst_off = i * t.cb2 * t.rb2;
    int rc = wf_relayout_transpose(L, &t, op->loc, &out->predicted);
    if (rc) return rc;
  }
  out->lowering = "relayout-transpose";
  return 0;
}

int wf_lower_transpose_dist(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *xt = wf_value_type(L->f, xv);
  int r = xt->rank;
  const wf_type *rt = wf_value_type(L->f, rv);
  if (r < 2 || xt->layout.dims[r - 2].split != WF_AXIS_Y || xt->layout.dims[r - 1].split != WF_AXIS_X ||
      rt->layout.dims[r - 2].split != WF_AXIS_Y || rt->layout.dims[r - 1].split != WF_AXIS_X) {
    wf_error(op->loc, "'transpose' lowers a matrix {rows_y, cols_x} to {cols_y, rows_x} only (a dim "
                      "of size 1 is not split, which changes the blocks)");
    return WF_EXIT_UNSUPPORTED;
  }
  for (int d = 0; d + 2 < r; d++)
    if (xt->layout.dims[d].split != WF_AXIS_NONE) {
      wf_error(op->loc, "'transpose': batch dim %d is split over the mesh; only the last two dims "
                        "may be", d);
      return WF_EXIT_UNSUPPORTED;
    }
  int64_t rows, n;
  wf_lower_block(L, xv, &rows, &n);
  int64_t count = 1;
  for (int d = 0; d + 2 < r; d++) count *= xt->dims[d];
  int64_t m = rows / count, mn = m * n;
  int sx = wf_lower_sym(L, xv), sr = wf_lower_sym(L, rv);
  if (L->w != L->h) return lower_rect(L, op, out, count, m, n);
  if (L->w == 1) { /* one PE holds everything: each matrix transposed in place */
    for (int64_t i = 0; i < count; i++)
      wf_emit(L, NULL, WF_PEOP_TRANSPOSE,
              (wf_pe_arg[]){wf_arg_at(sr, i * mn), wf_arg_at(sx, i * mn), wf_arg_int(m), wf_arg_int(n)});
    out->lowering = "local-transpose";
    out->predicted = count * mn;
    return 0;
  }
  int crow = wf_lower_color(L, WF_COLOR_ROW_BCAST, op->loc);
  int ccol = wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc);
  if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
  L->move_bits |= WF_MOVE_TRANSPOSE;
  int trow = wf_lower_temp(L, "$tr_row", mn * 4), tcol = wf_lower_temp(L, "$tr_col", mn * 4);
  int k = wf_lower_var(L, "k");
  wf_pe_term tk = wf_term_var(k, 0), tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  /* Guards: [x==k], [x!=k], [x==y, x==k], [x==y, x!=k], [x!=y], [y==k, x==y], [y==k, x!=y]. */
  wf_pe_guard xk = wf_guard0(), xnk = wf_guard0(), dk = wf_guard0(), dnk = wf_guard0(),
              off = wf_guard0(), keep_own = wf_guard0(), keep_got = wf_guard0();
  wf_guard_add(&xk, tx, WF_CMP_EQ, tk);
  wf_guard_add(&xnk, tx, WF_CMP_NE, tk);
  wf_guard_add(&dk, tx, WF_CMP_EQ, ty);
  wf_guard_add(&dk, tx, WF_CMP_EQ, tk);
  wf_guard_add(&dnk, tx, WF_CMP_EQ, ty);
  wf_guard_add(&dnk, tx, WF_CMP_NE, tk);
  wf_guard_add(&off, tx, WF_CMP_NE, ty);
  wf_guard_add(&keep_own, ty, WF_CMP_EQ, tk);
  wf_guard_add(&keep_own, tx, WF_CMP_EQ, ty);
  wf_guard_add(&keep_got, ty, WF_CMP_EQ, tk);
  wf_guard_add(&keep_got, tx, WF_CMP_NE, ty);
  for (int64_t i = 0; i < count; i++) {
    int64_t o = i * mn;
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tk), wf_arg_int(0), wf_arg_term(wf_term(WF_TERM_W, 0))});
    wf_emit(L, &xk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_at(sx, o), wf_arg_int(mn)});
    wf_emit(L, &xnk, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(trow), wf_arg_int(mn)});
    wf_emit(L, &dk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_at(sx, o), wf_arg_int(mn)});
    wf_emit(L, &dnk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(trow), wf_arg_int(mn)});
    wf_emit(L, &off, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(tcol), wf_arg_int(mn)});
    wf_emit(L, &keep_own, WF_PEOP_TRANSPOSE,
            (wf_pe_arg[]){wf_arg_at(sr, o), wf_arg_at(sx, o), wf_arg_int(m), wf_arg_int(n)});
    wf_emit(L, &keep_got, WF_PEOP_TRANSPOSE,
            (wf_pe_arg[]){wf_arg_at(sr, o), wf_arg_sym(tcol), wf_arg_int(m), wf_arg_int(n)});
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  out->lowering = "bcast-transpose";
  out->predicted = bcast_transpose_cycles(L->t, L->w, count, mn);
  return 0;
}
