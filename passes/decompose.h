/* Graph rewrites the partition pass applies before it assigns layouts. */
#ifndef WAFERC_PASSES_DECOMPOSE_H
#define WAFERC_PASSES_DECOMPOSE_H

#include <string.h>

#include "waferc/ir.h"

/* t without its layout: the type of a value a rewrite makes before partition lays it out. */
static inline wf_type wf_rewrite_type(const wf_type *t) {
  wf_type r = *t;
  memset(&r.layout, 0, sizeof r.layout);
  return r;
}

/* Rewrites every rank-2 `gemm` of f into transpose / matmul / mul / add (passes/
 * decompose_gemm.c). Returns the number of gemms rewritten. */
int wf_decompose_gemm(wf_module *m, wf_func *f);

/* Rewrites every matmul of a matrix (rank >= 2) by a vector (1-D B) into mul + reduce_sum
 * over the last axis (passes/decompose_matvec.c). Returns the number rewritten. */
int wf_decompose_matvec(wf_module *m, wf_func *f);

/* Rewrites a dense MoE block's stacked combine, reduce_sum over -2 of
 * concat(reshape(e_i) -> [.., 1, E]) * reshape(gates) -> [.., N, 1], or the batched product
 * of reshape(gates) -> [T, 1, N] by concat(reshape(e_i) -> [T, 1, E]), into the sum over i of
 * slice(gates, i) * e_i (passes/partition_moe.c). Returns the number rewritten. */
int wf_partition_moe_combine(wf_module *m, wf_func *f);
/* Sinks a transpose that moves the first dim of a computed rank-3 (or more) mask (a one-hot's
 * compares and wheres) into the ops that compute it, down to constants and reshapes of
 * matrices (passes/partition_sink.c). Returns the number rewritten. */
int wf_partition_sink_transpose(wf_module *m, wf_func *f);
/* Rewrites DeepSeek-V3's grouped gate, a top-k over a [T, G, S] view of the scores and the
 * groups' mask expanded over such a view, into per-group slices of rank 2 (partition_moe.c).
 * Returns the number rewritten. */
int wf_partition_moe_groups(wf_module *m, wf_func *f);

/* Rewrites indexing by computed positions (a sparse MoE block's dispatch and combine) into
 * what the mesh lowers: a gather of a rank-0 constant index into a slice, a gather of a
 * computed [T, E]'s rows into gather_elements on its transpose, a scatter_elements along axis
 * 0 of a matrix into one along the last axis of the transposes (passes/partition_dispatch.c).
 * Returns the number rewritten. */
int wf_partition_dispatch(wf_module *m, wf_func *f);

#endif
