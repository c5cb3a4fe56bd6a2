/* Predicted cycles of MeshGEMM and Cannon (docs/gemm.md "Predicted cycles"): on W x H the lcm
 * virtual grid (backend/gemm/lower_gemm_rect.c), on a square region the same with one tile per PE
 * (lower_gemm_shift.c). Written from the lowering's structure and the runtime's rules
 * (docs/cycle-model.md), not fitted: the emitted rounds are followed PE by PE (the schedule
 * below), and the prediction is the latest PE.
 *
 * L = lcm(W, H); a PE holds v_x v_y tiles of A (mt x kt), B (kt x nt) and C; along an axis
 * with v positions per PE, a virtual shift sends s tiles per tile row (0 on a 1-PE axis, 1 on
 * Cannon's ring and on INTERLEAVE with v = 1, up to 2 on INTERLEAVE with v >= 2) and copies
 * up to c locally (v - 1; all v on a 1-PE axis; none where the lowering renames slots), over
 * links of `hops` hops. Also here: the tile slots and buffers the lowering allocates
 * (wf_gemm_rect_buffers), and the renaming periods. */
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_preskew.h"
#include "backend/collectives/ring_line.h"
#include "ir/support/intmath.h"
#include "waferc/diag.h"

static int64_t lat(const wf_target *t, int64_t hops) { return hops * t->hop_cycles + 2 * t->ramp_cycles + 1; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct { int64_t sends, copies, hops; } axis_cost;

/* Shifts of virtual line I in the alignment: (-pos(I)) mod L (INTERLEAVE) or I (Cannon);
 * both ways round (a square region, wf_gemm_align_both): INTERLEAVE odd I (I + 1) / 2
 * forward, even I I / 2 backward (lower_gemm_meshgemm.c, interleave_align_both); Cannon the
 * fewer of I forward and L - I backward (lower_gemm_cannon.c, plain_align_both). */
static int64_t shifts(int meshgemm, int both, int L, int64_t I) {
  if (both && meshgemm) return I % 2 ? (I + 1) / 2 : I / 2;
  if (both) return 2 * I > L ? L - I : I;
  if (!meshgemm) return I;
  return I == 0 ? 0 : I % 2 == 0 ? L - I / 2 : (I + 1) / 2;
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

int wf_gemm_align_both(int w, int h, int preskew) {
  /* on 3 x 3 only when both operands align: one saves a single shift there, which the
   * re-homing copy and the ctl and teardown take back (docs/gemm.md) */
  return w == h && (w >= 4 || (w == 3 && !preskew)) && preskew != (WF_PRESKEW_A | WF_PRESKEW_B);
}

int wf_gemm_single_c_spare(int64_t m, int64_t k, int64_t n, int preskew) {
  if (preskew & (WF_PRESKEW_A | WF_PRESKEW_B)) return 0;
  return m * n >= k * n ? WF_PRESKEW_B : m * n >= m * k ? WF_PRESKEW_A : 0;
}

int wf_gemm_rect_cannon_period(int w, int h) {
  if (w == h) return 0;
  int L = (int)wf_lcm(w, h), vx = L / w, vy = L / h;
  int sx = w == 1 ? vx : vx + 1, sy = h == 1 ? vy : vy + 1;
  int64_t p = wf_lcm(sx, sy);
  /* the unrolled period holds p v_x v_y multiplies: keep the program small */
  return p * vx * vy <= WF_GEMM_RECT_MAX_UNROLL ? (int)p : 0;
}

/* MeshGEMM's renamed slots along an axis of v positions per PE, n PEs (lower_gemm_rect.c,
 * mesh_step): a middle PE's even and odd INTERLEAVE positions form two chains that slide one
 * index per step (ceil(v/2) and floor(v/2) tiles and a free slot each: periods chain length
 * + 1); an end PE's join into a U of v tiles and a free slot (period v + 1), unless the ends
 * copy their turning tile (`turns`: they keep the middle's chains); a 1-PE axis is a cycle
 * of v; v = 1 double buffers. */

static int axis_period(int v, int n, int turns) {
  if (v == 1) return 2;
  if (n == 1) return v;
  int mid = (int)wf_lcm((v + 1) / 2 + 1, v / 2 + 1);
  return turns ? mid : (int)wf_lcm(mid, v + 1);
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
  int L = (int)wf_lcm(w, h), vx = L / w, vy = L / h;
  for (int t = 0; t < 2; t++) {
    int64_t p = wf_lcm(axis_period(vx, w, t), axis_period(vy, h, t));
    if (p * vx * vy * axis_maps(vx, w, t) * axis_maps(vy, h, t) <= WF_GEMM_RECT_MAX_UNROLL) {
      *turns = t;
      return (int)p;
    }
  }
  return 0;
}

int wf_gemm_rect_cannon_slots(int v, int len) { return len == 1 ? v : v + 1; }
int wf_gemm_rect_mesh_slots(int v) { return v == 1 ? 2 : v + 2; }

void wf_gemm_rect_buffers(int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                          wf_gemm_bufs *out) {
  int L = (int)wf_lcm(w, h), vx = L / w, vy = L / h, turns;
  /* lower_gemm_rect.c: w = 1 cuts A's whole K like B's blocks */
  int64_t kt = w == 1 ? kb : ka / vx, mt = (m + vy - 1) / vy, nt = (n + vx - 1) / vx;
  int64_t za = mt * kt, zb = kt * nt, zc = mt * nt;
  int period = meshgemm ? 0 : wf_gemm_rect_cannon_period(w, h);
  int mperiod = meshgemm ? wf_gemm_rect_meshgemm_period(w, h, &turns) : 0;
  out->sx = period ? wf_gemm_rect_cannon_slots(vx, w) : mperiod ? wf_gemm_rect_mesh_slots(vx) : vx;
  out->sy = period ? wf_gemm_rect_cannon_slots(vy, h) : mperiod ? wf_gemm_rect_mesh_slots(vy) : vy;
  out->a0 = (int64_t)out->sx * vy * za;
  out->b0 = (int64_t)out->sy * vx * zb;
  /* renaming Cannon's steps and alignment use buffer 0 only */
  out->a1 = period ? 0 : (int64_t)vx * vy * za;
  out->b1 = period ? 0 : (int64_t)vx * vy * zb;
  /* C accumulates in place when its tiles are its block's row bands */
  out->c = vx == 1 && m == vy * mt ? 0 : (int64_t)vx * vy * zc;
}

/* ---- The schedule (wf_gemm_rect_shift_cost) ----
 * Every PE runs the same rounds: the alignment's (iteration u, line o), then the L steps. In
 * a round a PE issues its streams (async sends and receives), does its own work (local
 * copies, multiplies, the gathers and zeroings the lowering placed in that round), then waits
 * for its streams. A round ends when the PE's work is done, its sends have left through its
 * ramp, and each tile it receives has arrived: its sender started the same round, so the
 * arrival is the sender's start + the words + lat(hops of that link). PEs start rounds at
 * different times (the first PE of a line shifts less, the wrap-around link is longer), and
 * the recurrence carries that over: a PE is held up only by the senders it waits for. */
typedef struct rect_sched {
  const wf_target *t;
  int meshgemm, rename, turns, w, h, L, vx, vy;
  int both;        /* the alignment goes both ways round (wf_gemm_align_both) */
  int aligning;    /* the alignment's rounds: backward lines receive from the other side */
  int ctl;         /* its first round: a backward line's blocks wait for the receiver's ctl */
  int serial;      /* one buffer: a PE issues its streams after its work, not with it */
  int64_t a, b, mac_s;
  axis_cost cx, cy;
  int nrows;       /* the rows of PEs followed (all, unless the grid is too large) */
  int *rows, *ridx; /* their y; ridx[y]: its index in rows, or -1 */
} rect_sched;

/* PE rows x rounds past which only some rows are followed (a few seconds of host time in a
 * Debug build otherwise on meshes like 64x60, L = 960): the first and last three and the one
 * whose A lines shift most. A PE whose B sender's row is not followed takes its own start
 * for the sender's (the rows start rounds at nearly the same time). */
#define RECT_SCHED_BUDGET (1 << 23)

/* Does line I shift in alignment iteration u? Cannon: I times, u < I (lower_gemm_cannon.c,
 * plain_align; rotate_align_line); INTERLEAVE: even u only, odd I while u < I, even I > 0
 * from u = I on (lower_gemm_meshgemm.c, interleave_align). */
static int shifts_at(int meshgemm, int both, int L, int64_t I, int u) {
  if (both) return u < shifts(meshgemm, both, L, I);
  if (!meshgemm) return u < I;
  if (u % 2) return 0;
  return I % 2 ? u < I : I > 0 && u >= I;
}

/* The PE a line's tile arrives from at coordinate c of a line of len PEs, and over how many
 * hops: Cannon c + 1 (the last PE: from PE 0 over the wrap, len - 1 hops); INTERLEAVE with
 * v >= 2 from both neighbours (1 hop; *second gets the other one, or -1); v = 1 the two-hop
 * ring: even c from c - 2, odd c from c + 2, at the ends the turn-arounds (1 hop). A line
 * that aligns backward (I, r->both) gets it from the PE c sends to going forward. */
static int back_line(const rect_sched *r, int64_t I);

static int ring_from_line(const rect_sched *r, int64_t I, int v, int len, int c, int *hops, int *second) {
  *second = -1;
  *hops = 1;
  if (back_line(r, I) && !r->meshgemm) { /* from c - 1; PE 0 over the wrap */
    if (c == 0) *hops = len - 1;
    return (c + len - 1) % len;
  }
  if (back_line(r, I)) {
    int to, from;
    wf_interleave(c, len, &to, &from);
    *hops = abs(to - c);
    return to;
  }
  if (!r->meshgemm) {
    if (c == len - 1) *hops = len - 1;
    return (c + 1) % len;
  }
  if (v > 1) {
    if (c > 0 && c + 1 < len) *second = c + 1;
    return c > 0 ? c - 1 : c + 1;
  }
  int from = c % 2 == 0 ? c - 2 : c + 2;
  if (from >= 0 && from < len) {
    *hops = 2;
    return from;
  }
  /* the turn-arounds (lower_gemm_meshgemm.c, interleave_routes): PE 0 from PE 1; an odd PE
   * with no PE two above from the last PE (len odd: it turns down), or, being the last
   * (len even), from the even PE below */
  if (c % 2 == 0) return c + 1;
  return c + 1 < len ? c + 1 : c - 1;
}

static int ring_from(const rect_sched *r, int v, int len, int c, int *hops, int *second) {
  return ring_from_line(r, 0, v, len, c, hops, second);
}

/* Line I aligns backward (r->both): a ctl turns its routers before, a teardown after. */
static int back_line(const rect_sched *r, int64_t I) {
  if (!r->both || !r->aligning) return 0;
  return r->meshgemm ? I % 2 == 0 && I > 0 : 2 * I > r->L;
}

/* One round for every PE: T[p] (start, in/out) of PE p = y w + x; work[p] its own cycles;
 * sa[p] / sb[p]: words of A / B it sends (0: that operand does not move on it). Its sends
 * leave through its one ramp in the order they are issued, A's first, B's db cycles into
 * the round at the earliest: A's last wavelet leaves at sa, B's at max(sa, db) + sb. A
 * receiver waits for the sender's last one of the operand (it may be the tile it gets) and
 * the link's latency. With r->serial (one buffer) the streams are issued after the work:
 * everything above starts work[p] cycles into the round, and a receive, the only stream in
 * flight to the PE, ends with the message's last wavelet stored: sa - 1 + lat(hops) after its
 * sender started (docs/cycle-model.md, a message; the trace of a 1-hop shift of 4 words
 * shows the 9 cycles). */
static int64_t b_out(int64_t sa, int64_t sb, int64_t db) { return sb ? max64(sa, db) + sb : sa; }

static void round_all(const rect_sched *r, int64_t *T, int64_t *nt, const int64_t *work, const int64_t *sa,
                      const int64_t *sb, int64_t db) {
  int w = r->w, h = r->h;
  for (int s = 0; s < r->nrows; s++)
    for (int x = 0; x < w; x++) {
      int y = r->rows[s], p = s * w + x, hp, sec, q;
      /* S(q): when PE q's streams start */
#define S(q) (T[q] + (r->serial ? work[q] - 1 : 0))
      int64_t e = max64(T[p] + work[p], S(p) + (r->serial ? 1 : 0) + b_out(sa[p], sb[p], db));
      if (sa[p] && w > 1) {
        q = s * w + ring_from_line(r, y, r->vx, w, x, &hp, &sec);
        e = max64(e, S(q) + sa[q] + lat(r->t, hp));
        /* the sender's router turns when p's ctl has crossed the link: its first wavelet
         * leaves hp hops after that */
        if (r->ctl && back_line(r, y)) e = max64(e, T[p] + sa[q] + lat(r->t, hp) + hp * r->t->hop_cycles);
        if (sec >= 0) q = s * w + sec, e = max64(e, S(q) + sa[q] + lat(r->t, hp));
      }
      if (sb[p] && h > 1) {
        int f = r->ridx[ring_from_line(r, x, r->vy, h, y, &hp, &sec)];
        q = f >= 0 ? f * w + x : p;
        e = max64(e, S(q) + b_out(sa[q], sb[q], db) + lat(r->t, hp));
        if (r->ctl && back_line(r, x)) e = max64(e, T[p] + b_out(sa[q], sb[q], db) + lat(r->t, hp) + hp * r->t->hop_cycles);
        if (sec >= 0) f = r->ridx[sec], q = f >= 0 ? f * w + x : p;
        if (sec >= 0) e = max64(e, S(q) + b_out(sa[q], sb[q], db) + lat(r->t, hp));
      }
#undef S
      nt[p] = e;
    }
  for (int p = 0; p < r->nrows * w; p++) T[p] = nt[p];
}

/* One step of the one-buffer schedule on a square region (lower_gemm_shift.c, steps_single):
 * A's send, the predecessor's A into the spare and B's first `early` words (its send goes
 * out behind A's on the ramp) are issued with the multiply, and a wait closes them; then
 * B's rest is sent and the predecessor's B received, and a wait. B's receive ends when its
 * last wavelet has arrived (its early part was sent in the first half of the sender's step,
 * the rest in its second half) and when the PE has read the b words up its ramp. The last
 * step only multiplies. w1: scratch for the first waits' ends. */
static void step_single(const rect_sched *r, int64_t *T, int64_t *nt, int64_t *w1, int shift) {
  int w = r->w, P = r->nrows * w, hp, sec;
  int64_t a = r->a, b = r->b, e = b < r->t->queue_depth ? b : r->t->queue_depth;
  if (!shift) {
    for (int p = 0; p < P; p++) T[p] += r->mac_s;
    return;
  }
  for (int s = 0; s < r->nrows; s++) /* the first wait */
    for (int x = 0; x < w; x++) {
      int p = s * w + x, q = s * w + ring_from(r, 1, w, x, &hp, &sec);
      nt[p] = max64(T[p] + max64(r->mac_s, a + e), T[q] + a + lat(r->t, hp));
    }
  memcpy(w1, nt, (size_t)P * sizeof *w1);
  for (int s = 0; s < r->nrows; s++) /* the second */
    for (int x = 0; x < w; x++) {
      int y = r->rows[s], p = s * w + x;
      int f = r->ridx[ring_from(r, 1, r->h, y, &hp, &sec)], q = f >= 0 ? f * w + x : p;
      int64_t in = e == b ? T[q] + a + b + lat(r->t, hp) : w1[q] + (b - e) + lat(r->t, hp);
      nt[p] = max64(w1[p] + b, in); /* (the late send's b - e words leave meanwhile) */
    }
  memcpy(T, nt, (size_t)P * sizeof *T);
}

/* Rows (or columns) of tile i of size sz inside a block of len (lower_gemm_rect.c, clip). */
static int64_t clip(int64_t len, int i, int64_t sz) { return len - i * sz < sz ? len - i * sz : sz; }

/* Words gather_line copies for line o of A (d = 0) or B (d = 1). */
static int64_t gather_words(int d, int o, int vx, int vy, int64_t m, int64_t ka, int64_t kb, int64_t n, int64_t mt,
                            int64_t kt, int64_t nt) {
  int64_t c = 0;
  for (int i = 0; i < (d ? vy : vx); i++) {
    int64_t rows = d ? clip(kb, i, kt) : clip(m, o, mt), cols = d ? clip(n, o, nt) : clip(ka, i, kt);
    if (rows > 0 && cols > 0) c += rows * cols;
  }
  return c;
}

int64_t wf_gemm_rect_shift_cost(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka,
                                int64_t kb, int64_t n) {
  return wf_gemm_shift_cost(t, meshgemm, w, h, m, ka, kb, n, 0, 2, NULL);
}

int64_t wf_gemm_shift_cost(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                           int64_t n, int preskew, int nbuf, int64_t *align) {
  return wf_gemm_shift_phases(t, meshgemm, w, h, m, ka, kb, n, preskew, nbuf, align, NULL);
}

int64_t wf_gemm_shift_phases(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                             int64_t n, int preskew, int nbuf, int64_t *align, int64_t phases[3]) {
  return wf_gemm_shift_sched(t, meshgemm, w, h, m, ka, kb, n, preskew, nbuf, align, phases, NULL);
}

int64_t wf_gemm_shift_sched(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                            int64_t n, int preskew, int nbuf, int64_t *align, int64_t phases[3], wf_row_skew *rs) {
  if (rs) rs->have_end = 0;
  if (w < 1 || h < 1 || m < 1 || ka < 1 || kb < 1 || n < 1 || w * h == 1) return -1;
  if (nbuf == 1 && w != h) return -1; /* no one-buffer lowering on the lcm grid */
  int one = nbuf == 1;
  int L = (int)wf_lcm(w, h), vx = L / w, vy = L / h;
  if (w > 1 && ka % vx) return -1; /* K does not cut in L tiles (wf_gemm_rect_k_fits) */
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  /* w = 1: A's block is the whole K, cut in B's blocks (lower_gemm_rect.c) */
  int64_t kt = w == 1 ? kb : ka / vx, mt = (m + vy - 1) / vy, nt = (n + vx - 1) / vx;
  int64_t a = mt * kt, b = kt * nt, zc = mt * nt;
  rect_sched r = {t, meshgemm, 0, 0, w, h, L, vx, vy, 0, 0, 0, 0, a, b, (int64_t)vx * vy * ((mt * kt * nt + f - 1) / f),
                  axis(meshgemm, vx, w), axis(meshgemm, vy, h), 0, NULL, NULL};
  r.rename = meshgemm ? wf_gemm_rect_meshgemm_period(w, h, &r.turns) > 0 : wf_gemm_rect_cannon_period(w, h) > 0;
  int cannon_rename = r.rename && !meshgemm;
  wf_gemm_bufs bf;
  /* the slots and C's tiles (the same for one buffer, whose three buffers only the lowering
   * and the SRAM check size: wf_gemm_buffers) */
  wf_gemm_rect_buffers(meshgemm, w, h, m, ka, kb, n, &bf);
  /* square MeshGEMM aligns both ways round (lower_gemm_shift.c) */
  r.both = wf_gemm_align_both(w, h, preskew);
  int no = vx > vy ? vx : vy, ustep = meshgemm ? 2 : 1, iters = r.both ? L / 2 : meshgemm ? 2 * L : L;
  r.rows = malloc((size_t)h * 2 * sizeof *r.rows);
  WF_ASSERT(r.rows);
  r.ridx = r.rows + h;
  for (int y = 0; y < h; y++) r.ridx[y] = -1;
  if ((int64_t)w * h * ((int64_t)iters * no + L) <= RECT_SCHED_BUDGET) {
    for (int y = 0; y < h; y++) r.ridx[y] = 0;
  } else {
    int64_t most = -1;
    int busy = 0;
    for (int y = 0; y < h; y++) {
      int64_t c = 0;
      for (int o = 0; o < vy; o++) c += shifts(meshgemm, r.both, L, (int64_t)vy * y + o);
      if (c > most) most = c, busy = y;
    }
    int pick[] = {0, 1, 2, h - 3, h - 2, h - 1, busy};
    for (int i = 0; i < 7; i++)
      if (pick[i] >= 0 && pick[i] < h) r.ridx[pick[i]] = 0;
  }
  r.nrows = 0;
  for (int y = 0; y < h; y++)
    if (r.ridx[y] == 0) r.ridx[y] = r.nrows, r.rows[r.nrows++] = y;
  int P = r.nrows * w;
  int64_t *T = calloc((size_t)P * 6, sizeof *T);
  WF_ASSERT(T);
  int64_t *nt_ = T + P, *work = T + 2 * P, *sa = T + 3 * P, *sb = T + 4 * P, *w1 = T + 5 * P;
  /* Before the alignment: ragged tiles' buffers zeroed, line 0 of both gathered. */
  int64_t pro = gather_words(0, 0, vx, vy, m, ka, kb, n, mt, kt, nt) + gather_words(1, 0, vx, vy, m, ka, kb, n, mt, kt, nt);
  if (m < vy * mt || ka < vx * kt) pro += (cannon_rename ? bf.sx : vx) * vy * a;
  if (n < vx * nt || kb < vy * kt) pro += (cannon_rename ? bf.sy : vy) * vx * b;
  /* a square region (lower_gemm_shift.c: one tile per PE, L = N) zeroes C first, or, when
   * the one-buffer alignment uses C's block as a spare, after the alignment */
  int cspare = one ? wf_gemm_single_c_spare(m, ka, n, preskew) : 0;
  if (w == h && !cspare) pro += m * n;
  /* every row followed: each starts when the op before let it (row_skew.h) */
  int all_rows = r.nrows == h;
  for (int p = 0; p < P; p++) T[p] = pro + (all_rows && rs && rs->start ? rs->start[p / w] : 0);
  /* Alignment rounds (u, o): A's line o (virtual row v_y y + o) and B's (column v_x x + o)
   * shift when shifts_at says; a shift sends the axis' tiles of one line (none on a 1-PE
   * axis) and copies the others (renaming Cannon: none); extras: line o + 1's gathers in
   * u = 0, C's tile k zeroed in round (ustep (1 + k / no), k mod no) (zero_round). */
  int64_t ca = cannon_rename ? 0 : r.cx.copies * a, cb = cannon_rename ? 0 : r.cy.copies * b;
  int64_t late = 0, flat = pro; /* flat: where every PE would be with nothing to shift */
  for (int k = 0; w != h && k < vx * vy; k++)
    if (ustep * (1 + k / no) >= iters) late += zc;
  /* a pre-skewed operand (gemm_preskew.c) does not move in the alignment; one buffer aligns
   * both at once when C's block is the second spare, else A, then B (phases 0 and 1: the
   * spare takes one operand at a time, lower_gemm_shift.c) */
  int still_a = !(preskew & WF_PRESKEW_A), still_b = !(preskew & WF_PRESKEW_B);
  int serial_align = one && !cspare; /* else both align at once, as with two buffers */
  for (int ph = 0; ph < (serial_align ? 2 : 1); ph++) {
    int ph_a = still_a && (!serial_align || ph == 0), ph_b = still_b && (!serial_align || ph == 1);
    if (one && !ph_a && !ph_b) continue; /* the lowering emits no loop */
    r.serial = serial_align; /* one operand's stream per round: its message alone (round_all) */
    /* backward lines: a ctl down the ramp before the loop, a teardown after it (one item
     * each, lower_gemm_shift.c); the ctl bounds the first round's arrivals (round_all) */
    r.aligning = 1;
    for (int si = 0; r.both && si < r.nrows; si++)
      for (int x = 0; x < w; x++) T[si * w + x] += (ph_a && back_line(&r, r.rows[si])) + (ph_b && back_line(&r, x));
    for (int u = 0; u < iters; u++)
      for (int o = 0; o < no; o++) {
        int64_t extra = 0;
        if (u == 0 && ph == 0) {
          if (o + 1 < vy) extra += gather_words(0, o + 1, vx, vy, m, ka, kb, n, mt, kt, nt);
          if (o + 1 < vx) extra += gather_words(1, o + 1, vx, vy, m, ka, kb, n, mt, kt, nt);
        }
        for (int k = o; w != h && k < vx * vy; k += no)
          if (ustep * (1 + k / no) == u) extra += zc;
        flat += extra;
        for (int si = 0; si < r.nrows; si++)
          for (int x = 0; x < w; x++) {
            int y = r.rows[si], p = si * w + x;
            int ma = ph_a && o < vy && shifts_at(meshgemm, r.both, L, (int64_t)vy * y + o, u);
            int mb = ph_b && o < vx && shifts_at(meshgemm, r.both, L, (int64_t)vx * x + o, u);
            work[p] = extra + (ma ? ca : 0) + (mb ? cb : 0);
            sa[p] = ma ? r.cx.sends * a : 0;
            sb[p] = mb ? r.cy.sends * b : 0;
          }
        r.ctl = u == 0;
        round_all(&r, T, nt_, work, sa, sb, 0);
        r.ctl = 0;
      }
    /* After it: the zeroings no round took, and (copying alignment) the lines that shifted
     * an odd number of times come back from buffer 1 */
    for (int si = 0; si < r.nrows; si++)
      for (int x = 0; x < w; x++) {
        int y = r.rows[si];
        int64_t fix = (ph == 0 ? late : 0) + (ph_a && back_line(&r, y)) + (ph_b && back_line(&r, x));
        for (int o = 0; ph_a && !cannon_rename && o < vy; o++) fix += shifts(meshgemm, r.both, L, (int64_t)vy * y + o) % 2 ? vx * a : 0;
        for (int o = 0; ph_b && !cannon_rename && o < vx; o++) fix += shifts(meshgemm, r.both, L, (int64_t)vx * x + o) % 2 ? vy * b : 0;
        T[si * w + x] += fix;
      }
    r.aligning = 0;
  }
  /* The alignment's own cycles: past where the PEs would be had nothing shifted (the
   * gathers and zeroings in its rounds stay) */
  int64_t e_align = 0;
  for (int p = 0; p < P; p++) e_align = max64(e_align, T[p]);
  if (align) *align = e_align - (flat + late);
  if (cspare)
    for (int p = 0; p < P; p++) T[p] += m * n; /* C zeroed once it is no longer a spare */
  /* The L steps: v_x v_y multiplies, and in all but the last one tile group per row of each
   * axis leaves (INTERLEAVE with v >= 2: one each way). Copies: none when the steps rename
   * (MeshGEMM with `turns`: a line's end PEs copy their turning tile), else the tiles that
   * stay on the PE (1-PE axis: all of them, as in the alignment). */
  /* renaming MeshGEMM issues y's streams after the first half of the multiplies (a PE runs
   * 4 streams at a time: mesh_step) */
  int64_t db = meshgemm && r.rename ? (int64_t)(vx * vy + 1) / 2 * (r.mac_s / (vx * vy)) : 0;
  for (int s = 0; s < L; s++) {
    int shift = s < L - 1;
    for (int si = 0; si < r.nrows; si++)
      for (int x = 0; x < w; x++) {
        int y = r.rows[si], p = si * w + x;
        int64_t cp = 0;
        if (!r.rename) cp = r.cx.copies * vy * a + r.cy.copies * vx * b;
        else if (meshgemm && r.turns)
          cp = (w > 1 && vx > 1 && (x == 0 || x == w - 1) ? vy * a : 0) +
               (h > 1 && vy > 1 && (y == 0 || y == h - 1) ? vx * b : 0);
        work[p] = r.mac_s + (shift ? cp : 0);
        sa[p] = shift && w > 1 ? r.cx.sends * vy * a : 0;
        sb[p] = shift && h > 1 ? r.cy.sends * vx * b : 0;
      }
    if (!one) {
      round_all(&r, T, nt_, work, sa, sb, db);
      continue;
    }
    step_single(&r, T, nt_, w1, shift);
  }
  int64_t end = 0;
  for (int p = 0; p < P; p++) end = max64(end, T[p]);
  if (all_rows && rs && rs->end) { /* the rows' ends, relative to the latest (C's copy back on each) */
    for (int y = 0; y < h; y++) {
      rs->end[y] = INT64_MIN;
      for (int x = 0; x < w; x++) rs->end[y] = max64(rs->end[y], T[y * w + x] - end);
    }
    rs->have_end = 1;
  }
  free(T);
  free(r.rows);
  /* C's tiles copied back into its block unless it accumulated in place */
  int64_t total = end + (bf.c ? m * n : 0);
  if (phases) {
    /* the report's phases (docs/gemm.md, "Phases"): from the latest PE at the alignment's
     * start (every PE is at `pro`) to the latest at its end, the gathers and zeroings its
     * rounds carry on W x H included, unless nothing shifts in them (both operands
     * pre-skewed: the lowering marks no alignment); the drain is C's copy back; the loop the
     * rest (the setup before the alignment and the steps) */
    phases[0] = preskew == (WF_PRESKEW_A | WF_PRESKEW_B) ? 0 : e_align - pro;
    phases[2] = bf.c ? m * n : 0;
    phases[1] = total - phases[0] - phases[2];
  }
  return total;
}
