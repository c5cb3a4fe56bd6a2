/* Graph rewrites the partition pass applies before it assigns layouts. */
#ifndef WAFERC_PASSES_DECOMPOSE_H
#define WAFERC_PASSES_DECOMPOSE_H

#include "waferc/ir.h"

/* Rewrites every rank-2 `gemm` of f into transpose / matmul / mul / add (passes/
 * decompose_gemm.c). Returns the number of gemms rewritten. */
int wf_decompose_gemm(wf_module *m, wf_func *f);

#endif
