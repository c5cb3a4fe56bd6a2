/* Guards that can never hold on a PE. A guard is a conjunction; a condition that names no
 * loop variable (x, y, W, H, the step parameters R and C, constants) has one value for the
 * whole run on a given PE (wf_sim_set_step is refused once the run has started). So each PE
 * gets, on its first fetch, a bit per instruction of its class: set when one of these
 * conditions is false, and the fetch skips that instruction without evaluating its guard,
 * as it would after evaluating it. Shift GEMMs fetch long loops of instructions of which
 * each PE runs a few (the roles of INTERLEAVE), so most guards are decided here once.
 * PEs with the same bits share one copy (a hash table per run), so the memory grows with
 * the distinct roles, not with the PE count. A guard whose bit is clear has every such
 * condition true, so a fetch evaluates only the conditions that name a loop variable (a
 * mask per instruction and class, wf_sim_guard_holds). Nothing simulated depends on this. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

typedef struct wf_guard_mask {
  uint64_t hash;
  int cls;
  uint64_t *bits;
} wf_guard_mask;

static int static_cond(const wf_pe_cond *c) {
  return c->a.kind != WF_TERM_VAR && c->b.kind != WF_TERM_VAR;
}

/* Returns the table slot for (cls, bits): the interned copy, or an empty slot. */
static wf_guard_mask *slot(wf_sim *s, int cls, const uint64_t *bits, size_t words, uint64_t h) {
  size_t cap = s->n_gmask_cap, i = (size_t)h & (cap - 1);
  for (;; i = (i + 1) & (cap - 1)) {
    wf_guard_mask *m = &s->gmask[i];
    if (!m->bits) return m;
    if (m->hash == h && m->cls == cls && !memcmp(m->bits, bits, words * sizeof *bits)) return m;
  }
}

static void grow(wf_sim *s) {
  size_t old = s->n_gmask_cap, cap = old ? 2 * old : 64;
  wf_guard_mask *prev = s->gmask;
  s->gmask = calloc(cap, sizeof *s->gmask);
  WF_ASSERT(s->gmask != NULL);
  s->n_gmask_cap = cap;
  for (size_t i = 0; i < old; i++)
    if (prev[i].bits) {
      size_t j = (size_t)prev[i].hash & (cap - 1);
      while (s->gmask[j].bits) j = (j + 1) & (cap - 1);
      s->gmask[j] = prev[i];
    }
  free(prev);
}

const uint64_t *wf_sim_guard_skip(wf_sim *s, wf_pe *p) {
  const wf_pe_class *c = p->cls;
  size_t words = ((size_t)c->n_code + 63) / 64 + 1;
  uint64_t *bits = calloc(words, sizeof *bits);
  WF_ASSERT(bits != NULL);
  for (int i = 0; i < c->n_code; i++) {
    const wf_pe_guard *g = &c->code[i].guard;
    for (int k = 0; k < g->n; k++) {
      if (!static_cond(&g->c[k])) continue;
      wf_pe_guard one = {1, {g->c[k]}};
      if (!wf_guard_eval(&one, &p->env)) {
        bits[i / 64] |= 1ull << (i % 64);
        break;
      }
    }
  }
  uint64_t h = 1469598103934665603ull ^ (uint64_t)p->cls_i;
  for (size_t w = 0; w < words; w++) h = (h ^ bits[w]) * 1099511628211ull;
  if (2 * (s->n_gmask + 1) > s->n_gmask_cap) grow(s);
  wf_guard_mask *m = slot(s, p->cls_i, bits, words, h);
  if (m->bits) {
    free(bits);
  } else {
    m->hash = h;
    m->cls = p->cls_i;
    m->bits = bits;
    s->n_gmask++;
  }
  p->skip = m->bits;
  return m->bits;
}

void wf_sim_guard_free(wf_sim *s) {
  for (size_t i = 0; i < s->n_gmask_cap; i++) free(s->gmask[i].bits);
  free(s->gmask);
  s->gmask = NULL;
  s->n_gmask = s->n_gmask_cap = 0;
}

void wf_sim_guard_init(wf_sim *s) {
  const wf_plan *plan = s->plan;
  s->gvar = calloc((size_t)plan->n_classes + 1, sizeof *s->gvar);
  s->gloop = calloc((size_t)plan->n_classes + 1, sizeof *s->gloop);
  WF_ASSERT(s->gvar != NULL && s->gloop != NULL);
  for (int k = 0; k < plan->n_classes; k++) {
    const wf_pe_class *c = plan->classes[k];
    s->gvar[k] = calloc((size_t)c->n_code + 1, 1);
    s->gloop[k] = calloc(((size_t)c->n_code + 63) / 64 + 1, sizeof **s->gloop);
    WF_ASSERT(s->gvar[k] != NULL && s->gloop[k] != NULL);
    for (int i = 0; i < c->n_code; i++) {
      for (int j = 0; j < c->code[i].guard.n; j++)
        if (!static_cond(&c->code[i].guard.c[j])) s->gvar[k][i] |= (uint8_t)(1u << j);
      if (c->code[i].op == WF_PEOP_LOOP) s->gloop[k][i / 64] |= 1ull << (i % 64);
    }
  }
}

void wf_sim_guard_vars_free(wf_sim *s) {
  if (!s->gvar) return;
  for (int k = 0; k < s->plan->n_classes; k++) {
    free(s->gvar[k]);
    free(s->gloop[k]);
  }
  free(s->gvar);
  free(s->gloop);
  s->gvar = NULL;
  s->gloop = NULL;
}
