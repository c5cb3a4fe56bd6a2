/* Cost models of the dist.gemm algorithms (docs/gemm.md, "Predicted cycles"): the emitted
 * program followed PE by PE under the runtime's rules (docs/cycle-model.md), not fitted to
 * simulated numbers. SUMMA and allgather here (blocking broadcasts), MeshGEMM and Cannon in
 * gemm_cost_rect.c; and the scratch each lowering allocates (wf_gemm_buffers). Notation:
 * blocks m x k (A), k x n (B); mac = ceil(m k n / fmac), lat(d) = d*hop + 2 T_R + 1 (a message
 * over d hops: two ramps, the hops and the store cycle). */
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "waferc/diag.h"

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

static int64_t allgather_cost(const wf_target *t, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                              int64_t mac);

int64_t wf_gemm_predict(const wf_target *t, wf_gemm_algo a, int w, int h, int64_t m, int64_t k,
                        int64_t n) {
  if (w < 1 || h < 1) return -1;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  int64_t mac = (m * k * n + f - 1) / f;
  if (a == WF_GEMM_ALLGATHER) {
    /* W rounds of A blocks (m k) and H of B blocks (k' n, k' = ceil(k W / H), K's share per
     * row of PEs), then W multiplies of m k n (allgather_cost) */
    if (w * h == 1) return m * n + mac;
    return allgather_cost(t, w, h, m, k, (k * w + h - 1) / h, n, mac);
  }
  if (a == WF_GEMM_SUMMA) /* A's K blocks are k wide; B's, k' = ceil(k w / h) (K = w k) */
    return wf_gemm_summa_cost(t, w, h, m, k, (k * w + h - 1) / h, n);
  if (w != h) /* meshgemm and cannon: the lcm virtual grid (gemm_cost_rect.c) */
    return a == WF_GEMM_MESHGEMM || a == WF_GEMM_CANNON
               ? wf_gemm_rect_shift_cost(t, a == WF_GEMM_MESHGEMM, w, h, m, k, (k * w + h - 1) / h, n)
               : -1;
  int N = w;
  switch (a) {
    case WF_GEMM_MESHGEMM:
    case WF_GEMM_CANNON:
      /* the schedule PE by PE as on W x H (gemm_cost_rect.c), one tile per PE */
      if (N == 1) return m * n + mac;
      return wf_gemm_rect_shift_cost(t, a == WF_GEMM_MESHGEMM, w, h, m, k, k, n);
    default:
      return -1;
  }
}

/* Blocking broadcasts PE by PE (SUMMA, allgather): PE (x, y) reaches the next broadcast at
 * T(x, y). The root's send puts `words` wavelets down its ramp; a receiver d hops away has
 * the last one at the root's start + words - 1 + lat(d) (docs/cycle-model.md, a message), and
 * cannot be done before its own start + words (one wavelet per cycle off its queue).
 * Each PE of the line spends one cycle first on the swset that gives its router its role.
 * Along x the root of each row is PE (root, y); along y, PE (x, root).
 *
 * Every PE starts at the same time and the work between broadcasts is the same on every PE,
 * so T stays a sum T(x, y) = a[x] + b[y] + c: a row broadcast (root column j) changes
 * T(x, y) to b[y] + c + max(a[x] + words, a[j] + words - 1 + lat(|x - j|)), a function of x
 * alone, and a column broadcast likewise of y alone. Following the w + h terms instead of
 * the w h PEs gives the same numbers at O(w + h) per broadcast, so the prediction's cost
 * does not grow with the PE count (a 720 x 720 SUMMA: 720 steps of 1,440 terms). */
typedef struct bcast_state {
  int64_t *a, *b, c; /* T(x, y) = a[x] + b[y] + c */
} bcast_state;

static void bcast_line(const wf_target *t, int64_t *v, int len, int root, int64_t words) {
  /* every PE of the line first sets its router to its role for this root (one swset cycle,
   * lower_util.c's flood_positions) */
  for (int i = 0; i < len; i++) v[i] += 1;
  int64_t r = v[root];
  for (int i = 0; i < len; i++) {
    if (i == root) continue;
    int64_t d = i > root ? i - root : root - i;
    v[i] = max64(v[i] + words, r + words - 1 + lat(t, d));
  }
  v[root] = r + words;
}

static int bcast_init(bcast_state *s, int w, int h, int64_t start) {
  s->a = calloc((size_t)w + (size_t)h, sizeof *s->a);
  s->b = s->a ? s->a + w : NULL;
  s->c = start;
  return s->a ? 0 : -1;
}

/* The latest PE: max a + max b + c. Frees the state. */
static int64_t bcast_done(bcast_state *s, int w, int h) {
  int64_t ma = s->a[0], mb = s->b[0];
  for (int x = 1; x < w; x++) ma = max64(ma, s->a[x]);
  for (int y = 1; y < h; y++) mb = max64(mb, s->b[y]);
  free(s->a);
  return ma + mb + s->c;
}

/* SUMMA on w x h (lower_matmul.c): K is walked in the intervals between consecutive cuts of
 * A's blocks (multiples of ka) and B's (multiples of kb) up to min(w ka, h kb). Each step is a
 * blocking row broadcast of A (when an A block starts), a column broadcast of B (when a B
 * block starts), a copy2d of A's columns when the interval is only part of A's block, then
 * the multiply: nothing overlaps within a PE. Followed PE by PE (bcast_line): a step's
 * broadcast starts when its root has finished the previous step's multiply, and a receiver
 * waits for it, so the latency to each root is paid in every step whose root is late, not
 * once. The prediction is the latest PE. */
int64_t wf_gemm_summa_cost(const wf_target *t, int w, int h, int64_t m, int64_t ka, int64_t kb,
                           int64_t n) {
  if (w < 1 || h < 1 || ka < 1 || kb < 1) return -1;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  if (w * h == 1) return m * n + (m * ka * n + f - 1) / f;
  int64_t end = w * ka < h * kb ? w * ka : h * kb;
  bcast_state s;
  int ok = bcast_init(&s, w, h, m * n); /* C zeroed */
  WF_ASSERT(ok == 0);
  for (int64_t lo = 0, hi; lo < end; lo = hi) {
    int64_t j = lo / ka, i = lo / kb;
    hi = (j + 1) * ka < (i + 1) * kb ? (j + 1) * ka : (i + 1) * kb;
    if (end < hi) hi = end;
    if (w > 1 && lo == j * ka) bcast_line(t, s.a, w, (int)j, m * ka);
    if (h > 1 && lo == i * kb) bcast_line(t, s.b, h, (int)i, kb * n);
    s.c += (m * (hi - lo) * n + f - 1) / f;
    if (lo != j * ka || hi - lo != ka) s.c += m * (hi - lo); /* copy2d */
  }
  return bcast_done(&s, w, h);
}

/* Allgather (lower_gemm_allgather.c): C and the B panel's zero padding first, then rounds
 * j < max(w, h) of blocking broadcasts (A's from column j along the rows while j < w, then
 * B's from row j down the columns while j < h; followed PE by PE as SUMMA's), then each PE
 * copies its own two blocks into their slots and multiplies its w slot pairs. */
static int64_t allgather_cost(const wf_target *t, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                              int64_t mac) {
  int64_t brows = ka * w > kb * h ? ka * w : kb * h;
  bcast_state s;
  int ok = bcast_init(&s, w, h, m * n + (brows - kb * h) * n);
  WF_ASSERT(ok == 0);
  for (int j = 0; j < (w > h ? w : h); j++) {
    if (w > 1 && j < w) bcast_line(t, s.a, w, j, m * ka);
    if (h > 1 && j < h) bcast_line(t, s.b, h, j, kb * n);
  }
  return bcast_done(&s, w, h) + m * ka + kb * n + (int64_t)w * mac;
}

int wf_gemm_buffers_parse(const char *s, int *out) {
  if (!s) return -1;
  if (strcmp(s, "auto") == 0) *out = WF_GEMM_BUFFERS_AUTO;
  else if (strcmp(s, "1") == 0) *out = 1;
  else if (strcmp(s, "2") == 0) *out = 2;
  else return -1;
  return 0;
}

void wf_gemm_buffers(wf_gemm_algo a, int nbuf, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                     wf_gemm_bufs *out) {
  memset(out, 0, sizeof *out);
  if (w * h == 1) return; /* the local product */
  switch (a) {
    case WF_GEMM_MESHGEMM:
    case WF_GEMM_CANNON:
      if (w != h) {
        wf_gemm_rect_buffers(a == WF_GEMM_MESHGEMM, w, h, m, ka, kb, n, out);
        return;
      }
      if (nbuf == 1) {
        /* lower_gemm_shift.c, one buffer: A, B and the spare rotate through three buffers
         * of the larger block ($gemm_a0, $gemm_b0, $gemm_a1 hold them at the start) */
        int64_t z = m * ka > kb * n ? m * ka : kb * n;
        out->a0 = out->b0 = out->a1 = z;
        return;
      }
      /* lower_gemm_shift.c: buffer 0 copies the operand (it may be read again), buffer 1
       * receives the next step's block */
      out->a0 = out->a1 = m * ka;
      out->b0 = out->b1 = kb * n;
      return;
    case WF_GEMM_SUMMA: {
      /* lower_matmul.c: the received blocks, and a tile for A's columns when an interval of
       * the walk (wf_gemm_summa_cost) is only part of A's block */
      out->a0 = w > 1 ? m * ka : 0;
      out->b0 = h > 1 ? kb * n : 0;
      int64_t end = w * ka < h * kb ? w * ka : h * kb;
      for (int64_t lo = 0, hi; lo < end; lo = hi) {
        int64_t j = lo / ka, i = lo / kb;
        hi = (j + 1) * ka < (i + 1) * kb ? (j + 1) * ka : (i + 1) * kb;
        if (end < hi) hi = end;
        if (lo != j * ka || hi - lo != ka) out->a1 = m * (ka < kb ? ka : kb);
      }
      return;
    }
    case WF_GEMM_ALLGATHER: {
      /* lower_gemm_allgather.c: A's W slots, and B's panel zero-padded to W ka rows */
      int64_t brows = ka * w > kb * h ? ka * w : kb * h;
      out->a0 = (int64_t)w * m * ka;
      out->b0 = brows * n;
      return;
    }
    default:
      return;
  }
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
