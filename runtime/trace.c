/* --trace: simulator events -> Chrome Trace Event JSON (runtime/trace.h).
 *
 * Spans are recorded when they close and sorted at write time by (track, start, longest
 * first), so every track's timestamps are monotonic and parents precede their children.
 * Nesting is enforced per PE (task > op > instruction): a span still open when its parent
 * closes is closed with it, which keeps the file valid for any event order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/trace.h"
#include "waferc/diag.h"

enum { K_TASK, K_OP, K_COMPUTE, K_COMM, K_STALL };
static const char *const kind_cat[] = {"task", "op", "compute", "comm", "stall"};

typedef struct tr_span {
  int64_t ts, dur;
  int64_t seq;                 /* record order: the last tie-break */
  int32_t track;               /* PE index y*w+x */
  uint8_t kind;
  int32_t ref;                 /* task index, op index or instruction index */
  int32_t cls;
  int64_t comm, stall;         /* fabric spans: wavelet cycles and waiting cycles */
} tr_span;

typedef struct tr_delta {      /* row mode: a change in a row's counters at cycle t */
  int64_t t, seq;
  int32_t row;
  int8_t compute, fabric;
} tr_delta;

typedef struct tr_open {       /* per PE: the spans open now (-1 = none) */
  int64_t task_start, op_start, instr_start;
  int task, op, pc, cls;
  int64_t comm0, stall0;       /* PE counters when the open fabric span began */
  const wf_pe_instr *instr;
} tr_open;

struct wf_trace {
  const wf_sim *sim;
  const wf_plan *plan;
  int w, h, rows;              /* rows: 1 = one track per row */
  int64_t limit, kept, dropped, seq;
  tr_span *spans; int64_t n_spans, cap_spans;
  tr_delta *deltas; int64_t n_deltas, cap_deltas;
  tr_open *open;               /* [w*h] */
  int64_t *op_first, *op_last; /* mesh-wide extent of each IR op */
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
  t->open = malloc(cells * sizeof *t->open);
  for (size_t i = 0; i < cells; i++)
    t->open[i] = (tr_open){-1, -1, -1, -1, -1, -1, -1, 0, 0, NULL};
  t->op_first = malloc(((size_t)p->n_ops + 1) * sizeof *t->op_first);
  t->op_last = malloc(((size_t)p->n_ops + 1) * sizeof *t->op_last);
  for (int i = 0; i <= p->n_ops; i++) {
    t->op_first[i] = INT64_MAX;
    t->op_last[i] = -1;
  }
  return t;
}

void wf_trace_free(wf_trace *t) {
  if (!t) return;
  free(t->spans);
  free(t->deltas);
  free(t->open);
  free(t->op_first);
  free(t->op_last);
  free(t);
}

int64_t wf_trace_events(const wf_trace *t) { return t->kept; }
int64_t wf_trace_dropped(const wf_trace *t) { return t->dropped; }

/* The cap: past it, records are counted, not kept. */
static int admit(wf_trace *t) {
  if (t->kept >= t->limit) {
    t->dropped++;
    return 0;
  }
  t->kept++;
  return 1;
}

static void add_span(wf_trace *t, int track, int kind, int ref, int cls, int64_t start,
                     int64_t end, int64_t comm, int64_t stall) {
  if (end <= start || !admit(t)) return;
  if (t->n_spans == t->cap_spans) {
    t->cap_spans = t->cap_spans ? 2 * t->cap_spans : 1024;
    t->spans = realloc(t->spans, (size_t)t->cap_spans * sizeof *t->spans);
    WF_ASSERT(t->spans != NULL);
  }
  t->spans[t->n_spans++] = (tr_span){start, end - start, t->seq++, track, (uint8_t)kind, ref,
                                     cls, comm, stall};
}

static void add_delta(wf_trace *t, int row, int64_t at, int compute, int fabric, int force) {
  if (!force && !admit(t)) return;
  if (t->n_deltas == t->cap_deltas) {
    t->cap_deltas = t->cap_deltas ? 2 * t->cap_deltas : 1024;
    t->deltas = realloc(t->deltas, (size_t)t->cap_deltas * sizeof *t->deltas);
    WF_ASSERT(t->deltas != NULL);
  }
  t->deltas[t->n_deltas++] = (tr_delta){at, t->seq++, row, (int8_t)compute, (int8_t)fabric};
}

/* Closes the open fabric instruction of PE `pe` at cycle `at`. */
static void close_instr(wf_trace *t, int pe, int64_t at) {
  tr_open *o = &t->open[pe];
  if (o->instr_start < 0) return;
  wf_sim_pe_stats st;
  int64_t comm = 0, stall = 0;
  if (wf_sim_pe_stats_at(t->sim, pe % t->w, pe / t->w, &st) == 0) {
    comm = st.comm - o->comm0;
    stall = st.stall - o->stall0;
  }
  if (t->rows) add_delta(t, pe / t->w, at, 0, -1, 1);
  else add_span(t, pe, stall > comm ? K_STALL : K_COMM, o->pc, o->cls, o->instr_start, at, comm, stall);
  o->instr_start = -1;
}

static void close_op(wf_trace *t, int pe, int64_t at) {
  tr_open *o = &t->open[pe];
  close_instr(t, pe, at);
  if (o->op_start < 0) return;
  if (!t->rows) add_span(t, pe, K_OP, o->op, o->cls, o->op_start, at, 0, 0);
  o->op_start = -1;
}

static void close_task(wf_trace *t, int pe, int64_t at) {
  tr_open *o = &t->open[pe];
  close_op(t, pe, at);
  if (o->task_start < 0) return;
  if (!t->rows) add_span(t, pe, K_TASK, o->task, o->cls, o->task_start, at, 0, 0);
  o->task_start = -1;
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
      if (ev->op >= 0 && ev->op < t->plan->n_ops && now < t->op_first[ev->op]) t->op_first[ev->op] = now;
      break;
    case WF_SIM_EV_OP_END:
      close_op(t, pe, now);
      if (ev->op >= 0 && ev->op < t->plan->n_ops && now > t->op_last[ev->op]) t->op_last[ev->op] = now;
      o->op = -1;
      break;
    case WF_SIM_EV_INSTR_BEGIN:
      close_instr(t, pe, now);
      if (ev->dur >= 0) { /* compute: its length is known now */
        if (now + ev->dur > t->end) t->end = now + ev->dur;
        if (ev->dur == 0) break;
        if (t->rows) {
          if (admit(t)) {
            add_delta(t, ev->y, now, 1, 0, 1);
            add_delta(t, ev->y, now + ev->dur, -1, 0, 1);
          }
        } else {
          add_span(t, pe, K_COMPUTE, ev->pc, ev->cls, now, now + ev->dur, 0, 0);
        }
        break;
      }
      {
        wf_sim_pe_stats st;
        memset(&st, 0, sizeof st);
        wf_sim_pe_stats_at(t->sim, ev->x, ev->y, &st);
        o->comm0 = st.comm;
        o->stall0 = st.stall;
      }
      if (t->rows && !admit(t)) break; /* dropped: no matching end is recorded either */
      if (t->rows) add_delta(t, ev->y, now, 0, 1, 1);
      o->instr_start = now;
      o->pc = ev->pc;
      o->instr = ev->instr;
      break;
    case WF_SIM_EV_INSTR_END: /* sent in the stream's last working cycle, which counts */
      if (now + 1 > t->end) t->end = now + 1;
      close_instr(t, pe, now + 1);
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

static void write_span(FILE *f, const wf_trace *t, const tr_span *sp) {
  char name[160];
  span_name(t, sp, name, sizeof name);
  fprintf(f, ",\n{\"name\":");
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
    if (sp->kind != K_COMPUTE)
      fprintf(f, ",\"wavelet_cycles\":%lld,\"stall_cycles\":%lld", (long long)sp->comm,
              (long long)sp->stall);
    fputc('}', f);
  } else if (sp->kind == K_OP && sp->ref >= 0 && sp->ref < p->n_ops && p->ops[sp->ref].loc[0]) {
    fprintf(f, ",\"args\":{\"loc\":");
    json_str(f, p->ops[sp->ref].loc);
    fputc('}', f);
  }
  fputc('}', f);
}

static void write_meta(FILE *f, int tid, const char *name, int sort) {
  fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":", tid);
  json_str(f, name);
  fprintf(f, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
             "\"args\":{\"sort_index\":%d}}", tid, sort);
}

int wf_trace_write(wf_trace *t, const char *path) {
  /* Spans still open at the end (a failed run) are closed at the last cycle seen. */
  size_t cells = (size_t)t->w * (size_t)t->h;
  for (size_t i = 0; i < cells; i++) close_task(t, (int)i, t->end);
  qsort(t->spans, (size_t)t->n_spans, sizeof *t->spans, span_cmp);
  qsort(t->deltas, (size_t)t->n_deltas, sizeof *t->deltas, delta_cmp);
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  const wf_plan *p = t->plan;
  fprintf(f, "{\"otherData\":{\"generator\":\"waferrun\","
             "\"time_unit\":\"1 ts = 1 simulated cycle\",\"clock_hz\":%.17g,\"mesh\":[%d,%d],"
             "\"tracks\":\"%s\",\"limit\":%lld,\"events\":%lld,\"dropped_events\":%lld,"
             "\"complete\":%s},\n\"traceEvents\":[\n",
          p->target.clock_hz, t->w, t->h, t->rows ? "row" : "pe", (long long)t->limit,
          (long long)t->kept, (long long)t->dropped, t->dropped ? "false" : "true");
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"wafer %dx%d "
             "(%s)\"}}", t->w, t->h, p->target.name);
  char name[160];
  if (!t->rows) {
    for (int y = 0; y < t->h; y++)
      for (int x = 0; x < t->w; x++) {
        wf_sim_pe_stats st;
        if (wf_sim_pe_stats_at(t->sim, x, y, &st) || !st.present) continue;
        snprintf(name, sizeof name, "PE (%d,%d)", x, y);
        write_meta(f, y * t->w + x, name, y * t->w + x);
      }
    for (int64_t i = 0; i < t->n_spans; i++) write_span(f, t, &t->spans[i]);
  } else {
    /* Counter tracks: how many PEs of each row compute / run a fabric instruction. */
    int64_t i = 0;
    while (i < t->n_deltas) {
      int row = t->deltas[i].row;
      int64_t compute = 0, fabric = 0;
      while (i < t->n_deltas && t->deltas[i].row == row) {
        int64_t at = t->deltas[i].t;
        while (i < t->n_deltas && t->deltas[i].row == row && t->deltas[i].t == at) {
          compute += t->deltas[i].compute;
          fabric += t->deltas[i].fabric;
          i++;
        }
        fprintf(f, ",\n{\"name\":\"row %d\",\"cat\":\"pes\",\"ph\":\"C\",\"ts\":%lld,\"pid\":0,"
                   "\"args\":{\"compute\":%lld,\"fabric\":%lld}}",
                row, (long long)at, (long long)compute, (long long)fabric);
      }
    }
  }
  /* Mesh-wide extent of each IR op, as async spans (consecutive ops may overlap). */
  for (int k = 0; k < p->n_ops; k++) {
    if (t->op_last[k] < 0 || t->op_first[k] == INT64_MAX) continue;
    snprintf(name, sizeof name, "op %d %s %s", k, p->ops[k].op, p->ops[k].result);
    for (int e = 0; e < 2; e++) {
      fprintf(f, ",\n{\"name\":");
      json_str(f, name);
      fprintf(f, ",\"cat\":\"op\",\"ph\":\"%s\",\"id\":%d,\"ts\":%lld,\"pid\":0,\"tid\":0}",
              e ? "e" : "b", k, (long long)(e ? t->op_last[k] : t->op_first[k]));
    }
  }
  fprintf(f, "\n]}\n");
  if (fclose(f)) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return WF_EXIT_OK;
}
