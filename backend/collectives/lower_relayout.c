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
 * Phase 1 is one loop (slot j of the panel is a term offset). Phase 2 has one group per
 * meeting pair (at most W + H - 1, as the cuts of C over x and over y merge); the cuts
 * repeat every lcm(cb, cb2) columns, so whole periods are one loop over the periods with
 * the pairs' coordinates as terms of its variable (find_loop), and the program grows with
 * the blocks' ratio, not with W or H.
 * Memory: the panel (max(H rb, W rb2) x cb words, about H blocks), the piece and the chunk
 * slots (W rb2 min(cb, cb2) words each).
 *
 * Traffic per PE: H blocks in phase 1 (R·C/W words), then each row streams the W−1 foreign
 * chunks of each of its pieces: (W−1)/W of R·C/H. A PE receives a whole piece to keep one
 * chunk: a flooding multicast is consumed by every PE of the row. */
#include "backend/collectives/lower_relayout.h"
#include "ir/support/intmath.h"

#include <stdlib.h>

#include "waferc/diag.h"

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
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(t->dst, t->dst_off + real * t->rb2), wf_arg_int(blk - real * t->rb2)});
    row[y0] += blk - real * t->rb2;
  }
  int64_t first_empty = real > 0 ? y0 + 1 : y0;
  if (first_empty < L->h) {
    wf_pe_guard g = guard1(ty, WF_CMP_GE, wf_term_int((int32_t)first_empty));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(t->dst, t->dst_off), wf_arg_int(blk)});
    for (int64_t y = first_empty; y < L->h; y++) row[y] += blk;
  }
}

/* A value that is a constant or, inside a loop over the periods of a cut pattern (variable
 * `var`, q = its value), base + step * q: an owner's coordinate, a slot, a word count. */
typedef struct rl_lin {
  int var; /* -1: the constant base */
  int64_t base, step;
} rl_lin;

static rl_lin lin_const(int64_t v) { return (rl_lin){-1, v, 0}; }

/* l * scale + add as a term (a scaled term of the loop variable inside the loop). */
static wf_pe_term lin_term(rl_lin l, int64_t scale, int64_t add) {
  return wf_term_affine(l.var, l.step * scale, l.base * scale + add);
}

/* Buffer operand sym + l * scale + add. */
static wf_pe_arg lin_at(int sym, rl_lin l, int64_t scale, int64_t add) {
  if (l.var < 0 || l.step * scale == 0) return wf_arg_at(sym, l.base * scale + add);
  wf_pe_arg a = wf_arg_sym(sym);
  a.term = lin_term(l, scale, add);
  return a;
}

/* Whether every scale the period loop would write fits a term. */
static int lin_fits(int64_t step, int64_t scale) { return step * scale <= WF_PE_MAX_SCALE; }

/* The rounds of a gather along one axis (wf_relayout_gather_axis): every PE copies its own
 * block into its slot first, all at once, so that no round waits for a copy; then in round j
 * PE j of the line multicasts its block on the axis' flooding broadcast color `col`, and
 * every other PE puts it into slot j (straight from the color when the block is one row of
 * the panel, else through `$ga_buf` and a copy2d). qv: the rounds' loop variable. */
static int64_t gather_rounds(wf_lower *L, const wf_relayout_gather *g, int col, int qv) {
  int P = g->axis == WF_AXIS_X ? L->w : L->h, n = g->j1 - g->j0;
  int64_t blk = g->outer * g->b * g->inner, row = g->b * g->inner;
  wf_pe_term tc = wf_term(g->axis == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  wf_pe_guard in = wf_guard0();
  if (g->j0 > 0) wf_guard_add(&in, tc, WF_CMP_GE, wf_term_int(g->j0));
  if (g->j1 < P) wf_guard_add(&in, tc, WF_CMP_LT, wf_term_int(g->j1));
  /* Slot j of a panel row: panel_off + (j - j0) b inner; PE c's own block goes to slot c. */
  wf_pe_arg mine = wf_arg_at(g->panel, g->panel_off);
  if (P > 1) mine.term = wf_term_scaled(tc, (int)row, (int32_t)(-(int64_t)g->j0 * row));
  if (g->outer == 1)
    wf_emit(L, in.n ? &in : NULL, WF_PEOP_COPY, (wf_pe_arg[]){mine, wf_arg_at(g->src, g->src_off), wf_arg_int(blk)});
  else
    wf_emit(L, in.n ? &in : NULL, WF_PEOP_COPY2D,
            (wf_pe_arg[]){mine, wf_arg_at(g->src, g->src_off), wf_arg_int(g->outer), wf_arg_int(row), wf_arg_int(g->prow),
                          wf_arg_int(row)});
  if (P == 1) return blk;
  wf_pe_term tj = n > 1 ? wf_term_var(qv, 0) : wf_term_int(g->j0);
  wf_pe_guard own = wf_guard0(), other = wf_guard0();
  wf_guard_add(&own, tc, WF_CMP_EQ, tj);
  wf_guard_add(&other, tc, WF_CMP_NE, tj);
  wf_pe_arg slot = wf_arg_at(g->panel, g->panel_off); /* slot j0 when there is one round */
  if (n > 1) slot.term = wf_term_affine(qv, row, -(int64_t)g->j0 * row);
  int buf = g->outer > 1 ? wf_lower_temp(L, "$ga_buf", blk * 4) : -1;
  if (n > 1) wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tj), wf_arg_int(g->j0), wf_arg_int(g->j1)});
  wf_emit(L, &own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_at(g->src, g->src_off), wf_arg_int(blk)});
  if (buf < 0) {
    wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), slot, wf_arg_int(blk)});
  } else {
    wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(buf), wf_arg_int(blk)});
    wf_emit(L, &other, WF_PEOP_COPY2D,
            (wf_pe_arg[]){slot, wf_arg_sym(buf), wf_arg_int(g->outer), wf_arg_int(row), wf_arg_int(g->prow),
                          wf_arg_int(row)});
  }
  if (n > 1) wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  /* The copy; then the rounds, each a swset for the broadcast's positions (lower_util.c), the
   * block through the sender's ramp and one hop to the next round's sender (the rounds
   * pipeline), and the receivers' copy out of the buffer; the farthest PE's latency once. */
  return blk + (int64_t)n * (wf_cost_bcast(L->t, blk, 1) + 1 + (buf >= 0 ? blk : 0)) +
         (P > 2 ? (int64_t)(P - 2) * L->t->hop_cycles : 0);
}

int wf_relayout_gather_axis(wf_lower *L, const wf_relayout_gather *g, wf_loc loc, int64_t *cycles) {
  int P = g->axis == WF_AXIS_X ? L->w : L->h;
  WF_ASSERT(g->j0 >= 0 && g->j0 < g->j1 && g->j1 <= P);
  if (g->b * g->inner > WF_PE_MAX_SCALE || g->outer * g->b * g->inner * (int64_t)P > INT32_MAX / 2) {
    wf_error(loc, "a relayout along %s moves blocks of %lld words, past the PE's addressing of panel slots",
             g->axis == WF_AXIS_X ? "x" : "y", (long long)(g->outer * g->b * g->inner));
    return WF_EXIT_NOFIT;
  }
  int col = 0;
  if (P > 1) col = wf_lower_color(L, g->axis == WF_AXIS_X ? WF_COLOR_ROW_BCAST : WF_COLOR_COL_BCAST, loc);
  if (col < 0) return WF_EXIT_NOFIT;
  if (P > 1) L->move_bits |= WF_MOVE_RELAYOUT;
  int qv = P > 1 && g->j1 - g->j0 > 1 ? wf_lower_var(L, "rq") : -1;
  *cycles += gather_rounds(L, g, col, qv);
  return 0;
}

/* Phase 1: panel = X[all rows, Cx(x)], rpan rows (zero past H rb): the blocks of the
 * column gathered in order (wf_relayout_gather_axis with one row per block). */
static int64_t gather_columns(wf_lower *L, const wf_relayout_tr *t, int panel, int64_t rpan, int ccol, int qv) {
  int H = L->h;
  int64_t blk = t->rb * t->cb;
  if (rpan > H * t->rb)
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(panel, H * blk), wf_arg_int((rpan - H * t->rb) * t->cb)});
  wf_relayout_gather g = {WF_AXIS_Y, t->src, panel, t->src_off, 0, 1, t->cb, t->rb, blk, 0, H};
  return max64(rpan - H * t->rb, 0) * t->cb + gather_rounds(L, &g, ccol, qv);
}

/* One meeting pair of phase 2: PE (i, y) sends X[rows, lo..hi) along row y. Inside the
 * period loop, i and y are terms of the loop variable (ic: this instance's i, used only for
 * choices that are the same in every period of the loop). */
typedef struct rl_pair {
  rl_lin i, y;
  int ic, yc;
  int64_t lo, w, chunk; /* chunk: rb2 w, one receiver's share */
  int src;              /* the piece's symbol: the panel when the pair takes all of it */
  int64_t in_panel;     /* lo - i cb: where the columns start in the sender's panel */
  int64_t dpos;         /* word offset in Xᵀ's symbol of the rows it fills */
} rl_pair;

/* The pair (i, y) if Cx(i) ∩ C'(y) is not empty. */
static int meet(const wf_relayout_tr *t, int i, int y, int panel, int piece, rl_pair *p) {
  int64_t lo = max64((int64_t)i * t->cb, (int64_t)y * t->cb2);
  int64_t hi = min64(min64((int64_t)(i + 1) * t->cb, (int64_t)(y + 1) * t->cb2), t->cols);
  if (lo >= hi) return 0;
  *p = (rl_pair){lin_const(i), lin_const(y), i, y, lo, hi - lo, t->rb2 * (hi - lo),
                 lo == (int64_t)i * t->cb && hi - lo == t->cb ? panel : piece, lo - (int64_t)i * t->cb,
                 t->dst_off + (lo - (int64_t)y * t->cb2) * t->rb2};
  return 1;
}

static wf_pe_guard at_pe(const rl_pair *p) {
  wf_pe_guard g = guard1(wf_term(WF_TERM_X, 0), WF_CMP_EQ, lin_term(p->i, 1, 0));
  wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, lin_term(p->y, 1, 0));
  return g;
}

/* Row y's receivers of pair p whose x compares with p's i by `c`. */
static wf_pe_guard receivers(const rl_pair *p, wf_cmp c) {
  wf_pe_guard g = guard1(wf_term(WF_TERM_Y, 0), WF_CMP_EQ, lin_term(p->y, 1, 0));
  wf_guard_add(&g, wf_term(WF_TERM_X, 0), c, lin_term(p->i, 1, 0));
  return g;
}

/* What phase 2's passes share. */
typedef struct rl_ctx {
  const wf_relayout_tr *t;
  int panel, piece, chunkbuf, dropbuf, crow, v;
  int64_t slot;
} rl_ctx;

/* Pass 1: a sender cuts its piece out of its panel (each PE sends one piece at most). */
static void cut_pair(wf_lower *L, const rl_ctx *cx, const rl_pair *p) {
  if (p->src != cx->piece) return;
  wf_pe_guard snd = at_pe(p);
  wf_emit(L, &snd, WF_PEOP_COPY2D,
          (wf_pe_arg[]){wf_arg_sym(cx->piece), wf_arg_at(cx->panel, p->in_panel), wf_arg_int(L->w * cx->t->rb2),
                        wf_arg_int(p->w), wf_arg_int(p->w), wf_arg_int(cx->t->cb)});
}

/* Pass 2, phase 2's stream of pair p: the sender's chunks but its own, in two sends; each
 * receiver drops the chunks before its own (its stream position: x before the sender, x - 1
 * after), keeps its own in slot i of chunkbuf and drops the rest. Nobody stops mid-stream,
 * so the row streams at one wavelet per cycle. */
static void stream_pair(wf_lower *L, const rl_ctx *cx, const rl_pair *p) {
  int W = L->w, i = p->ic, v = cx->v, crow = cx->crow;
  if (W == 1) return;
  wf_pe_term tx = wf_term(WF_TERM_X, 0), tw = wf_term(WF_TERM_W, 0);
  wf_pe_guard snd = at_pe(p), before = receivers(p, WF_CMP_LT), after = receivers(p, WF_CMP_GT),
              any = receivers(p, WF_CMP_NE);
  if (i > 0)
    wf_emit(L, &snd, WF_PEOP_SEND,
            (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(p->src), wf_arg_term(lin_term(p->i, p->chunk, 0))});
  if (i < W - 1)
    wf_emit(L, &snd, WF_PEOP_SEND,
            (wf_pe_arg[]){wf_arg_int(crow), lin_at(p->src, p->i, p->chunk, p->chunk),
                          wf_arg_term(lin_term(p->i, -p->chunk, (int64_t)(W - 1) * p->chunk))});
  /* A loop is emitted only when some receiver runs it at least once. */
  if (i > 1) drop_chunks(L, &before, v, wf_term_int(0), tx, crow, cx->dropbuf, p->chunk);
  if (i < W - 1 && W > 2) drop_chunks(L, &after, v, wf_term_int(1), tx, crow, cx->dropbuf, p->chunk);
  wf_emit(L, &any, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), lin_at(cx->chunkbuf, p->i, cx->slot, 0), wf_arg_int(p->chunk)});
  if (i > 0 && W > 2) drop_chunks(L, &before, v, wf_term(WF_TERM_X, 2), tw, crow, cx->dropbuf, p->chunk);
  if (i < W - 2) drop_chunks(L, &after, v, wf_term(WF_TERM_X, 1), tw, crow, cx->dropbuf, p->chunk);
}

/* Pass 3: each PE transposes what it kept into its rows of Xᵀ's block. */
static void transpose_pair(wf_lower *L, const rl_ctx *cx, const rl_pair *p) {
  wf_pe_guard snd = at_pe(p), any = receivers(p, WF_CMP_NE);
  wf_emit(L, &snd, WF_PEOP_TRANSPOSE,
          (wf_pe_arg[]){wf_arg_at(cx->t->dst, p->dpos), lin_at(p->src, p->i, p->chunk, 0), wf_arg_int(cx->t->rb2),
                        wf_arg_int(p->w)});
  if (L->w > 1)
    wf_emit(L, &any, WF_PEOP_TRANSPOSE,
            (wf_pe_arg[]){wf_arg_at(cx->t->dst, p->dpos), lin_at(cx->chunkbuf, p->i, cx->slot, 0), wf_arg_int(cx->t->rb2),
                          wf_arg_int(p->w)});
}

/* The pairs' period loop: the cuts of C over x (cb) and over y (cb2) repeat every
 * pc = lcm(cb, cb2) columns, i advancing by pc / cb and y by pc / cb2. Pairs [k0, k1) are
 * periods q0 .. q1 - 1 (per pairs each) and run as one loop; the others are unrolled. */
typedef struct rl_loop {
  int var, k0, k1, per;
  int64_t q0, q1, si, sy;
} rl_loop;

/* Finds the loop (var = -1: none). Inside it every sender is at least 2 PEs from both ends
 * of its row, so every pair emits the same instructions (stream_pair's choices), and every
 * pair repeats the first period's, shifted; both are checked, not assumed. */
static rl_loop find_loop(const wf_lower *L, const rl_ctx *cx, const rl_pair *pr, int np, int qv) {
  const wf_relayout_tr *t = cx->t;
  rl_loop lp = {-1, 0, 0, 0, 0, 0, 0, 0};
  int64_t pc = wf_lcm(t->cb, t->cb2), si = pc / t->cb, sy = pc / t->cb2;
  int64_t q0 = (2 * t->cb + pc - 1) / pc, q1 = min64(t->cols, (int64_t)(L->w - 2) * t->cb) / pc;
  if (L->w < 5 || q1 - q0 < 2) return lp;
  /* the largest scales: slot i of the chunk buffer and chunk i of a piece (chunk <= slot) */
  if (!lin_fits(si, max64(cx->slot, 1)) || !lin_fits(sy, 1)) return lp;
  int k0 = 0;
  while (k0 < np && pr[k0].lo < q0 * pc) k0++;
  int k1 = k0;
  while (k1 < np && pr[k1].lo < q1 * pc) k1++;
  int per = 0;
  while (k0 + per < np && pr[k0 + per].lo < (q0 + 1) * pc) per++;
  if (!per || k1 - k0 != per * (q1 - q0)) return lp;
  for (int k = k0; k < k1; k++) {
    const rl_pair *a = &pr[k0 + (k - k0) % per], *b = &pr[k];
    int64_t d = (k - k0) / per;
    if (b->ic != a->ic + d * si || b->yc != a->yc + d * sy || b->lo != a->lo + d * pc || b->w != a->w ||
        b->src != a->src || b->in_panel != a->in_panel || b->dpos != a->dpos || b->ic < 2 || b->ic > L->w - 3)
      return lp;
  }
  return (rl_loop){qv, k0, k1, per, q0, q1, si, sy};
}

typedef void (*rl_pass)(wf_lower *L, const rl_ctx *cx, const rl_pair *p);

/* Emits one pass over the pairs in order: the first ones, the loop over the periods in
 * between (its body the first period's pairs, with i and y terms of the loop variable), and
 * the last ones. */
static void each_pair(wf_lower *L, const rl_ctx *cx, const rl_pair *pr, int np, const rl_loop *lp, rl_pass fn) {
  int k0 = lp->var >= 0 ? lp->k0 : np, k1 = lp->var >= 0 ? lp->k1 : np;
  for (int k = 0; k < k0; k++) fn(L, cx, &pr[k]);
  if (lp->var >= 0) {
    wf_pe_term tq = wf_term_var(lp->var, 0);
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tq), wf_arg_int(lp->q0), wf_arg_int(lp->q1)});
    for (int k = k0; k < k0 + lp->per; k++) {
      rl_pair p = pr[k];
      p.i = (rl_lin){lp->var, p.ic - lp->si * lp->q0, lp->si};
      p.y = (rl_lin){lp->var, p.yc - lp->sy * lp->q0, lp->sy};
      fn(L, cx, &p);
    }
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  for (int k = k1; k < np; k++) fn(L, cx, &pr[k]);
}

int wf_relayout_transpose(wf_lower *L, const wf_relayout_tr *t, wf_loc loc, int64_t *cycles) {
  int W = L->w, H = L->h;
  WF_ASSERT(H * t->rb >= t->rows && W * t->cb >= t->cols && H * t->cb2 >= t->cols && W * t->rb2 >= t->rows);
  if (t->rb * t->cb > WF_PE_MAX_SCALE) {
    wf_error(loc, "transpose: a %lld-word block is past the PE's addressing of panel slots", (long long)(t->rb * t->cb));
    return WF_EXIT_NOFIT;
  }
  int crow = W > 1 ? wf_lower_color(L, WF_COLOR_ROW_BCAST, loc) : 0;
  int ccol = H > 1 ? wf_lower_color(L, WF_COLOR_COL_BCAST, loc) : 0;
  if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
  if (W * H > 1) L->move_bits |= WF_MOVE_TRANSPOSE;
  int64_t rpan = max64(H * t->rb, W * t->rb2), maxw = min64(t->cb, t->cb2), slot = t->rb2 * maxw;
  int panel = wf_lower_temp(L, "$rl_panel", rpan * t->cb * 4);
  int piece = wf_lower_temp(L, "$rl_piece", W * slot * 4);
  int chunkbuf = W > 1 ? wf_lower_temp(L, "$rl_chunks", W * slot * 4) : -1;
  int dropbuf = W > 2 ? wf_lower_temp(L, "$rl_drop", slot * 4) : -1;
  int v = W > 2 ? wf_lower_var(L, "rl") : -1;              /* the drop loops need W > 2 */
  int qv = H > 1 || W >= 5 ? wf_lower_var(L, "rq") : -1; /* phase 1's rounds; periods */
  /* At most W + H - 1 pairs meet: the cuts of C over x and over y merged. In order of
   * their columns (i and y both grow with lo). */
  rl_pair *pairs = calloc((size_t)(W + H), sizeof *pairs);
  int64_t *row = calloc((size_t)H * 2, sizeof *row), *cut = row + H;
  WF_ASSERT(pairs && row);
  int np = 0;
  for (int i = 0; i < W; i++)
    for (int y = 0; y < H; y++)
      if (np < W + H && meet(t, i, y, panel, piece, &pairs[np])) np++;
  WF_ASSERT(np < W + H);
  /* Predicted: phase 1 (the same on every column), then the slowest row of phase 2. */
  int64_t pred = gather_columns(L, t, panel, rpan, ccol, qv);
  zero_row_padding(L, t, row);
  rl_ctx cx = {t, panel, piece, chunkbuf, dropbuf, crow, v, slot};
  rl_loop lp = find_loop(L, &cx, pairs, np, qv);
  /* Every sender cuts its piece before the streams start; then the streams; then the
   * transposes. The prediction walks every pair. */
  each_pair(L, &cx, pairs, np, &lp, cut_pair);
  each_pair(L, &cx, pairs, np, &lp, stream_pair);
  each_pair(L, &cx, pairs, np, &lp, transpose_pair);
  for (int k = 0; k < np; k++) {
    const rl_pair *p = &pairs[k];
    if (p->src == piece) cut[p->yc] = max64(cut[p->yc], W * p->chunk); /* a row's senders cut at once */
    /* Round i of row y: the swset for its positions, its W − 1 chunks through the ramp and
     * one hop to the next sender. */
    if (W > 1) row[p->yc] += wf_cost_bcast(L->t, (W - 1) * p->chunk, 1) + 1;
    row[p->yc] += p->chunk; /* the transpose of what a PE kept */
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
 * range [p b_dst, +b_dst) meets j's real range [j b_src, +w) copies the overlap in place.
 * As b_dst >= b_src (K' >= K), the overlap is one of three cases: the block starts before
 * p's range (its tail), lies inside it (all of it) or runs past its end (its head). Each
 * case is one copy2d whose offsets and width are sums of a term in j and a term in p (two-term
 * operands, docs/pe-programs.md), so rounds 1 .. J-2 of the J real blocks are one loop
 * (`rk`); round 0 (whose block usually stays home) and round J-1 (whose block may end at
 * len) are emitted alone. The program does not grow with P. The prediction walks the same
 * rounds (reblock_cost), so the chooser (gemm_choose.c) can ask it without emitting. */

/* Whether another PE than j needs part of block j, and the widest copy of round j (words). */
static int reblock_widest(int P, int j, const wf_relayout_reblock *r, int64_t *widest) {
  int64_t lo_j = (int64_t)j * r->b_src, hi_j = min64(lo_j + r->b_src, r->len);
  int shared = 0;
  *widest = 0;
  for (int p = 0; p < P; p++) {
    int64_t lo = max64(lo_j, (int64_t)p * r->b_dst), hi = min64(hi_j, (int64_t)(p + 1) * r->b_dst);
    if (lo >= hi) continue;
    shared |= p != j;
    *widest = max64(*widest, r->outer * (hi - lo) * r->inner);
  }
  return shared;
}

/* The real blocks (those starting before len). */
static int reblock_blocks(const wf_relayout_reblock *r) { return (int)((r->len + r->b_src - 1) / r->b_src); }

/* Whether round j of J broadcasts: the looped rounds 1 .. J-2 always do (on more than one
 * PE), the two emitted alone only when another PE needs the block. */
static int reblock_sends(int P, int j, int J, const wf_relayout_reblock *r) {
  int64_t widest;
  if (j > 0 && j < J - 1) return P > 1;
  return reblock_widest(P, j, r, &widest);
}

static int64_t reblock_cost(const wf_target *t, int P, const wf_relayout_reblock *r) {
  int64_t blk = r->outer * r->b_src * r->inner, pred = r->outer * r->b_dst * r->inner, widest;
  int J = reblock_blocks(r);
  for (int j = 0; j < J; j++) {
    reblock_widest(P, j, r, &widest);
    if (reblock_sends(P, j, J, r)) pred += wf_cost_bcast(t, blk, 1) + 1; /* + the swset */
    pred += widest;
  }
  /* The farthest PE's latency once (the rounds pipeline hop by hop). */
  return pred + (P > 2 ? (int64_t)(P - 2) * t->hop_cycles : 0);
}

/* c_j·j + c_p·p + c0 (p: the PE's coordinate tc, j: an integer or a loop variable), as a
 * term (j's part alone when c_p is 0). */
static wf_pe_term rb_term(wf_pe_term jt, int64_t cj, wf_pe_term tc, int64_t cp, int64_t c0) {
  if (jt.kind == WF_TERM_INT) c0 += cj * jt.k, cj = 0;
  WF_ASSERT(!(cj && cp));
  if (cp) return wf_term_scaled(tc, (int)cp, (int32_t)c0);
  if (cj) return wf_term_scaled(jt, (int)cj, (int32_t)c0);
  return wf_term_int((int32_t)c0);
}

/* The same as an operand (a buffer offset into sym, or an integer when sym < 0), both terms
 * allowed. */
static wf_pe_arg rb_arg(int sym, wf_pe_term jt, int64_t cj, wf_pe_term tc, int64_t cp, int64_t c0) {
  wf_pe_arg a = sym >= 0 ? wf_arg_sym(sym) : wf_arg_int(0);
  if (jt.kind == WF_TERM_INT) c0 += cj * jt.k, cj = 0;
  if (sym >= 0 && !cj && !cp) {
    a.off = (int32_t)c0;
    return a;
  }
  if (cp) {
    a.term = wf_term_scaled(tc, (int)cp, (int32_t)c0);
    if (cj) a.term2 = wf_term_scaled(jt, (int)cj, 0);
  } else a.term = rb_term(jt, cj, tc, 0, c0);
  return a;
}

/* Round j (jt: an integer or the loop variable) of the re-cut: its broadcast if `bcast`,
 * then every PE's copy of its overlap with block j (w indices wide). */
static void reblock_round(wf_lower *L, const wf_relayout_reblock *r, wf_pe_term tc, wf_pe_term jt, int bcast,
                          int col, int recv, int64_t w) {
  int64_t in = r->inner, bs = r->b_src, bd = r->b_dst, blk = r->outer * bs * in;
  wf_pe_guard own = guard1(tc, WF_CMP_EQ, jt), other = guard1(tc, WF_CMP_NE, jt);
  if (bcast) {
    wf_emit(L, &own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(r->src), wf_arg_int(blk)});
    wf_emit(L, &other, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(recv), wf_arg_int(blk)});
  }
  wf_pe_term none = wf_term_int(0), s_j = rb_term(jt, bs, none, 0, 0), e_j = rb_term(jt, bs, none, 0, w);
  wf_pe_term p_lo = wf_term_scaled(tc, (int)bd, 0), p_hi = wf_term_scaled(tc, (int)bd, (int32_t)bd);
  wf_pe_arg w_all = wf_arg_int(w * in);
  for (int mine = 1; mine >= (bcast ? 0 : 1); mine--) { /* nobody else meets an unsent block */
    int src = mine ? r->src : recv;
    for (int c = 0; c < 3; c++) {
      wf_pe_guard g = mine ? own : other;
      wf_pe_arg d, sa, n;
      if (c == 0) { /* starts before p's range: its tail [p bd - s_j, w) to dst's start */
        wf_guard_add(&g, s_j, WF_CMP_LT, p_lo);
        wf_guard_add(&g, e_j, WF_CMP_GT, p_lo);
        d = rb_arg(r->dst, jt, 0, tc, 0, 0);
        sa = rb_arg(src, jt, -bs * in, tc, bd * in, 0);
        n = rb_arg(-1, jt, bs * in, tc, -bd * in, w * in);
      } else if (c == 1) { /* inside: all of it at s_j - p bd */
        wf_guard_add(&g, s_j, WF_CMP_GE, p_lo);
        wf_guard_add(&g, e_j, WF_CMP_LE, p_hi);
        d = rb_arg(r->dst, jt, bs * in, tc, -bd * in, 0);
        sa = wf_arg_sym(src);
        n = w_all;
      } else { /* runs past p's end: its head, (p+1) bd - s_j wide */
        wf_guard_add(&g, s_j, WF_CMP_LT, p_hi);
        wf_guard_add(&g, e_j, WF_CMP_GT, p_hi);
        d = rb_arg(r->dst, jt, bs * in, tc, -bd * in, 0);
        sa = wf_arg_sym(src);
        n = rb_arg(-1, jt, -bs * in, tc, bd * in, bd * in);
      }
      wf_emit(L, &g, WF_PEOP_COPY2D,
              (wf_pe_arg[]){d, sa, wf_arg_int(r->outer), n, wf_arg_int(bd * in), wf_arg_int(bs * in)});
    }
  }
}

int wf_relayout_reblock_axis(wf_lower *L, const wf_relayout_reblock *r, wf_loc loc, int64_t *cycles) {
  int P = r->axis == WF_AXIS_X ? L->w : L->h;
  wf_pe_term tc = wf_term(r->axis == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  int64_t in = r->inner, blk = r->outer * r->b_src * in;
  int J = reblock_blocks(r);
  int64_t last_w = r->len - (int64_t)(J - 1) * r->b_src;
  WF_ASSERT(r->b_dst >= r->b_src);
  if (r->b_dst * in > WF_PE_MAX_SCALE || (int64_t)(P + 1) * r->b_dst * in > INT32_MAX / 2) {
    wf_error(loc, "re-cutting K for this GEMM moves blocks of %lld words, more than a PE holds",
             (long long)(r->outer * r->b_dst * in));
    return WF_EXIT_NOFIT;
  }
  int col = 0;
  if (P > 1) col = wf_lower_color(L, r->axis == WF_AXIS_X ? WF_COLOR_ROW_BCAST : WF_COLOR_COL_BCAST, loc);
  if (col < 0) return WF_EXIT_NOFIT;
  if (P > 1) L->move_bits |= WF_MOVE_RELAYOUT;
  int recv = P > 1 ? wf_lower_temp(L, "$rb_recv", blk * 4) : -1;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(r->dst), wf_arg_int(r->outer * r->b_dst * in)});
  reblock_round(L, r, tc, wf_term_int(0), reblock_sends(P, 0, J, r), col, recv, J == 1 ? last_w : r->b_src);
  if (J > 2) {
    int v = wf_lower_var(L, "rk");
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(v, 0)), wf_arg_int(1), wf_arg_int(J - 1)});
    reblock_round(L, r, tc, wf_term_var(v, 0), reblock_sends(P, 1, J, r), col, recv, r->b_src);
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  if (J > 1) reblock_round(L, r, tc, wf_term_int(J - 1), reblock_sends(P, J - 1, J, r), col, recv, last_w);
  *cycles += reblock_cost(L->t, P, r);
  return 0;
}

int64_t wf_relayout_gemm_k_cost(const wf_target *t, int w, int h, int64_t m, int64_t n, int64_t K, int64_t ka,
                                int64_t kb) {
  int64_t l = wf_lcm(w, h), kp = (K + l - 1) / l * l, c = 0;
  if (ka != kp / w) c += reblock_cost(t, w, &(wf_relayout_reblock){WF_AXIS_X, -1, -1, m, 1, K, ka, kp / w});
  if (kb != kp / h) c += reblock_cost(t, h, &(wf_relayout_reblock){WF_AXIS_Y, -1, -1, 1, n, K, kb, kp / h});
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
