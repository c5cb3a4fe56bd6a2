/* Packed attention's prediction (lower_attention.c emits the program; this is its cycle count,
 * which the lowering checks it agrees with on every attention it lowers). */
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "backend/collectives/ring_line.h"
#include "backend/ops/attention_cost.h"

int64_t wf_attention_group_sum_cost(const wf_target *t, int g, int64_t len) {
  /* the chain and the flood each pipeline: len through the ramps, a hop and a ramp per link */
  int64_t link = t->hop_cycles + t->ramp_cycles;
  return 2 * len + 2 * (int64_t)(g - 1) * link + 4 * t->ramp_cycles;
}

/* The gathered kv heads' prologue (lower_attention.c, gather_kv) on the member that finishes
 * last: its K piece transposed and V piece copied (piece = 2 sub B Tb words), the buffer zeroed
 * when the mesh's last columns form no whole group, and m - 1 ring steps that each wait for the
 * piece from the predecessor (one hop, the first member's over the m - 1 hops back), sent when
 * both have started the step, or when the predecessor has if the piece fits the input queue. */
static int64_t gather_cost(const wf_target *t, int64_t m, int64_t half, int zero) {
  int64_t pw = 2 * half, *T = calloc((size_t)m * 2, sizeof *T), *nt = T ? T + m : NULL, end = 0;
  WF_ASSERT(T); /* out of host memory: exit 7 */
  for (int64_t s = 0; s + 1 < m; s++) {
    for (int64_t c = 0; c < m; c++) {
      int64_t from = c ? c - 1 : m - 1, hops = c ? 1 : m - 1;
      /* a piece that fits the receiver's input queue and the link leaves before its arecv */
      int64_t start = pw <= t->queue_depth + hops || T[from] > T[c] ? T[from] : T[c];
      int64_t e = start + pw + hops * t->hop_cycles + 2 * t->ramp_cycles + 1;
      nt[c] = e > T[c] + pw ? e : T[c] + pw;
    }
    memcpy(T, nt, (size_t)m * sizeof *T);
  }
  for (int64_t c = 0; c < m; c++) end = T[c] > end ? T[c] : end;
  free(T);
  return pw + (zero ? m * pw : 0) + end;
}

int wf_attention_ring_live(int rows, int y, int r) {
  return y % 2 == 0 ? r <= y : (rows - r) % rows <= y;
}

/* Followed row by row (every column of a row runs the same rounds): a round starts when the
 * row's previous one ended; the row issues its stream of the next K/V block (asend and
 * arecv: no cycles), does its slots' work (all of it in a live round, the zeroing, group sum
 * and masks otherwise), then waits for the stream: its own send through the ramp, and the
 * block from its ring predecessor, which that row sent when both had started the round (a
 * wavelet waits in the router for the arecv) plus the link's latency. */
int64_t wf_attention_predict(const wf_target *t, const wf_attn_shape *a) {
  int64_t nh, ds, g, cb = a->cb, hd = a->hd, sb = a->sb, ckb = a->ckb, nbatch = a->nbatch;
  int rows = a->rows;
  if (rows < 1 || cb < 1 || hd < 1) return -1;
  if (a->coloc_group) { /* group pieces of ckb columns, one kv piece, summed over gather_m columns */
    if (cb != a->coloc_group * ckb || a->gather_m < 1) return -1;
    nh = a->coloc_group, ds = ckb, g = a->gather_m;
  } else if (cb >= hd && cb % hd == 0) nh = cb / hd, ds = hd, g = 1;
  else if (cb < hd && hd % cb == 0) nh = 1, ds = cb, g = hd / cb;
  else return -1;
  if (a->kv_packed) {
    int64_t nkv = g == 1 && ckb % hd == 0 ? ckb / hd : 0;
    if (!nkv || nh % nkv) return -1;
  }
  int64_t gm = a->coloc_group ? 0 : a->gather_m; /* colocated: no kv piece moves */
  if (gm && (a->gather_parts != g || gm % g || ckb * (gm / g) < ds)) return -1;
  int64_t tb = sb, blk = nbatch * sb * cb, slots = nbatch * nh, kblk = nbatch * tb * (gm ? ds : ckb);
  int64_t nbias = !a->causal && (int64_t)rows * tb > a->len ? tb : 0, kvw = 2 * kblk + nbias;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1, ec = t->exp_cycles, dc = t->div_cycles;
  /* prologue: q's slots copied and scaled, acc, l and m set; K transposed and V laid out once;
   * the key bias zeroed, and copied on the rows whose block holds padding keys */
  int64_t pre = 3 * blk + 3 * slots * sb + (gm ? gather_cost(t, gm, ckb * nbatch * tb, a->gather_zero) + 2 * kblk : 3 * kblk) + nbias;
  /* a slot's work in every round (s zeroed, a split head's group sum, the bias) and in a live
   * round only (q kᵀ, the online-softmax step, p v); round 0 adds the diagonal mask */
  int64_t common = sb * tb + (g > 1 ? wf_attention_group_sum_cost(t, (int)g, sb * tb) : 0) + (nbias ? sb * tb : 0);
  int64_t lw = (sb * ds * tb + f - 1) / f + sb * tb * (3 + ec) + sb * (5 + ec) + sb * ds + (sb * tb * ds + f - 1) / f;
  int64_t diag = a->causal ? sb * tb : 0;
  int64_t *T = malloc((size_t)rows * 2 * sizeof *T), *nt = T ? T + rows : NULL;
  WF_ASSERT(T); /* out of host memory: exit 7 */
  wf_row_skew *rs = a->skew;
  if (rs) rs->have_end = 0;
  for (int y = 0; y < rows; y++)
    T[y] = (rs && rs->start ? rs->start[y] : 0) + pre + (nbias && ((int64_t)y + 1) * tb > a->len ? tb : 0);
  for (int r = 0; r < rows; r++) {
    for (int y = 0; y < rows; y++) {
      int live = !a->causal || wf_attention_ring_live(rows, y, r);
      int64_t e = T[y] + slots * (common + (live ? lw : 0) + (r == 0 ? diag : 0));
      if (r < rows - 1) {
        int s, from;
        wf_interleave(y, rows, &s, &from);
        int64_t hops = from > y ? from - y : y - from, start = T[from] > T[y] ? T[from] : T[y];
        int64_t arrive = start + kvw + hops * t->hop_cycles + 2 * t->ramp_cycles + 1;
        if (e < T[y] + kvw) e = T[y] + kvw;
        if (e < arrive) e = arrive;
      }
      nt[y] = e;
    }
    memcpy(T, nt, (size_t)rows * sizeof *T);
  }
  int64_t end = T[0];
  for (int y = 0; y < rows; y++) end = T[y] > end ? T[y] : end;
  if (rs && rs->end) {
    for (int y = 0; y < rows; y++) rs->end[y] = T[y] - end;
    rs->have_end = 1;
  }
  free(T);
  return end + blk * (dc + 1);
}

int64_t wf_decode_attention_local(const wf_target *t, int rows, int64_t cb, int64_t ckb, int64_t hd, int64_t cap) {
  if (cb >= hd && cb % hd == 0) return wf_decode_attention_slots(t, rows, cb / hd, hd, 1, cb, ckb, cap);
  if (cb < hd && hd % cb == 0) return wf_decode_attention_slots(t, rows, 1, cb, hd / cb, cb, ckb, cap);
  return -1;
}

int64_t wf_decode_attention_slots(const wf_target *t, int rows, int64_t nh, int64_t ds, int64_t g, int64_t cb, int64_t ckb,
                                  int64_t cap) {
  int64_t fm = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1, ec = t->exp_cycles, dc = t->div_cycles;
  int64_t kw = ckb, pred = 0; /* words of one token's K (or V) on a PE */
  /* the append: the shift's copies out, its async hop up, the copies in; the new slot */
  if (rows > 1) pred += 2 * kw + 2 * kw + t->hop_cycles + 2 * t->ramp_cycles + 2 * kw;
  pred += 2 * kw;
  /* scores: q scaled, s zeroed, per slot the row's cap keys and K q; a split head's group sum;
   * the tail masked */
  pred += 2 * cb + nh * cap;
  pred += nh * (cap * ds + (cap * ds + fm - 1) / fm);
  if (g > 1) pred += wf_attention_group_sum_cost(t, (int)g, nh * cap);
  pred += nh * cap;
  /* softmax's local part (max, subtract, exp, sum), p V per slot, the divide */
  pred += nh * cap * (2 + ec) + 2 * nh * cap;
  pred += nh * (cap * ds + (cap * ds + fm - 1) / fm);
  pred += cb * (dc + 1);
  return pred;
}
