/* report.json (docs/plan-format.md, "Run report") and the text summary. Only simulated
 * quantities appear: no host times, so two runs give byte-identical reports. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json_out.h"
#include "runtime/sim_sched.h"
#include "waferc/diag.h"

static cJSON *num(int64_t v) { return cJSON_CreateNumber((double)v); }

/* How many cycles op i moved the end of the run: its last PE's end past every earlier op's.
 * A GEMM's skew (PEs ending thousands of cycles apart) is charged to the GEMM, not to the
 * small op after it, whose span first-PE-in to last-PE-out includes that skew. */
static int64_t critical_cycles(const wf_sim *s, int i) {
  int64_t before = 0;
  for (int k = 0; k < i; k++)
    if (s->ops[k].end > before) before = s->ops[k].end;
  return s->ops[i].end > before ? s->ops[i].end - before : 0;
}

/* The layer an op belongs to, from its result's name as exporters write module paths
 * (`%_layers.3_self_attn_...`, `%_h.0_ln_1_...`, `%/model/layers.3/...`): "layers.3", or ""
 * for an op outside any numbered block (embedding, final norm, head). */
static void layer_of(const char *name, char *buf, size_t cap) {
  static const char *const keys[] = {"layers.", "layer.", "blocks.", "block.", "h."};
  buf[0] = 0;
  for (const char *c = name; *c; c++) {
    if (c != name && c[-1] != '_' && c[-1] != '%' && c[-1] != '/' && c[-1] != '.') continue;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      size_t n = strlen(keys[k]);
      if (strncmp(c, keys[k], n) || c[n] < '0' || c[n] > '9') continue;
      size_t len = n;
      while (c[len] >= '0' && c[len] <= '9') len++;
      snprintf(buf, cap, "%.*s", (int)len, c);
      return;
    }
  }
}

/* Per layer, in order of first appearance: ops, critical cycles, predicted cycles. Returns how
 * many layers (0 when the plan has fewer than two: nothing to split). */
typedef struct layer_stat {
  char name[32];
  int ops;
  int64_t cycles, predicted;
} layer_stat;

static int layer_stats(const wf_sim *s, layer_stat *out, int cap) {
  const wf_plan *p = s->plan;
  int n = 0;
  for (int i = 0; i < p->n_ops; i++) {
    char key[32];
    layer_of(p->ops[i].result, key, sizeof key);
    if (!key[0]) snprintf(key, sizeof key, "(outside the layers)");
    int j = 0;
    while (j < n && strcmp(out[j].name, key)) j++;
    if (j == n) {
      if (n == cap) continue;
      memset(&out[n], 0, sizeof out[n]);
      snprintf(out[n].name, sizeof out[n].name, "%s", key);
      n++;
    }
    out[j].ops++;
    out[j].cycles += critical_cycles(s, i);
    out[j].predicted += p->ops[i].predicted;
  }
  return n >= 2 ? n : 0;
}

enum { MAX_LAYERS = 256 };

/* A dist.gemm's span (first PE in to last PE out) cut at two moments: when the last PE left
 * the alignment (entered the loop) and when the last PE left the loop (entered the drain).
 * alignment = that first moment minus when the last PE entered the alignment (0 when no PE
 * has an alignment); drain = the op's end minus the second moment; loop = the rest, so the
 * setup before the alignment (zeroing C, copying the operands into the shift buffers) is
 * the loop's, and the three add up to the span (docs/report-format.md). Returns 0 for an op
 * without phases in the manifest. */
int wf_sim_op_phases(const wf_sim *s, int i, int64_t ph[3], int64_t predicted[3]) {
  if (i < 0 || i >= s->plan->n_ops || !s->plan->ops[i].has_phases) return 0;
  const wf_op_stat *st = &s->ops[i];
  if (predicted)
    for (int k = 0; k < 3; k++) predicted[k] = s->plan->ops[i].phase_predicted[k];
  int64_t span = st->start == INT64_MAX ? 0 : st->end - st->start;
  const int64_t *in = st->phase_in; /* cycle + 1, 0: none */
  ph[0] = in[0] && in[1] && in[1] > in[0] ? in[1] - in[0] : 0;
  ph[2] = in[2] && st->end > in[2] - 1 ? st->end - (in[2] - 1) : 0;
  if (ph[0] + ph[2] > span) ph[2] = span > ph[0] ? span - ph[0] : 0;
  if (ph[0] > span) ph[0] = span;
  ph[1] = span - ph[0] - ph[2];
  return 1;
}

/* A collective's cycles, first PE in to last PE out over all its runs (a collective in a loop
 * runs once a round: then they span the rounds), and how often each PE ran it. */
static int64_t coll_span(const wf_coll_stat *cs) { return cs->start == INT64_MAX ? 0 : cs->end - cs->start; }
static int64_t coll_runs(const wf_sim *s, const wf_coll_stat *cs) { return s->n_pes ? cs->entries / s->n_pes : 0; }

typedef struct route_stat {
  int64_t total, max;
  double max_over_avg; /* the busiest expert's tokens over the mean; 0 when none */
} route_stat;

static route_stat route_stats(const wf_plan_route *rt, const int64_t *c) {
  route_stat st = {0, 0, 0};
  for (int64_t e = 0; e < rt->experts; e++) {
    st.total += c[e];
    if (c[e] > st.max) st.max = c[e];
  }
  if (st.total) st.max_over_avg = (double)st.max * (double)rt->experts / (double)st.total;
  return st;
}

/* A band of the rows (waferc --expert-parallel): its ops' span, and the links between two of
 * its PEs over the whole run (its experts' traffic, and any other op's in those rows). */
typedef struct band_stat {
  int ops;
  int64_t start, end, hops, busiest;
  int bx, by, bdir;
} band_stat;

static band_stat band_stats(const wf_sim *s, int region) {
  const wf_plan *p = s->plan;
  const wf_plan_region *r = &p->regions[region];
  band_stat b = {0, INT64_MAX, 0, 0, -1, 0, 0, 0};
  for (int i = 0; i < p->n_ops; i++) {
    if (p->ops[i].band != region || s->ops[i].start == INT64_MAX) continue;
    b.ops++;
    if (s->ops[i].start < b.start) b.start = s->ops[i].start;
    if (s->ops[i].end > b.end) b.end = s->ops[i].end;
  }
  if (b.start == INT64_MAX) b.start = 0;
  for (int y = r->y; y < r->y + r->h; y++)
    for (int x = r->x; x < r->x + r->w; x++) {
      const wf_router *rt = s->routers[(size_t)y * s->w + x];
      if (!rt) continue;
      for (int d = 0; d < WF_DIR_RAMP; d++) {
        int nx = x + wf_dir_dx[d], ny = y + wf_dir_dy[d];
        if (nx < r->x || nx >= r->x + r->w || ny < r->y || ny >= r->y + r->h) continue;
        b.hops += rt->out_count[d];
        if (rt->out_count[d] > b.busiest) b.busiest = rt->out_count[d], b.bx = x, b.by = y, b.bdir = d;
      }
    }
  return b;
}

int wf_sim_write_report(const wf_sim *s, const char *path) {
  const wf_plan *p = s->plan;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "format_version", 1);
  cJSON_AddStringToObject(root, "plan", p->dir);
  cJSON_AddStringToObject(root, "target", p->target.name);
  cJSON_AddNumberToObject(root, "clock_hz", p->target.clock_hz);
  cJSON_AddStringToObject(root, "mode", s->functional ? "functional" : "timing");
  cJSON_AddNumberToObject(root, "hop_cycles", p->target.hop_cycles);
  cJSON_AddNumberToObject(root, "ramp_cycles", p->target.ramp_cycles);
  cJSON *mesh = cJSON_AddArrayToObject(root, "mesh");
  cJSON_AddItemToArray(mesh, num(p->mesh_w));
  cJSON_AddItemToArray(mesh, num(p->mesh_h));

  cJSON *cyc = cJSON_AddObjectToObject(root, "cycles");
  cJSON_AddItemToObject(cyc, "total", num(s->total));
  cJSON_AddItemToObject(cyc, "predicted", num(p->predicted_total));
  double seconds = (double)s->total / p->target.clock_hz;
  cJSON_AddNumberToObject(root, "seconds", seconds);
  if (s->total > 0) {
    cJSON_AddNumberToObject(root, "runs_per_second", 1.0 / seconds);
    cJSON_AddItemToObject(root, "tokens_per_run", num(p->tokens_per_run));
    cJSON_AddNumberToObject(root, "tokens_per_second", (double)p->tokens_per_run / seconds);
  }

  /* the plan's data movement between PEs besides collectives (manifest counts) */
  if (p->fabric_transposes >= 0) cJSON_AddItemToObject(root, "fabric_transposes", num(p->fabric_transposes));
  if (p->relayouts >= 0) cJSON_AddItemToObject(root, "relayouts", num(p->relayouts));
  if (p->n_routes) { /* tokens per expert of each MoE router (functional mode: counted) */
    cJSON *moe = cJSON_AddArrayToObject(root, "moe");
    const int64_t *c = s->route_counts;
    for (int r = 0; r < p->n_routes; r++) {
      const wf_plan_route *rt = &p->routes[r];
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "output", p->outputs[rt->output].name);
      cJSON_AddItemToObject(o, "experts", num(rt->experts));
      cJSON_AddItemToObject(o, "k", num(rt->k));
      if (c) {
        route_stat st = route_stats(rt, c);
        cJSON *tk = cJSON_AddArrayToObject(o, "tokens_per_expert");
        for (int64_t e = 0; e < rt->experts; e++) cJSON_AddItemToArray(tk, num(c[e]));
        cJSON_AddItemToObject(o, "assignments", num(st.total));
        cJSON_AddItemToObject(o, "outside", num(c[rt->experts]));
        cJSON_AddNumberToObject(o, "max_over_avg", st.max_over_avg);
        c += rt->experts + 1;
      }
      cJSON_AddItemToArray(moe, o);
    }
  }

  int64_t comp = 0, comm = 0, stall = 0, overlap = 0;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i]) {
      comp += s->pes[i]->compute;
      comm += s->pes[i]->comm;
      stall += s->pes[i]->stall;
      overlap += s->pes[i]->overlap;
    }
  int64_t pe_cycles = s->total * s->n_pes;
  cJSON *pe = cJSON_AddObjectToObject(root, "pes");
  cJSON_AddItemToObject(pe, "count", num(s->n_pes));
  cJSON_AddItemToObject(pe, "compute_cycles", num(comp));
  cJSON_AddItemToObject(pe, "communication_cycles", num(comm));
  cJSON_AddItemToObject(pe, "stall_cycles", num(stall));
  /* Each PE-cycle is in exactly one of the four classes (wf_pe_charge), so idle >= 0. */
  cJSON_AddItemToObject(pe, "idle_cycles", num(pe_cycles - comp - comm - stall));
  cJSON_AddItemToObject(pe, "overlap_cycles", num(overlap));
  cJSON_AddNumberToObject(pe, "utilization", pe_cycles ? (double)comp / (double)pe_cycles : 0.0);
  cJSON_AddNumberToObject(pe, "busy", pe_cycles ? (double)(comp + comm) / (double)pe_cycles : 0.0);

  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  int64_t ph[3];
  for (int i = 0; i < p->n_ops; i++) {
    const wf_op_stat *st = &s->ops[i];
    cJSON *o = cJSON_CreateObject();
    int64_t span = st->start == INT64_MAX ? 0 : st->end - st->start;
    cJSON_AddItemToObject(o, "index", num(i));
    cJSON_AddStringToObject(o, "op", p->ops[i].op);
    cJSON_AddStringToObject(o, "result", p->ops[i].result);
    if (p->ops[i].loc[0]) cJSON_AddStringToObject(o, "loc", p->ops[i].loc);
    cJSON_AddItemToObject(o, "start", num(st->start == INT64_MAX ? 0 : st->start));
    cJSON_AddItemToObject(o, "end", num(st->end));
    cJSON_AddItemToObject(o, "cycles", num(span));
    cJSON_AddItemToObject(o, "critical_cycles", num(critical_cycles(s, i)));
    cJSON_AddItemToObject(o, "predicted_cycles", num(p->ops[i].predicted));
    if (p->ops[i].fabric_move[0]) cJSON_AddStringToObject(o, "fabric_move", p->ops[i].fabric_move);
    cJSON_AddItemToObject(o, "compute", num(st->compute));
    cJSON_AddItemToObject(o, "communication", num(st->comm));
    cJSON_AddItemToObject(o, "stall", num(st->stall));
    int64_t idle = span * s->n_pes - st->compute - st->comm - st->stall;
    cJSON_AddItemToObject(o, "idle", num(idle > 0 ? idle : 0));
    cJSON_AddItemToObject(o, "overlap", num(st->overlap));
    if (wf_sim_op_phases(s, i, ph, NULL)) {
      cJSON *po = cJSON_AddObjectToObject(o, "phases");
      for (int k = 0; k < 3; k++) {
        cJSON *e = cJSON_AddObjectToObject(po, wf_plan_phase_names[k]);
        cJSON_AddItemToObject(e, "cycles", num(ph[k]));
        cJSON_AddItemToObject(e, "predicted", num(p->ops[i].phase_predicted[k]));
      }
    }
    cJSON *cs = NULL;
    for (int k = 0; k < p->n_colls; k++) {
      const wf_plan_coll *pc = &p->colls[k];
      const wf_coll_stat *cst = &s->colls[k];
      if (pc->op != i) continue;
      if (!cs) cs = cJSON_AddArrayToObject(o, "collectives");
      cJSON *e = cJSON_CreateObject();
      cJSON_AddItemToObject(e, "index", num(k));
      cJSON_AddStringToObject(e, "collective", pc->collective);
      cJSON_AddStringToObject(e, "algo", pc->algo);
      cJSON_AddItemToObject(e, "pes", num(pc->pes));
      cJSON_AddItemToObject(e, "words", num(pc->words));
      cJSON_AddItemToObject(e, "cycles", num(coll_span(cst)));
      cJSON_AddItemToObject(e, "runs", num(coll_runs(s, cst)));
      cJSON_AddItemToObject(e, "predicted_cycles", num(pc->predicted));
      if (pc->lowered) cJSON_AddItemToObject(e, "lowered_cycles", num(pc->lowered));
      cJSON_AddItemToArray(cs, e);
    }
    cJSON_AddItemToArray(ops, o);
  }

  layer_stat *ls = malloc(MAX_LAYERS * sizeof *ls);
  int nl = ls ? layer_stats(s, ls, MAX_LAYERS) : 0;
  if (nl) {
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int j = 0; j < nl; j++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "layer", ls[j].name);
      cJSON_AddItemToObject(e, "ops", num(ls[j].ops));
      cJSON_AddItemToObject(e, "cycles", num(ls[j].cycles));
      cJSON_AddItemToObject(e, "predicted_cycles", num(ls[j].predicted));
      cJSON_AddItemToArray(layers, e);
    }
  }
  free(ls);

  cJSON *bands = NULL;
  for (int g = 0; g < p->n_regions; g++) {
    if (p->regions[g].within < 0) continue;
    band_stat b = band_stats(s, g);
    if (!bands) bands = cJSON_AddArrayToObject(root, "bands");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "region", p->regions[g].name);
    cJSON *rows = cJSON_AddArrayToObject(e, "rows");
    cJSON_AddItemToArray(rows, num(p->regions[g].y));
    cJSON_AddItemToArray(rows, num(p->regions[g].y + p->regions[g].h - 1));
    cJSON_AddItemToObject(e, "ops", num(b.ops));
    cJSON_AddItemToObject(e, "start", num(b.start));
    cJSON_AddItemToObject(e, "end", num(b.end));
    cJSON_AddItemToObject(e, "wavelet_hops", num(b.hops));
    if (b.busiest > 0) {
      cJSON *l = cJSON_AddObjectToObject(e, "busiest_link");
      cJSON_AddItemToObject(l, "x", num(b.bx));
      cJSON_AddItemToObject(l, "y", num(b.by));
      cJSON_AddStringToObject(l, "dir", wf_dir_names[b.bdir]);
      cJSON_AddItemToObject(l, "wavelets", num(b.busiest));
    }
    cJSON_AddItemToArray(bands, e);
  }

  cJSON *links = cJSON_AddObjectToObject(root, "links");
  int64_t total = 0, up = 0, down = 0;
  cJSON *per = cJSON_CreateArray();
  for (size_t i = 0; i < cells; i++) {
    const wf_router *r = s->routers[i];
    if (!r) continue;
    up += r->out_count[WF_DIR_RAMP];
    down += r->ramp_down;
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      if (!r->out_count[d]) continue;
      total += r->out_count[d];
      cJSON *l = cJSON_CreateObject();
      cJSON_AddItemToObject(l, "x", num(r->x));
      cJSON_AddItemToObject(l, "y", num(r->y));
      cJSON_AddStringToObject(l, "dir", wf_dir_names[d]);
      cJSON_AddItemToObject(l, "wavelets", num(r->out_count[d]));
      cJSON_AddItemToArray(per, l);
    }
  }
  cJSON_AddItemToObject(links, "wavelet_hops", num(total));
  cJSON_AddItemToObject(links, "ramp_down", num(down));
  cJSON_AddItemToObject(links, "ramp_up", num(up));
  cJSON_AddItemToObject(links, "undelivered", num(s->undelivered));
  cJSON_AddItemToObject(links, "per_link", per);

  return wf_json_write_report(root, path);
}

int wf_json_write_report(cJSON *root, const char *path) {
  char *text = cJSON_Print(root);
  WF_ASSERT(text != NULL); /* it fails only when an allocation does: out of host memory, exit 7 */
  cJSON_Delete(root);
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the report");
    free(text);
    return WF_EXIT_IO;
  }
  fputs(text, f);
  fputc('\n', f);
  free(text);
  if (fclose(f)) {
    wf_error_at(path, "cannot write the report");
    return WF_EXIT_IO;
  }
  return WF_EXIT_OK;
}

void wf_sim_print_summary(const wf_sim *s, FILE *out) {
  const wf_plan *p = s->plan;
  double seconds = (double)s->total / p->target.clock_hz;
  fprintf(out, "target %s, mesh %dx%d, %d PEs\n", p->target.name, p->mesh_w, p->mesh_h, s->n_pes);
  fprintf(out, "cycles: %lld simulated, %lld predicted\n", (long long)s->total,
          (long long)p->predicted_total);
  fprintf(out, "time:   %.6g s at %.4g GHz\n", seconds, p->target.clock_hz / 1e9);
  if (p->tokens_per_run > 1 && s->total > 0)
    fprintf(out, "prefill: %lld tokens per run, %.4g tokens/s\n", (long long)p->tokens_per_run,
            (double)p->tokens_per_run / seconds);
  int64_t hops = 0;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++)
    if (s->routers[i])
      for (int d = 0; d < WF_DIR_RAMP; d++) hops += s->routers[i]->out_count[d];
  fprintf(out, "fabric: %lld wavelet-hops (%s mode)\n", (long long)hops,
          s->functional ? "functional" : "timing");
  if (p->fabric_transposes >= 0 && p->relayouts >= 0)
    fprintf(out, "moves:  %d fabric transpose%s, %d relayout%s\n", p->fabric_transposes,
            p->fabric_transposes == 1 ? "" : "s", p->relayouts, p->relayouts == 1 ? "" : "s");
  for (int i = 0; i < p->n_ops; i++) {
    const wf_op_stat *st = &s->ops[i];
    int64_t span = st->start == INT64_MAX ? 0 : st->end - st->start;
    fprintf(out, "  op %-3d %-10s %-8s %8lld cycles (predicted %lld)%s%s\n", i, p->ops[i].op,
            p->ops[i].result, (long long)span, (long long)p->ops[i].predicted,
            p->ops[i].fabric_move[0] ? ", fabric " : "", p->ops[i].fabric_move);
    int64_t ph[3];
    if (wf_sim_op_phases(s, i, ph, NULL))
      fprintf(out, "         alignment %lld (predicted %lld), loop %lld (%lld), drain %lld (%lld)\n", (long long)ph[0],
              (long long)p->ops[i].phase_predicted[0], (long long)ph[1], (long long)p->ops[i].phase_predicted[1],
              (long long)ph[2], (long long)p->ops[i].phase_predicted[2]);
    for (int k = 0; k < p->n_colls; k++) {
      const wf_plan_coll *pc = &p->colls[k];
      const wf_coll_stat *cs = &s->colls[k];
      if (pc->op != i) continue;
      char what[48];
      snprintf(what, sizeof what, "%s:%s", pc->collective, pc->algo);
      fprintf(out, "         %-19s %8lld cycles (predicted %lld", what,
              (long long)coll_span(cs), (long long)pc->predicted);
      if (pc->lowered && pc->lowered != pc->predicted) fprintf(out, ", %lld as lowered", (long long)pc->lowered);
      fprintf(out, ")%s\n", coll_runs(s, cs) > 1 ? ", over its runs" : "");
    }
  }
  const int64_t *c = s->route_counts;
  for (int r = 0; c && r < p->n_routes; r++) {
    const wf_plan_route *rt = &p->routes[r];
    route_stat st = route_stats(rt, c);
    fprintf(out, "moe:    %s: tokens per expert [", p->outputs[rt->output].name);
    for (int64_t e = 0; e < rt->experts; e++) fprintf(out, "%s%lld", e ? " " : "", (long long)c[e]);
    fprintf(out, "] (top-%lld, max/avg %.2f)", (long long)rt->k, st.max_over_avg);
    if (c[rt->experts]) fprintf(out, ", %lld outside [0, %lld)", (long long)c[rt->experts], (long long)rt->experts);
    fputc('\n', out);
    c += rt->experts + 1;
  }
  for (int g = 0, first = 1; g < p->n_regions; g++) {
    if (p->regions[g].within < 0) continue;
    band_stat b = band_stats(s, g);
    fprintf(out, "%s %-10s rows %d..%d: %3d ops, cycles %lld..%lld, %lld wavelet-hops inside", first ? "bands: " : "       ",
            p->regions[g].name, p->regions[g].y, p->regions[g].y + p->regions[g].h - 1, b.ops, (long long)b.start,
            (long long)b.end, (long long)b.hops);
    if (b.busiest > 0)
      fprintf(out, " (busiest (%d,%d) %s, %lld)", b.bx, b.by, wf_dir_names[b.bdir], (long long)b.busiest);
    fputc('\n', out);
    first = 0;
  }
  layer_stat *ls = malloc(MAX_LAYERS * sizeof *ls);
  int nl = ls ? layer_stats(s, ls, MAX_LAYERS) : 0;
  for (int j = 0; j < nl; j++)
    fprintf(out, "%s %-22s %3d ops %10lld cycles on the critical path (predicted %lld)\n", j ? "       " : "layers:",
            ls[j].name, ls[j].ops, (long long)ls[j].cycles, (long long)ls[j].predicted);
  free(ls);
}
