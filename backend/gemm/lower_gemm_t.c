/* dist.gemm_t: C[M,N] = A[M,K] . B[N,K]^T (A may carry whole leading dims) on an N x N or W x H region, B kept as stored (WaferLLM
 * §5.4: the attention score Q K^T needs no transpose of K over the fabric).
 *
 * Layouts (partition): A {M_y, K_x}, B {N_y, K_x}, C {M_y, N_x}. PE (x, y) holds A[y][x]
 * and B[y][x]; C[y][j] = sum_x A[y][x] B[j][x]^T lives on PE (j, y). Round j of N: PE
 * (x, j) multicasts its B block down column x (the SUMMA column color), every PE
 * multiplies its A block by the B block it has, read by rows (the PE instruction
 * `matmul_t`: a strided operand, no transposed copy and no fabric traffic), and the
 * partials are summed along the row by the library allreduce; PE (j, y) keeps the sum as
 * its C block.
 *
 * WaferLLM moves B by cyclic shifts along y and reduces to a root that changes with the
 * step ((y + s) mod N). Our guards compare one term (a PE coordinate or a loop variable plus
 * a constant) with another, so that root is not expressible in one class; the broadcast
 * makes the sender and the root of round j both "coordinate == j", and the allreduce
 * replaces the rooted reduce (every PE receives the sum; only one keeps it). */
#include "backend/gemm/lower_gemm.h"
#include "ir/support/intmath.h"

#include <stdlib.h>

#include "waferc/diag.h"

/* The operand symbols and scratch of one dist.gemm_t: partT is the round's partial product
 * transposed (C's columns of the round as rows, nb x m), so that each piece of B rows adds
 * whole rows of it. */
typedef struct gt_syms {
  int a, b, brecv, partT;
  int64_t piece; /* rows of B a receiver holds at once (divides nb) */
} gt_syms;

/* B's blocks travel in pieces of r rows so that a receiver holds r x k words, not a whole
 * block beside its own (a tied LM head's B is the vocabulary: a second block would take what
 * sharing the table saved). r: the most rows that divide nb in at most GT_PIECE_WORDS. */
#define GT_PIECE_WORDS 512
static int64_t piece_rows(int64_t nb, int64_t k, int64_t m) {
  if (nb * k <= GT_PIECE_WORDS || nb * m > WF_PE_MAX_SCALE) return nb;
  int64_t r = GT_PIECE_WORDS / k;
  if (r < 1) r = 1;
  while (nb % r) r--;
  return r;
}

/* Piece p of a round: p = step * var + p0 with var a loop variable, or p0 when var < 0. */
typedef struct gt_piece {
  int var;
  int64_t step, p0;
} gt_piece;

/* sym's word offset of piece p, for pieces of `words` words. */
static wf_pe_arg at_piece(int sym, gt_piece p, int64_t words) {
  wf_pe_arg a = wf_arg_sym(sym);
  a.off = (int32_t)(p.p0 * words);
  if (p.var >= 0) a.term = wf_term_scaled(wf_term_var(p.var, 0), (int)(p.step * words), 0);
  return a;
}

static wf_pe_guard guard_and(const wf_pe_guard *g, const wf_pe_cond *c) {
  wf_pe_guard r = *g;
  if (c) wf_gadd(&r, c->a, (wf_cmp)c->cmp, c->b);
  return r;
}

/* Piece p on its way: the owner streams it from its block, a receiver into `slot` of its
 * two-piece buffer; both activate the done task when they end (wait collects them). */
static void post_piece(wf_lower *L, const wf_pe_guard *own, const wf_pe_guard *recv, const wf_pe_cond *extra,
                       int ccol, const gt_syms *s, gt_piece p, int slot, int64_t rk, int done) {
  wf_pe_guard go = guard_and(own, extra), gr = guard_and(recv, extra);
  wf_pe_arg dst = wf_arg_sym(s->brecv);
  dst.off = (int32_t)(slot * rk);
  wf_emit(L, &gr, WF_PEOP_ARECV, (wf_pe_arg[]){wf_arg_int(ccol), dst, wf_arg_int(rk), wf_arg_int(done)});
  wf_emit(L, &go, WF_PEOP_ASEND,
          (wf_pe_arg[]){wf_arg_int(ccol), at_piece(s->b, p, rk), wf_arg_int(rk), wf_arg_int(done)});
}

/* partT[rows of piece p] += piece p · Aᵀ: the owner's from its block, a receiver's from `slot`. */
static void mul_piece(wf_lower *L, const wf_pe_guard *own, const wf_pe_guard *recv, const gt_syms *s, gt_piece p,
                      int slot, int64_t r, int64_t k, int64_t m) {
  wf_pe_arg src = wf_arg_sym(s->brecv);
  src.off = (int32_t)(slot * r * k);
  wf_emit(L, own, WF_PEOP_MATMUL_T,
          (wf_pe_arg[]){at_piece(s->partT, p, r * m), at_piece(s->b, p, r * k), wf_arg_sym(s->a), wf_arg_int(r),
                        wf_arg_int(k), wf_arg_int(m)});
  wf_emit(L, recv, WF_PEOP_MATMUL_T,
          (wf_pe_arg[]){at_piece(s->partT, p, r * m), src, wf_arg_sym(s->a), wf_arg_int(r), wf_arg_int(k),
                        wf_arg_int(m)});
}

/* Cycles of a round's transfer and multiply: one block, sent then multiplied; or pieces, the
 * next one in flight while the PE multiplies the one it has (the first one's transfer is not
 * hidden). */
static int64_t xfer_mul_cycles(const wf_lower *L, int64_t nb, int64_t k, int64_t m, int64_t r, int moves) {
  int64_t f = L->t->fmac_per_cycle > 0 ? L->t->fmac_per_cycle : 1, np = nb / r;
  int64_t mac = (m * k * nb + f - 1) / f, pmac = (m * k * r + f - 1) / f;
  if (!moves) return mac;
  if (np == 1) return nb * k + mac;
  return r * k + np * (pmac > r * k ? pmac : r * k);
}

/* One round: the PEs of `own` multicast their B block down the column (when `ccol` >= 0),
 * and everyone multiplies the B rows it has, read by rows (`matmul_t`: no transposed copy),
 * by its A block into partT: partT[rows] += B rows · Aᵀ. A block larger than a piece travels
 * in pieces, double-buffered: while a PE multiplies piece p, piece p + 1 streams into the
 * other half of its buffer (async send and receive; the loop is unrolled by two so that each
 * half has a fixed address). Then partT is summed along the row. The allreduce's predicted
 * cycles are added to *ar. When K is whole on every PE (partition does not split K = 1),
 * partT is already the sum: no allreduce (it would add the same product W times). */
static int round_body(wf_lower *L, const wf_pe_guard *own, const wf_pe_guard *recv, int ccol,
                      const gt_syms *s, int64_t m, int64_t k, int64_t nb, int k_split, wf_loc loc,
                      int64_t *ar, int64_t *spread) {
  /* partT is zeroed first, by every PE: a receiver's zero would otherwise hide behind the
   * owner's send, which the prediction does not count on */
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(s->partT), wf_arg_int(m * nb)});
  int64_t r = ccol >= 0 ? s->piece : nb, np = nb / r, rk = r * k;
  if (np == 1) {
    if (ccol >= 0) wf_emit(L, own, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(s->b), wf_arg_int(rk)});
    wf_emit(L, ccol >= 0 ? own : NULL, WF_PEOP_MATMUL_T,
            (wf_pe_arg[]){wf_arg_sym(s->partT), wf_arg_sym(s->b), wf_arg_sym(s->a), wf_arg_int(nb), wf_arg_int(k),
                          wf_arg_int(m)});
    if (ccol >= 0) {
      wf_emit(L, recv, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(s->brecv), wf_arg_int(rk)});
      wf_emit(L, recv, WF_PEOP_MATMUL_T,
              (wf_pe_arg[]){wf_arg_sym(s->partT), wf_arg_sym(s->brecv), wf_arg_sym(s->a), wf_arg_int(nb),
                            wf_arg_int(k), wf_arg_int(m)});
    }
  } else {
    int done = wf_lower_done_task(L);
    int64_t pairs = np / 2, tail = np % 2;
    int q = wf_lower_var(L, "j");
    wf_lower_flood_positions(L, own, ccol); /* the round's root, for all its pieces */
    post_piece(L, own, recv, NULL, ccol, s, (gt_piece){-1, 0, 0}, 0, rk, done);
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(q, 0)), wf_arg_int(0), wf_arg_int(pairs)});
    gt_piece p0 = {q, 2, 0}, p1 = {q, 2, 1}, p2 = {q, 2, 2};
    post_piece(L, own, recv, NULL, ccol, s, p1, 1, rk, done);
    mul_piece(L, own, recv, s, p0, 0, r, k, m);
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    /* the next pair's first piece, unless this pair is the last piece's */
    wf_pe_cond more = {wf_term_var(q, 0), wf_term_int((int32_t)(pairs - 1)), WF_CMP_LT};
    if (pairs - 1 + tail > 0) post_piece(L, own, recv, tail ? NULL : &more, ccol, s, p2, 0, rk, done);
    mul_piece(L, own, recv, s, p1, 1, r, k, m);
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    if (tail) mul_piece(L, own, recv, s, (gt_piece){-1, 0, np - 1}, 0, r, k, m);
  }
  return k_split ? wf_lower_allreduce(L, s->partT, m * nb, WF_AXIS_X, 0, loc, ar, spread) : 0;
}

/* K is split along x (A's last dim; B's is cut the same way). */
static int k_split(const wf_lower *L, wf_value a) {
  const wf_type *t = wf_value_type(L->f, a);
  return t->layout.dims[t->rank - 1].split == WF_AXIS_X;
}

/* W x H (W != H): B's N is cut in H blocks of nb (over y) but C's in W blocks of nc (over x),
 * so round j's partial C[y][j-th B block] (m x nb, summed along the row as above) spans
 * parts of several C column blocks: in round j, each PE x whose columns [x nc, (x+1) nc)
 * meet [j nb, (j+1) nb) copies that slice of the sum into its C block with a strided copy.
 * The cuts repeat every lcm(nb, nc) columns (round j + lcm/nb copies to PE x + lcm/nc what
 * round j copies to x), so whole periods that repeat the first one are one loop whose
 * rounds and PEs are terms of its variable; the rest is unrolled. The program grows with
 * the blocks' ratio, not with W or H. Padding: B's rows past N are zero, so are their
 * partial columns; C's columns past N are dropped by the host; K is cut over x for both
 * operands, as on a square region. */

/* One group of the W x H walk, in emission order: round j (x < 0) or its copy to PE x. */
typedef struct gt_item {
  int j, x;
  int64_t s0, s1; /* the copied columns (C's), a copy only */
} gt_item;

static int gt_items(int H, int W, int64_t nb, int64_t nc, int c_split, gt_item *it) {
  int n = 0;
  for (int j = 0; j < H; j++) {
    it[n++] = (gt_item){j, -1, 0, 0};
    int64_t lo = (int64_t)j * nb, hi = lo + nb;
    for (int x = 0; x < (c_split ? W : 1); x++) {
      int64_t clo = (int64_t)x * nc, chi = clo + nc;
      int64_t s0 = lo > clo ? lo : clo, s1 = hi < chi ? hi : chi;
      if (s0 < s1) it[n++] = (gt_item){j, x, s0, s1};
    }
  }
  return n;
}

/* Whether b is a, d periods later (sj rounds, sx PEs, pn columns further). */
static int gt_same(const gt_item *a, const gt_item *b, int64_t d, int64_t sj, int64_t sx, int64_t pn) {
  if (b->j != a->j + d * sj || (a->x < 0) != (b->x < 0)) return 0;
  return a->x < 0 || (b->x == a->x + d * sx && b->s0 == a->s0 + d * pn && b->s1 == a->s1 + d * pn);
}

static int lower_rect(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  int W = L->w, H = L->h;
  int64_t m, k, nb, kb, r, nc;
  wf_lower_block(L, a, &m, &k);
  wf_lower_block(L, b, &nb, &kb);
  wf_lower_block(L, c, &r, &nc);
  WF_ASSERT(k == kb && r == m);
  /* C's N is whole on every PE when partition does not split it (N = 1): every PE keeps
   * the slice of each round's sum, not only the PE whose column block it would be. */
  const wf_type *ct = wf_value_type(L->f, c);
  int c_split = ct->layout.dims[ct->rank - 1].split == WF_AXIS_X;
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b), sc = wf_lower_sym(L, c);
  int ccol = H > 1 ? wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc) : 0;
  if (ccol < 0) return WF_EXIT_NOFIT;
  int64_t piece = piece_rows(nb, k, m);
  gt_syms gs = {sa, sb, wf_lower_temp(L, "$gemmt_brecv", (piece < nb ? 2 : 1) * piece * k * 4),
                wf_lower_temp(L, "$gemmt_partT", m * nb * 4), piece};
  int part = wf_lower_temp(L, "$gemmt_part", m * nb * 4); /* partT transposed back, for the copies */
  int64_t xm = xfer_mul_cycles(L, nb, k, m, H > 1 ? piece : nb, H > 1);
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * nc)});
  gt_item *it = calloc((size_t)H * ((size_t)W + 1) + 1, sizeof *it);
  WF_ASSERT(it);
  int n = gt_items(H, W, nb, nc, c_split, it);
  /* The loop: periods q0 .. q1 - 1 of pn columns, each repeating the first one. */
  int64_t pn = wf_lcm(nb, nc), sj = pn / nb, sx = pn / nc, q1 = (int64_t)H / sj, q0 = 0;
  int k0 = n, per = 0, k1 = n;
  if (sj <= WF_PE_MAX_SCALE && sx <= WF_PE_MAX_SCALE)
    for (q0 = 0; q0 + 2 <= q1; q0++) {
      int s = 0;
      while (s < n && it[s].j < q0 * sj) s++;
      int per0 = 0;
      while (s + per0 < n && it[s + per0].j < (q0 + 1) * sj) per0++;
      int e = s, ok = per0 > 0;
      while (ok && e < n && it[e].j < q1 * sj) {
        ok = gt_same(&it[s + (e - s) % per0], &it[e], (e - s) / per0, sj, sx, pn);
        e++;
      }
      if (ok && e - s == per0 * (q1 - q0)) {
        k0 = s, per = per0, k1 = e;
        break;
      }
    }
  int qv = per ? wf_lower_var(L, "gq") : -1;
  int64_t pred = m * nc, ar = 0, spread = 0, widest = 0;
  for (int i = 0; i < n; i++) {
    const gt_item *x = &it[i];
    int emit = i < k0 || i >= k1 || i < k0 + per, in_loop = i >= k0 && i < k0 + per;
    if (per && i == k0)
      wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(qv, 0)), wf_arg_int(q0), wf_arg_int(q1)});
    if (x->x < 0) {
      if (i) pred += xm + 2 * m * nb + ar + spread + m * widest + (H > 1); /* the previous round */
      widest = 0;
      if (emit) {
        wf_pe_term tj = wf_term_affine(in_loop ? qv : -1, in_loop ? sj : 0, x->j - (in_loop ? sj * q0 : 0));
        wf_pe_guard own = wf_guard0(), recv = wf_guard0();
        wf_gadd(&own, ty, WF_CMP_EQ, tj);
        wf_gadd(&recv, ty, WF_CMP_NE, tj);
        ar = 0; /* every round's allreduce is the same: its prediction serves the unrolled ones */
        int rc = round_body(L, &own, &recv, H > 1 ? ccol : -1, &gs, m, k, nb, k_split(L, a), op->loc, &ar,
                            &spread);
        if (rc) {
          free(it);
          return rc;
        }
        wf_emit(L, NULL, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(part), wf_arg_sym(gs.partT), wf_arg_int(nb), wf_arg_int(m)});
      }
    } else {
      int64_t lo = (int64_t)x->j * nb, clo = (int64_t)x->x * nc;
      if (emit) {
        wf_pe_guard at = wf_guard0();
        wf_gadd(&at, tx, WF_CMP_EQ, wf_term_affine(in_loop ? qv : -1, in_loop ? sx : 0, x->x - (in_loop ? sx * q0 : 0)));
        wf_pe_arg dst = wf_arg_sym(sc), src = wf_arg_sym(part);
        dst.off = (int32_t)(x->s0 - clo);
        src.off = (int32_t)(x->s0 - lo);
        wf_emit(L, c_split ? &at : NULL, WF_PEOP_COPY2D,
                (wf_pe_arg[]){dst, src, wf_arg_int(m), wf_arg_int(x->s1 - x->s0), wf_arg_int(nc), wf_arg_int(nb)});
      }
      if (x->s1 - x->s0 > widest) widest = x->s1 - x->s0;
    }
    if (per && i == k0 + per - 1) wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  /* Per round: the swset that sets the column broadcast's positions (lower_util.c), the zero
   * of partT, the B block through the ramp, the multiply, the row allreduce, partT transposed
   * back and the widest slice copied. */
  pred += xm + 2 * m * nb + ar + m * widest + (H > 1);
  free(it);
  out->lowering = "gemm_t-bcast-allreduce";
  out->predicted = pred + (H > 1 ? (int64_t)(H - 1) * L->t->hop_cycles + 2 * L->t->ramp_cycles + 1 : 0);
  return 0;
}

int wf_lower_gemm_t(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  const wf_type *ta = wf_value_type(L->f, a), *tb = wf_value_type(L->f, b);
  /* A's leading dims (a batch of activations [B, S, E], the tied LM head's) are whole on every
   * PE and fold into the rows of its block: the blocks multiply as a rank-2 A's do. */
  int lead_whole = ta->rank >= 2;
  for (int d = 0; d + 2 < ta->rank; d++) lead_whole &= ta->layout.dims[d].split == WF_AXIS_NONE;
  if (!lead_whole || tb->rank != 2) {
    wf_error(op->loc, "dist.gemm_t lowers A [.., M, K] with its leading dims whole and B [N, K] only (got "
                      "rank %d and %d)", ta->rank, tb->rank);
    return WF_EXIT_UNSUPPORTED;
  }
  if (L->w != L->h) return lower_rect(L, op, out);
  int N = L->w;
  int64_t m, k, nb, kb, r, n;
  wf_lower_block(L, a, &m, &k);
  wf_lower_block(L, b, &nb, &kb);
  wf_lower_block(L, c, &r, &n);
  WF_ASSERT(k == kb && r == m && nb == n);
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b), sc = wf_lower_sym(L, c);
  int64_t f = L->t->fmac_per_cycle > 0 ? L->t->fmac_per_cycle : 1;
  int64_t mac = (m * k * n + f - 1) / f;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
  if (N == 1) {
    wf_emit(L, NULL, WF_PEOP_MATMUL_T,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sa), wf_arg_sym(sb), wf_arg_int(m), wf_arg_int(k),
                          wf_arg_int(n)});
    out->lowering = "local";
    out->predicted = m * n + mac;
    return 0;
  }
  int ccol = wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc);
  if (ccol < 0) return WF_EXIT_NOFIT;
  int64_t piece = piece_rows(n, k, m);
  gt_syms gs = {sa, sb, wf_lower_temp(L, "$gemmt_brecv", (piece < n ? 2 : 1) * piece * k * 4),
                wf_lower_temp(L, "$gemmt_partT", m * n * 4), piece};
  int j = wf_lower_var(L, "jt");
  wf_pe_term tj = wf_term_var(j, 0), tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  wf_pe_guard own = wf_guard0(), recv = wf_guard0(), root = wf_guard0();
  wf_gadd(&own, ty, WF_CMP_EQ, tj);
  wf_gadd(&recv, ty, WF_CMP_NE, tj);
  wf_gadd(&root, tx, WF_CMP_EQ, tj);
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tj), wf_arg_int(0), wf_arg_int(N)});
  int64_t ar = 0, spread = 0;
  int rc = round_body(L, &own, &recv, ccol, &gs, m, k, n, k_split(L, a), op->loc, &ar, &spread);
  if (rc) return rc;
  wf_emit(L, &root, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(gs.partT), wf_arg_int(n), wf_arg_int(m)});
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  out->lowering = "gemm_t-bcast-allreduce";
  /* Per round: the broadcast's swset (1), the B block through the ramp (n k), the multiply,
   * the allreduce of the m n partial, the copy (m n); between rounds the allreduce's spread
   * (the next round's reduce waits for the PEs its broadcast reached last); the column
   * broadcast's farthest-PE latency once (the rounds pipeline, as SUMMA's). */
  out->predicted = m * n + (int64_t)N * (1 + xfer_mul_cycles(L, n, k, m, piece, 1) + ar + m * n) +
                   (int64_t)(N - 1) * spread +
                   (int64_t)(N - 1) * L->t->hop_cycles + 2 * L->t->ramp_cycles + 1;
  return 0;
}
