/* Predicted cycles of MeshGEMM and Cannon on a W x H region, W != H (the lcm virtual grid,
 * backend/lower_gemm_rect.c; docs/gemm.md "Predicted cycles"). Written from the lowering's
 * structure and the runtime's rules (docs/cycle-model.md), not fitted.
 *
 * L = lcm(W, H); a PE holds v_x v_y tiles of A (mt x kt), B (kt x nt) and C; along an axis
 * with v positions per PE, a virtual shift sends s tiles per tile row (0 on a 1-PE axis, 1 on
 * Cannon's ring and on INTERLEAVE with v = 1, up to 2 on INTERLEAVE with v >= 2) and copies
 * up to c locally (v - 1; all v on a 1-PE axis), over links of `hops` hops. One step's sends
 * leave through the ramp while the PE copies and multiplies (double buffering):
 *
 *   step   = max(copies + mac_s, sends + lat(hops))        mac_s = v_x v_y ceil(mt kt nt / f)
 *            (Cannon renaming its slots, wf_gemm_rect_cannon_period > 0: no copies)
 *   align  = sum over both operands of (the most line shifts one PE makes) x (one line's
 *            sends or copies, the longer) + lat(hops) per shift of the busier operand: each
 *            virtual row (column) shifts on its own, (-pos(I)) mod L times on INTERLEAVE, I
 *            times on Cannon's ring; A's row o and B's column o shift together, then join
 *   total  = zero C + gathers (m ka + kb n) + align + fixup (v_x v_y (a + b))
 *            + (L - 1) step + mac_s + copy-back of C (m n, unless C accumulates in place) */
#include "backend/gemm_algos.h"

static int64_t lat(const wf_target *t, int64_t hops) { return hops * t->hop_cycles + 2 * t->ramp_cycles + 1; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

typedef struct { int64_t sends, copies, hops; } axis_cost;

/* Shifts of virtual line I in the alignment: (-pos(I)) mod L (INTERLEAVE) or I (Cannon). */
static int64_t shifts(int meshgemm, int L, int64_t I) {
  if (!meshgemm) return I;
  return I == 0 ? 0 : I % 2 == 0 ? L - I / 2 : (I + 1) / 2;
}

/* The most shifts one PE makes for the v lines it holds, over the `len` PEs of the other axis
 * (the alignment shifts one line of tiles at a time). */
static int64_t busiest(int meshgemm, int L, int v, int len) {
  int64_t most = 0;
  for (int p = 0; p < len; p++) {
    int64_t c = 0;
    for (int o = 0; o < v; o++) c += shifts(meshgemm, L, (int64_t)v * p + o);
    most = max64(most, c);
  }
  return most;
}

static axis_cost axis(int meshgemm, int v, int len) {
  axis_cost c = {0, v, 0};
  if (len == 1) return c; /* every virtual shift is local */
  c.copies = v - 1;
  c.sends = meshgemm && v > 1 ? (len > 2 ? 2 : 1) : 1;
  c.hops = !meshgemm ? len - 1 : v > 1 ? 1 : len > 2 ? 2 : 1;
  if (meshgemm && v == 1) c.copies = 0;
  return c;
}

int wf_gemm_rect_cannon_period(int w, int h) {
  if (w == h) return 0;
  int L = w / gcd(w, h) * h, vx = L / w, vy = L / h;
  int sx = w == 1 ? vx : vx + 1, sy = h == 1 ? vy : vy + 1;
  int64_t p = (int64_t)sx / gcd(sx, sy) * sy;
  /* the unrolled period holds p v_x v_y multiplies: keep the program small */
  return p * vx * vy <= WF_GEMM_RECT_MAX_UNROLL ? (int)p : 0;
}

int64_t wf_gemm_rect_shift_cost(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka,
                                int64_t n) {
  if (w < 1 || h < 1 || m < 1 || ka < 1 || n < 1) return -1;
  int L = w / gcd(w, h) * h, vx = L / w, vy = L / h;
  if (w > 1 && ka % vx) return -1; /* K does not cut in L tiles (wf_gemm_rect_k_fits) */
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  /* w = 1: A's block is the whole K, cut in B's blocks of ceil(K / h) */
  int64_t kt = (ka + vx - 1) / vx, mt = (m + vy - 1) / vy, nt = (n + vx - 1) / vx;
  int64_t a = mt * kt, b = kt * nt, mac_s = (int64_t)vx * vy * ((mt * kt * nt + f - 1) / f);
  axis_cost cx = axis(meshgemm, vx, w), cy = axis(meshgemm, vy, h);
  int64_t hop = lat(t, max64(cx.hops, cy.hops));
  int64_t copies = cx.copies * vy * a + cy.copies * vx * b, sends = cx.sends * vy * a + cy.sends * vx * b;
  if (!meshgemm && wf_gemm_rect_cannon_period(w, h)) copies = 0; /* the steps rename slots */
  int64_t step = max64(copies + mac_s, sends + hop);
  /* Alignment: the busiest line of PEs; a row of tiles costs its sends (plus the link) or its
   * copies, whichever is longer, each time it shifts. */
  int64_t na = busiest(meshgemm, L, vy, h), nb = busiest(meshgemm, L, vx, w);
  int64_t align = na * max64(cx.copies, cx.sends) * a + nb * max64(cy.copies, cy.sends) * b +
                  max64(cx.sends ? na : 0, cy.sends ? nb : 0) * hop;
  int direct = vx == 1 && m == vy * mt;
  int64_t c = (int64_t)vx * vy * mt * nt + m * ka + vy * kt * n + align + (int64_t)vx * vy * (a + b) +
              (int64_t)(L - 1) * step + mac_s + (direct ? 0 : m * n);
  if (m < vy * mt || ka < vx * kt) c += (int64_t)vx * vy * a; /* ragged tiles: zeroed first */
  if (n < vx * nt) c += (int64_t)vx * vy * b;
  return c;
}

wf_gemm_algo wf_gemm_auto_for_k(const wf_target *t, int w, int h, int64_t m, int64_t k, int64_t n,
                                int64_t K) {
  wf_gemm_algo a = wf_gemm_auto(t, w, h, m, k, n);
  if (w == h || wf_gemm_rect_k_fits(w, h, K) || (a != WF_GEMM_MESHGEMM && a != WF_GEMM_CANNON)) return a;
  /* the shift algorithms cannot cut this K on w x h: the best of the others */
  wf_gemm_algo best = WF_GEMM_SUMMA;
  int64_t bc = -1;
  for (int i = 0; i < WF_GEMM_COUNT; i++) {
    if (i == WF_GEMM_MESHGEMM || i == WF_GEMM_CANNON) continue;
    int64_t c = wf_gemm_predict(t, (wf_gemm_algo)i, w, h, m, k, n);
    if (c >= 0 && (bc < 0 || c < bc)) {
      bc = c;
      best = (wf_gemm_algo)i;
    }
  }
  return best;
}
