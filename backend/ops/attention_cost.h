/* waferc backend — packed attention's predicted cycles as pure functions of the blocks
 * (lower_attention.c; docs/attention.md), so that an estimate for a full-size layer (wafer-bench
 * llm) reads the lowering's own numbers without building a program.
 *
 *   wf_attn_shape a = {660, 1, 7, 8, 8, 160, 0, 1, 4096, 0, 0, 0};
 *   int64_t c = wf_attention_predict(t, &a); // one layer's causal attention
 */
#ifndef WAFERC_BACKEND_OPS_ATTENTION_COST_H
#define WAFERC_BACKEND_OPS_ATTENTION_COST_H

#include <stdint.h>

#include "backend/resources/row_skew.h"
#include "waferc/target.h"

/* The sum of a head's g partial products inside its group of columns (a chain east, a flood
 * back west): len words over g - 1 links twice. */
int64_t wf_attention_group_sum_cost(const wf_target *t, int g, int64_t len);
/* attention on `rows` rows of PEs (1: S whole on every PE), q blocks [nbatch][sb][cb], k and v
 * blocks [nbatch][sb][ckb], heads of hd columns (cb = nh hd, or hd = g cb), `kv_packed` when
 * the kv heads are packed (GQA shared) instead of replicated, `causal`, and `len` keys before
 * the padding: the lowering's prediction. -1 when the heads do not fall on the blocks (the
 * lowering refuses such a layout). */
typedef struct wf_attn_shape {
  int rows;
  int64_t nbatch, sb, cb, ckb, hd;
  int kv_packed, causal;
  int64_t len;
  /* kv heads gathered over gather_m columns (attention {kv_gather}, ckb = the piece's columns,
   * gather_parts parts per query head, gather_zero when some columns form no whole group);
   * 0 = not gathered */
  int64_t gather_m, gather_parts;
  int gather_zero;
  /* rows starting apart and the rows' ends (row_skew.h; NULL: together, not wanted): `rows`
   * entries each */
  wf_row_skew *skew;
  /* q colocated with the kv pieces (attention {q_colocated}): the query heads per kv head, whose
   * pieces of ckb columns a PE holds side by side (cb = coloc_group ckb), summed over gather_m
   * columns; 0 = not */
  int64_t coloc_group;
} wf_attn_shape;
int64_t wf_attention_predict(const wf_target *t, const wf_attn_shape *a);
/* The K/V ring of prefill attention (lower_attention.c): in round r of `rows`, row y holds the
 * block that started r INTERLEAVE ring positions back. Whether that block has a key at or
 * before one of row y's queries (block index <= y): r <= y for even y, (-r) mod rows <= y for
 * odd y, which the lowering's guards test (tests/unit/test_attention_ring.c checks it against
 * the ring's order). */
int wf_attention_ring_live(int rows, int y, int r);
/* decode_attention's prediction without its three allreduces along the column (the max and
 * the sum of nh words, p V's cb words: the collectives' choice, which the lowering adds as
 * lowered): rows of PEs holding the cache, q blocks of cb columns, k/v blocks of ckb, cap slots
 * per row. -1 when the heads do not fall on the blocks. */
int64_t wf_decode_attention_local(const wf_target *t, int rows, int64_t cb, int64_t ckb, int64_t hd, int64_t cap);
/* The same for a PE's head slots as the lowering finds them (wf_attn_slots, lower.h): nh slots
 * of ds columns reading ckb columns of k/v, a head's scores summed over g columns (q colocated
 * with the kv pieces: nh = group, ds = ckb = sub, g = m). */
int64_t wf_decode_attention_slots(const wf_target *t, int rows, int64_t nh, int64_t ds, int64_t g, int64_t cb, int64_t ckb,
                                  int64_t cap);

#endif
