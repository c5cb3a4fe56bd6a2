/* The K-tree allreduce of MeshGEMV (WaferLLM §6.2): K levels of grouped reductions along a
 * line, each member sending straight to its group's middle PE over a pass-through route,
 * so the critical path pays K routing stages instead of the chain's n. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "backend/gemm/mesh_algos.h"

void wf_ktree_free(wf_ktree *t) {
  wf_coll_tree_free(&t->tree);
  free(t->level);
  t->level = NULL;
}

/* Smallest g with g^K >= n. */
static int group_size(int n, int K) {
  int g = (int)ceil(pow((double)n, 1.0 / K) - 1e-9);
  if (g < 2) g = 2;
  for (;;) {
    double prod = 1;
    for (int l = 0; l < K; l++) prod *= g;
    if (prod >= n) return g;
    g++;
  }
}

int wf_ktree_build(int n, int K, int groups, wf_ktree *t) {
  memset(t, 0, sizeof *t);
  if (n < 1 || K < 1 || groups < 0) return -1;
  if (groups > 0) K = 2;
  int *act = malloc((size_t)n * sizeof *act);
  t->tree.n = n;
  t->tree.parent = malloc((size_t)n * sizeof *t->tree.parent);
  t->level = calloc((size_t)n, sizeof *t->level);
  WF_ASSERT(act && t->tree.parent && t->level); /* out of host memory: exit 7 */
  for (int i = 0; i < n; i++) act[i] = i, t->tree.parent[i] = -1;
  int m = n, g = groups > 0 ? 0 : group_size(n, K);
  for (int l = 1; m > 1; l++) {
    /* Group size of this level; the last allowed level takes everything left. */
    int size = l >= K ? m : groups > 0 ? (m + groups - 1) / groups : g;
    if (size < 2) size = 2;
    int next = 0;
    for (int start = 0; start < m; start += size) {
      int len = m - start < size ? m - start : size;
      int root = act[start + (len - 1) / 2];
      for (int k = start; k < start + len; k++)
        if (act[k] != root) {
          t->tree.parent[act[k]] = root;
          t->level[act[k]] = l;
        }
      act[next++] = root;
    }
    m = next;
    t->levels = l;
  }
  t->root = act[0];
  free(act);
  if (wf_coll_tree_measure(&t->tree) != 0) {
    wf_ktree_free(t);
    return -1;
  }
  return 0;
}

/* The reduce is the lowered tree's stream schedule (wf_coll_tree_schedule), not equation 1 over
 * the tree's terms: a group root reads its own group's members one after another before its
 * message to the next level starts, so the levels' reads add up along the critical path, which
 * equation 1's single contention term (the largest fan-in) leaves out. */
double wf_ktree_cost(const wf_ktree *t, int64_t B, const wf_coll_params *p, int bcast_back) {
  double v = wf_coll_tree_schedule(&t->tree, B, p);
  if (bcast_back) v += wf_coll_bcast_at(t->tree.n, B, t->root, p);
  return v;
}
