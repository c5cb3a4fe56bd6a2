/* What the partition pass (and so the backend) takes to the mesh (passes/partition.c). */
#ifndef WAFERC_PASSES_PARTITION_H
#define WAFERC_PASSES_PARTITION_H

#include "waferc/ir.h"
#include "waferc/pass.h"

/* 1 when a graph op has a mesh lowering: partition lays it out and the backend lowers it.
 * gemm counts (partition decomposes it into matmul, transpose, mul and add); ops without
 * one run only in the reference interpreter. waferc --list-onnx-ops reads this too. */
int wf_partition_lowers(wf_opcode c);

/* The WxH of a pass's `mesh` option (partition, head-layout), else the target's mesh; a bad
 * option is reported under `pass` and returns WF_EXIT_USAGE. */
int wf_pass_mesh(wf_pass_ctx *ctx, const char *pass, int *w, int *h);

#endif
