/* head-layout's column map as a pure function (passes/head_layout.c): the packed head dim and
 * the packed width E'' it lays `heads` heads of `d` columns out with on a mesh `w` columns wide,
 * so that a full-size estimate (wafer-bench llm) sizes the blocks the pass would give. */
#ifndef WAFERC_PASSES_HEAD_LAYOUT_H
#define WAFERC_PASSES_HEAD_LAYOUT_H

#include <stdint.h>

/* rope: the heads are rotated (a rotate-half or interleaved RoPE keeps a split head's blocks
 * even). *dp: the packed head dim (d, or g b for a head spread over g columns of b); *n: E''. */
void wf_head_layout_width(int64_t heads, int64_t d, int rope, int w, int64_t *dp, int64_t *n);

#endif
