/* waferc --pipeline=N (docs/pipeline.md): WaferLLM falls back to pipeline parallelism when a
 * model's weights do not fit one region's SRAM. The mesh's H rows become N bands of H/N; stage
 * k holds a contiguous run of the graph on band k, every weight of its layers resident there.
 *
 *   where to cut   After the passes before partition (the same graph for every band: they
 *                  see the band's mesh), a cut before op p carries the values computed from
 *                  the model's inputs before p and used at or after it. Values computed from
 *                  constants alone are recomputed where used (each stage keeps the ops that
 *                  make them), and the model's own inputs go to whichever stage reads them.
 *                  The candidates are the cuts that carry the fewest bytes (in a transformer:
 *                  the residual stream between layers and between attention and MLP); of
 *                  those, the N - 1 whose weight bytes before them come nearest to k/N of
 *                  the model's.
 *   the stages     Each stage is the model imported again, cut: its arguments are the values
 *                  carried into it (and the model inputs it reads), its results the values
 *                  carried out of it (the last stage: the model's results). Carried values are
 *                  named pipe_<j> (a model output keeps its own name). Then partition and
 *                  the rest for the band's W x H/N mesh, each a plan of its own.
 *   the transfers  transfer<k> moves stage k-1's results onto band k: on the W x 2H/N mesh
 *                  of the two bands, a value whose dim d is split over the rows is declared
 *                  with d padded to P = (H/N) ceil(n_d / (H/N)) and doubled, and shifted by P
 *                  along d (IR op `shift`): every block moves H/N rows down over the fabric.
 *                  The band's blocks of the carried value are the transfer's first half, so
 *                  the stage's and the transfer's layouts are checked to split alike. A value
 *                  held whole by every row of the band (a one-token prompt's [1, 1, E]) is
 *                  declared with a dim of size 1 grown to 2 H/N, one copy per row, and
 *                  shifted the same way (carry_dim).
 *
 * Stage 0 is out_dir/ itself; its manifest's "pipeline" lists the stages and transfers in
 * out_dir/pipeline/ and what each carries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "plan_stage.h"
#include "ir/support/fsutil.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

/* The graph of the pre-partition module, in op order. */
typedef struct graph {
  wf_func *f;
  int n;            /* ops before the return */
  wf_op **ops, *ret;
  uint32_t nv;      /* values */
  int *def, *last;  /* per value: defining op (-1: an argument or a constant), last use (n: returned) */
  uint8_t *dep;     /* per value: computed from the model's inputs */
  int64_t *wbytes;  /* per op: the bytes of the constants it is the first to read */
} graph;

static void graph_free(graph *g) {
  free(g->ops);
  free(g->def);
  free(g->last);
  free(g->dep);
  free(g->wbytes);
}

/* The function compiled: main, else the first (as the backend picks it). */
static wf_func *main_func(wf_module *m) {
  wf_func *f = wf_module_find_func(m, "main");
  return f || !m->n_funcs ? f : m->funcs[0];
}

static int graph_build(wf_module *m, graph *g) {
  memset(g, 0, sizeof *g);
  wf_func *f = main_func(m);
  if (!f) {
    wf_error(WF_LOC_NONE, "--pipeline: the model has no function");
    return WF_EXIT_INPUT;
  }
  g->f = f;
  g->nv = f->n_values;
  wf_func_foreach_op(f, op) g->n += op->code != WF_OP_RETURN;
  g->ops = calloc((size_t)g->n + 1, sizeof *g->ops);
  g->def = malloc(g->nv * sizeof *g->def);
  g->last = malloc(g->nv * sizeof *g->last);
  g->dep = calloc(g->nv, 1);
  g->wbytes = calloc((size_t)g->n + 1, sizeof *g->wbytes);
  uint8_t *seen = calloc(g->nv, 1);
  WF_ASSERT(g->ops && g->def && g->last && g->dep && g->wbytes && seen);
  for (uint32_t v = 0; v < g->nv; v++) {
    g->def[v] = g->last[v] = -1;
    g->dep[v] = f->values[v].kind == WF_VAL_ARG;
  }
  int i = 0;
  wf_func_foreach_op(f, op) {
    int at = op->code == WF_OP_RETURN ? g->n : i;
    uint8_t d = 0;
    for (int k = 0; k < op->n_operands; k++) {
      wf_value v = op->operands[k];
      g->last[v] = at;
      d |= g->dep[v];
      if (f->values[v].kind == WF_VAL_GLOBAL && !seen[v]) {
        seen[v] = 1;
        g->wbytes[at] += (int64_t)wf_type_bytes(&f->values[v].type);
      }
    }
    if (op->code == WF_OP_RETURN) {
      g->ret = op;
      continue;
    }
    for (int r = 0; r < op->n_results; r++) g->def[op->results[r]] = i, g->dep[op->results[r]] = d;
    g->ops[i++] = op;
  }
  free(seen);
  if (!g->ret) {
    wf_error(f->loc, "--pipeline: the function has no return");
    return WF_EXIT_INPUT;
  }
  return 0;
}

/* Whether value v is carried over the cut before op p. */
static int carried(const graph *g, wf_value v, int p) {
  return g->dep[v] && g->def[v] >= 0 && g->def[v] < p && g->last[v] >= p;
}

/* Chooses cuts[1 .. N-1] (cuts[0] = 0, cuts[N] = n). 0, or WF_EXIT_UNSUPPORTED after
 * reporting that the graph has too few places to cut. */
static int choose_cuts(const graph *g, int N, int *cuts) {
  int n = g->n;
  int64_t *bytes = calloc((size_t)n + 2, sizeof *bytes), *cnt = calloc((size_t)n + 2, sizeof *cnt);
  int64_t *cum = calloc((size_t)n + 1, sizeof *cum), *depops = calloc((size_t)n + 1, sizeof *depops);
  int *cand = malloc(((size_t)n + 1) * sizeof *cand);
  WF_ASSERT(bytes && cnt && cum && depops && cand);
  for (wf_value v = 1; v < g->nv; v++) /* v is carried over the cuts def+1 .. last */
    if (g->dep[v] && g->def[v] >= 0 && g->last[v] > g->def[v]) {
      int64_t b = (int64_t)wf_type_bytes(&g->f->values[v].type);
      bytes[g->def[v] + 1] += b, bytes[g->last[v] + 1] -= b;
      cnt[g->def[v] + 1]++, cnt[g->last[v] + 1]--;
    }
  for (int p = 1; p <= n; p++) bytes[p] += bytes[p - 1], cnt[p] += cnt[p - 1];
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += g->wbytes[i];
  for (int p = 1; p <= n; p++) {
    const wf_op *op = g->ops[p - 1];
    int d = 0;
    for (int r = 0; r < op->n_results; r++) d |= g->dep[op->results[r]];
    cum[p] = cum[p - 1] + (total ? g->wbytes[p - 1] : 1); /* no weights: balance the ops */
    depops[p] = depops[p - 1] + d;
  }
  if (!total) total = n;
  int64_t best = -1;
  for (int p = 1; p < n; p++)
    if (cnt[p] > 0 && depops[p] > 0 && depops[n] - depops[p] > 0 && (best < 0 || bytes[p] < best)) best = bytes[p];
  int nc = 0;
  for (int p = 1; p < n; p++)
    if (cnt[p] > 0 && depops[p] > 0 && depops[n] - depops[p] > 0 && bytes[p] == best) cand[nc++] = p;
  int rc = 0;
  if (nc < N - 1) {
    wf_error(WF_LOC_NONE, "--pipeline=%d: the model has %d place%s to cut that carr%s the fewest bytes (%lld: "
                          "between its layers); at most --pipeline=%d",
             N, nc, nc == 1 ? "" : "s", nc == 1 ? "ies" : "y", (long long)(best < 0 ? 0 : best), nc + 1);
    rc = WF_EXIT_UNSUPPORTED;
  }
  cuts[0] = 0, cuts[N] = n;
  for (int j = 1, lo = 0; j < N && !rc; j++) { /* candidate lo .. nc - (N - j): room for the rest */
    int64_t target = total * j / N;
    int pick = lo;
    for (int c = lo; c <= nc - (N - j); c++) {
      int64_t a = cum[cand[c]] - target, b = cum[cand[pick]] - target;
      if ((a < 0 ? -a : a) < (b < 0 ? -b : b)) pick = c;
    }
    cuts[j] = cand[pick];
    lo = pick + 1;
  }
  free(bytes), free(cnt), free(cum), free(depops), free(cand);
  return rc;
}

/* The values carried over cut p, in value order; returns how many (vs may be NULL). */
static int carries(const graph *g, int p, wf_value *vs) {
  int k = 0;
  for (wf_value v = 1; v < g->nv; v++)
    if (carried(g, v, p)) {
      if (vs) vs[k] = v;
      k++;
    }
  return k;
}

static int is_returned(const graph *g, wf_value v) {
  for (int i = 0; i < g->ret->n_operands; i++)
    if (g->ret->operands[i] == v) return 1;
  return 0;
}

/* Names every value carried over any cut pipe_<j> (a model output keeps its name), the same
 * in every import of the model. */
static void name_carries(graph *g, const int *cuts, int N) {
  int j = 0;
  char name[32];
  for (wf_value v = 1; v < g->nv; v++) {
    int any = 0;
    for (int k = 1; k < N && !any; k++) any = carried(g, v, cuts[k]);
    if (!any || is_returned(g, v)) continue;
    snprintf(name, sizeof name, "pipe_%d", j++);
    wf_value_set_name(g->f, v, name);
  }
}

/* Cuts the module down to stage k: the ops [cuts[k], cuts[k+1]), those before that compute
 * from constants alone, arguments for what is carried in, results for what is carried out. */
static void cut_stage(graph *g, const int *cuts, int k, int N) {
  wf_func *f = g->f;
  int lo = cuts[k], hi = cuts[k + 1];
  int nin = carries(g, lo, NULL), nout = k + 1 < N ? carries(g, hi, NULL) : g->ret->n_operands;
  wf_value *in = malloc(((size_t)nin + 1) * sizeof *in), *out = malloc(((size_t)nout + 1) * sizeof *out);
  wf_value *map = malloc(g->nv * sizeof *map);
  WF_ASSERT(in && out && map);
  for (wf_value v = 0; v < g->nv; v++) map[v] = v;
  if (k > 0) carries(g, lo, in);
  if (k + 1 < N) carries(g, hi, out);
  else memcpy(out, g->ret->operands, (size_t)nout * sizeof *out);
  for (int i = 0; i < nin && k > 0; i++) {
    wf_value v = in[i];
    wf_type t = f->values[v].type;
    char name[256];
    snprintf(name, sizeof name, "%s", wf_str(f->module, f->values[v].name));
    f->values[v].name = 0; /* its definition leaves with the earlier stage */
    map[v] = wf_func_add_arg(f, t, name);
    wf_value_replace_uses(f, v, map[v]);
  }
  for (int i = 0; i < g->n; i++) {
    wf_op *op = g->ops[i];
    int d = 0;
    for (int r = 0; r < op->n_results; r++) d |= g->dep[op->results[r]];
    if (i >= hi || (i < lo && d)) wf_op_unlink(f, op);
  }
  wf_type *rt = malloc(((size_t)nout + 1) * sizeof *rt);
  WF_ASSERT(rt);
  for (int i = 0; i < nout; i++) out[i] = map[out[i]], rt[i] = f->values[out[i]].type;
  wf_op *ret = wf_op_new(f, WF_OP_RETURN, nout, out, 0, NULL, g->ret->loc);
  wf_op_insert_before(f, g->ret, ret);
  wf_op_unlink(f, g->ret);
  wf_func_set_result_types(f, nout, rt);
  wf_func_remove_dead_ops(f);
  int j = 0; /* the model inputs this stage does not read */
  for (int i = 0; i < f->n_args; i++) {
    wf_value a = f->args[i];
    if (!wf_value_use_count(f, a)) continue;
    f->values[a].index = j;
    f->args[j++] = a;
  }
  f->n_args = j;
  wf_module_remove_unused_globals(f->module);
  free(in), free(out), free(map), free(rt);
}

/* The dim of t split over the rows, or -1. */
static int row_dim(const wf_type *t) {
  for (int d = 0; d < t->rank && d < t->layout.rank; d++)
    if (t->layout.dims[d].split == WF_AXIS_Y) return d;
  return -1;
}

/* The dim a transfer shifts t along: its row-split dim, else (a value every row of the band
 * holds whole) its last unsplit dim of size 1 before the last dim, carried as one copy per
 * row (*copies = 1); -1 when there is neither. */
static int carry_dim(const wf_type *t, int *copies) {
  int d = row_dim(t);
  *copies = d < 0;
  for (int e = t->rank - 1; e >= 0 && d < 0; e--)
    if (t->dims[e] == 1 && e < t->layout.rank && t->layout.dims[e].split == WF_AXIS_NONE && e != t->rank - 1) d = e;
  return d;
}

/* Whether a and b split alike, but for dim `except` (-1: none). */
static int same_splits(const wf_type *a, const wf_type *b, int except) {
  if (a->rank != b->rank || a->layout.rank != b->layout.rank) return 0;
  for (int d = 0; d < a->layout.rank; d++)
    if (d != except && a->layout.dims[d].split != b->layout.dims[d].split) return 0;
  return 1;
}

static const wf_type *find_named(const wf_func *f, const char *name, int result) {
  if (result) {
    const wf_op *ret = wf_func_return(f);
    for (int i = 0; ret && i < ret->n_operands; i++)
      if (!strcmp(wf_str(f->module, f->values[ret->operands[i]].name), name)) return &f->values[ret->operands[i]].type;
    return NULL;
  }
  for (int i = 0; i < f->n_args; i++)
    if (!strcmp(wf_str(f->module, f->values[f->args[i]].name), name)) return &f->values[f->args[i]].type;
  return NULL;
}

static void set_mesh(wf_cli *c, int w, int h) {
  char mesh[32];
  snprintf(mesh, sizeof mesh, "%dx%d", w, h);
  WF_ASSERT(!wf_target_set_mesh(&c->target, mesh));
}

/* Compiles transfer k (stage k-1's results `prev`, partitioned, onto band k) into dir. */
static int compile_transfer(wf_cli *c, const wf_pipe_compile *pc, const wf_func *prev, const wf_func *next, int k,
                            int bw, int bh, const char *dir) {
  const wf_op *ret = wf_func_return(prev);
  char *args = NULL, *body = NULL, *rets = NULL, *names = NULL, *text = NULL;
  size_t na = 0, nb = 0, nr = 0, nn = 0, tn = 0;
  FILE *fa = open_memstream(&args, &na), *fb = open_memstream(&body, &nb), *fr = open_memstream(&rets, &nr);
  FILE *fn = open_memstream(&names, &nn);
  WF_ASSERT(fa && fb && fr && fn);
  int rc = 0;
  for (int i = 0; i < ret->n_operands && !rc; i++) {
    const wf_value_info *vi = &prev->values[ret->operands[i]];
    const char *name = wf_str(prev->module, vi->name);
    const wf_type *t = &vi->type, *u = find_named(next, name, 0);
    int copies, d = carry_dim(t, &copies);
    if (!u || !same_splits(t, u, -1) || d < 0) {
      wf_error(WF_LOC_NONE, "--pipeline: stage %d's result '%s' %s; it cannot be carried onto band %d over the fabric",
               k - 1, name,
               !u    ? "is not an argument of the next stage"
               : d < 0 ? "is neither split over the band's rows nor held whole with a dim of size 1 (a shift "
                         "along the rows moves it)"
                       : "is laid out differently by the next stage",
               k);
      rc = WF_EXIT_UNSUPPORTED;
      break;
    }
    /* the type with dim d padded to whole blocks of the band and doubled (a copy per row) */
    int64_t P = copies ? bh : (int64_t)bh * ((t->dims[d] + bh - 1) / bh);
    char ty[320];
    int sn = snprintf(ty, sizeof ty, "%s[", wf_dtype_name(t->dtype));
    for (int e = 0; e < t->rank; e++)
      sn += snprintf(ty + sn, sizeof ty - (size_t)sn, "%s%lld", e ? ", " : "", (long long)(e == d ? 2 * P : t->dims[e]));
    snprintf(ty + sn, sizeof ty - (size_t)sn, "]");
    fprintf(fa, "%s%%%s: %s", i ? ", " : "", name, ty);
    fprintf(fb, "    %%%s_next = shift(%%%s) {axis = %d, by = %lld} : %s\n", name, name, d, (long long)P, ty);
    fprintf(fr, "%s%s", i ? ", " : "", ty);
    fprintf(fn, "%s%%%s_next", i ? ", " : "", name);
  }
  fclose(fa), fclose(fb), fclose(fr), fclose(fn);
  FILE *ft = open_memstream(&text, &tn);
  WF_ASSERT(ft);
  fprintf(ft, "module @transfer%d {\n  func @main(%s) -> (%s) {\n%s    return %s\n  }\n}\n", k, args, rets, body, names);
  fclose(ft);
  free(args), free(body), free(rets), free(names);
  wf_module *m = rc ? NULL : wf_parse_string(text, "the pipeline's transfer");
  free(text);
  if (!rc && !m) rc = WF_EXIT_UNSUPPORTED;
  wf_pipeline *pl = rc ? NULL : wf_cli_parse_pipeline(c, "partition");
  if (!rc && !pl) rc = WF_EXIT_UNSUPPORTED;
  int pw = c->target.mesh_w, ph = c->target.mesh_h;
  set_mesh(c, bw, 2 * bh);
  if (!rc) rc = wf_verify_module(m) ? WF_EXIT_UNSUPPORTED : wf_pipeline_run(pl, m, &c->pm);
  if (!rc) { /* the transfer's first band holds the stage's blocks */
    wf_func *f = main_func(m);
    for (int i = 0; i < f->n_args && !rc; i++) {
      const wf_value_info *vi = &f->values[f->args[i]];
      const wf_type *t = find_named(prev, wf_str(m, vi->name), 1);
      int copies, d = t ? carry_dim(t, &copies) : -1;
      if (!t || !same_splits(t, &vi->type, copies ? d : -1) || row_dim(&vi->type) != d) {
        wf_error(WF_LOC_NONE, "--pipeline: transfer %d lays '%s' out unlike stage %d", k, wf_str(m, vi->name), k - 1);
        rc = WF_EXIT_UNSUPPORTED;
      }
    }
  }
  if (!rc && wf_mkdir_p(dir)) rc = WF_EXIT_IO;
  if (!rc) rc = wf_backend_emit_plan(m, &c->target, dir, &pc->po);
  set_mesh(c, pw, ph);
  if (m) wf_module_free(m);
  wf_pipeline_free(pl);
  return rc;
}

/* The manifest's "pipeline" object, from the named graph; NULL after reporting a name it
 * cannot carry. */
static char *pipeline_json(const graph *g, int N, int w, int h, const int *cuts) {
  char *s = NULL;
  size_t sn = 0;
  FILE *f = open_memstream(&s, &sn);
  WF_ASSERT(f);
  int bh = h / N, bad = 0;
  wf_value *vs = malloc(g->nv * sizeof *vs);
  WF_ASSERT(vs);
  fprintf(f, "{\"pipeline\": {\"mesh\": [%d, %d], \"rows_per_stage\": %d, \"stages\": [", w, h, bh);
  for (int k = 0; k < N; k++) {
    fprintf(f, "%s{\"plan\": \"", k ? ", " : "");
    if (k) fprintf(f, "pipeline/stage%d", k);
    fprintf(f, "\", \"rows\": [%d, %d], \"ops\": [%d, %d]", k * bh, (k + 1) * bh, cuts[k], cuts[k + 1]);
    if (k) {
      int nc = carries(g, cuts[k], vs);
      fprintf(f, ", \"transfer\": \"pipeline/transfer%d\", \"carries\": [", k);
      for (int i = 0; i < nc; i++) {
        const char *name = wf_str(g->f->module, g->f->values[vs[i]].name);
        bad |= !name[0] || strpbrk(name, "\"\\%") != NULL;
        fprintf(f, "%s{\"name\": \"%s\", \"moved\": \"%s_next\"}", i ? ", " : "", name, name);
      }
      fprintf(f, "]");
    }
    fprintf(f, "}");
  }
  fprintf(f, "]}}");
  fclose(f);
  free(vs);
  if (bad) {
    wf_error(WF_LOC_NONE, "--pipeline: a model output carried between stages has a name a plan cannot hold");
    free(s);
    return NULL;
  }
  return s;
}

/* Imports the model again and cuts stage k out of it: the graph must be the one the cuts
 * were chosen on. */
static wf_module *load_stage(const wf_pipe_compile *pc, const int *cuts, int k, int n_ops, uint32_t nv, int *rc) {
  wf_module *m = pc->load(pc->user, rc);
  graph g;
  if (*rc || (*rc = graph_build(m, &g))) return m;
  if (g.n != n_ops || g.nv != nv) {
    wf_error(WF_LOC_NONE, "--pipeline: the model imported again differs (%d ops, was %d)", g.n, n_ops);
    *rc = WF_EXIT_UNSUPPORTED;
  } else {
    name_carries(&g, cuts, pc->stages);
    cut_stage(&g, cuts, k, pc->stages);
  }
  graph_free(&g);
  return m;
}

/* The comma-separated pipeline text without the elements that are pass `name` (malloc'd). */
static char *without_pass(const char *text, const char *name) {
  size_t len = strlen(text), nl = strlen(name);
  char *out = malloc(len + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (const char *p = text; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (!(n == nl && !strncmp(p, name, nl))) {
      if (o) out[o++] = ',';
      memcpy(out + o, p, n);
      o += n;
    }
    p += n + (e ? 1 : 0);
  }
  out[o] = 0;
  return out;
}

int wf_waferc_compile_pipeline(wf_cli *c, const wf_pipe_compile *pc) {
  int N = pc->stages, W = c->target.mesh_w, H = c->target.mesh_h, rc = 0;
  WF_ASSERT(N >= 2 && H % N == 0);
  int bh = H / N, *cuts = calloc((size_t)N + 1, sizeof *cuts), n_ops = 0;
  uint32_t nv = 0;
  WF_ASSERT(cuts);
  set_mesh(c, W, bh);
  wf_progress("cutting the model into %d stages of %dx%d", N, W, bh);
  char *extra = NULL;
  wf_module *m = pc->load(pc->user, &rc); /* the graph the cuts are chosen on */
  graph g0;
  if (!rc && !(rc = graph_build(m, &g0))) {
    if (!(rc = choose_cuts(&g0, N, cuts))) {
      n_ops = g0.n, nv = g0.nv;
      name_carries(&g0, cuts, N);
      if (!(extra = pipeline_json(&g0, N, W, H, cuts))) rc = WF_EXIT_UNSUPPORTED;
    }
    graph_free(&g0);
  }
  if (m) wf_module_free(m);
  wf_progress_done();
  wf_pipeline *post = rc ? NULL : wf_cli_parse_pipeline(c, pc->post);
  /* Stages before the last: without moe-routes, whose router outputs would be results that
   * no later stage takes (every result of such a stage is carried to the next) */
  char *mid_text = without_pass(pc->post, "moe-routes");
  wf_pipeline *mid = rc || !mid_text ? NULL : wf_cli_parse_pipeline(c, mid_text);
  free(mid_text);
  if (!rc && (!post || !mid)) rc = WF_EXIT_USAGE;
  char *stage = rc ? NULL : wf_plan_stage_begin(pc->out_dir);
  if (!rc && !stage) rc = WF_EXIT_IO;
  wf_module *prev = NULL;
  for (int k = 0; k < N && !rc; k++) { /* two stages in memory at most */
    wf_progress("compiling stage %d of %d (ops %d .. %d) for its %dx%d band", k + 1, N, cuts[k], cuts[k + 1] - 1, W, bh);
    m = load_stage(pc, cuts, k, n_ops, nv, &rc);
    if (!rc) rc = wf_verify_module(m) ? WF_EXIT_UNSUPPORTED : wf_pipeline_run(k + 1 < N ? mid : post, m, &c->pm);
    char dir[64];
    snprintf(dir, sizeof dir, "pipeline/stage%d", k);
    char *sdir = k ? wf_path_join(stage, dir) : strdup(stage);
    wf_plan_opts po = pc->po;
    po.manifest_extra = k ? NULL : extra;
    if (!rc) rc = wf_mkdir_p(sdir) ? WF_EXIT_IO : wf_backend_emit_plan(m, &c->target, sdir, &po);
    free(sdir);
    wf_progress_done();
    if (rc == WF_EXIT_NOFIT)
      wf_note(WF_LOC_NONE, "stage %d (ops %d .. %d) does not fit its %dx%d band", k, cuts[k], cuts[k + 1] - 1, W, bh);
    if (!rc && k) {
      snprintf(dir, sizeof dir, "pipeline/transfer%d", k);
      char *tdir = wf_path_join(stage, dir);
      wf_progress("compiling transfer %d of %d for the %dx%d of two bands", k, N - 1, W, 2 * bh);
      rc = compile_transfer(c, pc, main_func(prev), main_func(m), k, W, bh, tdir);
      wf_progress_done();
      free(tdir);
    }
    if (prev) wf_module_free(prev);
    prev = m;
    m = NULL;
  }
  if (prev) wf_module_free(prev);
  if (rc == WF_EXIT_NOFIT)
    wf_note(WF_LOC_NONE, "more stages (--pipeline=%d, on a mesh of a multiple of its rows) or a larger --mesh give "
                         "each stage fewer layers or more PEs", N * 2);
  if (stage) {
    if (rc) wf_plan_stage_abort(stage);
    else rc = wf_plan_stage_commit(stage, pc->out_dir);
  }
  set_mesh(c, W, H);
  if (post) wf_pipeline_free(post);
  if (mid) wf_pipeline_free(mid);
  free(extra);
  free(cuts);
  return rc;
}
