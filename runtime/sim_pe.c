/* The PE: a task scheduler, one instruction stream (the running task) and up to
 * WF_SIM_ASYNC background fabric streams (docs/cycle-model.md, "PE"). Costs come from the
 * instruction table (ir/pe/peops.def) and the target; nothing depends on host time. */
#include <stddef.h>
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

static int64_t ival(const wf_pe *p, const wf_pe_instr *in, int a) {
  return wf_pe_arg_int(&in->args[a], &p->env);
}

static void worked(wf_sim *s, wf_pe *p, int64_t until) {
  if (until > p->finish) p->finish = until;
  if (until > s->ops[p->op].end) s->ops[p->op].end = until;
  s->progress = 1;
}

/* `coll n`: the PE leaves the collective it is in (if any) and enters n (n >= 0). */
static void coll_mark(wf_sim *s, wf_pe *p, int n) {
  if (p->coll >= 0 && s->now > s->colls[p->coll].end) s->colls[p->coll].end = s->now;
  p->coll = n;
  if (n < 0) return;
  if (s->now < s->colls[n].start) s->colls[n].start = s->now;
  s->colls[n].entries++;
}

/* `phase n`: the PE enters phase n (0 alignment, 1 loop, 2 drain) of its op; a repeated
 * marker of the phase it is in changes nothing (one-buffer GEMMs align A, then B). */
static void phase_mark(wf_sim *s, wf_pe *p, int n) {
  if (p->phase == n || p->op >= s->plan->n_ops || n < 0 || n > 2) return;
  p->phase = n;
  if (s->now + 1 > s->ops[p->op].phase_in[n]) s->ops[p->op].phase_in[n] = s->now + 1;
}

static void op_enter(wf_sim *s, wf_pe *p, int op) {
  if (p->coll >= 0) coll_mark(s, p, -1);
  if (p->op == op) return;
  p->phase = -1;
  if (p->op != s->plan->n_ops) wf_sim_emit(s, p, WF_SIM_EV_OP_END, -1, -1);
  if (s->now < s->ops[op].start) s->ops[op].start = s->now;
  if (s->now > s->ops[op].end) s->ops[op].end = s->now;
  p->op = op;
  wf_sim_emit(s, p, WF_SIM_EV_OP_BEGIN, -1, -1);
}

static int is_input(wf_peop op) {
  switch (op) {
    case WF_PEOP_RECV: case WF_PEOP_RECVADD: case WF_PEOP_RECVMAX: case WF_PEOP_ADDSEND:
    case WF_PEOP_MAXSEND: case WF_PEOP_ARECV: case WF_PEOP_ARECVADD:
      return 1;
    default:
      return 0;
  }
}

/* data_head when a ready control wavelet is at the head: consumes the control wavelets
 * ahead of the first data one (each activates the color's control task). */
static wf_wv *data_head_ctl(wf_sim *s, wf_pe *p, int lc) {
  wf_fifo *q = &p->q[lc];
  wf_wv *w;
  while ((w = wf_fifo_head(q)) && w->ready <= s->now && w->kind != WF_WV_DATA) {
    wf_fifo_pop(s, q);
    wf_sim_drained(s, q, p->rt);
    p->ctl_in++;
    int col = s->ci[p->cls_i].lcol[lc];
    for (int t = 0; t < p->cls->n_tasks; t++)
      if (p->cls->tasks[t].kind == WF_TASK_CONTROL && p->cls->tasks[t].color == col)
        p->t_active |= 1u << t;
    s->progress = 1;
  }
  return w && w->ready <= s->now ? w : NULL;
}

/* The ready data wavelet at the head of local color lc's queue, or NULL. Control wavelets
 * ahead of it are consumed on the way (data_head_ctl). */
static inline wf_wv *data_head(wf_sim *s, wf_pe *p, int lc) {
  wf_fifo *q = &p->q[lc];
  wf_wv *w = wf_fifo_head(q);
  if (!w || w->ready > s->now) return NULL;
  return w->kind == WF_WV_DATA ? w : data_head_ctl(s, p, lc);
}

/* Room for one item down the ramp into the router's RAMP buffer of local color lc. */
static wf_fifo *ramp_slot(wf_sim *s, wf_pe *p, int lc) {
  if (p->ramp_used == s->now) return NULL;
  wf_router *r = wf_sim_router_of(s, p);
  wf_fifo *f = &r->rc[lc].in[WF_DIR_RAMP];
  return f->count < s->depth ? f : NULL;
}

/* Puts w into f, the RAMP buffer of local color lc (ramp_slot found it). */
static void ramp_push(wf_sim *s, wf_pe *p, int lc, wf_fifo *f, wf_wv w) {
  wf_router *r = wf_sim_router_of(s, p);
  wf_router_push_at(s, r, f, lc * WF_DIR_COUNT + WF_DIR_RAMP, w);
  r->ramp_down++;
  p->ramp_used = s->now;
}

/* One cycle of a stream. Returns 1 if it moved a wavelet, 0 if it waited. */
static int stream_unit(wf_sim *s, wf_pe *p, wf_stream *st) {
  const wf_pe_instr *in = st->in;
  float *mem = s->functional ? wf_sim_pe_mem(s, p) : NULL;
  switch (in->op) {
    case WF_PEOP_SEND:
    case WF_PEOP_SENDADV:
    case WF_PEOP_ASEND: {
      wf_fifo *f = ramp_slot(s, p, st->co);
      if (!f) return 0;
      wf_wv w = {mem ? mem[st->off + st->prog] : 0.0f, WF_WV_DATA, 0, 0, 0, s->now + s->T_R};
      w.adv = in->op == WF_PEOP_SENDADV && st->prog == st->need - 1;
      ramp_push(s, p, st->co, f, w);
      break;
    }
    case WF_PEOP_ADDSEND:
    case WF_PEOP_MAXSEND: {
      wf_wv *h = data_head(s, p, st->ci);
      wf_fifo *f = h ? ramp_slot(s, p, st->co) : NULL;
      if (!f) return 0;
      float a = wf_fifo_pop(s, &p->q[st->ci]).v, b = mem ? mem[st->off + st->prog] : 0.0f;
      wf_sim_drained(s, &p->q[st->ci], p->rt);
      float v = in->op == WF_PEOP_ADDSEND ? a + b : (a > b ? a : b);
      /* The result enters the ramp the cycle after its operand was read (one pipeline stage). */
      ramp_push(s, p, st->co, f, (wf_wv){v, WF_WV_DATA, 0, 0, 0, s->now + 1 + s->T_R});
      break;
    }
    default: { /* recv, recvadd, recvmax and their async forms */
      if (!data_head(s, p, st->ci)) return 0;
      float v = wf_fifo_pop(s, &p->q[st->ci]).v;
      wf_sim_drained(s, &p->q[st->ci], p->rt);
      if (mem) {
        float *d = &mem[st->off + st->prog];
        if (in->op == WF_PEOP_RECV || in->op == WF_PEOP_ARECV) *d = v;
        else if (in->op == WF_PEOP_RECVMAX) *d = v > *d ? v : *d;
        else *d += v;
      }
      break;
    }
  }
  st->prog++;
  return 1;
}

/* Sets up a stream for a fabric instruction: colors and the memory operand. */
static int stream_begin(wf_sim *s, wf_pe *p, const wf_pe_instr *in, wf_stream *st) {
  const wf_cls_info *ci = &s->ci[p->cls_i];
  memset(st, 0, sizeof *st);
  st->in = in;
  st->ci = st->co = -1;
  int mem_arg, n_arg;
  if (in->op == WF_PEOP_ADDSEND || in->op == WF_PEOP_MAXSEND) {
    st->ci = ci->lidx[in->args[0].term.k];
    st->co = ci->lidx[in->args[1].term.k];
    mem_arg = 2;
    n_arg = 3;
  } else {
    int c = ci->lidx[in->args[0].term.k];
    if (in->op == WF_PEOP_SEND || in->op == WF_PEOP_SENDADV || in->op == WF_PEOP_ASEND) st->co = c;
    else st->ci = c;
    mem_arg = 1;
    n_arg = 2;
  }
  st->need = ival(p, in, n_arg);
  if (st->need < 0) {
    wf_sim_rt_error(s, p, in, "negative wavelet count %lld", (long long)st->need);
    return -1;
  }
  if (wf_sim_operand(s, p, in, mem_arg, st->need, NULL, &st->off)) return -1;
  if (in->args[3].term.k >= 0 && wf_peops[in->op].cost == WF_PECOST_ASYNC)
    st->task = (int)in->args[3].term.k;
  return 0;
}

/* Starts the highest-priority (lowest index) runnable task. Returns 1 if one started. */
static int schedule(wf_sim *s, wf_pe *p) {
  const wf_pe_class *c = p->cls;
  const wf_cls_info *ci = &s->ci[p->cls_i];
  for (int lc = 0; lc < ci->nlc; lc++)
    if (p->q[lc].count) data_head(s, p, lc);
  for (int t = 0; t < c->n_tasks; t++)
    if (c->tasks[t].kind == WF_TASK_DATA) {
      int lc = ci->lidx[c->tasks[t].color];
      wf_wv *w = wf_fifo_head(&p->q[lc]);
      if (w && w->kind == WF_WV_DATA && w->ready <= s->now) p->t_active |= 1u << t;
    }
  uint32_t run = p->t_active & ~p->t_blocked;
  if (!run) return 0;
  int t = __builtin_ctz(run);
  p->t_active &= ~(1u << t);
  p->task = t;
  p->pc = c->tasks[t].start;
  p->wait_pc = -1;
  p->depth = 0;
  p->state = WF_PE_FETCH;
  wf_sim_emit(s, p, WF_SIM_EV_TASK_BEGIN, -1, -1);
  s->progress = 1;
  return 1;
}

/* Runs zero-cost instructions and starts the next costed one. Returns 1 when the task
 * ended (the PE is idle again), 0 otherwise. */
static int fetch(wf_sim *s, wf_pe *p) {
  const wf_pe_class *c = p->cls;
  /* Parked at a `wait` whose guard held: nothing but its streams' completion moves the PE
   * on, so the guard (the same pc and loop variables) is not evaluated again each cycle. */
  if (p->pc == p->wait_pc && p->n_async) {
    p->cy = WF_CY_STALL;
    return 0;
  }
  int end = c->tasks[p->task].end;
  while (p->pc < end) {
    const wf_pe_instr *in = &c->code[p->pc];
    if (in->op == WF_PEOP_ENDLOOP) {
      int lp = in->match, var = c->code[lp].args[0].term.var;
      if (++p->env.vars[var] < p->loop_end[p->depth - 1]) p->pc = lp + 1;
      else {
        p->depth--;
        p->pc++;
      }
      continue;
    }
    if (in->guard.n && wf_sim_never(s, p, p->pc) && in->op != WF_PEOP_LOOP) {
      /* skipped, and so is every instruction after it up to the next one that is live here
       * or a loop (whose guard skips its whole body) */
      int next = wf_sim_next_live(s, p, p->pc);
      p->pc = next < end ? next : end;
      continue;
    }
    if (in->guard.n && (wf_sim_never(s, p, p->pc) || !wf_sim_guard_holds(s, p, in, p->pc))) {
      p->pc = in->op == WF_PEOP_LOOP ? in->match + 1 : p->pc + 1;
      continue;
    }
    switch (wf_peops[in->op].cost) {
      case WF_PECOST_NONE:
        if (in->op == WF_PEOP_OP) {
          op_enter(s, p, (int)in->args[0].term.k);
          p->pc++;
        } else if (in->op == WF_PEOP_COLL) {
          coll_mark(s, p, (int)in->args[0].term.k);
          p->pc++;
        } else if (in->op == WF_PEOP_PHASE) {
          phase_mark(s, p, (int)in->args[0].term.k);
          p->pc++;
        } else { /* LOOP */
          int32_t lo = (int32_t)ival(p, in, 1), hi = (int32_t)ival(p, in, 2);
          if (lo >= hi) {
            p->pc = in->match + 1;
          } else {
            if (p->depth == 16) {
              wf_sim_rt_error(s, p, in, "loops nested deeper than 16");
              return 0;
            }
            p->env.vars[in->args[0].term.var] = lo;
            p->loop_end[p->depth++] = hi;
            p->pc++;
          }
        }
        continue;
      case WF_PECOST_TASK: {
        if (in->op == WF_PEOP_WAIT) { /* a join: the task holds until its streams are done */
          if (p->n_async) {
            p->cy = WF_CY_STALL;
            p->wait_pc = p->pc;
            return 0;
          }
          p->wait_pc = -1;
          p->pc++;
          continue;
        }
        uint32_t bit = 1u << in->args[0].term.k;
        if (in->op == WF_PEOP_ACTIVATE) p->t_active |= bit;
        else if (in->op == WF_PEOP_BLOCK) p->t_blocked |= bit;
        else p->t_blocked &= ~bit;
        p->pc++;
        continue;
      }
      case WF_PECOST_ASYNC: {
        int k = 0;
        while (k < WF_SIM_ASYNC && p->as[k].in) k++;
        if (k == WF_SIM_ASYNC) { /* every engine busy: wait for one */
          p->cy = WF_CY_STALL;
          return 0;
        }
        if (stream_begin(s, p, in, &p->as[k])) return 0;
        p->pc++;
        if (p->as[k].need == 0) {
          p->t_active |= 1u << p->as[k].task;
          p->as[k].in = NULL;
        } else {
          p->n_async++;
          wf_sim_emit_stream(s, p, WF_SIM_EV_ASYNC_BEGIN, p->pc - 1, k, p->as[k].need);
        }
        s->progress = 1;
        continue;
      }
      case WF_PECOST_CTL: {
        int lc = s->ci[p->cls_i].lidx[in->args[0].term.k];
        wf_fifo *f = ramp_slot(s, p, lc);
        if (!f) {
          p->cy = WF_CY_STALL;
          return 0;
        }
        wf_wv w = {0.0f, WF_WV_CTL, 0, 0, 0, s->now + s->T_R};
        if (in->op == WF_PEOP_TEARDOWN) w.kind = WF_WV_TEARDOWN;
        if (in->op == WF_PEOP_SWSET) {
          int64_t pos = ival(p, in, 1);
          if (pos < 0 || pos >= WF_PE_MAX_POS) {
            wf_sim_rt_error(s, p, in, "switch position %lld out of range", (long long)pos);
            return 0;
          }
          w.kind = WF_WV_SWSET;
          w.arg = (uint8_t)pos;
        }
        ramp_push(s, p, lc, f, w);
        wf_sim_emit(s, p, WF_SIM_EV_INSTR_BEGIN, p->pc, 1);
        p->pc++;
        p->cy = WF_CY_COMM;
        p->state = WF_PE_COMPUTE;
        p->busy_until = s->now + 1;
        worked(s, p, s->now + 1);
        return 0;
      }
      case WF_PECOST_FABRIC: {
        if (stream_begin(s, p, in, &p->cur)) return 0;
        p->pc++;
        if (p->cur.need == 0) continue;
        p->state = WF_PE_FABRIC;
        wf_sim_emit_stream(s, p, WF_SIM_EV_INSTR_BEGIN, p->pc - 1, -1, p->cur.need);
        return 0; /* the first wavelet moves in this cycle (wf_pe_step) */
      }
      default: {
        int64_t cyc = wf_sim_compute_cycles(s, p, in);
        if (wf_sim_execute(s, p, in)) return 0;
        p->pc++;
        if (cyc <= 0) continue;
        wf_sim_emit(s, p, WF_SIM_EV_INSTR_BEGIN, p->pc - 1, cyc);
        p->state = WF_PE_COMPUTE;
        p->busy_until = s->now + cyc;
        wf_pe_charge(s, p, WF_CY_COMPUTE, s->now, cyc);
        worked(s, p, s->now + cyc);
        return 0;
      }
    }
  }
  wf_sim_emit(s, p, WF_SIM_EV_TASK_END, -1, -1);
  p->task = -1;
  p->state = WF_PE_IDLE;
  return 1;
}

/* The main thread's stream, one cycle. */
static void main_stream(wf_sim *s, wf_pe *p) {
  wf_stream *st = &p->cur;
  if (!stream_unit(s, p, st)) {
    p->cy = WF_CY_STALL;
    return;
  }
  p->cy = WF_CY_COMM;
  worked(s, p, s->now + 1);
  if (st->prog < st->need) return;
  wf_sim_emit_stream(s, p, WF_SIM_EV_INSTR_END, (int)(st->in - p->cls->code), -1, st->need);
  /* The last element of an input stream is stored (or its result leaves) in the next cycle;
   * the pipeline lets the next instruction start in that cycle. */
  if (is_input(st->in->op)) worked(s, p, s->now + 2);
  p->state = WF_PE_FETCH;
}

/* One cycle of every background stream. Returns 1 if any moved a wavelet. */
static int async_streams(wf_sim *s, wf_pe *p) {
  int moved = 0;
  for (int k = 0; k < WF_SIM_ASYNC; k++) {
    wf_stream *st = &p->as[k];
    /* An input stream whose queue is empty cannot move (stream_unit would find no head,
     * with no effect): skip the call, which most waiting engines of a shift GEMM make. */
    if (!st->in || (st->ci >= 0 && !p->q[st->ci].count) || !stream_unit(s, p, st)) continue;
    moved = 1;
    worked(s, p, s->now + (is_input(st->in->op) ? 2 : 1));
    if (st->prog == st->need) {
      wf_sim_emit_stream(s, p, WF_SIM_EV_ASYNC_END, (int)(st->in - p->cls->code), k, st->need);
      p->t_active |= 1u << st->task;
      st->in = NULL;
      p->n_async--;
    }
  }
  return moved;
}

/* Classifies this cycle of p once (wf_pe_charge): the main thread's compute instruction was
 * charged when it started and covers the cycle, async wavelets moved under it are overlap;
 * otherwise a wavelet moved by anyone makes it a communication cycle, a blocked main thread
 * or pending async streams a stall, and nothing at all leaves it idle (uncharged). */
static void account(wf_sim *s, wf_pe *p, int async_moved) {
  int cy = p->cy;
  if (cy == WF_CY_NONE && p->state == WF_PE_COMPUTE && p->busy_until > s->now) {
    if (async_moved) {
      p->overlap++;
      s->ops[p->op].overlap++;
    }
    return;
  }
  if (async_moved) cy = WF_CY_COMM;
  else if (cy == WF_CY_NONE && p->n_async) cy = WF_CY_STALL;
  if (cy != WF_CY_NONE) wf_pe_charge(s, p, cy, s->now, 1);
}

/* What a stream waits for if it cannot move next cycle: 1 a delivery into its input queue,
 * 2 a free slot in the router's RAMP buffer (the router wakes the PE when it frees one);
 * 0 it may move. */
static int stream_blocked(wf_sim *s, const wf_pe *p, const wf_stream *st) {
  if (st->ci >= 0 && p->q[st->ci].count == 0) return 1; /* ci: an input stream's color */
  if (st->co >= 0 && wf_sim_router_of(s, p)->rc[st->co].in[WF_DIR_RAMP].count >= s->depth)
    return 2;
  return 0;
}

/* The instruction a FETCH-state PE fetches next waits only for router events or for its own
 * background streams (which then all wait for router events): a `wait` join, an async
 * issue with every engine busy, a control item on a full ramp. Fetching it again each cycle
 * would only count a stall. */
static int fetch_blocked(wf_sim *s, wf_pe *p) {
  if (p->task < 0 || p->pc >= p->cls->tasks[p->task].end) return 0;
  if (p->pc == p->wait_pc) return p->n_async > 0; /* its guard held (fetch) */
  const wf_pe_instr *in = &p->cls->code[p->pc];
  if (in->guard.n && (wf_sim_never(s, p, p->pc) || !wf_sim_guard_holds(s, p, in, p->pc)))
    return 0; /* fetch would skip it */
  if (in->op == WF_PEOP_WAIT) return p->n_async > 0;
  if (wf_peops[in->op].cost == WF_PECOST_ASYNC) return p->n_async == WF_SIM_ASYNC;
  if (wf_peops[in->op].cost == WF_PECOST_CTL) {
    int lc = s->ci[p->cls_i].lidx[in->args[0].term.k];
    return wf_sim_router_of(s, p)->rc[lc].in[WF_DIR_RAMP].count >= s->depth;
  }
  return 0;
}

/* Takes p out of the active list when nothing it could do next cycle can happen before a
 * router event wakes it (a delivery, wf_sim_wake_pe; a freed ramp slot, sim_fabric.c).
 * Sleeping costs no host time: the stall cycles are charged on waking. */
static void maybe_sleep(wf_sim *s, wf_pe *p) {
  int soft = 0;
  if (p->state == WF_PE_COMPUTE) {
    /* Polled, it would only count down; the timer heap brings it back when it ends. */
    if (!p->n_async && p->busy_until > s->now + 1) wf_sim_timer_sleep(s, p);
    return;
  }
  if (p->state == WF_PE_FETCH) {
    if (!fetch_blocked(s, p)) return;
    soft = 1;
  }
  if (p->state == WF_PE_FABRIC) {
    int b = stream_blocked(s, p, &p->cur);
    if (!b) return;
    if (b == 2) soft = 1;
  }
  if (p->state == WF_PE_IDLE && (p->t_active & ~p->t_blocked)) return;
  for (int k = 0; k < WF_SIM_ASYNC; k++)
    if (p->as[k].in) {
      int b = stream_blocked(s, p, &p->as[k]);
      if (!b) return;
      if (b == 2) soft = 1;
    }
  const wf_cls_info *ci = &s->ci[p->cls_i];
  for (int lc = 0; lc < ci->nlc; lc++) {
    if (p->q[lc].count) data_head(s, p, lc); /* control wavelets may activate a task */
    wf_wv *w = wf_fifo_head(&p->q[lc]);
    if (w && (w->ready > s->now || w->kind != WF_WV_DATA)) return; /* arrives soon */
    if (w && p->state == WF_PE_IDLE) {
      for (int t = 0; t < p->cls->n_tasks; t++) /* a data task will start next cycle */
        if (p->cls->tasks[t].kind == WF_TASK_DATA && ci->lidx[p->cls->tasks[t].color] == lc &&
            !(p->t_blocked >> t & 1))
          return;
    }
  }
  if (p->state == WF_PE_IDLE && (p->t_active & ~p->t_blocked)) return;
  if (p->state == WF_PE_IDLE && !p->n_async) wf_sim_emit(s, p, WF_SIM_EV_PE_DONE, -1, -1);
  p->sleeping = soft ? WF_SLEEP_SOFT : WF_SLEEP_HARD;
  p->rt->pe_wait = 1;
  if (soft) s->n_soft++;
  p->sleep_start = s->now + 1;
}

/* Software prefetch for a PE the cycle loop will step soon (see wf_router_prefetch_mid).
 * FAR (sim_sched.h): the PE's hot lines and its main stream and its first queue headers,
 * which follow it in the slab (sim_layout.c); MID: the lines of its async streams, if it
 * has any; NEAR (those lines have arrived by then): the head of every non-empty input
 * queue, its router and the RAMP buffers its streams send into (through rrc: no read of
 * the router). */
void wf_pe_prefetch_mid(const wf_pe *p) {
  if (!p->n_async) return;
  const char *a = (const char *)p->as;
  for (size_t k = 0; k < sizeof p->as; k += 64) __builtin_prefetch(a + k);
  __builtin_prefetch(a + sizeof p->as - 1);
}

void wf_pe_prefetch_near(const wf_sim *s, const wf_pe *p) {
  if (p->state == WF_PE_FABRIC && !p->n_async) { /* a stream reads one queue only */
    const wf_fifo *q = p->cur.ci >= 0 ? &p->q[p->cur.ci] : NULL;
    if (q && q->count) __builtin_prefetch(&q->buf[q->head]);
  } else {
    int nlc = s->ci[p->cls_i].nlc;
    for (int lc = 0; lc < nlc; lc++)
      if (p->q[lc].count) __builtin_prefetch(&p->q[lc].buf[p->q[lc].head]);
  }
  __builtin_prefetch(p->rt);
  if (p->state == WF_PE_FABRIC && p->cur.co >= 0)
    __builtin_prefetch(&p->rrc[p->cur.co].in[WF_DIR_RAMP]);
  if (!p->n_async) return;
  for (int k = 0; k < WF_SIM_ASYNC; k++)
    if (p->as[k].in && p->as[k].co >= 0) __builtin_prefetch(&p->rrc[p->as[k].co].in[WF_DIR_RAMP]);
}

void wf_pe_step(wf_sim *s, wf_pe *p) {
  p->cy = WF_CY_NONE;
  for (int spins = 0; spins < 2 && !s->failed; spins++) {
    if (p->state == WF_PE_IDLE && !schedule(s, p)) break;
    if (p->state == WF_PE_COMPUTE) {
      if (s->now < p->busy_until) {
        s->progress = 1;
        break;
      }
      p->state = WF_PE_FETCH;
    }
    if (p->state == WF_PE_FETCH) {
      if (fetch(s, p)) break; /* the task ended; the next one starts next cycle */
      if (s->failed || p->state != WF_PE_FABRIC) break;
    }
    if (p->state == WF_PE_FABRIC) {
      main_stream(s, p);
      break;
    }
  }
  int moved = p->n_async ? async_streams(s, p) : 0;
  if (!s->failed) {
    account(s, p, moved);
    maybe_sleep(s, p);
  }
}

void wf_pe_start(wf_sim *s, wf_pe *p) {
  (void)s;
  p->task = -1;
  p->wait_pc = -1;
  p->state = WF_PE_IDLE;
  p->ramp_used = -1;
  for (int t = 0; t < p->cls->n_tasks; t++) {
    if (p->cls->tasks[t].active) p->t_active |= 1u << t;
    if (p->cls->tasks[t].blocked) p->t_blocked |= 1u << t;
  }
}

int wf_pe_quiescent(const wf_pe *p) {
  return p->state == WF_PE_IDLE && !p->n_async;
}
