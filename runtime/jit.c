/* The JIT's libwaferc half (runtime/jit.h): loading and freeing go to libwaferc_llvm
 * (runtime/jit_llvm.c), loaded the first time a plan's kernels are compiled
 * (ir/pe/llvm_lib.h), so a run that JIT-compiles nothing never maps libLLVM; the compute hook
 * calls the compiled kernels directly. */
#include <stdio.h>
#include <string.h>

#include "ir/pe/llvm_lib.h"
#include "runtime/jit_impl.h"
#include "waferc/diag.h"

typedef wf_jit *(*load_fn)(const wf_plan *p, char *why, size_t cap, int *rejected);
typedef void (*free_fn)(wf_jit *j);
static free_fn g_free; /* set with the first wf_jit made */

wf_jit *wf_jit_load(const wf_plan *p, char *why, size_t cap) { return wf_jit_load_ex(p, why, cap, NULL); }

wf_jit *wf_jit_load_ex(const wf_plan *p, char *why, size_t cap, int *rejected) {
  why[0] = 0;
  if (rejected) *rejected = 0;
  load_fn load = (load_fn)wf_llvm_symbol("wf_llvm_jit_load_ex", why, cap);
  free_fn fr = (free_fn)wf_llvm_symbol("wf_llvm_jit_free", why, cap);
  if (!load || !fr) return NULL; /* the caller warns with `why` and interprets */
  g_free = fr;
  return load(p, why, cap, rejected);
}

void wf_jit_free(wf_jit *j) {
  if (j) g_free(j); /* a wf_jit exists only once the library is loaded */
}

int wf_jit_kernel_count(const wf_jit *j) { return j ? j->n_kernels : 0; }

int wf_jit_compute(void *user, const wf_pe_class *cls, int cls_index, const wf_pe_instr *in,
                   float *mem, const wf_pe_env *env) {
  const wf_jit *j = user;
  if (cls_index < 0 || cls_index >= j->n_classes || !wf_kernel_covers(in->op)) return 1;
  int mode = wf_kernel_mode(in);
  if (mode > WF_BMODE_J) return 1;
  wf_kernel_fn fn = j->cls[cls_index].fn[in->op][mode < 0 ? 0 : mode];
  if (!fn) return 1;
  const char *sig = wf_peops[in->op].sig;
  float *ptr[WF_KERNEL_MAX_PTRS] = {NULL, NULL, NULL};
  int64_t n[WF_KERNEL_MAX_INTS] = {0, 0, 0}, words[WF_KERNEL_MAX_PTRS];
  int np = 0, nn = 0;
  for (int a = 0; sig[a]; a++) {
    if (sig[a] == 'n' && nn < WF_KERNEL_MAX_INTS) n[nn++] = wf_pe_arg_int(&in->args[a], env);
    else if ((sig[a] == 'd' || sig[a] == 's') && np < WF_KERNEL_MAX_PTRS) np++;
  }
  int nb = wf_kernel_extents(in->op, mode, n, words);
  WF_ASSERT(nb == np);
  /* Any doubtful operand goes to the interpreter, which names it in its error. */
  for (int a = 0, b = 0; sig[a]; a++) {
    if (sig[a] != 'd' && sig[a] != 's') continue;
    const wf_pe_sym *sym = &cls->syms[in->args[a].sym];
    int64_t off = wf_pe_arg_off(&in->args[a], env);
    if (words[b] < 0 || off < 0 || off + words[b] > sym->bytes / 4) return 1;
    ptr[b++] = mem + sym->offset / 4 + off;
  }
  for (int k = 0; k < nn; k++)
    if (n[k] < 0) return 1;
  fn(ptr[0], ptr[1], ptr[2], n[0], n[1], n[2]);
  return 0;
}
