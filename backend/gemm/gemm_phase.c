/* The `phase` markers of a dist.gemm (docs/gemm.md, "Phases") and the rows' skew it takes and
 * gives: a file of its own, since every rank-2 lowering calls them and lower_gemm.c calls
 * those lowerings. */
#include "backend/gemm/lower_gemm.h"

void wf_gemm_phase(wf_lower *L, int n) {
  if (L->gemm_phases) wf_emit(L, NULL, WF_PEOP_PHASE, (wf_pe_arg[]){wf_arg_int(n)});
}

wf_row_skew wf_lower_gemm_skew(const wf_lower *L) {
  wf_row_skew rs = {L->skew_in_ok ? L->skew_in : NULL, L->skew_out, 0};
  return rs;
}
