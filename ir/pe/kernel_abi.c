/* The compute-kernel ABI of a plan (see kernel_abi.h): which PE instructions have a kernel,
 * its symbol name and the words each operand touches. The backend's generator
 * (ir/pe/kernel_gen_llvm.c) and the runtime's JIT (runtime/jit_llvm.c) both follow it. */
#include <stdio.h>
#include <string.h>

#include "ir/pe/kernel_abi.h"

int wf_kernel_covers(wf_peop op) {
  switch (op) {
    case WF_PEOP_ZERO: case WF_PEOP_COPY: case WF_PEOP_MATMUL: case WF_PEOP_MATMUL_T:
    case WF_PEOP_ADD: case WF_PEOP_SUB: case WF_PEOP_MUL: case WF_PEOP_DIV:
    case WF_PEOP_MAX: case WF_PEOP_MIN: case WF_PEOP_EQ: case WF_PEOP_LT: case WF_PEOP_SEL:
    case WF_PEOP_NEG: case WF_PEOP_RELU: case WF_PEOP_EXP: case WF_PEOP_LOG:
    case WF_PEOP_TANH: case WF_PEOP_COS: case WF_PEOP_SIN: case WF_PEOP_ERF: case WF_PEOP_SIGMOID: case WF_PEOP_SILU: case WF_PEOP_GELU:
    case WF_PEOP_GELU_TANH: case WF_PEOP_SQRT: case WF_PEOP_RSQRT: case WF_PEOP_RECIP:
    case WF_PEOP_RMAX: case WF_PEOP_RSUM:
      return 1;
    default:
      return 0;
  }
}

int wf_kernel_is_binary(wf_peop op) { return !strcmp(wf_peops[op].sig, "dssnnm"); }
int wf_kernel_is_unary(wf_peop op) { return !strcmp(wf_peops[op].sig, "dsn"); }

int wf_kernel_mode(const wf_pe_instr *in) {
  if (!wf_kernel_is_binary(in->op)) return -1;
  return (int)in->args[5].term.k;
}

static const char *const mode_names[] = {"ij", "i", "j"};

const char *wf_kernel_mode_name(int mode) {
  return mode >= 0 && mode <= WF_BMODE_J ? mode_names[mode] : "-";
}

void wf_kernel_name(const char *cls, const wf_pe_instr *in, char *buf, size_t cap) {
  char c[64];
  size_t i = 0;
  for (; cls[i] && i + 1 < sizeof c; i++) {
    char ch = cls[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    c[i] = ok ? ch : '_';
  }
  c[i] = 0;
  int mode = wf_kernel_mode(in);
  if (mode >= 0 && mode <= WF_BMODE_J)
    snprintf(buf, cap, "wf_%s_%s_%s", c, wf_peops[in->op].name, mode_names[mode]);
  else snprintf(buf, cap, "wf_%s_%s", c, wf_peops[in->op].name);
}

int wf_kernel_extents(wf_peop op, int mode, const int64_t *n, int64_t *words) {
  switch (op) {
    case WF_PEOP_ZERO: words[0] = n[0]; return 1;
    case WF_PEOP_MATMUL:
    case WF_PEOP_MATMUL_T: /* b is n x k instead of k x n: as many words */
      words[0] = n[0] * n[2];
      words[1] = n[0] * n[1];
      words[2] = n[1] * n[2];
      return 3;
    case WF_PEOP_RMAX:
    case WF_PEOP_RSUM:
      words[0] = n[0];
      words[1] = n[0] * n[1];
      return 2;
    default: break;
  }
  if (wf_kernel_is_binary(op)) {
    words[0] = words[1] = n[0] * n[1];
    words[2] = mode == WF_BMODE_IJ ? n[0] * n[1] : mode == WF_BMODE_I ? n[0] : n[1];
    return 3;
  }
  /* copy and the unary ops: d and s of n[0] words */
  words[0] = words[1] = n[0];
  return 2;
}
