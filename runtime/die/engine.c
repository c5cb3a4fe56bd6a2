/* Running phases on SimGrid (C API). One platform per process; each phase is one
 * simgrid_run() on it, and its time is the simulated clock's advance.
 *
 * A conductor actor runs the steps: in a step, per source die one sender actor posts its
 * messages (sg_mailbox_put_async), each once its route's latency has passed, and per
 * destination one receiver waits for all of its own; the step ends when all have arrived,
 * which is the barrier between the steps of a ring. */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"

struct wf_die_engine {
  wf_die_system s;
  sg_host_t *die, *hbm;
  unsigned char *routed; /* [n * n]: the pairs the platform has a route for */
};

typedef struct party { /* one actor's messages */
  int n, cap;
  sg_mailbox_t *mb;
  double *bytes;
  double *delay; /* sender: the route's latency, before the message takes bandwidth */
} party;

static void party_add(party *p, sg_mailbox_t mb, double bytes, double delay) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 8;
    p->mb = realloc(p->mb, sizeof *p->mb * (size_t)p->cap);
    p->bytes = realloc(p->bytes, sizeof *p->bytes * (size_t)p->cap);
    p->delay = realloc(p->delay, sizeof *p->delay * (size_t)p->cap);
    WF_ASSERT(p->mb && p->bytes && p->delay);
  }
  p->mb[p->n] = mb;
  p->delay[p->n] = delay;
  p->bytes[p->n++] = bytes;
}

static void party_free(party *p) {
  free(p->mb);
  free(p->bytes);
  free(p->delay);
}

/* Messages start in order of their latency: a message takes no bandwidth until its route's
 * latency has passed (as SimGrid's own latency phase), but the latency is the engine's, not
 * the links': SimGrid's CM02 shares a link in inverse proportion to each flow's route latency
 * (TCP's RTT bias), which D2D links do not have, so the platform's links have none. */
static void sender(int argc, char **argv) {
  party *p = sg_actor_self_get_data();
  sg_comm_t *c = malloc(sizeof *c * (size_t)p->n);
  int *order = malloc(sizeof *order * (size_t)p->n);
  WF_ASSERT(c && order);
  for (int i = 0; i < p->n; i++) {
    int j = i;
    for (; j > 0 && p->delay[order[j - 1]] > p->delay[i]; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  double t0 = simgrid_get_clock();
  for (int k = 0; k < p->n; k++) {
    int i = order[k];
    double wait = t0 + p->delay[i] - simgrid_get_clock();
    if (wait > 0) sg_actor_sleep_for(wait);
    /* SimGrid refuses a NULL payload; the payload is never read. */
    c[k] = sg_mailbox_put_async(p->mb[i], p, (long)(p->bytes[i] + 0.5));
  }
  sg_comm_wait_all(c, (size_t)p->n);
  free(c);
  free(order);
}

static void receiver_of(party *p) {
  sg_comm_t *c = malloc(sizeof *c * (size_t)p->n);
  void *data;
  WF_ASSERT(c != NULL);
  for (int i = 0; i < p->n; i++) c[i] = sg_mailbox_get_async(p->mb[i], &data);
  sg_comm_wait_all(c, (size_t)p->n);
  free(c);
}

static void receiver(int argc, char **argv) { receiver_of(sg_actor_self_get_data()); }

wf_die_engine *wf_die_engine_open(const wf_die_system *s, const wf_die_flows *sets, int nsets, const char *xml) {
  static int opened;
  WF_ASSERT(!opened && "SimGrid holds one platform per process");
  opened = 1;
  if (wf_die_platform_write(s, sets, nsets, xml)) return NULL;
  /* CM02 without cross-traffic and without the TCP window bound: a flow gets its max-min fair
   * share of each link, with no protocol factors (they model TCP, not a D2D link). */
  char *argv[] = {"waferc-die", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                  "--cfg=network/TCP-gamma:0", "--cfg=network/bandwidth-factor:1",
                  "--cfg=network/latency-factor:1", "--cfg=network/weight-S:0",
                  "--log=root.thresh:error", "--log=xbt_cfg.thresh:error", NULL};
  int argc = 9;
  simgrid_init(&argc, argv);
  simgrid_load_platform(xml);
  wf_die_engine *e = calloc(1, sizeof *e);
  WF_ASSERT(e != NULL);
  e->s = *s;
  e->die = calloc((size_t)s->n, sizeof *e->die);
  e->hbm = calloc((size_t)s->n, sizeof *e->hbm);
  WF_ASSERT(e->die && e->hbm);
  e->routed = calloc((size_t)s->n * s->n, 1);
  WF_ASSERT(e->routed != NULL);
  for (int k = 0; k < nsets; k++)
    for (size_t i = 0; i < sets[k].n; i++) e->routed[(size_t)sets[k].v[i].src * s->n + sets[k].v[i].dst] = 1;
  for (int d = 0; d < s->n; d++) {
    char name[32];
    snprintf(name, sizeof name, "d%d", d);
    e->die[d] = sg_host_by_name(name);
    snprintf(name, sizeof name, "m%d", d);
    e->hbm[d] = sg_host_by_name(name);
    WF_ASSERT(e->die[d] && e->hbm[d]);
  }
  return e;
}


void wf_die_engine_close(wf_die_engine *e) {
  if (!e) return;
  free(e->die);
  free(e->hbm);
  free(e->routed);
  free(e);
}

static sg_actor_t spawn(sg_host_t host, void (*code)(int, char **), void *data) {
  sg_actor_t a = sg_actor_init("p", host);
  sg_actor_set_data(a, data);
  sg_actor_ref(a); /* the caller joins or releases it, after it may have ended */
  sg_actor_start_(a, code, 0, NULL);
  return a;
}

/* Posts flows (of one step, or every flow when step < 0) into per-die parties. */
static int collect(const wf_die_system *s, const wf_die_flows *f, int step, party *tx, party *rx,
                   const char *prefix) {
  int k = 0, *route = malloc(sizeof(int) * (size_t)s->n);
  WF_ASSERT(route != NULL);
  for (size_t i = 0; i < f->n; i++) {
    const wf_die_flow *fl = &f->v[i];
    if ((step >= 0 && fl->step != step) || fl->src == fl->dst) continue;
    char name[40];
    snprintf(name, sizeof name, "%s%d", prefix, k++);
    sg_mailbox_t mb = sg_mailbox_by_name(name);
    double lat = 0;
    int h = wf_die_route(s, fl->src, fl->dst, route, s->n);
    for (int j = 0; j < h; j++) lat += wf_die_link_latency(s, route[j]);
    party_add(&tx[fl->src], mb, fl->bytes, lat);
    party_add(&rx[fl->dst], mb, fl->bytes, 0);
  }
  free(route);
  return k;
}

typedef struct bgwait {
  party *rx;
  double *end;
} bgwait;

typedef struct run {
  wf_die_engine *e;
  const wf_die_flows *f, *bg;
  party *tx, *rx;   /* per die, the current step's messages */
  party *btx, *brx; /* per die, the background flows */
  bgwait *bw;       /* the background receivers' data */
  double start, phase_end, bg_end;
} run;

static void bg_waiter(int argc, char **argv) {
  bgwait *w = sg_actor_self_get_data();
  receiver_of(w->rx);
  if (simgrid_get_clock() > *w->end) *w->end = simgrid_get_clock();
}

/* Runs the steps in order; each starts when all of the previous step's messages have
 * arrived. Background flows start with the first step and no barrier waits for them, so
 * the phase's time is what the background costs it and nothing more. */
static void conductor(int argc, char **argv) {
  run *r = sg_actor_self_get_data();
  int n = r->e->s.n;
  if (r->bg && collect(&r->e->s, r->bg, -1, r->btx, r->brx, "b"))
    for (int d = 0; d < n; d++) {
      if (r->btx[d].n) sg_actor_unref(spawn(r->e->die[d], sender, &r->btx[d]));
      if (r->brx[d].n) {
        r->bw[d] = (bgwait){&r->brx[d], &r->bg_end};
        sg_actor_unref(spawn(r->e->die[d], bg_waiter, &r->bw[d]));
      }
    }
  sg_actor_t *act = malloc(sizeof *act * (size_t)n * 2);
  WF_ASSERT(act != NULL);
  for (int st = 0; st < r->f->steps; st++) {
    if (!collect(&r->e->s, r->f, st, r->tx, r->rx, "f")) continue;
    int na = 0;
    for (int d = 0; d < n; d++) {
      if (r->tx[d].n) act[na++] = spawn(r->e->die[d], sender, &r->tx[d]);
      if (r->rx[d].n) act[na++] = spawn(r->e->die[d], receiver, &r->rx[d]);
    }
    for (int i = 0; i < na; i++) {
      sg_actor_join(act[i], -1);
      sg_actor_unref(act[i]);
    }
    for (int d = 0; d < n; d++) r->tx[d].n = r->rx[d].n = 0;
  }
  r->phase_end = simgrid_get_clock();
  free(act);
}

double wf_die_engine_run_with(wf_die_engine *e, const wf_die_flows *f, const wf_die_flows *bg, double *bg_secs) {
  int n = e->s.n;
  /* SimGrid aborts on a pair without a route; name the pair instead (a caller's bug). */
  const wf_die_flows *both[2] = {f, bg};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; both[k] && i < both[k]->n; i++)
      WF_ASSERT(e->routed[(size_t)both[k]->v[i].src * n + both[k]->v[i].dst] &&
                "a flow between dies the platform has no route for: pass its flows to wf_die_engine_open");
  run r = {.e = e, .f = f, .bg = bg};
  r.tx = calloc((size_t)n, sizeof *r.tx);
  r.rx = calloc((size_t)n, sizeof *r.rx);
  r.btx = calloc((size_t)n, sizeof *r.btx);
  r.brx = calloc((size_t)n, sizeof *r.brx);
  r.bw = calloc((size_t)n, sizeof *r.bw);
  WF_ASSERT(r.tx && r.rx && r.btx && r.brx && r.bw);
  r.start = r.phase_end = r.bg_end = simgrid_get_clock();
  sg_actor_t c = sg_actor_init("conductor", e->die[0]);
  sg_actor_set_data(c, &r);
  sg_actor_start_(c, conductor, 0, NULL);
  simgrid_run();
  party *all[4] = {r.tx, r.rx, r.btx, r.brx};
  for (int k = 0; k < 4; k++) {
    for (int d = 0; d < n; d++) party_free(&all[k][d]);
    free(all[k]);
  }
  free(r.bw);
  if (bg_secs) *bg_secs = r.bg_end - r.start;
  return r.phase_end - r.start;
}

double wf_die_engine_run(wf_die_engine *e, const wf_die_flows *f) { return wf_die_engine_run_with(e, f, NULL, NULL); }

typedef struct work {
  double amount; /* flops in host-speed units */
  party mem;     /* the HBM read, one message */
} work;

static void computer(int argc, char **argv) {
  work *w = sg_actor_self_get_data();
  void *data;
  sg_comm_t c = w->mem.n ? sg_mailbox_get_async(w->mem.mb[0], &data) : NULL;
  if (w->amount > 0) sg_actor_execute(w->amount);
  if (c) sg_comm_wait(c);
}

double wf_die_engine_compute(wf_die_engine *e, const double *ops, const double *bytes, double ops_per_s) {
  int n = e->s.n;
  work *w = calloc((size_t)n, sizeof *w);
  WF_ASSERT(w != NULL);
  double t0 = simgrid_get_clock();
  for (int d = 0; d < n; d++) {
    w[d].amount = ops[d] * (e->s.t.int8_ops / ops_per_s);
    if (bytes[d] > 0) {
      char name[32];
      snprintf(name, sizeof name, "h%d", d);
      party_add(&w[d].mem, sg_mailbox_by_name(name), bytes[d], 0);
      sg_actor_unref(spawn(e->hbm[d], sender, &w[d].mem));
    }
    if (w[d].amount > 0 || bytes[d] > 0) {
      sg_actor_t a = sg_actor_init("c", e->die[d]);
      sg_actor_set_data(a, &w[d]);
      sg_actor_start_(a, computer, 0, NULL);
    }
  }
  simgrid_run();
  for (int d = 0; d < n; d++) {
    party_free(&w[d].mem);
  }
  free(w);
  return simgrid_get_clock() - t0;
}
