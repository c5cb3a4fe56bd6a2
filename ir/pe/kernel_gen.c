/* The kernels of a class (ir/pe/kernel_gen.h): which ones it has, without LLVM, and their
 * text, from libwaferc_llvm (ir/pe/kernel_gen_llvm.c), loaded the first time a tool asks for
 * it (ir/pe/llvm_lib.h). */
#include <stdio.h>
#include <string.h>

#include "ir/pe/kernel_gen.h"
#include "ir/pe/llvm_lib.h"
#include "waferc/diag.h"

int wf_kernel_gen_each(const wf_pe_class *c, void (*fn)(const wf_pe_instr *, const char *, void *),
                           void *user) {
  char seen[64][96];
  int n = 0;
  for (int i = 0; i < c->n_code; i++) {
    const wf_pe_instr *in = &c->code[i];
    if (!wf_kernel_covers(in->op)) continue;
    char name[96];
    wf_kernel_name(c->name, in, name, sizeof name);
    int dup = 0;
    for (int k = 0; k < n && !dup; k++) dup = !strcmp(seen[k], name);
    if (dup) continue;
    WF_ASSERT(n < 64);
    snprintf(seen[n++], sizeof seen[0], "%s", name);
    if (fn) fn(in, name, user);
  }
  return n;
}

typedef char *(*gen_text_fn)(const wf_pe_class *c);

char *wf_kernel_gen_text(const wf_pe_class *c, char *why, size_t cap) {
  static gen_text_fn gen;
  if (cap) why[0] = 0;
  if (!wf_kernel_gen_each(c, NULL, NULL)) return NULL;
  if (!gen && !(gen = (gen_text_fn)wf_llvm_symbol("wf_llvm_kernel_gen_text", why, cap))) return NULL;
  return gen(c);
}
