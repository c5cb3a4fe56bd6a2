/* Cost formulas of the dist.gemm algorithms (docs/gemm.md, "Predicted cycles"), written from
 * the runtime's rules (docs/cycle-model.md) and the papers' per-step analysis, not fitted
 * to simulated numbers. Notation: a square N x N region, blocks m x k (A), k x n (B);
 * mac = ceil(m k n / fmac), lat(d) = d*hop + 2 T_R + 1 (a message over d hops: two ramps,
 * the hops and the store cycle). */
#include <string.h>

#include "backend/gemm_algos.h"

const char *const wf_gemm_algo_names[WF_GEMM_COUNT] = {"meshgemm", "cannon", "summa", "allgather"};

int wf_gemm_algo_parse(const char *name, wf_gemm_algo *out) {
  for (int a = 0; a < WF_GEMM_COUNT; a++)
    if (strcmp(name, wf_gemm_algo_names[a]) == 0) {
      *out = (wf_gemm_algo)a;
      return 0;
    }
  return -1;
}

static int64_t lat(const wf_target *t, int64_t hops) { return hops * t->hop_cycles + 2 * t->ramp_cycles + 1; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Cyclic shift (MeshGEMM, Cannon). Both blocks leave through the one ramp, so a shift costs
 * m k + k n cycles plus the latency of the longest ring link (2 hops on the INTERLEAVE ring,
 * N-1 for Cannon's wrap-around). Alignment: up to N-1 shifts with no compute to hide them;
 * then N steps that overlap the next shift with the multiply (double buffering), the last
 * without a shift. A final copy re-homes the aligned blocks on some rows (m k + k n). */
static int64_t shift_cost(const wf_target *t, int N, int64_t link_hops, int64_t m, int64_t k, int64_t n,
                          int64_t mac) {
  if (N == 1) return m * n + mac;
  int64_t shift = m * k + k * n + lat(t, link_hops);
  int64_t align = (int64_t)(N - 1) * shift + m * k + k * n;
  return m * n + align + (int64_t)(N - 1) * max64(mac, shift) + mac;
}

int64_t wf_gemm_predict(const wf_target *t, wf_gemm_algo a, int w, int h, int64_t m, int64_t k,
                        int64_t n) {
  if (w < 1 || h < 1) return -1;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  int64_t mac = (m * k * n + f - 1) / f;
  if (a == WF_GEMM_ALLGATHER && w != h) {
    /* W x H: W rounds of A blocks (m k) and H of B blocks (k' n, k' = k W / H, K's share per
     * row of PEs), then W multiplies of m k n */
    if (w * h == 1) return m * n + mac;
    int64_t kb = (k * w + h - 1) / h;
    int64_t brows = k * w > kb * h ? k * w : kb * h; /* the B panel is zero-padded to W k rows */
    return m * n + (int64_t)w * m * k + (int64_t)h * kb * n + lat(t, w - 1) + lat(t, h - 1) +
           (m * k + kb * n) + (brows - kb * h) * n + (int64_t)w * mac;
  }
  if (a == WF_GEMM_SUMMA) /* A's K blocks are k wide; B's, k' = ceil(k w / h) (K = w k) */
    return wf_gemm_summa_cost(t, w, h, m, k, (k * w + h - 1) / h, n);
  if (w != h) /* meshgemm and cannon: the lcm virtual grid (gemm_cost_rect.c) */
    return a == WF_GEMM_MESHGEMM || a == WF_GEMM_CANNON
               ? wf_gemm_rect_shift_cost(t, a == WF_GEMM_MESHGEMM, w, h, m, k, n)
               : -1;
  int N = w;
  switch (a) {
    case WF_GEMM_MESHGEMM:
      return shift_cost(t, N, N > 2 ? 2 : 1, m, k, n, mac);
    case WF_GEMM_CANNON:
      return shift_cost(t, N, N - 1, m, k, n, mac);
    case WF_GEMM_ALLGATHER:
      /* N gather rounds, each a blocking row broadcast of A then a column broadcast of B
       * (m k + k n through the receiving ramp; only the first round pays the farthest PE's
       * distance, as for SUMMA), then N multiplies back to back. The same sum as SUMMA:
       * gathering first moves no fewer wavelets, it only delays the compute and costs
       * N (m k + k n) floats of panels. The owners copy their own blocks into the panels
       * after the last round (lower_gemm_allgather.c). */
      if (N == 1) return m * n + mac;
      /* + each PE's copy of its own two blocks into their panel slots */
      return m * n + (int64_t)N * (m * k + k * n) + 2 * lat(t, N - 1) + (m * k + k * n) +
             (int64_t)N * mac;
    default:
      return -1;
  }
}

/* SUMMA on w x h (lower_matmul.c): K is walked in the intervals between consecutive cuts of
 * A's blocks (multiples of ka) and B's (multiples of kb) up to min(w ka, h kb). Each step is a
 * blocking row broadcast of A (when an A block starts), a column broadcast of B (when a B
 * block starts), a copy2d of A's columns when the interval is only part of A's block, then
 * the multiply: nothing overlaps within a PE. The broadcasts pipeline across steps, so only
 * the first pays the distance to the farthest PE of the row and of the column. On a square
 * region (ka = kb) this is mn + N (mk + kn + mac) + 2 lat(N-1). */
int64_t wf_gemm_summa_cost(const wf_target *t, int w, int h, int64_t m, int64_t ka, int64_t kb,
                           int64_t n) {
  if (w < 1 || h < 1 || ka < 1 || kb < 1) return -1;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  if (w * h == 1) return m * n + (m * ka * n + f - 1) / f;
  int64_t end = w * ka < h * kb ? w * ka : h * kb, c = m * n;
  for (int64_t lo = 0, hi; lo < end; lo = hi) {
    int64_t j = lo / ka, i = lo / kb;
    hi = (j + 1) * ka < (i + 1) * kb ? (j + 1) * ka : (i + 1) * kb;
    if (end < hi) hi = end;
    if (w > 1 && lo == j * ka) c += m * ka;
    if (h > 1 && lo == i * kb) c += kb * n;
    if (lo != j * ka || hi - lo != ka) c += m * (hi - lo); /* copy2d */
    c += (m * (hi - lo) * n + f - 1) / f;
  }
  return c + (w > 1 ? lat(t, w - 1) : 0) + (h > 1 ? lat(t, h - 1) : 0);
}

wf_gemm_algo wf_gemm_auto(const wf_target *t, int w, int h, int64_t m, int64_t k, int64_t n) {
  wf_gemm_algo best = WF_GEMM_SUMMA;
  int64_t bc = -1;
  for (int a = 0; a < WF_GEMM_COUNT; a++) {
    int64_t c = wf_gemm_predict(t, (wf_gemm_algo)a, w, h, m, k, n);
    if (c >= 0 && (bc < 0 || c < bc)) {
      bc = c;
      best = (wf_gemm_algo)a;
    }
  }
  return best;
}
