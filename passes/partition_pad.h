/* Padding checks of the partition pass (passes/partition_pad.c, docs/partition.md). */
#ifndef WAFERC_PASSES_PARTITION_PAD_H
#define WAFERC_PASSES_PARTITION_PAD_H

#include "waferc/ir.h"

/* After every value of f has its layout on a w x h region: marks each contraction that would
 * mix a padded K's padding into real elements with `zero_k` (bit 0: A, bit 1: B), the
 * operands whose padding along K its lowering zeroes first. */
void wf_partition_mark_padding(wf_func *f, int w, int h);

/* Warns about each tensor of f (arguments, constants, results) of which more than half of
 * the padded elements are padding on the w x h mesh, naming it, its shape, the padded
 * shape and a mesh that would not pad it (the first five; a note counts the rest). */
void wf_partition_warn_padding(wf_module *m, wf_func *f, int w, int h);

#endif
