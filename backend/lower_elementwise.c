/* Elementwise ops: purely local on matching blocks. A rank-1 operand [N] {N_x} against a
 * rank-2 [M, N] {M_y, N_x} is the bias case: every PE holds the bias block for its columns
 * (replicated along y at load time), so the broadcast costs no communication. */
#include <string.h>

#include "backend/lower.h"
#include "waferc/diag.h"

static int unary_peop(const wf_lower *L, const wf_op *op, wf_peop *out) {
  switch (op->code) {
    case WF_OP_NEG: *out = WF_PEOP_NEG; return 0;
    case WF_OP_EXP: *out = WF_PEOP_EXP; return 0;
    case WF_OP_LOG: *out = WF_PEOP_LOG; return 0;
    case WF_OP_SQRT: *out = WF_PEOP_SQRT; return 0;
    case WF_OP_RSQRT: *out = WF_PEOP_RSQRT; return 0;
    case WF_OP_RECIPROCAL: *out = WF_PEOP_RECIP; return 0;
    case WF_OP_TANH: *out = WF_PEOP_TANH; return 0;
    case WF_OP_SIGMOID: *out = WF_PEOP_SIGMOID; return 0;
    case WF_OP_RELU: *out = WF_PEOP_RELU; return 0;
    case WF_OP_SILU: *out = WF_PEOP_SILU; return 0;
    case WF_OP_GELU: {
      const char *approx = wf_op_str(L->f, op, "approximate", "none");
      *out = !strcmp(approx, "tanh") ? WF_PEOP_GELU_TANH : WF_PEOP_GELU;
      return 0;
    }
    default: return -1;
  }
}

static int binary_peop(wf_opcode code, wf_peop *out, int *commutes) {
  *commutes = 1;
  switch (code) {
    case WF_OP_ADD: *out = WF_PEOP_ADD; return 0;
    case WF_OP_MUL: *out = WF_PEOP_MUL; return 0;
    case WF_OP_MAXIMUM: *out = WF_PEOP_MAX; return 0;
    case WF_OP_MINIMUM: *out = WF_PEOP_MIN; return 0;
    case WF_OP_SUB: *out = WF_PEOP_SUB; *commutes = 0; return 0;
    case WF_OP_DIV: *out = WF_PEOP_DIV; *commutes = 0; return 0;
    default: return -1;
  }
}

static int64_t per_elem(const wf_target *t, wf_peop op) {
  switch (wf_peops[op].cost) {
    case WF_PECOST_EXP: return t->exp_cycles;
    case WF_PECOST_DIV: return t->div_cycles;
    default: return 1;
  }
}

int wf_lower_elementwise(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value r = op->results[0];
  int64_t m, n;
  wf_lower_block(L, r, &m, &n);
  int sr = wf_lower_sym(L, r);
  wf_peop pop;
  out->lowering = "local";
  if (op->n_operands == 1) {
    if (unary_peop(L, op, &pop)) goto unsupported;
    int sa = wf_lower_sym(L, op->operands[0]);
    wf_emit(L, NULL, pop, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sa), wf_arg_int(m * n)});
    out->predicted = m * n * per_elem(L->t, pop);
    return 0;
  }
  int commutes;
  if (op->n_operands != 2 || binary_peop(op->code, &pop, &commutes)) goto unsupported;
  wf_value a = op->operands[0], b = op->operands[1];
  int ra = wf_value_type(f, a)->rank, rb = wf_value_type(f, b)->rank, rr = wf_value_type(f, r)->rank;
  if (ra < rb) {
    if (!commutes) {
      wf_error(op->loc, "'%s' with a rank-%d left operand broadcast against rank %d is not "
                        "supported by the phase-1 lowering", wf_opinfos[op->code].name, ra, rb);
      return WF_EXIT_UNSUPPORTED;
    }
    wf_value tmp = a;
    a = b;
    b = tmp;
    int tr = ra;
    ra = rb;
    rb = tr;
  }
  int64_t am, an, bm, bn;
  wf_lower_block(L, a, &am, &an);
  wf_lower_block(L, b, &bm, &bn);
  int mode;
  if (ra == rr && rb == ra && bm == m && bn == n && am == m && an == n) mode = WF_BMODE_IJ;
  else if (ra == rr && rb == 1 && bn == n && am == m && an == n) mode = WF_BMODE_J;
  else {
    wf_error(op->loc, "'%s' broadcast between these shapes is not supported by the phase-1 "
                      "lowering (same shape, or [M,N] with [N], only)", wf_opinfos[op->code].name);
    return WF_EXIT_UNSUPPORTED;
  }
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b);
  wf_emit(L, NULL, pop,
          (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sa), wf_arg_sym(sb), wf_arg_int(m), wf_arg_int(n),
                        wf_arg_int(mode)});
  out->predicted = m * n * per_elem(L->t, pop);
  return 0;
unsupported:
  wf_error(op->loc, "op '%s' has no phase-1 lowering", wf_opinfos[op->code].name);
  return WF_EXIT_UNSUPPORTED;
}
