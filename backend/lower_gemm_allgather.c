/* Allgather GEMM (a baseline, docs/gemm.md): every PE first gathers its whole A row panel
 * (the W blocks of row y) and B column panel (the H blocks of column x), then multiplies
 * the panels block by block, C += A[y][j] B[j][x] for j < W, with no further traffic. The
 * region may be W x H with W != H (the panels hold the whole K either way).
 *
 * The gather is N flooding broadcasts along rows and columns on the SUMMA colors: in round
 * j, PE (j, y) sends its A block along row y and PE (x, j) its B block along column x;
 * everyone else receives into panel slot j; the owners copy their own blocks into their
 * slots after the last round (inside a round the copy would delay the send). Slots are
 * fixed offsets, so the rounds are unrolled: the program grows with N (2N guarded sends
 * and receives, N multiplies), one class still. Memory: N (m k + k n) floats of panels —
 * what makes this algorithm the memory-hungry end of the spectrum. */
#include "backend/lower_gemm.h"
#include "waferc/diag.h"

static wf_pe_arg slot(int sym, int64_t j, int64_t words) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.off = (int32_t)(j * words);
  return a;
}

int wf_lower_gemm_allgather(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  int W = L->w, H = L->h;
  int64_t m, ka, kb, n, r, cc;
  wf_lower_block(L, a, &m, &ka);
  wf_lower_block(L, b, &kb, &n);
  wf_lower_block(L, c, &r, &cc);
  WF_ASSERT(r == m && cc == n);
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b), sc = wf_lower_sym(L, c);
  out->lowering = W * H == 1 ? "local" : "allgather-broadcast";
  out->predicted = wf_gemm_predict(L->t, WF_GEMM_ALLGATHER, W, H, m, ka, n);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
  /* K whole on every PE (partition never splits a dim of 1): the product is local; the
   * panels would hold W copies of the same K and add it W times. */
  const wf_type *ta = wf_value_type(L->f, a), *tb = wf_value_type(L->f, b);
  int k_whole = ta->layout.dims[ta->rank - 1].split == WF_AXIS_NONE &&
                tb->layout.dims[tb->rank - 2].split == WF_AXIS_NONE;
  if (k_whole && W * H > 1) {
    int64_t f = L->t->fmac_per_cycle > 0 ? L->t->fmac_per_cycle : 1;
    out->lowering = "local";
    out->predicted = m * n + (m * ka * n + f - 1) / f;
  }
  if (W * H == 1 || k_whole) {
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sa), wf_arg_sym(sb), wf_arg_int(m), wf_arg_int(ka),
                          wf_arg_int(n)});
    return 0;
  }
  /* The B panel is H kb x n blocks stacked: row k of it is B's row k (K padded to H kb). On
   * a non-square region K's padding differs along x (W ka) and y (H kb): the panel gets zero
   * rows up to W ka, so A's slot j (its columns j ka ..) always meets ka rows of it. A's
   * columns past K are zero, so the rows they meet add nothing. */
  int64_t brows = ka * W > kb * H ? ka * W : kb * H;
  if ((int64_t)W * m * ka > INT32_MAX || brows * n > INT32_MAX) {
    wf_error(op->loc, "dist.gemm{algo=allgather}: a panel is past the PE's addressing");
    return WF_EXIT_NOFIT;
  }
  int crow = W > 1 ? wf_lower_color(L, WF_COLOR_ROW_BCAST, op->loc) : 0;
  int ccol = H > 1 ? wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc) : 0;
  if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
  int pa = wf_lower_temp(L, "$gemm_apanel", (int64_t)W * m * ka * 4);
  int pb = wf_lower_temp(L, "$gemm_bpanel", brows * n * 4);
  if (brows > kb * H) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){slot(pb, H, kb * n), wf_arg_int((brows - kb * H) * n)});
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  for (int j = 0; j < (W > H ? W : H); j++) {
    wf_pe_guard xo = wf_guard0(), xr = wf_guard0(), yo = wf_guard0(), yr = wf_guard0();
    wf_gadd(&xo, tx, WF_CMP_EQ, wf_term_int(j));
    wf_gadd(&xr, tx, WF_CMP_NE, wf_term_int(j));
    wf_gadd(&yo, ty, WF_CMP_EQ, wf_term_int(j));
    wf_gadd(&yr, ty, WF_CMP_NE, wf_term_int(j));
    if (j < W) {
      if (W > 1) {
        wf_emit(L, &xo, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(sa), wf_arg_int(m * ka)});
        wf_emit(L, &xr, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), slot(pa, j, m * ka), wf_arg_int(m * ka)});
      }
    }
    if (j < H) {
      if (H > 1) {
        wf_emit(L, &yo, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(sb), wf_arg_int(kb * n)});
        wf_emit(L, &yr, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), slot(pb, j, kb * n), wf_arg_int(kb * n)});
      }
    }
  }
  /* the owner's own blocks go into their slots after every round: copied inside a round
   * they would hold up the send and, through the next round's root, every later round */
  for (int j = 0; j < W; j++) {
    wf_pe_guard o = wf_guard0();
    wf_gadd(&o, tx, WF_CMP_EQ, wf_term_int(j));
    wf_emit(L, &o, WF_PEOP_COPY, (wf_pe_arg[]){slot(pa, j, m * ka), wf_arg_sym(sa), wf_arg_int(m * ka)});
  }
  for (int j = 0; j < H; j++) {
    wf_pe_guard o = wf_guard0();
    wf_gadd(&o, ty, WF_CMP_EQ, wf_term_int(j));
    wf_emit(L, &o, WF_PEOP_COPY, (wf_pe_arg[]){slot(pb, j, kb * n), wf_arg_sym(sb), wf_arg_int(kb * n)});
  }
  for (int j = 0; j < W; j++)
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), slot(pa, j, m * ka), slot(pb, j, ka * n), wf_arg_int(m),
                          wf_arg_int(ka), wf_arg_int(n)});
  return 0;
}
