/* Cannon's ring: every PE passes its block to the neighbour below (lower coordinate) and the
 * PE at 0 sends across the whole line to n-1 — the wrap-around link is n-1 hops long, which
 * is what MeshGEMM's INTERLEAVE ring removes. Alignment: line r shifts r times (row i of A
 * moves left by i, column j of B up by j): the shift in iteration u < r reads buffer u % 2. */
#include "backend/gemm/lower_gemm.h"

/* PE i passes its block to i - 1, PE 0 to the far end (ring_links.c colors the one-hop links
 * by parity and the wrap-around on a third color). */
static int plain_dest(int i, int len) { return i > 0 ? i - 1 : len - 1; }

static void plain_align(wf_ring_align *a, wf_pe_term r, int len, wf_pe_term u) {
  a->iters = len;
  a->n0 = a->n1 = a->nf = 0;
  for (int q = 0; q < 2; q++) {
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, u, WF_CMP_LT, r);
    wf_gadd(&g, wf_gterm(u, 2, 0), WF_CMP_EQ, wf_term_int(q));
    if (q) a->from1[a->n1++] = g;
    else a->from0[a->n0++] = g;
  }
  wf_pe_guard f = wf_guard0();
  wf_gadd_mod(&f, r, 2, 1);
  a->fixup[a->nf++] = f;
}

/* Both ways round (square regions): line r's rotation is r forward or len - r backward, so
 * lines with 2r > len go backward len - r times and no line shifts more than len/2 times.
 * Iteration u is every shifting line's shift u (buffer u % 2); an odd count leaves the block
 * in buffer 1. */
static void plain_align_both(wf_ring_align *fw, wf_ring_align *bw, wf_pe_guard *back, wf_pe_term r, int len,
                             wf_pe_term u) {
  wf_pe_term r2 = r, rest = r; /* 2r; len - r */
  r2.mul = 2;
  rest.mul = -1;
  rest.k = len;
  wf_ring_dir d[2] = {{wf_guard0(), wf_guard0(), u, r, WF_CMP_LT}, {wf_guard0(), wf_guard0(), u, rest, WF_CMP_LT}};
  wf_gadd(&d[0].line, r2, WF_CMP_LE, wf_term_int(len));
  wf_gadd(&d[1].line, r2, WF_CMP_GT, wf_term_int(len));
  *back = d[1].line;
  for (int k = 0; k < 2; k++) {
    d[k].fixup = d[k].line;
    wf_gadd_mod(&d[k].fixup, r, 2, k ? (len + 1) % 2 : 1); /* r, or len - r, odd */
  }
  wf_ring_align_dirs(fw, bw, d, len, u);
}

const wf_ring wf_ring_plain = {"plain", -1, plain_dest, plain_align, plain_align_both};
