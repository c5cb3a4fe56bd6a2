/* waferc — per-class compute kernels as LLVM IR (the plan's kernels/<class>.ll).
 *
 * The backend writes one module per class holding one function per (instruction, broadcast
 * mode) the class uses; waferrun JIT-compiles them (runtime/jit.c) and calls them in place of
 * its interpreter loops. The kernels' signature, names and operand extents are the plan's
 * kernel ABI (ir/pe/kernel_abi.h). The kernels perform the same float operations in the same
 * order as the interpreter (runtime/sim.c), with no fast-math flags and no contraction, so
 * both paths give bit-identical results; cycles come from the cost model either way
 * (docs/cycle-model.md).
 */
#ifndef WAFERC_BACKEND_LLVM_KERNELS_H
#define WAFERC_BACKEND_LLVM_KERNELS_H

#include "ir/pe/kernel_abi.h"

/* Writes plan_dir/kernels/<class>.ll for class c (the directory is created). Returns a
 * WF_EXIT_* code. */
int wf_llvm_kernels_write(const wf_pe_class *c, const char *plan_dir);
/* The manifest's entry for class c's kernels (a cJSON object, as void * to keep cJSON out of
 * this header), or NULL when c uses no covered instruction. */
void *wf_llvm_kernels_manifest(const wf_pe_class *c);

#endif
