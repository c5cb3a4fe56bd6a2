/* waferc runtime — JIT compilation of a plan's compute kernels through LLVM's ORC LLJIT: the
 * kernels regenerated from the classes' programs (ir/pe/kernel_gen_llvm.c), checked against the
 * plan's kernels/<class>.ll (written by backend/plan/llvm_kernels.c) but never compiled from it.
 *
 *   char why[256];
 *   wf_jit *j = wf_jit_load(plan, why, sizeof why);
 *   if (!j && why[0]) wf_warning(WF_LOC_NONE, "JIT unavailable: %s; interpreting", why);
 *   if (j) wf_sim_set_compute_hook(sim, wf_jit_compute, j);   // kernels replace the C loops
 *   ...
 *   wf_sim_free(sim); wf_jit_free(j);
 *
 * Kernels change how fast the host computes a PE's instruction, never what it computes nor
 * the cycles charged for it (docs/cycle-model.md): JIT and interpreter are bit-identical.
 */
#ifndef WAFERC_RUNTIME_JIT_H
#define WAFERC_RUNTIME_JIT_H

#include <stddef.h>

#include "runtime/runtime.h"

typedef struct wf_jit wf_jit;

/* Compiles every kernel the plan's manifest lists. Returns NULL with why[0] == 0 when the plan
 * has no kernels (hand-written plans), NULL with a reason in `why` when LLVM cannot initialise
 * or a kernel file does not compile; the caller warns and interprets. */
wf_jit *wf_jit_load(const wf_plan *p, char *why, size_t cap);
/* wf_jit_load, and *rejected = 1 when the failure is the plan's, not the host's: a kernel
 * file that differs from the text its class's program generates (unless the plan was loaded
 * with WF_PLAN_ALLOW_MODIFIED: then a warning, and the regenerated kernels run), a kernels
 * entry for a class without kernels, or a manifest entry naming a function the regenerated
 * module does not define with the kernel ABI. Such a plan is refused (exit 1), not
 * interpreted. */
wf_jit *wf_jit_load_ex(const wf_plan *p, char *why, size_t cap, int *rejected);
void wf_jit_free(wf_jit *j);
/* Number of compiled kernel functions. */
int wf_jit_kernel_count(const wf_jit *j);

/* A wf_sim_compute_fn (runtime.h) with user = the wf_jit: runs instruction `in` of class
 * `cls_index` on a PE's memory through its kernel. Returns 0 when done, 1 when there is no
 * kernel for it or an operand is out of bounds (the interpreter then executes it and reports
 * the error with its usual message). */
int wf_jit_compute(void *jit, const wf_pe_class *cls, int cls_index, const wf_pe_instr *in,
                   float *mem, const wf_pe_env *env);

#endif
