/* partition's layouts for a decode step (passes/partition_decode.c, docs/generation.md). */
#ifndef WAFERC_PASSES_PARTITION_DECODE_H
#define WAFERC_PASSES_PARTITION_DECODE_H

#include "waferc/ir.h"

/* 1 when f is a decode step (it has a decode_attention). */
int wf_partition_is_decode(const wf_func *f);
/* Lays out f's arguments, results of ops and constants on `region` by the decode rule, and turns
 * each matmul into dist.gemv (dist.gemv_t reading the embedding table when `tie_heads` and the
 * weight is the table transposed); *n_laid gets the values laid out, *n_tied the heads tied. A
 * WF_EXIT_* code. */
int wf_partition_decode(wf_module *m, wf_func *f, int region, int w, int h, int64_t sram_bytes, int tie_heads,
                        int64_t *n_laid, int64_t *n_tied);

#endif
