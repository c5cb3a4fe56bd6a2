/* The dist.gemm cost models (backend/gemm/gemm_cost.c, gemm_cost_rect.c) as --gemm-algo=auto uses
 * them: every algorithm with a lowering has a prediction (allgather included), none is
 * cheaper than the compute alone or than moving its own bytes, auto takes the minimum;
 * Cannon's wrap link is paid as the PEs wait for it (not every step: below the paper's
 * per-step bound); SUMMA walks its K intervals, and its and allgather's blocking broadcasts
 * followed PE by PE give a hand-computed value on 2x2 (the one waferrun measures). */
#include <stdlib.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_kcut.h"
#include "wf_test.h"

int main(void) {
  wf_test_targets();
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
      if (N >= 8) { /* the paper's Cannon: every step waits for the N-1-hop wrap link */
        int64_t sh = m * k + k * n + (N - 1) * t.hop_cycles + 2 * t.ramp_cycles + 1;
        int64_t paper = m * n + (N - 1) * sh + m * k + k * n + (N - 1) * (mac > sh ? mac : sh) + mac;
        CHECK(mac > sh || wf_gemm_predict(&t, WF_GEMM_CANNON, N, N, m, k, n) < paper,
              "%dx%d: Cannon predicted at the per-step wrap bound %lld", N, N, (long long)paper);
      }
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
   * copies its A columns out (8 (hi - lo)); the multiplies total m K n. That much every PE
   * does; the broadcasts' latency comes on top, at least the farthest PE's once per axis and
   * at most once per step and axis. */
  {
    int64_t f = t.fmac_per_cycle, lat1 = t.hop_cycles + 2 * t.ramp_cycles + 1;
    int64_t base = 8 * 8 + 2 * 8 * 12 + 3 * 8 * 8 + 8 * 24 + (8 * 8 * 8 + f - 1) / f * 2 + (8 * 4 * 8 + f - 1) / f * 2;
    int64_t s23 = wf_gemm_summa_cost(&t, 2, 3, 8, 12, 8, 8);
    CHECK(s23 >= base + lat1 + (lat1 + t.hop_cycles) && s23 <= base + 4 * (lat1 + lat1 + t.hop_cycles),
          "summa 2x3: %lld", (long long)s23);
    /* predict derives kb = ceil(12 * 2 / 3) = 8 from ka */
    CHECK(wf_gemm_predict(&t, WF_GEMM_SUMMA, 2, 3, 8, 12, 8) == s23, "summa predict 2x3");
    /* 3x2: ka = 8, kb = 12; [0,8) is A's whole block 0 (no copy), [8,12) [12,16) halves
     * of block 1, [16,24) all of block 2 */
    int64_t base32 = 8 * 8 + 3 * 8 * 8 + 2 * 12 * 8 + 8 * 8 + (8 * 8 * 8 + f - 1) / f * 2 + (8 * 4 * 8 + f - 1) / f * 2;
    int64_t s32 = wf_gemm_summa_cost(&t, 3, 2, 8, 8, 12, 8);
    CHECK(s32 >= base32 + lat1 + (lat1 + t.hop_cycles) && s32 <= base32 + 4 * (lat1 + lat1 + t.hop_cycles),
          "summa 3x2: %lld", (long long)s32);
    /* One PE along an axis: nothing moves along it (1x4: A whole on every PE, K = 4 kb) */
    int64_t base14 = 8 * 8 + 4 * 3 * 8 + 8 * 12 + (8 * 3 * 8 + f - 1) / f * 4;
    int64_t s14 = wf_gemm_summa_cost(&t, 1, 4, 8, 12, 3, 8);
    CHECK(s14 >= base14 + lat1 + 2 * t.hop_cycles && s14 <= base14 + 4 * (lat1 + 2 * t.hop_cycles),
          "summa 1x4: %lld", (long long)s14);
    /* A square region: the same walk, N steps of mk + kn + mac */
    for (int N = 2; N <= 32; N *= 2) {
      int64_t lo = 8 * 8 + N * (8 * 12 + 12 * 8 + (8 * 12 * 8 + f - 1) / f), latn = (N - 1) * t.hop_cycles + 2 * t.ramp_cycles + 1;
      int64_t sq = wf_gemm_summa_cost(&t, N, N, 8, 12, 12, 8);
      CHECK(sq >= lo + 2 * latn && sq <= lo + 2 * N * latn, "summa %dx%d: %lld", N, N, (long long)sq);
    }
    /* 2x2, 1x1 blocks, by hand (lat(1) = 6 on wse2): C zeroed at 1. SUMMA step 0: A's roots
     * (0, y) done at 2, (1, y) receive by 1 + 1 - 1 + 6 = 7; B's root (0, 0) at 3, (0, 1)
     * receives from it by 8, root (1, 0) at 8, (1, 1) by 13; + 1 multiply: 4, 9, 9, 14.
     * Step 1: A from (1, y): (0, 0) by 9 + 6 = 15, (0, 1) by 14 + 6 = 20, roots 10 and 15;
     * B from (x, 1): (0, 0) by 20 + 6 = 26, (1, 0) by 21; + 1: the latest is 27. Allgather:
     * the same rounds without the multiplies (latest 25), then its own two blocks copied and
     * two multiplies: 29. Each of the four broadcasts first sets every PE's router to its
     * role (one swset cycle, lower_util.c), which every later step inherits: +4, 31 and 33.
     * waferrun measures 31 and 33 for these plans. */
    if (t.hop_cycles == 1 && t.ramp_cycles == 2 && f == 1) {
      CHECK(wf_gemm_predict(&t, WF_GEMM_SUMMA, 2, 2, 1, 1, 1) == 31, "summa 2x2 1x1x1: %lld",
            (long long)wf_gemm_predict(&t, WF_GEMM_SUMMA, 2, 2, 1, 1, 1));
      CHECK(wf_gemm_predict(&t, WF_GEMM_ALLGATHER, 2, 2, 1, 1, 1) == 33, "allgather 2x2 1x1x1: %lld",
            (long long)wf_gemm_predict(&t, WF_GEMM_ALLGATHER, 2, 2, 1, 1, 1));
    }
  }
  /* The one-buffer schedule (--gemm-buffers=1): three buffers of the larger block instead of
   * two per operand (less memory while the blocks are within 2x of each other: 4x6 and 6x3
   * here; at 4x6 and 6x2 the two layouts hold the same); on a square region only; never
   * cheaper than double buffering, and at least the multiplies plus, after each but the
   * last, B's block read up the ramp (it has nowhere to go while the multiply reads B). */
  for (int N = 2; N <= 32; N *= 2)
    for (int mg = 0; mg < 2; mg++) {
      wf_gemm_algo a = mg ? WF_GEMM_MESHGEMM : WF_GEMM_CANNON;
      wf_gemm_bufs b1, b2;
      wf_gemm_buffers(a, 1, N, N, 4, 6, 6, 3, &b1);
      wf_gemm_buffers(a, 2, N, N, 4, 6, 6, 3, &b2);
      CHECK(b1.a0 == 24 && b1.b0 == 24 && b1.a1 == 24 && b1.b1 == 0, "1 buffer on %dx%d: %lld %lld %lld %lld", N, N,
            (long long)b1.a0, (long long)b1.b0, (long long)b1.a1, (long long)b1.b1);
      CHECK(b1.a0 + b1.a1 + b1.b0 + b1.b1 < b2.a0 + b2.a1 + b2.b0 + b2.b1, "1 buffer holds no less on %dx%d", N, N);
      wf_gemm_buffers(a, 1, N, N, 4, 6, 6, 2, &b1);
      wf_gemm_buffers(a, 2, N, N, 4, 6, 6, 2, &b2);
      CHECK(b1.a0 + b1.a1 + b1.b0 + b1.b1 == b2.a0 + b2.a1 + b2.b0 + b2.b1, "4x6, 6x2 on %dx%d", N, N);
      int64_t one = wf_gemm_shift_cost(&t, mg, N, N, 2, 2, 2, 2, 0, 1, NULL);
      int64_t two = wf_gemm_shift_cost(&t, mg, N, N, 2, 2, 2, 2, 0, 2, NULL);
      int64_t f = t.fmac_per_cycle > 0 ? t.fmac_per_cycle : 1;
      CHECK(one >= two, "%s %dx%d: 1 buffer %lld, 2 buffers %lld", wf_gemm_algo_names[a], N, N, (long long)one,
            (long long)two);
      CHECK(one >= N * ((8 + f - 1) / f) + (N - 1) * 4, "%s %dx%d: 1 buffer %lld below its steps",
            wf_gemm_algo_names[a], N, N, (long long)one);
    }
  CHECK(wf_gemm_shift_cost(&t, 1, 2, 3, 4, 6, 4, 4, 0, 1, NULL) == -1, "1 buffer on 2x3 has no lowering");
  int nb = -1;
  CHECK(wf_gemm_buffers_parse("1", &nb) == 0 && nb == 1 && wf_gemm_buffers_parse("auto", &nb) == 0 &&
            nb == WF_GEMM_BUFFERS_AUTO && wf_gemm_buffers_parse("3", &nb) == -1,
        "--gemm-buffers values");
  wf_gemm_algo p;
  CHECK(wf_gemm_algo_parse("allgather", &p) == 0 && p == WF_GEMM_ALLGATHER, "allgather does not parse");
  CHECK(wf_gemm_algo_parse("bogus", &p) == -1, "an unknown name parses");
  return wf_test_result("test_gemm_cost");
}
