/* Flow sets: what one phase sends, their per-link bytes, hops and Eq. 1's estimate. */
#include <stdlib.h>
#include <string.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"

void wf_die_flows_add(wf_die_flows *f, int src, int dst, double bytes, int step) {
  if (src == dst || bytes <= 0) return;
  if (f->n == f->cap) {
    f->cap = f->cap ? f->cap * 2 : 64;
    f->v = realloc(f->v, f->cap * sizeof *f->v);
    WF_ASSERT(f->v != NULL);
  }
  f->v[f->n++] = (wf_die_flow){src, dst, bytes, step};
  if (step + 1 > f->steps) f->steps = step + 1;
}

void wf_die_flows_append(wf_die_flows *f, const wf_die_flows *g, int step_offset) {
  for (size_t i = 0; i < g->n; i++)
    wf_die_flows_add(f, g->v[i].src, g->v[i].dst, g->v[i].bytes, g->v[i].step + step_offset);
}

void wf_die_flows_free(wf_die_flows *f) {
  free(f->v);
  memset(f, 0, sizeof *f);
}

void wf_die_flows_link_bytes(const wf_die_system *s, const wf_die_flows *f, double *loads) {
  int *route = malloc(sizeof(int) * (size_t)s->n);
  WF_ASSERT(route != NULL);
  memset(loads, 0, sizeof(double) * (size_t)s->n * 4);
  for (size_t i = 0; i < f->n; i++) {
    int h = wf_die_route(s, f->v[i].src, f->v[i].dst, route, s->n);
    WF_ASSERT(h >= 0 && "a flow between dies no healthy path joins");
    for (int k = 0; k < h; k++) loads[route[k]] += f->v[i].bytes;
  }
  free(route);
}

double wf_die_flows_mean_hops(const wf_die_system *s, const wf_die_flows *f) {
  double bh = 0, b = 0;
  for (size_t i = 0; i < f->n; i++) {
    bh += f->v[i].bytes * wf_die_hops(s, f->v[i].src, f->v[i].dst);
    b += f->v[i].bytes;
  }
  return b > 0 ? bh / b : 0;
}

/* Eq. 1 takes one bandwidth and one latency: a D2D link's (border links are slower, which
 * Eq. 1 does not see; the simulation does). */
double wf_die_flows_eq1(const wf_die_system *s, const wf_die_flows *f) {
  double total = 0;
  double *vol = calloc((size_t)s->n, sizeof *vol), *vh = calloc((size_t)s->n, sizeof *vh);
  WF_ASSERT(vol && vh);
  for (int st = 0; st < f->steps; st++) {
    memset(vol, 0, sizeof *vol * (size_t)s->n);
    memset(vh, 0, sizeof *vh * (size_t)s->n);
    for (size_t i = 0; i < f->n; i++)
      if (f->v[i].step == st) {
        vol[f->v[i].dst] += f->v[i].bytes;
        vh[f->v[i].dst] += f->v[i].bytes * wf_die_hops(s, f->v[i].src, f->v[i].dst);
      }
    double worst = 0;
    for (int d = 0; d < s->n; d++)
      if (vol[d] > 0) {
        double hops = vh[d] / vol[d];
        double t = (vol[d] / s->t.link_bw + s->t.link_latency) * hops;
        if (t > worst) worst = t;
      }
    total += worst;
  }
  free(vol);
  free(vh);
  return total;
}
