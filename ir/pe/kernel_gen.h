/* waferc — per-class compute kernels as LLVM IR (ir/pe/kernel_gen_llvm.c).
 *
 * One module per PE class, holding one function per (instruction, broadcast mode) the class
 * uses, with the signature, names and operand extents of the kernel ABI (ir/pe/kernel_abi.h).
 * The kernels perform the same float operations in the same order as the interpreter
 * (runtime/sim.c), with no fast-math flags and no contraction, so both paths give
 * bit-identical results; cycles come from the cost model either way (docs/cycle-model.md).
 * The backend writes the text into the plan (backend/plan/llvm_kernels.c); the runtime's JIT
 * regenerates it from the loaded programs and compiles the regenerated text (runtime/jit_llvm.c),
 * so a plan's kernel files are never code the runtime runs.
 */
#ifndef WAFERC_IR_PE_KERNEL_GEN_H
#define WAFERC_IR_PE_KERNEL_GEN_H

#include "ir/pe/kernel_abi.h"

/* The text of class c's kernel module (a header comment, then the LLVM IR), malloc'd; NULL
 * when c uses no instruction a kernel covers. Deterministic: the same class gives the same
 * bytes. The first call loads libwaferc_llvm (and libLLVM with it); NULL with the reason in
 * why[0..cap) when that library cannot be loaded (why[0] == 0: no kernels). */
char *wf_kernel_gen_text(const wf_pe_class *c, char *why, size_t cap);
/* Calls fn(instr, name, user) once per distinct kernel of c (instruction and broadcast mode),
 * in order of first use; returns their count (fn NULL: only counts). */
int wf_kernel_gen_each(const wf_pe_class *c, void (*fn)(const wf_pe_instr *, const char *, void *), void *user);

/* libwaferc_llvm's (ir/pe/kernel_gen_llvm.c): wf_kernel_gen_text's work, which libwaferc
 * reaches through wf_llvm_symbol; only code in libwaferc_llvm calls it by name. */
char *wf_llvm_kernel_gen_text(const wf_pe_class *c);

#endif
