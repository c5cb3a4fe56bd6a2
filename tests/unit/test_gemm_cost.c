/* The dist.gemm cost formulas (backend/gemm_cost.c) as --gemm-algo=auto uses them: every
 * algorithm with a lowering has a prediction (allgather included), none is cheaper than the
 * compute alone or than moving its own bytes, auto takes the minimum, and the INTERLEAVE
 * ring's 2-hop links make MeshGEMM cheaper than Cannon once the wrap link is long; on
 * non-square regions only allgather and SUMMA are predicted, SUMMA by its K intervals. */
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
  /* On a non-square region every algorithm lowers; MeshGEMM and Cannon through the lcm grid
   * (L = 6 on 2x3: A blocks of ka = 12 are 3 tiles of kt = 4), only when ka is a multiple of
   * L / W. Each PE still multiplies its m x n block over the whole K = 24. Allgather's gather
   * moves W A blocks and H B blocks (B's rows per PE are K/H = k W/H): swapping the sides
   * swaps which panel is longer. */
  int64_t best2x3 = -1;
  for (int a = 0; a < WF_GEMM_COUNT; a++) {
    int64_t c = wf_gemm_predict(&t, (wf_gemm_algo)a, 2, 3, 8, 12, 8);
    CHECK(c >= 8 * 24 * 8 / t.fmac_per_cycle, "%s on 2x3: %lld", wf_gemm_algo_names[a], (long long)c);
    if (c >= 0 && (best2x3 < 0 || c < best2x3)) best2x3 = c;
  }
  CHECK(wf_gemm_predict(&t, WF_GEMM_MESHGEMM, 2, 3, 8, 13, 8) == -1, "ka = 13 does not cut in 3 tiles");
  CHECK(wf_gemm_predict(&t, WF_GEMM_CANNON, 3, 2, 8, 13, 8) == -1, "ka = 13 does not cut in 2 tiles");
  CHECK(wf_gemm_predict(&t, WF_GEMM_MESHGEMM, 1, 3, 8, 11, 8) > 0, "1x3: A holds the whole K");
  CHECK(wf_gemm_rect_k_fits(2, 3, 24) && wf_gemm_rect_k_fits(2, 3, 11) && wf_gemm_rect_k_fits(2, 4, 4));
  CHECK(!wf_gemm_rect_k_fits(2, 3, 4) && !wf_gemm_rect_k_fits(3, 2, 4) && !wf_gemm_rect_k_fits(4, 6, 18),
        "K's cuts along x and y differ there");
  CHECK(wf_gemm_rect_k_fits(1, 3, 11) && wf_gemm_rect_k_fits(5, 1, 7), "1-wide regions take any K");
  int64_t ag = wf_gemm_predict(&t, WF_GEMM_ALLGATHER, 2, 3, 8, 12, 8);
  CHECK(ag >= 2 * (8 * 12 * 8 / t.fmac_per_cycle) + 2 * 8 * 12 + 3 * 8 * 8, "allgather 2x3: %lld", (long long)ag);
  wf_gemm_algo au = wf_gemm_auto(&t, 2, 3, 8, 12, 8);
  CHECK(wf_gemm_predict(&t, au, 2, 3, 8, 12, 8) == best2x3, "auto on 2x3 took %s, not the lowest",
        wf_gemm_algo_names[au]);
  /* SUMMA on W x H walks K (= 24 here) in the intervals between A's cuts (ka = 12 on 2x3)
   * and B's (kb = 8): [0,8) [8,12) [12,16) [16,24). Each starts a B block (3 of them, 8 x 8
   * words), the 1st and 3rd an A block (2, 8 x 12); none covers a whole A block, so each
   * copies its A columns out (8 (hi - lo)); the multiplies total m K n. */
  {
    int64_t f = t.fmac_per_cycle, lat1 = t.hop_cycles + 2 * t.ramp_cycles + 1;
    int64_t want = 8 * 8 + 2 * 8 * 12 + 3 * 8 * 8 + 8 * 24 + (8 * 8 * 8 + f - 1) / f * 2 +
                   (8 * 4 * 8 + f - 1) / f * 2 + lat1 + (lat1 + t.hop_cycles);
    CHECK(wf_gemm_summa_cost(&t, 2, 3, 8, 12, 8, 8) == want, "summa 2x3: %lld, want %lld",
          (long long)wf_gemm_summa_cost(&t, 2, 3, 8, 12, 8, 8), (long long)want);
    /* predict derives kb = ceil(12 * 2 / 3) = 8 from ka */
    CHECK(wf_gemm_predict(&t, WF_GEMM_SUMMA, 2, 3, 8, 12, 8) == want, "summa predict 2x3");
    /* 3x2: ka = 8, kb = 12; [0,8) is A's whole block 0 (no copy), [8,12) [12,16) halves
     * of block 1, [16,24) all of block 2 */
    int64_t want32 = 8 * 8 + 3 * 8 * 8 + 2 * 12 * 8 + 8 * 8 + (8 * 8 * 8 + f - 1) / f * 2 +
                     (8 * 4 * 8 + f - 1) / f * 2 + lat1 + (lat1 + t.hop_cycles);
    CHECK(wf_gemm_summa_cost(&t, 3, 2, 8, 8, 12, 8) == want32, "summa 3x2: %lld, want %lld",
          (long long)wf_gemm_summa_cost(&t, 3, 2, 8, 8, 12, 8), (long long)want32);
    /* One PE along an axis: nothing moves along it (1x4: A whole on every PE, K = 4 kb) */
    int64_t want14 = 8 * 8 + 4 * 3 * 8 + 8 * 12 + (8 * 3 * 8 + f - 1) / f * 4 + lat1 + 2 * t.hop_cycles;
    CHECK(wf_gemm_summa_cost(&t, 1, 4, 8, 12, 3, 8) == want14, "summa 1x4: %lld, want %lld",
          (long long)wf_gemm_summa_cost(&t, 1, 4, 8, 12, 3, 8), (long long)want14);
    /* A square region: the square formula mn + N (mk + kn + mac) + 2 lat(N - 1) */
    for (int N = 2; N <= 32; N *= 2) {
      int64_t sq = 8 * 8 + N * (8 * 12 + 12 * 8 + (8 * 12 * 8 + f - 1) / f) +
                   2 * ((N - 1) * t.hop_cycles + 2 * t.ramp_cycles + 1);
      CHECK(wf_gemm_summa_cost(&t, N, N, 8, 12, 12, 8) == sq, "summa %dx%d: not the square formula", N, N);
    }
  }
  wf_gemm_algo p;
  CHECK(wf_gemm_algo_parse("allgather", &p) == 0 && p == WF_GEMM_ALLGATHER, "allgather does not parse");
  CHECK(wf_gemm_algo_parse("bogus", &p) == -1, "an unknown name parses");
  return wf_test_result("test_gemm_cost");
}
