/* The `phase` markers of a dist.gemm (docs/gemm.md, "Phases"): a file of its own, since
 * every rank-2 lowering calls it and lower_gemm.c calls those lowerings. */
#include "backend/gemm/lower_gemm.h"

void wf_gemm_phase(wf_lower *L, int n) {
  if (L->gemm_phases) wf_emit(L, NULL, WF_PEOP_PHASE, (wf_pe_arg[]){wf_arg_int(n)});
}
