/* WATOS's global optimizer (§IV-D, Fig. 12): a genetic algorithm over the recomputation
 * configuration R, the placement and the Mem_pairs A, with five operators:
 *   Op1  R variation: one op of one stage recomputes in a different number of layers;
 *   Op2  R crossover: two stages swap their choices for the ops from a cut onwards;
 *   Op3  placement variation: two stages (or a stage and a free slot) swap places;
 *   Op4  A variation: part of a Sender's Mem_pair moves to the cheapest Helper with room;
 *   Op5  A crossover: two Senders swap Helpers.
 * Fitness is t_max x GlobalCost (t_max alone for one stage), lower is better; the best share
 * omega of each generation survives as is (elitism), the rest come from binary tournaments.
 * Infeasible children (a die's DRAM overflows) are dropped. The plan returned is the one with
 * the least iteration time the GA saw, which includes the seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"

static unsigned rnd(unsigned *st) { /* xorshift32: the same seed gives the same search */
  unsigned x = *st;
  x ^= x << 13, x ^= x >> 17, x ^= x << 5;
  return *st = x ? x : 0x9e3779b9u;
}
static int rint_(unsigned *st, int n) { return n > 0 ? (int)(rnd(st) % (unsigned)n) : 0; }

static double fitness(const wf_train_plan *p) {
  if (!p->feasible) return INFINITY;
  return p->pp > 1 ? p->t_max * p->global_cost : p->t_max;
}

static void op1(wf_train_plan *p, unsigned *st) {
  int s = rint_(st, p->pp), c = rint_(st, 2), k = 1 + rint_(st, WF_OP_N - 1);
  if (!p->st[s].kind_layers[c]) c = !c;
  p->st[s].recomp[c][k] = rint_(st, p->st[s].kind_layers[c] + 1);
}

static void op2(wf_train_plan *a, const wf_train_plan *b, unsigned *st) {
  int s = rint_(st, a->pp), cut = 1 + rint_(st, WF_OP_N - 1);
  for (int c = 0; c < 2; c++)
    for (int k = cut; k < WF_OP_N; k++) {
      int v = b->st[s].recomp[c][k];
      a->st[s].recomp[c][k] = v < a->st[s].kind_layers[c] ? v : a->st[s].kind_layers[c];
    }
  /* and a second stage of a takes b's choice for the same ops */
  int s2 = rint_(st, a->pp);
  for (int c = 0; c < 2; c++)
    for (int k = cut; k < WF_OP_N; k++) {
      int v = b->st[s2].recomp[c][k];
      a->st[s2].recomp[c][k] = v < a->st[s2].kind_layers[c] ? v : a->st[s2].kind_layers[c];
    }
}

static void op3(wf_train_plan *p, unsigned *st) {
  int i = rint_(st, p->pp), sl = rint_(st, p->slots), j = -1;
  for (int k = 0; k < p->pp; k++)
    if (p->slot[k] == sl) j = k;
  if (j >= 0) p->slot[j] = p->slot[i];
  p->slot[i] = sl;
}

static void op4(const wf_die_system *s, wf_train_plan *p, unsigned *st) {
  if (!p->nalloc) return;
  int a = rint_(st, p->nalloc);
  wf_train_alloc *A = &p->alloc[a];
  double in[WF_MAX_STAGES] = {0};
  for (int i = 0; i < p->nalloc; i++) in[p->alloc[i].helper] += p->alloc[i].bytes;
  /* the cheapest Helper (fewest hops from the Sender, round dead links) with room */
  int best = -1, bh = 1 << 30;
  for (int h = 0; h < p->pp; h++) {
    if (h == A->sender) continue;
    double room = p->st[h].cap - p->st[h].mem - in[h];
    if (room <= 0) continue;
    int d = wf_train_route_hops(s, wf_train_stage_die(s, p, A->sender, 0), wf_train_stage_die(s, p, h, 0));
    if (d >= 0 && d < bh) bh = d, best = h;
  }
  if (best < 0 || best == A->helper) return;
  double room = p->st[best].cap - p->st[best].mem - in[best];
  double move = fmin(room, A->bytes * (0.25 + 0.75 * (rnd(st) % 1000) / 999.0));
  A->bytes -= move;
  if (p->nalloc < WF_MAX_PAIRS) p->alloc[p->nalloc++] = (wf_train_alloc){A->sender, best, move};
  else A->bytes += move;
}

static void op5(wf_train_plan *p, unsigned *st) {
  if (p->nalloc < 2) return;
  int a = rint_(st, p->nalloc), b = rint_(st, p->nalloc);
  if (p->alloc[a].sender == p->alloc[b].sender) return;
  int h = p->alloc[a].helper;
  p->alloc[a].helper = p->alloc[b].helper;
  p->alloc[b].helper = h;
  for (int k = 0; k < 2; k++) { /* a Sender cannot be its own Helper */
    wf_train_alloc *A = &p->alloc[k ? b : a];
    if (A->helper == A->sender) {
      int t = p->alloc[a].helper;
      p->alloc[a].helper = p->alloc[b].helper;
      p->alloc[b].helper = t;
      return;
    }
  }
}

/* Merges duplicate pairs and drops empty ones, so the genome stays small. */
static void tidy(wf_train_plan *p) {
  int n = 0;
  for (int i = 0; i < p->nalloc; i++) {
    if (p->alloc[i].bytes <= 1) continue;
    int j = 0;
    for (; j < n; j++)
      if (p->alloc[j].sender == p->alloc[i].sender && p->alloc[j].helper == p->alloc[i].helper) break;
    if (j < n) p->alloc[j].bytes += p->alloc[i].bytes;
    else p->alloc[n++] = p->alloc[i];
  }
  p->nalloc = n;
}

void wf_train_ga(const wf_die_system *s, const wf_train_work *w, const wf_train_search_opts *o, wf_train_plan *seed) {
  int P = o->ga_pop < 4 ? 4 : o->ga_pop;
  wf_train_plan *pop = malloc(sizeof *pop * (size_t)P), *nxt = malloc(sizeof *nxt * (size_t)P);
  double *fit = malloc(sizeof *fit * (size_t)P), *nfit = malloc(sizeof *nfit * (size_t)P);
  WF_ASSERT(pop && nxt && fit && nfit);
  unsigned st = o->seed * 2654435761u + 1;
  wf_train_evaluate(s, w, seed);
  wf_train_plan best = *seed;
  for (int i = 0; i < P; i++) {
    pop[i] = *seed;
    for (int k = 0; i && k < 2; k++) {
      wf_train_plan c = pop[i];
      switch (rint_(&st, 3)) {
      case 0: op1(&c, &st); break;
      case 1: op3(&c, &st); break;
      default: op4(s, &c, &st); break;
      }
      tidy(&c);
      if (!wf_train_evaluate(s, w, &c)) pop[i] = c;
    }
    fit[i] = fitness(&pop[i]);
  }
  int elite = (int)ceil(o->ga_elite * P);
  if (elite < 1) elite = 1;
  for (int gen = 0; gen < o->ga_steps; gen++) {
    /* Elites: the fittest `elite` individuals, by selection. */
    int *idx = malloc(sizeof *idx * (size_t)P);
    WF_ASSERT(idx != NULL);
    for (int i = 0; i < P; i++) idx[i] = i;
    for (int i = 1; i < P; i++)
      for (int j = i; j > 0 && fit[idx[j]] < fit[idx[j - 1]]; j--) { int x = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = x; }
    for (int i = 0; i < elite; i++) nxt[i] = pop[idx[i]], nfit[i] = fit[idx[i]];
    free(idx);
    for (int i = elite; i < P; i++) {
      int a = rint_(&st, P), b = rint_(&st, P), c = rint_(&st, P), d = rint_(&st, P);
      const wf_train_plan *pa = fit[a] <= fit[b] ? &pop[a] : &pop[b], *pb = fit[c] <= fit[d] ? &pop[c] : &pop[d];
      wf_train_plan ch = *pa;
      int r = rint_(&st, 5);
      if (r == 0) op1(&ch, &st);
      else if (r == 1) op2(&ch, pb, &st);
      else if (r == 2) op3(&ch, &st);
      else if (r == 3) op4(s, &ch, &st);
      else op5(&ch, &st);
      tidy(&ch);
      if (wf_train_evaluate(s, w, &ch)) ch = *pa; /* infeasible: the parent stays */
      nxt[i] = ch, nfit[i] = fitness(&ch);
      if (ch.feasible && ch.iter_s < best.iter_s) best = ch;
    }
    wf_train_plan *t = pop; pop = nxt; nxt = t;
    double *tf = fit; fit = nfit; nfit = tf;
  }
  *seed = best;
  free(pop), free(nxt), free(fit), free(nfit);
}
