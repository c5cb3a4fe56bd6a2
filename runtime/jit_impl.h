/* Internal to the JIT: the compiled kernels as both halves see them, the loader in
 * libwaferc_llvm (runtime/jit_llvm.c) and the compute hook in libwaferc (runtime/jit.c). */
#ifndef WAFERC_RUNTIME_JIT_IMPL_H
#define WAFERC_RUNTIME_JIT_IMPL_H

#include "ir/pe/kernel_abi.h"
#include "runtime/jit.h"

/* Kernels of one class, indexed by instruction and broadcast mode (slot 0 without a mode). */
typedef struct jit_class {
  wf_kernel_fn fn[WF_PEOP_COUNT][3];
} jit_class;

struct wf_jit {
  struct LLVMOrcOpaqueLLJIT *lljit; /* LLVMOrcLLJITRef (llvm-c/LLJIT.h) */
  jit_class *cls; /* [n_classes] */
  int n_classes;
  int n_kernels;
  int rejected; /* the plan's kernels, not the host, are at fault */
};

/* libwaferc_llvm's (runtime/jit_llvm.c): wf_jit_load_ex's and wf_jit_free's work, which
 * runtime/jit.c reaches through wf_llvm_symbol. */
wf_jit *wf_llvm_jit_load_ex(const wf_plan *p, char *why, size_t cap, int *rejected);
void wf_llvm_jit_free(wf_jit *j);

#endif
