/* Expert placement with shadow slots and the balancers that fill them (MoEntwine §V-C): the
 * greedy EPLB-like one and the topology-aware Alg. 1. Timing the copies is the caller's job
 * (tools/wafer-moe/balance.c); this file only decides what goes where. */
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "waferc/diag.h"

static void add_rep(wf_moe_placement *p, int e, int d) { p->rep_of[(size_t)e * p->max_rep + p->nrep[e]++] = d; }

static int hosts(const wf_moe_placement *p, int e, int d) {
  for (int i = 0; i < p->nrep[e]; i++)
    if (p->rep_of[(size_t)e * p->max_rep + i] == d) return 1;
  return 0;
}

void wf_moe_placement_init(wf_moe_placement *p, int n, int experts, int slots) {
  p->n = n, p->experts = experts, p->slots = slots, p->max_rep = n;
  p->native = malloc(sizeof(int) * (size_t)experts);
  p->nrep = calloc((size_t)experts, sizeof(int));
  p->shadow = malloc(sizeof(int) * (size_t)(n * slots > 0 ? n * slots : 1));
  p->rep_of = malloc(sizeof(int) * (size_t)experts * n);
  WF_ASSERT(p->native && p->nrep && p->shadow && p->rep_of);
  for (int i = 0; i < n * slots; i++) p->shadow[i] = -1;
  /* Natives: expert e on die e % n; with fewer experts than dies, die d holds expert d % E. */
  if (experts >= n)
    for (int e = 0; e < experts; e++) add_rep(p, e, e % n);
  else
    for (int d = 0; d < n; d++) add_rep(p, d % experts, d);
  for (int e = 0; e < experts; e++) p->native[e] = p->rep_of[(size_t)e * p->max_rep];
}

void wf_moe_placement_copy(wf_moe_placement *dst, const wf_moe_placement *src) {
  wf_moe_placement_init(dst, src->n, src->experts, src->slots);
  memcpy(dst->nrep, src->nrep, sizeof(int) * (size_t)src->experts);
  memcpy(dst->shadow, src->shadow, sizeof(int) * (size_t)(src->n * src->slots));
  memcpy(dst->rep_of, src->rep_of, sizeof(int) * (size_t)src->experts * src->n);
}

void wf_moe_placement_free(wf_moe_placement *p) {
  free(p->native);
  free(p->nrep);
  free(p->shadow);
  free(p->rep_of);
  memset(p, 0, sizeof *p);
}

void wf_moe_device_heat(const wf_moe_placement *p, const double *load, double *heat) {
  for (int d = 0; d < p->n; d++) heat[d] = 0;
  for (int e = 0; e < p->experts; e++)
    for (int i = 0; i < p->nrep[e]; i++) heat[p->rep_of[(size_t)e * p->max_rep + i]] += load[e] / p->nrep[e];
}

static int free_slot(const wf_moe_placement *p, int d) {
  for (int k = 0; k < p->slots; k++)
    if (p->shadow[d * p->slots + k] < 0) return d * p->slots + k;
  return -1;
}

/* The placement with natives only (every plan starts from it, as Alg. 1's Num = 1). */
static void reset_shadows(wf_moe_placement *p) {
  for (int i = 0; i < p->n * p->slots; i++) p->shadow[i] = -1;
  for (int e = 0; e < p->experts; e++) p->nrep[e] = 0;
  if (p->experts >= p->n)
    for (int e = 0; e < p->experts; e++) add_rep(p, e, e % p->n);
  else
    for (int d = 0; d < p->n; d++) add_rep(p, d % p->experts, d);
}

static void place(wf_moe_placement *p, int e, int d) {
  int slot = free_slot(p, d);
  WF_ASSERT(slot >= 0);
  p->shadow[slot] = e;
  add_rep(p, e, d);
}

/* Greedy (EPLB-like): the globally hottest expert (per copy) to the coldest die with a free
 * slot, while that lowers the peak; topology plays no part. */
static void plan_greedy(const wf_die_system *s, const double *load, wf_moe_placement *p, double *heat) {
  for (;;) {
    wf_moe_device_heat(p, load, heat);
    double peak = 0;
    for (int d = 0; d < p->n; d++)
      if (heat[d] > peak) peak = heat[d];
    int src = -1;
    for (int e = 0; e < p->experts; e++)
      if (p->nrep[e] < p->n && (src < 0 || load[e] / p->nrep[e] > load[src] / p->nrep[src])) src = e;
    if (src < 0) return;
    int dst = -1;
    for (int d = 0; d < p->n; d++)
      if (free_slot(p, d) >= 0 && !hosts(p, src, d) && (dst < 0 || heat[d] < heat[dst])) dst = d;
    if (dst < 0 || heat[dst] + load[src] / (p->nrep[src] + 1) >= peak) return;
    place(p, src, dst);
  }
}

/* MoEntwine Alg. 1: the hottest die's hottest expert goes to the nearest die whose heat stays
 * below the hottest's once it takes a share; stop when no such die has a free slot. "Stays
 * below" is the paper's text (heat + load / (copies + 1) < peak); its listing's line 5 reads
 * heat < peak - load / copies, which stops early when one expert makes most of a die's heat. */
static void plan_topology(const wf_die_system *s, const double *load, wf_moe_placement *p, double *heat) {
  for (;;) {
    wf_moe_device_heat(p, load, heat);
    int hot = 0;
    for (int d = 1; d < p->n; d++)
      if (heat[d] > heat[hot]) hot = d;
    int src = -1;
    for (int e = 0; e < p->experts; e++)
      if (hosts(p, e, hot) && (src < 0 || load[e] / p->nrep[e] > load[src] / p->nrep[src])) src = e;
    if (src < 0 || load[src] <= 0) return;
    double share = load[src] / (p->nrep[src] + 1);
    int dst = -1;
    for (int d = 0; d < p->n; d++) {
      if (heat[d] + share >= heat[hot] || hosts(p, src, d) || free_slot(p, d) < 0) continue;
      if (dst < 0 || wf_die_hops(s, hot, d) < wf_die_hops(s, hot, dst)) dst = d;
    }
    if (dst < 0) return;
    place(p, src, dst);
  }
}

int wf_moe_rebalance(const wf_die_system *s, wf_moe_balancer b, const double *predicted, wf_moe_placement *p,
                     wf_moe_migration *mig, int cap) {
  if (b == WF_BAL_NONE || p->slots == 0) return 0;
  wf_moe_placement old;
  wf_moe_placement_copy(&old, p);
  double *heat = malloc(sizeof(double) * (size_t)p->n);
  WF_ASSERT(heat != NULL);
  reset_shadows(p);
  if (b == WF_BAL_GREEDY) plan_greedy(s, predicted, p, heat);
  else plan_topology(s, predicted, p, heat);
  int n = 0;
  for (int i = 0; i < p->n * p->slots; i++) {
    int e = p->shadow[i], d = i / p->slots;
    if (e < 0 || hosts(&old, e, d)) continue; /* already there: nothing moves */
    /* The copy comes from the nearest die that holds the expert now. */
    int src = -1;
    for (int k = 0; k < old.nrep[e]; k++) {
      int h = old.rep_of[(size_t)e * old.max_rep + k];
      if (src < 0 || wf_die_hops(s, h, d) < wf_die_hops(s, src, d)) src = h;
    }
    if (n < cap) mig[n] = (wf_moe_migration){e, src, d};
    n++;
  }
  free(heat);
  wf_moe_placement_free(&old);
  return n < cap ? n : cap;
}
