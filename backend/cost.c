/* The backend's cost model: predicted cycles per op, written to the manifest beside which
 * waferrun reports the simulated cycles. Built from the same rules the runtime charges
 * (docs/cycle-model.md), but ignoring contention between steps. */
#include "backend/lower.h"

/* Reduce paper, T_MESSAGE = T_BCAST = B + P + 2 T_R (hop_cycles per hop). */
int64_t wf_cost_bcast(const wf_target *t, int64_t wavelets, int hops) {
  if (hops <= 0 || wavelets <= 0) return 0;
  return wavelets + (int64_t)hops * t->hop_cycles + 2 * t->ramp_cycles;
}

/* Store-and-forward chain to x = 0 (each of the pes-1 hops: a full message of B wavelets,
 * its ramp latencies and one hop), then a flooding broadcast back over pes-1 hops. */
int64_t wf_cost_chain_allreduce(const wf_target *t, int64_t wavelets, int pes) {
  if (pes <= 1) return 0;
  return (int64_t)(pes - 1) * wf_cost_bcast(t, wavelets, 1) + wf_cost_bcast(t, wavelets, pes - 1);
}
