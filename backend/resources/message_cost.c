/* The backend's cost model: predicted cycles per op, written to the manifest beside which
 * waferrun reports the simulated cycles. Built from the same rules the runtime charges
 * (docs/cycle-model.md), but ignoring contention between steps. */
#include "backend/resources/lower.h"

/* Reduce paper, T_MESSAGE = T_BCAST = B + P + 2 T_R (hop_cycles per hop). */
int64_t wf_cost_bcast(const wf_target *t, int64_t wavelets, int hops) {
  if (hops <= 0 || wavelets <= 0) return 0;
  return wavelets + (int64_t)hops * t->hop_cycles + 2 * t->ramp_cycles;
}

