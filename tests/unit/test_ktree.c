/* The K-tree allreduce of MeshGEMV (backend/gemm/ktree.c): every PE's value reaches the root
 * exactly once, levels run in order, group sizes follow K or the group count, and the
 * model prefers it to the chain (the pipeline allreduce) on long lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/mesh_algos.h"
#include "wf_test.h"

/* Simulates the levels: at level l every PE sending at l passes all it holds to its
 * parent. The root must end with every PE exactly once and nobody may send twice. */
static void reaches_root_once(int n, int K, int groups) {
  wf_ktree t;
  CHECK(wf_ktree_build(n, K, groups, &t) == 0, "n=%d K=%d groups=%d", n, K, groups);
  int *count = calloc((size_t)n * n, sizeof *count); /* count[pe * n + src] */
  for (int i = 0; i < n; i++) count[i * n + i] = 1;
  CHECK(t.tree.parent[t.root] == -1 && t.level[t.root] == 0);
  for (int i = 0; i < n; i++)
    if (i != t.root) {
      int q = t.tree.parent[i];
      CHECK(q >= 0 && q < n && t.level[i] >= 1 && t.level[i] <= t.levels);
      /* A parent sends after everything it receives. */
      CHECK(q == t.root || t.level[q] > t.level[i], "n=%d: %d (level %d) -> %d (level %d)", n, i,
            t.level[i], q, t.level[q]);
    }
  for (int l = 1; l <= t.levels; l++)
    for (int i = 0; i < n; i++)
      if (t.level[i] == l) {
        int q = t.tree.parent[i];
        for (int s = 0; s < n; s++) {
          count[q * n + s] += count[i * n + s];
          count[i * n + s] = 0;
        }
      }
  for (int s = 0; s < n; s++)
    CHECK(count[t.root * n + s] == 1, "n=%d K=%d groups=%d: PE %d reached the root %d times", n, K,
          groups, s, count[t.root * n + s]);
  CHECK(t.levels <= (groups ? 2 : K) && t.tree.depth <= t.levels);
  free(count);
  wf_ktree_free(&t);
}

int main(void) {
  for (int n = 1; n <= 80; n++)
    for (int K = 1; K <= 4; K++) reaches_root_once(n, K, 0);
  for (int n = 2; n <= 80; n += 3)
    for (int g = 1; g <= 9; g++) reaches_root_once(n, 2, g);

  /* K = 2 over 64 PEs: eight groups of eight, their roots in the middle (position 3 of
   * each), then one group of the eight roots, whose middle root (27) hears 7 + 7 messages. */
  wf_ktree t;
  CHECK(wf_ktree_build(64, 2, 0, &t) == 0);
  CHECK(t.levels == 2 && t.tree.max_in == 14, "levels %d max_in %d", t.levels, t.tree.max_in);
  CHECK(t.tree.parent[0] == 3 && t.tree.parent[7] == 3 && t.level[0] == 1);
  CHECK(t.root == 27 && t.level[3] == 2 && t.tree.parent[3] == 27, "root %d", t.root);
  /* Under the same model, the K-tree allreduce beats the pipeline (chain reduce to the end,
   * then a broadcast) on a long line with short vectors, as WaferLLM §7.3 finds. */
  wf_coll_params p = wf_coll_params_default();
  wf_ktree_free(&t);
  CHECK(wf_ktree_build(512, 2, 0, &t) == 0);
  double kt = wf_ktree_cost(&t, 16, &p, 1);
  double pipe = wf_coll_chain(512, 16, &p) + wf_coll_bcast(512, 16, &p);
  CHECK(kt > 0 && kt < pipe, "ktree %g pipeline %g", kt, pipe);
  /* Grouped variant: 4 groups of 16 over 64 PEs; the final root hears 15 + 3. */
  wf_ktree_free(&t);
  CHECK(wf_ktree_build(64, 2, 4, &t) == 0);
  CHECK(t.levels == 2 && t.tree.max_in == 18, "max_in %d", t.tree.max_in);
  wf_ktree_free(&t);
  CHECK(wf_ktree_build(0, 2, 0, &t) == -1);

  /* The shape the cost model picks (gemv_cost.c): no tree of at most two levels costs less
   * over the same messages, and the sum it returns is the picked shape's. Over these lines and
   * lengths, more than one shape must win somewhere (else the tuning picks nothing). */
  int64_t lens[][3] = {{1, 1, 1}, {8, 8, 8}, {40, 40, 120}, {256, 256, 256}, {2048, 64, 64}};
  int wins_k1 = 0, wins_k2 = 0, wins_groups = 0;
  for (int P = 3; P <= 400; P += P < 40 ? 1 : 37)
    for (int l = 0; l < 5; l++) {
      int K = -1, g = -1;
      double best = wf_gemv_ktree_tune(P, lens[l], 3, &p, &K, &g);
      double sum = 0;
      for (int i = 0; i < 3; i++) sum += wf_gemv_ktree_allreduce(P, K, g, lens[l][i], &p);
      CHECK(best > 0 && sum == best && (g == 0 ? K == 1 || K == 2 : K == 2 && g >= 2 && g <= P / 2),
            "P=%d lens %d: K=%d groups=%d cost %g (sum %g)", P, l, K, g, best, sum);
      for (int k2 = 1; k2 <= 2; k2++)
        for (int g2 = 0; g2 <= (k2 == 2 ? P / 2 : 0); g2 += g2 == 0 ? 2 : 1) {
          double c = 0;
          for (int i = 0; i < 3; i++) c += wf_gemv_ktree_allreduce(P, k2, g2, lens[l][i], &p);
          CHECK(c >= best, "P=%d lens %d: K=%d groups=%d costs %g < the pick's %g", P, l, k2, g2, c, best);
        }
      wins_groups += g > 0, wins_k1 += g == 0 && K == 1, wins_k2 += g == 0 && K == 2;
    }
  CHECK((wins_k1 > 0) + (wins_k2 > 0) + (wins_groups > 0) >= 2, "picks: K=1 %d, K=2 %d, groups %d", wins_k1,
        wins_k2, wins_groups);
  printf("tuned shapes: K=1 %d, K=2 %d, groups %d\n", wins_k1, wins_k2, wins_groups);
  return wf_test_result("test_ktree");
}
