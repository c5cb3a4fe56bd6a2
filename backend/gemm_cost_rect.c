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
 *            (Cannon renaming its slots, wf_gemm_rect_cannon_period > 0: no copies, in
 *            the steps and the alignment, and no fixup)
 *   align  = sum over both operands of (the most line shifts one PE makes) x (one line's
 *            sends or copies, the longer) + lat(hops) per shift of the busier operand: each
 *            virtual row (column) shifts on its own, (-pos(I)) mod L times on INTERLEAVE, I
 *            times on Cannon's ring; A's row o and B's column o shift together, then join
 *   total  = gathers (m ka + kb n) - what alignment round (0, o) hides of line o + 1's
 *            + align + fixup (v_x v_y (a + b)); zeroing C hides in later rounds
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

/* MeshGEMM's renamed slots along an axis of v positions per PE, n PEs (lower_gemm_rect.c,
 * mesh_step): a middle PE's even and odd INTERLEAVE positions form two chains that slide one
 * index per step (ceil(v/2) and floor(v/2) tiles and a free slot each: periods chain length
 * + 1); an end PE's join into a U of v tiles and a free slot (period v + 1), unless the ends
 * copy their turning tile (`turns`: they keep the middle's chains); a 1-PE axis is a cycle
 * of v; v = 1 double buffers. */
static int lcm_i(int a, int b) { return a / gcd(a, b) * b; }

static int axis_period(int v, int n, int turns) {
  if (v == 1) return 2;
  if (n == 1) return v;
  int mid = lcm_i((v + 1) / 2 + 1, v / 2 + 1);
  return turns ? mid : lcm_i(mid, v + 1);
}

/* Slot maps the multiplies are written for: per parity of the coordinate (v odd), and
 * without `turns` per role (first, last, the middle parities that occur). */
static int axis_maps(int v, int n, int turns) {
  if (v == 1 || n == 1) return 1;
  int np = v % 2 ? 2 : 1;
  if (turns) return np;
  int k = 2;
  for (int p = 0; p < np; p++) {
    int any = 0;
    for (int c = 1; c < n - 1; c++) any |= np == 1 || c % 2 == p;
    k += any;
  }
  return k;
}

int wf_gemm_rect_meshgemm_period(int w, int h, int *turns) {
  *turns = 0;
  if (w == h) return 0;
  int L = w / gcd(w, h) * h, vx = L / w, vy = L / h;
  for (int t = 0; t < 2; t++) {
    int64_t p = lcm_i(axis_period(vx, w, t), axis_period(vy, h, t));
    if (p * vx * vy * axis_maps(vx, w, t) * axis_maps(vy, h, t) <= WF_GEMM_RECT_MAX_UNROLL) {
      *turns = t;
      return (int)p;
    }
  }
  return 0;
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
  int turns = 0;
  if (meshgemm && wf_gemm_rect_meshgemm_period(w, h, &turns))
    /* renamed; with `turns` a line's end PEs copy their turning tile (a corner: both axes) */
    copies = turns ? (w > 1 && vx > 1 ? vy * a : 0) + (h > 1 && vy > 1 ? vx * b : 0) : 0;
  int rename = !meshgemm && wf_gemm_rect_cannon_period(w, h);
  int64_t step = max64(copies + mac_s, sends + hop);
  /* Alignment: the busiest line of PEs; a row of tiles costs its sends (plus the link) or its
   * copies, whichever is longer, each time it shifts. Renaming Cannon copies nothing: a
   * shift is its one tile on the ramp (a 1-PE axis: nothing), and no row ends in buffer 1. */
  int64_t na = busiest(meshgemm, L, vy, h), nb = busiest(meshgemm, L, vx, w);
  int64_t ca = rename ? 0 : cx.copies, cb = rename ? 0 : cy.copies;
  int64_t align = na * max64(ca, cx.sends) * a + nb * max64(cb, cy.sends) * b +
                  max64(cx.sends ? na : 0, cy.sends ? nb : 0) * hop;
  int64_t fixup = rename ? 0 : (int64_t)vx * vy * (a + b);
  int direct = vx == 1 && m == vy * mt;
  /* C's zeroing and the gathers of lines 1.. run in alignment rounds while the PE waits:
   * C's is hidden; line o + 1's gathers as far as round (0, o)'s streams outlast its copies */
  int no = vx > vy ? vx : vy;
  int64_t round = max64(0, cx.sends * a + cy.sends * b + hop - ca * a - cb * b), hidden = 0;
  for (int o = 0; o + 1 < no; o++) {
    int64_t g = (o + 1 < vy ? vx * a : 0) + (o + 1 < vx ? vy * b : 0);
    hidden += g < round ? g : round;
  }
  int64_t c = m * ka + vy * kt * n - hidden + align + fixup + (int64_t)(L - 1) * step + mac_s +
              (direct ? 0 : m * n);
  /* ragged tiles: zeroed first (renaming Cannon: every slot, one more per row) */
  int64_t sx = rename && w > 1 ? vx + 1 : vx, sy = rename && h > 1 ? vy + 1 : vy;
  if (m < vy * mt || ka < vx * kt) c += sx * vy * a;
  if (n < vx * nt) c += sy * vx * b;
  return c;
}
