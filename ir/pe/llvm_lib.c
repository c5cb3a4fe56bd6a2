/* Loading libwaferc_llvm on first use (ir/pe/llvm_lib.h). The library is looked for in the
 * directory libwaferc itself was loaded from (dladdr), which is right for the build tree
 * (build/lib) and for an installation (its libdir) alike, then by the dynamic loader's own
 * search (LD_LIBRARY_PATH, ld.so.cache). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ir/pe/llvm_lib.h"

#ifndef WF_LLVM_LIB_NAME
#define WF_LLVM_LIB_NAME "libwaferc_llvm.so"
#endif

static void *g_lib;

static void *open_lib(char *why, size_t cap) {
  Dl_info info;
  char path[4096] = "";
  if (dladdr((void *)&wf_llvm_symbol, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash)
      snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, WF_LLVM_LIB_NAME);
  }
  void *h = path[0] ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) h = dlopen(WF_LLVM_LIB_NAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *err = dlerror();
    snprintf(why, cap, "cannot load %s: %s", path[0] ? path : WF_LLVM_LIB_NAME, err ? err : "not found");
  }
  return h;
}

void *wf_llvm_symbol(const char *name, char *why, size_t cap) {
  if (cap) why[0] = 0;
  if (!g_lib && !(g_lib = open_lib(why, cap))) return NULL;
  void *f = dlsym(g_lib, name);
  if (!f) snprintf(why, cap, "%s has no symbol %s", WF_LLVM_LIB_NAME, name);
  return f;
}
