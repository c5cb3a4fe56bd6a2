/* The services every step of the cycle engine shares (sim_sched.h): run-time errors naming
 * the PE and instruction, PE memory and its operands, the lists of PEs and routers to wake,
 * the compute timers, and the events observers see. The engine that steps them is sim.c; the
 * steps are sim_pe.c (PEs), sim_fabric.c (routers), sim_exec.c (instructions). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

void wf_sim_rt_error(wf_sim *s, const wf_pe *p, const wf_pe_instr *in, const char *fmt, ...) {
  char msg[512], where[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (p && in)
    snprintf(where, sizeof where, "%s/programs/%s.wpe:%d: PE (%d,%d), cycle %lld", s->plan->dir,
             p->cls->name, in->line, p->x, p->y, (long long)s->now);
  else if (p)
    snprintf(where, sizeof where, "PE (%d,%d) class '%s', cycle %lld", p->x, p->y, p->cls->name,
             (long long)s->now);
  else snprintf(where, sizeof where, "cycle %lld", (long long)s->now);
  if (s->band) wf_band_error(s, where, msg); /* only the first in the one-thread order is said */
  else wf_error_at(where, "%s", msg);
  s->failed = 1;
}

float *wf_sim_pe_mem(wf_sim *s, wf_pe *p) {
  if (!s->functional) return NULL;
  if (!p->mem) {
    size_t words = (size_t)((p->cls->mem_bytes + 3) / 4) + 1;
    p->mem = calloc(words, sizeof(float));
    WF_ASSERT(p->mem != NULL);
    s->mem_bytes += (int64_t)(words * sizeof(float));
  }
  return p->mem;
}

void wf_sim_wake_router(wf_sim *s, wf_router *r) {
  if (!r->active) {
    r->active = 1;
    if (s->band) { /* its key and place come at the phase's commit */
      wf_band_new_router(s, r);
      return;
    }
    r->key = s->next_rt_key++;
    r->where = WF_RT_LIST;
    s->act_rt[s->n_act_rt++] = r;
  } else if (r->asleep) {
    wf_sim_wake_sleeper(s, r);
  }
}

/* ---- blocked routers ------------------------------------------------------------------ *
 * A router whose step moved nothing while every non-empty buffer's ready head waited for a
 * full destination or a switch position sleeps: the polling loop would repeat that step
 * identically every cycle (its destinations have one producer, itself, so they can only
 * drain; its positions change only when it moves something) until a destination is popped
 * (wf_sim_drained) or one of its buffers gains a head (wf_router_push_at). It keeps its key,
 * so it is woken into its place in the list; each skipped visit is credited as it would
 * have counted: the same out_stall increments and one round-robin step. */

/* Credits r's skipped visits up to cycle `upto`. */
void wf_sim_rt_credit(wf_sim *s, wf_router *r, int64_t upto) {
  int64_t k = upto - r->sl_from + 1;
  if (k <= 0) return;
  for (int d = 0; d < WF_DIR_COUNT; d++) r->out_stall[d] += k * r->sl_inc[d];
  int n = WF_DIR_COUNT * r->nlc;
  r->rr = (int16_t)((r->rr + k % n) % n);
  r->sl_from = upto + 1;
  s->rt_skipped += k;
}

static void rt_now_push(wf_sim *s, wf_router *r) {
  int i = s->n_rt_now++;
  while (i > 0 && r->key < s->rt_now[(i - 1) / 2]->key) {
    s->rt_now[i] = s->rt_now[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->rt_now[i] = r;
}

/* The polling loop visits r in this cycle after the router being stepped (rt_cur_key; in the
 * PE phase, after all of them). If its place is passed, this cycle's visit happened in the
 * blocked state and is credited too, and r runs from the next cycle on; otherwise it runs
 * at its place in this cycle's router phase. */
void wf_sim_wake_sleeper(wf_sim *s, wf_router *r) {
  int passed = r->key < s->rt_cur_key;
  r->asleep = 0;
  s->n_rt_sleep--;
  wf_sim_rt_credit(s, r, passed ? s->now : s->now - 1);
  if (r->where != WF_RT_NONE) return; /* went to sleep in this cycle: still in the list */
  if (passed) {
    r->where = WF_RT_JOIN;
    s->rt_join[s->n_rt_join++] = r;
  } else {
    r->where = WF_RT_NOW;
    rt_now_push(s, r);
  }
}

void wf_sim_timer_sleep(wf_sim *s, wf_pe *p) {
  p->sleeping = WF_SLEEP_TIMER;
  p->rt->pe_wait = 1;
  int i = s->n_timers++;
  while (i > 0 && wf_sim_timer_before(p, s->timers[(i - 1) / 2])) {
    s->timers[i] = s->timers[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->timers[i] = p;
}

void wf_sim_wake_pe(wf_sim *s, wf_pe *p) {
  if (p->sleeping == WF_SLEEP_TIMER) return; /* a polled PE would not notice either */
  int soft = p->sleeping == WF_SLEEP_SOFT;
  if (p->sleeping) {
    p->sleeping = WF_SLEEP_NONE;
    if (soft) s->n_soft--;
    wf_sim_charge_sleep(s, p, s->now);
  }
  if (!p->active) {
    p->active = 1;
    if (soft) {
      s->soft_woken[s->n_soft_woken++] = p;
    } else if (s->band) {
      wf_band_new_pe(s, p);
    } else {
      p->key = s->next_key++;
      s->act_pe[s->n_act_pe++] = p;
    }
  }
  p->rt->pe_wait = 0;
}

static void emit(wf_sim *s, const wf_pe *p, int kind, int pc, int64_t dur, int engine,
                 int64_t wavelets) {
  wf_sim_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = kind;
  ev.cycle = s->now;
  ev.dur = dur;
  ev.x = p->x;
  ev.y = p->y;
  ev.cls = p->cls_i;
  ev.op = p->op == s->plan->n_ops ? -1 : p->op;
  ev.task = p->task;
  ev.task_name = p->task >= 0 ? p->cls->tasks[p->task].name : "";
  ev.pc = pc;
  ev.instr = pc >= 0 ? &p->cls->code[pc] : NULL;
  ev.engine = engine;
  ev.wavelets = wavelets;
  s->ev_fn(&ev, s->ev_user);
}

void wf_sim_emit(wf_sim *s, const wf_pe *p, int kind, int pc, int64_t dur) {
  if (s->ev_fn) emit(s, p, kind, pc, dur, -1, -1);
}

void wf_sim_emit_stream(wf_sim *s, const wf_pe *p, int kind, int pc, int engine, int64_t wavelets) {
  if (s->ev_fn) emit(s, p, kind, pc, -1, engine, wavelets);
}

void wf_sim_set_event_callback(wf_sim *s, wf_sim_event_fn fn, void *user) {
  s->ev_fn = fn;
  s->ev_user = user;
}

void wf_sim_set_compute_hook(wf_sim *s, wf_sim_compute_fn fn, void *user) {
  s->cp_fn = fn;
  s->cp_user = user;
}

/* ---- setup ---------------------------------------------------------------------------- */
