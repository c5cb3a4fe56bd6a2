/* INTERLEAVE (WaferLLM Alg. 1) and the MeshGEMM schedule built on it (§5.3-5.4).
 *
 * A ring over a line of n PEs cannot have every neighbour one hop away (its two ends would
 * have to meet), but it can have every neighbour at most two hops away: even positions pass
 * data right by two, odd positions left by two, and the ends turn around. MeshGEMM runs
 * Cannon's cyclic shift over this ring in logical ring positions, so each step's critical
 * path is two hops whatever the mesh size. */
#include <stdlib.h>

#include "waferc/diag.h"
#include "ir/support/intmath.h"
#include "backend/gemm/mesh_algos.h"

int wf_meshgemm_init(wf_meshgemm *g, int nw, int nh) {
  g->order = g->pos = NULL;
  if (nw < 1 || nh < 1) return -1;
  long long L = wf_lcm(nw, nh);
  if (L > (1 << 20)) return -1;
  g->nw = nw;
  g->nh = nh;
  g->L = (int)L;
  g->vx = g->L / nw;
  g->vy = g->L / nh;
  g->order = malloc((size_t)g->L * sizeof *g->order);
  g->pos = malloc((size_t)g->L * sizeof *g->pos);
  WF_ASSERT(g->order && g->pos); /* out of host memory: exit 7 */
  return wf_interleave_order(g->L, g->order, g->pos);
}

void wf_meshgemm_free(wf_meshgemm *g) {
  free(g->order);
  free(g->pos);
  g->order = g->pos = NULL;
}

static int wrap(int v, int L) { return ((v % L) + L) % L; }

/* Data moves one ring position forward per step, so the tile index at ring position c
 * falls by one each step; rows start skewed by their own ring position so A's and B's k
 * agree: k = order[pos(i) + pos(j) - s]. */
int wf_meshgemm_k(const wf_meshgemm *g, int i, int j, int s) {
  return g->order[wrap(g->pos[i] + g->pos[j] - s, g->L)];
}

int wf_meshgemm_align_a(const wf_meshgemm *g, int i, int j) { return wf_meshgemm_k(g, i, j, 0); }
int wf_meshgemm_align_b(const wf_meshgemm *g, int i, int j) { return wf_meshgemm_k(g, i, j, 0); }

void wf_meshgemm_ring_x(const wf_meshgemm *g, int vcol, int *send, int *recv) {
  wf_interleave(vcol, g->L, send, recv);
}

void wf_meshgemm_ring_y(const wf_meshgemm *g, int vrow, int *send, int *recv) {
  wf_interleave(vrow, g->L, send, recv);
}

int wf_meshgemm_phys_x(const wf_meshgemm *g, int vcol) { return vcol / g->vx; }
int wf_meshgemm_phys_y(const wf_meshgemm *g, int vrow) { return vrow / g->vy; }

int wf_meshgemm_t_row(const wf_meshgemm *g, int i, int s) {
  return g->order[wrap(g->pos[i] - s, g->L)];
}
