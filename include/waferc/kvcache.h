/* The KV cache's occupancy during generation (docs/generation.md), computed the same way by
 * waferc (the capacity it reserves) and waferrun (the step parameters R and C it sets). The
 * cache is a [B, C, Nk] tensor laid out {B, C_y, Nk_x}: each of the region's `rows` rows of
 * PEs holds C / rows slots. */
#ifndef WAFERC_KVCACHE_H
#define WAFERC_KVCACHE_H

#include <stdint.h>

/* After a prefill of L tokens whose k/v are laid out in blocks of lb rows: row y holds
 * clamp(L - y lb, 0, lb) tokens, in its first slots. */
static inline void wf_kv_prefill_counts(int64_t L, int rows, int64_t lb, int *cnt) {
  for (int y = 0; y < rows; y++) {
    int64_t c = L - (int64_t)y * lb;
    cnt[y] = (int)(c < 0 ? 0 : c > lb ? lb : c);
  }
}

/* The row whose cache takes the next token. shift: the bottom-most of the least filled rows
 * (the rows below it each hand one token up, so the new token enters at the bottom); concat:
 * always the last row (the baseline: it alone grows). */
static inline int wf_kv_grow_row(const int *cnt, int rows, int concat) {
  if (concat) return rows - 1;
  int r = rows - 1;
  for (int y = rows - 1; y >= 0; y--)
    if (cnt[y] < cnt[r]) r = y;
  return r;
}

#endif
