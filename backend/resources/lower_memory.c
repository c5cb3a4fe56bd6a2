/* Per-PE SRAM planning of a lowered class: liveness over the program, then P1's placement
 * (memplan.c). A symbol is live from its first to its last reference in program order;
 * a reference inside a loop counts for the whole outermost loop (it runs every
 * iteration). Inputs and weights are written at launch (live from 0), outputs are read at
 * the end (live to the end). An async stream reads or writes its buffers in the background
 * until a `wait` joins it: a symbol an async op names stays live up to the first wait that
 * every PE runs after it (unguarded, outside any loop), or to the end when none does. A
 * class whose code runs in other tasks too (data or control tasks, in no fixed order) keeps
 * every symbol live for the whole program. Over budget: an
 * error naming the tensor that ends highest, the class, the bytes missing, and what to do. */
#include <stdlib.h>
#include <string.h>

#include "backend/resources/lower.h"
#include "backend/resources/memplan.h"
#include "waferc/diag.h"

static void touch(int *first, int *last, int sym, int lo, int hi) {
  if (first[sym] < 0 || lo < first[sym]) first[sym] = lo;
  if (hi > last[sym]) last[sym] = hi;
}


/* Where the error about symbol `sym` points: the op that defines its value (an ONNX
 * node, a .wir line), else the function. */
static wf_loc sym_loc(wf_lower *L, int sym) {
  for (int v = 0; v < L->n_sym_of; v++) {
    if (L->sym_of[v] != sym) continue;
    wf_func_foreach_op(L->f, op) {
      for (int r = 0; r < op->n_results; r++)
        if (op->results[r] == (wf_value)v && op->loc.file) return op->loc;
    }
  }
  return L->f->loc;
}

/* After an over-budget plan: what the PE holds where the most bytes are live at once (a
 * lower bound of the planner's peak, which adds the gaps between placed blocks), by kind —
 * weights and constants ('@'), values ('%'), lowering scratch ('$') — so that a user sees
 * whether a larger mesh, a memory-minimal schedule or a smaller model is the way out. */
static void note_fullest(wf_lower *L, const wf_mem_sym *ms, int n, int end) {
  /* bands' symbols share memory (group): what a PE of the band holding the most holds */
  int band = 0;
  int64_t band_bytes = 0;
  for (int i = 0; i < n; i++) {
    if (!ms[i].group || ms[i].group == band) continue;
    int64_t b = 0;
    for (int j = 0; j < n; j++) b += ms[j].group == ms[i].group ? ms[j].size : 0;
    if (b > band_bytes) band = ms[i].group, band_bytes = b;
  }
#define ON_PE(i) (!ms[i].group || ms[i].group == band)
  int64_t *delta = calloc((size_t)end + 2, sizeof *delta);
  if (!delta) return;
  for (int i = 0; i < n; i++) {
    if (!ON_PE(i)) continue;
    delta[ms[i].first] += ms[i].size;
    delta[ms[i].last + 1] -= ms[i].size;
  }
  int at = 0;
  int64_t live = 0, most = -1;
  for (int t = 0; t <= end; t++) {
    live += delta[t];
    if (live > most) most = live, at = t;
  }
  free(delta);
  static const char kinds[] = "@%$";
  int64_t bytes[4] = {0};
  int count[4] = {0}, big[4] = {-1, -1, -1, -1};
  for (int i = 0; i < n; i++) {
    if (ms[i].first > at || ms[i].last < at || !ON_PE(i)) continue;
    const char *k = strchr(kinds, ms[i].name[0]);
    int j = k && *k ? (int)(k - kinds) : 3;
    bytes[j] += ms[i].size;
    count[j]++;
    if (big[j] < 0 || ms[i].size > ms[big[j]].size) big[j] = i;
  }
  static const char *what[] = {"weights and constants", "values", "scratch", "other"};
  char buf[512];
  size_t u = 0;
  for (int j = 0; j < 4 && u < sizeof buf; j++) {
    if (!count[j]) continue;
    u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%s %lld bytes in %d (the largest '%s', %lld)", u ? "; " : "",
                          what[j], (long long)bytes[j], count[j], ms[big[j]].name, (long long)ms[big[j]].size);
  }
  wf_note(L->f->loc, "at its fullest, class '%s' holds %lld bytes live per PE%s%s: %s", L->cls->name, (long long)most,
          band ? " of band @" : "", band ? wf_str(L->m, L->m->regions[band - 1].name) : "", buf);
}
#undef ON_PE

int wf_lower_plan_memory(wf_lower *L) {
  wf_pe_class *c = L->cls;
  /* Arguments and results the code never touches (an input returned as it is, a constant
   * output) still need their blocks: the host scatters and gathers them. */
  for (int i = 0; i < L->f->n_args; i++) wf_lower_sym(L, L->f->args[i]);
  const wf_op *ret = wf_func_return(L->f);
  for (int i = 0; ret && i < ret->n_operands; i++) wf_lower_sym(L, ret->operands[i]);
  int n = c->n_syms, end = c->n_code + 1;
  if (!n) return 0;
  int *first = malloc((size_t)n * sizeof *first), *last = malloc((size_t)n * sizeof *last);
  wf_mem_sym *ms = calloc((size_t)n, sizeof *ms);
  WF_ASSERT(first && last && ms);
  for (int i = 0; i < n; i++) first[i] = last[i] = -1;
  /* Code outside the main task (the backend's stream_done task is empty) runs in no fixed
   * order: then nothing is reused. */
  int unordered = 0;
  for (int t = 0; t < c->n_tasks; t++)
    unordered |= strcmp(c->tasks[t].name, "main") && c->tasks[t].end > c->tasks[t].start;
  /* Outermost loop extent of each instruction. `join[i]`: the first `wait` every PE runs
   * (unguarded, outside any loop) at or after instruction i, or `end` if none. */
  int *join = malloc(((size_t)c->n_code + 1) * sizeof *join);
  WF_ASSERT(join);
  join[c->n_code] = end;
  for (int i = c->n_code - 1, d = 0; i >= 0; i--) {
    const wf_pe_instr *in = &c->code[i];
    if (in->op == WF_PEOP_ENDLOOP) d++;
    join[i] = in->op == WF_PEOP_WAIT && !d && !in->guard.n ? i : join[i + 1];
    if (in->op == WF_PEOP_LOOP && d > 0) d--;
  }
  int depth = 0, open = 0;
  for (int i = 0; i < c->n_code; i++) {
    const wf_pe_instr *in = &c->code[i];
    if (in->op == WF_PEOP_LOOP && depth++ == 0) open = i;
    int lo = depth ? open : i, hi = i;
    if (depth) hi = c->code[open].match; /* LOOP's match: its ENDLOOP */
    if (in->op == WF_PEOP_ENDLOOP && --depth < 0) depth = 0;
    /* A stream reads or writes its buffers until the wait that joins it. */
    if (wf_peops[in->op].cost == WF_PECOST_ASYNC) hi = join[hi];
    const char *sig = wf_peops[in->op].sig;
    for (int a = 0; sig[a]; a++)
      if (sig[a] == 'd' || sig[a] == 's') touch(first, last, in->args[a].sym, lo, hi);
  }
  free(join);
  /* Launch-time data (arguments, constants) and results. */
  for (int i = 0; i < L->f->n_args; i++) touch(first, last, wf_lower_sym(L, L->f->args[i]), 0, 0);
  for (int i = 0; i < n; i++)
    if (c->syms[i].name[0] == '@') touch(first, last, i, 0, 0);
  for (int i = 0; ret && i < ret->n_operands; i++)
    touch(first, last, wf_lower_sym(L, ret->operands[i]), end, end);
  for (int i = 0; i < n; i++) {
    if (first[i] < 0) first[i] = last[i] = 0;
    if (unordered) first[i] = 0, last[i] = end;
    ms[i] = (wf_mem_sym){c->syms[i].name, c->syms[i].bytes, 16, first[i], last[i], 0};
  }
  /* a value's block on a band of the rows is on no PE of another band */
  for (int i = 0; i < n; i++) ms[i].group = -1; /* -1: no value yet */
  for (int v = 1; v < L->n_sym_of && v <= (int)L->f->n_values; v++) {
    int s = L->sym_of[v];
    if (s < 0 || s >= n) continue;
    int r = wf_value_type(L->f, (wf_value)v)->layout.region, g = r >= 0 && r != L->region ? r + 1 : 0;
    ms[s].group = ms[s].group == -1 || ms[s].group == g ? g : 0; /* aliases on two: none */
  }
  for (int i = 0; i < n; i++)
    if (ms[i].group < 0) ms[i].group = 0;
  wf_mem_plan p;
  int r = wf_memplan(ms, n, L->t->sram_bytes, &p);
  /* Scratch whose size does not shrink with the blocks gets its own advice. */
#define SLICE_GATHER_ADVICE                                                                          \
  "a slice, concat or split whose cut is not on block edges gathers the blocks it reads along the " \
  "axis into a panel on every PE ($sl_panel, received through $ga_buf), which a larger mesh does "  \
  "not shrink much; a cut on block edges, or along a leading axis, is local and needs none"
  static const struct { const char *prefix, *advice; } scratch[] = {
      {"$rl_", "the W x H transpose gathers X's whole columns on every PE (a panel that a "
               "larger mesh does not shrink much); on a square mesh (--mesh=NxN) it needs two "
               "blocks per PE"},
      {"$gemm_apanel", "allgather GEMM keeps whole row and column panels: another --gemm-algo "
                       "(summa, meshgemm, cannon) keeps a few blocks"},
      {"$gemm_bpanel", "allgather GEMM keeps whole row and column panels: another --gemm-algo "
                       "(summa, meshgemm, cannon) keeps a few blocks"},
      {"$vr_panel", "a vector re-split gathers the whole vector on every PE: a shorter vector or "
                    "a split op"},
      {"$sl_panel", SLICE_GATHER_ADVICE},
      {"$ga_buf", SLICE_GATHER_ADVICE},
  };
  int rc = 0;
  if (r < 0) {
    wf_error(L->f->loc, "internal: SRAM planning of class '%s' failed", c->name);
    rc = WF_EXIT_NOFIT;
  } else {
    for (int i = 0; i < n; i++) c->syms[i].offset = p.offset[i];
    c->mem_bytes = p.peak;
    if (r == 1) {
      const wf_pe_sym *s = &c->syms[p.over];
      const char *advice = "use a larger mesh (--mesh; the blocks shrink with the PE count) or split the op";
      for (size_t k = 0; k < sizeof scratch / sizeof *scratch; k++)
        if (!strncmp(s->name, scratch[k].prefix, strlen(scratch[k].prefix))) advice = scratch[k].advice;
      /* The symbol placed last is not always the one to blame (a gather's table, whole
       * along V, can dwarf the ids placed after it): name the largest too. */
      int big = p.over;
      for (int i = 0; i < n; i++)
        if (c->syms[i].bytes > c->syms[big].bytes) big = i;
      char largest[160] = "";
      if (big != p.over)
        snprintf(largest, sizeof largest, "; the largest is '%s' (%lld bytes per PE)", c->syms[big].name,
                 (long long)c->syms[big].bytes);
      wf_error(sym_loc(L, p.over),
               "tensor '%s' (%lld bytes per PE) of class '%s' does not fit the %lld-byte SRAM of a "
               "'%s' PE: %lld bytes missing after reusing the memory of dead values (%lld bytes "
               "needed, %lld without reuse%s); %s",
               s->name, (long long)s->bytes, c->name, (long long)L->t->sram_bytes, L->t->name,
               (long long)p.missing, (long long)p.peak, (long long)p.sum, largest, advice);
      note_fullest(L, ms, n, end);
      rc = WF_EXIT_NOFIT;
    }
    wf_mem_plan_free(&p);
  }
  free(first);
  free(last);
  free(ms);
  return rc;
}
