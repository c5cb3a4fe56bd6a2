/* --trace: simulator events -> Chrome Trace Event JSON (runtime/trace.h).
 *
 * Spans are recorded when they close and sorted at write time by (track, start, longest
 * first), so every track's timestamps are monotonic and parents precede their children.
 * Nesting is enforced per PE (task > op > instruction): a span still open when its parent
 * closes is closed with it, which keeps the file valid for any event order. Async fabric
 * streams run beside the task, several at once, so each async engine of a PE has a track of
 * its own, where one stream follows another and nothing needs to nest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/trace.h"
#include "waferc/diag.h"

enum { K_TASK, K_OP, K_COMPUTE, K_COMM, K_STALL };
static const char *const kind_cat[] = {"task", "op", "compute", "comm", "stall"};

#define N_ENGINES 4            /* async engines per PE (the simulator's WF_SIM_ASYNC) */

typedef struct tr_span {
  int64_t ts, dur;
  int64_t seq;                 /* record order: the last tie-break */
  int32_t track;               /* PE index y*w+x; async engine k: w*h + 4*PE + k */
  uint8_t kind;
  uint8_t async;               /* an async stream */
  int32_t ref;                 /* task index, op index or instruction index */
  int32_t cls;
  int64_t comm, stall;         /* fabric spans: wavelet cycles and waiting cycles (-1: the run
                                  ended before the stream did) */
} tr_span;

typedef struct tr_delta {      /* row mode: a change in a row's counters at cycle t */
  int64_t t, seq;
  int32_t row;
  int8_t compute, fabric, async;
} tr_delta;

typedef struct tr_open {       /* per PE: the spans open now (-1 = none) */
  int64_t task_start, op_start, instr_start;
  int task, op, pc, cls;
  int64_t wavelets;            /* the open fabric instruction's */
  int64_t as_start[N_ENGINES], as_wavelets[N_ENGINES];
  int as_pc[N_ENGINES];
  int n_async;                 /* streams running (row mode) */
  uint8_t as_rec;              /* row mode: the current async interval was recorded */
  uint8_t as_used;             /* engines that ran a stream (their tracks get names) */
} tr_open;

struct wf_trace {
  const wf_sim *sim;
  const wf_plan *plan;
  int w, h, rows;              /* rows: 1 = one track per row */
  int64_t limit, kept, dropped, seq;
  int64_t reserve;             /* room kept for the mesh-wide op spans */
  int64_t written;             /* entries of traceEvents in the file */
  tr_span *spans; int64_t n_spans, cap_spans;
  tr_delta *deltas; int64_t n_deltas, cap_deltas;
  tr_open *open;               /* [w*h] */
  int64_t end;                 /* last cycle seen */
};

wf_trace *wf_trace_new(const wf_sim *s, const wf_plan *p, int64_t limit) {
  wf_trace *t = calloc(1, sizeof *t);
  WF_ASSERT(t != NULL);
  t->sim = s;
  t->plan = p;
  t->w = p->mesh_w;
  t->h = p->mesh_h;
  t->rows = (int64_t)t->w * t->h > WF_TRACE_PE_TRACKS;
  t->limit = limit > 0 ? limit : WF_TRACE_DEFAULT_LIMIT;
  size_t cells = (size_t)t->w * (size_t)t->h;
  t->reserve = 2 * (int64_t)p->n_ops < t->limit ? 2 * (int64_t)p->n_ops : t->limit;
  t->open = calloc(cells, sizeof *t->open);
  WF_ASSERT(t->open != NULL);
  for (size_t i = 0; i < cells; i++) {
    tr_open *o = &t->open[i];
    o->task_start = o->op_start = o->instr_start = -1;
    o->task = o->op = o->pc = o->cls = -1;
    for (int k = 0; k < N_ENGINES; k++) o->as_start[k] = -1;
  }
  return t;
}

void wf_trace_free(wf_trace *t) {
  if (!t) return;
  free(t->spans);
  free(t->deltas);
  free(t->open);
  free(t);
}

int64_t wf_trace_events(const wf_trace *t) { return t->written; }
int64_t wf_trace_dropped(const wf_trace *t) { return t->dropped; }

/* The cap, on the file's timeline entries: past it, records are counted, not kept. The
 * mesh-wide op spans (written last) have room reserved, so a capped trace still has them. */
static int admit_n(wf_trace *t, int n) {
  if (t->kept + t->reserve + n > t->limit) {
    t->dropped += n;
    return 0;
  }
  t->kept += n;
  return 1;
}
static int admit(wf_trace *t) { return admit_n(t, 1); }

static void add_span(wf_trace *t, int track, int kind, int ref, int cls, int64_t start,
                     int64_t end, int64_t comm, int64_t stall, int async) {
  if (end <= start || !admit(t)) return;
  if (t->n_spans == t->cap_spans) {
    t->cap_spans = t->cap_spans ? 2 * t->cap_spans : 1024;
    t->spans = realloc(t->spans, (size_t)t->cap_spans * sizeof *t->spans);
    WF_ASSERT(t->spans != NULL);
  }
  t->spans[t->n_spans++] = (tr_span){start, end - start, t->seq++, track, (uint8_t)kind,
                                     (uint8_t)async, ref, cls, comm, stall};
}

/* Row mode: the caller has admitted the delta (pairs are admitted together at their start). */
static void add_delta(wf_trace *t, int row, int64_t at, int compute, int fabric, int async) {
  if (t->n_deltas == t->cap_deltas) {
    t->cap_deltas = t->cap_deltas ? 2 * t->cap_deltas : 1024;
    t->deltas = realloc(t->deltas, (size_t)t->cap_deltas * sizeof *t->deltas);
    WF_ASSERT(t->deltas != NULL);
  }
  t->deltas[t->n_deltas++] =
      (tr_delta){at, t->seq++, row, (int8_t)compute, (int8_t)fabric, (int8_t)async};
}

/* A fabric stream's span from `start` to `at`: a stream moves one wavelet or waits each cycle,
 * so a finished one (done) waited (at - start) - wavelets cycles. Mostly waiting: a stall. */
static void add_stream(wf_trace *t, int track, int pc, int cls, int64_t start, int64_t at,
                       int64_t wavelets, int done, int async) {
  int64_t comm = done ? wavelets : -1, stall = done ? (at - start) - wavelets : -1;
  add_span(t, track, !done || stall > comm ? K_STALL : K_COMM, pc, cls, start, at, comm, stall,
           async);
}

/* Closes the open fabric instruction of PE `pe` at cycle `at` (done: it moved its last
 * wavelet; else the run or its task ended first). */
static void close_instr(wf_trace *t, int pe, int64_t at, int done) {
  tr_open *o = &t->open[pe];
  if (o->instr_start < 0) return;
  if (t->rows) add_delta(t, pe / t->w, at, 0, -1, 0);
  else add_stream(t, pe, o->pc, o->cls, o->instr_start, at, o->wavelets, done, 0);
  o->instr_start = -1;
}

static int async_track(const wf_trace *t, int pe, int k) {
  return t->w * t->h + N_ENGINES * pe + k;
}

static void close_op(wf_trace *t, int pe, int64_t at) {
  tr_open *o = &t->open[pe];
  close_instr(t, pe, at, 0);
  if (o->op_start < 0) return;
  if (!t->rows) add_span(t, pe, K_OP, o->op, o->cls, o->op_start, at, 0, 0, 0);
  o->op_start = -1;
}

static void close_task(wf_trace *t, int pe, int64_t at) {
  tr_open *o = &t->open[pe];
  close_op(t, pe, at);
  if (o->task_start < 0) return;
  if (!t->rows) add_span(t, pe, K_TASK, o->task, o->cls, o->task_start, at, 0, 0, 0);
  o->task_start = -1;
}

static void async_begin(wf_trace *t, int pe, const wf_sim_event *ev) {
  tr_open *o = &t->open[pe];
  int k = ev->engine;
  if (k < 0 || k >= N_ENGINES) return;
  o->as_start[k] = ev->cycle;
  o->as_pc[k] = ev->pc;
  o->as_wavelets[k] = ev->wavelets;
  if (t->rows && o->n_async++ == 0) {
    o->as_rec = (uint8_t)admit_n(t, 2);
    if (o->as_rec) add_delta(t, ev->y, ev->cycle, 0, 0, 1);
  }
}

/* Closes async engine k's stream at `at` (done: it moved its last wavelet). */
static void async_end(wf_trace *t, int pe, int k, int64_t at, int done) {
  tr_open *o = &t->open[pe];
  if (k < 0 || k >= N_ENGINES || o->as_start[k] < 0) return;
  if (t->rows) {
    if (--o->n_async == 0 && o->as_rec) add_delta(t, pe / t->w, at, 0, 0, -1);
  } else {
    add_stream(t, async_track(t, pe, k), o->as_pc[k], o->cls, o->as_start[k], at,
               o->as_wavelets[k], done, 1);
    o->as_used |= (uint8_t)(1u << k);
  }
  o->as_start[k] = -1;
}

void wf_trace_on_event(const wf_sim_event *ev, void *user) {
  wf_trace *t = user;
  if (ev->x < 0 || ev->y < 0 || ev->x >= t->w || ev->y >= t->h) return;
  int pe = ev->y * t->w + ev->x;
  tr_open *o = &t->open[pe];
  int64_t now = ev->cycle;
  if (now > t->end) t->end = now;
  o->cls = ev->cls;
  switch (ev->kind) {
    case WF_SIM_EV_TASK_BEGIN:
      close_task(t, pe, now);
      o->task = ev->task;
      o->task_start = now;
      if (o->op >= 0) o->op_start = now; /* the op continues inside the new task */
      break;
    case WF_SIM_EV_TASK_END:
      close_task(t, pe, now);
      break;
    case WF_SIM_EV_OP_BEGIN:
      close_op(t, pe, now);
      o->op = ev->op;
      o->op_start = now;
      break;
    case WF_SIM_EV_OP_END:
      close_op(t, pe, now);
      o->op = -1;
      break;
    case WF_SIM_EV_INSTR_BEGIN:
      close_instr(t, pe, now, 0);
      if (ev->dur >= 0) { /* compute, or a control item: its length is known now */
        if (now + ev->dur > t->end) t->end = now + ev->dur;
        if (ev->dur == 0) break;
        /* a control item down the ramp is communication (docs/cycle-model.md) */
        int ctl = ev->instr && wf_peops[ev->instr->op].cost == WF_PECOST_CTL;
        if (t->rows) {
          if (admit_n(t, 2)) {
            add_delta(t, ev->y, now, !ctl, ctl, 0);
            add_delta(t, ev->y, now + ev->dur, -!ctl, -ctl, 0);
          }
        } else {
          add_span(t, pe, ctl ? K_COMM : K_COMPUTE, ev->pc, ev->cls, now, now + ev->dur,
                   ctl ? 1 : 0, 0, 0);
        }
        break;
      }
      if (t->rows && !admit_n(t, 2)) break; /* dropped: no matching end is recorded either */
      if (t->rows) add_delta(t, ev->y, now, 0, 1, 0);
      o->instr_start = now;
      o->pc = ev->pc;
      o->wavelets = ev->wavelets;
      break;
    case WF_SIM_EV_INSTR_END: /* sent in the stream's last working cycle, which counts */
      if (now + 1 > t->end) t->end = now + 1;
      close_instr(t, pe, now + 1, 1);
      break;
    case WF_SIM_EV_ASYNC_BEGIN:
      async_begin(t, pe, ev);
      break;
    case WF_SIM_EV_ASYNC_END: /* likewise */
      if (now + 1 > t->end) t->end = now + 1;
      async_end(t, pe, ev->engine, now + 1, 1);
      break;
    case WF_SIM_EV_PE_DONE:
      close_task(t, pe, now);
      break;
    default:
      break;
  }
}

/* ---- writing ---------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static int span_cmp(const void *a, const void *b) {
  const tr_span *x = a, *y = b;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1; /* parents first */
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int delta_cmp(const void *a, const void *b) {
  const tr_delta *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void span_name(const wf_trace *t, const tr_span *sp, char *buf, size_t cap) {
  const wf_plan *p = t->plan;
  const wf_pe_class *c = sp->cls >= 0 && sp->cls < p->n_classes ? p->classes[sp->cls] : NULL;
  switch (sp->kind) {
    case K_TASK:
      if (c && sp->ref >= 0 && sp->ref < c->n_tasks) snprintf(buf, cap, "task %s", c->tasks[sp->ref].name);
      else snprintf(buf, cap, "task main");
      return;
    case K_OP:
      if (sp->ref >= 0 && sp->ref < p->n_ops)
        snprintf(buf, cap, "op %d %s %s", sp->ref, p->ops[sp->ref].op, p->ops[sp->ref].result);
      else snprintf(buf, cap, "op %d", sp->ref);
      return;
    default:
      if (c && sp->ref >= 0 && sp->ref < c->n_code) snprintf(buf, cap, "%s", wf_peops[c->code[sp->ref].op].name);
      else snprintf(buf, cap, "instr %d", sp->ref);
  }
}

/* Every entry of traceEvents goes through here: a separator (none before the first) and the
 * count the summary prints. */
static void entry(FILE *f, wf_trace *t) {
  fputs(t->written++ ? ",\n" : "\n", f);
}

static void write_span(FILE *f, wf_trace *t, const tr_span *sp) {
  char name[160];
  span_name(t, sp, name, sizeof name);
  entry(f, t);
  fprintf(f, "{\"name\":");
  json_str(f, name);
  fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%lld,\"dur\":%lld,\"pid\":0,\"tid\":%d",
          kind_cat[sp->kind], (long long)sp->ts, (long long)sp->dur, sp->track);
  const wf_plan *p = t->plan;
  const wf_pe_class *c = sp->cls >= 0 && sp->cls < p->n_classes ? p->classes[sp->cls] : NULL;
  if (sp->kind >= K_COMPUTE && c && sp->ref >= 0 && sp->ref < c->n_code) {
    char syn[256];
    wf_pe_instr_synopsis(c, &c->code[sp->ref], syn, sizeof syn);
    fprintf(f, ",\"args\":{\"class\":");
    json_str(f, c->name);
    fprintf(f, ",\"pc\":%d,\"line\":%d,\"synopsis\":", sp->ref, c->code[sp->ref].line);
    json_str(f, syn);
    if (sp->async) fprintf(f, ",\"async\":true");
    if (sp->kind != K_COMPUTE) {
      if (sp->comm >= 0)
        fprintf(f, ",\"wavelet_cycles\":%lld,\"stall_cycles\":%lld", (long long)sp->comm,
                (long long)sp->stall);
      else fprintf(f, ",\"unfinished\":true");
    }
    fputc('}', f);
  } else if (sp->kind == K_OP && sp->ref >= 0 && sp->ref < p->n_ops && p->ops[sp->ref].loc[0]) {
    fprintf(f, ",\"args\":{\"loc\":");
    json_str(f, p->ops[sp->ref].loc);
    fputc('}', f);
  }
  fputc('}', f);
}

static void write_meta(FILE *f, wf_trace *t, int tid, const char *name, int sort) {
  entry(f, t);
  fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":", tid);
  json_str(f, name);
  fprintf(f, "}}");
  entry(f, t);
  fprintf(f, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
             "\"args\":{\"sort_index\":%d}}", tid, sort);
}

int wf_trace_write(wf_trace *t, const char *path, int run_rc) {
  /* Spans still open at the end (a failed run) are closed at the last cycle seen. */
  size_t cells = (size_t)t->w * (size_t)t->h;
  for (size_t i = 0; i < cells; i++) {
    close_task(t, (int)i, t->end);
    for (int k = 0; k < N_ENGINES; k++) async_end(t, (int)i, k, t->end, 0);
  }
  /* qsort's pointer must be valid even for 0 elements (C11 7.22.5): an empty list may be NULL. */
  if (t->n_spans) qsort(t->spans, (size_t)t->n_spans, sizeof *t->spans, span_cmp);
  if (t->n_deltas) qsort(t->deltas, (size_t)t->n_deltas, sizeof *t->deltas, delta_cmp);
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  const wf_plan *p = t->plan;
  t->written = 0;
  fprintf(f, "{\"traceEvents\":[");
  entry(f, t);
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"wafer %dx%d "
             "(%s)\"}}", t->w, t->h, p->target.name);
  char name[160];
  if (!t->rows) {
    /* A PE's track, then its async engines' (those that ran a stream) right below it. */
    for (int y = 0; y < t->h; y++)
      for (int x = 0; x < t->w; x++) {
        wf_sim_pe_stats st;
        if (wf_sim_pe_stats_at(t->sim, x, y, &st) || !st.present) continue;
        int pe = y * t->w + x;
        snprintf(name, sizeof name, "PE (%d,%d)", x, y);
        write_meta(f, t, pe, name, (N_ENGINES + 1) * pe);
        for (int k = 0; k < N_ENGINES; k++)
          if (t->open[pe].as_used >> k & 1) {
            snprintf(name, sizeof name, "PE (%d,%d) async %d", x, y, k);
            write_meta(f, t, async_track(t, pe, k), name, (N_ENGINES + 1) * pe + 1 + k);
          }
      }
    for (int64_t i = 0; i < t->n_spans; i++) write_span(f, t, &t->spans[i]);
  } else {
    /* Counter tracks: how many PEs of each row compute / run a fabric instruction / have
     * async streams running. */
    int64_t i = 0;
    while (i < t->n_deltas) {
      int row = t->deltas[i].row;
      int64_t compute = 0, fabric = 0, async = 0;
      while (i < t->n_deltas && t->deltas[i].row == row) {
        int64_t at = t->deltas[i].t;
        while (i < t->n_deltas && t->deltas[i].row == row && t->deltas[i].t == at) {
          compute += t->deltas[i].compute;
          fabric += t->deltas[i].fabric;
          async += t->deltas[i].async;
          i++;
        }
        entry(f, t);
        fprintf(f, "{\"name\":\"row %d\",\"cat\":\"pes\",\"ph\":\"C\",\"ts\":%lld,\"pid\":0,"
                   "\"args\":{\"compute\":%lld,\"fabric\":%lld,\"async\":%lld}}",
                row, (long long)at, (long long)compute, (long long)fabric, (long long)async);
      }
    }
  }
  /* Mesh-wide extent of each IR op, as in the report, as async spans (consecutive ops may
   * overlap). Their room was reserved; a limit below 2 per op drops the later ones. */
  for (int k = 0; k < p->n_ops; k++) {
    int64_t first, last;
    if (wf_sim_op_extent(t->sim, k, &first, &last) || last <= first) continue;
    if (t->kept + 2 > t->limit) {
      t->dropped += 2;
      continue;
    }
    t->kept += 2;
    snprintf(name, sizeof name, "op %d %s %s", k, p->ops[k].op, p->ops[k].result);
    for (int e = 0; e < 2; e++) {
      entry(f, t);
      fprintf(f, "{\"name\":");
      json_str(f, name);
      fprintf(f, ",\"cat\":\"op\",\"ph\":\"%s\",\"id\":%d,\"ts\":%lld,\"pid\":0,\"tid\":0}",
              e ? "e" : "b", k, (long long)(e ? last : first));
    }
  }
  /* After the events, so `events` can be their exact count. */
  fprintf(f, "\n],\n\"otherData\":{\"generator\":\"waferrun\","
             "\"time_unit\":\"1 ts = 1 simulated cycle\",\"clock_hz\":%.17g,\"mesh\":[%d,%d],"
             "\"tracks\":\"%s\",\"limit\":%lld,\"events\":%lld,\"dropped_events\":%lld,"
             "\"run_finished\":%s,\"complete\":%s}}\n",
          p->target.clock_hz, t->w, t->h, t->rows ? "row" : "pe", (long long)t->limit,
          (long long)t->written, (long long)t->dropped, run_rc ? "false" : "true",
          t->dropped || run_rc ? "false" : "true");
  if (fclose(f)) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return WF_EXIT_OK;
}
