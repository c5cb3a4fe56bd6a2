/* waferc backend — the mesh algorithms of WaferLLM (OSDI'25) as pure functions the lowering
 * calls: INTERLEAVE and the MeshGEMM shift schedule (§5, Alg. 1), and the K-tree allreduce
 * of MeshGEMV (§6). No IR, no plan: positions and tile indices only, so each is unit-tested
 * by simulating the data movement abstractly (tests/unit/test_interleave.c,
 * test_ktree.c).
 *
 *   wf_meshgemm mg;
 *   wf_meshgemm_init(&mg, 6, 4);        // 6 PEs along x, 4 along y: a 12x12 virtual grid
 *   int s, r;
 *   wf_meshgemm_ring_x(&mg, vcol, &s, &r); // A tiles go to virtual column s, come from r
 */
#ifndef WAFERC_BACKEND_MESH_ALGOS_H
#define WAFERC_BACKEND_MESH_ALGOS_H

#include "backend/collectives/ring_line.h"
#include "waferc/collectives.h"

/* INTERLEAVE (wf_interleave, wf_interleave_order): backend/collectives/ring_line.h. */

/* ---- MeshGEMM (WaferLLM §5.3-5.4) ----
 * C = A B on a nw x nh mesh. A, B and C are cut into L x L tiles, L = lcm(nw, nh); virtual
 * tile (row i, column j) lives on PE (j / (L/nw), i / (L/nh)), so a square mesh has L = n and
 * one tile per PE. Tile indices start where the layout puts them: virtual PE (i, j) holds
 * A[i][j] and B[i][j]. After alignment and before step s (0 <= s < L) virtual PE (i, j)
 * holds A[i][k] and B[k][j] with k = wf_meshgemm_k(i, j, s); each step then passes A one
 * ring position along x (every virtual PE receives from wf_meshgemm_ring_x's recv) and B
 * along y. */
typedef struct wf_meshgemm {
  int nw, nh;   /* physical PEs along x and y */
  int L;        /* virtual grid side: lcm(nw, nh) */
  int vx, vy;   /* virtual columns per PE (L / nw), virtual rows per PE (L / nh) */
  int *order;   /* INTERLEAVE ring order over L positions */
  int *pos;     /* its inverse */
} wf_meshgemm;

int wf_meshgemm_init(wf_meshgemm *g, int nw, int nh); /* 0, or -1 (bad size / no memory) */
void wf_meshgemm_free(wf_meshgemm *g);
/* k of the A and B tiles virtual PE (i, j) multiplies at step s. */
int wf_meshgemm_k(const wf_meshgemm *g, int i, int j, int s);
/* Alignment (skew): the virtual column whose A tile (row i) virtual PE (i, j) needs first,
 * and the virtual row whose B tile (column j) it needs first. */
int wf_meshgemm_align_a(const wf_meshgemm *g, int i, int j);
int wf_meshgemm_align_b(const wf_meshgemm *g, int i, int j);
/* Ring partners of the per-step shift, in virtual columns (A, along x) or rows (B, y). */
void wf_meshgemm_ring_x(const wf_meshgemm *g, int vcol, int *send, int *recv);
void wf_meshgemm_ring_y(const wf_meshgemm *g, int vrow, int *send, int *recv);
/* Physical x (column) and y (row) of a virtual column / row. */
int wf_meshgemm_phys_x(const wf_meshgemm *g, int vcol);
int wf_meshgemm_phys_y(const wf_meshgemm *g, int vrow);
/* dist-GEMM-T (C = A B^T, §5.4): no alignment; B shifts along y only. Before step s virtual
 * PE (i, j) holds B tile (wf_meshgemm_t_row(i, s), j); A[i][j] B[n][j]^T, reduced along x
 * (over j), gives C[i][n] for n = wf_meshgemm_t_row(i, s). */
int wf_meshgemm_t_row(const wf_meshgemm *g, int i, int s);

/* ---- K-tree allreduce (WaferLLM §6.2) ----
 * A line of n PEs reduces in K levels. Level 1 cuts the line into groups of consecutive PEs;
 * every member sends straight to its group's root (the middle member) over a pass-through
 * route; level l does the same over the level l-1 roots; the last level has one group. */
typedef struct wf_ktree {
  wf_reduce_tree tree; /* parent[] over positions 0..n-1, measured (depth, max_in, ...) */
  int root;            /* position of the final root */
  int levels;          /* levels used (<= K) */
  int *level;          /* level at which each PE sends (1..levels); 0 for the root */
} wf_ktree;

/* K >= 1 levels. groups > 0 (two-level variant, as the released code): level 1 has that
 * many groups and level 2 gathers their roots (K is then 2). groups == 0: every level's
 * groups hold ceil(n^(1/K)) PEs. Returns 0, -1 on bad arguments or no memory. */
int wf_ktree_build(int n, int K, int groups, wf_ktree *t);
void wf_ktree_free(wf_ktree *t);
/* Predicted cycles: the reduce as the lowered tree's stream schedule (wf_coll_tree_schedule:
 * each root reads its children nearest first, a level's message starts when its root has
 * read its group), plus the flooding broadcast from the root when `bcast_back`. */
double wf_ktree_cost(const wf_ktree *t, int64_t B, const wf_coll_params *p, int bcast_back);

#endif
