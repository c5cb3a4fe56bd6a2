/* The cycle engine: builds PEs and routers for a plan and advances them cycle by cycle.
 * Every cost charged is listed in docs/cycle-model.md; cycles never come from host time.
 *
 * Each cycle: (1) every active PE does one cycle of work (sim_pe.c), (2) every router that
 * holds wavelets forwards at most one wavelet per input buffer (sim_fabric.c). Stepping is
 * event-driven: a PE that waits (for a delivery, a ramp slot, its background streams) sleeps
 * until a router event wakes it, a PE inside a compute instruction sleeps on a timer heap,
 * empty routers are not visited, a router whose wavelets all wait for full destinations
 * sleeps until one drains (credited with the stalls its skipped visits would have counted),
 * and when no wavelet is in flight and every PE computes the clock jumps to the first
 * instruction that ends. The active PE and router lists are kept sorted by keys (row-major
 * at start, then wake order; sleepers a polling loop would have kept keep theirs), so a run
 * is reproducible bit for bit and matches the polling simulator's cycles and counters. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

/* ---- the queues the run loop pops (sim_sched.c pushes) ---------------------------- */


/* Before the run returns: credits every sleeper with the visits made up to now. */
void wf_sim_settle(wf_sim *s) {
  if (!s->n_rt_sleep) return;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++) {
    wf_router *r = s->routers[i];
    if (r && r->asleep) wf_sim_rt_credit(s, r, r->key < s->rt_cur_key ? s->now : s->now - 1);
  }
}

static wf_pe *timer_pop(wf_sim *s) {
  wf_pe *top = s->timers[0], *last = s->timers[--s->n_timers];
  int i = 0, n = s->n_timers;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && wf_sim_timer_before(s->timers[c + 1], s->timers[c])) c++;
    if (!wf_sim_timer_before(s->timers[c], last)) break;
    s->timers[i] = s->timers[c];
    i = c;
  }
  if (n) s->timers[i] = last;
  return top;
}

static void class_colors(wf_sim *s) {
  const wf_plan *plan = s->plan;
  s->ci = calloc((size_t)plan->n_classes + 1, sizeof *s->ci);
  WF_ASSERT(s->ci != NULL);
  for (int k = 0; k < plan->n_classes; k++) {
    wf_cls_info *ci = &s->ci[k];
    memset(ci->lidx, -1, sizeof ci->lidx);
    const wf_pe_class *c = plan->classes[k];
    for (int col = 0; col < WF_MAX_COLORS; col++)
      for (int i = 0; i < c->n_colors; i++)
        if (c->colors[i].color == col && ci->lidx[col] < 0) {
          ci->lidx[col] = (int8_t)ci->nlc;
          ci->lcol[ci->nlc++] = (uint8_t)col;
        }
  }
}

wf_sim *wf_sim_new(const wf_plan *plan, const wf_sim_opts *o) {
  wf_sim *s = calloc(1, sizeof *s);
  WF_ASSERT(s != NULL);
  s->plan = plan;
  s->opts = o ? *o : WF_SIM_OPTS_DEFAULT;
  if (s->opts.deadlock_cycles <= 0) s->opts.deadlock_cycles = 10000;
  s->functional = s->opts.mode == WF_SIM_FUNCTIONAL;
  s->w = plan->mesh_w;
  s->h = plan->mesh_h;
  s->y0 = 0;
  s->y1 = s->h;
  s->depth = plan->target.queue_depth;
  s->T_R = plan->target.ramp_cycles;
  s->hop = plan->target.hop_cycles > 0 ? plan->target.hop_cycles : 1;
  class_colors(s);
  wf_sim_guard_init(s);
  size_t cells = (size_t)s->w * (size_t)s->h;
  s->pes = calloc(cells, sizeof *s->pes);
  s->routers = calloc(cells, sizeof *s->routers);
  s->ops = calloc((size_t)plan->n_ops + 1, sizeof *s->ops);
  WF_ASSERT(s->pes && s->routers && s->ops);
  for (int i = 0; i <= plan->n_ops; i++) s->ops[i].start = INT64_MAX;
  s->colls = calloc((size_t)plan->n_colls + 1, sizeof *s->colls);
  WF_ASSERT(s->colls);
  for (int i = 0; i < plan->n_colls; i++) s->colls[i].start = INT64_MAX;
  /* Each cell's class first: the slab (sim_layout.c) is sized from it. */
  int *cls = malloc((cells + 1) * sizeof *cls);
  WF_ASSERT(cls != NULL);
  for (size_t i = 0; i < cells; i++) cls[i] = -1;
  for (int k = 0; k < plan->n_places; k++) {
    const wf_plan_place *pl = &plan->places[k];
    for (int y = pl->y; y < pl->y + pl->h; y++)
      for (int x = pl->x; x < pl->x + pl->w; x++) cls[(size_t)y * s->w + x] = pl->cls;
  }
  wf_sim_layout(s, cls);
  free(cls);
  for (int k = 0; k < plan->n_places; k++) {
    const wf_plan_place *pl = &plan->places[k];
    const wf_plan_region *reg = &plan->regions[pl->region];
    for (int y = pl->y; y < pl->y + pl->h; y++)
      for (int x = pl->x; x < pl->x + pl->w; x++) {
        wf_pe *p = s->pes[(size_t)y * s->w + x];
        wf_router *r = s->routers[(size_t)y * s->w + x];
        if (p->cls_i != pl->cls) continue; /* a later place took the cell */
        p->x = r->x = x;
        p->y = r->y = y;
        p->cls = plan->classes[pl->cls];
        p->env = wf_pe_env_at(p->cls, x - reg->x, y - reg->y, reg->w, reg->h);
        p->op = plan->n_ops;
        p->coll = -1;
        p->phase = -1;
        wf_pe_start(s, p);
        wf_router_setup(s, p, r);
        s->n_pes++;
      }
  }
  for (size_t i = 0; i < cells; i++)
    if (s->routers[i]) wf_router_link(s, s->routers[i]);
  s->act_pe = calloc((size_t)s->n_pes + 1, sizeof *s->act_pe);
  s->act_rt = calloc((size_t)s->n_pes + 1, sizeof *s->act_rt);
  s->soft_woken = calloc((size_t)s->n_pes + 1, sizeof *s->soft_woken);
  s->rt_now = calloc((size_t)s->n_pes + 1, sizeof *s->rt_now);
  s->rt_join = calloc((size_t)s->n_pes + 1, sizeof *s->rt_join);
  s->timers = calloc((size_t)s->n_pes + 1, sizeof *s->timers);
  s->slept = calloc((size_t)s->n_pes + 1, sizeof *s->slept);
  s->emptied = calloc((size_t)s->n_pes + 1, sizeof *s->emptied);
  WF_ASSERT(s->act_pe && s->act_rt && s->soft_woken && s->timers && s->slept && s->emptied &&
            s->rt_now && s->rt_join);
  /* Row-major activation order: deterministic, independent of the manifest's class order. */
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i]) {
      s->pes[i]->active = 1;
      s->pes[i]->rt->pe_wait = 0;
      s->pes[i]->key = s->next_key++;
      s->act_pe[s->n_act_pe++] = s->pes[i];
    }
  if (s->functional)
    for (int i = 0; i < plan->n_weights; i++)
      wf_sim_scatter(s, &plan->weights[i],
                     (const float *)(plan->weight_data + plan->weights[i].offset));
  return s;
}

void wf_sim_free(wf_sim *s) {
  if (!s) return;
  wf_sim_threads_free(s);
  if (s->slab) wf_sim_unpack_free(s);
  wf_sim_guard_free(s);
  wf_sim_guard_vars_free(s);
  free(s->pes);
  free(s->routers);
  free(s->act_pe);
  free(s->soft_woken);
  free(s->rt_now);
  free(s->rt_join);
  free(s->timers);
  free(s->slept);
  free(s->emptied);
  free(s->act_rt);
  free(s->ops);
  free(s->colls);
  free(s->ci);
  free(s->route_counts);
  free(s);
}

/* ---- the main loop -------------------------------------------------------------------- */

static int by_key(const void *a, const void *b) {
  int64_t x = (*(wf_pe *const *)a)->key, y = (*(wf_pe *const *)b)->key;
  return (x > y) - (x < y);
}

/* Puts the SOFT sleepers woken this cycle back at their places (the list is sorted by key:
 * row-major at start, then wake order). Walks from the end so the merge needs no copy. */
static void merge_soft_woken(wf_sim *s) {
  int m = s->n_soft_woken;
  if (!m) return;
  qsort(s->soft_woken, (size_t)m, sizeof *s->soft_woken, by_key);
  int i = s->n_act_pe - 1, j = m - 1, k = s->n_act_pe + m - 1;
  while (j >= 0) {
    if (i >= 0 && s->act_pe[i]->key > s->soft_woken[j]->key) s->act_pe[k--] = s->act_pe[i--];
    else s->act_pe[k--] = s->soft_woken[j--];
  }
  s->n_act_pe += m;
  s->n_soft_woken = 0;
}

static int by_rt_key(const void *a, const void *b) {
  int64_t x = (*(wf_router *const *)a)->key, y = (*(wf_router *const *)b)->key;
  return (x > y) - (x < y);
}

/* Puts the routers that rejoin at this cycle's end at their places (by key), dropping those
 * that emptied. */
static void merge_rt_join(wf_sim *s) {
  int m = 0;
  for (int t = 0; t < s->n_rt_join; t++) {
    wf_router *r = s->rt_join[t];
    if (r->buffered) {
      s->rt_join[m++] = r;
      r->where = WF_RT_LIST;
    } else {
      r->active = 0;
      r->where = WF_RT_NONE;
    }
  }
  s->n_rt_join = 0;
  if (!m) return;
  qsort(s->rt_join, (size_t)m, sizeof *s->rt_join, by_rt_key);
  int i = s->n_act_rt - 1, j = m - 1, k = s->n_act_rt + m - 1;
  while (j >= 0) {
    if (i >= 0 && s->act_rt[i]->key > s->rt_join[j]->key) s->act_rt[k--] = s->act_rt[i--];
    else s->act_rt[k--] = s->rt_join[j--];
  }
  s->n_act_rt += m;
}

/* What the clock may skip to (wf_jump_state): all_compute stays 1 while every awake PE is
 * inside a compute instruction without background streams, next_busy is the first cycle one
 * ends. */
void wf_sim_jump_see(wf_jump_state *j, const wf_pe *p) {
  if (p->state != WF_PE_COMPUTE || p->n_async) j->all_compute = 0;
  else if (p->busy_until < j->next_busy) j->next_busy = p->busy_until;
}

/* One cycle of every awake PE, then of every router holding wavelets, then the lists are
 * compacted. The steps note which entries may leave (a PE that went to sleep, a router that
 * emptied), so compaction touches only those, not every PE and router again; an entry
 * woken again later in the same cycle keeps its place, as when the whole list was scanned. */
static int step_cycle(wf_sim *s, wf_jump_state *j) {
  j->all_compute = 1;
  j->next_busy = INT64_MAX;
  s->rt_cur_key = INT64_MIN;
  /* Both lists are in wake order, scattered over the mesh: prefetch a few steps ahead. */
  int n = s->n_act_pe, n_slept = 0;
  for (int i = 0; i < n && !s->failed; i++) {
    wf_sim_prefetch_pes(s, i, n);
    wf_pe *p = s->act_pe[i];
    if (!p->sleeping) wf_pe_step(s, p);
    if (p->sleeping) s->slept[n_slept++] = i;
    else wf_sim_jump_see(j, p); /* a router cannot change an awake PE's state */
  }
  /* Routers: the list merged, by key, with the sleepers woken to run in this cycle. */
  int nr = s->n_act_rt, n_emptied = 0;
  for (int i = 0; !s->failed;) {
    wf_router *r;
    int li = -1;
    if (s->n_rt_now && (i >= nr || s->rt_now[0]->key < s->act_rt[i]->key)) {
      r = wf_sim_rt_now_pop(s);
    } else if (i < nr) {
      wf_sim_prefetch_routers(s, i, nr);
      li = i;
      r = s->act_rt[i++];
    } else {
      break;
    }
    s->rt_cur_key = r->key;
    wf_sim_router_stepped(s, r, li, &n_emptied);
  }
  if (s->failed) return -1;
  s->rt_cur_key = INT64_MAX;
  wf_sim_compact(s, j, n, n_slept, n_emptied);
  return 0;
}

/* The end of a cycle: the lists lose what the steps noted (n PEs were stepped, n_slept of
 * them went to sleep, n_emptied routers emptied or slept) and gain the woken. */
void wf_sim_compact(wf_sim *s, wf_jump_state *j, int n, int n_slept, int n_emptied) {
  /* PEs: drop the sleepers; those a router woke stay. PEs a router woke from a hard sleep
   * were appended (n..), soft ones wait in soft_woken. */
  int k = n_slept ? s->slept[0] : n;
  for (int t = 0, i = k; i < s->n_act_pe; i++) {
    wf_pe *p = s->act_pe[i];
    int seen = i < n;
    if (t < n_slept && s->slept[t] == i) {
      t++;
      seen = 0;
      if (p->sleeping) {
        p->active = 0;
        continue;
      }
    }
    if (!seen) wf_sim_jump_see(j, p);
    s->act_pe[k++] = p;
  }
  s->n_act_pe = k;
  for (int i = 0; i < s->n_soft_woken; i++) wf_sim_jump_see(j, s->soft_woken[i]);
  merge_soft_woken(s);
  /* SOFT sleepers would not stop the clock jump: they wait for router events, and a jump
   * happens only when no router holds a wavelet. */
  if (s->n_timers && s->timers[0]->busy_until < j->next_busy)
    j->next_busy = s->timers[0]->busy_until;
  /* Routers: drop those still empty or asleep; routers woken this cycle (nr..) hold a
   * wavelet. Then woken sleepers rejoin. */
  k = n_emptied ? s->emptied[0] : s->n_act_rt;
  for (int t = 0, i = k; i < s->n_act_rt; i++) {
    wf_router *r = s->act_rt[i];
    if (t < n_emptied && s->emptied[t] == i) {
      t++;
      if (r->asleep) {
        r->where = WF_RT_NONE;
        continue;
      }
      if (!r->buffered) {
        r->active = 0;
        r->where = WF_RT_NONE;
        continue;
      }
    }
    s->act_rt[k++] = r;
  }
  s->n_act_rt = k;
  merge_rt_join(s);
}

/* The start of a cycle: compute instructions ending now rejoin the list at their places. */
void wf_sim_cycle_begin(wf_sim *s) {
  while (s->n_timers && s->timers[0]->busy_until <= s->now) {
    wf_pe *p = timer_pop(s);
    p->sleeping = WF_SLEEP_NONE;
    p->active = 1;
    p->rt->pe_wait = 0;
    s->soft_woken[s->n_soft_woken++] = p;
  }
  merge_soft_woken(s);
  /* A PE still inside a compute instruction counts as progress, as when it was polled. */
  s->progress = s->n_timers > 0;
}

/* The step parameters live in each PE's environment, beside x and y: the interpreter and the
 * JIT's operands both read them through wf_term_eval, so a decode step sees them in every
 * guard, loop bound and size. Routes cannot name them (the parser refuses it), so the routers
 * built by wf_sim_new stay valid. A host's mistake is reported, not asserted: the values come
 * from a manifest. */
int wf_sim_set_step(wf_sim *s, int grow_row, const int *row_counts) {
  const wf_plan *plan = s->plan;
  if (s->ran) {
    wf_error_at("wf_sim_set_step", "called after the run started: set the step before wf_sim_run");
    return -1;
  }
  int rows = 0;
  for (int i = 0; i < plan->n_regions; i++)
    if (plan->regions[i].h > rows) rows = plan->regions[i].h;
  if (grow_row < 0 || grow_row >= rows) {
    wf_error_at("wf_sim_set_step", "grow row %d is not a row of the plan's regions (0..%d)", grow_row, rows - 1);
    return -1;
  }
  for (int y = 0; y < rows; y++)
    if (row_counts[y] < 0) {
      wf_error_at("wf_sim_set_step", "row %d: negative token count %d", y, row_counts[y]);
      return -1;
    }
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++) {
    wf_pe *p = s->pes[i];
    if (!p || !p->cls) continue;
    p->env.r = grow_row;
    p->env.c = row_counts[p->env.y];
  }
  return 0;
}

static double host_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t wf_plan_sram_host_bytes(const wf_plan *p) {
  int64_t total = 0;
  for (int i = 0; i < p->n_places; i++) /* each term <= 2^32 PEs x 2^30 bytes (plan_load.c) */
    total += (int64_t)p->places[i].w * p->places[i].h * p->classes[p->places[i].cls]->mem_bytes;
  return total;
}

/* Bands for opts.threads: one per thread, at most one per row. */
static int band_count(const wf_sim *s) {
  int t = s->opts.threads;
  if (t == WF_SIM_THREADS_AUTO) {
    if (s->n_pes < WF_SIM_THREADS_MIN_PES) return 1;
    t = wf_sim_cores_idle();
  }
  if (t > s->h) t = s->h;
  if (t > WF_SIM_THREADS_MAX) t = WF_SIM_THREADS_MAX;
  return t > 1 ? t : 1;
}

int wf_sim_run(wf_sim *s) {
  WF_ASSERT(!s->ran);
  if (wf_sim_mpi_ranks() > 1) return wf_sim_run_mpi(s);
  return wf_sim_run_local(s);
}

int wf_sim_run_local(wf_sim *s) {
  WF_ASSERT(!s->ran);
  int bands = band_count(s);
  if (bands > 1) return wf_sim_run_threads(s, bands);
  s->ran = 1;
  int64_t quiet = 0, steps = 0;
  double deadline = s->opts.max_seconds > 0 ? host_seconds() + (double)s->opts.max_seconds : 0;
  while (s->n_act_pe || s->n_act_rt || s->n_timers || s->n_rt_sleep) {
    /* Host time only decides whether to go on (checked every 4096 steps: a clock read per
     * cycle would cost more than a cycle of a small mesh). */
    if (deadline > 0 && (++steps & 4095) == 0 && host_seconds() > deadline) {
      wf_sim_settle(s);
      wf_error_at("waferrun", "the simulation exceeded --time-limit=%lld s of host time at cycle %lld",
                  (long long)s->opts.max_seconds, (long long)s->now);
      return WF_EXIT_RUNTIME;
    }
    wf_sim_cycle_begin(s);
    wf_jump_state j;
    if (step_cycle(s, &j)) {
      wf_sim_settle(s);
      return WF_EXIT_RUNTIME;
    }
    int all_compute = j.all_compute;
    int64_t next_busy = j.next_busy;
    quiet = s->progress ? 0 : quiet + 1;
    if (!s->n_act_pe && !s->n_act_rt && !s->n_timers) {
      if (!s->n_soft && !s->n_rt_sleep) break;
      if (s->n_rt_sleep) {
        /* Blocked routers are left and nothing can wake them: the polling loop stepped
         * them every cycle until the deadlock bound (or --max-cycles), with SOFT sleepers
         * left uncharged as in any other deadlock. */
        int64_t at =
            s->now + (quiet < s->opts.deadlock_cycles ? s->opts.deadlock_cycles - quiet : 0);
        if (s->opts.max_cycles && at > s->opts.max_cycles) {
          s->now = s->opts.max_cycles;
          wf_sim_settle(s);
          wf_error_at("waferrun", "the simulation exceeded --max-cycles=%lld",
                      (long long)s->opts.max_cycles);
          return WF_EXIT_RUNTIME;
        }
        s->now = at;
        quiet = quiet > s->opts.deadlock_cycles ? quiet : s->opts.deadlock_cycles;
        wf_sim_settle(s);
        char why[128];
        snprintf(why, sizeof why, "no progress for %lld cycles", (long long)quiet);
        wf_sim_report_deadlock(s, why);
        return WF_EXIT_RUNTIME;
      }
      /* Only SOFT sleepers are left and nothing can wake them: a polling simulator would
       * spin until the deadlock bound (or --max-cycles); report what it would have. */
      int64_t at = s->now + (quiet < s->opts.deadlock_cycles ? s->opts.deadlock_cycles - quiet : 0);
      if (s->opts.max_cycles && at > s->opts.max_cycles) {
        wf_error_at("waferrun", "the simulation exceeded --max-cycles=%lld",
                    (long long)s->opts.max_cycles);
        return WF_EXIT_RUNTIME;
      }
      s->now = at;
      quiet = quiet > s->opts.deadlock_cycles ? quiet : s->opts.deadlock_cycles;
      size_t cells = (size_t)s->w * (size_t)s->h;
      for (size_t i = 0; i < cells; i++)
        if (s->pes[i] && s->pes[i]->sleeping == WF_SLEEP_SOFT) wf_sim_charge_sleep(s, s->pes[i], s->now);
      char why[128];
      snprintf(why, sizeof why, "no progress for %lld cycles", (long long)quiet);
      wf_sim_report_deadlock(s, why);
      return WF_EXIT_RUNTIME;
    }
    if (quiet >= s->opts.deadlock_cycles) {
      wf_sim_settle(s);
      char why[128];
      snprintf(why, sizeof why, "no progress for %lld cycles", (long long)quiet);
      wf_sim_report_deadlock(s, why);
      return WF_EXIT_RUNTIME;
    }
    int64_t next = s->now + 1;
    /* Blocked routers were visited every cycle by the polling loop: no jump while any sleeps. */
    if (!s->n_act_rt && !s->n_rt_sleep && all_compute && (s->n_act_pe || s->n_timers) &&
        next_busy > next)
      next = next_busy;
    if (s->opts.max_cycles && next > s->opts.max_cycles) {
      wf_sim_settle(s);
      wf_error_at("waferrun", "the simulation exceeded --max-cycles=%lld",
                  (long long)s->opts.max_cycles);
      return WF_EXIT_RUNTIME;
    }
    s->now = next;
  }
  return wf_sim_finish(s);
}

int wf_sim_finish(wf_sim *s) {
  /* Everything is asleep and nothing is in flight: finished, unless someone still waits. */
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i] && !wf_pe_quiescent(s->pes[i])) {
      wf_sim_report_deadlock(s, "every unfinished PE waits for wavelets and none is in flight");
      return WF_EXIT_RUNTIME;
    }
  s->total = 0;
  for (size_t i = 0; i < cells; i++) {
    wf_pe *p = s->pes[i];
    if (!p) continue;
    if (p->finish > s->total) s->total = p->finish;
    for (int c = 0; c < s->ci[p->cls_i].nlc; c++) s->undelivered += p->q[c].count;
  }
  if (s->undelivered)
    wf_warning(WF_LOC_NONE, "%lld wavelet(s) were sent but never received",
               (long long)s->undelivered);
  wf_sim_count_routes(s);
  return WF_EXIT_OK;
}

int64_t wf_sim_cycles(const wf_sim *s) { return s->total; }

/* ---- read-only statistics (runtime.h) -------------------------------------------------- */

int wf_sim_mesh_w(const wf_sim *s) { return s->w; }
int wf_sim_mesh_h(const wf_sim *s) { return s->h; }

static int inside(const wf_sim *s, int x, int y) { return x >= 0 && y >= 0 && x < s->w && y < s->h; }

int wf_sim_pe_stats_at(const wf_sim *s, int x, int y, wf_sim_pe_stats *out) {
  memset(out, 0, sizeof *out);
  out->cls = -1;
  if (!inside(s, x, y)) return -1;
  const wf_pe *p = s->pes[(size_t)y * s->w + x];
  if (!p) return 0;
  out->present = 1;
  out->cls = p->cls_i;
  out->compute = p->compute;
  out->comm = p->comm;
  out->stall = p->stall;
  out->overlap = p->overlap;
  out->busy = p->compute + p->comm;
  out->idle = s->total - p->compute - p->comm - p->stall;
  out->finish = p->finish;
  out->ctl_wavelets = p->ctl_in;
  return 0;
}

int64_t wf_sim_link_wavelets(const wf_sim *s, int x, int y, int dir) {
  if (!inside(s, x, y) || dir < 0 || dir >= WF_DIR_COUNT) return 0;
  const wf_router *r = s->routers[(size_t)y * s->w + x];
  return r ? r->out_count[dir] : 0;
}

int64_t wf_sim_link_stalls(const wf_sim *s, int x, int y, int dir) {
  if (!inside(s, x, y) || dir < 0 || dir >= WF_DIR_COUNT) return 0;
  const wf_router *r = s->routers[(size_t)y * s->w + x];
  return r ? r->out_stall[dir] : 0;
}

int wf_sim_op_extent(const wf_sim *s, int op, int64_t *start, int64_t *end) {
  if (op < 0 || op >= s->plan->n_ops || s->ops[op].start == INT64_MAX) return -1;
  *start = s->ops[op].start;
  *end = s->ops[op].end;
  return 0;
}

int64_t wf_sim_ramp_down(const wf_sim *s, int x, int y) {
  if (!inside(s, x, y)) return 0;
  const wf_router *r = s->routers[(size_t)y * s->w + x];
  return r ? r->ramp_down : 0;
}
