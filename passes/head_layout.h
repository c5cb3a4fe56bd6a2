/* head-layout's column map as pure functions (passes/head_layout.c): the packed head dim and
 * the packed width E'' it lays `heads` heads of `d` columns out with on a mesh `w` columns wide,
 * and the cut of GQA kv heads over columns, so that a full-size estimate (wafer-bench llm) sizes
 * the blocks the pass would give. */
#ifndef WAFERC_PASSES_HEAD_LAYOUT_H
#define WAFERC_PASSES_HEAD_LAYOUT_H

#include <stdint.h>

/* rope: the heads are rotated (a rotate-half or interleaved RoPE keeps a split head's blocks
 * even). *dp: the packed head dim (d, or g b for a head spread over g columns of b); *n: E''. */
void wf_head_layout_width(int64_t heads, int64_t d, int rope, int w, int64_t *dp, int64_t *n);

/* The cut of GQA / MQA kv heads over their query heads' columns (gqa=gather and gqa=colocate)
 * for `heads` query heads and `kv_heads` kv heads packed as wf_head_layout_width says (dp, n):
 * each kv head over *m columns of *sub in-head columns, *parts parts of *pb per query head. 0
 * when the geometry allows no cut (a column's query heads are not whole groups, or the kv heads
 * need more than w columns). */
int wf_head_layout_kv_cut(int64_t heads, int64_t kv_heads, int64_t dp, int64_t n, int rope, int w, int64_t *m,
                          int64_t *parts, int64_t *sub, int64_t *pb);

#endif
