/* Which columns of a projection an attention operand reads (passes/head_view.c), for
 * head-layout: exporters split a projection p [B, S, N] into heads through any chain of views
 * (reshape, transpose, slice, split, gather of one index, expand) and at most one rope, and
 * the operand v4 [B, H, S, D] that attention reads is v4[b, h, s, d] = p[b, s, col(h, d)]
 * (rotated when a rope is on the chain). The match follows the chain and computes col. */
#ifndef WAFERC_PASSES_HEAD_VIEW_H
#define WAFERC_PASSES_HEAD_VIEW_H

#include <stdint.h>

#include "waferc/ir.h"

typedef struct wf_head_view {
  wf_value p;       /* the projection [B, S, N] (a reshape of a Gemm's [B S, N] for a Conv1D) */
  int64_t heads, d; /* v4's H and D */
  int64_t *col;     /* heads * d entries (malloc'd): col[h d + r] = the column of p */
  wf_op *rope;      /* the rope met on the chain, or NULL */
  int transposed;   /* p = matmul(transpose(x) {1, 0, 2}, W) [+ b], [S, B, N]: col indexes the
                       projection of x itself */
  int64_t folded;   /* B when v4 is [1, B·H, S, D] (the batch folded into the heads: heads is H),
                       else 1 */
} wf_head_view;

/* 1 and *hv filled when v4 is such a view of a rank-3 value; else 0 and *why says why. */
int wf_head_view_match(wf_module *m, wf_func *f, wf_value v4, wf_head_view *hv, const char **why);
void wf_head_view_free(wf_head_view *hv);

/* The largest n > 1 dividing hv->heads such that head h reads the columns of head h - h % n
 * (a kv head repeated for n query heads: repeat_interleave, or expand + reshape before or after
 * the head transpose); 1 when there is none. */
int64_t wf_head_view_repeat(const wf_head_view *hv);

/* Keeps every n-th head (n from wf_head_view_repeat). */
void wf_head_view_dedup(wf_head_view *hv, int64_t n);

/* Forward: from `from`, through its only use while that is a reshape or a transpose, the
 * first value whose elements are from's in the order of from's axes permuted by `order` (row
 * major over order[0], order[1], ...) and for which stop() holds; WF_NO_VALUE when the chain
 * ends first. For the attention's result [B, H, S, D] and order {0, 2, 1, 3}: the merged heads
 * [B, S, H·D], in whatever shape the exporter wrote them ([B·S, H·D] for a Gemm). */
typedef int (*wf_head_view_stop)(wf_func *f, wf_value v, const void *arg);
/* `as`: the shape from's elements are read in (the same row-major data; NULL = from's type). */
wf_value wf_head_view_follow(wf_func *f, wf_value from, const wf_type *as, const int *order, wf_head_view_stop stop,
                             const void *arg);

#endif
