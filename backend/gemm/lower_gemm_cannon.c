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

const wf_ring wf_ring_plain = {"plain", -1, plain_dest, plain_align};
