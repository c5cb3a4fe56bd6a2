/* Cannon's ring: every PE passes its block to the neighbour below (lower coordinate) and the
 * PE at 0 sends across the whole line to n-1 — the wrap-around link is n-1 hops long, which
 * is what MeshGEMM's INTERLEAVE ring removes. Alignment: line r shifts r times (row i of A
 * moves left by i, column j of B up by j): the shift in iteration u < r reads buffer u % 2. */
#include "backend/gemm/lower_gemm.h"

static void plain_routes(wf_pe_class *c, int col, const wf_ring_line *l) {
  unsigned R = 1u << WF_DIR_RAMP, LO = 1u << l->lo, HI = 1u << l->hi;
  wf_pe_guard first = wf_guard0(), last = wf_guard0();
  wf_gadd(&first, l->coord, WF_CMP_EQ, wf_term_int(0));
  wf_gadd(&last, l->coord, WF_CMP_EQ, wf_term_int(l->len - 1));
  wf_pe_class_add_route(c, NULL, col, WF_DIR_RAMP, LO);
  wf_pe_class_add_route(c, NULL, col, l->hi, R);
  wf_pe_class_add_route(c, NULL, col, l->lo, HI); /* the wrap-around passes through */
  wf_pe_class_add_route(c, &first, col, WF_DIR_RAMP, HI);
  wf_pe_class_add_route(c, &last, col, l->lo, R);
}

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

const wf_ring wf_ring_plain = {"plain", -1, plain_routes, plain_align};
