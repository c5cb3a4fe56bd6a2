/* Reduction trees on a row of PEs: the fixed patterns as trees, their measured terms, the
 * Auto-Gen dynamic program (Reduce paper §5.5) that returns the tree it chose, and the
 * Lemma 5.5 lower bound (§5.6). Positions are hops from the root at position 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/collectives.h"
#include "waferc/diag.h"

static int tree_alloc(int n, wf_reduce_tree *t) {
  memset(t, 0, sizeof *t);
  if (n < 1) n = 1;
  t->n = n;
  t->parent = malloc((size_t)n * sizeof *t->parent);
  WF_ASSERT(t->parent); /* out of host memory: exit 7, not an invalid tree */
  t->parent[0] = -1;
  return 0;
}

void wf_coll_tree_free(wf_reduce_tree *t) {
  if (!t) return;
  free(t->parent);
  memset(t, 0, sizeof *t);
}

int wf_coll_tree_measure(wf_reduce_tree *t) {
  int n = t->n, root = -1;
  int *in = calloc((size_t)n, sizeof *in);
  int *height = malloc((size_t)n * sizeof *height);
  int64_t *path = malloc((size_t)n * sizeof *path);
  int rc = -1;
  WF_ASSERT(in && height && path);
  t->depth = t->max_in = 0;
  t->hops = t->span = 0;
  for (int i = 0; i < n; i++) {
    int q = t->parent[i];
    if (q == -1) {
      if (root >= 0) goto out; /* two roots */
      root = i;
    } else if (q < 0 || q >= n || q == i) {
      goto out;
    } else {
      in[q]++;
      t->hops += llabs((long long)i - q);
    }
  }
  if (root < 0) goto out;
  /* Walk each PE to the root; a walk longer than n steps means a cycle. */
  for (int i = 0; i < n; i++) {
    int steps = 0;
    int64_t hops = 0;
    for (int v = i; t->parent[v] != -1; v = t->parent[v]) {
      hops += llabs((long long)v - t->parent[v]);
      if (++steps > n) goto out;
    }
    height[i] = steps;
    path[i] = hops;
    if (steps > t->depth) t->depth = steps;
    if (hops > t->span) t->span = hops;
    if (in[i] > t->max_in) t->max_in = in[i];
  }
  rc = 0;
out:
  free(in);
  free(height);
  free(path);
  return rc;
}

wf_coll_terms wf_coll_tree_terms(const wf_reduce_tree *t, int64_t B) {
  wf_coll_terms r = {0, 0, 0, 0, 0, 0};
  if (t->n <= 1) return r;
  r.C = (double)B * (t->max_in > 1 ? t->max_in : 1);
  r.E = (double)B * (double)t->hops;
  r.N = t->n - 1;
  r.L = (double)t->span;
  r.D = t->depth;
  return r;
}

double wf_coll_tree_schedule(const wf_reduce_tree *t, int64_t B, const wf_coll_params *p) {
  int n = t->n;
  if (n <= 1 || B <= 0) return 0;
  int *order = malloc((size_t)n * sizeof *order), *first = malloc((size_t)(n + 1) * sizeof *first);
  int *kids = malloc((size_t)n * sizeof *kids), *cur = malloc((size_t)n * sizeof *cur);
  double *out = malloc((size_t)n * sizeof *out); /* when v's message starts down its ramp */
  double T = -1;
  WF_ASSERT(order && first && kids && cur && out); /* out of host memory: exit 7 */
  /* children lists (counting sort by parent), then a breadth-first order from the root */
  for (int v = 0; v <= n; v++) first[v] = 0;
  int root = -1;
  for (int v = 0; v < n; v++) {
    if (t->parent[v] < 0) root = v;
    else first[t->parent[v] + 1]++;
  }
  WF_ASSERT(root >= 0);
  for (int v = 0; v < n; v++) first[v + 1] += first[v];
  for (int v = 0; v < n; v++) cur[v] = first[v];
  for (int v = 0; v < n; v++)
    if (t->parent[v] >= 0) kids[cur[t->parent[v]]++] = v;
  int head = 0, tail = 0;
  order[tail++] = root;
  while (head < tail) {
    int v = order[head++];
    for (int k = first[v]; k < first[v + 1]; k++) order[tail++] = kids[k];
  }
  WF_ASSERT(tail == n);
  double k2 = 2 * p->ramp;
  for (int i = n - 1; i >= 0; i--) {
    int v = order[i], a = first[v], b = first[v + 1];
    /* kids[a..b) ascend (filled in position order): reverse the lower side's part so each
     * side reads nearest first */
    int m = a;
    while (m < b && kids[m] < v) m++;
    for (int x = a, y = m - 1; x < y; x++, y--) {
      int tmp = kids[x];
      kids[x] = kids[y];
      kids[y] = tmp;
    }
    double tread = 0, start = 0;
    for (int x = a; x < b; x++) {
      int c = kids[x];
      double arr = out[c] + (first[c] < first[c + 1] ? 1 : 0) + k2 + (double)abs(c - v) * p->hop;
      start = tread > arr ? tread : arr;
      tread = start + (double)B;
    }
    out[v] = a < b ? start : 0; /* a leaf sends at once; a PE streams its last child */
    if (v == root) T = tread + 1;
  }
  free(order);
  free(first);
  free(kids);
  free(cur);
  free(out);
  return T;
}

static int finish(wf_reduce_tree *t) {
  if (wf_coll_tree_measure(t) != 0) {
    wf_coll_tree_free(t);
    return -1;
  }
  return 0;
}

int wf_coll_tree_chain(int n, wf_reduce_tree *t) {
  if (tree_alloc(n, t)) return -1;
  for (int i = 1; i < t->n; i++) t->parent[i] = i - 1;
  return finish(t);
}

int wf_coll_tree_star(int n, wf_reduce_tree *t) {
  if (tree_alloc(n, t)) return -1;
  for (int i = 1; i < t->n; i++) t->parent[i] = 0;
  return finish(t);
}

/* Round r sends from odd multiples of 2^(r-1) to the previous active PE: the parent of
 * position x is x with its lowest set bit cleared. */
int wf_coll_tree_binary(int n, wf_reduce_tree *t) {
  if (tree_alloc(n, t)) return -1;
  for (int i = 1; i < t->n; i++) t->parent[i] = i & (i - 1);
  return finish(t);
}

/* Groups of S assigned from the far end (§5.4); the root's group takes the remainder. */
int wf_coll_tree_two_phase(int n, int S, wf_reduce_tree *t) {
  if (S < 1) S = 1;
  if (tree_alloc(n, t)) return -1;
  int groups = (t->n + S - 1) / S;
  int first = t->n - S * (groups - 1); /* size of the root's group */
  for (int i = 1; i < t->n; i++) {
    int lead = i < first ? 0 : first + ((i - first) / S) * S;
    if (i != lead) t->parent[i] = i - 1;          /* phase 1: chain inside the group */
    else t->parent[i] = lead == first ? 0 : lead - S; /* phase 2: chain of group leaders */
  }
  return finish(t);
}

/* ---- Auto-Gen (§5.5) ---------------------------------------------------------------- */

/* "Impossible": large enough that no real energy reaches it (P^2/2 hops, P <= 16384), small
 * enough that two of them and a split offset still fit an int32, so the inner loop needs
 * no tests. */
#define AG_INF (INT32_C(1) << 29)
#define AG_MAX_P 16384

typedef struct ag_table {
  int P, dmax, cmax;
  int32_t *e; /* e[(d * (cmax+1) + c) * (P+1) + n]: min hops, AG_INF = impossible */
} ag_table;

static inline int32_t *ag_row(const ag_table *t, int d, int c) {
  return t->e + ((size_t)d * (size_t)(t->cmax + 1) + (size_t)c) * (size_t)(t->P + 1);
}

/* Fills E(n, D, C) for n <= P, D <= dmax, C <= cmax. A tree over n PEs has depth and
 * in-degree at most n-1, so larger bounds copy the saturated value instead of recomputing. */
static void ag_fill(ag_table *t) {
  int P = t->P;
  for (int d = 0; d <= t->dmax; d++) {
    for (int c = 0; c <= t->cmax; c++) {
      int32_t *row = ag_row(t, d, c);
      row[0] = AG_INF;
      row[1] = 0;
      if (d == 0 || c == 0) {
        for (int n = 2; n <= P; n++) row[n] = AG_INF;
        continue;
      }
      const int32_t *left = ag_row(t, d, c - 1);  /* E(i, D, C-1) */
      const int32_t *right = ag_row(t, d - 1, c); /* E(n-i, D-1, C) */
      for (int n = 2; n <= P; n++) {
        if (c > n - 1) { row[n] = left[n]; continue; }
        if (d > n - 1) { row[n] = ag_row(t, d - 1, c)[n]; continue; }
        int32_t best = AG_INF;
        const int32_t *r = right + n;
        for (int i = 1; i < n; i++) {
          int32_t v = left[i] + r[-i] + i;
          best = v < best ? v : best;
        }
        row[n] = best;
      }
    }
  }
}

/* Rebuilds the tree behind E(n, d, c) over positions base..base+n-1: the root's last
 * message comes from base+i carrying the reduction of the n-i PEs right of it. */
static void ag_build(const ag_table *t, int *parent, int base, int n, int d, int c) {
  while (n > 1) {
    int32_t target = ag_row(t, d, c)[n];
    const int32_t *left = ag_row(t, d, c - 1), *right = ag_row(t, d - 1, c);
    int pick = -1;
    for (int i = 1; i < n && pick < 0; i++)
      if (left[i] < AG_INF && right[n - i] < AG_INF && left[i] + right[n - i] + i == target)
        pick = i;
    WF_ASSERT(pick > 0); /* every finite entry came from some split */
    parent[base + pick] = base;
    ag_build(t, parent, base + pick, n - pick, d - 1, c);
    n = pick;
    c--;
  }
}

static double ag_time(int64_t P, int64_t B, double hops, int d, int c, const wf_coll_params *p) {
  double k = 2 * p->ramp + 1;
  double cont = (double)B * c, flow = (double)B * hops / (double)(P - 1) + (double)(P - 1) * p->hop;
  return (cont > flow ? cont : flow) + k * d;
}

/* The last trees the dynamic program chose, by (P, B, T_R, hop): choosing a collective prices
 * Auto-Gen on both sides of two candidate roots, and lowering it builds the same trees again,
 * for every allreduce of a plan; the program costs O(P^2 D C), seconds at P = 512. */
enum { AG_MEMO = 16 };
typedef struct ag_memo {
  int64_t P, B;
  double ramp, hop, best;
  int *parent; /* P entries */
} ag_memo;
static ag_memo ag_memos[AG_MEMO];
static int ag_memo_next;

static const ag_memo *ag_memo_find(int64_t P, int64_t B, const wf_coll_params *p) {
  for (int i = 0; i < AG_MEMO; i++) {
    const ag_memo *m = &ag_memos[i];
    if (m->parent && m->P == P && m->B == B && m->ramp == p->ramp && m->hop == p->hop) return m;
  }
  return NULL;
}

static void ag_memo_add(int64_t P, int64_t B, const wf_coll_params *p, double best, const int *parent) {
  int *copy = malloc((size_t)P * sizeof *copy);
  if (!copy) return; /* only a missed reuse */
  memcpy(copy, parent, (size_t)P * sizeof *copy);
  ag_memo *m = &ag_memos[ag_memo_next];
  ag_memo_next = (ag_memo_next + 1) % AG_MEMO;
  free(m->parent);
  *m = (ag_memo){P, B, p->ramp, p->hop, best, copy};
}

static double ag_solve(int64_t P, int64_t B, const wf_coll_params *p, wf_reduce_tree *tree);

double wf_coll_autogen(int64_t P, int64_t B, const wf_coll_params *p, wf_reduce_tree *tree) {
  if (tree) memset(tree, 0, sizeof *tree);
  if (P <= 1 || B <= 0 || P > AG_MAX_P) return ag_solve(P, B, p, tree);
  const ag_memo *m = ag_memo_find(P, B, p);
  if (m) {
    if (tree) {
      if (tree_alloc((int)P, tree)) return -1;
      memcpy(tree->parent, m->parent, (size_t)P * sizeof *tree->parent);
      WF_ASSERT(wf_coll_tree_measure(tree) == 0);
    }
    return m->best;
  }
  wf_reduce_tree t = {0};
  double best = ag_solve(P, B, p, &t);
  if (best < 0) return best;
  ag_memo_add(P, B, p, best, t.parent);
  if (tree) *tree = t;
  else wf_coll_tree_free(&t);
  return best;
}

/* The dynamic program itself (wf_coll_autogen without the memo; *tree zeroed by it). */
static double ag_solve(int64_t P, int64_t B, const wf_coll_params *p, wf_reduce_tree *tree) {
  if (P > AG_MAX_P) return -1;
  if (P <= 1 || B <= 0) {
    if (tree && tree_alloc(1, tree)) return -1;
    if (tree) wf_coll_tree_measure(tree);
    return 0;
  }
  double k = 2 * p->ramp + 1;
  /* The best fixed pattern is an upper bound; every one of them is a pre-order tree the
   * program can represent, so pruning by it keeps the optimum. */
  double ub = -1;
  for (int which = 0; which < 4; which++) {
    wf_reduce_tree ft;
    int rc = which == 0   ? wf_coll_tree_chain((int)P, &ft)
             : which == 1 ? wf_coll_tree_star((int)P, &ft)
             : which == 2 ? wf_coll_tree_binary((int)P, &ft)
                          : wf_coll_tree_two_phase((int)P, (int)wf_coll_two_phase_group(P), &ft);
    if (rc) return -1;
    wf_coll_terms tt = wf_coll_tree_terms(&ft, B);
    double v = wf_coll_model(&tt, p);
    if (ub < 0 || v < ub) ub = v;
    wf_coll_tree_free(&ft);
  }
  /* T >= C B + D k and T >= (P-1) hop + D k: bound D and C by the upper bound. */
  double dlim = (ub - (double)(P - 1) * p->hop) / k, clim = (ub - k) / (double)B;
  ag_table t;
  t.P = (int)P;
  t.dmax = dlim >= P - 1 ? (int)P - 1 : dlim < 1 ? 1 : (int)floor(dlim + 1e-9);
  t.cmax = clim >= P - 1 ? (int)P - 1 : clim < 1 ? 1 : (int)floor(clim + 1e-9);
  t.e = malloc((size_t)(t.dmax + 1) * (size_t)(t.cmax + 1) * (size_t)(P + 1) * sizeof(int32_t));
  WF_ASSERT(t.e); /* out of host memory: exit 7 */
  ag_fill(&t);
  double best = -1;
  int bd = 0, bc = 0;
  for (int d = 1; d <= t.dmax; d++)
    for (int c = 1; c <= t.cmax; c++) {
      int32_t e = ag_row(&t, d, c)[P];
      if (e >= AG_INF) continue;
      double v = ag_time(P, B, e, d, c, p);
      if (best < 0 || v < best) { best = v; bd = d; bc = c; }
    }
  WF_ASSERT(best >= 0); /* the upper bound's own (D, C) is always in the table */
  if (tree) {
    if (tree_alloc((int)P, tree)) { free(t.e); return -1; }
    ag_build(&t, tree->parent, 0, (int)P, bd, bc);
    WF_ASSERT(wf_coll_tree_measure(tree) == 0);
  }
  free(t.e);
  return best;
}

/* ---- Lemma 5.5 ---------------------------------------------------------------------- */

double wf_coll_lower_bound(int64_t P, int64_t B, const wf_coll_params *p) {
  if (P <= 1 || B <= 0) return 0;
  double k = 2 * p->ramp + 1;
  int n = (int)P;
  int64_t *prev = malloc((size_t)(n + 1) * sizeof *prev), *cur = malloc((size_t)(n + 1) * sizeof *cur);
  if (!prev || !cur) { free(prev); free(cur); return -1; }
  const int64_t INF = INT64_MAX / 4;
  /* Depth 0: only a single PE is reduced. */
  prev[1] = 0;
  for (int m = 2; m <= n; m++) prev[m] = INF;
  double best = -1;
  for (int d = 1; d <= n - 1; d++) {
    /* Every deeper candidate costs at least this much: stop once it cannot win. */
    if (best >= 0 && (double)(P - 1) * p->hop + k * d >= best) break;
    cur[1] = 0;
    for (int m = 2; m <= n; m++) {
      int64_t v = INF;
      for (int i = 1; i < m; i++) {
        if (cur[i] >= INF || prev[m - i] >= INF) continue;
        int64_t extra = i < m - i + 1 ? i : m - i + 1;
        int64_t s = cur[i] + prev[m - i] + extra;
        if (s < v) v = s;
      }
      cur[m] = v;
    }
    if (cur[n] < INF) {
      double t = (double)B * (double)cur[n] / (double)(P - 1) + (double)(P - 1) * p->hop + k * d;
      if (best < 0 || t < best) best = t;
    }
    int64_t *sw = prev; prev = cur; cur = sw;
  }
  free(prev);
  free(cur);
  return best;
}
