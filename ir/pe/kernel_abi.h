/* waferc — the compute-kernel ABI of a plan: the contract between the kernels the backend
 * writes (plan/kernels/<class>.ll, ir/pe/kernel_gen_llvm.c) and the runtime that
 * JIT-compiles and calls them (runtime/jit_llvm.c). Every kernel has the same C signature
 *
 *   void wf_<class>_<mnemonic>[_<mode>](float *p0, float *p1, float *p2,
 *                                       int64_t n0, int64_t n1, int64_t n2);
 *
 * p0.. are the instruction's buffer operands in order (d, then s...), n0.. its integer
 * operands in order, evaluated for the PE; unused slots are NULL / 0. The runtime uses the
 * coverage and extent rules below to check operand bounds before it calls a kernel. */
#ifndef WAFERC_IR_PE_KERNEL_ABI_H
#define WAFERC_IR_PE_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "ir/pe/pe_program.h"

#define WF_KERNEL_MAX_PTRS 3
#define WF_KERNEL_MAX_INTS 3

typedef void (*wf_kernel_fn)(float *p0, float *p1, float *p2, int64_t n0, int64_t n1,
                             int64_t n2);

/* 1 if instruction `op` has a compute kernel. */
int wf_kernel_covers(wf_peop op);
/* Broadcast mode baked into the kernel of `in` (WF_BMODE_*), or -1 for ops without one. */
int wf_kernel_mode(const wf_pe_instr *in);
/* Kernel shapes by operand signature (peops.def): a binary elementwise op (d = s1 op s2 with
 * a broadcast mode) and a unary one (d = op s). */
int wf_kernel_is_binary(wf_peop op);
int wf_kernel_is_unary(wf_peop op);
/* The suffix of broadcast mode `mode` in kernel names ("ij", "i", "j"), "-" for none. */
const char *wf_kernel_mode_name(int mode);
/* Kernel symbol of `in` in class `cls`: wf_<class>_<mnemonic>[_<mode>], with characters other
 * than [A-Za-z0-9_] of the class name replaced by '_'. */
void wf_kernel_name(const char *cls, const wf_pe_instr *in, char *buf, size_t cap);
/* Words each buffer operand of `op` (mode `mode`) touches, given the evaluated integer
 * operands `n`. Returns the number of buffer operands. */
int wf_kernel_extents(wf_peop op, int mode, const int64_t *n, int64_t *words);

#endif
