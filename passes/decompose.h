/* Graph rewrites the partition pass applies before it assigns layouts. */
#ifndef WAFERC_PASSES_DECOMPOSE_H
#define WAFERC_PASSES_DECOMPOSE_H

#include "waferc/ir.h"

/* Rewrites every rank-2 `gemm` of f into transpose / matmul / mul / add (passes/
 * decompose_gemm.c). Returns the number of gemms rewritten. */
int wf_decompose_gemm(wf_module *m, wf_func *f);

/* Rewrites every matmul of a matrix (rank >= 2) by a vector (1-D B) into mul + reduce_sum
 * over the last axis (passes/decompose_matvec.c). Returns the number rewritten. */
int wf_decompose_matvec(wf_module *m, wf_func *f);

#endif
