/* How partition lays out a gather's table: tied LM heads and row-split tables
 * (passes/partition_table.c). */
#ifndef WAFERC_PASSES_PARTITION_TABLE_H
#define WAFERC_PASSES_PARTITION_TABLE_H

#include "waferc/ir.h"

/* Every matmul(x, C) of f whose constant C [E, V] is a gather table T [V, E] of f transposed
 * (bit for bit) becomes matmul(x, transpose(T)); returns how many. Runs before layouts. */
int wf_partition_tie_heads(wf_module *m, wf_func *f);
/* The gather table (a global) of f that global c [E, V] holds the transpose of, bit for bit,
 * or -1. */
int wf_partition_tied_table(wf_module *m, const wf_func *f, int c);
/* 1 when global `global` is a gather's table in f and its only other uses are transposes
 * feeding matmuls' B (a tied head). */
int wf_partition_table_tied(const wf_func *f, int global);
/* 1 when the gather table `global` is laid out {V_y, E_x} on a w x h mesh: tied, or its
 * {V, E_x} slice would take more than 1/16 of sram_bytes (and h > 1). */
int wf_partition_table_rows_split(const wf_module *m, const wf_func *f, int global, int w, int h,
                                  int64_t sram_bytes);
/* 1 when the ids `ids` index a table with split rows: every PE holds them whole. */
int wf_partition_ids_whole(const wf_module *m, const wf_func *f, wf_value ids, int w, int h, int64_t sram_bytes);

#endif
