/* Costs of the collectives composed from the line collectives of collective_cost.c and the
 * trees of collective_tree.c (Reduce paper §5.7, §6.3, §7): a reduce into an inner root (two
 * one-sided trees meeting at the root), reduce-then-broadcast allreduce with the root chosen
 * by the model, and the 2D X-Y, snake and broadcast. */
#include <stddef.h>

#include "ir/support/intmath.h"
#include "waferc/collectives.h"

static const wf_coll_terms zero_terms = {0, 0, 0, 0, 0, 0};

/* ---- a reduce into an inner root, and reduce-then-broadcast ---- */

/* Wavelets the root of a one-sided reduce over n PEs receives. */
static double root_in(wf_coll_algo a, int64_t n, int64_t B) {
  if (n <= 1) return 0;
  switch (a) {
  case WF_COLL_STAR: return (double)B * (double)(n - 1);
  case WF_COLL_TREE: return (double)B * wf_bitlen((uint64_t)n - 1);
  case WF_COLL_TWO_PHASE: {
    int64_t S = wf_coll_two_phase_group(n), G = (n + S - 1) / S;
    return (double)B * ((G >= 2 && S >= 2 && n - S * (G - 1) >= 2) ? 2 : 1);
  }
  default: return (double)B;
  }
}

static wf_coll_terms side_terms(wf_coll_algo a, int64_t n, int64_t B) {
  switch (a) {
  case WF_COLL_STAR: return wf_coll_terms_star(n, B);
  case WF_COLL_TREE: return wf_coll_terms_tree(n, B);
  case WF_COLL_TWO_PHASE: return wf_coll_terms_two_phase(n, B, 0);
  default: return wf_coll_terms_chain(n, B);
  }
}

/* Both sides run at once: energies add, the root's receive contention adds, the rest is
 * the larger side's. */
static wf_coll_terms combine(wf_coll_terms l, wf_coll_terms r, double in_l, double in_r,
                             int64_t P) {
  wf_coll_terms t = zero_terms;
  t.C = l.C > r.C ? l.C : r.C;
  if (in_l + in_r > t.C) t.C = in_l + in_r;
  t.E = l.E + r.E;
  t.N = (double)(P - 1);
  t.L = l.L > r.L ? l.L : r.L;
  t.D = l.D > r.D ? l.D : r.D;
  return t;
}

wf_coll_terms wf_coll_terms_reduce_at(wf_coll_algo algo, int64_t P, int64_t B, int64_t root) {
  if (P <= 1) return zero_terms;
  if (root < 0) root = 0;
  if (root > P - 1) root = P - 1;
  int64_t nl = root + 1, nr = P - root;
  wf_coll_terms t = combine(side_terms(algo, nl, B), side_terms(algo, nr, B),
                            root_in(algo, nl, B), root_in(algo, nr, B), P);
  t.pipelined = algo == WF_COLL_STAR;
  return t;
}

double wf_coll_reduce_at(wf_coll_algo algo, int64_t P, int64_t B, int64_t root,
                         const wf_coll_params *p) {
  if (P <= 1) return 0;
  if (algo != WF_COLL_AUTOGEN) {
    wf_coll_terms t = wf_coll_terms_reduce_at(algo, P, B, root);
    return wf_coll_model(&t, p);
  }
  if (root < 0) root = 0;
  if (root > P - 1) root = P - 1;
  wf_reduce_tree tl, tr;
  if (wf_coll_autogen(root + 1, B, p, &tl) < 0) return -1;
  if (wf_coll_autogen(P - root, B, p, &tr) < 0) { wf_coll_tree_free(&tl); return -1; }
  wf_coll_terms l = wf_coll_tree_terms(&tl, B), r = wf_coll_tree_terms(&tr, B);
  int in_l = 0, in_r = 0;
  for (int i = 1; i < tl.n; i++) in_l += tl.parent[i] == 0;
  for (int i = 1; i < tr.n; i++) in_r += tr.parent[i] == 0;
  wf_coll_terms t = combine(l, r, (double)B * in_l, (double)B * in_r, P);
  wf_coll_tree_free(&tl);
  wf_coll_tree_free(&tr);
  return wf_coll_model(&t, p);
}

double wf_coll_bcast_at(int64_t P, int64_t B, int64_t root, const wf_coll_params *p) {
  if (P <= 1) return 0;
  wf_coll_terms t = wf_coll_terms_bcast(P, B);
  int64_t far = root > P - 1 - root ? root : P - 1 - root;
  t.L = (double)far;
  return wf_coll_model(&t, p);
}

double wf_coll_allreduce_rb(wf_coll_algo algo, int64_t P, int64_t B, const wf_coll_params *p,
                            int64_t *root_out) {
  double best = -1;
  int64_t best_root = 0;
  if (P <= 1) {
    if (root_out) *root_out = 0;
    return 0;
  }
  int64_t cands[2] = {0, (P - 1) / 2};
  int64_t n = algo == WF_COLL_AUTOGEN ? 2 : P;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = algo == WF_COLL_AUTOGEN ? cands[i] : i;
    double red = wf_coll_reduce_at(algo, P, B, r, p);
    if (red < 0) return -1;
    double v = red + wf_coll_bcast_at(P, B, r, p);
    if (best < 0 || v < best) { best = v; best_root = r; }
  }
  if (root_out) *root_out = best_root;
  return best;
}

/* ---- 2D ---- */

static double reduce_1d(wf_coll_algo a, int64_t P, int64_t B, const wf_coll_params *p) {
  switch (a) {
  case WF_COLL_STAR: return wf_coll_star(P, B, p);
  case WF_COLL_TREE: return wf_coll_tree(P, B, p);
  case WF_COLL_TWO_PHASE: return wf_coll_two_phase(P, B, 0, p);
  case WF_COLL_AUTOGEN: return wf_coll_autogen(P, B, p, NULL);
  default: return wf_coll_chain(P, B, p);
  }
}

double wf_coll_xy_reduce(wf_coll_algo algo, int64_t w, int64_t h, int64_t B,
                         const wf_coll_params *p) {
  double x = reduce_1d(algo, w, B, p), y = reduce_1d(algo, h, B, p);
  return x < 0 || y < 0 ? -1 : x + y;
}

double wf_coll_snake(int64_t w, int64_t h, int64_t B, const wf_coll_params *p) {
  return wf_coll_chain(w * h, B, p);
}

double wf_coll_bcast2d(int64_t w, int64_t h, int64_t B, const wf_coll_params *p) {
  if (w * h <= 1) return 0;
  return (double)B + (double)(w + h - 2) * p->hop + 2 * p->ramp + 1;
}

double wf_coll_lower_bound_2d(int64_t w, int64_t h, int64_t B, const wf_coll_params *p) {
  if (w * h <= 1) return 0;
  double b = (double)B, flow = b / 8 + (double)(w + h - 1) * p->hop;
  return (b > flow ? b : flow) + 2 * p->ramp + 1;
}
