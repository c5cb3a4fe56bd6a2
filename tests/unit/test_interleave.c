/* INTERLEAVE (WaferLLM Alg. 1) and the MeshGEMM schedule (backend/gemm/interleave.c): the ring
 * is one cycle with every neighbour <= 2 hops apart, and an abstract simulation of the tile
 * movement (alignment, then L compute-shift steps) gives every C tile every k exactly once. */
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/mesh_algos.h"
#include "ir/support/gemm_skew.h"
#include "wf_test.h"

static int iabs(int v) { return v < 0 ? -v : v; }

static void ring(int n) {
  int *order = malloc(n * sizeof *order), *pos = malloc(n * sizeof *pos);
  int *seen = calloc(n, sizeof *seen);
  CHECK(wf_interleave_order(n, order, pos) == 0);
  for (int k = 0; k < n; k++) {
    CHECK(order[k] >= 0 && order[k] < n && !seen[order[k]]++, "n=%d: not a permutation", n);
    CHECK(pos[order[k]] == k);
  }
  /* the closed forms pre-skewed weights are scattered by (ir/support/gemm_skew.h) */
  for (int k = 0; k < n; k++) {
    CHECK(wf_skew_interleave_order(k, n) == order[k], "n=%d: closed-form order[%d]", n, k);
    CHECK(wf_skew_interleave_pos(order[k], n) == k, "n=%d: closed-form pos(%d)", n, order[k]);
  }
  for (int x = 0; x < n; x++) {
    int s, r, s2, r2;
    wf_interleave(x, n, &s, &r);
    CHECK(s >= 0 && s < n && r >= 0 && r < n, "n=%d x=%d: s=%d r=%d", n, x, s, r);
    CHECK(iabs(s - x) <= 2 && iabs(r - x) <= 2, "n=%d x=%d: s=%d r=%d", n, x, s, r);
    wf_interleave(s, n, &s2, &r2);
    CHECK(r2 == x, "n=%d: %d sends to %d which receives from %d", n, x, s, r2);
  }
  /* One cycle through all n positions. */
  int x = 0, steps = 0;
  do {
    int s, r;
    wf_interleave(x, n, &s, &r);
    x = s;
    steps++;
  } while (x != 0 && steps <= n);
  CHECK(steps == n, "n=%d: cycle of %d", n, steps);
  free(order);
  free(pos);
  free(seen);
}

typedef struct tile { int r, c; } tile;

/* Moves tiles by the ring partners; checks the k of every step and counts (i, j, k). */
static void simulate(int nw, int nh) {
  wf_meshgemm g;
  CHECK(wf_meshgemm_init(&g, nw, nh) == 0);
  int L = g.L;
  CHECK(L % nw == 0 && L % nh == 0);
  tile *A = malloc(L * L * sizeof *A), *B = malloc(L * L * sizeof *B);
  tile *A2 = malloc(L * L * sizeof *A2), *B2 = malloc(L * L * sizeof *B2);
  char *got = calloc((size_t)L * L * L, 1);
  /* Initial layout: virtual PE (i, j) holds A[i][j] and B[i][j]; alignment fetches. */
  for (int i = 0; i < L; i++)
    for (int j = 0; j < L; j++) {
      int ka = wf_meshgemm_align_a(&g, i, j), kb = wf_meshgemm_align_b(&g, i, j);
      /* what the host writes for a pre-skewed weight: the tile the alignment would bring */
      CHECK(wf_skew_source(WF_SKEW_INTERLEAVE, i, j, L) == ka, "L=%d (%d, %d): pre-skew", L, i, j);
      CHECK(wf_skew_source(WF_SKEW_PLAIN, i, j, L) == (i + j) % L);
      A[i * L + j] = (tile){i, ka}; /* fetched from virtual PE (i, ka) */
      B[i * L + j] = (tile){kb, j}; /* fetched from virtual PE (kb, j) */
    }
  for (int s = 0; s < L; s++) {
    for (int i = 0; i < L; i++)
      for (int j = 0; j < L; j++) {
        tile a = A[i * L + j], b = B[i * L + j];
        CHECK(a.r == i && b.c == j && a.c == b.r, "%dx%d s=%d (%d,%d): A[%d][%d] B[%d][%d]", nw, nh,
              s, i, j, a.r, a.c, b.r, b.c);
        CHECK(a.c == wf_meshgemm_k(&g, i, j, s));
        if (a.r == i && b.c == j && a.c == b.r && a.c >= 0 && a.c < L) got[((size_t)i * L + j) * L + a.c]++;
      }
    /* Shift: A along x, B along y, each PE taking its ring predecessor's tile; the
     * physical hop count of every transfer is at most two. */
    for (int i = 0; i < L; i++)
      for (int j = 0; j < L; j++) {
        int snd, rcv;
        wf_meshgemm_ring_x(&g, j, &snd, &rcv);
        CHECK(iabs(wf_meshgemm_phys_x(&g, rcv) - wf_meshgemm_phys_x(&g, j)) <= 2);
        A2[i * L + j] = A[i * L + rcv];
        wf_meshgemm_ring_y(&g, i, &snd, &rcv);
        CHECK(iabs(wf_meshgemm_phys_y(&g, rcv) - wf_meshgemm_phys_y(&g, i)) <= 2);
        B2[i * L + j] = B[rcv * L + j];
      }
    memcpy(A, A2, L * L * sizeof *A);
    memcpy(B, B2, L * L * sizeof *B);
  }
  int bad = 0;
  for (size_t t = 0; t < (size_t)L * L * L; t++) bad += got[t] != 1;
  CHECK(bad == 0, "%dx%d: %d (i,j,k) triples not seen exactly once", nw, nh, bad);
  free(A); free(B); free(A2); free(B2); free(got);
  wf_meshgemm_free(&g);
}

/* GEMM-T: over L steps row i meets every B row n exactly once, and at each step all k
 * blocks j of that n are in row i (so the x-reduction completes C[i][n]). */
static void gemm_t(int n) {
  wf_meshgemm g;
  CHECK(wf_meshgemm_init(&g, n, n) == 0);
  for (int i = 0; i < n; i++) {
    char *seen = calloc(n, 1);
    for (int s = 0; s < n; s++) {
      int r = wf_meshgemm_t_row(&g, i, s);
      CHECK(r >= 0 && r < n && !seen[r]++, "n=%d i=%d s=%d row %d", n, i, s, r);
      if (s > 0) {
        /* B reached row i from its ring predecessor, which held r one step earlier. */
        int snd, rcv;
        wf_meshgemm_ring_y(&g, i, &snd, &rcv);
        CHECK(wf_meshgemm_t_row(&g, rcv, s - 1) == r);
      }
    }
    free(seen);
  }
  wf_meshgemm_free(&g);
}

int main(void) {
  /* Alg. 1's own example: N = 5, core 2 sends to 4 and receives from 0. */
  int s, r;
  wf_interleave(2, 5, &s, &r);
  CHECK(s == 4 && r == 0);
  int order5[5], want5[5] = {0, 2, 4, 3, 1};
  wf_interleave_order(5, order5, NULL);
  CHECK(!memcmp(order5, want5, sizeof want5));
  for (int n = 1; n <= 64; n++) ring(n);
  for (int n = 1; n <= 12; n++) simulate(n, n);
  simulate(4, 6);  /* lcm 12 */
  simulate(3, 5);  /* lcm 15 */
  simulate(8, 2);  /* lcm 8 */
  for (int n = 1; n <= 16; n++) gemm_t(n);
  wf_meshgemm g;
  CHECK(wf_meshgemm_init(&g, 0, 4) == -1);
  return wf_test_result("test_interleave");
}
