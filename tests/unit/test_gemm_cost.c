/* The dist.gemm cost formulas (backend/gemm_cost.c) as --gemm-algo=auto uses them: every
 * algorithm with a lowering has a prediction (allgather included), none is cheaper than the
 * compute alone or than moving its own bytes, auto takes the minimum, and the INTERLEAVE
 * ring's 2-hop links make MeshGEMM cheaper than Cannon once the wrap link is long; on
 * non-square regions only allgather is predicted. */
#include <stdlib.h>

#include "backend/gemm_algos.h"
#include "wf_test.h"

int main(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/targets", src ? src : "../..");
  setenv("WAFERC_TARGET_PATH", dir, 1);
  wf_target t;
  CHECK(wf_target_load("wse2", &t) == 0, "wse2 does not load");
  if (g_failures) return wf_test_result("test_gemm_cost");
  static const int sides[] = {1, 2, 4, 8, 32};
  static const int64_t blocks[][3] = {{64, 64, 64}, {8, 128, 16}, {1, 1, 1}, {3, 5, 7}};
  for (size_t si = 0; si < sizeof sides / sizeof *sides; si++)
    for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
      int N = sides[si];
      int64_t m = blocks[bi][0], k = blocks[bi][1], n = blocks[bi][2];
      int64_t mac = (m * k * n + t.fmac_per_cycle - 1) / t.fmac_per_cycle, best = -1;
      for (int a = 0; a < WF_GEMM_COUNT; a++) {
        int64_t c = wf_gemm_predict(&t, (wf_gemm_algo)a, N, N, m, k, n);
        CHECK(c >= 0, "%s on %dx%d has no prediction", wf_gemm_algo_names[a], N, N);
        /* every PE does N block multiplies; with N > 1 it receives N-1 blocks of A and of B
         * (at best the two streams arrive at once: half their sum) */
        CHECK(c >= N * mac, "%s %dx%d: %lld < the compute alone", wf_gemm_algo_names[a], N, N, (long long)c);
        CHECK(N == 1 || c >= (int64_t)(N - 1) * (m * k + k * n) / 2, "%s %dx%d: cheaper than its traffic",
              wf_gemm_algo_names[a], N, N);
        if (best < 0 || c < best) best = c;
      }
      wf_gemm_algo au = wf_gemm_auto(&t, N, N, m, k, n);
      CHECK(wf_gemm_predict(&t, au, N, N, m, k, n) == best, "auto did not take the minimum on %dx%d", N, N);
      if (N >= 8)
        CHECK(wf_gemm_predict(&t, WF_GEMM_MESHGEMM, N, N, m, k, n) <
                  wf_gemm_predict(&t, WF_GEMM_CANNON, N, N, m, k, n),
              "%dx%d: MeshGEMM's 2-hop ring must beat Cannon's %d-hop wrap", N, N, N - 1);
    }
  /* On a non-square region only allgather lowers: the others have no prediction, so auto
   * takes allgather there. Its gather moves W A blocks and H B blocks (B's rows per PE are
   * K/H = k W/H): swapping the sides swaps which panel is longer. */
  for (int a = 0; a < WF_GEMM_COUNT; a++)
    if (a != WF_GEMM_ALLGATHER)
      CHECK(wf_gemm_predict(&t, (wf_gemm_algo)a, 2, 3, 8, 12, 8) == -1, "%s predicts a 2x3 region",
            wf_gemm_algo_names[a]);
  int64_t ag = wf_gemm_predict(&t, WF_GEMM_ALLGATHER, 2, 3, 8, 12, 8);
  CHECK(ag >= 2 * (8 * 12 * 8 / t.fmac_per_cycle) + 2 * 8 * 12 + 3 * 8 * 8, "allgather 2x3: %lld", (long long)ag);
  CHECK(wf_gemm_auto(&t, 2, 3, 8, 12, 8) == WF_GEMM_ALLGATHER, "auto on 2x3 must take allgather");
  wf_gemm_algo p;
  CHECK(wf_gemm_algo_parse("allgather", &p) == 0 && p == WF_GEMM_ALLGATHER, "allgather does not parse");
  CHECK(wf_gemm_algo_parse("bogus", &p) == -1, "an unknown name parses");
  return wf_test_result("test_gemm_cost");
}
