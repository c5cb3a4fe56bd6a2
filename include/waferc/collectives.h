/* waferc — the cost model of wafer-scale collectives (Reduce paper, Luczynski et al., HPDC'24).
 *
 * Every collective the backend can emit has a predicted cycle count from the paper's model
 * (§3, equation 1):
 *
 *     T = max(C, E/N + L) + (2 T_R + 1) D
 *
 * C contention (most wavelets one PE receives or sends), E energy (wavelet-hops), N links in
 * use, L distance (hops, times the target's cycles per hop), D depth (dependent PE-to-PE
 * steps), T_R the ramp latency. This header gives the terms and closed forms of each
 * algorithm, the Auto-Gen dynamic program (which also returns the tree it chose, so the
 * lowering can build it), the lower bounds (Lemma 5.5, Lemma 7.2) and a chooser.
 *
 * Worked example (T_R = 2, one cycle per hop, a row of P = 16 PEs, B = 64 wavelets each):
 *
 *   wf_coll_params p = wf_coll_params_default();          // T_R = 2, hop = 1
 *   wf_coll_chain(16, 64, &p);        // Lemma 5.2: 64 + (2*2+2)*15 = 154
 *   wf_coll_star(16, 64, &p);         // 64*15 + 2*2+1 = 965 (pipelined star, §5.1)
 *   wf_coll_tree(16, 64, &p);         // Lemma 5.3: max(256, 64*16/30*4 + 15) + 5*4 = 276
 *   wf_coll_two_phase(16, 64, 4, &p); // groups of 4: max(128, 24*64/15 + 15) + 5*6 = 158
 *   wf_coll_lower_bound(16, 64, &p);  // Lemma 5.5 over every depth
 *
 *   wf_coll_query q = {WF_COLL_REDUCE, 16, 1, 64, 0, 0};  // 16x1 row, B = 64, any algorithm
 *   wf_coll_choice c;
 *   wf_coll_choose(&q, &p, &c);       // WF_COLL_AUTOGEN, 153 cycles (a two-level tree); c.why
 *
 * Positions along a row are hops from the root: PE 0 is the root, PE i is i hops away. A
 * lowering that reduces towards the right end mirrors the positions.
 */
#ifndef WAFERC_COLLECTIVES_H
#define WAFERC_COLLECTIVES_H

#include <stdint.h>

#include "waferc/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Target parameters the model needs. */
typedef struct wf_coll_params {
  double ramp; /* T_R: processor <-> router latency, each way, in cycles */
  double hop;  /* cycles per link hop (alpha); 1 on the WSE */
} wf_coll_params;

wf_coll_params wf_coll_params_default(void); /* T_R = 2, hop = 1 (Reduce paper §2.2) */
wf_coll_params wf_coll_params_from_target(const wf_target *t);

/* The spatial cost terms of one collective. */
typedef struct wf_coll_terms {
  double C;        /* contention: most wavelets one PE receives (or sends) */
  double E;        /* energy: total wavelet-hops */
  double N;        /* links in use (one direction unless the algorithm uses both) */
  double L;        /* distance in hops */
  double D;        /* depth */
  int pipelined;   /* 1 = a perfect pipeline (star, §5.1): T = max(C, L) + (2T_R+1) D */
} wf_coll_terms;

/* Equation (1) (or its pipelined refinement when t->pipelined). */
double wf_coll_model(const wf_coll_terms *t, const wf_coll_params *p);

/* ---- algorithms (1D: a row of P PEs, B wavelets each; a reduce over P <= 1 costs 0) ---- */

typedef enum wf_coll_algo {
  WF_COLL_STAR,      /* every PE sends to the root (§5.1) */
  WF_COLL_CHAIN,     /* each PE to its neighbour, pipelined (§5.2); the vendor's */
  WF_COLL_TREE,      /* binary tree, log2 P rounds (§5.3) */
  WF_COLL_TWO_PHASE, /* chains in groups of ~sqrt(P), then a chain of the group roots (§5.4) */
  WF_COLL_AUTOGEN,   /* best pre-order tree by the paper's dynamic program (§5.5) */
  WF_COLL_RING,      /* ring allreduce (§6.2): allreduce only */
  WF_COLL_SNAKE,     /* chain along a snake through the grid (§7.3): 2D only */
  WF_COLL_FLOOD,     /* flooding broadcast (§4.2, Lemma 7.1): broadcast only */
  WF_COLL_N_ALGOS
} wf_coll_algo;

const char *wf_coll_algo_name(wf_coll_algo a); /* "star", "two_phase", ... */
/* Parses a name (also "two-phase", "auto-gen", "autogen"); -1 if unknown. */
int wf_coll_algo_parse(const char *name);

/* Terms of each pattern, exactly as the lemmas' proofs count them. */
wf_coll_terms wf_coll_terms_bcast(int64_t P, int64_t B);     /* Lemma 4.1 (= message) */
wf_coll_terms wf_coll_terms_star(int64_t P, int64_t B);      /* Lemma 5.1 */
wf_coll_terms wf_coll_terms_chain(int64_t P, int64_t B);     /* Lemma 5.2 */
wf_coll_terms wf_coll_terms_tree(int64_t P, int64_t B);      /* Lemma 5.3; any P */
wf_coll_terms wf_coll_terms_two_phase(int64_t P, int64_t B, int64_t S); /* groups of S */
wf_coll_terms wf_coll_terms_ring(int64_t P, int64_t B);      /* Lemma 6.1 */

/* Closed forms (cycles). */
double wf_coll_message(int64_t P, int64_t B, const wf_coll_params *p);  /* B + P + 2T_R */
double wf_coll_bcast(int64_t P, int64_t B, const wf_coll_params *p);    /* Lemma 4.1 */
/* Star as the paper concludes it (a pipeline): B(P-1) + 2T_R + 1. */
double wf_coll_star(int64_t P, int64_t B, const wf_coll_params *p);
/* Lemma 5.1 as stated: max(B(P-1), PB/2 + P - 1) + 2T_R + 1 (the model's bound). */
double wf_coll_star_lemma51(int64_t P, int64_t B, const wf_coll_params *p);
double wf_coll_chain(int64_t P, int64_t B, const wf_coll_params *p);   /* Lemma 5.2 */
double wf_coll_tree(int64_t P, int64_t B, const wf_coll_params *p);    /* Lemma 5.3 */
/* Two-phase with groups of S (S <= 0: the nearest integer to sqrt(P)), equation (1) on the
 * terms of Lemma 5.4's proof, with N = L = P - 1 as in every other 1D reduce. */
double wf_coll_two_phase(int64_t P, int64_t B, int64_t S, const wf_coll_params *p);
/* Lemma 5.4 as printed: max(2B, 2B - 2B/sqrt(P) + P) + (2 sqrt(P) - 2)(2T_R + 1). It counts
 * P links and P hops where the proof's pattern uses P - 1, so it differs from
 * wf_coll_two_phase(P, B, sqrt(P)) by less than 2B/P + 1 cycles. */
double wf_coll_two_phase_lemma54(int64_t P, int64_t B, const wf_coll_params *p);
int64_t wf_coll_two_phase_group(int64_t P); /* the default S: nearest integer to sqrt(P) */
double wf_coll_ring(int64_t P, int64_t B, const wf_coll_params *p);    /* Lemma 6.1 */
/* The ring allreduce as backend/collectives/lower_collective_ring.c runs it: 2(P-1) rounds of
 * c = ceil(B/P) words, each round's chunk leaving one cycle after the previous round's last
 * word arrived (the async receive's store cycle overlaps the next round's issue), so a round
 * costs c + 2T_R plus its link's hops; the rounds' critical path crosses 2(P-1) consecutive
 * links of the distance-2 ring (two 1-hop links, the rest 2 hops): 4P-7 hops for P >= 4,
 * 4P-6 below; then the local work Lemma 6.1 leaves out, two rotations of the B words (one
 * cycle a word) and the zeroed padding of the last chunk, P c - B.
 *     2(P-1)(c + 2T_R) + (4P-7) hop + 2B + (P c - B)
 * Lemma 6.1 instead charges 2T_R+1 per round, B/P words and 2(2P-3) hops. The model's choice
 * compares this whole time with the trees' (it once compared the rounds alone, and picked
 * the ring over 2 or 3 PEs where a star is faster). */
double wf_coll_ring_lowered(int64_t P, int64_t B, const wf_coll_params *p);

/* ---- reduction trees: every 1D reduce above is a pre-order tree over positions 0..n-1 ---- */

typedef struct wf_reduce_tree {
  int n;              /* PEs; position 0 is the root */
  int *parent;        /* parent[i] = position PE i sends its partial sum to; parent[0] = -1 */
  int depth;          /* height of the tree (the model's D) */
  int max_in;         /* largest number of messages one PE receives */
  int64_t hops;       /* sum over PEs of |i - parent[i]| (the energy for B = 1) */
  int64_t span;       /* longest root-to-leaf path in hops (the model's L) */
} wf_reduce_tree;

/* Builders (return 0, or -1 on allocation failure). Children of a PE send in increasing
 * position order; two messages to the same PE never overlap in time. */
int wf_coll_tree_chain(int n, wf_reduce_tree *t);
int wf_coll_tree_star(int n, wf_reduce_tree *t);
int wf_coll_tree_binary(int n, wf_reduce_tree *t);
int wf_coll_tree_two_phase(int n, int S, wf_reduce_tree *t);
/* Fills depth, max_in, hops and span from parent[] (positions may lie on both sides of a
 * parent). Returns -1 if parent[] is not a tree rooted at a PE whose parent is -1. */
int wf_coll_tree_measure(wf_reduce_tree *t);
/* The model's terms of a reduce of B wavelets over the tree. */
wf_coll_terms wf_coll_tree_terms(const wf_reduce_tree *t, int64_t B);
/* Cycles of the reduce the lowering emits for the tree (backend/collectives/lower_collective.c), derived
 * from the cycle model without contention for links: a leaf's message reaches its parent
 * 2T_R + d hop after it starts (d = hops), a streamed one (addsend) 1 cycle later; a PE
 * reads its children one after the other, those at lower positions first and each side
 * nearest first, B cycles each, never before a message arrives, and streams the last one to
 * its parent as it reads it; the root's last word is stored 1 cycle after it is read. So a
 * PE's C_v B cycles of reads come before its stream's distance and depth to the root, which
 * equation (1) overlaps: max(C B, E/N + L) + (2T_R+1) D. Exact for chains, stars and
 * Auto-Gen trees as simulated; the binary tree and two-phase run longer (a swset per round,
 * streams sharing links). Returns 0 for n <= 1 or B <= 0, -1 on allocation failure. */
double wf_coll_tree_schedule(const wf_reduce_tree *t, int64_t B, const wf_coll_params *p);
void wf_coll_tree_free(wf_reduce_tree *t);

/* Auto-Gen reduce (§5.5). The dynamic program
 *     E(P, D, C) = min_i E(i, D, C-1) + E(P-i, D-1, C) + i
 * (energy in hops per wavelet of a pre-order tree of depth <= D where no PE receives more
 * than C messages), then T = min over (D, C) of max(C B, B E / (P-1) + (P-1)) + D (2T_R+1).
 * (D, C) pairs that cannot beat the best fixed pattern are pruned; the result is exact.
 * Cost O(D_max C_max P^2) time and O(D_max C_max P) memory, D_max, C_max <= P (P = 512: ~0.1-1 s
 * unoptimized); P <= 16384. If `tree` is not NULL it receives the chosen tree (free with
 * wf_coll_tree_free). Returns the predicted cycles, or -1 (P too large, no memory). */
double wf_coll_autogen(int64_t P, int64_t B, const wf_coll_params *p, wf_reduce_tree *tree);

/* Lemma 5.5 (§5.6): T*(P, B) >= min_D B E*(P, 1, D) / (P-1) + (P-1) + D (2T_R+1), with
 *     E*(P, 1, D) >= min_{0<i<P} E*(i, 1, D) + E*(P-i, 1, D-1) + min(i, P-i+1).
 * A lower bound for every reduce whose time follows equation (1); the pipelined star is
 * outside that class and undercuts it at B = 1. */
double wf_coll_lower_bound(int64_t P, int64_t B, const wf_coll_params *p);

/* Reduce of `algo` to the PE at position `root` of a row of P (both sides reduce into it
 * at once; the root's contention adds up). Terms for star, chain, tree, two_phase; autogen
 * is handled by wf_coll_reduce_at. */
wf_coll_terms wf_coll_terms_reduce_at(wf_coll_algo algo, int64_t P, int64_t B, int64_t root);
double wf_coll_reduce_at(wf_coll_algo algo, int64_t P, int64_t B, int64_t root,
                         const wf_coll_params *p);
/* Flooding broadcast from position `root`: B + max(root, P-1-root) hops + 2T_R + 1. */
double wf_coll_bcast_at(int64_t P, int64_t B, int64_t root, const wf_coll_params *p);
/* Reduce-then-broadcast allreduce (§6.1) with the root chosen by the model: every position
 * for the closed forms, the two ends' and the middle for autogen. *root_out may be NULL. */
double wf_coll_allreduce_rb(wf_coll_algo algo, int64_t P, int64_t B, const wf_coll_params *p,
                            int64_t *root_out);

/* ---- 2D (§7): a grid of w x h PEs (M x N in the paper), the root at (0, 0) ---- */

/* X-Y reduce: `algo` along every row (w PEs), then along the first column (h PEs). */
double wf_coll_xy_reduce(wf_coll_algo algo, int64_t w, int64_t h, int64_t B,
                         const wf_coll_params *p);
double wf_coll_snake(int64_t w, int64_t h, int64_t B, const wf_coll_params *p); /* §7.3 */
double wf_coll_bcast2d(int64_t w, int64_t h, int64_t B, const wf_coll_params *p); /* L 7.1 */
double wf_coll_lower_bound_2d(int64_t w, int64_t h, int64_t B, const wf_coll_params *p); /* 7.2 */

/* ---- the chooser ---- */

typedef enum wf_coll_kind { WF_COLL_REDUCE, WF_COLL_ALLREDUCE, WF_COLL_BROADCAST } wf_coll_kind;

typedef struct wf_coll_query {
  wf_coll_kind kind;
  int64_t w, h;        /* PEs along x and y; h = 1 (or w = 1) is a 1D row (column) */
  int64_t len;         /* B: wavelets per PE */
  unsigned allowed;    /* bit (1u << algo) per algorithm the caller accepts; 0 = all */
  int64_t autogen_max; /* autogen is skipped above this many PEs per line; 0 = 512 */
} wf_coll_query;

typedef struct wf_coll_choice {
  wf_coll_algo algo;   /* for 2D reduces other than snake: the same algorithm on both axes */
  double predicted;    /* cycles */
  double lower_bound;  /* reduces: Lemma 5.5 (1D) or Lemma 7.2 (2D); 0 for other kinds */
  int64_t root;        /* 1D allreduce: position of the root; else 0 */
  char why[256];       /* one line for reports */
} wf_coll_choice;

/* Predicts one algorithm for a query. Returns 0, or -1 if the algorithm does not apply to
 * the kind/shape (e.g. ring for a reduce). */
int wf_coll_predict(const wf_coll_query *q, wf_coll_algo algo, const wf_coll_params *p,
                    wf_coll_choice *out);
/* The allowed algorithm with the lowest predicted cycles; ties go to the lower enum value
 * (star < chain < tree < two_phase < autogen < ring < snake). Returns 0, or -1 if no
 * allowed algorithm applies. */
int wf_coll_choose(const wf_coll_query *q, const wf_coll_params *p, wf_coll_choice *out);

#ifdef __cplusplus
}
#endif
#endif
