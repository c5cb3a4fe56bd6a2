/* matmul C[M,N] = A[M,K] · B[K,N] on a P x P region, SUMMA with flooding broadcasts.
 *
 * Layouts (partition): A {M_y, K_x}, B {K_y, N_x}, C {M_y, N_x}; PE (x, y) holds A's block
 * (y, x), B's block (y, x) and computes C's block (y, x). In step k of P, PE (k, y)
 * multicasts its A block along row y and PE (x, k) its B block along column x; every PE
 * multiplies the two blocks it has (its own or the received copy) into C. The A and B
 * blocks travel as real wavelets; nothing is pre-replicated. */
#include "backend/lower.h"
#include "waferc/diag.h"

int wf_lower_matmul(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  const wf_type *ta = wf_value_type(f, a), *tb = wf_value_type(f, b);
  if (ta->rank != 2 || tb->rank != 2) {
    wf_error(op->loc, "matmul lowering supports rank-2 operands only (got rank %d and %d)", ta->rank,
             tb->rank);
    return WF_EXIT_UNSUPPORTED;
  }
  if (L->w != L->h) {
    wf_error(op->loc, "matmul lowering (SUMMA broadcast) needs a square mesh; the region is %dx%d",
             L->w, L->h);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t m, ka, kb, n, r, cc;
  wf_lower_block(L, a, &m, &ka);
  wf_lower_block(L, b, &kb, &n);
  wf_lower_block(L, c, &r, &cc);
  WF_ASSERT(ka == kb && r == m && cc == n);
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b), sc = wf_lower_sym(L, c);
  int p = L->w;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(m * n)});
  if (p == 1) {
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sa), wf_arg_sym(sb), wf_arg_int(m), wf_arg_int(ka),
                          wf_arg_int(n)});
  } else {
    int crow = wf_lower_color(L, WF_COLOR_ROW_BCAST, op->loc);
    int ccol = wf_lower_color(L, WF_COLOR_COL_BCAST, op->loc);
    if (crow < 0 || ccol < 0) return WF_EXIT_NOFIT;
    int at = wf_lower_temp(L, "$a_recv", m * ka * 4), bt = wf_lower_temp(L, "$b_recv", kb * n * 4);
    int k = wf_pe_class_find_var(L->cls, "k", 1);
    wf_pe_term tk = wf_term_var(k, 0), tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
    wf_emit(L, NULL, WF_PEOP_LOOP,
            (wf_pe_arg[]){wf_arg_term(wf_term_var(k, 0)), wf_arg_int(0), wf_arg_term(wf_term(WF_TERM_W, 0))});
    wf_pe_guard xk = wf_guard0(), xn = wf_guard0(), yk = wf_guard0(), yn = wf_guard0();
    wf_guard_add(&xk, tx, WF_CMP_EQ, tk);
    wf_guard_add(&xn, tx, WF_CMP_NE, tk);
    wf_guard_add(&yk, ty, WF_CMP_EQ, tk);
    wf_guard_add(&yn, ty, WF_CMP_NE, tk);
    wf_emit(L, &xk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(sa), wf_arg_int(m * ka)});
    wf_emit(L, &xn, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(crow), wf_arg_sym(at), wf_arg_int(m * ka)});
    wf_emit(L, &yk, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(sb), wf_arg_int(kb * n)});
    wf_emit(L, &yn, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(ccol), wf_arg_sym(bt), wf_arg_int(kb * n)});
    /* Four roles per step: which of A and B this PE owns itself. */
    for (int own_a = 1; own_a >= 0; own_a--)
      for (int own_b = 1; own_b >= 0; own_b--) {
        wf_pe_guard g = wf_guard0();
        wf_guard_add(&g, tx, own_a ? WF_CMP_EQ : WF_CMP_NE, tk);
        wf_guard_add(&g, ty, own_b ? WF_CMP_EQ : WF_CMP_NE, tk);
        wf_emit(L, &g, WF_PEOP_MATMUL,
                (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(own_a ? sa : at), wf_arg_sym(own_b ? sb : bt),
                              wf_arg_int(m), wf_arg_int(ka), wf_arg_int(n)});
      }
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  out->lowering = p == 1 ? "local" : "summa-broadcast";
  out->predicted = wf_cost_summa(L->t, p, m, ka, n);
  return 0;
}
