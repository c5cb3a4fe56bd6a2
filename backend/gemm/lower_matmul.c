/* matmul C[M,N] = A[M,K] · B[K,N] on a W x H region, SUMMA with flooding broadcasts
 * (docs/gemm.md, "SUMMA").
 *
 * Layouts (partition): A {M_y, K_x}, B {K_y, N_x}, C {M_y, N_x}; PE (x, y) holds A's block
 * (y, x) (m x ka, ka = ceil(K/W)), B's block (y, x) (kb x n, kb = ceil(K/H)) and computes
 * C's block (y, x). The A and B blocks travel as real wavelets; nothing is pre-replicated.
 *
 * Square (W = H, so ka = kb): in step k of W, PE (k, y) multicasts its A block along row y
 * and PE (x, k) its B block along column x; every PE multiplies the two blocks it has (its
 * own or the received copy) into C. One loop: the program does not grow with the mesh.
 *
 * W != H: A's and B's blocks cut K at different places, so K is walked in the intervals
 * between consecutive cuts (multiples of ka or of kb) up to min(W ka, H kb); past that one
 * operand is all zero padding. In interval [lo, hi) A's owner column is j = lo / ka and B's
 * owner row i = lo / kb; the cuts repeat every lcm(ka, kb), so whole periods are a loop
 * whose owners are terms of its variable (summa_rect). A block is broadcast when
 * its first interval starts and stays in the receive buffer for its later intervals. B's
 * rows of an interval are contiguous in its block; A's columns are not (an m x ka row-major
 * block): when an interval does not cover all of A's block, copy2d gathers the m x (hi -
 * lo) columns into a tile first (m (hi - lo) cycles; a matmul with a row stride would save
 * them). The steps stay blocking, as in the square case: broadcast, then multiply. */
#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/lower_gemm.h"
#include "ir/support/intmath.h"
#include "backend/resources/lower.h"
#include "waferc/diag.h"

static wf_pe_arg at_off(int sym, int64_t off) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.off = (int32_t)off;
  return a;
}

static wf_pe_arg i64(int64_t v) { return wf_arg_int(v); }

/* The guard "coord == v" (own) or "coord != v" (received); none when the axis is one PE
 * long (every PE owns the block: nothing is broadcast). */
static wf_pe_guard owner(wf_pe_term coord, wf_pe_term v, int own, int len) {
  wf_pe_guard g = wf_guard0();
  if (len > 1) wf_guard_add(&g, coord, own ? WF_CMP_EQ : WF_CMP_NE, v);
  return g;
}

static void bcast(wf_lower *L, wf_pe_term coord, wf_pe_term v, int len, int col, int sym, int buf,
                  int64_t words) {
  if (len <= 1) return;
  wf_pe_guard o = owner(coord, v, 1, len), r = owner(coord, v, 0, len);
  wf_emit(L, &o, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), i64(words)});
  wf_emit(L, &r, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(buf), i64(words)});
}

/* One W x H SUMMA: its blocks, buffers and the scratch tile (allocated at the first interval
 * that needs it). */
typedef struct summa_rect_ctx {
  wf_lower *L;
  int W, H, crow, ccol, sa, sb, sc, at, bt, tile;
  int64_t m, ka, kb, n, a1;
} summa_rect_ctx;

/* The steps of the K intervals in [from, to). With pv >= 0 they are the body of a loop over
 * periods of P words of K (loop variable pv): owners are then terms of it, A's column
 * P/ka*p + j and B's row P/kb*p + i, and the offsets inside the blocks are the same in every
 * period. */
static void summa_steps(summa_rect_ctx *s, int64_t from, int64_t to, int pv, int64_t P) {
  wf_lower *L = s->L;
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  for (int64_t lo = from; lo < to;) {
    int64_t j = lo / s->ka, i = lo / s->kb, hi = (j + 1) * s->ka;
    if ((i + 1) * s->kb < hi) hi = (i + 1) * s->kb;
    if (to < hi) hi = to;
    int64_t la = lo - j * s->ka, lb = lo - i * s->kb, len = hi - lo;
    wf_pe_term tj = pv >= 0 ? wf_term_scaled(wf_term_var(pv, 0), (int)(P / s->ka), (int32_t)j) : wf_term_int((int32_t)j);
    wf_pe_term ti = pv >= 0 ? wf_term_scaled(wf_term_var(pv, 0), (int)(P / s->kb), (int32_t)i) : wf_term_int((int32_t)i);
    if (la == 0) bcast(L, tx, tj, s->W, s->crow, s->sa, s->at, s->m * s->ka);
    if (lb == 0) bcast(L, ty, ti, s->H, s->ccol, s->sb, s->bt, s->kb * s->n);
    int whole = la == 0 && len == s->ka; /* the interval is all of A's block */
    if (!whole) {
      WF_ASSERT(s->a1 >= s->m * len);
      if (s->tile < 0) s->tile = wf_lower_temp(L, "$a_tile", s->a1 * 4);
      for (int own = 1; own >= (s->W > 1 ? 0 : 1); own--) {
        wf_pe_guard g = owner(tx, tj, own, s->W);
        wf_emit(L, &g, WF_PEOP_COPY2D,
                (wf_pe_arg[]){wf_arg_sym(s->tile), at_off(own ? s->sa : s->at, la), i64(s->m), i64(len),
                              i64(len), i64(s->ka)});
      }
    }
    for (int own_a = 1; own_a >= (s->W > 1 && whole ? 0 : 1); own_a--)
      for (int own_b = 1; own_b >= (s->H > 1 ? 0 : 1); own_b--) {
        wf_pe_guard g = whole ? owner(tx, tj, own_a, s->W) : wf_guard0();
        if (s->H > 1) wf_guard_add(&g, ty, own_b ? WF_CMP_EQ : WF_CMP_NE, ti);
        wf_pe_arg a = whole ? wf_arg_sym(own_a ? s->sa : s->at) : wf_arg_sym(s->tile);
        wf_emit(L, &g, WF_PEOP_MATMUL,
                (wf_pe_arg[]){wf_arg_sym(s->sc), a, at_off(own_b ? s->sb : s->bt, lb * s->n), i64(s->m),
                              i64(len), i64(s->n)});
      }
    lo = hi;
  }
}

/* W, H: how many K blocks A has along x and B along y (the region's sides, or 1 when that
 * operand's K is not split and every PE holds all of it). The cuts repeat every P =
 * lcm(ka, kb) words of K, so whole periods are one loop (its body P/ka + P/kb - 1 steps at
 * most: the program grows with the blocks' ratio, not with W or H) and the rest is
 * unrolled; the steps and their order are those of the fully unrolled walk. */
static void summa_rect(wf_lower *L, int W, int H, int crow, int ccol, int sa, int sb, int sc,
                       int64_t m, int64_t ka, int64_t kb, int64_t n) {
  wf_gemm_bufs bf; /* sized with the chooser's SRAM check (gemm_cost.c) */
  wf_gemm_buffers(WF_GEMM_SUMMA, 2, W, H, m, ka, kb, n, &bf);
  summa_rect_ctx s = {L, W, H, crow, ccol, sa, sb, sc, sa, sb, -1, m, ka, kb, n, bf.a1};
  if (W > 1) s.at = wf_lower_temp(L, "$a_recv", bf.a0 * 4);
  if (H > 1) s.bt = wf_lower_temp(L, "$b_recv", bf.b0 * 4);
  int64_t end = W * ka < H * kb ? W * ka : H * kb;
  int64_t P = wf_lcm(ka, kb), periods = end / P;
  int64_t from = 0;
  if (periods >= 2 && P / ka <= WF_PE_MAX_SCALE && P / kb <= WF_PE_MAX_SCALE) {
    int pv = wf_lower_var(L, "p");
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(pv, 0)), wf_arg_int(0), i64(periods)});
    summa_steps(&s, 0, P, pv, P);
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    from = periods * P;
  }
  summa_steps(&s, from, end, -1, P);
}

static void summa_square(wf_lower *L, int crow, int ccol, int sa, int sb, int sc, int64_t m,
                         int64_t k, int64_t n) {
  wf_gemm_bufs bf; /* sized with the chooser's SRAM check (gemm_cost.c) */
  wf_gemm_buffers(WF_GEMM_SUMMA, 2, L->w, L->h, m, k, k, n, &bf);
  int at = wf_lower_temp(L, "$a_recv", bf.a0 * 4), bt = wf_lower_temp(L, "$b_recv", bf.b0 * 4);
  int kv = wf_lower_var(L, "k");
  wf_pe_term tk = wf_term_var(kv, 0), tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  wf_emit(L, NULL, WF_PEOP_LOOP,
          (wf_pe_arg[]){wf_arg_term(wf_term_var(kv, 0)), wf_arg_int(0), wf_arg_term(wf_term(WF_TERM_W, 0))});
  wf_pe_guard xk = wf_guard0(), xn = wf_guard0(), yk = wf_guard0(), yn = wf_guard0();
  wf_guard_add(&xk, tx, WF_CMP_EQ, tk);
  wf_guard_add(&xn, tx, WF_CMP_NE, tk);
  wf_guard_add(&yk, ty, WF_CMP_EQ, tk);
  wf_guard_add(&yn, ty, WF_CMP_NE, tk);
  wf_emit(L, &xk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(sa), i64(m * k)});
  wf_emit(L, &xn, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(at), i64(m * k)});
  wf_emit(L, &yk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(sb), i64(k * n)});
  wf_emit(L, &yn, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(bt), i64(k * n)});
  /* Four roles per step: which of A and B this PE owns itself. */
  for (int own_a = 1; own_a >= 0; own_a--)
    for (int own_b = 1; own_b >= 0; own_b--) {
      wf_pe_guard g = wf_guard0();
      wf_guard_add(&g, tx, own_a ? WF_CMP_EQ : WF_CMP_NE, tk);
      wf_guard_add(&g, ty, own_b ? WF_CMP_EQ : WF_CMP_NE, tk);
      wf_emit(L, &g, WF_PEOP_MATMUL,
              (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(own_a ? sa : at), wf_arg_sym(own_b ? sb : bt),
                            i64(m), i64(k), i64(n)});
    }
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
}

int wf_lower_matmul(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  const wf_type *ta = wf_value_type(f, a), *tb = wf_value_type(f, b);
  if (ta->rank != 2 || tb->rank != 2) {
    wf_error(op->loc, "matmul lowering supports rank-2 operands only (got rank %d and %d)", ta->rank,
             tb->rank);
    return WF_EXIT_UNSUPPORTED;
  }
  /* K split as partition lays it out (A's along x, B's along y), or not at all: a K smaller
   * than the region's side may stay whole on every PE (a K-block count of 1). */
  int ax = ta->layout.dims[1].split, by = tb->layout.dims[0].split;
  if ((ax != WF_AXIS_X && ax != WF_AXIS_NONE) || (by != WF_AXIS_Y && by != WF_AXIS_NONE)) {
    wf_error(op->loc, "matmul (SUMMA) needs A's K split along x and B's along y (or not split)");
    return WF_EXIT_UNSUPPORTED;
  }
  int W = ax == WF_AXIS_X ? L->w : 1, H = by == WF_AXIS_Y ? L->h : 1;
  int64_t m, ka, kb, n, r, cc;
  wf_lower_block(L, a, &m, &ka);
  wf_lower_block(L, b, &kb, &n);
  wf_lower_block(L, c, &r, &cc);
  WF_ASSERT(r == m && cc == n && (W != H || ka == kb));
  if (m * ka > INT32_MAX || kb * n > INT32_MAX) {
    wf_error(op->loc, "matmul (SUMMA): a block is past the PE's addressing");
    return WF_EXIT_NOFIT;
  }
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b), sc = wf_lower_sym(L, c);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), i64(m * n)});
  if (W * H == 1) {
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sa), wf_arg_sym(sb), i64(m), i64(ka), i64(n)});
  } else {
    int crow = W > 1 ? wf_lower_color(L, WF_COLOR_ROW_BCAST, op->loc) : 0;
    int ccol = H > 1 ? wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc) : 0;
    if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
    /* a dist.gemm's phases: no alignment (the broadcasts send each block from where it is),
     * the steps, no drain */
    wf_gemm_phase(L, WF_GEMM_PHASE_LOOP);
    if (W == H && W == L->w && H == L->h) summa_square(L, crow, ccol, sa, sb, sc, m, ka, n);
    else summa_rect(L, W, H, crow, ccol, sa, sb, sc, m, ka, kb, n);
    wf_gemm_phase(L, WF_GEMM_PHASE_DRAIN);
    out->has_phases = L->gemm_phases;
  }
  out->lowering = W * H == 1 ? "local" : "summa-broadcast";
  out->predicted = wf_gemm_summa_cost(L->t, W, H, m, ka, kb, n);
  return 0;
}
