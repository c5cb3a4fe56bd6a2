/* The JIT: compiles a plan's kernels/<class>.ll with LLVM ORC LLJIT and serves them to the
 * simulator as its compute hook (runtime/jit.h). Part of libwaferc_llvm, which runtime/jit.c
 * loads on first use (ir/pe/llvm_lib.h); the hook itself (wf_jit_compute) is libwaferc's.
 *
 * Each module is optimised with LLVM's default O2 pipeline for the host before it is added.
 * That is safe for bit-identity because the kernels carry no fast-math flags: LLVM may
 * vectorise the elementwise loops (each element still sees the same operations) but may not
 * reassociate a reduction nor fuse a multiply-add. */
#include <cjson/cJSON.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/pe/kernel_abi.h"
#include "ir/pe/kernel_gen.h"
#include "ir/support/fsutil.h"
#include "runtime/jit_impl.h"
#include "waferc/diag.h"


static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  /* LLVM's diagnostics span lines (source line, caret): keep the first line only, so the
   * warning stays one line. */
  char *nl = strchr(why, '\n');
  if (nl) *nl = 0;
  for (size_t n = strlen(why); n && (why[n - 1] == ' ' || why[n - 1] == ':'); n--) why[n - 1] = 0;
}

/* Consumes err; writes "what: message" into why. */
static void say_llvm(char *why, size_t cap, const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  say(why, cap, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
}

static cJSON *read_manifest_kernels(const wf_plan *p, cJSON **root, char *why, size_t cap) {
  char path[1100];
  snprintf(path, sizeof path, "%s/manifest.json", p->dir);
  size_t got = 0;
  char *text = wf_read_file(path, &got);
  *root = NULL;
  if (!text) {
    say(why, cap, "cannot read %s", path);
    return NULL;
  }
  *root = cJSON_ParseWithLength(text, got);
  free(text);
  if (!*root) {
    say(why, cap, "%s does not parse", path);
    return NULL;
  }
  cJSON *k = cJSON_GetObjectItemCaseSensitive(*root, "kernels");
  return cJSON_IsArray(k) ? k : NULL;
}

static LLVMTargetMachineRef host_machine(char *why, size_t cap) {
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *err = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    say(why, cap, "no LLVM target for %s: %s", triple, err ? err : "?");
    LLVMDisposeMessage(err);
  } else {
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault,
                                 LLVMRelocDefault, LLVMCodeModelJITDefault);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    if (!tm) say(why, cap, "cannot create an LLVM target machine for %s", triple);
  }
  LLVMDisposeMessage(triple);
  return tm;
}

/* The only external symbols a generated kernel calls (ir/pe/kernel_gen.c, libm()): the libm
 * functions the interpreter calls too. LLVM intrinsics (llvm.memset) are not symbols of the
 * process. Anything else a kernel declares (system, fopen, ...) is refused. */
static const char *const kernel_symbols[] = {"expf", "logf", "tanhf", "erff", "sqrtf", "cosf", "sinf"};

static int allowed_symbol(const char *name) {
  for (size_t i = 0; i < sizeof kernel_symbols / sizeof kernel_symbols[0]; i++)
    if (!strcmp(name, kernel_symbols[i])) return 1;
  return 0;
}

/* The JIT's view of this process: the allowed symbols only, so even a lookup by a name from
 * the manifest cannot reach anything else. */
static int process_symbol_filter(void *ctx, LLVMOrcSymbolStringPoolEntryRef sym) {
  (void)ctx;
  const char *name = LLVMOrcSymbolStringPoolEntryStr(sym);
  /* LLVM lowers the memory intrinsics (llvm.memset) to calls of the C library's. */
  return allowed_symbol(name) || !strcmp(name, "memset") || !strcmp(name, "memcpy") || !strcmp(name, "memmove");
}

/* Defense in depth (add_module compiles only the module it regenerates): before LLVM
 * optimises or compiles it, it must be a valid module of the kernel ABI that calls nothing but
 * its own functions, intrinsics and the allowed libm functions: no other declaration, no
 * inline assembly or indirect call, no integer turned into a pointer, no aliases. 0, or -1
 * with the reason in why. */
static int check_module(LLVMModuleRef mod, const char *path, char *why, size_t cap) {
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    say(why, cap, "%s: not a valid LLVM module: %s", path, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  if (LLVMGetFirstGlobalAlias(mod) || LLVMGetFirstGlobalIFunc(mod)) {
    say(why, cap, "%s: a kernel module may not define aliases or ifuncs", path);
    return -1;
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
    if (LLVMIsDeclaration(g)) {
      say(why, cap, "%s: declares the external variable '%s' (kernels use none)", path, LLVMGetValueName(g));
      return -1;
    }
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    const char *name = LLVMGetValueName(f);
    if (LLVMIsDeclaration(f)) {
      if (LLVMGetIntrinsicID(f) || allowed_symbol(name)) continue;
      say(why, cap, "%s: declares '%s', which generated kernels never call (allowed: expf, logf, tanhf, erff, sqrtf "
                    "and LLVM intrinsics)", path, name);
      return -1;
    }
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        LLVMOpcode op = LLVMGetInstructionOpcode(in);
        if (op == LLVMInvoke || op == LLVMCallBr || op == LLVMIntToPtr) {
          say(why, cap, "%s: function '%s' uses an instruction kernels never use (invoke, callbr or inttoptr)",
              path, name);
          return -1;
        }
        if (op == LLVMCall && !LLVMIsAFunction(LLVMGetCalledValue(in))) {
          say(why, cap, "%s: function '%s' makes an indirect call or uses inline assembly", path, name);
          return -1;
        }
        for (int k = 0; k < LLVMGetNumOperands(in); k++) {
          LLVMValueRef v = LLVMGetOperand(in, (unsigned)k);
          if (v && LLVMIsAConstantExpr(v) && LLVMGetConstOpcode(v) == LLVMIntToPtr) {
            say(why, cap, "%s: function '%s' turns an integer into a pointer", path, name);
            return -1;
          }
        }
      }
  }
  return 0;
}

/* void (float*, float*, float*, i64, i64, i64): ir/pe/kernel_abi.h. */
static int abi_type(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) != LLVMFunctionTypeKind || LLVMIsFunctionVarArg(t) || LLVMCountParamTypes(t) != 6 ||
      LLVMGetTypeKind(LLVMGetReturnType(t)) != LLVMVoidTypeKind)
    return 0;
  LLVMTypeRef ps[6];
  LLVMGetParamTypes(t, ps);
  for (int i = 0; i < 6; i++) {
    if (i < 3 && (LLVMGetTypeKind(ps[i]) != LLVMPointerTypeKind ||
                  LLVMGetTypeKind(LLVMGetElementType(ps[i])) != LLVMFloatTypeKind))
      return 0;
    if (i >= 3 && (LLVMGetTypeKind(ps[i]) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(ps[i]) != 64)) return 0;
  }
  return 1;
}

/* Every function the manifest's entry names must be defined by the module with the kernel
 * ABI: only those are ever called (a name alone could resolve to anything). */
static int check_entry(LLVMModuleRef mod, const cJSON *entry, const char *path, char *why, size_t cap) {
  const cJSON *fns = cJSON_GetObjectItemCaseSensitive(entry, "functions"), *f;
  if (!cJSON_IsArray(fns)) {
    say(why, cap, "manifest.json: the kernels entry of %s has no 'functions' array", path);
    return -1;
  }
  cJSON_ArrayForEach(f, fns) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
    LLVMValueRef def = name ? LLVMGetNamedFunction(mod, name) : NULL;
    if (!def || LLVMIsDeclaration(def) || !abi_type(LLVMGlobalGetValueType(def))) {
      say(why, cap, "manifest.json: kernel function '%s' is not defined by %s with the kernel ABI "
                    "(void (float*, float*, float*, i64, i64, i64))", name ? name : "?", path);
      return -1;
    }
  }
  return 0;
}

/* The kernels of class c are regenerated from its program (ir/pe/kernel_gen.c) and that text
 * is compiled: the plan's file at `path` is only compared with it. A file that differs (an
 * edit, a truncated copy, code written by hand) is refused, or, for a plan loaded with
 * WF_PLAN_ALLOW_MODIFIED, named in a warning and ignored; a plan can therefore never run
 * native code its author wrote. 0 on success; -1 with the reason in why. */
static int add_module(wf_jit *j, LLVMTargetMachineRef tm, const wf_plan *p, const wf_pe_class *c, const char *path,
                      const cJSON *entry, char *why, size_t cap) {
  char *err = NULL;
  char *text = wf_llvm_kernel_gen_text(c);
  if (!text) {
    say(why, cap, "manifest.json: class '%s' has a kernels entry, but its program uses no instruction a kernel covers",
        c->name);
    j->rejected = 1;
    return -1;
  }
  size_t got = 0;
  char *file = wf_read_file(path, &got);
  if (!file || got != strlen(text) || memcmp(file, text, got)) {
    if (!p->allow_modified) {
      say(why, cap, "%s: %s the kernels waferc generates from class '%s''s program (the runtime compiles only "
                    "those; recompile the plan, or pass --allow-modified-plan to run it with the regenerated kernels)",
          path, file ? "is not" : "is missing:", c->name);
      free(file);
      free(text);
      j->rejected = 1;
      return -1;
    }
    wf_warning(WF_LOC_NONE, "%s %s the kernels of class '%s''s program: running the regenerated kernels", path,
               file ? "differs from" : "is missing; it holds", c->name);
  }
  free(file);
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), path);
  free(text);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef mod;
  if (LLVMParseIRInContext(LLVMOrcThreadSafeContextGetContext(tsc), buf, &mod, &err)) {
    say(why, cap, "%s: %s", path, err ? err : "kernel file does not parse");
    LLVMDisposeMessage(err);
    LLVMOrcDisposeThreadSafeContext(tsc);
    j->rejected = 1;
    return -1;
  }
  if (check_module(mod, path, why, cap) || check_entry(mod, entry, path, why, cap)) {
    LLVMDisposeModule(mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    j->rejected = 1;
    return -1;
  }
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  char *dls = LLVMCopyStringRepOfTargetData(dl);
  LLVMSetDataLayout(mod, dls);
  LLVMDisposeMessage(dls);
  LLVMDisposeTargetData(dl);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, "default<O2>", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    say_llvm(why, cap, path, e);
    LLVMDisposeModule(mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    return -1;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc); /* the module keeps the context alive */
  e = LLVMOrcLLJITAddLLVMIRModule(j->lljit, LLVMOrcLLJITGetMainJITDylib(j->lljit), tsm);
  if (e) {
    LLVMOrcDisposeThreadSafeModule(tsm);
    say_llvm(why, cap, path, e);
    return -1;
  }
  return 0;
}

static int find_class(const wf_plan *p, const char *name) {
  for (int i = 0; i < p->n_classes; i++)
    if (!strcmp(p->classes[i]->name, name)) return i;
  return -1;
}

/* Files every kernel of class ci under its instruction and mode, by the list the generator
 * itself walks (not by the manifest's names and ops, which could bind a kernel to another
 * instruction). */
typedef struct bind_ctx {
  wf_jit *j;
  int ci, failed;
  char *why;
  size_t cap;
} bind_ctx;

static void bind_one(const wf_pe_instr *in, const char *name, void *user) {
  bind_ctx *b = user;
  if (b->failed) return;
  int mode = wf_kernel_mode(in);
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef e = LLVMOrcLLJITLookup(b->j->lljit, &addr, name);
  if (e) {
    say_llvm(b->why, b->cap, name, e);
    b->failed = 1;
    return;
  }
  b->j->cls[b->ci].fn[in->op][mode < 0 ? 0 : mode] = (wf_kernel_fn)(uintptr_t)addr;
  b->j->n_kernels++;
}

static int bind_functions(wf_jit *j, const wf_plan *p, int ci, char *why, size_t cap) {
  bind_ctx b = {j, ci, 0, why, cap};
  wf_kernel_gen_each(p->classes[ci], bind_one, &b);
  return b.failed ? -1 : 0;
}

wf_jit *wf_llvm_jit_load_ex(const wf_plan *p, char *why, size_t cap, int *rejected) {
  why[0] = 0;
  if (rejected) *rejected = 0;
  cJSON *root;
  cJSON *kernels = read_manifest_kernels(p, &root, why, cap);
  if (!kernels || !cJSON_GetArraySize(kernels)) {
    cJSON_Delete(root);
    return NULL;
  }
  wf_jit *j = calloc(1, sizeof *j);
  WF_ASSERT(j != NULL);
  j->n_classes = p->n_classes;
  j->cls = calloc((size_t)p->n_classes + 1, sizeof *j->cls);
  WF_ASSERT(j->cls);
  LLVMTargetMachineRef tm = NULL;
  int ok = 0;
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    say(why, cap, "LLVM has no native target for this host");
    goto done;
  }
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->lljit, NULL);
  if (e) {
    j->lljit = NULL;
    say_llvm(why, cap, "cannot create the ORC LLJIT", e);
    goto done;
  }
  /* Kernels call libm (expf, erff, ...): resolve them from this process, as the interpreter. */
  LLVMOrcDefinitionGeneratorRef gen;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(j->lljit), process_symbol_filter, NULL);
  if (e) {
    say_llvm(why, cap, "cannot expose the process's symbols to the JIT", e);
    goto done;
  }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(j->lljit), gen);
  if (!(tm = host_machine(why, cap))) goto done;
  const cJSON *entry;
  cJSON_ArrayForEach(entry, kernels) {
    const char *cls = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "class"));
    const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "file"));
    int ci = cls ? find_class(p, cls) : -1;
    if (ci < 0 || !file || strstr(file, "..")) {
      say(why, cap, "manifest.json: a kernels entry names an unknown class or a bad file");
      j->rejected = 1;
      goto done;
    }
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", p->dir, file);
    if (add_module(j, tm, p, p->classes[ci], path, entry, why, cap) || bind_functions(j, p, ci, why, cap)) goto done;
  }
  ok = 1;
done:
  if (tm) LLVMDisposeTargetMachine(tm);
  cJSON_Delete(root);
  if (!ok) {
    if (rejected) *rejected = j->rejected;
    wf_llvm_jit_free(j);
    return NULL;
  }
  return j;
}

void wf_llvm_jit_free(wf_jit *j) {
  if (!j) return;
  if (j->lljit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->lljit);
    if (e) LLVMConsumeError(e);
  }
  free(j->cls);
  free(j);
}
