/* waferc — per-class compute kernels as LLVM IR (the plan's kernels/<class>.ll).
 *
 * The backend writes one module per class holding one function per (instruction, broadcast
 * mode) the class uses; waferrun JIT-compiles them (runtime/jit.c) and calls them in place of
 * its interpreter loops. Every kernel has the same C signature
 *
 *   void wf_<class>_<mnemonic>[_<mode>](float *p0, float *p1, float *p2,
 *                                       int64_t n0, int64_t n1, int64_t n2);
 *
 * p0.. are the instruction's buffer operands in order (d, then s...), n0.. its integer
 * operands in order, evaluated for the PE; unused slots are NULL / 0. The kernels perform the
 * same float operations in the same order as the interpreter (runtime/sim.c), with no
 * fast-math flags and no contraction, so both paths give bit-identical results; cycles come
 * from the cost model either way (docs/cycle-model.md).
 *
 * This header is plain C (no LLVM types): the runtime uses the coverage and extent rules
 * below to check operand bounds before it calls a kernel.
 */
#ifndef WAFERC_BACKEND_LLVM_KERNELS_H
#define WAFERC_BACKEND_LLVM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/pe_program.h"

#define WF_KERNEL_MAX_PTRS 3
#define WF_KERNEL_MAX_INTS 3

typedef void (*wf_kernel_fn)(float *p0, float *p1, float *p2, int64_t n0, int64_t n1,
                             int64_t n2);

/* 1 if instruction `op` has a compute kernel. */
int wf_kernel_covers(wf_peop op);
/* Broadcast mode baked into the kernel of `in` (WF_BMODE_*), or -1 for ops without one. */
int wf_kernel_mode(const wf_pe_instr *in);
/* Kernel symbol of `in` in class `cls`: wf_<class>_<mnemonic>[_<mode>], with characters other
 * than [A-Za-z0-9_] of the class name replaced by '_'. */
void wf_kernel_name(const char *cls, const wf_pe_instr *in, char *buf, size_t cap);
/* Words each buffer operand of `op` (mode `mode`) touches, given the evaluated integer
 * operands `n`. Returns the number of buffer operands. */
int wf_kernel_extents(wf_peop op, int mode, const int64_t *n, int64_t *words);

/* Writes plan_dir/kernels/<class>.ll for class c (the directory is created). Returns a
 * WF_EXIT_* code. */
int wf_llvm_kernels_write(const wf_pe_class *c, const char *plan_dir);
/* The manifest's entry for class c's kernels (a cJSON object, as void * to keep cJSON out of
 * this header), or NULL when c uses no covered instruction. */
void *wf_llvm_kernels_manifest(const wf_pe_class *c);

#endif
