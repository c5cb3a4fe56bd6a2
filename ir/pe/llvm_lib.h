/* waferc — libwaferc_llvm, loaded on first use.
 *
 * Everything that needs LLVM (the kernels' IR, ir/pe/kernel_gen_llvm.c, and the JIT,
 * runtime/jit_llvm.c) lives in a library of its own beside libwaferc, which loads it with
 * dlopen the first time a tool makes kernels or JIT-compiles them. A tool that does neither
 * (wafer-opt, waferc --emit=ir or --interpret, waferrun --mode=timing, wafer-moe, ...) never
 * maps libLLVM, whose loading and relocation cost every run about 13 ms.
 *
 *   char why[512];
 *   void *f = wf_llvm_symbol("wf_llvm_kernel_gen_text", why, sizeof why);
 *   if (!f) ...why says which file could not be loaded and dlerror's reason
 */
#ifndef WAFERC_IR_PE_LLVM_LIB_H
#define WAFERC_IR_PE_LLVM_LIB_H

#include <stddef.h>

/* The address of `name` in libwaferc_llvm (loaded from libwaferc's own directory the first
 * time, then kept); NULL with the reason in why[0..cap) when the library or the symbol cannot
 * be found. */
void *wf_llvm_symbol(const char *name, char *why, size_t cap);

#endif
