/* softmax over the last axis of X[M, N] {M_y, N_x}: the axis is split along x, so the row
 * max and the row sum need an allreduce along each row of PEs. Phase 1 uses a chain:
 * partials flow west to x = 0 (combined as they arrive: recvmax / recvadd), then x = 0
 * floods the result back east. Every value crosses the fabric as wavelets. */
#include "backend/lower.h"
#include "waferc/diag.h"

/* Allreduce of the m-vector `sym` along x with `recv_op` (RECVMAX or RECVADD). */
static void chain_allreduce(wf_lower *L, int sym, int64_t m, wf_peop recv_op, int cred, int cbc) {
  wf_pe_term tx = wf_term(WF_TERM_X, 0), last = wf_term(WF_TERM_W, -1), zero = wf_term_int(0);
  wf_pe_guard east_end = wf_guard0(), not_east = wf_guard0(), middle = wf_guard0(),
              root = wf_guard0(), rest = wf_guard0();
  wf_guard_add(&east_end, tx, WF_CMP_EQ, last);
  wf_guard_add(&not_east, tx, WF_CMP_LT, last);
  wf_guard_add(&middle, tx, WF_CMP_GT, zero);
  wf_guard_add(&middle, tx, WF_CMP_LT, last);
  wf_guard_add(&root, tx, WF_CMP_EQ, zero);
  wf_guard_add(&rest, tx, WF_CMP_GT, zero);
  wf_emit(L, &east_end, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cred), wf_arg_sym(sym), wf_arg_int(m)});
  wf_emit(L, &not_east, recv_op, (wf_pe_arg[]){wf_arg_int(cred), wf_arg_sym(sym), wf_arg_int(m)});
  wf_emit(L, &middle, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cred), wf_arg_sym(sym), wf_arg_int(m)});
  wf_emit(L, &root, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(cbc), wf_arg_sym(sym), wf_arg_int(m)});
  wf_emit(L, &rest, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(cbc), wf_arg_sym(sym), wf_arg_int(m)});
}

int wf_lower_softmax(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], yv = op->results[0];
  const wf_type *t = wf_value_type(L->f, xv);
  int64_t axis = wf_op_int(L->f, op, "axis", -1);
  if (axis < 0) axis += t->rank;
  if (axis != t->rank - 1) {
    wf_error(op->loc, "softmax lowering supports the last axis only (got axis %lld)", (long long)axis);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t m, n;
  wf_lower_block(L, xv, &m, &n);
  int sx = wf_lower_sym(L, xv), sy = wf_lower_sym(L, yv);
  int red = wf_lower_temp(L, "$row_stat", m * 4);
  int cred = -1, cbc = -1;
  if (L->w > 1) {
    cred = wf_lower_color(L, WF_COLOR_REDUCE_X, op->loc);
    cbc = wf_lower_color(L, WF_COLOR_BCAST_X, op->loc);
    if (cred < 0 || cbc < 0) return WF_EXIT_NOFIT;
  }
  wf_pe_arg mn[2] = {wf_arg_int(m), wf_arg_int(n)};
  wf_emit(L, NULL, WF_PEOP_RMAX, (wf_pe_arg[]){wf_arg_sym(red), wf_arg_sym(sx), mn[0], mn[1]});
  if (L->w > 1) chain_allreduce(L, red, m, WF_PEOP_RECVMAX, cred, cbc);
  wf_emit(L, NULL, WF_PEOP_SUB,
          (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sx), wf_arg_sym(red), mn[0], mn[1], wf_arg_int(WF_BMODE_I)});
  wf_emit(L, NULL, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_int(m * n)});
  wf_emit(L, NULL, WF_PEOP_RSUM, (wf_pe_arg[]){wf_arg_sym(red), wf_arg_sym(sy), mn[0], mn[1]});
  if (L->w > 1) chain_allreduce(L, red, m, WF_PEOP_RECVADD, cred, cbc);
  wf_emit(L, NULL, WF_PEOP_DIV,
          (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sy), wf_arg_sym(red), mn[0], mn[1], wf_arg_int(WF_BMODE_I)});
  out->lowering = L->w > 1 ? "local+chain-allreduce-x" : "local";
  int64_t mn_ = m * n;
  out->predicted = mn_ * (3 + L->t->exp_cycles + L->t->div_cycles) +
                   2 * wf_cost_chain_allreduce(L->t, m, L->w);
  return 0;
}
