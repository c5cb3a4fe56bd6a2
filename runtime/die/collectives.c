/* Die-level collectives as flow sets: ring allreduce (with or without its all-gather half),
 * ring all-gather, and MoE's attention allreduce and dispatch per mapping. */
#include <stdlib.h>

#include "runtime/die/moe.h"
#include "waferc/diag.h"

/* One ring step: every die sends `chunk` on; bidirectional rings send half each way. */
static void ring_step(wf_die_flows *f, const int *ring, int n, double chunk, int bidir, int step) {
  for (int i = 0; i < n; i++) {
    int next = ring[(i + 1) % n], prev = ring[(i + n - 1) % n];
    if (bidir && n > 2) {
      wf_die_flows_add(f, ring[i], next, chunk / 2, step);
      wf_die_flows_add(f, ring[i], prev, chunk / 2, step);
    } else {
      wf_die_flows_add(f, ring[i], next, chunk, step);
    }
  }
}

int wf_die_ring_allreduce(wf_die_flows *f, const int *ring, int n, double bytes, int with_ag, int bidir, int step0) {
  if (n < 2) return 0;
  int steps = with_ag ? 2 * (n - 1) : n - 1;
  for (int k = 0; k < steps; k++) ring_step(f, ring, n, bytes / n, bidir, step0 + k);
  return steps;
}

int wf_die_ring_allgather(wf_die_flows *f, const int *ring, int n, double shard, int bidir, int step0) {
  if (n < 2) return 0;
  for (int k = 0; k < n - 1; k++) ring_step(f, ring, n, shard, bidir, step0 + k);
  return n - 1;
}

void wf_moe_allreduce_flows(const wf_die_system *s, const wf_moe_mapping *m, double bytes, int with_ag,
                            wf_die_flows *out) {
  int steps = 0;
  for (int g = 0; g < m->groups; g++)
    steps = wf_die_ring_allreduce(out, m->ring + (size_t)g * m->tp, m->tp, bytes,
                                  m->kind == WF_MOE_HER ? 0 : with_ag, 1, 0);
  if (m->kind != WF_MOE_HER) return;
  /* After the reduce-scatter each die holds 1/tp of its group's tokens, distinct from every
   * other die of its wafer; the dies at one position of every wafer exchange them. */
  int K = s->wafers_w * s->wafers_h, per = s->t.dies_w * s->t.dies_h;
  if (K < 2) return;
  int *ring = malloc(sizeof(int) * (size_t)K), *cx = malloc(sizeof(int) * (size_t)K),
      *cy = malloc(sizeof(int) * (size_t)K);
  WF_ASSERT(ring && cx && cy);
  /* The wafers' cycle: the same folding as a ring of dies, over the wafer grid. */
  int n = 0;
  for (int wy = 0; wy < s->wafers_h; wy++)
    for (int i = 0; i < s->wafers_w; i++) cx[n] = wy % 2 ? s->wafers_w - 1 - i : i, cy[n++] = wy;
  for (int p = 0; p < per; p++) {
    int lx = p % s->t.dies_w, ly = p / s->t.dies_w;
    for (int k = 0; k < K; k++) ring[k] = wf_die_id(s, cx[k] * s->t.dies_w + lx, cy[k] * s->t.dies_h + ly);
    wf_die_ring_allgather(out, ring, K, bytes / m->tp, 1, steps);
  }
  free(ring);
  free(cx);
  free(cy);
}

void wf_moe_even_share(int n, int experts, double *share) {
  for (int d = 0; d < n; d++) share[d] = 0;
  if (experts >= n) {
    for (int e = 0; e < experts; e++) share[e % n] += 1.0 / experts;
    return;
  }
  /* Fewer experts than dies: die d hosts a replica of expert d % E; replicas split evenly. */
  for (int d = 0; d < n; d++) {
    int e = d % experts, reps = n / experts + (e < n % experts);
    share[d] = 1.0 / experts / reps;
  }
}

void wf_moe_dispatch_flows(const wf_die_system *s, const wf_moe_mapping *m, const wf_moe_model *md, double tokens,
                           const double *dev_share, int with_ag, wf_die_flows *out) {
  int n = m->n;
  double *even = NULL;
  if (!dev_share) {
    even = malloc(sizeof *even * (size_t)n);
    WF_ASSERT(even != NULL);
    wf_moe_even_share(n, md->experts, even);
    dev_share = even;
  }
  double token_bytes = md->hidden * 2.0; /* FP16 activations */
  if (m->kind != WF_MOE_HER && !with_ag) {
    /* Shards: member r of group g holds tokens/tp of g's tokens, the die's own included. */
    for (int d = 0; d < n; d++)
      for (int i = 0; i < m->groups * m->tp; i++)
        wf_die_flows_add(out, m->ring[i], d, tokens / m->tp * md->active * dev_share[d] * token_bytes, 0);
  } else if (m->kind != WF_MOE_HER) {
    /* Die d gets share[d] of each group's tokens x top-k, from its FTD's die of that group. */
    int *member = malloc(sizeof(int) * (size_t)m->nftd * m->groups);
    WF_ASSERT(member != NULL);
    for (int i = 0; i < m->nftd * m->groups; i++) member[i] = -1;
    for (int d = 0; d < n; d++) member[m->ftd_of[d] * m->groups + m->group_of[d]] = d;
    for (int d = 0; d < n; d++)
      for (int g = 0; g < m->groups; g++) {
        int src = member[m->ftd_of[d] * m->groups + g];
        WF_ASSERT(src >= 0);
        wf_die_flows_add(out, src, d, tokens * md->active * dev_share[d] * token_bytes, 0);
      }
    free(member);
  } else {
    /* HER: each die of a wafer holds tokens/tp of every wafer's group at its position. */
    int K = s->wafers_w * s->wafers_h;
    double held = K * tokens / m->tp;
    for (int d = 0; d < n; d++)
      for (int src = 0; src < n; src++)
        if (wf_die_wafer(s, src) == wf_die_wafer(s, d))
          wf_die_flows_add(out, src, d, held * md->active * dev_share[d] * token_bytes, 0);
  }
  free(even);
}

void wf_moe_reverse(const wf_die_flows *f, wf_die_flows *out) {
  for (size_t i = 0; i < f->n; i++) wf_die_flows_add(out, f->v[i].dst, f->v[i].src, f->v[i].bytes, f->v[i].step);
}
