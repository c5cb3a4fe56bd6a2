/* waferrun --generate=N (generate.h). The loop follows the manifest's "generate" object and
 * nothing else; every mismatch between the prefill plan, the decode plan and that object is
 * reported before the first cycle is simulated, naming the manifest and the tensor, so that a
 * compiler-side change shows up as one clear message rather than as wrong tokens. */
#include "generate.h"
#include "runtime/heatmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/support/gemm_skew.h"
#include "runtime/gen_report.h"
#include "runtime/jit.h"
#include "waferc/diag.h"
#include "waferc/kvcache.h"
#include "waferc/tensor.h"

typedef struct gen {
  const wf_plan *pre, *dec, *sw;     /* sw: the switch plan, NULL when decode runs on the prefill's region */
  const wf_plan_generate *G;
  const wf_gen_opts *o;
  char pre_manifest[1100], dec_manifest[1600], sw_manifest[1600];
  wf_jit *pre_jit, *dec_jit, *sw_jit;
  int *pre_cache, *dec_in, *dec_out; /* per cache pair: tensor indices */
  int *sw_in, *sw_out;               /* and the switch plan's */
  int *mv_pre, *mv_dec;              /* per switch_weights entry: the prefill's and decode's weight */
  float **moved;                     /* ... and the decode weight the switch built (after it ran) */
  int pre_next, dec_ids, dec_pos, dec_next;
  int64_t Lb;                        /* prompt tokens per row of PEs in the prefill cache */
  int n_rows;                        /* entries of the row counts: the tallest decode region */
} gen;

static int find(const wf_plan_tensor *ts, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(ts[i].name, name)) return i;
  return -1;
}

static int is_int(const wf_plan_tensor *t) { return t->dtype == WF_I64 || t->dtype == WF_I32; }

static int64_t numel(const wf_plan_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) n *= t->dims[d];
  return n;
}

/* "f32[1, 8, 16]" */
static const char *shape_str(const wf_plan_tensor *t, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%s[", wf_dtype_name(t->dtype));
  for (int d = 0; d < t->rank && n < (int)cap; d++)
    n += snprintf(buf + n, cap - (size_t)n, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
  if (n < (int)cap) snprintf(buf + n, cap - (size_t)n, "]");
  return buf;
}

/* The decode plan's tensor `name` as an input (want_out 0) or output: its index, or -1 after
 * reporting. */
static int dec_tensor(gen *g, const char *name, int want_out, const char *key) {
  const wf_plan *d = g->dec;
  int i = want_out ? find(d->outputs, d->n_outputs, name) : find(d->inputs, d->n_inputs, name);
  if (i < 0)
    wf_error_at(g->dec_manifest, "the decode plan has no %s '%s' (named by %s's generate.%s)",
                want_out ? "output" : "input", name, g->pre_manifest, key);
  return i;
}

/* An integer tensor of one element (a token id, a position). */
static int check_scalar_id(gen *g, const wf_plan_tensor *t, const char *what) {
  char s[128];
  if (is_int(t) && numel(t) == 1) return 0;
  wf_error_at(g->dec_manifest, "%s '%s' is %s; the generate contract wants an integer [1, 1]", what, t->name,
              shape_str(t, s, sizeof s));
  return -1;
}

/* Cache c through the switch plan: its input caches[c].prefill is the prefill's output a, its
 * output caches[c].via holds the decode cache b's blocks in its corner ([B, >= rows slots, >=
 * b's columns]). */
static int check_switch(gen *g, int c, const wf_plan_tensor *a, const wf_plan_tensor *b) {
  const wf_plan *s = g->sw;
  const wf_plan_cache_pair *cp = &g->G->caches[c];
  char s1[128], s2[128];
  g->sw_in[c] = find(s->inputs, s->n_inputs, cp->prefill);
  g->sw_out[c] = find(s->outputs, s->n_outputs, cp->via);
  if (g->sw_in[c] < 0 || g->sw_out[c] < 0) {
    wf_error_at(g->sw_manifest, "the switch plan has no %s '%s' (named by %s's generate.caches[%d])",
                g->sw_in[c] < 0 ? "input" : "output", g->sw_in[c] < 0 ? cp->prefill : cp->via, g->pre_manifest, c);
    return -1;
  }
  const wf_plan_tensor *i = &s->inputs[g->sw_in[c]], *o = &s->outputs[g->sw_out[c]];
  if (i->dtype != a->dtype || i->rank != a->rank || memcmp(i->dims, a->dims, sizeof a->dims) ||
      s->mesh_w != g->pre->mesh_w || s->mesh_h != g->pre->mesh_h) {
    wf_error_at(g->sw_manifest, "the switch's input '%s' is %s on %dx%d; the prefill's output is %s on %dx%d", i->name,
                shape_str(i, s1, sizeof s1), s->mesh_w, s->mesh_h, shape_str(a, s2, sizeof s2), g->pre->mesh_w,
                g->pre->mesh_h);
    return -1;
  }
  if (o->dtype != WF_F32 || o->rank != 3 || b->rank != 3 || o->dims[0] != b->dims[0] || o->dims[1] < b->dims[1] ||
      o->dims[2] < b->dims[2] || g->dec->mesh_w > s->mesh_w || g->dec->mesh_h > s->mesh_h) {
    wf_error_at(g->sw_manifest, "the switch's output '%s' is %s on %dx%d; it cannot hold the decode cache '%s' (%s) "
                "of the %dx%d decode region in its corner", o->name, shape_str(o, s1, sizeof s1), s->mesh_w,
                s->mesh_h, b->name, shape_str(b, s2, sizeof s2), g->dec->mesh_w, g->dec->mesh_h);
    return -1;
  }
  return 0;
}

/* The switch plan's weight moves against the two plans: each names a prefill weight the
 * same shape as its input, and a decode weight its output holds in the corner; every input
 * of the switch is a cache or a moved weight. */
static int check_moves(gen *g) {
  const wf_plan *s = g->sw;
  char s1[128], s2[128];
  for (int i = 0; i < s->n_moves; i++) {
    const wf_plan_weight_move *m = &s->moves[i];
    g->mv_pre[i] = find(g->pre->weights, g->pre->n_weights, m->prefill);
    g->mv_dec[i] = find(g->dec->weights, g->dec->n_weights, m->decode);
    if (g->mv_pre[i] < 0 || g->mv_dec[i] < 0) {
      wf_error_at(g->sw_manifest, "switch_weights[%d]: the %s plan has no weight '%s'", i,
                  g->mv_pre[i] < 0 ? "prefill" : "decode", g->mv_pre[i] < 0 ? m->prefill : m->decode);
      return -1;
    }
    const wf_plan_tensor *a = &g->pre->weights[g->mv_pre[i]], *b = &g->dec->weights[g->mv_dec[i]];
    const wf_plan_tensor *in = &s->inputs[m->input], *out = &s->outputs[m->output];
    if (a->rank != 2 || memcmp(in->dims, a->dims, 2 * sizeof *a->dims)) {
      wf_error_at(g->sw_manifest, "switch_weights[%d]: input '%s' is %s; the prefill's weight '%s' is %s", i,
                  in->name, shape_str(in, s1, sizeof s1), a->name, shape_str(a, s2, sizeof s2));
      return -1;
    }
    if (b->rank != 2 || out->dims[0] < b->dims[0] || out->dims[1] < b->dims[1]) {
      wf_error_at(g->sw_manifest, "switch_weights[%d]: output '%s' is %s; it cannot hold the decode weight '%s' (%s) "
                  "in its corner", i, out->name, shape_str(out, s1, sizeof s1), b->name, shape_str(b, s2, sizeof s2));
      return -1;
    }
  }
  for (int i = 0; i < s->n_inputs; i++) {
    int bound = 0;
    for (int c = 0; c < g->G->n_caches && !bound; c++) bound = i == g->sw_in[c];
    for (int k = 0; k < s->n_moves && !bound; k++) bound = i == s->moves[k].input;
    if (!bound) {
      wf_error_at(g->sw_manifest, "switch input '%s' is neither a cache of %s's generate object nor a moved weight",
                  s->inputs[i].name, g->pre_manifest);
      return -1;
    }
  }
  return 0;
}

/* generate.shared_weights: a weight the budgets count once must be the same in both phases
 * (docs/generation.md, "One region"); the simulator loads each phase's copy, so a plan whose
 * copies differ would run something the wafer could not. */
static int check_shared(const gen *g) {
  const wf_plan *p = g->pre, *d = g->dec;
  for (int i = 0; i < g->G->n_shared; i++) {
    const char *name = g->G->shared[i];
    int wp = find(p->weights, p->n_weights, name), wd = find(d->weights, d->n_weights, name); /* wp: at load */
    const wf_plan_tensor *a = &p->weights[wp], *b = wd >= 0 ? &d->weights[wd] : NULL;
    const char *why = NULL;
    if (!b) why = "the decode step has no weight of that name";
    else if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->dims, b->dims, sizeof a->dims) ||
             memcmp(a->padded, b->padded, sizeof a->padded) || memcmp(a->split, b->split, sizeof a->split) ||
             !wf_plan_layouts_match(a->layout, b->layout))
      why = "the two copies differ in shape, padding or layout";
    else if (a->skew_ring != WF_SKEW_NONE || b->skew_ring != WF_SKEW_NONE)
      why = "a copy is pre-skewed";
    else if (p->regions[a->region].w != d->regions[b->region].w || p->regions[a->region].h != d->regions[b->region].h)
      why = "the two copies are on regions of different sizes";
    else if (a->bytes != b->bytes || memcmp(p->weight_data + a->offset, d->weight_data + b->offset, (size_t)a->bytes))
      why = "the two copies hold different bytes";
    if (why) {
      wf_error_at(g->pre_manifest,
                  "generate.shared_weights: '%s' is held once by both phases, but %s (a plan edited or damaged "
                  "since waferc wrote it; compile it again)", name, why);
      return -1;
    }
  }
  return 0;
}

/* The prefill and decode plans against the "generate" object (docs/plan-format.md). */
static int check_plans(gen *g) {
  if (check_shared(g)) return -1;
  const wf_plan_generate *G = g->G;
  const wf_plan *p = g->pre, *d = g->dec;
  char s1[128], s2[128];
  int64_t L = G->prompt_length;
  const wf_plan_tensor *prompt = &p->inputs[find(p->inputs, p->n_inputs, G->prompt_input)]; /* checked at load */
  if (!is_int(prompt) || prompt->rank != 2 || prompt->dims[0] != 1 || prompt->dims[1] != L) {
    wf_error_at(g->pre_manifest, "the prompt input '%s' is %s; generate.prompt_length %lld wants an integer [1, %lld]",
                prompt->name, shape_str(prompt, s1, sizeof s1), (long long)L, (long long)L);
    return -1;
  }
  g->pre_next = find(p->outputs, p->n_outputs, G->prefill_next);
  const wf_plan_tensor *nx = &p->outputs[g->pre_next];
  if (!is_int(nx) || numel(nx) != L) {
    wf_error_at(g->pre_manifest, "the prefill's next-token output '%s' is %s; it should be an integer [1, %lld]",
                nx->name, shape_str(nx, s1, sizeof s1), (long long)L);
    return -1;
  }
  if ((g->dec_ids = dec_tensor(g, G->decode_ids, 0, "decode_ids")) < 0 ||
      (g->dec_pos = dec_tensor(g, G->decode_position, 0, "decode_position")) < 0 ||
      (g->dec_next = dec_tensor(g, G->decode_next, 1, "decode_next")) < 0 ||
      check_scalar_id(g, &d->inputs[g->dec_ids], "the token input") ||
      check_scalar_id(g, &d->inputs[g->dec_pos], "the position input") ||
      check_scalar_id(g, &d->outputs[g->dec_next], "the next-token output"))
    return -1;
  g->n_rows = G->rows;
  for (int r = 0; r < d->n_regions; r++)
    if (d->regions[r].h > g->n_rows) g->n_rows = d->regions[r].h;
  g->Lb = -1;
  for (int c = 0; c < G->n_caches; c++) {
    const wf_plan_cache_pair *cp = &G->caches[c];
    g->pre_cache[c] = find(p->outputs, p->n_outputs, cp->prefill); /* checked at load */
    if ((g->dec_in[c] = dec_tensor(g, cp->decode, 0, "caches[].decode")) < 0 ||
        (g->dec_out[c] = dec_tensor(g, cp->decode, 1, "caches[].decode")) < 0)
      return -1;
    const wf_plan_tensor *a = &p->outputs[g->pre_cache[c]], *b = &d->inputs[g->dec_in[c]],
                         *b2 = &d->outputs[g->dec_out[c]];
    if (a->dtype != WF_F32 || a->rank != 3 || a->dims[1] != L) {
      wf_error_at(g->pre_manifest,
                  "generate.caches[%d]: the prefill cache '%s' is %s; the contract wants f32 [B, %lld, E]", c,
                  a->name, shape_str(a, s1, sizeof s1), (long long)L);
      return -1;
    }
    int64_t want = (int64_t)G->rows * G->slots_per_row;
    if (g->sw && check_switch(g, c, a, b)) return -1;
    if (b->dtype != WF_F32 || b->rank != 3 || b->dims[0] != a->dims[0] || b->dims[1] != want ||
        (!g->sw && b->dims[2] != a->dims[2])) {
      wf_error_at(g->dec_manifest, "the decode cache '%s' is %s; with the prefill's '%s' (%s), %d rows and %d slots "
                                   "per row it should be f32[%lld, %lld, %lld]",
                  b->name, shape_str(b, s1, sizeof s1), a->name, shape_str(a, s2, sizeof s2), G->rows,
                  G->slots_per_row, (long long)a->dims[0], (long long)want, (long long)a->dims[2]);
      return -1;
    }
    if (b2->dtype != b->dtype || b2->rank != 3 || memcmp(b2->dims, b->dims, sizeof b->dims)) {
      wf_error_at(g->dec_manifest, "the decode cache '%s' is %s as an input but %s as an output", b->name,
                  shape_str(b, s1, sizeof s1), shape_str(b2, s2, sizeof s2));
      return -1;
    }
    if ((!g->sw && p->regions[a->region].h != G->rows) || d->regions[b->region].h != G->rows) {
      wf_error_at(g->dec_manifest,
                  "cache '%s': generate.rows is %d but its regions have %d (prefill) and %d (decode) rows", b->name,
                  G->rows, p->regions[a->region].h, d->regions[b->region].h);
      return -1;
    }
    if (g->sw) { /* the switch placed ceil(L / rows) tokens a decode row (kv_switch) */
      g->Lb = (L + G->rows - 1) / G->rows;
      continue;
    }
    int64_t padded = a->padded[1] ? a->padded[1] : a->dims[1];
    /* A one-token prompt is not split (a dim of 1 never is): every row holds it, and the
     * cache takes row 0's copy, as ceil(1 / rows) = 1 token a row says (kvcache.h). */
    if (a->split[1] != WF_AXIS_Y && a->dims[1] == 1) padded = G->rows;
    if (padded % G->rows) {
      wf_error_at(g->pre_manifest, "prefill cache '%s': its padded length %lld is not a multiple of generate.rows %d",
                  a->name, (long long)padded, G->rows);
      return -1;
    }
    int64_t lb = padded / G->rows;
    if (g->Lb >= 0 && lb != g->Lb) {
      wf_error_at(g->pre_manifest, "prefill cache '%s' holds %lld tokens per row, '%s' %lld: the caches disagree",
                  a->name, (long long)lb, p->outputs[g->pre_cache[0]].name, (long long)g->Lb);
      return -1;
    }
    g->Lb = lb;
  }
  for (int y = 0; y < G->rows; y++) {
    int64_t cnt = L - y * g->Lb;
    cnt = cnt < 0 ? 0 : cnt > g->Lb ? g->Lb : cnt;
    if (cnt > G->slots_per_row) {
      wf_error_at(g->pre_manifest, "prefill row %d holds %lld prompt tokens but a decode row has %d slots "
                                   "(generate.slots_per_row)", y, (long long)cnt, G->slots_per_row);
      return -1;
    }
  }
  if (g->sw && check_moves(g)) return -1;
  /* Every decode input is bound by the loop. */
  for (int i = 0; i < d->n_inputs; i++) {
    int bound = i == g->dec_ids || i == g->dec_pos;
    for (int c = 0; c < G->n_caches && !bound; c++) bound = i == g->dec_in[c];
    if (!bound) {
      wf_error_at(g->dec_manifest, "decode input '%s' is neither the token, the position nor a cache of %s's "
                                   "generate object", d->inputs[i].name, g->pre_manifest);
      return -1;
    }
  }
  return 0;
}

static wf_tensor *id_tensor(const wf_plan_tensor *t, int64_t v) {
  wf_tensor *x = wf_tensor_new(t->dtype, t->rank, t->dims);
  WF_ASSERT(x);
  if (t->dtype == WF_I64) ((int64_t *)x->data)[0] = v;
  else ((int32_t *)x->data)[0] = (int32_t)v;
  return x;
}

static int64_t id_at(const wf_tensor *t, int64_t i) {
  return t->dtype == WF_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

/* A new simulator for one run of plan p, with its JIT's kernels. */
static wf_sim *new_sim(const wf_plan *p, wf_jit *jit, const wf_gen_opts *o) {
  wf_sim *s = wf_sim_new(p, &o->so);
  if (jit) wf_sim_set_compute_hook(s, wf_jit_compute, jit);
  return s;
}

/* A token the next step can feed: an argmax that found no index (NaN logits) gives -1. */
static int check_token(gen *g, int64_t tok, int64_t step) {
  const wf_plan_tensor *ids = &g->dec->inputs[g->dec_ids];
  if (tok >= 0 && (ids->index_bound <= 0 || tok < ids->index_bound)) return 0;
  char phase[48];
  if (step) snprintf(phase, sizeof phase, "decode step %lld", (long long)step);
  else snprintf(phase, sizeof phase, "the prefill");
  wf_error_at("waferrun", "%s produced token %lld, outside the vocabulary [0, %lld) (NaN logits give -1)", phase,
              (long long)tok, (long long)(ids->index_bound > 0 ? ids->index_bound : 1 << 24));
  return WF_EXIT_RUNTIME;
}

/* Output i of a finished run, the same on every rank under mpirun (rank 0's: wf_sim_mpi_share),
 * since the next run's inputs are made of it. */
static wf_tensor *output(wf_sim *s, int i) {
  wf_tensor *t = wf_sim_output(s, i);
  wf_sim_mpi_share(t);
  return t;
}

/* Step 1: the prefill. tokens[0] and the prefill caches. */
static int run_prefill(gen *g, wf_tensor **pre_caches, int64_t *tokens, int64_t *cycles) {
  const wf_plan *p = g->pre;
  const wf_gen_opts *o = g->o;
  int rc = 0;
  wf_sim *s = new_sim(p, g->pre_jit, o);
  for (int i = 0; i < o->n_in && !rc; i++) {
    int k = find(p->inputs, p->n_inputs, o->in[i].name); /* checked */
    wf_tensor *t = wf_run_make_input(&p->inputs[k], o->in[i].spec, &rc);
    if (t && wf_sim_set_input(s, o->in[i].name, t)) rc = WF_EXIT_INPUT;
    wf_tensor_free(t);
  }
  if (!rc && (rc = wf_sim_run(s)))
    wf_error_at(g->pre_manifest, "the prefill run failed (exit %d); run `waferrun %s` alone to look at it", rc, p->dir);
  if (!rc) {
    *cycles = wf_sim_cycles(s);
    wf_tensor *nx = output(s, g->pre_next);
    tokens[0] = id_at(nx, g->G->prompt_length - 1);
    wf_tensor_free(nx);
    for (int c = 0; c < g->G->n_caches; c++) pre_caches[c] = output(s, g->pre_cache[c]);
    rc = check_token(g, tokens[0], 0);
  }
  wf_sim_free(s);
  return rc;
}

/* Step 2, the switch: prefill row y's cnt[y] tokens go to the first cnt[y] slots of decode
 * row y (dec[b, y*cap + j, :] = pre[b, y*Lb + j, :]); the rest is zero. */
static wf_tensor *switch_cache(const gen *g, const wf_tensor *pre, const wf_plan_tensor *dt, const int *cnt) {
  wf_tensor *d = wf_tensor_new(WF_F32, dt->rank, dt->dims);
  WF_ASSERT(d);
  memset(d->data, 0, (size_t)wf_tensor_numel(d) * sizeof(float));
  int64_t B = pre->dims[0], L = pre->dims[1], E = pre->dims[2], cap = g->G->slots_per_row;
  const float *src = (const float *)pre->data;
  float *dst = (float *)d->data;
  for (int64_t b = 0; b < B; b++)
    for (int y = 0; y < g->G->rows; y++)
      for (int64_t j = 0; j < cnt[y]; j++)
        memcpy(&dst[(b * g->G->rows * cap + y * cap + j) * E], &src[(b * L + y * g->Lb + j) * E],
               (size_t)E * sizeof(float));
  return d;
}

/* The decode cache b [B, R, N] is the corner of the switch's output o [B, >= R, >= N]: the
 * blocks of the decode region's PEs, which hold them in place (the host carries each PE's
 * block from one program's symbol to the next, as one SRAM would keep it). */
static wf_tensor *corner(const wf_tensor *o, const wf_plan_tensor *b) {
  wf_tensor *d = wf_tensor_new(WF_F32, b->rank, b->dims);
  WF_ASSERT(d);
  const float *src = (const float *)o->data;
  float *dst = (float *)d->data;
  for (int64_t i = 0; i < b->dims[0]; i++)
    for (int64_t r = 0; r < b->dims[1]; r++)
      memcpy(&dst[(i * b->dims[1] + r) * b->dims[2]], &src[(i * o->dims[1] + r) * o->dims[2]],
             (size_t)b->dims[2] * sizeof(float));
  return d;
}

/* A plan's weight w as a host tensor (its data in weights.bin). */
static wf_tensor *weight_tensor(const wf_plan *p, int w) {
  const wf_plan_tensor *t = &p->weights[w];
  wf_tensor *x = wf_tensor_new(WF_F32, t->rank, t->dims);
  WF_ASSERT(x);
  memcpy(x->data, p->weight_data + t->offset, (size_t)wf_tensor_numel(x) * sizeof(float));
  return x;
}

/* The decode weight of move i that the switch's output o holds in its corner, checked against
 * the decode plan's weights.bin: the switch only moves data, so every element must be the same
 * (exit 5, naming the first that is not). */
static int take_moved(gen *g, int i, const wf_tensor *o) {
  const wf_plan_tensor *b = &g->dec->weights[g->mv_dec[i]];
  const float *want = (const float *)(g->dec->weight_data + b->offset), *src = (const float *)o->data;
  float *w = malloc((size_t)(b->dims[0] * b->dims[1]) * sizeof *w);
  WF_ASSERT(w);
  for (int64_t r = 0; r < b->dims[0]; r++)
    for (int64_t c = 0; c < b->dims[1]; c++) {
      float v = src[r * o->dims[1] + c];
      if (memcmp(&v, &want[r * b->dims[1] + c], sizeof v)) {
        wf_error_at(g->sw_manifest, "the switch built decode weight '%s' with %g at [%lld, %lld] where the decode "
                    "plan's weights.bin holds %g: the switch plan does not match the two phases' plans", b->name,
                    (double)v, (long long)r, (long long)c, (double)want[r * b->dims[1] + c]);
        free(w);
        return WF_EXIT_RUNTIME;
      }
      w[r * b->dims[1] + c] = v;
    }
  g->moved[i] = w;
  return 0;
}

/* Step 2 on regions of two sizes: the switch plan moves the prefill's caches, and the weights
 * its manifest lists, onto the decode region over the fabric; caches[] become the decode
 * caches and g->moved[] the moved decode weights. */
static int run_switch(gen *g, wf_tensor **caches, int64_t *cycles, int64_t *words) {
  const wf_plan *sp = g->sw;
  wf_sim *s = new_sim(sp, g->sw_jit, g->o);
  int rc = 0;
  for (int c = 0; c < g->G->n_caches && !rc; c++)
    if (wf_sim_set_input(s, sp->inputs[g->sw_in[c]].name, caches[c])) rc = WF_EXIT_INPUT;
  for (int i = 0; i < sp->n_moves && !rc; i++) { /* the prefill's weight, as its PEs hold it */
    wf_tensor *w = weight_tensor(g->pre, g->mv_pre[i]);
    if (wf_sim_set_input(s, sp->inputs[sp->moves[i].input].name, w)) rc = WF_EXIT_INPUT;
    wf_tensor_free(w);
  }
  if (!rc && (rc = wf_sim_run(s)))
    wf_error_at(g->sw_manifest, "the switch failed (exit %d)", rc);
  if (!rc) {
    *cycles = wf_sim_cycles(s);
    *words = wf_run_link_words(s);
    for (int c = 0; c < g->G->n_caches; c++) {
      wf_tensor *o = output(s, g->sw_out[c]);
      wf_tensor_free(caches[c]);
      caches[c] = corner(o, &g->dec->inputs[g->dec_in[c]]);
      wf_tensor_free(o);
    }
    for (int i = 0; i < sp->n_moves && !rc && g->o->so.mode == WF_SIM_FUNCTIONAL; i++) {
      wf_tensor *o = output(s, sp->moves[i].output);
      rc = take_moved(g, i, o);
      wf_tensor_free(o);
    }
  }
  wf_sim_free(s);
  return rc;
}

/* The row whose cache grows at the next step, by the rule waferc sized the cache with
 * (include/waferc/kvcache.h): shift, the bottom-most of the emptiest rows; concat, the last. */
static int grow_row(const gen *g, const int *cnt) {
  return wf_kv_grow_row(cnt, g->G->rows, !strcmp(g->G->kv_cache, "concat"));
}

/* --dump-caches DIR: DIR/<phase>/<cache>.npy and DIR/<phase>/row_counts.npy (int64
 * [rows]: the tokens each row holds), phase "switch" for the decode caches the switch builds
 * and "step_<s>" for the caches after decode step s, so that a test can set them against the
 * interpreter's cache and check the rows' balance. */
static int dump_caches(const gen *g, const char *phase, wf_tensor *const *caches, const int *cnt) {
  const char *root = g->o->dump_dir;
  if (!root || wf_sim_mpi_rank() > 0) return 0; /* under mpirun, rank 0 writes */
  char dir[4096], path[4400];
  snprintf(dir, sizeof dir, "%s/%s", root, phase);
  if ((mkdir(root, 0777) && errno != EEXIST) || (mkdir(dir, 0777) && errno != EEXIST)) {
    wf_error_at(dir, "--dump-caches: cannot create the directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  for (int c = 0; c < g->G->n_caches; c++) {
    snprintf(path, sizeof path, "%s/%s.npy", dir, g->G->caches[c].decode);
    if (wf_npy_write(path, caches[c])) return WF_EXIT_IO;
  }
  int64_t rows = g->G->rows;
  wf_tensor *t = wf_tensor_new(WF_I64, 1, &rows);
  WF_ASSERT(t);
  for (int y = 0; y < g->G->rows; y++) ((int64_t *)t->data)[y] = cnt[y];
  snprintf(path, sizeof path, "%s/row_counts.npy", dir);
  int rc = wf_npy_write(path, t) ? WF_EXIT_IO : 0;
  wf_tensor_free(t);
  return rc;
}

/* Step 3: decode steps 1..N-1, each on a fresh simulator; the caches are carried by the host
 * as the PEs' SRAM would keep them. */
static int run_decode(gen *g, wf_tensor **caches, int *cnt, int64_t *tokens, int64_t *step_cycles) {
  const wf_plan *d = g->dec;
  const wf_plan_generate *G = g->G;
  int rc = 0;
  for (int64_t st = 1; st < g->o->n && !rc; st++) {
    int R = grow_row(g, cnt);
    if (cnt[R] >= G->slots_per_row) {
      wf_error_at("waferrun", "decode step %lld: row %d's cache is full (%d slots per row, %s policy); the plan "
                              "should have refused --generate=%lld (max_new_tokens %lld)",
                  (long long)st, R, G->slots_per_row, G->kv_cache, (long long)g->o->n, (long long)G->max_new_tokens);
      return WF_EXIT_RUNTIME;
    }
    cnt[R]++;
    wf_sim *s = new_sim(d, g->dec_jit, g->o);
    for (int i = 0; g->sw && i < g->sw->n_moves; i++) /* the weights the switch built, kept in place */
      if (g->moved[i]) wf_sim_set_weight(s, g->mv_dec[i], g->moved[i]);
    if (wf_sim_set_step(s, R, cnt)) rc = WF_EXIT_RUNTIME;
    wf_tensor *ids = id_tensor(&d->inputs[g->dec_ids], tokens[st - 1]);
    wf_tensor *pos = id_tensor(&d->inputs[g->dec_pos], G->prompt_length + st - 1);
    if (!rc && (wf_sim_set_input(s, d->inputs[g->dec_ids].name, ids) ||
                wf_sim_set_input(s, d->inputs[g->dec_pos].name, pos)))
      rc = WF_EXIT_INPUT;
    wf_tensor_free(ids);
    wf_tensor_free(pos);
    for (int c = 0; c < G->n_caches && !rc; c++)
      if (wf_sim_set_input(s, d->inputs[g->dec_in[c]].name, caches[c])) rc = WF_EXIT_INPUT;
    if (!rc && (rc = wf_sim_run(s)))
      wf_error_at(g->dec_manifest, "decode step %lld failed (exit %d; grow row %d)", (long long)st, rc, R);
    if (!rc) {
      step_cycles[st - 1] = wf_sim_cycles(s);
      wf_tensor *nx = output(s, g->dec_next);
      tokens[st] = id_at(nx, 0);
      wf_tensor_free(nx);
      for (int c = 0; c < G->n_caches; c++) {
        wf_tensor_free(caches[c]);
        caches[c] = output(s, g->dec_out[c]);
      }
      rc = check_token(g, tokens[st], st);
      char phase[32];
      snprintf(phase, sizeof phase, "step_%lld", (long long)st);
      if (!rc) rc = dump_caches(g, phase, caches, cnt);
    }
    wf_sim_free(s);
    if (!rc && !g->o->quiet) wf_progress("decode step %lld/%lld", (long long)st, (long long)g->o->n - 1);
  }
  if (!g->o->quiet) wf_progress_done();
  return rc;
}

/* --output-dir: tokens.npy, and each decode cache as it stands after the last step
 * (<cache>.npy: what the PEs' SRAM holds at the end, for checking the rows' occupancy). */
static int write_outputs(const gen *g, const int64_t *tokens, wf_tensor *const *caches) {
  const char *out_dir = g->o->out_dir;
  if (mkdir(out_dir, 0777) && errno != EEXIST) {
    wf_error_at(out_dir, "cannot create the output directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  int64_t dims[2] = {1, g->o->n};
  wf_tensor *t = wf_tensor_new(WF_I64, 2, dims);
  WF_ASSERT(t);
  memcpy(t->data, tokens, (size_t)g->o->n * sizeof *tokens);
  char path[4096];
  snprintf(path, sizeof path, "%s/tokens.npy", out_dir);
  int rc = wf_npy_write(path, t) ? WF_EXIT_IO : 0;
  wf_tensor_free(t);
  for (int c = 0; c < g->G->n_caches && !rc; c++) {
    snprintf(path, sizeof path, "%s/%s.npy", out_dir, g->G->caches[c].decode);
    if (wf_npy_write(path, caches[c])) rc = WF_EXIT_IO;
  }
  return rc;
}

/* --heatmap with --generate: the tokens each PE of the decode region holds after the last step
 * (every PE of a row holds its row's count, of its own columns), on the fixed scale 0..slots
 * per row, so the shift policy's even rows and concat's one full row show at a glance. */
static int occupancy_heatmap(const gen *g, const char *dir, const int *cnt) {
  int w = g->dec->mesh_w, h = g->dec->mesh_h;
  double *v = calloc((size_t)w * (size_t)h, sizeof *v);
  WF_ASSERT(v);
  for (int y = 0; y < h && y < g->n_rows; y++)
    for (int x = 0; x < w; x++) v[(size_t)y * w + x] = cnt[y];
  char title[96], sub[160];
  snprintf(title, sizeof title, "KV cache: tokens per PE after the last step (%s)", g->G->kv_cache);
  snprintf(sub, sizeof sub, "plan %.40s, %s %dx%d, %lld slots per row", g->dec->dir, g->dec->target.name, w, h,
           (long long)g->G->slots_per_row);
  int rc = wf_heatmap_write_counts(dir, "kv_occupancy", title, sub, "tokens", w, h, v, (double)g->G->slots_per_row);
  free(v);
  if (!rc && !g->o->quiet) printf("heatmap: %s/kv_occupancy.png\n", dir);
  return rc;
}

int wf_run_generate(const wf_plan *p, const wf_gen_opts *o) {
  const wf_plan_generate *G = &p->gen;
  char mpath[1100];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", p->dir);
  if (!G->present) {
    wf_error_at(mpath, "this plan was not compiled with --generate (its manifest has no \"generate\" object): "
                       "compile with `waferc model.onnx -o plan/ --input-shape input_ids=1xL --generate=N`");
    return WF_EXIT_INPUT;
  }
  if (o->n > G->max_new_tokens) {
    wf_error_at("waferrun", "--generate=%lld: the plan was compiled for at most %lld new tokens (its KV cache "
                            "holds %d slots per row on %d rows, %s policy); ask for at most %lld, or recompile "
                            "with --generate=%lld",
                (long long)o->n, (long long)G->max_new_tokens, G->slots_per_row, G->rows, G->kv_cache,
                (long long)G->max_new_tokens, (long long)o->n);
    return WF_EXIT_NOFIT;
  }
  int rc = wf_run_check_input_names(p, o->in, o->n_in, 1);
  if (!rc) rc = wf_run_check_outputs(o->out_dir, o->report, NULL, NULL);
  if (!rc && o->dump_dir) rc = wf_run_check_dir("--dump-caches", o->dump_dir);
  for (int i = 0; i < o->n_in && !rc; i++)
    rc = wf_run_check_input_spec(&p->inputs[find(p->inputs, p->n_inputs, o->in[i].name)], o->in[i].spec);
  if (rc) return rc;

  gen g;
  memset(&g, 0, sizeof g);
  g.pre = p;
  g.G = G;
  g.o = o;
  snprintf(g.pre_manifest, sizeof g.pre_manifest, "%s", mpath);
  char ddir[1400];
  snprintf(ddir, sizeof ddir, "%s/%s", p->dir, G->decode_plan);
  snprintf(g.dec_manifest, sizeof g.dec_manifest, "%s/manifest.json", ddir);
  struct stat st;
  if (stat(ddir, &st) != 0 && errno == ENOENT) { /* a generation plan without its second half */
    wf_error_at(mpath, "generate.decode_plan '%s': the plan has no decode step plan at %s", G->decode_plan, ddir);
    return WF_EXIT_INPUT;
  }
  if ((rc = wf_run_check_plan_dir(ddir))) {
    wf_error_at(mpath, "generate.decode_plan '%s': the decode step plan cannot be opened", G->decode_plan);
    return rc;
  }
  wf_plan *d = wf_plan_load_ex(ddir, o->load_flags);
  if (!d) {
    wf_error_at(mpath, "generate.decode_plan '%s': the decode step plan is not valid", G->decode_plan);
    return WF_EXIT_INPUT;
  }
  g.dec = d;
  if ((rc = wf_run_check_memory(d, o->mem_limit_mb, ddir))) {
    wf_plan_free(d);
    return rc;
  }
  wf_plan *sw = NULL;
  if (G->switch_plan[0]) {
    char sdir[1400];
    snprintf(sdir, sizeof sdir, "%s/%s", p->dir, G->switch_plan);
    snprintf(g.sw_manifest, sizeof g.sw_manifest, "%s/manifest.json", sdir);
    if ((rc = wf_run_check_plan_dir(sdir)) || !(sw = wf_plan_load_ex(sdir, o->load_flags)) ||
        (rc = wf_run_check_memory(sw, o->mem_limit_mb, sdir))) {
      wf_error_at(mpath, "generate.switch_plan '%s': the switch plan cannot be opened or is not valid", G->switch_plan);
      wf_plan_free(sw);
      wf_plan_free(d);
      return rc ? rc : WF_EXIT_INPUT;
    }
    g.sw = sw;
  }
  g.pre_cache = calloc((size_t)G->n_caches, sizeof *g.pre_cache);
  g.dec_in = calloc((size_t)G->n_caches, sizeof *g.dec_in);
  g.dec_out = calloc((size_t)G->n_caches, sizeof *g.dec_out);
  g.sw_in = calloc((size_t)G->n_caches, sizeof *g.sw_in);
  g.sw_out = calloc((size_t)G->n_caches, sizeof *g.sw_out);
  int n_mv = sw ? sw->n_moves : 0;
  g.mv_pre = calloc((size_t)n_mv + 1, sizeof *g.mv_pre);
  g.mv_dec = calloc((size_t)n_mv + 1, sizeof *g.mv_dec);
  g.moved = calloc((size_t)n_mv + 1, sizeof *g.moved);
  WF_ASSERT(g.sw_in && g.sw_out && g.mv_pre && g.mv_dec && g.moved);
  wf_tensor **caches = calloc((size_t)G->n_caches, sizeof *caches);
  int64_t *tokens = calloc((size_t)o->n, sizeof *tokens);
  int64_t *step_cycles = calloc((size_t)o->n, sizeof *step_cycles);
  WF_ASSERT(g.pre_cache && g.dec_in && g.dec_out && caches && tokens && step_cycles);
  int *cnt = NULL;
  int64_t pre_cycles = 0;
  if (check_plans(&g)) {
    rc = WF_EXIT_INPUT;
    goto done;
  }
  cnt = calloc((size_t)g.n_rows, sizeof *cnt);
  WF_ASSERT(cnt);
  int rejected = 0;
  g.pre_jit = wf_run_load_jit(p, o->no_jit, &rejected);
  g.dec_jit = wf_run_load_jit(d, o->no_jit, &rejected);
  if (sw) g.sw_jit = wf_run_load_jit(sw, o->no_jit, &rejected);
  if (rejected) {
    rc = WF_EXIT_INPUT;
    goto done;
  }

  if ((rc = run_prefill(&g, caches, tokens, &pre_cycles))) goto done;
  wf_kv_prefill_counts(G->prompt_length, G->rows, g.Lb, cnt);
  int64_t sw_cycles = 0, sw_words = 0;
  if (sw) {
    if ((rc = run_switch(&g, caches, &sw_cycles, &sw_words))) goto done;
  } else {
    for (int c = 0; c < G->n_caches; c++) {
      wf_tensor *pre = caches[c];
      caches[c] = switch_cache(&g, pre, &d->inputs[g.dec_in[c]], cnt);
      wf_tensor_free(pre);
    }
  }
  if ((rc = dump_caches(&g, "switch", caches, cnt)) || (rc = run_decode(&g, caches, cnt, tokens, step_cycles)))
    goto done;

  if (wf_sim_mpi_rank() > 0) goto done; /* under mpirun, rank 0 writes and reports */
  if (o->out_dir && (rc = write_outputs(&g, tokens, caches))) goto done;
  wf_gen_result r = {p->dir, d->dir, p->target.name, p->target.clock_hz, d->target.clock_hz, G->prompt_length,
                     (int)o->n, tokens, pre_cycles, (int)o->n - 1, step_cycles, G->kv_cache, G->rows,
                     G->slots_per_row, cnt, sw ? sw->dir : NULL, sw_cycles, sw_words,
                     sw ? sw->predicted_total : 0, p->mesh_w, p->mesh_h, d->mesh_w, d->mesh_h, n_mv, 0};
  for (int i = 0; i < n_mv; i++) r.switch_weight_words += d->weights[g.mv_dec[i]].dims[0] * d->weights[g.mv_dec[i]].dims[1];
  if (o->report && (rc = wf_gen_write_report(&r, o->report))) goto done;
  if (o->heat_dir && (rc = occupancy_heatmap(&g, o->heat_dir, cnt))) goto done;
  if (o->quiet) {
    for (int64_t i = 0; i < o->n; i++) printf("%s%lld", i ? " " : "", (long long)tokens[i]);
    printf("\n");
  } else {
    wf_gen_print_summary(&r, stdout);
    printf("compute: %s\n", g.pre_jit || g.dec_jit ? "JIT-compiled kernels (--no-jit interprets)" : "interpreted");
    if (o->out_dir) printf("tokens -> %s/tokens.npy\n", o->out_dir);
  }
done:
  for (int c = 0; c < G->n_caches; c++) wf_tensor_free(caches[c]);
  free(caches);
  free(tokens);
  free(step_cycles);
  free(cnt);
  free(g.pre_cache);
  free(g.dec_in);
  free(g.dec_out);
  free(g.sw_in);
  free(g.sw_out);
  for (int i = 0; i < n_mv; i++) free(g.moved[i]);
  free(g.moved);
  free(g.mv_pre);
  free(g.mv_dec);
  wf_jit_free(g.pre_jit);
  wf_jit_free(g.dec_jit);
  wf_jit_free(g.sw_jit);
  wf_plan_free(sw);
  wf_plan_free(d);
  return rc;
}
