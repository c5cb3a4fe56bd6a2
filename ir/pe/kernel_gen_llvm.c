/* Per-class compute kernels as LLVM IR, built with the LLVM-C API (contract:
 * ir/pe/kernel_abi.h). Part of libwaferc_llvm, which libwaferc loads on first use
 * (ir/pe/llvm_lib.h), so that a tool that makes no kernel does not load libLLVM. The backend writes the text to plan/kernels/<class>.ll
 * (backend/plan/llvm_kernels.c); the runtime's JIT regenerates the same text from the class's
 * program and compiles that, never a kernel file (runtime/jit.c).
 *
 * Bit-identity with the interpreter (runtime/sim.c) is the point of every choice here: each
 * kernel issues the same IEEE operations in the same order as the interpreter's C loops,
 * carries no fast-math flags (so LLVM neither reassociates nor fuses a multiply and an add),
 * and calls the same libm functions (expf, erff, ...) the interpreter calls. Float constants
 * are given as the exact float the C source's `f` literal denotes. */
#include <llvm-c/Core.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/pe/kernel_gen.h"
#include "waferc/diag.h"

/* ---- IR generation -------------------------------------------------------------------- */

typedef struct kgen {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMTypeRef f32, i64, fptr;
  LLVMValueRef p[3], n[3];
} kgen;

/* A counted loop `for (i = 0; i < n; i++)` in SSA form, optionally carrying one float. */
typedef struct kloop {
  LLVMBasicBlockRef head, exit;
  LLVMValueRef i, acc;
} kloop;

static kloop loop_begin(kgen *g, LLVMValueRef n, const char *var, LLVMValueRef acc_init) {
  kloop l = {0};
  char name[32];
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  snprintf(name, sizeof name, "%s.head", var);
  l.head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
  snprintf(name, sizeof name, "%s.body", var);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
  snprintf(name, sizeof name, "%s.exit", var);
  l.exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
  LLVMBuildBr(g->b, l.head);
  LLVMPositionBuilderAtEnd(g->b, l.head);
  l.i = LLVMBuildPhi(g->b, g->i64, var);
  LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
  LLVMAddIncoming(l.i, &zero, &pre, 1);
  if (acc_init) {
    l.acc = LLVMBuildPhi(g->b, g->f32, "acc");
    LLVMAddIncoming(l.acc, &acc_init, &pre, 1);
  }
  LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, l.i, n, "more");
  LLVMBuildCondBr(g->b, more, body, l.exit);
  LLVMPositionBuilderAtEnd(g->b, body);
  return l;
}

/* Closes the loop; returns the carried value after the last iteration. */
static LLVMValueRef loop_end(kgen *g, kloop *l, LLVMValueRef acc_next) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMValueRef next = LLVMBuildNSWAdd(g->b, l->i, LLVMConstInt(g->i64, 1, 0), "next");
  LLVMBuildBr(g->b, l->head);
  LLVMAddIncoming(l->i, &next, &latch, 1);
  LLVMMoveBasicBlockAfter(l->exit, latch); /* reads top to bottom in the .ll */
  if (l->acc) LLVMAddIncoming(l->acc, &acc_next, &latch, 1);
  LLVMPositionBuilderAtEnd(g->b, l->exit);
  return l->acc;
}

static LLVMValueRef at(kgen *g, int ptr, LLVMValueRef idx, const char *name) {
  return LLVMBuildGEP2(g->b, g->f32, g->p[ptr], &idx, 1, name);
}
static LLVMValueRef load(kgen *g, int ptr, LLVMValueRef idx, const char *name) {
  return LLVMBuildLoad2(g->b, g->f32, at(g, ptr, idx, ""), name);
}
static void store(kgen *g, int ptr, LLVMValueRef idx, LLVMValueRef v) {
  LLVMBuildStore(g->b, v, at(g, ptr, idx, ""));
}
/* row * cols + col */
static LLVMValueRef idx2(kgen *g, LLVMValueRef row, LLVMValueRef cols, LLVMValueRef col) {
  return LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, row, cols, ""), col, "ix");
}
/* The float the C literal denotes, passed through double exactly. */
static LLVMValueRef fconst(kgen *g, float v) { return LLVMConstReal(g->f32, (double)v); }

/* Calls libm's float function `name` (declared on first use). */
static LLVMValueRef libm(kgen *g, const char *name, LLVMValueRef v) {
  LLVMTypeRef ty = LLVMFunctionType(g->f32, &g->f32, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f) f = LLVMAddFunction(g->mod, name, ty);
  return LLVMBuildCall2(g->b, ty, f, &v, 1, name);
}

static LLVMValueRef select_cmp(kgen *g, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b,
                               const char *name) {
  LLVMValueRef c = LLVMBuildFCmp(g->b, pred, a, b, "");
  return LLVMBuildSelect(g->b, c, a, b, name);
}

/* One element of a unary op, as runtime/sim.c's unary() computes it. */
static LLVMValueRef unary_elem(kgen *g, wf_peop op, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef one = fconst(g, 1.0f);
  switch (op) {
    case WF_PEOP_NEG: return LLVMBuildFNeg(b, v, "r");
    case WF_PEOP_RELU: return select_cmp(g, LLVMRealOGT, v, fconst(g, 0.0f), "r");
    case WF_PEOP_EXP: return libm(g, "expf", v);
    case WF_PEOP_LOG: return libm(g, "logf", v);
    case WF_PEOP_TANH: return libm(g, "tanhf", v);
    case WF_PEOP_COS: return libm(g, "cosf", v);
    case WF_PEOP_ERF: return libm(g, "erff", v);
    case WF_PEOP_SIN: return libm(g, "sinf", v);
    case WF_PEOP_SIGMOID:
    case WF_PEOP_SILU: {
      LLVMValueRef e = libm(g, "expf", LLVMBuildFNeg(b, v, "nv"));
      LLVMValueRef den = LLVMBuildFAdd(b, one, e, "den");
      return LLVMBuildFDiv(b, op == WF_PEOP_SIGMOID ? one : v, den, "r");
    }
    case WF_PEOP_GELU: { /* 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) */
      LLVMValueRef half = LLVMBuildFMul(b, fconst(g, 0.5f), v, "hv");
      LLVMValueRef e = libm(g, "erff", LLVMBuildFMul(b, v, fconst(g, 0.70710678118654752f), "s"));
      return LLVMBuildFMul(b, half, LLVMBuildFAdd(b, one, e, "t"), "r");
    }
    case WF_PEOP_GELU_TANH: { /* 0.5f*v*(1.0f + tanhf(0.7978845608028654f*(v + 0.044715f*v*v*v))) */
      LLVMValueRef half = LLVMBuildFMul(b, fconst(g, 0.5f), v, "hv");
      LLVMValueRef c = LLVMBuildFMul(b, fconst(g, 0.044715f), v, "c1");
      c = LLVMBuildFMul(b, c, v, "c2");
      c = LLVMBuildFMul(b, c, v, "c3");
      LLVMValueRef in = LLVMBuildFAdd(b, v, c, "in");
      LLVMValueRef th = libm(g, "tanhf", LLVMBuildFMul(b, fconst(g, 0.7978845608028654f), in, "s"));
      return LLVMBuildFMul(b, half, LLVMBuildFAdd(b, one, th, "t"), "r");
    }
    case WF_PEOP_SQRT: return libm(g, "sqrtf", v);
    case WF_PEOP_RSQRT: return LLVMBuildFDiv(b, one, libm(g, "sqrtf", v), "r");
    case WF_PEOP_RECIP: return LLVMBuildFDiv(b, one, v, "r");
    default: WF_UNREACHABLE("not a unary PE op");
  }
}

static LLVMValueRef binary_elem(kgen *g, wf_peop op, LLVMValueRef a, LLVMValueRef v) {
  switch (op) {
    case WF_PEOP_ADD: return LLVMBuildFAdd(g->b, a, v, "r");
    case WF_PEOP_SUB: return LLVMBuildFSub(g->b, a, v, "r");
    case WF_PEOP_MUL: return LLVMBuildFMul(g->b, a, v, "r");
    case WF_PEOP_DIV: return LLVMBuildFDiv(g->b, a, v, "r");
    case WF_PEOP_MAX: return select_cmp(g, LLVMRealOGT, a, v, "r");
    case WF_PEOP_MIN: return select_cmp(g, LLVMRealOLT, a, v, "r");
    case WF_PEOP_EQ: /* C's == and < are ordered (false on NaN), != unordered (true on NaN) */
      return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOEQ, a, v, ""), fconst(g, 1.0f), fconst(g, 0.0f), "r");
    case WF_PEOP_LT:
      return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, a, v, ""), fconst(g, 1.0f), fconst(g, 0.0f), "r");
    case WF_PEOP_SEL:
      return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNE, a, fconst(g, 0.0f), ""), v, fconst(g, 0.0f), "r");
    default: WF_UNREACHABLE("not a binary PE op");
  }
}

static void gen_body(kgen *g, wf_peop op, int mode) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef four = LLVMConstInt(g->i64, 4, 0);
  switch (op) {
    case WF_PEOP_ZERO:
      LLVMBuildMemSet(b, g->p[0], LLVMConstInt(LLVMInt8TypeInContext(g->ctx), 0, 0),
                      LLVMBuildNSWMul(b, g->n[0], four, "bytes"), 4);
      return;
    case WF_PEOP_COPY: /* the interpreter uses memmove: operands may overlap */
      LLVMBuildMemMove(b, g->p[0], 4, g->p[1], 4, LLVMBuildNSWMul(b, g->n[0], four, "bytes"));
      return;
    case WF_PEOP_MATMUL: { /* c[m x n] += a[m x k] * b[k x n], i-k-j order */
      LLVMValueRef m = g->n[0], k = g->n[1], n = g->n[2];
      kloop li = loop_begin(g, m, "i", NULL);
      kloop lk = loop_begin(g, k, "k", NULL);
      LLVMValueRef av = load(g, 1, idx2(g, li.i, k, lk.i), "av");
      kloop lj = loop_begin(g, n, "j", NULL);
      LLVMValueRef ci = idx2(g, li.i, n, lj.i);
      LLVMValueRef c = load(g, 0, ci, "c");
      LLVMValueRef bv = load(g, 2, idx2(g, lk.i, n, lj.i), "bv");
      store(g, 0, ci, LLVMBuildFAdd(b, c, LLVMBuildFMul(b, av, bv, "prod"), "sum"));
      loop_end(g, &lj, NULL);
      loop_end(g, &lk, NULL);
      loop_end(g, &li, NULL);
      return;
    }
    case WF_PEOP_MATMUL_T: { /* c[m x n] += a[m x k] * b[n x k]^T, i-j-k order, the sum in a register
                              from c's value (the interpreter's order of additions) */
      LLVMValueRef m = g->n[0], k = g->n[1], n = g->n[2];
      kloop li = loop_begin(g, m, "i", NULL);
      kloop lj = loop_begin(g, n, "j", NULL);
      LLVMValueRef ci = idx2(g, li.i, n, lj.i);
      kloop lk = loop_begin(g, k, "k", load(g, 0, ci, "c"));
      LLVMValueRef av = load(g, 1, idx2(g, li.i, k, lk.i), "av");
      LLVMValueRef bv = load(g, 2, idx2(g, lj.i, k, lk.i), "bv");
      LLVMValueRef acc = loop_end(g, &lk, LLVMBuildFAdd(b, lk.acc, LLVMBuildFMul(b, av, bv, "prod"), "sum"));
      store(g, 0, ci, acc);
      loop_end(g, &lj, NULL);
      loop_end(g, &li, NULL);
      return;
    }
    case WF_PEOP_RMAX:
    case WF_PEOP_RSUM: {
      LLVMValueRef m = g->n[0], n = g->n[1];
      kloop li = loop_begin(g, m, "i", NULL);
      LLVMValueRef init = op == WF_PEOP_RMAX ? LLVMConstReal(g->f32, -(double)INFINITY)
                                             : fconst(g, 0.0f);
      kloop lj = loop_begin(g, n, "j", init);
      LLVMValueRef v = load(g, 1, idx2(g, li.i, n, lj.i), "v");
      LLVMValueRef next = op == WF_PEOP_RMAX ? select_cmp(g, LLVMRealOGT, v, lj.acc, "mx")
                                             : LLVMBuildFAdd(b, lj.acc, v, "sum");
      LLVMValueRef acc = loop_end(g, &lj, next);
      store(g, 0, li.i, acc);
      loop_end(g, &li, NULL);
      return;
    }
    default:
      break;
  }
  if (wf_kernel_is_binary(op)) {
    LLVMValueRef m = g->n[0], n = g->n[1];
    kloop li = loop_begin(g, m, "i", NULL);
    kloop lj = loop_begin(g, n, "j", NULL);
    LLVMValueRef ix = idx2(g, li.i, n, lj.i);
    LLVMValueRef bi = mode == WF_BMODE_IJ ? ix : mode == WF_BMODE_I ? li.i : lj.i;
    LLVMValueRef r = binary_elem(g, op, load(g, 1, ix, "a"), load(g, 2, bi, "b"));
    store(g, 0, ix, r);
    loop_end(g, &lj, NULL);
    loop_end(g, &li, NULL);
    return;
  }
  WF_ASSERT(wf_kernel_is_unary(op));
  kloop li = loop_begin(g, g->n[0], "i", NULL);
  store(g, 0, li.i, unary_elem(g, op, load(g, 1, li.i, "v")));
  loop_end(g, &li, NULL);
}

static void gen_kernel(kgen *g, const char *name, wf_peop op, int mode) {
  LLVMTypeRef params[6] = {g->fptr, g->fptr, g->fptr, g->i64, g->i64, g->i64};
  LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), params, 6, 0);
  g->fn = LLVMAddFunction(g->mod, name, ty);
  static const char *const pn[6] = {"p0", "p1", "p2", "n0", "n1", "n2"};
  for (int i = 0; i < 6; i++) LLVMSetValueName2(LLVMGetParam(g->fn, (unsigned)i), pn[i], 2);
  for (int i = 0; i < 3; i++) {
    g->p[i] = LLVMGetParam(g->fn, (unsigned)i);
    g->n[i] = LLVMGetParam(g->fn, (unsigned)i + 3);
  }
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry"));
  gen_body(g, op, mode);
  LLVMBuildRetVoid(g->b);
}

static void add_kernel(const wf_pe_instr *in, const char *name, void *user) {
  gen_kernel(user, name, in->op, wf_kernel_mode(in));
}

char *wf_llvm_kernel_gen_text(const wf_pe_class *c) {
  if (!wf_kernel_gen_each(c, NULL, NULL)) return NULL;
  char modname[256];
  snprintf(modname, sizeof modname, "kernels/%s.ll", c->name);
  kgen g;
  memset(&g, 0, sizeof g);
  g.ctx = LLVMContextCreate();
  g.mod = LLVMModuleCreateWithNameInContext(modname, g.ctx);
  g.b = LLVMCreateBuilderInContext(g.ctx);
  g.f32 = LLVMFloatTypeInContext(g.ctx);
  g.i64 = LLVMInt64TypeInContext(g.ctx);
  g.fptr = LLVMPointerType(g.f32, 0);
  wf_kernel_gen_each(c, add_kernel, &g);
  char *ir = LLVMPrintModuleToString(g.mod);
  static const char head[] =
      "; waferc compute kernels of PE class '%s' (ir/pe/kernel_gen.c).\n"
      "; waferrun JIT-compiles them (ORC LLJIT) in place of its interpreter loops; each does\n"
      "; the interpreter's float operations in the same order, so results are bit-identical.\n"
      "; ABI: void k(float *p0, float *p1, float *p2, i64 n0, i64 n1, i64 n2) = buffer\n"
      "; operands and integer operands of the instruction, in order (ir/pe/kernel_abi.h).\n"
      "; waferrun regenerates this text from the class's program and compiles that: an edited\n"
      "; copy is refused, never run.\n";
  size_t n = strlen(head) + strlen(c->name) + strlen(ir) + 1;
  char *text = malloc(n);
  WF_ASSERT(text);
  int k = snprintf(text, n, head, c->name);
  memcpy(text + k, ir, strlen(ir) + 1);
  LLVMDisposeMessage(ir);
  LLVMDisposeBuilder(g.b);
  LLVMDisposeModule(g.mod);
  LLVMContextDispose(g.ctx);
  return text;
}

