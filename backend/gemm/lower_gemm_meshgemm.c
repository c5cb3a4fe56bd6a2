/* MeshGEMM's ring (WaferLLM §5.2, Alg. 1): INTERLEAVE orders a line of n PEs as
 * 0, 2, 4, ..., then the odd positions back down, so every logical neighbour is at most two
 * hops away. Even positions pass their block two hops toward higher coordinates, odd ones
 * two hops toward lower, the ends turn around (backend/collectives/ring_links.c, wf_interleave: the
 * routes follow it).
 *
 * Alignment: with pos() the ring position, the block at line index r must move (-pos(r))
 * mod n positions forward (wf_meshgemm_k in mesh_algos.h). pos(r) = r/2 for even r and
 * n - (r+1)/2 for odd r, so even r > 0 shift n - r/2 times and odd r (r+1)/2 times. With u
 * running over [0, 2n): even r shift at even u >= r, odd r at even u < r. The shift's own
 * index q decides the buffer it reads (q even: buffer 0); q's parity is a function of u % 4
 * and r % 4, which guards can test. r may be a virtual index (`3*y+1`, the W x H lowering):
 * every condition on it is written with wf_gadd_mod or compares the whole term. */
#include <stdlib.h>

#include "backend/gemm/lower_gemm.h"
#include "backend/gemm/mesh_algos.h"
#include "waferc/diag.h"

/* Even positions pass their block two hops toward higher coordinates, odd ones two hops
 * toward lower, the ends turn around (wf_interleave). Every PE sends, receives and forwards
 * one two-hop link: ring_links.c puts them on three colors, by the lower end modulo 3. */
static int interleave_dest(int i, int len) {
  int s, r;
  wf_interleave(i, len, &s, &r);
  return s;
}

static void interleave_align(wf_ring_align *a, wf_pe_term r, int len, wf_pe_term u) {
  a->iters = 2 * len;
  a->n0 = a->n1 = a->nf = 0;
  wf_pe_term u4 = wf_gterm(u, 4, 0);
  for (int q = 0; q < 2; q++) { /* q: parity of the shift's index = the buffer it reads */
    wf_pe_guard *g = q ? a->from1 : a->from0;
    int *n = q ? &a->n1 : &a->n0;
    wf_pe_guard e0 = wf_guard0(), e2 = wf_guard0(), od = wf_guard0();
    /* even r, r % 4 == 0: q even iff u % 4 == 0 (u - r = 4j) */
    wf_gadd_mod(&e0, r, 4, 0);
    wf_gadd(&e0, r, WF_CMP_GT, wf_term_int(0));
    wf_gadd(&e0, u, WF_CMP_GE, r);
    wf_gadd(&e0, u4, WF_CMP_EQ, wf_term_int(q ? 2 : 0));
    /* even r, r % 4 == 2: q even iff u % 4 == 2 */
    wf_gadd_mod(&e2, r, 4, 2);
    wf_gadd(&e2, u, WF_CMP_GE, r);
    wf_gadd(&e2, u4, WF_CMP_EQ, wf_term_int(q ? 0 : 2));
    /* odd r: shifts at u = 0, 2, .., q = u / 2 */
    wf_gadd_mod(&od, r, 2, 1);
    wf_gadd(&od, u, WF_CMP_LT, r);
    wf_gadd(&od, u4, WF_CMP_EQ, wf_term_int(q ? 2 : 0));
    g[(*n)++] = e0;
    g[(*n)++] = e2;
    g[(*n)++] = od;
  }
  /* An odd number of shifts leaves the block in buffer 1: odd r with (r+1)/2 odd, i.e.
   * r % 4 == 1; even r > 0 with len - r/2 odd. */
  wf_pe_guard f = wf_guard0();
  wf_gadd_mod(&f, r, 4, 1);
  a->fixup[a->nf++] = f;
  f = wf_guard0();
  wf_gadd_mod(&f, r, 4, len % 2 ? 0 : 2);
  wf_gadd(&f, r, WF_CMP_GT, wf_term_int(0));
  a->fixup[a->nf++] = f;
}

void wf_ring_align_dirs(wf_ring_align *fwd, wf_ring_align *bwd, const wf_ring_dir dir[2], int len, wf_pe_term u) {
  for (int d = 0; d < 2; d++) {
    wf_ring_align *a = d ? bwd : fwd;
    a->iters = len / 2;
    a->n0 = a->n1 = a->nf = 0;
    for (int q = 0; q < 2; q++) {
      wf_pe_guard g = dir[d].line;
      wf_gadd(&g, dir[d].a, (wf_cmp)dir[d].cmp, dir[d].b);
      wf_gadd(&g, wf_gterm(u, 2, 0), WF_CMP_EQ, wf_term_int(q));
      if (q) a->from1[a->n1++] = g;
      else a->from0[a->n0++] = g;
    }
    a->fixup[a->nf++] = dir[d].fixup;
  }
}

/* Both ways round (square regions): line r's rotation is pos(r) positions backward or
 * n - pos(r) forward; odd r go forward (r+1)/2 times (pos(r) = n - (r+1)/2) and even r > 0
 * backward r/2 times (pos(r) = r/2), so no line shifts more than n/2 times where forward only
 * takes up to n - 1. Iteration u is every shifting line's shift u, which reads buffer u % 2;
 * an odd count leaves the block in buffer 1: r % 4 == 1 forward, r % 4 == 2 backward. */
static void interleave_align_both(wf_ring_align *fw, wf_ring_align *bw, wf_pe_guard *back, wf_pe_term r, int len,
                                  wf_pe_term u) {
  wf_pe_term u2 = u;
  u2.mul = 2;
  /* u < (r+1)/2 for odd r, u < r/2 for even r > 0 */
  wf_ring_dir d[2] = {{wf_guard0(), wf_guard0(), u2, r, WF_CMP_LE}, {wf_guard0(), wf_guard0(), u2, r, WF_CMP_LT}};
  wf_gadd_mod(&d[0].line, r, 2, 1);
  wf_gadd_mod(&d[1].line, r, 2, 0);
  wf_gadd(&d[1].line, r, WF_CMP_GT, wf_term_int(0));
  *back = d[1].line;
  wf_gadd_mod(&d[0].fixup, r, 4, 1);
  wf_gadd_mod(&d[1].fixup, r, 4, 2);
  wf_ring_align_dirs(fw, bw, d, len, u);
}

const wf_ring wf_ring_interleave = {"interleave", 2, interleave_dest, interleave_align, interleave_align_both};

int wf_ring_line_reversed(wf_lower *L, const wf_ring *ring, int purpose, const wf_ring_line *line) {
  int first = L->color[purpose];
  for (int i = 0; i < L->cls->n_routes; i++)
    if (L->cls->routes[i].color == first && L->cls->routes[i].pos == 1) return 0; /* done before */
  int *dest = malloc((size_t)line->len * sizeof *dest + 1);
  WF_ASSERT(dest);
  for (int i = 0; i < line->len; i++) dest[i] = ring->dest(i, line->len);
  int rc = wf_ring_links_reversed(L, line, dest, first);
  free(dest);
  return rc;
}

int wf_ring_line_colors(wf_lower *L, const wf_ring *ring, int purpose, const wf_ring_line *line, wf_loc loc) {
  int *dest = malloc((size_t)line->len * sizeof *dest + 1);
  WF_ASSERT(dest);
  for (int i = 0; i < line->len; i++) dest[i] = ring->dest(i, line->len);
  int rc = wf_ring_dest_links(L, purpose, line, dest, loc);
  free(dest);
  return rc;
}
