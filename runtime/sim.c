/* The cycle engine: PEs execute their class's instructions, routers move wavelets.
 * Every cost charged here is listed in docs/cycle-model.md; cycles never come from host time.
 *
 * Each cycle: (1) every active PE does one cycle of work, (2) every router holding wavelets
 * forwards at most one wavelet per input buffer, each output port carrying at most one
 * wavelet per cycle. Idle PEs (finished, or asleep on an empty input queue) and empty
 * routers are not visited. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_internal.h"
#include "waferc/diag.h"

static const int dir_dx[WF_DIR_COUNT] = {0, 1, 0, -1, 0};
static const int dir_dy[WF_DIR_COUNT] = {-1, 0, 1, 0, 0};
static const int dir_opp[WF_DIR_COUNT] = {WF_DIR_S, WF_DIR_W, WF_DIR_N, WF_DIR_E, WF_DIR_RAMP};

/* ---- fifos ---------------------------------------------------------------------------- */

static void fifo_init(wf_fifo *f, int depth) {
  f->buf = calloc((size_t)depth, sizeof *f->buf);
  WF_ASSERT(f->buf != NULL);
  f->head = f->count = 0;
}
static void fifo_push(wf_fifo *f, int depth, float v, int64_t ready) {
  WF_ASSERT(f->count < depth);
  f->buf[(f->head + f->count) % depth] = (wf_wv){v, ready};
  f->count++;
}
static wf_wv fifo_pop(wf_fifo *f, int depth) {
  wf_wv w = f->buf[f->head];
  f->head = (f->head + 1) % depth;
  f->count--;
  return w;
}

/* ---- setup ---------------------------------------------------------------------------- */

static void rt_error(wf_sim *s, const wf_pe *p, const wf_pe_instr *in, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void rt_error(wf_sim *s, const wf_pe *p, const wf_pe_instr *in, const char *fmt, ...) {
  char msg[512], where[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (p && in)
    snprintf(where, sizeof where, "%s/programs/%s.wpe:%d: PE (%d,%d), cycle %lld", s->plan->dir,
             p->cls->name, in->line, p->x, p->y, (long long)s->now);
  else if (p)
    snprintf(where, sizeof where, "PE (%d,%d), cycle %lld", p->x, p->y, (long long)s->now);
  else snprintf(where, sizeof where, "cycle %lld", (long long)s->now);
  wf_error_at(where, "%s", msg);
  s->failed = 1;
}

static void resolve_routes(wf_sim *s, wf_pe *p, wf_router *r, const wf_plan_region *reg) {
  int n = WF_DIR_COUNT * s->ncol;
  for (int i = 0; i < n; i++) r->tx[i] = WF_NO_ROUTE;
  /* Later matching rules override earlier ones, so a class writes the general rule first
   * and the edge roles after it. */
  for (int k = 0; k < p->cls->n_routes; k++) {
    const wf_pe_route *rt = &p->cls->routes[k];
    if (!wf_guard_eval(&rt->guard, &p->env)) continue;
    unsigned tx = rt->tx;
    /* Directions leaving the region are dropped: the edge roles of a rule. */
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      int nx = p->x + dir_dx[d], ny = p->y + dir_dy[d];
      if (nx < reg->x || ny < reg->y || nx >= reg->x + reg->w || ny >= reg->y + reg->h)
        tx &= ~(1u << d);
    }
    r->tx[rt->rx * s->ncol + s->col_idx[rt->color]] = tx;
  }
}

wf_sim *wf_sim_new(const wf_plan *plan, const wf_sim_opts *o) {
  wf_sim *s = calloc(1, sizeof *s);
  WF_ASSERT(s != NULL);
  s->plan = plan;
  s->opts = o ? *o : WF_SIM_OPTS_DEFAULT;
  if (s->opts.deadlock_cycles <= 0) s->opts.deadlock_cycles = 10000;
  s->w = plan->mesh_w;
  s->h = plan->mesh_h;
  s->depth = plan->target.queue_depth;
  for (int c = 0; c < WF_MAX_COLORS; c++) s->col_idx[c] = -1;
  for (int c = 0; c < WF_MAX_COLORS; c++)
    if (plan->colors_used >> c & 1) {
      s->col_of[s->ncol] = c;
      s->col_idx[c] = s->ncol++;
    }
  size_t cells = (size_t)s->w * (size_t)s->h;
  s->pes = calloc(cells, sizeof *s->pes);
  s->routers = calloc(cells, sizeof *s->routers);
  s->ops = calloc((size_t)plan->n_ops + 1, sizeof *s->ops);
  for (int i = 0; i <= plan->n_ops; i++) s->ops[i].start = INT64_MAX;
  for (int k = 0; k < plan->n_places; k++) {
    const wf_plan_place *pl = &plan->places[k];
    const wf_plan_region *reg = &plan->regions[pl->region];
    for (int y = pl->y; y < pl->y + pl->h; y++)
      for (int x = pl->x; x < pl->x + pl->w; x++) {
        wf_pe *p = calloc(1, sizeof *p);
        wf_router *r = calloc(1, sizeof *r);
        p->x = r->x = x;
        p->y = r->y = y;
        p->place = k;
        p->cls = plan->classes[pl->cls];
        p->env = (wf_pe_env){x - reg->x, y - reg->y, reg->w, reg->h, {0}};
        p->mem_words = (p->cls->mem_bytes + 3) / 4;
        p->mem = calloc((size_t)p->mem_words + 1, sizeof(float));
        p->q = calloc((size_t)s->ncol + 1, sizeof *p->q);
        for (int c = 0; c < s->ncol; c++) fifo_init(&p->q[c], s->depth);
        p->op = plan->n_ops;
        p->state = WF_PE_FETCH;
        int n = WF_DIR_COUNT * s->ncol;
        r->in = calloc((size_t)n + 1, sizeof *r->in);
        r->tx = calloc((size_t)n + 1, sizeof *r->tx);
        for (int i = 0; i < n; i++) fifo_init(&r->in[i], s->depth);
        for (int d = 0; d < WF_DIR_COUNT; d++) r->port_used[d] = -1;
        resolve_routes(s, p, r, reg);
        s->pes[(size_t)y * s->w + x] = p;
        s->routers[(size_t)y * s->w + x] = r;
        s->n_pes++;
      }
  }
  s->act_pe = calloc((size_t)s->n_pes + 1, sizeof *s->act_pe);
  s->act_rt = calloc((size_t)s->n_pes + 1, sizeof *s->act_rt);
  /* Row-major activation order: deterministic, independent of the manifest's class order. */
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i]) {
      s->pes[i]->active = 1;
      s->act_pe[s->n_act_pe++] = s->pes[i];
    }
  for (int i = 0; i < plan->n_weights; i++)
    wf_sim_scatter(s, &plan->weights[i], (const float *)(plan->weight_data + plan->weights[i].offset));
  return s;
}

void wf_sim_free(wf_sim *s) {
  if (!s) return;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++) {
    wf_pe *p = s->pes[i];
    wf_router *r = s->routers[i];
    if (p) {
      for (int c = 0; c < s->ncol; c++) free(p->q[c].buf);
      free(p->q);
      free(p->mem);
      free(p);
    }
    if (r) {
      for (int k = 0; k < WF_DIR_COUNT * s->ncol; k++) free(r->in[k].buf);
      free(r->in);
      free(r->tx);
      free(r);
    }
  }
  free(s->pes);
  free(s->routers);
  free(s->act_pe);
  free(s->act_rt);
  free(s->ops);
  free(s);
}

/* ---- PE execution ------------------------------------------------------------------- */

/* Memory operand `a` of `in`, checked to hold `words` 32-bit words. */
static float *buf(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int a, int64_t words) {
  const wf_pe_sym *sym = &p->cls->syms[in->args[a].sym];
  int64_t off = in->args[a].off;
  if (words < 0 || off + words > sym->bytes / 4) {
    rt_error(s, p, in, "%s operand %d reaches past the end of %s (%lld words at +%lld, symbol holds %lld)",
             wf_peops[in->op].name, a + 1, sym->name, (long long)words, (long long)off,
             (long long)(sym->bytes / 4));
    return NULL;
  }
  return p->mem + sym->offset / 4 + off;
}

static int64_t ival(const wf_pe *p, const wf_pe_instr *in, int a) {
  return wf_term_eval(&in->args[a].term, &p->env);
}

/* Cycles of a compute instruction (docs/cycle-model.md). */
static int64_t compute_cycles(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in) {
  const wf_peop_info *info = &wf_peops[in->op];
  int64_t work = 1;
  for (int i = 0; info->sig[i]; i++)
    if (info->sig[i] == 'n') work *= ival(p, in, i);
  const wf_target *t = &s->plan->target;
  switch (info->cost) {
    case WF_PECOST_ELEM: return work;
    case WF_PECOST_EXP: return work * t->exp_cycles;
    case WF_PECOST_DIV: return work * t->div_cycles;
    case WF_PECOST_FMAC: return (work + t->fmac_per_cycle - 1) / t->fmac_per_cycle;
    default: return 0;
  }
}

static float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
static float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

static float unary(wf_peop op, float v) {
  switch (op) {
    case WF_PEOP_NEG: return -v;
    case WF_PEOP_RELU: return v > 0 ? v : 0;
    case WF_PEOP_EXP: return expf(v);
    case WF_PEOP_LOG: return logf(v);
    case WF_PEOP_TANH: return tanhf(v);
    case WF_PEOP_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case WF_PEOP_SILU: return v / (1.0f + expf(-v));
    case WF_PEOP_GELU: return gelu_erf(v);
    case WF_PEOP_GELU_TANH: return gelu_tanh(v);
    case WF_PEOP_SQRT: return sqrtf(v);
    case WF_PEOP_RSQRT: return 1.0f / sqrtf(v);
    case WF_PEOP_RECIP: return 1.0f / v;
    default: WF_UNREACHABLE("not a unary PE op");
  }
}

static float binary(wf_peop op, float a, float b) {
  switch (op) {
    case WF_PEOP_ADD: return a + b;
    case WF_PEOP_SUB: return a - b;
    case WF_PEOP_MUL: return a * b;
    case WF_PEOP_DIV: return a / b;
    case WF_PEOP_MAX: return a > b ? a : b;
    case WF_PEOP_MIN: return a < b ? a : b;
    default: WF_UNREACHABLE("not a binary PE op");
  }
}

/* Performs a compute instruction's effect on local memory. 0 on success. */
static int execute(wf_sim *s, wf_pe *p, const wf_pe_instr *in) {
  const char *sig = wf_peops[in->op].sig;
  switch (in->op) {
    case WF_PEOP_ZERO: {
      int64_t n = ival(p, in, 1);
      float *d = buf(s, p, in, 0, n);
      if (!d) return -1;
      memset(d, 0, (size_t)n * sizeof *d);
      return 0;
    }
    case WF_PEOP_COPY: {
      int64_t n = ival(p, in, 2);
      float *d = buf(s, p, in, 0, n), *a = buf(s, p, in, 1, n);
      if (!d || !a) return -1;
      memmove(d, a, (size_t)n * sizeof *d);
      return 0;
    }
    case WF_PEOP_MATMUL: {
      int64_t m = ival(p, in, 3), k = ival(p, in, 4), n = ival(p, in, 5);
      float *c = buf(s, p, in, 0, m * n), *a = buf(s, p, in, 1, m * k), *b = buf(s, p, in, 2, k * n);
      if (!c || !a || !b) return -1;
      for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++) {
          float av = a[i * k + kk];
          for (int64_t j = 0; j < n; j++) c[i * n + j] += av * b[kk * n + j];
        }
      return 0;
    }
    case WF_PEOP_RMAX:
    case WF_PEOP_RSUM: {
      int64_t m = ival(p, in, 2), n = ival(p, in, 3);
      float *d = buf(s, p, in, 0, m), *a = buf(s, p, in, 1, m * n);
      if (!d || !a) return -1;
      for (int64_t i = 0; i < m; i++) {
        float acc = in->op == WF_PEOP_RMAX ? -INFINITY : 0.0f;
        for (int64_t j = 0; j < n; j++) {
          float v = a[i * n + j];
          acc = in->op == WF_PEOP_RMAX ? (v > acc ? v : acc) : acc + v;
        }
        d[i] = acc;
      }
      return 0;
    }
    default:
      break;
  }
  if (!strcmp(sig, "dssnnm")) {
    int64_t m = ival(p, in, 3), n = ival(p, in, 4);
    int mode = (int)in->args[5].term.k;
    int64_t bn = mode == WF_BMODE_IJ ? m * n : mode == WF_BMODE_I ? m : n;
    float *d = buf(s, p, in, 0, m * n), *a = buf(s, p, in, 1, m * n), *b = buf(s, p, in, 2, bn);
    if (!d || !a || !b) return -1;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        float bv = mode == WF_BMODE_IJ ? b[i * n + j] : mode == WF_BMODE_I ? b[i] : b[j];
        d[i * n + j] = binary(in->op, a[i * n + j], bv);
      }
    return 0;
  }
  if (!strcmp(sig, "dsn")) {
    int64_t n = ival(p, in, 2);
    float *d = buf(s, p, in, 0, n), *a = buf(s, p, in, 1, n);
    if (!d || !a) return -1;
    for (int64_t i = 0; i < n; i++) d[i] = unary(in->op, a[i]);
    return 0;
  }
  WF_UNREACHABLE("PE op without an executor");
}

static void wake_router(wf_sim *s, wf_router *r) {
  if (!r->active) {
    r->active = 1;
    s->act_rt[s->n_act_rt++] = r;
  }
}

static void op_enter(wf_sim *s, wf_pe *p, int op) {
  if (p->op != op) {
    wf_op_stat *old = &s->ops[p->op];
    if (s->now > old->end) old->end = s->now;
    if (s->now < s->ops[op].start) s->ops[op].start = s->now;
    if (s->now > s->ops[op].end) s->ops[op].end = s->now;
    p->op = op;
  }
}

/* One cycle of a send or receive. */
static void fabric_unit(wf_sim *s, wf_pe *p) {
  const wf_pe_instr *in = p->cur;
  wf_op_stat *os = &s->ops[p->op];
  if (in->op == WF_PEOP_SEND) {
    wf_router *r = s->routers[(size_t)p->y * s->w + p->x];
    wf_fifo *f = &r->in[WF_DIR_RAMP * s->ncol + p->cur_ci];
    if (f->count < s->depth) {
      fifo_push(f, s->depth, p->cur_buf[p->prog], s->now + s->plan->target.ramp_cycles);
      r->buffered++;
      r->ramp_down++;
      wake_router(s, r);
      p->prog++;
      p->comm++;
      os->comm++;
      s->progress = 1;
    } else {
      p->stall++;
      os->stall++;
    }
  } else {
    wf_fifo *q = &p->q[p->cur_ci];
    if (q->count && q->buf[q->head].ready <= s->now) {
      float v = fifo_pop(q, s->depth).v;
      float *d = &p->cur_buf[p->prog];
      if (in->op == WF_PEOP_RECV) *d = v;
      else if (in->op == WF_PEOP_RECVADD) *d += v;
      else *d = v > *d ? v : *d;
      p->prog++;
      p->comm++;
      os->comm++;
      s->progress = 1;
    } else {
      p->stall++;
      os->stall++;
      if (!q->count) {
        /* Nothing in flight to this queue: sleep until a router delivers. */
        p->sleeping = 1;
        p->sleep_start = s->now;
      }
    }
  }
  if (p->prog == p->need) p->state = WF_PE_FETCH;
}

/* Runs zero-cost instructions and starts the next costed one. */
static void fetch(wf_sim *s, wf_pe *p) {
  const wf_pe_class *c = p->cls;
  while (p->pc < c->n_code) {
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
    if (!wf_guard_eval(&in->guard, &p->env)) {
      p->pc = in->op == WF_PEOP_LOOP ? in->match + 1 : p->pc + 1;
      continue;
    }
    switch (wf_peops[in->op].cost) {
      case WF_PECOST_NONE:
        if (in->op == WF_PEOP_OP) {
          op_enter(s, p, (int)in->args[0].term.k);
          p->pc++;
        } else { /* LOOP */
          int32_t lo = (int32_t)ival(p, in, 1), hi = (int32_t)ival(p, in, 2);
          if (lo >= hi) {
            p->pc = in->match + 1;
          } else {
            if (p->depth == 16) {
              rt_error(s, p, in, "loops nested deeper than 16");
              return;
            }
            p->env.vars[in->args[0].term.var] = lo;
            p->loop_pc[p->depth] = p->pc;
            p->loop_end[p->depth++] = hi;
            p->pc++;
          }
        }
        continue;
      case WF_PECOST_FABRIC: {
        int64_t n = ival(p, in, 2);
        p->pc++;
        if (n < 0) {
          rt_error(s, p, in, "negative wavelet count %lld", (long long)n);
          return;
        }
        if (n == 0) continue;
        p->cur = in;
        p->cur_ci = s->col_idx[in->args[0].term.k];
        p->cur_buf = buf(s, p, in, 1, n);
        if (!p->cur_buf) return;
        p->prog = 0;
        p->need = n;
        p->state = WF_PE_FABRIC;
        s->progress = 1;
        fabric_unit(s, p);
        return;
      }
      default: {
        int64_t cyc = compute_cycles(s, p, in);
        if (execute(s, p, in)) return;
        p->pc++;
        if (cyc <= 0) continue;
        p->state = WF_PE_COMPUTE;
        p->busy_until = s->now + cyc;
        p->compute += cyc;
        s->ops[p->op].compute += cyc;
        s->progress = 1;
        return;
      }
    }
  }
  /* End of program: its last working cycle was the previous one. */
  p->state = WF_PE_DONE;
  p->finish = s->now;
  if (s->now > s->ops[p->op].end) s->ops[p->op].end = s->now;
  s->n_done++;
}

static void pe_step(wf_sim *s, wf_pe *p) {
  for (;;) {
    switch (p->state) {
      case WF_PE_COMPUTE:
        if (s->now < p->busy_until) {
          s->progress = 1;
          return;
        }
        p->state = WF_PE_FETCH;
        continue;
      case WF_PE_FABRIC:
        fabric_unit(s, p);
        return;
      case WF_PE_FETCH:
        fetch(s, p);
        return;
      default:
        return;
    }
  }
}

/* ---- routers ------------------------------------------------------------------------- */

static wf_router *neighbour(wf_sim *s, const wf_router *r, int d) {
  int nx = r->x + dir_dx[d], ny = r->y + dir_dy[d];
  if (nx < 0 || ny < 0 || nx >= s->w || ny >= s->h) return NULL;
  return s->routers[(size_t)ny * s->w + nx];
}

static void router_step(wf_sim *s, wf_router *r) {
  int n = WF_DIR_COUNT * s->ncol;
  int start = r->rr;
  r->rr = (r->rr + 1) % n;
  wf_pe *pe = s->pes[(size_t)r->y * s->w + r->x];
  for (int k = 0; k < n; k++) {
    int i = (start + k) % n;
    wf_fifo *f = &r->in[i];
    if (!f->count || f->buf[f->head].ready > s->now) continue;
    int rx = i / s->ncol, ci = i % s->ncol;
    unsigned tx = r->tx[i];
    if (tx == WF_NO_ROUTE) {
      rt_error(s, pe, NULL, "router: a wavelet on color c%d arrived from %s, which has no route",
               s->col_of[ci], wf_dir_names[rx]);
      return;
    }
    int ok = 1;
    for (int d = 0; d < WF_DIR_COUNT && ok; d++) {
      if (!(tx >> d & 1)) continue;
      if (r->port_used[d] == s->now) ok = 0;
      else if (d == WF_DIR_RAMP) ok = pe->q[ci].count < s->depth;
      else {
        wf_router *nb = neighbour(s, r, d);
        if (!nb) {
          rt_error(s, pe, NULL, "router: color c%d forwards %s, where no PE runs a program",
                   s->col_of[ci], wf_dir_names[d]);
          return;
        }
        ok = nb->in[dir_opp[d] * s->ncol + ci].count < s->depth;
      }
    }
    if (!ok) continue; /* backpressure: the wavelet waits in its buffer */
    float v = fifo_pop(f, s->depth).v;
    r->buffered--;
    for (int d = 0; d < WF_DIR_COUNT; d++) {
      if (!(tx >> d & 1)) continue;
      r->port_used[d] = s->now;
      r->out_count[d]++;
      if (d == WF_DIR_RAMP) {
        fifo_push(&pe->q[ci], s->depth, v, s->now + s->plan->target.ramp_cycles);
        if (pe->sleeping) {
          pe->sleeping = 0;
          pe->stall += s->now - pe->sleep_start;
          s->ops[pe->op].stall += s->now - pe->sleep_start;
          if (!pe->active) {
            pe->active = 1;
            s->act_pe[s->n_act_pe++] = pe;
          }
        }
      } else {
        wf_router *nb = neighbour(s, r, d);
        fifo_push(&nb->in[dir_opp[d] * s->ncol + ci], s->depth, v,
                  s->now + s->plan->target.hop_cycles);
        nb->buffered++;
        wake_router(s, nb);
      }
    }
    s->progress = 1;
  }
}

/* ---- the main loop -------------------------------------------------------------------- */

static void report_deadlock(wf_sim *s, const char *why) {
  wf_error_at("waferrun", "deadlock at cycle %lld: %s", (long long)s->now, why);
  int shown = 0, stalled = 0;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++) {
    wf_pe *p = s->pes[i];
    if (!p || p->state == WF_PE_DONE) continue;
    stalled++;
    if (shown >= 12) continue;
    shown++;
    if (p->state == WF_PE_FABRIC) {
      const wf_pe_instr *in = p->cur;
      wf_note(WF_LOC_NONE, "PE (%d,%d) class '%s' line %d: %s on color c%d stalled after %lld of %lld wavelets",
              p->x, p->y, p->cls->name, in->line, wf_peops[in->op].name, (int)in->args[0].term.k,
              (long long)p->prog, (long long)p->need);
    } else {
      wf_note(WF_LOC_NONE, "PE (%d,%d) class '%s': stalled at instruction %d", p->x, p->y,
              p->cls->name, p->pc);
    }
  }
  if (stalled > shown) wf_note(WF_LOC_NONE, "... and %d more stalled PEs", stalled - shown);
  shown = 0;
  for (int k = 0; k < s->n_act_rt && shown < 12; k++) {
    wf_router *r = s->act_rt[k];
    for (int i = 0; i < WF_DIR_COUNT * s->ncol && shown < 12; i++)
      if (r->in[i].count) {
        shown++;
        wf_note(WF_LOC_NONE, "router (%d,%d): %d wavelet(s) on color c%d from %s cannot advance",
                r->x, r->y, r->in[i].count, s->col_of[i % s->ncol], wf_dir_names[i / s->ncol]);
      }
  }
}

int wf_sim_run(wf_sim *s) {
  WF_ASSERT(!s->ran);
  s->ran = 1;
  int64_t quiet = 0;
  while (s->n_done < s->n_pes) {
    s->progress = 0;
    int n = s->n_act_pe;
    for (int i = 0; i < n && !s->failed; i++) pe_step(s, s->act_pe[i]);
    int nr = s->n_act_rt;
    for (int i = 0; i < nr && !s->failed; i++) router_step(s, s->act_rt[i]);
    if (s->failed) return WF_EXIT_RUNTIME;
    /* Compact the active lists; PEs woken this cycle were appended after n. */
    int all_compute = 1;
    int64_t next_busy = INT64_MAX;
    int k = 0;
    for (int i = 0; i < s->n_act_pe; i++) {
      wf_pe *p = s->act_pe[i];
      if (p->state == WF_PE_DONE || p->sleeping) {
        p->active = 0;
        continue;
      }
      if (p->state != WF_PE_COMPUTE) all_compute = 0;
      else if (p->busy_until < next_busy) next_busy = p->busy_until;
      s->act_pe[k++] = p;
    }
    s->n_act_pe = k;
    k = 0;
    for (int i = 0; i < s->n_act_rt; i++) {
      wf_router *r = s->act_rt[i];
      if (r->buffered) s->act_rt[k++] = r;
      else r->active = 0;
    }
    s->n_act_rt = k;
    if (s->n_done == s->n_pes) {
      s->now++;
      break;
    }
    if (!s->n_act_pe && !s->n_act_rt) {
      report_deadlock(s, "every unfinished PE waits for wavelets and none is in flight");
      return WF_EXIT_RUNTIME;
    }
    quiet = s->progress ? 0 : quiet + 1;
    if (quiet >= s->opts.deadlock_cycles) {
      char why[128];
      snprintf(why, sizeof why, "no progress for %lld cycles", (long long)quiet);
      report_deadlock(s, why);
      return WF_EXIT_RUNTIME;
    }
    /* Nothing moves on the fabric and every awake PE computes: skip to the first that ends. */
    int64_t next = s->now + 1;
    if (!s->n_act_rt && all_compute && s->n_act_pe && next_busy > next) next = next_busy;
    if (s->opts.max_cycles && next > s->opts.max_cycles) {
      wf_error_at("waferrun", "the simulation exceeded --max-cycles=%lld",
                  (long long)s->opts.max_cycles);
      return WF_EXIT_RUNTIME;
    }
    s->now = next;
  }
  s->total = 0;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i] && s->pes[i]->finish > s->total) s->total = s->pes[i]->finish;
  for (int i = 0; i < s->n_act_rt; i++) s->undelivered += s->act_rt[i]->buffered;
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i])
      for (int c = 0; c < s->ncol; c++) s->undelivered += s->pes[i]->q[c].count;
  if (s->undelivered)
    wf_warning(WF_LOC_NONE, "%lld wavelet(s) were sent but never received",
               (long long)s->undelivered);
  return WF_EXIT_OK;
}

int64_t wf_sim_cycles(const wf_sim *s) { return s->total; }
