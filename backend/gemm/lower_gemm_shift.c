/* Cyclic-shift GEMM (MeshGEMM and Cannon), C = A B on an N x N region.
 *
 * Layouts (partition): A {M_y, K_x}, B {K_y, N_x}, C {M_y, N_x}: PE (x, y) starts with A's
 * block (y, x) and B's block (y, x). Every shift passes A one ring position forward along
 * its row and B along its column; the ring (wf_ring) fixes the routes and the alignment.
 *
 *   alignment   loop u: the rows / columns whose guards hold shift A / B once (async send
 *               and receive between buffers 0 and 1, then `wait`); a final copy brings the
 *               blocks of rows that shifted an odd number of times back to buffer 0. A
 *               weight the host wrote aligned (gemm_preskew.c) takes no part; with both
 *               operands so there is no loop
 *   steps       loop s in [0, N): step s multiplies buffers s % 2 while the next blocks
 *               stream into the other pair (double buffering); the last step does not shift
 *
 * With one buffer (the dist.gemm's buffers = 1, --gemm-buffers=1: WaferLLM's memory-minimal
 * budget, the A, B and C blocks plus one spare) three buffers of the larger block hold A, B
 * and the spare. The alignment shifts A and B at once, one of them through the spare and the
 * other through C's block, which holds nothing until the loop zeroes it
 * (wf_gemm_single_c_spare; when C holds neither block, A and then B through the spare). A
 * step sends A and B's first words and receives A into the spare while it multiplies (the
 * multiply only reads A and B), waits, then receives B into A's old buffer while the rest of
 * B leaves, and waits: only B's receive is left out of the overlap. The roles rotate with
 * period 3 (A, B, spare -> spare, A, B), so the loop body is written for s % 3.
 *
 * Both blocks leave through the PE's one ramp, so a shift costs m k + k n cycles plus the
 * latency of the longest ring link: 2 hops on INTERLEAVE's ring, N - 1 on Cannon's. */
#include "backend/gemm/lower_gemm.h"
#include "waferc/diag.h"

typedef struct shift_ctx {
  wf_lower *L;
  int ca, cb;       /* ring colors along x (A) and y (B) */
  int a[2], b[2];   /* buffers */
  int64_t na, nb;   /* wavelets per block */
  int done;         /* completion task */
  int both;         /* the alignment goes both ways round (align) */
} shift_ctx;

/* One shift of a block: receive the predecessor's into `to`, send `from` to the successor;
 * both in the background. */
static void shift(shift_ctx *s, const wf_pe_guard *g, int col, int from, int to, int64_t n) {
  wf_lower *L = s->L;
  wf_emit(L, g, WF_PEOP_ARECV,
          (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(to), wf_arg_int(n), wf_arg_int(s->done)});
  wf_emit(L, g, WF_PEOP_ASEND,
          (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(from), wf_arg_int(n), wf_arg_int(s->done)});
}

/* The same shift on the line's links reversed (switch position 1): the block goes to the
 * ring predecessor, so the forward senders receive and the forward receivers send. */
static void shift_back(shift_ctx *s, const wf_pe_guard *g, int col, int from, int to, int64_t n) {
  wf_lower *L = s->L;
  wf_emit_ring(L, g, WF_PEOP_ARECV,
               (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(to), wf_arg_int(n), wf_arg_int(s->done)}, 1);
  wf_emit_ring(L, g, WF_PEOP_ASEND,
               (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(from), wf_arg_int(n), wf_arg_int(s->done)}, 0);
}

/* One operand's shifts in an alignment iteration: forward (d = 0) or backward. */
static void shifts(shift_ctx *s, const wf_ring_align *ra, int d, int col, const int buf[2], int64_t n) {
  void (*one)(shift_ctx *, const wf_pe_guard *, int, int, int, int64_t) = d ? shift_back : shift;
  for (int i = 0; i < ra->n0; i++) one(s, &ra->from0[i], col, buf[0], buf[1], n);
  for (int i = 0; i < ra->n1; i++) one(s, &ra->from1[i], col, buf[1], buf[0], n);
}

/* preskew: the operands the host wrote aligned (gemm_preskew.c), left out. With s->both the
 * lines whose rotation is more than half the ring shift backward (wf_ring.align_both): their
 * routers turn to the reversed links by a `ctl` on each forward link before the loop, and back
 * by a `teardown` behind the last block (ring_line.h, wf_ring_links_reversed). */
static void align(shift_ctx *s, const wf_ring *ring, int N, int preskew) {
  wf_lower *L = s->L;
  if (preskew == (WF_PRESKEW_A | WF_PRESKEW_B)) return; /* nothing moves */
  wf_gemm_phase(L, WF_GEMM_PHASE_ALIGN);
  int u = wf_lower_var(L, "u");
  wf_pe_term tu = wf_term_var(u, 0), tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  wf_ring_align ra[2], rb[2];
  wf_pe_guard back_a, back_b;
  int dirs = s->both ? 2 : 1, still_a = !(preskew & WF_PRESKEW_A), still_b = !(preskew & WF_PRESKEW_B);
  if (s->both) {
    ring->align_both(&ra[0], &ra[1], &back_a, ty, N, tu); /* A: row y shifts along x */
    ring->align_both(&rb[0], &rb[1], &back_b, tx, N, tu); /* B: column x shifts along y */
  } else {
    ring->align(&ra[0], ty, N, tu);
    ring->align(&rb[0], tx, N, tu);
  }
  WF_ASSERT(ra[0].iters == rb[0].iters);
  for (int d = 0; d < dirs; d++) {
    if (!still_a) ra[d].n0 = ra[d].n1 = ra[d].nf = 0;
    if (!still_b) rb[d].n0 = rb[d].n1 = rb[d].nf = 0;
  }
  if (s->both && still_a) wf_emit_ring(L, &back_a, WF_PEOP_CTL, (wf_pe_arg[]){wf_arg_int(s->ca)}, 1);
  if (s->both && still_b) wf_emit_ring(L, &back_b, WF_PEOP_CTL, (wf_pe_arg[]){wf_arg_int(s->cb)}, 1);
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tu), wf_arg_int(0), wf_arg_int(ra[0].iters)});
  for (int d = 0; d < dirs; d++) shifts(s, &ra[d], d, s->ca, s->a, s->na);
  for (int d = 0; d < dirs; d++) shifts(s, &rb[d], d, s->cb, s->b, s->nb);
  wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  if (s->both && still_a) wf_emit_ring(L, &back_a, WF_PEOP_TEARDOWN, (wf_pe_arg[]){wf_arg_int(s->ca)}, 0);
  if (s->both && still_b) wf_emit_ring(L, &back_b, WF_PEOP_TEARDOWN, (wf_pe_arg[]){wf_arg_int(s->cb)}, 0);
  for (int d = 0; d < dirs; d++) {
    for (int i = 0; i < ra[d].nf; i++)
      wf_emit(L, &ra[d].fixup[i], WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(s->a[0]), wf_arg_sym(s->a[1]), wf_arg_int(s->na)});
    for (int i = 0; i < rb[d].nf; i++)
      wf_emit(L, &rb[d].fixup[i], WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(s->b[0]), wf_arg_sym(s->b[1]), wf_arg_int(s->nb)});
  }
}

/* The one-buffer steps (above): q holds A, B and the spare at s = 0. Per step: A goes to the
 * successor and the predecessor's A comes into the spare while the PE multiplies (both only
 * read A and B), and so do B's first `early` words; then a wait; then B's rest, and the
 * predecessor's B into A's old buffer, and a wait. `early` is at most what the fabric holds
 * between two PEs without the receiver (its input queue alone: queue_depth), so no sender
 * waits in the first wait for a receive its receiver posts after its own first wait. */
static void steps_single(shift_ctx *s, int N, int sc, int64_t m, int64_t k, int64_t n, const int q[3],
                         int64_t early) {
  wf_lower *L = s->L;
  int sv = wf_lower_var(L, "s");
  wf_pe_term ts = wf_term_var(sv, 0);
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(ts), wf_arg_int(0), wf_arg_int(N)});
  for (int j = 0; j < 3; j++) {
    /* s % 3 == j: A in q[-s mod 3], B in q[1 - s mod 3], the spare in q[2 - s mod 3] */
    int qa = q[(3 - j) % 3], qb = q[(4 - j) % 3], qs = q[(5 - j) % 3];
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, wf_gterm(ts, 3, 0), WF_CMP_EQ, wf_term_int(j));
    wf_pe_guard gs = g;
    wf_gadd(&gs, ts, WF_CMP_LT, wf_term_int(N - 1));
    shift(s, &gs, s->ca, qa, qs, s->na);
    if (early > 0)
      wf_emit(L, &gs, WF_PEOP_ASEND, (wf_pe_arg[]){wf_arg_int(s->cb), wf_arg_sym(qb), wf_arg_int(early), wf_arg_int(s->done)});
    wf_emit(L, &g, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(qa), wf_arg_sym(qb), wf_arg_int(m), wf_arg_int(k), wf_arg_int(n)});
    wf_emit(L, &gs, WF_PEOP_WAIT, NULL);
    wf_emit(L, &gs, WF_PEOP_ARECV,
            (wf_pe_arg[]){wf_arg_int(s->cb), wf_arg_sym(qa), wf_arg_int(s->nb), wf_arg_int(s->done)});
    if (early < s->nb)
      wf_emit(L, &gs, WF_PEOP_ASEND,
              (wf_pe_arg[]){wf_arg_int(s->cb), wf_arg_at(qb, early), wf_arg_int(s->nb - early), wf_arg_int(s->done)});
    wf_emit(L, &gs, WF_PEOP_WAIT, NULL);
  }
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
}

int wf_lower_gemm_shift(wf_lower *L, const wf_op *op, wf_lowered_op *out, const wf_ring *ring,
                        wf_gemm_algo algo, int preskew) {
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  const wf_type *ta = wf_value_type(L->f, a), *tb = wf_value_type(L->f, b);
  if (ta->layout.dims[ta->rank - 1].split == WF_AXIS_NONE && tb->layout.dims[tb->rank - 2].split == WF_AXIS_NONE) {
    /* K whole on every PE (partition never splits a dim of 1): C's block is local; shifting
     * would add the same product once per step */
    int64_t m, k, n;
    wf_lower_block(L, a, &m, &k);
    wf_lower_block(L, b, &k, &n);
    int64_t f = L->t->fmac_per_cycle > 0 ? L->t->fmac_per_cycle : 1;
    int sc = wf_lower_sym(L, c);
    out->lowering = "local";
    out->predicted = m * n + (m * k * n + f - 1) / f;
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(wf_lower_sym(L, a)), wf_arg_sym(wf_lower_sym(L, b)),
                          wf_arg_int(m), wf_arg_int(k), wf_arg_int(n)});
    return 0;
  }
  int nbuf = (int)wf_op_int(L->f, op, "buffers", 2);
  if (L->w != L->h) {
    if (nbuf == 1) {
      wf_error(op->loc, "dist.gemm{algo=%s, buffers=1}: the one-buffer schedule has no lowering on a %dx%d region "
                        "(MeshGEMM and Cannon on W x H rename tile slots instead; docs/gemm.md): use buffers=2 "
                        "(--gemm-buffers=2 or auto) or algo=summa",
               wf_gemm_algo_names[algo], L->w, L->h);
      return WF_EXIT_UNSUPPORTED;
    }
    return wf_lower_gemm_rect(L, op, out, algo, preskew); /* the lcm virtual grid */
  }
  int N = L->w;
  int64_t m, k, kb, n, r, cc;
  wf_lower_block(L, a, &m, &k);
  wf_lower_block(L, b, &kb, &n);
  wf_lower_block(L, c, &r, &cc);
  WF_ASSERT(k == kb && r == m && cc == n);
  shift_ctx s = {L, -1, -1, {0, 0}, {0, 0}, m * k, kb * n, 0, 0};
  int sc = wf_lower_sym(L, c);
  out->lowering = N == 1 ? "local" : algo == WF_GEMM_MESHGEMM ? "meshgemm-interleave" : "cannon-ring";
  if (N > 1 && nbuf == 1) /* the manifest names the schedule */
    out->lowering = algo == WF_GEMM_MESHGEMM ? "meshgemm-interleave-1buf" : "cannon-ring-1buf";
  wf_row_skew rs = wf_lower_row_skew(L);
  out->predicted = N == 1 ? wf_gemm_predict(L->t, algo, N, N, m, k, n)
                          : wf_gemm_shift_sched(L->t, algo == WF_GEMM_MESHGEMM, N, N, m, k, k, n, preskew, nbuf,
                                                NULL, out->phase_predicted, &rs);
  L->skew_out_ok = rs.have_end;
  out->has_phases = N > 1 && L->gemm_phases;
  /* one buffer: C may be a spare in the alignment, and is zeroed after it */
  int cspare = N > 1 && nbuf == 1 ? wf_gemm_single_c_spare(m, k, n, preskew) : 0;
  if (!cspare) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
  if (N == 1) {
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(wf_lower_sym(L, a)), wf_arg_sym(wf_lower_sym(L, b)),
                          wf_arg_int(m), wf_arg_int(k), wf_arg_int(n)});
    return 0;
  }
  int purpose_x = algo == WF_GEMM_MESHGEMM ? WF_COLOR_MESH_RING_X : WF_COLOR_CANNON_RING_X;
  /* the routes come with the colors, once per class and axis (attention may have set up the
   * y ring already: lower_attention.c) */
  wf_ring_line lx = {wf_term(WF_TERM_X, 0), WF_DIR_W, WF_DIR_E, L->w};
  wf_ring_line ly = {wf_term(WF_TERM_Y, 0), WF_DIR_N, WF_DIR_S, L->h};
  if ((L->color[purpose_x] < 0 && wf_ring_line_colors(L, ring, purpose_x, &lx, op->loc)) ||
      (L->color[purpose_x + 1] < 0 && wf_ring_line_colors(L, ring, purpose_x + 1, &ly, op->loc)))
    return WF_EXIT_NOFIT;
  /* the streams go out on each line's first color; wf_emit gives each PE its own */
  s.ca = L->color[purpose_x];
  s.cb = L->color[purpose_x + 1];
  /* an operand that aligns on the mesh goes both ways round where the ring can (its links
   * reversed at switch position 1 on the same colors) */
  s.both = ring->align_both && wf_gemm_align_both(N, N, preskew);
  /* (a ring an op before could not finish is left as it is: that op's error fails the plan) */
  if (s.both && !(preskew & WF_PRESKEW_A) && wf_ring_line_reversed(L, ring, purpose_x, &lx)) s.both = 0;
  if (s.both && !(preskew & WF_PRESKEW_B) && wf_ring_line_reversed(L, ring, purpose_x + 1, &ly)) s.both = 0;
  s.done = wf_lower_done_task(L);
  /* Buffer 0 is a copy of the operand: the operand itself may be used again later. */
  wf_gemm_bufs bf; /* sized with the chooser's SRAM check (gemm_cost.c) */
  wf_gemm_buffers(algo, nbuf, L->w, L->h, m, k, kb, n, &bf);
  s.a[0] = wf_lower_temp(L, "$gemm_a0", bf.a0 * 4);
  s.a[1] = wf_lower_temp(L, "$gemm_a1", bf.a1 * 4);
  s.b[0] = wf_lower_temp(L, "$gemm_b0", bf.b0 * 4);
  s.b[1] = bf.b1 ? wf_lower_temp(L, "$gemm_b1", bf.b1 * 4) : -1; /* one buffer: none */
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(s.a[0]), wf_arg_sym(wf_lower_sym(L, a)), wf_arg_int(s.na)});
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(s.b[0]), wf_arg_sym(wf_lower_sym(L, b)), wf_arg_int(s.nb)});
  if (nbuf == 1) {
    /* $gemm_a0, $gemm_b0, $gemm_a1: A, B, the spare; each operand aligns through the spare
     * alone (align leaves out the operands it is told are pre-skewed) */
    int q[3] = {s.a[0], s.b[0], s.a[1]};
    if (cspare) { /* C's block is the other operand's spare: both align at once */
      s.a[1] = cspare == WF_PRESKEW_A ? sc : q[2];
      s.b[1] = cspare == WF_PRESKEW_B ? sc : q[2];
      align(&s, ring, N, preskew);
    } else {
      s.a[1] = s.b[1] = q[2];
      align(&s, ring, N, preskew | WF_PRESKEW_B);
      align(&s, ring, N, preskew | WF_PRESKEW_A);
    }
    wf_gemm_phase(L, WF_GEMM_PHASE_LOOP);
    if (cspare) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
    steps_single(&s, N, sc, m, k, n, q, s.nb < L->t->queue_depth ? s.nb : L->t->queue_depth);
    wf_gemm_phase(L, WF_GEMM_PHASE_DRAIN);
    return 0;
  }
  align(&s, ring, N, preskew);
  wf_gemm_phase(L, WF_GEMM_PHASE_LOOP);

  int sv = wf_lower_var(L, "s");
  wf_pe_term ts = wf_term_var(sv, 0);
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(ts), wf_arg_int(0), wf_arg_int(N)});
  for (int p = 0; p < 2; p++) {
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, wf_gterm(ts, 2, 0), WF_CMP_EQ, wf_term_int(p));
    wf_pe_guard gs = g;
    wf_gadd(&gs, ts, WF_CMP_LT, wf_term_int(N - 1));
    shift(&s, &gs, s.ca, s.a[p], s.a[1 - p], s.na);
    shift(&s, &gs, s.cb, s.b[p], s.b[1 - p], s.nb);
    wf_emit(L, &g, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(s.a[p]), wf_arg_sym(s.b[p]), wf_arg_int(m),
                          wf_arg_int(k), wf_arg_int(n)});
  }
  wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  wf_gemm_phase(L, WF_GEMM_PHASE_DRAIN); /* nothing follows the last step on a square region */
  return 0;
}
