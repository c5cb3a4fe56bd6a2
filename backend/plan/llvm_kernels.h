/* waferc — the plan's compute kernels (kernels/<class>.ll), as ir/pe/kernel_gen_llvm.c generates
 * them, and their manifest entries. waferrun JIT-compiles the kernels it regenerates from the
 * programs (runtime/jit_llvm.c) in place of its interpreter loops, and refuses a plan whose kernel
 * files differ from them.
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
