/* Allgather GEMM (a baseline, docs/gemm.md): every PE first gathers its whole A row panel
 * (the W blocks of row y) and B column panel (the H blocks of column x), then multiplies
 * the panels block by block, C += A[y][j] B[j][x] for j < W, with no further traffic. The
 * region may be W x H with W != H (the panels hold the whole K either way).
 *
 * The gather is N flooding broadcasts along rows and columns on the SUMMA colors: in round
 * j, PE (j, y) sends its A block along row y and PE (x, j) its B block along column x;
 * everyone else receives into panel slot j; the owners copy their own blocks into their
 * slots after the last round (inside a round the copy would delay the send). A slot is an
 * operand offset scaled by the loop variable (`$gemm_apanel+16*j`) or by the PE's own
 * coordinate for its copy, so the rounds and the multiplies are loops and the program does
 * not grow with the mesh (tests/scripts/plan_scale.sh). Memory: N (m k + k n) floats of
 * panels — what makes this algorithm the memory-hungry end of the spectrum. */
#include "backend/gemm/lower_gemm.h"
#include "waferc/diag.h"

static wf_pe_arg slot(int sym, int64_t j, int64_t words) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.off = (int32_t)(j * words);
  return a;
}

/* Slot t of a panel of `words`-word slots, t a loop variable or a PE coordinate. */
static wf_pe_arg slot_at(int sym, wf_pe_term t, int64_t words) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.term = words == 1 ? t : wf_term_scaled(t, (int)words, 0);
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
  wf_gemm_bufs bf; /* sized with the chooser's SRAM check (gemm_cost.c) */
  wf_gemm_buffers(WF_GEMM_ALLGATHER, 2, W, H, m, ka, kb, n, &bf);
  WF_ASSERT(bf.b0 == brows * n);
  int pa = wf_lower_temp(L, "$gemm_apanel", bf.a0 * 4);
  int pb = wf_lower_temp(L, "$gemm_bpanel", bf.b0 * 4);
  if (brows > kb * H) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){slot(pb, H, kb * n), wf_arg_int((brows - kb * H) * n)});
  /* A slot's offset is a scaled term (at most WF_PE_MAX_SCALE words per slot: larger
   * blocks do not fit a PE anyway, but say so rather than assert). */
  if (m * ka > WF_PE_MAX_SCALE || kb * n > WF_PE_MAX_SCALE || ka * n > WF_PE_MAX_SCALE) {
    wf_error(op->loc, "dist.gemm{algo=allgather}: a panel slot is past the PE's addressing");
    return WF_EXIT_NOFIT;
  }
  int jv = wf_lower_var(L, "j");
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0), tj = wf_term_var(jv, 0);
  int rounds = W > H ? W : H;
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tj), wf_arg_int(0), wf_arg_int(rounds)});
  /* round j: A's owner column sends (j < W), B's owner row (j < H) */
  for (int ab = 0; ab < 2; ab++) {
    int along = ab ? H : W, col = ab ? ccol : crow, sym = ab ? sb : sa, panel = ab ? pb : pa;
    int64_t words = ab ? kb * n : m * ka;
    if (along == 1) continue;
    wf_pe_guard own = wf_guard0(), other = wf_guard0();
    wf_gadd(&own, ab ? ty : tx, WF_CMP_EQ, tj);
    wf_gadd(&other, ab ? ty : tx, WF_CMP_NE, tj);
    if (along < rounds) {
      wf_gadd(&own, tj, WF_CMP_LT, wf_term_int(along));
      wf_gadd(&other, tj, WF_CMP_LT, wf_term_int(along));
    }
    wf_emit(L, &own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(words)});
    wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), slot_at(panel, tj, words), wf_arg_int(words)});
  }
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  /* the owner's own blocks go into their slots after every round: copied inside a round
   * they would hold up the send and, through the next round's root, every later round */
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){slot_at(pa, tx, m * ka), wf_arg_sym(sa), wf_arg_int(m * ka)});
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){slot_at(pb, ty, kb * n), wf_arg_sym(sb), wf_arg_int(kb * n)});
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tj), wf_arg_int(0), wf_arg_int(W)});
  wf_emit(L, NULL, WF_PEOP_MATMUL,
          (wf_pe_arg[]){wf_arg_sym(sc), slot_at(pa, tj, m * ka), slot_at(pb, tj, ka * n), wf_arg_int(m),
                        wf_arg_int(ka), wf_arg_int(n)});
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  return 0;
}
