/* Threads on one machine (docs/cycle-model.md, "Threads"): the mesh is cut into bands of
 * rows, and each band's PEs and routers are stepped on a thread of their own, with results
 * byte-identical to the one-thread loop of sim.c for every number of bands.
 *
 * The one-thread loop steps PEs, then routers, each in the order of their keys; what one step
 * sees of the steps before it in the same cycle is small (docs/cycle-model.md):
 *
 *  - PE phase: a PE touches only its own router's RAMP buffers and its own queues, so the
 *    bands step their PEs at once. What is global is kept per band and put in the one-thread
 *    order when the phase ends: the keys of routers woken from empty (by the waking PE's
 *    key), the events observers see (the trace), run-time errors (the first is said).
 *  - Router phase: a router reads of the others only the fill of its destination buffers,
 *    which their consumer pops. Its one push per buffer and cycle is never ready in the same
 *    cycle, so a push across a band edge is kept and committed at the cycle's end (with the
 *    wake-up it causes, which is the same there). A pop matters only to a producer that
 *    finds the buffer full: a buffer across an edge that is full when the phase starts is a
 *    meeting point, where the band of the later key (producer or consumer) waits until the
 *    other band has stepped every router before the earlier one. The waiting band then sees
 *    the pop (and wakes its sleeping producer, as the one-thread loop would) or its absence.
 *    Drains of a buffer filled from the other band, keys of routers and PEs woken from
 *    empty or a hard sleep, and the wake-ups of sleepers whose place has passed are kept in
 *    key order per band and committed by a merge on the keys: the one-thread order.
 *
 * Everything else a step writes is the band's own (a band's simulator is a copy of the whole
 * one with its own lists, timers, counters and per-op statistics, merged when the run ends:
 * sums, minima and maxima, which do not depend on order).
 *
 * With threads, each band applies the records addressed to it on its own thread
 * (commit_band), a key a record hands out being its place in the merged order of all bands'
 * records; a cycle is one task per thread (band_cycle) with barriers after the PE and the
 * router phase, and where the bands are cut moves with the work (sim_split.c). Ranks commit
 * with wf_threads_commit.
 *
 * The bands, their steps, the commit and the run loop's decisions are shared with MPI ranks
 * (sim_band.h, sim_mpi.c): a rank steps one band, and what differs (how a cycle's phases are
 * run and committed, a meeting point, the sums, a deadlock's message) is in wf_band_ops. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/sim_band.h"
#include "waferc/diag.h"

int wf_sim_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 1 ? (int)n : 1;
}

int wf_sim_cores_idle(void) {
  int n = wf_sim_cores();
  double load[1];
  if (getloadavg(load, 1) == 1) n -= (int)(load[0] + 0.5);
  return n > 1 ? n : 1;
}

enum { PH_CYCLE, PH_MOVE, PH_QUIT };

void *wf_band_grow(void *p, int *cap, size_t elem) {
  *cap = *cap ? 2 * *cap : 256;
  p = realloc(p, (size_t)*cap * elem);
  WF_ASSERT(p != NULL);
  return p;
}

static rec *add_rec(wf_band *b, int kind, void *obj, int to) {
  rec *r;
  if (b->sim.thr->me < 0) { /* threads: the phase's own list */
    recbuf *q = &b->rb[b->ph];
    if (q->n == q->cap) q->r = wf_band_grow(q->r, &q->cap, sizeof *q->r);
    r = &q->r[q->n++];
  } else {
    if (b->n_recs == b->cap_recs) {
      int cap = b->cap_recs;
      b->recs = wf_band_grow(b->recs, &b->cap_recs, sizeof *b->recs);
      b->nkey = wf_band_grow(b->nkey, &cap, sizeof *b->nkey);
    }
    r = &b->recs[b->n_recs++];
  }
  r->key = b->cur;
  r->kind = (uint8_t)kind;
  r->obj = obj;
  r->to = (int16_t)to;
  return r;
}

/* The band across from router r's port N or S (the neighbour nb is r->nb[N] or r->nb[S]). */
static int band_across(const wf_band *b, const wf_router *r, const wf_router *nb) {
  return nb == r->nb[WF_DIR_N] ? b->k - 1 : b->k + 1;
}

/* ---- the hooks the steps call when s->band is set (sim_sched.h) ------------------------ */

void wf_band_new_router(wf_sim *s, wf_router *r) {
  r->where = WF_RT_PENDING;
  add_rec(s->band, REC_NEW_RT, r, s->band->k);
}

void wf_band_new_pe(wf_sim *s, wf_pe *p) { add_rec(s->band, REC_NEW_PE, p, s->band->k); }

void wf_band_push(wf_sim *s, const wf_router *from, wf_router *to, int lc, int rx, wf_wv w) {
  rec *r = add_rec(s->band, REC_PUSH, to, band_across(s->band, from, to));
  r->w = w;
  r->lc = (uint8_t)lc;
  r->rx = (uint8_t)rx;
}

/* Ranks: cons popped f, which the neighbour rank fills. That rank learns of it at the meeting
 * point where it waits for it (the consumer's rank says it there), or else at the commit. */
static void popped_across(wf_band *b, wf_fifo *f, const wf_router *cons) {
  for (int i = 0; i < b->n_pts; i++)
    if (b->pts[i].kind == PT_NOTIFY && b->pts[i].f == f) return;
  int c = (int)(((const char *)f - (const char *)cons->rc) / (ptrdiff_t)sizeof *cons->rc);
  rec *r = add_rec(b, REC_POP, (void *)cons, -1);
  r->lc = (uint8_t)c;
  r->rx = (uint8_t)(f - cons->rc[c].in);
}

/* cons popped f, which prod (in the next band) fills. The buffer was full when the phase
 * started, so the band of the later key waited for the other (a meeting point): prod is not
 * being stepped now. A prod whose place has passed is woken at the commit; one still to come
 * is woken by its own band at the meeting point. */
void wf_band_drained(wf_sim *s, wf_fifo *f, wf_router *prod, const wf_router *cons) {
  if (s->thr->me >= 0) { /* ranks: the producer's rank holds full_seen (sim_mpi.c) */
    popped_across(s->band, f, cons);
    return;
  }
  if (f->count == s->depth - 1) s->band->n_full--; /* it was full */
  if (!f->full_seen) return;
  f->full_seen = 0;
  if (prod && prod->key < cons->key) add_rec(s->band, REC_WAKE, prod, band_across(s->band, cons, prod));
}

void wf_band_error(wf_sim *s, const char *where, const char *msg) {
  wf_band *b = s->band;
  if (b->err_msg) return;
  b->err_where = strdup(where);
  b->err_msg = strdup(msg);
  WF_ASSERT(b->err_where && b->err_msg);
  b->err_key = b->cur;
}

void wf_band_event(const wf_sim_event *ev, void *user) {
  wf_band *b = user;
  if (b->n_evs == b->cap_evs) b->evs = wf_band_grow(b->evs, &b->cap_evs, sizeof *b->evs);
  b->evs[b->n_evs].key = b->cur;
  b->evs[b->n_evs++].ev = *ev;
}

/* ---- the phases ------------------------------------------------------------------------- */

void wf_band_pe_phase(wf_band *b) {
  wf_sim *s = &b->sim;
  b->ph = 0;
  b->rb[0].n = 0;
  wf_sim_cycle_begin(s);
  b->j.all_compute = 1;
  b->j.next_busy = INT64_MAX;
  s->rt_cur_key = INT64_MIN;
  int n = s->n_act_pe, n_slept = 0;
  for (int i = 0; i < n && !s->failed; i++) {
    wf_sim_prefetch_pes(s, i, n);
    wf_pe *p = s->act_pe[i];
    b->cur = p->key;
    if (!p->sleeping) wf_pe_step(s, p);
    if (p->sleeping) s->slept[n_slept++] = i;
    else wf_sim_jump_see(&b->j, p);
  }
  b->n = n;
  b->n_slept = n_slept;
}


static double host_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits until *a differs from old: spins a while (a phase is often short), then blocks, so
 * that a shared machine does not lose a core to waiting. */
static void wait_change(_Atomic int *a, int old, _Atomic int *sleepers, int spin_limit) {
  for (int k = 0; k < spin_limit; k++) {
    if (atomic_load_explicit(a, memory_order_acquire) != old) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  atomic_fetch_add(sleepers, 1);
  while (atomic_load(a) == old) syscall(SYS_futex, (int *)a, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
  atomic_fetch_sub(sleepers, 1);
}

static void wake(_Atomic int *a, _Atomic int *sleepers) {
  if (atomic_load(sleepers)) syscall(SYS_futex, (int *)a, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* All bands meet inside a cycle (spinning, then blocking as wait_change does). */
static void barrier(wf_threads *T, wf_band *b) {
  double t0 = T->stats ? host_seconds() : 0;
  int g = atomic_load(&T->bar_gen);
  if (atomic_fetch_add(&T->bar_n, 1) == T->nb - 1) {
    atomic_store(&T->bar_n, 0);
    atomic_fetch_add(&T->bar_gen, 1);
    wake(&T->bar_gen, &T->bar_sleepers);
  } else {
    wait_change(&T->bar_gen, g, &T->bar_sleepers, T->spin);
  }
  if (T->stats) b->bar_wait += host_seconds() - t0;
}

static void spin(int *k, int spin_limit) {
  if (++*k < spin_limit / 4) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield(); /* a shared machine: let whoever runs the other band have the core */
  }
}

/* A meeting point (threads): wait until the other band is past it, then wake the producer
 * asleep on the buffer if the consumer popped it first. */
static void meet_threads(wf_band *b, point *pt) {
  wf_sim *s = &b->sim;
  atomic_store_explicit(&b->done, pt->at, memory_order_release);
  b->n_points++;
  if (atomic_load_explicit(&pt->other->done, memory_order_acquire) <= pt->need) {
    double t0 = host_seconds();
    b->n_waits++;
    for (int k = 0; atomic_load_explicit(&pt->other->done, memory_order_acquire) <= pt->need;)
      spin(&k, s->thr->spin);
    b->wait += host_seconds() - t0;
  }
  if (pt->prod && pt->fs && pt->prod->asleep && pt->f->count < s->depth)
    wf_sim_wake_sleeper(s, pt->prod); /* not passed: it runs in this cycle, at its place */
}

/* The routers of a band in key order (with the sleepers woken to run in this cycle), as
 * step_cycle in sim.c, stopping at each meeting point (T->ops->meet). */
void wf_band_rt_phase(wf_band *b) {
  wf_sim *s = &b->sim;
  b->ph = 1;
  b->rb[1].n = 0;
  int nr = s->n_act_rt, n_emptied = 0, pi = 0;
  for (int i = 0; !s->failed;) {
    int64_t next = INT64_MAX;
    if (i < nr) next = s->act_rt[i]->key;
    if (s->n_rt_now && s->rt_now[0]->key < next) next = s->rt_now[0]->key;
    if (pi < b->n_pts && b->pts[pi].at <= next) {
      s->thr->ops->meet(b, &b->pts[pi++]);
      continue;
    }
    if (next == INT64_MAX) break;
    wf_router *r;
    int li = -1;
    if (s->n_rt_now && (i >= nr || s->rt_now[0]->key < s->act_rt[i]->key)) {
      r = wf_sim_rt_now_pop(s);
    } else {
      wf_sim_prefetch_routers(s, i, nr);
      li = i;
      r = s->act_rt[i++];
    }
    s->rt_cur_key = b->cur = r->key;
    wf_sim_router_stepped(s, r, li, &n_emptied);
    atomic_store_explicit(&b->done, r->key + 1, memory_order_release);
  }
  b->n_emptied = n_emptied;
  atomic_store_explicit(&b->done, INT64_MAX, memory_order_release);
}

static void band_cycle(wf_threads *T, wf_band *b);

static void barrier(wf_threads *T, wf_band *b);

static void do_phase(wf_threads *T, wf_band *b) {
  double t0 = host_seconds();
  if (T->phase == PH_CYCLE) {
    band_cycle(T, b);
  } else {
    wf_split_leave(T, b);
    barrier(T, b);
    wf_split_join(T, b);
  }
  b->busy += host_seconds() - t0;
}

static void *worker(void *arg) {
  wf_band *b = arg;
  wf_threads *T = b->sim.thr;
  int seen = 0;
  for (;;) {
    wait_change(&T->gen, seen, &T->gen_sleepers, T->spin);
    seen = atomic_load(&T->gen);
    if (T->phase == PH_QUIT) return NULL;
    do_phase(T, b);
    atomic_fetch_add(&T->finished, 1);
    wake(&T->finished, &T->fin_sleepers);
  }
}

/* Runs one phase on every band: band 0 on the calling thread. */
static void run_phase(wf_threads *T, int phase) {
  T->phase = phase;
  atomic_store(&T->finished, 0);
  atomic_fetch_add(&T->gen, 1);
  wake(&T->gen, &T->gen_sleepers);
  if (phase == PH_QUIT) return;
  do_phase(T, T->b[0]);
  double t0 = host_seconds();
  int f;
  while ((f = atomic_load(&T->finished)) < T->nb - 1) wait_change(&T->finished, f, &T->fin_sleepers, T->spin);
  T->join_wait += host_seconds() - t0;
}

/* ---- the commits (the calling thread, between phases) ----------------------------------- */

static wf_band *band_of(wf_threads *T, int y) { return T->b[T->row_band[y]]; }

static void join_list(wf_threads *T, wf_router *r) {
  wf_sim *bs = &band_of(T, r->y)->sim;
  r->key = T->s->next_rt_key++;
  r->where = WF_RT_LIST;
  bs->act_rt[bs->n_act_rt++] = r;
}

static void apply(wf_threads *T, const rec *x) {
  wf_sim *s = T->s;
  switch (x->kind) {
    case REC_NEW_RT: {
      wf_router *r = x->obj;
      if (r->where == WF_RT_PENDING) join_list(T, r);
      break;
    }
    case REC_NEW_PE: {
      wf_pe *p = x->obj;
      wf_sim *bs = &band_of(T, p->y)->sim;
      p->key = s->next_key++;
      bs->act_pe[bs->n_act_pe++] = p;
      break;
    }
    case REC_PUSH: { /* wf_router_push_at, after the phase: a sleeper's place has passed */
      wf_router *r = x->obj;
      wf_fifo *f = &r->rc[x->lc].in[x->rx];
      if (T->me >= 0 && T->row_band[r->y] != T->me) { /* ranks: r's rank pushes; this one */
        f->count++;                                    /* keeps the fill its producer sees */
        break;
      }
      int was_empty = !f->count;
      wf_fifo_push(s, f, x->w);
      int i = x->lc * WF_DIR_COUNT + x->rx;
      r->ne[i >> 6] |= 1ull << (i & 63);
      r->buffered++;
      if (!r->active) {
        r->active = 1;
        join_list(T, r);
      } else if (r->where == WF_RT_PENDING) {
        join_list(T, r);
      } else if (r->asleep && was_empty) {
        wf_sim_wake_sleeper(&band_of(T, r->y)->sim, r);
      }
      break;
    }
    case REC_WAKE: {
      wf_router *r = x->obj;
      if (r->asleep) wf_sim_wake_sleeper(&band_of(T, r->y)->sim, r);
      break;
    }
    case REC_POP: { /* ranks: another rank's consumer popped a buffer this one fills */
      wf_router *r = x->obj, *prod = r->nb[x->rx];
      if (T->row_band[prod->y] != T->me) break; /* this rank's own pop, sent to prod's */
      wf_fifo *f = &r->rc[x->lc].in[x->rx];
      f->count--;
      wf_sim_drained(&T->b[T->me]->sim, f, prod); /* its place has passed */
      break;
    }
  }
}

/* The bands holding records (or events) in T->live, their cursors in T->at at 0: a merge
 * walks only those (with ranks, this rank's band and its neighbours'). */
static int live_bands(wf_threads *T, int evs) {
  int n = 0;
  for (int k = 0; k < T->nb; k++)
    if (evs ? T->b[k]->n_evs : T->b[k]->n_recs) {
      T->live[n] = k;
      T->at[n++] = 0;
    }
  return n;
}

/* Applies every band's records in key order (the one-thread order). */
void wf_threads_commit(wf_threads *T) {
  int n = live_bands(T, 0);
  for (;;) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      const wf_band *b = T->b[T->live[i]];
      if (T->at[i] < b->n_recs &&
          (best < 0 || b->recs[T->at[i]].key < T->b[T->live[best]]->recs[T->at[best]].key))
        best = i;
    }
    if (best < 0) break;
    wf_band *b = T->b[T->live[best]];
    if (T->me >= 0) T->s->next_key = T->s->next_rt_key = b->nkey[T->at[best]];
    apply(T, &b->recs[T->at[best]++]);
  }
  for (int i = 0; i < n; i++) T->b[T->live[i]]->n_recs = 0;
}

/* The events of the PE phase in key order, up to `upto`. */
void wf_threads_replay_events(wf_threads *T, int64_t upto) {
  wf_sim *s = T->s;
  int n = live_bands(T, 1);
  for (;;) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      const wf_band *b = T->b[T->live[i]];
      if (T->at[i] < b->n_evs &&
          (best < 0 || b->evs[T->at[i]].key < T->b[T->live[best]]->evs[T->at[best]].key))
        best = i;
    }
    if (best < 0 || T->b[T->live[best]]->evs[T->at[best]].key > upto) break;
    s->ev_fn(&T->b[T->live[best]]->evs[T->at[best]++].ev, s->ev_user);
  }
  for (int i = 0; i < n; i++) T->b[T->live[i]]->n_evs = 0;
}

/* After a phase: the first run-time error in the one-thread order is said; -1 if any. */
int wf_threads_failed(wf_threads *T, int replay) {
  int best = -1;
  for (int k = 0; k < T->nb; k++)
    if (T->b[k]->err_msg && (best < 0 || T->b[k]->err_key < T->b[best]->err_key)) best = k;
  if (best < 0) return 0;
  if (replay && T->s->ev_fn) wf_threads_replay_events(T, T->b[best]->err_key);
  wf_error_at(T->b[best]->err_where, "%s", T->b[best]->err_msg);
  T->s->failed = 1;
  return -1;
}

static void add_point(wf_threads *T, wf_router *prod, wf_router *cons, wf_fifo *f) {
  int later_prod = prod->key > cons->key;
  wf_router *later = later_prod ? prod : cons, *earlier = later_prod ? cons : prod;
  wf_band *b = band_of(T, later->y);
  if (b->n_pts == b->cap_pts) b->pts = wf_band_grow(b->pts, &b->cap_pts, sizeof *b->pts);
  point *p = &b->pts[b->n_pts++];
  p->at = later->key;
  p->need = earlier->key;
  p->other = band_of(T, earlier->y);
  p->prod = later_prod ? prod : NULL;
  p->f = f;
  p->fs = f->full_seen;
  p->kind = PT_THREADS;
}

static int by_at(const void *a, const void *b) {
  int64_t x = ((const point *)a)->at, y = ((const point *)b)->at;
  return (x > y) - (x < y);
}

/* The meeting points of this cycle's router phase: buffers across an edge that are full,
 * between two routers that hold keys (a full buffer's consumer always does). Every full one
 * is counted: the bands' n_full must have said how many. */
static void find_points(wf_threads *T) {
  wf_sim *s = T->s;
  int full = 0, counted = 0;
  for (int k = 0; k < T->nb; k++) {
    T->b[k]->n_pts = 0;
    counted += T->b[k]->n_full;
  }
  for (int k = 0; k + 1 < T->nb; k++) {
    int ya = T->b[k]->sim.y1 - 1, yb = ya + 1;
    for (int x = 0; x < s->w; x++) {
      wf_router *u = s->routers[(size_t)ya * s->w + x], *d = s->routers[(size_t)yb * s->w + x];
      if (!u || !d || !(u->buffered | d->buffered)) continue;
      int both = u->active && d->active;
      for (int c = 0; c < u->nlc; c++) {
        wf_fifo *f = wf_router_out(u, c, WF_DIR_S);
        if (!f || f->count < s->depth) continue;
        full++;
        if (both) add_point(T, u, d, f);
      }
      for (int c = 0; c < d->nlc; c++) {
        wf_fifo *f = wf_router_out(d, c, WF_DIR_N);
        if (!f || f->count < s->depth) continue;
        full++;
        if (both) add_point(T, d, u, f);
      }
    }
  }
  WF_ASSERT(full == counted);
  for (int k = 0; k < T->nb; k++) {
    wf_band *b = T->b[k];
    if (b->n_pts > 1) qsort(b->pts, (size_t)b->n_pts, sizeof *b->pts, by_at);
    atomic_store_explicit(&b->done, INT64_MIN, memory_order_relaxed);
  }
}

/* ---- threads: the commits, each band its own (the ranks' is wf_threads_commit) ---------- */

static void join_band(wf_sim *bs, wf_router *r, int64_t key) {
  r->key = key;
  r->where = WF_RT_LIST;
  bs->act_rt[bs->n_act_rt++] = r;
}

/* apply() for the band that holds x's PE or router; a key it hands out is rt_key or pe_key. */
static void apply_band(wf_sim *bs, const rec *x, int64_t rt_key, int64_t pe_key) {
  switch (x->kind) {
    case REC_NEW_RT: {
      wf_router *r = x->obj;
      if (r->where == WF_RT_PENDING) join_band(bs, r, rt_key); /* no push came first */
      break;
    }
    case REC_NEW_PE: {
      wf_pe *p = x->obj;
      p->key = pe_key;
      bs->act_pe[bs->n_act_pe++] = p;
      break;
    }
    case REC_PUSH: { /* wf_router_push_at, after the phase: a sleeper's place has passed */
      wf_router *r = x->obj;
      wf_fifo *f = &r->rc[x->lc].in[x->rx];
      int was_empty = !f->count;
      wf_fifo_push(bs, f, x->w);
      if (f->count == bs->depth) bs->band->n_full++;
      int i = x->lc * WF_DIR_COUNT + x->rx;
      r->ne[i >> 6] |= 1ull << (i & 63);
      r->buffered++;
      if (!r->active) {
        r->active = 1;
        join_band(bs, r, rt_key);
      } else if (r->where == WF_RT_PENDING) {
        join_band(bs, r, rt_key);
      } else if (r->asleep && was_empty) {
        wf_sim_wake_sleeper(bs, r);
      }
      break;
    }
    case REC_WAKE: {
      wf_router *r = x->obj;
      if (r->asleep) wf_sim_wake_sleeper(bs, r);
      break;
    }
  }
}

/* Applies, in key order, phase ph's records addressed to band b: its own and, after the
 * router phase, its neighbours' pushes and wake-ups across its edges. Every record takes the
 * place it has in the merged order of all bands' records (what the serial merge counts) as
 * the key it may hand out, so keys keep the one-thread order; a record that hands out none
 * leaves a gap, as the ranks' keys do (keys only order). The other bands' lists are only
 * read: a band may already step its routers while its neighbour still commits. */
static void commit_band(wf_threads *T, wf_band *b, int ph) {
  const wf_sim *s = T->s;
  int nb = T->nb, k = b->k;
  int lo = ph && k > 0 ? k - 1 : k, hi = ph && k + 1 < nb ? k + 1 : k;
  int c[WF_SIM_THREADS_MAX], n[WF_SIM_THREADS_MAX];
  const rec *L[WF_SIM_THREADS_MAX];
  int64_t base = 0;
  for (int i = 0; i < nb; i++) {
    const wf_band *o = T->b[i];
    L[i] = o->rb[ph].r;
    n[i] = o->rb[ph].n;
    c[i] = 0;
    if (ph) base += o->rb[0].n; /* the PE phase's places come first */
  }
  int64_t rt_base = s->next_rt_key + base, pe_base = s->next_key + base;
  for (;;) {
    int j = -1;
    int64_t K = INT64_MAX;
    for (int i = lo; i <= hi; i++)
      if (c[i] < n[i] && L[i][c[i]].key < K) {
        K = L[i][c[i]].key;
        j = i;
      }
    if (j < 0) break;
    const rec *x = &L[j][c[j]];
    if (x->to == k) {
      /* its place: the records of every band before it (keys of two bands never meet) */
      int64_t pos = 0;
      for (int i = 0; i < nb; i++) {
        if (i < lo || i > hi)
          while (c[i] < n[i] && L[i][c[i]].key < K) c[i]++;
        pos += c[i];
      }
      apply_band(&b->sim, x, rt_base + pos, pe_base + pos);
    }
    c[j]++;
  }
}

static int any_error(const wf_threads *T) {
  for (int k = 0; k < T->nb; k++)
    if (T->b[k]->err_msg) return 1;
  return 0;
}

static double seg_end(wf_threads *T, wf_band *b, int seg, double c0) {
  if (!T->stats) return 0;
  double c = thread_cpu_seconds();
  b->seg_cpu[seg] += c - c0;
  b->cpu += c - c0;
  return c;
}

/* One cycle of band b, on its thread: the PE phase; once every band is through it, the
 * commit of its records (keys for the routers its PEs woke), then the router phase; once every
 * band is through that, the commit of the records addressed to it and the compaction of its
 * lists (step_cycle's end). Only a cycle that starts with a full buffer across a band edge
 * has meeting points: then every band waits for the keys of all before they are found. */
static void band_cycle(wf_threads *T, wf_band *b) {
  wf_sim *s = &b->sim;
  double c = T->stats ? thread_cpu_seconds() : 0;
  for (int i = 0; i < 3; i++) b->seg_cpu[i] = 0;
  wf_band_pe_phase(b);
  seg_end(T, b, 0, c);
  barrier(T, b);
  if (any_error(T)) { /* every band sees it: none goes on */
    if (!b->k) T->pe_failed = 1;
    return;
  }
  c = T->stats ? thread_cpu_seconds() : 0;
  commit_band(T, b, 0);
  if (T->points) {
    seg_end(T, b, 1, c);
    barrier(T, b);
    if (!b->k) find_points(T);
    barrier(T, b);
    c = T->stats ? thread_cpu_seconds() : 0;
  } else {
    b->n_pts = 0;
  }
  wf_band_rt_phase(b);
  seg_end(T, b, 1, c);
  barrier(T, b);
  if (any_error(T)) return;
  c = T->stats ? thread_cpu_seconds() : 0;
  s->rt_cur_key = INT64_MAX;
  commit_band(T, b, 1);
  wf_sim_compact(s, &b->j, b->n, b->n_slept, b->n_emptied);
  if (T->count_now) wf_split_count(T, b); /* a look at where to cut, after this cycle */
  seg_end(T, b, 2, c);
}

/* ---- set-up, the run loop, and the end -------------------------------------------------- */

static const wf_band_ops threads_ops;

wf_threads *wf_threads_setup(wf_sim *s, int nb) {
  wf_threads *T = calloc(1, sizeof *T);
  WF_ASSERT(T != NULL);
  T->nb = nb;
  T->s = s;
  T->ops = &threads_ops;
  T->me = -1;
  T->b = calloc((size_t)nb, sizeof *T->b);
  T->row_band = calloc((size_t)s->h, sizeof *T->row_band);
  T->tid = calloc((size_t)nb, sizeof *T->tid);
  T->live = calloc((size_t)nb, sizeof *T->live);
  T->at = calloc((size_t)nb, sizeof *T->at);
  WF_ASSERT(T->b && T->row_band && T->tid && T->live && T->at);
  s->thr = T;
  for (int k = 0; k < nb; k++) {
    wf_band *b = aligned_alloc(64, (sizeof(wf_band) + 63) & ~(size_t)63);
    WF_ASSERT(b != NULL);
    memset(b, 0, sizeof *b);
    b->k = k;
    T->b[k] = b;
    wf_sim *bs = &b->sim;
    *bs = *s;
    bs->band = b;
    bs->thr = T;
    bs->y0 = (int)((int64_t)k * s->h / nb);
    bs->y1 = (int)((int64_t)(k + 1) * s->h / nb);
    for (int y = bs->y0; y < bs->y1; y++) T->row_band[y] = k;
    size_t cap = (size_t)(bs->y1 - bs->y0) * (size_t)s->w + 1;
    b->cap = cap;
    bs->act_pe = calloc(cap, sizeof *bs->act_pe);
    bs->soft_woken = calloc(cap, sizeof *bs->soft_woken);
    bs->timers = calloc(cap, sizeof *bs->timers);
    bs->slept = calloc(cap, sizeof *bs->slept);
    bs->act_rt = calloc(cap, sizeof *bs->act_rt);
    bs->rt_now = calloc(cap, sizeof *bs->rt_now);
    bs->rt_join = calloc(cap, sizeof *bs->rt_join);
    bs->emptied = calloc(cap, sizeof *bs->emptied);
    bs->ops = calloc((size_t)s->plan->n_ops + 1, sizeof *bs->ops);
    bs->colls = calloc((size_t)s->plan->n_colls + 1, sizeof *bs->colls);
    WF_ASSERT(bs->act_pe && bs->soft_woken && bs->timers && bs->slept && bs->act_rt &&
              bs->rt_now && bs->rt_join && bs->emptied && bs->ops && bs->colls);
    for (int i = 0; i <= s->plan->n_ops; i++) bs->ops[i].start = INT64_MAX;
    for (int i = 0; i < s->plan->n_colls; i++) bs->colls[i].start = INT64_MAX;
    bs->n_act_pe = bs->n_soft_woken = bs->n_timers = bs->n_act_rt = bs->n_rt_now = 0;
    bs->n_rt_join = bs->n_soft = bs->n_rt_sleep = 0;
    bs->rt_skipped = bs->mem_bytes = 0;
    bs->progress = bs->failed = 0;
    bs->slab = NULL;
    bs->arena_cur = bs->arena_end = NULL;
    bs->chunks = NULL;
    bs->n_chunks = bs->cap_chunks = 0;
    bs->gmask = NULL;
    bs->n_gmask = bs->n_gmask_cap = 0;
    bs->ev_fn = s->ev_fn ? wf_band_event : NULL;
    bs->ev_user = b;
  }
  /* The start: every PE awake in row-major order (wf_sim_new), nothing in flight. */
  WF_ASSERT(!s->n_act_rt && !s->n_timers && !s->n_soft_woken && !s->n_rt_sleep);
  for (int i = 0; i < s->n_act_pe; i++) {
    wf_sim *bs = &band_of(T, s->act_pe[i]->y)->sim;
    bs->act_pe[bs->n_act_pe++] = s->act_pe[i];
  }
  s->n_act_pe = 0;
  return T;
}

/* The bands' statistics into s (sums, minima, maxima: the same in any order). */
void wf_threads_gather(wf_threads *T) {
  wf_sim *s = T->s;
  for (int k = 0; k < T->nb; k++) {
    wf_sim *bs = &T->b[k]->sim;
    for (int i = 0; i <= s->plan->n_ops; i++) {
      wf_op_stat *o = &s->ops[i];
      const wf_op_stat *q = &bs->ops[i];
      if (q->start < o->start) o->start = q->start;
      if (q->end > o->end) o->end = q->end;
      o->compute += q->compute;
      o->comm += q->comm;
      o->stall += q->stall;
      o->overlap += q->overlap;
      for (int k = 0; k < 3; k++)
        if (q->phase_in[k] > o->phase_in[k]) o->phase_in[k] = q->phase_in[k];
    }
    for (int i = 0; i < s->plan->n_colls; i++) {
      wf_coll_stat *c = &s->colls[i];
      const wf_coll_stat *q = &bs->colls[i];
      if (q->start < c->start) c->start = q->start;
      if (q->end > c->end) c->end = q->end;
      c->entries += q->entries;
    }
    s->mem_bytes += bs->mem_bytes;
    s->rt_skipped += bs->rt_skipped;
  }
}

static void stop_threads(wf_threads *T) {
  run_phase(T, PH_QUIT);
  for (int k = 1; k < T->nb; k++) pthread_join(T->tid[k], NULL);
}

/* The bands' sums (threads: every band is here). */
static void threads_totals(wf_threads *T, wf_totals *t, int expired) {
  memset(t, 0, sizeof *t);
  t->expired = expired;
  t->j.all_compute = 1;
  t->j.next_busy = INT64_MAX;
  for (int k = 0; k < T->nb; k++) {
    wf_band *b = T->b[k];
    wf_sim *bs = &b->sim;
    if (!b->j.all_compute) t->j.all_compute = 0;
    if (b->j.next_busy < t->j.next_busy) t->j.next_busy = b->j.next_busy;
    t->progress |= bs->progress;
    t->n_act_pe += bs->n_act_pe;
    t->n_act_rt += bs->n_act_rt;
    t->n_timers += bs->n_timers;
    t->n_rt_sleep += bs->n_rt_sleep;
    t->n_soft += bs->n_soft;
  }
}

static int threads_cycle(wf_threads *T) {
  wf_sim *s = T->s;
  int full = 0;
  for (int k = 0; k < T->nb; k++) full += T->b[k]->n_full;
  T->points = full > 0;
  T->pe_failed = 0;
  T->count_now = T->split_every && ++T->since_split >= T->split_every;
  run_phase(T, PH_CYCLE);
  if (T->pe_failed) return wf_threads_failed(T, 1);
  if (s->ev_fn) wf_threads_replay_events(T, INT64_MAX); /* only PEs make events */
  if (wf_threads_failed(T, 0)) return -1;
  int64_t n = 0; /* the places the commits handed out */
  for (int k = 0; k < T->nb; k++) n += T->b[k]->rb[0].n + T->b[k]->rb[1].n;
  s->next_key += n;
  s->next_rt_key += n;
  T->n_recs += n;
  T->n_cycles++;
  if (T->stats)
    for (int i = 0; i < 3; i++) {
      double m = 0;
      for (int k = 0; k < T->nb; k++) {
        if (T->b[k]->seg_cpu[i] > m) m = T->b[k]->seg_cpu[i];
        T->b[k]->seg_sum[i] += T->b[k]->seg_cpu[i];
      }
      T->crit_cpu += m;
      T->crit_seg[i] += m;
    }
  if (T->count_now) { /* sim_split.c */
    T->since_split = 0;
    if (wf_split_plan(T)) {
      for (int k = 0; k < T->nb; k++) {
        int d = T->ny[k] - T->b[k]->sim.y0;
        T->rows_moved += d < 0 ? -d : d;
      }
      run_phase(T, PH_MOVE);
      for (int k = 0; k < T->nb; k++)
        for (int y = T->ny[k]; y < T->ny[k + 1]; y++) T->row_band[y] = k;
      T->n_splits++;
    }
  }
  if (T->stats) { /* what a cycle without the barrier after the PE phase would take */
    double m = 0;
    for (int k = 0; k < T->nb; k++)
      if (T->b[k]->seg_cpu[0] + T->b[k]->seg_cpu[1] > m) m = T->b[k]->seg_cpu[0] + T->b[k]->seg_cpu[1];
    T->crit_fused += m;
  }
  return 0;
}

static void threads_deadlock(wf_threads *T, const char *why) { wf_sim_report_deadlock(T->s, why); }

static const wf_band_ops threads_ops = {threads_totals, threads_cycle, threads_deadlock, meet_threads};

/* Where the end's statistics go: s, or with ranks this rank's band (they reach rank 0 with
 * its state). */
static wf_sim *stats_sim(wf_threads *T, wf_sim *s) {
  if (T->me < 0) return s;
  wf_sim *bs = &T->b[T->me]->sim;
  bs->now = s->now;
  return bs;
}

/* Blocked routers are credited up to now before a deadlock or --max-cycles is said. */
static void settle_bands(wf_threads *T, wf_sim *s, const wf_totals *t) {
  s = stats_sim(T, s);
  s->rt_cur_key = INT64_MAX;
  s->n_rt_sleep = (int)t->n_rt_sleep;
  wf_sim_settle(s);
}

static int deadlock(wf_threads *T, int64_t quiet) {
  char why[128];
  snprintf(why, sizeof why, "no progress for %lld cycles", (long long)quiet);
  T->ops->deadlock(T, why);
  return WF_EXIT_RUNTIME;
}

static int max_cycles_error(const wf_sim *s) {
  wf_error_at("waferrun", "the simulation exceeded --max-cycles=%lld", (long long)s->opts.max_cycles);
  return WF_EXIT_RUNTIME;
}

/* wf_sim_run's loop (sim.c) over the bands: the same decisions on the bands' sums. Returns
 * an exit code, or -1 when everything sleeps and nothing is in flight. */
int wf_threads_loop(wf_sim *s, wf_threads *T) {
  int64_t quiet = 0, steps = 0;
  double deadline = 0;
  struct timespec ts;
  if (s->opts.max_seconds > 0) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    deadline = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + (double)s->opts.max_seconds;
  }
  int expired = 0;
  wf_totals t;
  T->ops->totals(T, &t, 0);
  for (;;) {
    if (!(t.n_act_pe || t.n_act_rt || t.n_timers || t.n_rt_sleep)) break;
    if (t.expired) {
      wf_error_at("waferrun", "the simulation exceeded --time-limit=%lld s of host time at cycle %lld",
                  (long long)s->opts.max_seconds, (long long)s->now);
      return WF_EXIT_RUNTIME;
    }
    for (int k = 0; k < T->nb; k++) T->b[k]->sim.now = s->now;
    if (T->ops->cycle(T)) return WF_EXIT_RUNTIME;
    if (deadline > 0 && (++steps & 4095) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &ts);
      expired = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec > deadline;
    }
    T->ops->totals(T, &t, expired);
    quiet = t.progress ? 0 : quiet + 1;
    if (!t.n_act_pe && !t.n_act_rt && !t.n_timers) {
      if (!t.n_soft && !t.n_rt_sleep) break;
      int64_t at = s->now + (quiet < s->opts.deadlock_cycles ? s->opts.deadlock_cycles - quiet : 0);
      if (s->opts.max_cycles && at > s->opts.max_cycles) {
        if (t.n_rt_sleep) {
          s->now = s->opts.max_cycles;
          settle_bands(T, s, &t);
        }
        return max_cycles_error(s);
      }
      s->now = at;
      quiet = quiet > s->opts.deadlock_cycles ? quiet : s->opts.deadlock_cycles;
      if (t.n_rt_sleep) {
        settle_bands(T, s, &t);
      } else {
        size_t cells = (size_t)s->w * (size_t)s->h;
        wf_sim *to = stats_sim(T, s);
        for (size_t i = 0; i < cells; i++) /* with ranks, only its own PEs sleep in a copy */
          if (s->pes[i] && s->pes[i]->sleeping == WF_SLEEP_SOFT) wf_sim_charge_sleep(to, s->pes[i], s->now);
      }
      return deadlock(T, quiet);
    }
    if (quiet >= s->opts.deadlock_cycles) {
      settle_bands(T, s, &t);
      return deadlock(T, quiet);
    }
    int64_t next = s->now + 1;
    if (!t.n_act_rt && !t.n_rt_sleep && t.j.all_compute && (t.n_act_pe || t.n_timers) && t.j.next_busy > next)
      next = t.j.next_busy;
    if (s->opts.max_cycles && next > s->opts.max_cycles) return max_cycles_error(s);
    s->now = next;
  }
  return -1; /* finished: the caller checks for waiting PEs */
}

int wf_sim_run_threads(wf_sim *s, int nb) {
  WF_ASSERT(!s->ran && nb > 1 && nb <= WF_SIM_THREADS_MAX);
  s->ran = 1;
  wf_threads *T = wf_threads_setup(s, nb);
  T->spin = nb > wf_sim_cores() ? 0 : 500;
  const char *se = getenv("WF_SIM_SPLIT_EVERY"); /* tests and measurements: 0 keeps the cut */
  T->split_every = se && *se ? atoi(se) : 16;
  wf_split_init(T);
  for (int k = 1; k < nb; k++)
    if (pthread_create(&T->tid[k], NULL, worker, T->b[k])) WF_UNREACHABLE("pthread_create failed");
  /* WF_SIM_THREAD_STATS=1: where the host time went (for BENCHMARKS.md, never in a result) */
  const char *st = getenv("WF_SIM_THREAD_STATS");
  T->stats = st && *st && strcmp(st, "0");
  double t0 = host_seconds(), c0 = thread_cpu_seconds();
  int rc = wf_threads_loop(s, T);
  double c1 = thread_cpu_seconds();
  stop_threads(T);
  if (T->stats) {
    double wall = host_seconds() - t0;
    fprintf(stderr,
            "threads: %d bands, %.3f s in the run loop, %.3f s of it joining, %.3f s between cycles "
            "(%.3f s CPU); the slowest band's CPU summed over the parts of each cycle: %.3f s\n",
            nb, wall, T->join_wait, wall - T->join_wait - T->b[0]->busy, c1 - c0 - T->b[0]->cpu,
            T->crit_cpu);
    for (int k = 0; k < nb; k++) {
      wf_band *b = T->b[k];
      fprintf(stderr,
              "  band %d rows %d..%d: %.3f s stepping and committing, %.3f s CPU, %.3f s at "
              "barriers (%.3f s at %lld of %lld meeting points)\n",
              k, b->sim.y0, b->sim.y1 - 1, b->busy - b->bar_wait - b->wait, b->cpu, b->bar_wait,
              b->wait, (long long)b->n_waits, (long long)b->n_points);
      fprintf(stderr, "    CPU per part: PE phase %.3f s, commit and router phase %.3f s, commit and compaction %.3f s\n",
              b->seg_sum[0], b->seg_sum[1], b->seg_sum[2]);
    }
    fprintf(stderr, "  the cut moved %lld times, %lld rows in all; %lld records in %lld cycles\n",
            (long long)T->n_splits, (long long)T->rows_moved, (long long)T->n_recs,
            (long long)T->n_cycles);
    fprintf(stderr, "  the slowest band per part: %.3f s, %.3f s, %.3f s (the first two as one: %.3f s)\n",
            T->crit_seg[0], T->crit_seg[1], T->crit_seg[2], T->crit_fused);
  }
  wf_threads_gather(T);
  if (rc >= 0) return rc;
  return wf_sim_finish(s); /* everything is asleep and nothing is in flight: as wf_sim_run */
}

void wf_sim_threads_free(wf_sim *s) {
  wf_threads *T = s->thr;
  if (!T || s->band) return;
  wf_split_free(T);
  for (int k = 0; k < T->nb; k++) {
    wf_band *b = T->b[k];
    wf_sim *bs = &b->sim;
    /* FIFO storage and guard sets the band allocated (the slab and PE memory are s's) */
    for (int i = 0; i < bs->n_chunks; i++) {
      if (s->n_chunks == s->cap_chunks) {
        s->cap_chunks = s->cap_chunks ? 2 * s->cap_chunks : 16;
        s->chunks = realloc(s->chunks, (size_t)s->cap_chunks * sizeof *s->chunks);
        WF_ASSERT(s->chunks != NULL);
      }
      s->chunks[s->n_chunks++] = bs->chunks[i];
    }
    free(bs->chunks);
    wf_sim_guard_free(bs);
    free(bs->act_pe);
    free(bs->soft_woken);
    free(bs->timers);
    free(bs->slept);
    free(bs->act_rt);
    free(bs->rt_now);
    free(bs->rt_join);
    free(bs->emptied);
    free(bs->ops);
    free(bs->colls);
    free(b->recs);
    free(b->rb[0].r);
    free(b->rb[1].r);
    free(b->nkey);
    free(b->evs);
    free(b->pts);
    free(b->err_where);
    free(b->err_msg);
    free(b);
  }
  free(T->b);
  free(T->row_band);
  free(T->tid);
  free(T->live);
  free(T->at);
  free(T);
  s->thr = NULL;
}

#ifndef WAFERC_HAVE_MPI
/* Built without MPI (CMake found none): every run is one process. */
int wf_sim_mpi_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}
int wf_sim_mpi_ranks(void) { return 1; }
int wf_sim_mpi_rank(void) { return 0; }
void wf_sim_mpi_finalize(void) {}
void wf_sim_mpi_share(wf_tensor *t) { (void)t; }
int wf_sim_run_mpi(wf_sim *s) {
  (void)s;
  WF_UNREACHABLE("wf_sim_run_mpi without MPI");
}
#endif
