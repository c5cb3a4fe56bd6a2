/* Packed attention's prediction (lower_attention.c emits the program; this is its cycle count,
 * which the lowering checks it agrees with on every attention it lowers). */
#include "backend/ops/attention_cost.h"

int64_t wf_attention_group_sum_cost(const wf_target *t, int g, int64_t len) {
  /* the chain and the flood each pipeline: len through the ramps, a hop and a ramp per link */
  int64_t link = t->hop_cycles + t->ramp_cycles;
  return 2 * len + 2 * (int64_t)(g - 1) * link + 4 * t->ramp_cycles;
}

int64_t wf_attention_predict(const wf_target *t, int rows, int64_t nbatch, int64_t sb, int64_t cb, int64_t ckb,
                             int64_t hd, int kv_packed) {
  int64_t nh, ds, g;
  if (cb >= hd && cb % hd == 0) nh = cb / hd, ds = hd, g = 1;
  else if (cb < hd && hd % cb == 0) nh = 1, ds = cb, g = hd / cb;
  else return -1;
  int64_t nkv = nh;
  if (kv_packed) {
    nkv = g == 1 && ckb % hd == 0 ? ckb / hd : 0;
    if (!nkv || nh % nkv) return -1;
  }
  int64_t tb = sb, blk = nbatch * sb * cb, slots = nbatch * nh, kblk = nbatch * tb * ckb;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1, ec = t->exp_cycles, dc = t->div_cycles;
  /* prologue: q's slots copied and scaled, acc, l and m set; K transposed and V laid out once */
  int64_t pred = 2 * blk + 2 * slots * sb + blk + 3 * kblk;
  /* per round: K and V through the ramps and the sender's own copies, then each slot's scores,
   * group sum, online-softmax step and p v */
  int64_t round = 1 + 2 * kblk + 2 * kblk;
  for (int64_t s = 0; s < slots; s++) {
    round += sb * tb + (sb * ds * tb + f - 1) / f;
    if (g > 1) round += wf_attention_group_sum_cost(t, (int)g, sb * tb);
    round += sb * tb * (4 + ec) + sb * (6 + ec) + sb * ds + (sb * tb * ds + f - 1) / f;
  }
  pred += (int64_t)rows * round + blk * (dc + 1);
  if (rows > 1) pred += (int64_t)(rows - 1) * t->hop_cycles + 2 * t->ramp_cycles;
  (void)nkv;
  return pred;
}

int64_t wf_decode_attention_local(const wf_target *t, int rows, int64_t cb, int64_t ckb, int64_t hd, int64_t cap) {
  int64_t nh, ds, g;
  if (cb >= hd && cb % hd == 0) nh = cb / hd, ds = hd, g = 1;
  else if (cb < hd && hd % cb == 0) nh = 1, ds = cb, g = hd / cb;
  else return -1;
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
