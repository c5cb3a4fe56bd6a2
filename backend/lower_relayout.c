/* The transpose relayout on any W x H region (docs/partition.md, "Transpose over the fabric").
 *
 * X [R, C] {R_y, C_x} in rb x cb blocks becomes Xᵀ [C, R] {C_y, R_x} in cb2 x rb2 blocks:
 * PE (x, y) needs X's rows R'(x) = [x rb2, +rb2) and columns C'(y) = [y cb2, +cb2), held in
 * pieces by the PEs whose row block meets R'(x) and whose column block meets C'(y). On a
 * non-square region the cuts do not line up (rb != rb2, cb != cb2), so the data moves in two
 * phases, each along one axis, through the flooding broadcast colors:
 *
 *   1. gather along columns: every PE copies its block into its panel, X[all rows, its
 *      columns Cx(x)] (row-major, so block j sits at a fixed offset); then in round j of H,
 *      PE (x, j) multicasts its block down column x into everyone else's slot j.
 *   2. scatter along rows: for every pair (i, y) whose columns meet, Cx(i) ∩ C'(y) = [lo, hi)
 *      of width w, PE (i, y) has cut the w columns out of its panel (one copy2d, done by
 *      all senders at once before the streams: the piece, W rb2 rows by w; rows past R are
 *      zero or X's padding) and multicasts it along row y as W chunks of rb2 rows, its own
 *      chunk left out. PE (x, y) keeps chunk x, the rows R'(x), in slot i of its chunk
 *      buffer and drops the others: it receives the chunks before its own in a loop whose
 *      bound is its coordinate (`loop v 0 x`), so no instruction needs an offset that
 *      depends on the PE, and nobody stops mid-stream. Finally each PE transposes what it
 *      kept: chunk (i, y), transposed, is the whole rows [lo - y cb2, hi - y cb2) of its Xᵀ
 *      block (one transpose in place). Xᵀ's rows past C are zeroed.
 *
 * Buffer offsets are constants of the instruction, so the rounds are unrolled: H guarded
 * rounds in phase 1 and one group per meeting pair in phase 2 (at most W + H - 1 pairs, as
 * the cuts of C over x and over y merge); the program grows with W + H, never with W·H.
 * Memory: the panel (max(H rb, W rb2) x cb words, about H blocks), the piece and the chunk
 * slots (W rb2 min(cb, cb2) words each).
 *
 * Traffic per PE: H blocks in phase 1 (R·C/W words), then each row streams the W−1 foreign
 * chunks of each of its pieces: (W−1)/W of R·C/H. A PE receives a whole piece to keep one
 * chunk: a flooding multicast is consumed by every PE of the row. */
#include "backend/lower_relayout.h"
#include "backend/intmath.h"

#include <stdlib.h>

#include "waferc/diag.h"

static wf_pe_arg at(int sym, int64_t off) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.off = (int32_t)off;
  return a;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static wf_pe_guard guard1(wf_pe_term a, wf_cmp c, wf_pe_term b) {
  wf_pe_guard g = wf_guard0();
  wf_guard_add(&g, a, c, b);
  return g;
}

/* Emits `[g] loop v lo hi; recv col buf n; endloop`: n-word chunks dropped (the guard on
 * the loop skips it whole). */
static void drop_chunks(wf_lower *L, const wf_pe_guard *g, int v, wf_pe_term lo, wf_pe_term hi, int col, int buf,
                        int64_t n) {
  wf_emit(L, g, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(v, 0)), wf_arg_term(lo), wf_arg_term(hi)});
  wf_emit(L, NULL, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(buf), wf_arg_int(n)});
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
}

/* Xᵀ's rows past C (X's column padding) are written by no piece: zero them. PE row y0 holds
 * the last real rows, the rows after it only padding. Adds each row's cycles to row[]. */
static void zero_row_padding(wf_lower *L, const wf_relayout_tr *t, int64_t *row) {
  int64_t y0 = t->cols / t->cb2, real = t->cols - y0 * t->cb2, blk = t->cb2 * t->rb2;
  wf_pe_term ty = wf_term(WF_TERM_Y, 0);
  if (y0 < L->h && real > 0) {
    wf_pe_guard g = guard1(ty, WF_CMP_EQ, wf_term_int((int32_t)y0));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){at(t->dst, t->dst_off + real * t->rb2), wf_arg_int(blk - real * t->rb2)});
    row[y0] += blk - real * t->rb2;
  }
  int64_t first_empty = real > 0 ? y0 + 1 : y0;
  if (first_empty < L->h) {
    wf_pe_guard g = guard1(ty, WF_CMP_GE, wf_term_int((int32_t)first_empty));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){at(t->dst, t->dst_off), wf_arg_int(blk)});
    for (int64_t y = first_empty; y < L->h; y++) row[y] += blk;
  }
}

/* Phase 1: panel = X[all rows, Cx(x)], rpan rows (zero past H rb). */
static int64_t gather_columns(wf_lower *L, const wf_relayout_tr *t, int panel, int64_t rpan, int ccol) {
  int H = L->h;
  int64_t blk = t->rb * t->cb;
  wf_pe_term ty = wf_term(WF_TERM_Y, 0);
  if (rpan > H * t->rb)
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){at(panel, H * blk), wf_arg_int((rpan - H * t->rb) * t->cb)});
  /* Every PE copies its own block first, all at once, so that no round waits for a copy. */
  for (int j = 0; j < H; j++) {
    wf_pe_guard own = guard1(ty, WF_CMP_EQ, wf_term_int(j));
    wf_emit(L, &own, WF_PEOP_COPY, (wf_pe_arg[]){at(panel, j * blk), at(t->src, t->src_off), wf_arg_int(blk)});
  }
  for (int j = 0; H > 1 && j < H; j++) {
    wf_pe_guard own = guard1(ty, WF_CMP_EQ, wf_term_int(j)), other = guard1(ty, WF_CMP_NE, wf_term_int(j));
    wf_emit(L, &own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), at(t->src, t->src_off), wf_arg_int(blk)});
    wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), at(panel, j * blk), wf_arg_int(blk)});
  }
  /* The copy; then H rounds, each the block through the sender's ramp and one hop to the
   * next round's sender (the rounds pipeline); the farthest PE's latency once. */
  if (H == 1) return max64(rpan - H * t->rb, 0) * t->cb + blk;
  return max64(rpan - H * t->rb, 0) * t->cb + blk + (int64_t)H * wf_cost_bcast(L->t, blk, 1) +
         (int64_t)(H - 2) * L->t->hop_cycles;
}

/* One meeting pair of phase 2: PE (i, y) sends X[rows, lo..hi) along row y. */
typedef struct rl_pair {
  int i, y;
  int64_t lo, w, chunk; /* chunk: rb2 w, one receiver's share */
  int src;              /* the piece's symbol: the panel when the pair takes all of it */
  int64_t dpos;         /* word offset in Xᵀ's symbol of the rows it fills */
} rl_pair;

/* The pair (i, y) if Cx(i) ∩ C'(y) is not empty. */
static int meet(const wf_relayout_tr *t, int i, int y, int panel, int piece, rl_pair *p) {
  int64_t lo = max64((int64_t)i * t->cb, (int64_t)y * t->cb2);
  int64_t hi = min64(min64((int64_t)(i + 1) * t->cb, (int64_t)(y + 1) * t->cb2), t->cols);
  if (lo >= hi) return 0;
  *p = (rl_pair){i, y, lo, hi - lo, t->rb2 * (hi - lo), lo == (int64_t)i * t->cb && hi - lo == t->cb ? panel : piece,
                 t->dst_off + (lo - (int64_t)y * t->cb2) * t->rb2};
  return 1;
}

static wf_pe_guard at_pe(int x, int y) {
  wf_pe_guard g = guard1(wf_term(WF_TERM_X, 0), WF_CMP_EQ, wf_term_int(x));
  wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int(y));
  return g;
}

/* Row y's receivers of pair p whose x compares with p->i by `c`. */
static wf_pe_guard receivers(const rl_pair *p, wf_cmp c) {
  wf_pe_guard g = guard1(wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int(p->y));
  wf_guard_add(&g, wf_term(WF_TERM_X, 0), c, wf_term_int(p->i));
  return g;
}

/* Phase 2's stream of pair p: the sender's chunks but its own, in two sends; each receiver
 * drops the chunks before its own (its stream position: x before the sender, x - 1 after),
 * keeps its own in slot `slot` of chunkbuf and drops the rest. Nobody stops mid-stream, so
 * the row streams at one wavelet per cycle. */
static void stream_pair(wf_lower *L, const rl_pair *p, int crow, int chunkbuf, int64_t slot, int dropbuf, int v) {
  int W = L->w, i = p->i;
  wf_pe_term tx = wf_term(WF_TERM_X, 0), tw = wf_term(WF_TERM_W, 0);
  wf_pe_guard snd = at_pe(i, p->y), before = receivers(p, WF_CMP_LT), after = receivers(p, WF_CMP_GT),
              any = receivers(p, WF_CMP_NE);
  if (i > 0) wf_emit(L, &snd, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(p->src), wf_arg_int(i * p->chunk)});
  if (i < W - 1)
    wf_emit(L, &snd, WF_PEOP_SEND,
            (wf_pe_arg[]){wf_arg_int(crow), at(p->src, (i + 1) * p->chunk), wf_arg_int((W - 1 - i) * p->chunk)});
  /* A loop is emitted only when some receiver runs it at least once. */
  if (i > 1) drop_chunks(L, &before, v, wf_term_int(0), tx, crow, dropbuf, p->chunk);
  if (i < W - 1 && W > 2) drop_chunks(L, &after, v, wf_term_int(1), tx, crow, dropbuf, p->chunk);
  wf_emit(L, &any, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), at(chunkbuf, slot), wf_arg_int(p->chunk)});
  if (i > 0 && W > 2) drop_chunks(L, &before, v, wf_term(WF_TERM_X, 2), tw, crow, dropbuf, p->chunk);
  if (i < W - 2) drop_chunks(L, &after, v, wf_term(WF_TERM_X, 1), tw, crow, dropbuf, p->chunk);
}

int wf_relayout_transpose(wf_lower *L, const wf_relayout_tr *t, wf_loc loc, int64_t *cycles) {
  int W = L->w, H = L->h;
  WF_ASSERT(H * t->rb >= t->rows && W * t->cb >= t->cols && H * t->cb2 >= t->cols && W * t->rb2 >= t->rows);
  int crow = W > 1 ? wf_lower_color(L, WF_COLOR_ROW_BCAST, loc) : 0;
  int ccol = H > 1 ? wf_lower_color(L, WF_COLOR_COL_BCAST, loc) : 0;
  if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
  int64_t rpan = max64(H * t->rb, W * t->rb2), maxw = min64(t->cb, t->cb2), slot = t->rb2 * maxw;
  int panel = wf_lower_temp(L, "$rl_panel", rpan * t->cb * 4);
  int piece = wf_lower_temp(L, "$rl_piece", W * slot * 4);
  int chunkbuf = W > 1 ? wf_lower_temp(L, "$rl_chunks", W * slot * 4) : -1;
  int dropbuf = W > 2 ? wf_lower_temp(L, "$rl_drop", slot * 4) : -1;
  int v = W > 2 ? wf_pe_class_find_var(L->cls, "rl", 1) : -1; /* the drop loops need W > 2 */
  WF_ASSERT(W <= 2 || v >= 0);
  /* At most W + H - 1 pairs meet: the cuts of C over x and over y merged. */
  rl_pair *pairs = calloc((size_t)(W + H), sizeof *pairs);
  int64_t *row = calloc((size_t)H * 2, sizeof *row), *cut = row + H;
  WF_ASSERT(pairs && row);
  int np = 0;
  for (int i = 0; i < W; i++)
    for (int y = 0; y < H; y++)
      if (np < W + H && meet(t, i, y, panel, piece, &pairs[np])) np++;
  WF_ASSERT(np < W + H);
  /* Predicted: phase 1 (the same on every column), then the slowest row of phase 2. */
  int64_t pred = gather_columns(L, t, panel, rpan, ccol);
  zero_row_padding(L, t, row);
  /* Every sender cuts its piece before the streams start (each PE sends one piece at most). */
  for (int k = 0; k < np; k++) {
    const rl_pair *p = &pairs[k];
    if (p->src != piece) continue;
    wf_pe_guard snd = at_pe(p->i, p->y);
    wf_emit(L, &snd, WF_PEOP_COPY2D,
            (wf_pe_arg[]){wf_arg_sym(piece), at(panel, p->lo - (int64_t)p->i * t->cb), wf_arg_int(W * t->rb2),
                          wf_arg_int(p->w), wf_arg_int(p->w), wf_arg_int(t->cb)});
    cut[p->y] = max64(cut[p->y], W * p->chunk); /* a row's senders cut at once */
  }
  for (int k = 0; W > 1 && k < np; k++) {
    stream_pair(L, &pairs[k], crow, chunkbuf, (int64_t)pairs[k].i * slot, dropbuf, v);
    /* Round i of row y: its W − 1 chunks through the ramp and one hop to the next sender. */
    row[pairs[k].y] += wf_cost_bcast(L->t, (W - 1) * pairs[k].chunk, 1);
  }
  /* Each PE transposes what it kept into its rows of Xᵀ's block. */
  for (int k = 0; k < np; k++) {
    const rl_pair *p = &pairs[k];
    row[p->y] += p->chunk;
    wf_pe_guard snd = at_pe(p->i, p->y), any = receivers(p, WF_CMP_NE);
    wf_emit(L, &snd, WF_PEOP_TRANSPOSE,
            (wf_pe_arg[]){at(t->dst, p->dpos), at(p->src, p->i * p->chunk), wf_arg_int(t->rb2), wf_arg_int(p->w)});
    if (W > 1)
      wf_emit(L, &any, WF_PEOP_TRANSPOSE,
              (wf_pe_arg[]){at(t->dst, p->dpos), at(chunkbuf, p->i * slot), wf_arg_int(t->rb2), wf_arg_int(p->w)});
  }
  int64_t slowest = 0;
  for (int y = 0; y < H; y++) slowest = max64(slowest, row[y] + cut[y]);
  /* The last stream's farthest receiver, once (the rounds pipeline hop by hop). */
  pred += slowest + (W > 2 ? (int64_t)(W - 2) * L->t->hop_cycles : 0);
  free(pairs);
  free(row);
  *cycles += pred;
  return 0;
}

/* ---- re-cutting one dim along one axis ----
 *
 * Round j of the axis' P PEs: PE j multicasts its block along the line (the flooding
 * broadcast color of the axis) when another PE needs part of it, and every PE p whose dst
 * range [p b_dst, +b_dst) meets j's real range [j b_src, +b_src) ∩ [0, len) copies the
 * overlap in place (one copy2d per meeting pair, at most 2P: the two cuts merged). Rounds
 * are unrolled (constant offsets); the program grows with P. The prediction walks the same
 * rounds (reblock_cost), so the chooser (gemm_choose.c) can ask it without emitting. */

/* Whether another PE than j needs part of block j, and the widest copy of round j (words). */
static int reblock_round(int P, int j, int64_t outer, int64_t inner, int64_t len, int64_t b_src, int64_t b_dst,
                         int64_t *widest) {
  int64_t lo_j = (int64_t)j * b_src, hi_j = min64(lo_j + b_src, len);
  int shared = 0;
  *widest = 0;
  for (int p = 0; p < P; p++) {
    int64_t lo = max64(lo_j, (int64_t)p * b_dst), hi = min64(hi_j, (int64_t)(p + 1) * b_dst);
    if (lo >= hi) continue;
    shared |= p != j;
    *widest = max64(*widest, outer * (hi - lo) * inner);
  }
  return shared;
}

static int64_t reblock_cost(const wf_target *t, int P, int64_t outer, int64_t inner, int64_t len, int64_t b_src,
                            int64_t b_dst) {
  int64_t blk = outer * b_src * inner, pred = outer * b_dst * inner, widest;
  for (int j = 0; j < P; j++) {
    if ((int64_t)j * b_src >= len) continue;
    if (reblock_round(P, j, outer, inner, len, b_src, b_dst, &widest)) pred += wf_cost_bcast(t, blk, 1);
    pred += widest;
  }
  /* The farthest PE's latency once (the rounds pipeline hop by hop). */
  return pred + (P > 2 ? (int64_t)(P - 2) * t->hop_cycles : 0);
}

int wf_relayout_reblock_axis(wf_lower *L, const wf_relayout_reblock *r, wf_loc loc, int64_t *cycles) {
  int P = r->axis == WF_AXIS_X ? L->w : L->h;
  wf_pe_term tc = wf_term(r->axis == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  int64_t blk = r->outer * r->b_src * r->inner, dblk = r->outer * r->b_dst * r->inner, widest;
  int col = 0;
  if (P > 1) col = wf_lower_color(L, r->axis == WF_AXIS_X ? WF_COLOR_ROW_BCAST : WF_COLOR_COL_BCAST, loc);
  if (col < 0) return WF_EXIT_NOFIT;
  int recv = P > 1 ? wf_lower_temp(L, "$rb_recv", blk * 4) : -1;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(r->dst), wf_arg_int(dblk)});
  for (int j = 0; j < P; j++) {
    int64_t lo_j = (int64_t)j * r->b_src, hi_j = min64(lo_j + r->b_src, r->len);
    if (lo_j >= hi_j) continue;
    wf_pe_guard own = guard1(tc, WF_CMP_EQ, wf_term_int(j)), other = guard1(tc, WF_CMP_NE, wf_term_int(j));
    if (reblock_round(P, j, r->outer, r->inner, r->len, r->b_src, r->b_dst, &widest)) {
      wf_emit(L, &own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(r->src), wf_arg_int(blk)});
      wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(recv), wf_arg_int(blk)});
    }
    for (int p = 0; p < P; p++) {
      int64_t lo = max64(lo_j, (int64_t)p * r->b_dst), hi = min64(hi_j, (int64_t)(p + 1) * r->b_dst);
      if (lo >= hi) continue;
      wf_pe_guard at_p = guard1(tc, WF_CMP_EQ, wf_term_int(p));
      wf_emit(L, &at_p, WF_PEOP_COPY2D,
              (wf_pe_arg[]){at(r->dst, (lo - (int64_t)p * r->b_dst) * r->inner),
                            at(p == j ? r->src : recv, (lo - lo_j) * r->inner), wf_arg_int(r->outer),
                            wf_arg_int((hi - lo) * r->inner), wf_arg_int(r->b_dst * r->inner),
                            wf_arg_int(r->b_src * r->inner)});
    }
  }
  *cycles += reblock_cost(L->t, P, r->outer, r->inner, r->len, r->b_src, r->b_dst);
  return 0;
}

int64_t wf_relayout_gemm_k_cost(const wf_target *t, int w, int h, int64_t m, int64_t n, int64_t K, int64_t ka,
                                int64_t kb) {
  int64_t l = wf_lcm(w, h), kp = (K + l - 1) / l * l, c = 0;
  if (ka != kp / w) c += reblock_cost(t, w, m, 1, K, ka, kp / w);
  if (kb != kp / h) c += reblock_cost(t, h, 1, n, K, kb, kp / h);
  return c;
}

int wf_relayout_gemm_k(wf_lower *L, const wf_op *op, int lcm, int64_t *ka, int64_t *kb, int *sa, int *sb,
                       int64_t *cycles) {
  wf_value va = op->operands[0], vb = op->operands[1];
  const wf_type *ta = wf_value_type(L->f, va);
  int64_t K = ta->dims[ta->rank - 1], kp = (K + lcm - 1) / lcm * lcm, m, ka0, kb0, n;
  wf_lower_block(L, va, &m, &ka0);
  wf_lower_block(L, vb, &kb0, &n);
  WF_ASSERT(ka0 == *ka && kb0 == *kb && kp % L->w == 0 && kp % L->h == 0);
  *sa = *sb = -1;
  if (*ka != kp / L->w) {
    *sa = wf_lower_temp(L, "$kp_a", m * (kp / L->w) * 4);
    wf_relayout_reblock r = {WF_AXIS_X, wf_lower_sym(L, va), *sa, m, 1, K, *ka, kp / L->w};
    int rc = wf_relayout_reblock_axis(L, &r, op->loc, cycles);
    if (rc) return rc;
    *ka = kp / L->w;
  }
  if (*kb != kp / L->h) {
    *sb = wf_lower_temp(L, "$kp_b", (kp / L->h) * n * 4);
    wf_relayout_reblock r = {WF_AXIS_Y, wf_lower_sym(L, vb), *sb, 1, n, K, *kb, kp / L->h};
    int rc = wf_relayout_reblock_axis(L, &r, op->loc, cycles);
    if (rc) return rc;
    *kb = kp / L->h;
  }
  return 0;
}
