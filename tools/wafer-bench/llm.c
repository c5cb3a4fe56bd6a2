/* wafer-bench llm --model=NAME --prompt=P --generate=N [--target=T] [--prefill-mesh=WxH]
 *                 [--decode-mesh=WxH] [--sample-mesh=S] [--no-sim] [--keep=DIR] [--gqa=auto|colocate|replicate]
 *
 * Full-size prefill and decode estimates for a LLaMA-shaped model (BENCHMARKS.md, "Full-size estimates"), as
 * one JSON object with two figures side by side:
 *   cost_model  the compiler's own predictions for one full-size layer on the full meshes,
 *               times the layer count, plus the once-per-pass ops (llm_cost.c);
 *   simulated   a timing-mode simulation of sampled work, scaled: decode, one layer's ops at the
 *               full decode mesh (decode attention over a balanced cache), times the layers;
 *               prefill, one layer on an S x S region with the full-size per-PE blocks, each
 *               mesh-stepped op (MeshGEMM, attention: one step or round per PE of a line)
 *               scaled by W / S, the local ops as simulated; the final norm and LM head
 *               sampled the same way, the embedding gather the cost model's.
 * and, with or without --no-sim, `kv_capacity` (WaferLLM's Table 5): the most tokens the shift
 * and the concat cache let one request generate, from the memory planner's layout of the decode
 * sample (compiled, not run) and the layers spread over the wafer's decode-sized regions
 * (kv_capacity below), with weights and caches in f32 and in f16.
 * Decode holds GQA / MQA kv heads whose query heads span columns colocated with q (each kv head
 * once) where head-layout's gathered map allows it (--gqa=auto, the default, and colocate: at
 * full size the lighter decode step, which waferc --generate keeps), or replicated per query
 * head (--gqa=replicate). The prefill sample is head-layout's replicated or shared form.
 * Exit codes: 2 bad command line, 3 a mesh the cost model cannot predict, 4 a mesh that does
 * not fit the target, 5 a simulation that fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime.h"
#include "tools/wafer-bench/bench.h"
#include "tools/wafer-bench/llm.h"
#include "waferc/backend.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

static int parse_mesh(const char *v, int *w, int *h) {
  long long a = 0, b = 0;
  char tail = 0;
  int got = sscanf(v, "%lldx%lld%c", &a, &b, &tail);
  if (got == 1 && !v[strspn(v, "0123456789")]) b = a, got = 2;
  if (got != 2 || a < 1 || b < 1 || a > 100000 || b > 100000) return -1;
  *w = (int)a, *h = (int)b;
  return 0;
}

/* Compiles IR text (after `pipeline`, when given) into a temporary plan and simulates it in
 * timing mode; each op's extent (first PE in, last PE out) and prediction into ops. */
typedef struct sim_op {
  char result[64], op[32];
  int64_t cycles, predicted; /* simulated extent; the plan's own prediction */
} sim_op;

/* Compiles IR text (after `pipeline`, when given) into a plan in `dir` (keep, or a temporary
 * directory the caller removes) and loads it. */
static int compile_plan(const char *ir, const char *pipeline, const wf_target *t, const char *keep, char *dir,
                        size_t dir_size, wf_plan **out) {
  *out = NULL;
  dir[0] = 0;
  wf_module *m = wf_parse_string(ir, "wafer-bench-llm.wir");
  if (!m) return WF_EXIT_INPUT;
  int rc = wf_verify_module(m) ? WF_EXIT_INPUT : 0;
  if (!rc && pipeline) {
    wf_register_builtin_passes();
    wf_pipeline *p = wf_pipeline_parse(wf_pass_registry_global(), pipeline);
    wf_pm_opts o;
    wf_pm_opts_init(&o);
    o.target = t;
    rc = p ? wf_pipeline_run(p, m, &o) : WF_EXIT_USAGE;
    wf_pipeline_free(p);
  }
  if (keep) snprintf(dir, dir_size, "%s", keep);
  else if (wf_bench_tmpdir(dir, "wafer-bench-llm")) {
    wf_module_free(m);
    return WF_EXIT_IO;
  }
  wf_plan_opts po = WF_PLAN_OPTS_DEFAULT;
  po.compiler_flags = "wafer-bench llm";
  po.quiet = 1;
  if (!rc) rc = wf_backend_emit_plan(m, t, dir, &po);
  wf_module_free(m);
  if (!rc && !(*out = wf_plan_load(dir))) rc = WF_EXIT_INPUT;
  return rc;
}

static int simulate(const char *ir, const char *pipeline, const wf_target *t, const char *keep, int64_t *total,
                    sim_op *ops, int *n_ops, int cap, int64_t step_count) {
  char dir[4096];
  wf_plan *p = NULL;
  int rc = compile_plan(ir, pipeline, t, keep, dir, sizeof dir, &p);
  *n_ops = 0;
  for (int i = 0; !rc && i < p->n_ops && i < cap; i++, (*n_ops)++) {
    memset(&ops[i], 0, sizeof ops[i]);
    snprintf(ops[i].op, sizeof ops[i].op, "%s", p->ops[i].op);
    snprintf(ops[i].result, sizeof ops[i].result, "%s", p->ops[i].result);
    ops[i].predicted = p->ops[i].predicted;
  }
  if (!rc) {
    wf_sim_opts so = WF_SIM_OPTS_DEFAULT;
    so.mode = WF_SIM_TIMING;
    wf_sim *s = wf_sim_new(p, &so);
    if (!s) rc = WF_EXIT_RUNTIME;
    if (s && step_count > 0) { /* decode_attention's step terms: every row holds step_count tokens */
      int *counts = malloc((size_t)t->mesh_h * sizeof *counts);
      WF_ASSERT(counts != NULL); /* out of host memory: exit 7, said (ir/diag.c) */
      for (int i = 0; i < t->mesh_h; i++) counts[i] = (int)step_count;
      if (wf_sim_set_step(s, 0, counts)) rc = WF_EXIT_RUNTIME;
      free(counts);
    }
    if (s && !rc) {
      rc = wf_sim_run(s) ? WF_EXIT_RUNTIME : 0;
      *total = wf_sim_cycles(s);
      for (int i = 0; i < *n_ops; i++) {
        int64_t a, b;
        ops[i].cycles = wf_sim_op_extent(s, i, &a, &b) ? 0 : b - a;
      }
    }
    if (s) wf_sim_free(s);
  }
  if (p) wf_plan_free(p);
  if (!keep && dir[0]) wf_bench_rmplan(dir);
  return rc;
}

/* A sample's cycles at full size: its total plus, for each mesh-stepped op (MeshGEMM, attention:
 * one step or round per PE of a line), its extent times (scale - 1). The ops overlap (a PE
 * starts the next op while others finish), so the extents are not summed. */
static double scaled(int64_t total, const sim_op *ops, int n, double scale) {
  double v = (double)total;
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i].op, "dist.gemm") || !strcmp(ops[i].op, "attention")) v += ops[i].cycles * (scale - 1.0);
  return v;
}

static void print_ops(const char *key, const wf_llm_op *ops, int n) {
  printf("\"%s\": [", key);
  for (int i = 0; i < n; i++)
    printf("%s{\"op\": \"%s\", \"kind\": \"%s\", \"count\": %d, \"cycles\": %lld}", i ? ", " : "", ops[i].name,
           ops[i].kind, ops[i].count, (long long)ops[i].cycles);
  printf("]");
}

static void print_sim_ops(const sim_op *ops, int n, double scale_steps, int scaled) {
  printf("\"sample_ops\": [");
  for (int i = 0; i < n; i++) {
    int stepped = scaled && (!strcmp(ops[i].op, "dist.gemm") || !strcmp(ops[i].op, "attention"));
    printf("%s{\"op\": \"%s\", \"result\": \"%s\", \"cycles\": %lld, \"predicted\": %lld, \"scale\": %.4g}",
           i ? ", " : "", ops[i].op, ops[i].result + (ops[i].result[0] == '%'), (long long)ops[i].cycles,
           (long long)ops[i].predicted, stepped ? scale_steps : 1.0);
  }
  printf("]");
}

/* What the memory planner gave a compiled sample's PEs, the most over its classes: the bytes of
 * the symbols named in `weights` and in `caches`, and of the rest (activations, scratch: what a
 * PE holds beside them). */
typedef struct plan_mem {
  int64_t weights, caches, other;
} plan_mem;

/* The memory sample's compile says only what stops it (errors and their notes): its color
 * warnings are the timing sample's to give. */
static void errors_only(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  int *shown = user;
  if (sev == WF_SEV_WARNING || (sev == WF_SEV_NOTE && !*shown)) return;
  *shown = 1;
  fprintf(stderr, "wafer-bench llm: decode sample, line %u: %s: %s\n", loc.line, sev == WF_SEV_ERROR ? "error" : "note",
          msg);
}

static int named(const char *name, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(name, *list)) return 1;
  return 0;
}

static void plan_memory(const wf_plan *p, const char *const *weights, const char *const *caches, plan_mem *m) {
  memset(m, 0, sizeof *m);
  for (int c = 0; c < p->n_classes; c++) {
    const wf_pe_class *k = p->classes[c];
    int64_t w = 0, kv = 0;
    for (int i = 0; i < k->n_syms; i++) {
      if (named(k->syms[i].name, weights)) w += k->syms[i].bytes;
      else if (named(k->syms[i].name, caches)) kv += k->syms[i].bytes;
    }
    if (w > m->weights) m->weights = w;
    if (kv > m->caches) m->caches = kv;
    if (k->mem_bytes - w - kv > m->other) m->other = k->mem_bytes - w - kv;
  }
}

/* WaferLLM's Table 5, from the memory planner: the most tokens one request can generate after a
 * prompt of P, with the shift and the concat cache. The decode step's layers are spread over as
 * many dw x dh regions as the target's program rectangle holds (the embedding table, final norm
 * and LM head on the first, each layer then on the region whose PEs hold the fewest weight
 * bytes); a region of k layers holds k layers' weights and caches and, once, what the planner
 * put beside them (a layer's activations and scratch, reused layer after layer). Weights and
 * caches take `elem` bytes per element (4: as waferc's plans hold them; 2: fp16), the rest as
 * planned. Every row of a region holds the same number of cache slots (the planner's
 * reservation); shift fills all rows, concat appends on the last one, after the prompt's
 * tokens the prefill left there (each row takes ceil(P / dh) of the prompt's, at most). */
typedef struct kv_fit {
  int regions, max_layers; /* regions holding layers; the most layers on one */
  int64_t slots;           /* cache slots per row, on the tightest region (< 0: the weights alone do not fit) */
  int64_t shift, concat;   /* the most new tokens (-1: none fits) */
} kv_fit;

static kv_fit kv_capacity(const wf_llm_model *m, const wf_target *t, int dw, int dh, int64_t P, const plan_mem *layer,
                          int64_t cap, const plan_mem *once, int elem) {
  kv_fit f = {0, 0, -1, -1, -1};
  int R = (t->program_w / dw) * (t->program_h / dh);
  if (R < 1 || layer->caches <= 0 || cap <= 0) return f;
  int64_t *wb = calloc((size_t)R, sizeof *wb);
  int *k = calloc((size_t)R, sizeof *k);
  WF_ASSERT(wb && k); /* out of host memory: exit 7, said (ir/diag.c) */
  /* the planner's f32 words at `elem` bytes; the embedding table is a block like the head's */
  int64_t lw = layer->weights / 4 * elem, slot = (layer->caches + cap - 1) / cap / 4 * elem;
  wb[0] = (once->weights + once->weights) / 4 * elem;
  for (int64_t l = 0; l < m->layers; l++) {
    int r = 0;
    for (int i = 1; i < R; i++)
      if (wb[i] < wb[r]) r = i;
    wb[r] += lw, k[r]++;
  }
  int64_t c = INT64_MAX;
  for (int r = 0; r < R; r++) {
    if (!k[r]) continue;
    f.regions++;
    if (k[r] > f.max_layers) f.max_layers = k[r];
    int64_t other = r == 0 && once->other > layer->other ? once->other : layer->other;
    int64_t free_b = t->sram_bytes - other - wb[r];
    int64_t cr = free_b < 0 ? -1 : free_b / (k[r] * slot);
    if (cr < c) c = cr;
  }
  free(wb);
  free(k);
  f.slots = c;
  if (c < 0 || (P + dh - 1) / dh > c) return f; /* the weights, or the prompt's rows, do not fit */
  int64_t lb = (P + dh - 1) / dh, last = P - (int64_t)(dh - 1) * lb; /* the prompt's tokens on the last row */
  if (last < 0) last = 0;
  if (last > lb) last = lb;
  f.shift = c * dh - P >= 0 ? c * dh - P : -1;
  f.concat = c - last >= 0 ? c - last : -1;
  return f;
}

static void print_fit(const char *key, const kv_fit *f) {
  printf("\"%s\": {\"cache_slots_per_row\": %lld, \"shift_max_new_tokens\": %lld, \"concat_max_new_tokens\": %lld, "
         "\"shift_over_concat\": ",
         key, (long long)f->slots, (long long)f->shift, (long long)f->concat);
  if (f->shift >= 0 && f->concat > 0) printf("%.4g}", (double)f->shift / (double)f->concat);
  else printf("null}");
}

int wf_bench_llm(int argc, char **argv) {
  const char *model = NULL, *tname = "wse2", *keep = NULL, *v;
  int64_t P = 4096, N = 128;
  int pw = 0, ph = 0, dw = 0, dh = 0, S = 0, sim = 1, coloc = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((v = wf_bench_opt(a, "model"))) model = v;
    else if ((v = wf_bench_opt(a, "target"))) tname = v;
    else if ((v = wf_bench_opt(a, "keep"))) keep = v;
    else if ((v = wf_bench_opt(a, "prompt"))) { if ((P = wf_bench_int("prompt", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "generate"))) { if ((N = wf_bench_int("generate", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "sample-mesh"))) {
      int64_t x = wf_bench_int("sample-mesh", v);
      if (x < 0 || x > 100000) return WF_EXIT_USAGE;
      S = (int)x;
    } else if ((v = wf_bench_opt(a, "prefill-mesh")) || (v = wf_bench_opt(a, "decode-mesh"))) {
      int pre = !strncmp(a, "--prefill", 9);
      if (parse_mesh(v, pre ? &pw : &dw, pre ? &ph : &dh)) {
        fprintf(stderr, "wafer-bench llm: %s: expected S or WxH (positive integers)\n", a);
        return WF_EXIT_USAGE;
      }
    } else if (!strcmp(a, "--no-sim")) sim = 0;
    else if ((v = wf_bench_opt(a, "gqa"))) {
      if (strcmp(v, "auto") && strcmp(v, "colocate") && strcmp(v, "replicate")) {
        fprintf(stderr, "wafer-bench llm: --gqa=%s: expected auto, colocate or replicate\n", v);
        return WF_EXIT_USAGE;
      }
      coloc = !strcmp(v, "auto") ? -1 : !strcmp(v, "colocate");
    } else {
      static const char *const own[] = {"--model", "--target", "--keep", "--prompt", "--generate", "--sample-mesh",
                                        "--prefill-mesh", "--decode-mesh", "--no-sim", "--gqa"};
      wf_error_unknown_option("wafer-bench llm", a, own, 10);
      return WF_EXIT_USAGE;
    }
  }
  const wf_llm_model *m = model ? wf_llm_model_find(model) : NULL;
  if (!m) {
    fprintf(stderr, "wafer-bench llm: --model=%s is not built in (", model ? model : "");
    for (int i = 0; i < wf_llm_n_models; i++) fprintf(stderr, "%s%s", i ? ", " : "", wf_llm_models[i].name);
    fprintf(stderr, ")\n");
    return WF_EXIT_USAGE;
  }
  if (!pw) pw = ph = m->prefill_w;
  if (!dw) dw = dh = m->decode_w;
  wf_target t;
  if (wf_target_load(tname, &t)) return wf_exit_for_target(tname);
  char mesh[64];
  snprintf(mesh, sizeof mesh, "%dx%d", pw, ph);
  if (wf_target_set_mesh(&t, mesh)) return WF_EXIT_NOFIT;
  snprintf(mesh, sizeof mesh, "%dx%d", dw, dh);
  if (wf_target_set_mesh(&t, mesh)) return WF_EXIT_NOFIT;

  /* ---- cost model ---- */
  int64_t ctx = P + N / 2; /* decode's average context over the N steps */
  wf_llm_shape ps, ds;
  wf_llm_shape_init(m, pw, ph, P, P, &ps);
  wf_llm_shape_init(m, dw, dh, 1, ctx, &ds);
  /* auto: colocated, the lighter decode step at these sizes (the cache dominates a PE), which
   * waferc --generate keeps */
  if (coloc) wf_llm_shape_colocate(m, &ds);
  wf_llm_decode_tune(m, &t, &ds);
  wf_llm_cost pc, dc;
  if (wf_llm_prefill_cost(m, &t, &ps, &pc) || wf_llm_decode_cost(m, &t, &ds, &dc)) return WF_EXIT_UNSUPPORTED;
  double hz = t.clock_hz > 0 ? t.clock_hz : 1e9;
  int64_t pre_cm = pc.layer_cycles * m->layers + pc.model_cycles;
  int64_t dec_cm = dc.layer_cycles * m->layers + dc.model_cycles;

  /* ---- the KV cache's capacity (Table 5): the decode sample as the memory planner lays it out ---- */
  static const char *const layer_w[] = {"%wn", "%wq", "%wk", "%wv", "%wo", "%wg", "%wu", "%wd", NULL};
  static const char *const layer_kv[] = {"%kc", "%vc", NULL};
  static const char *const once_w[] = {"%wn", "%wlm", NULL};
  static const char *const none[] = {NULL};
  plan_mem lmem = {0}, omem = {0};
  int kv_null = 0; /* one layer's sample alone is over a PE's SRAM (the compile said where) */
  {
    wf_target dt = t;
    snprintf(mesh, sizeof mesh, "%dx%d", dw, dh);
    wf_target_set_mesh(&dt, mesh);
    for (int i = 0; i < 2; i++) {
      char *ir = i ? wf_llm_once_ir(m, &ds, 0, 1) : wf_llm_decode_ir(m, &ds);
      char dir[4096];
      wf_plan *p = NULL;
      void *was_user;
      wf_diag_sink was = wf_diag_get_sink(&was_user);
      int shown = 0;
      wf_diag_set_sink(errors_only, &shown);
      int rc = compile_plan(ir, NULL, &dt, NULL, dir, sizeof dir, &p);
      wf_diag_set_sink(was, was_user);
      free(ir);
      if (!rc) plan_memory(p, i ? once_w : layer_w, i ? none : layer_kv, i ? &omem : &lmem);
      if (p) wf_plan_free(p);
      if (dir[0]) wf_bench_rmplan(dir);
      if (rc == WF_EXIT_NOFIT && !kv_null)
        fprintf(stderr, "wafer-bench llm: kv_capacity: null (the decode sample does not fit this mesh, said above)\n");
      if (rc == WF_EXIT_NOFIT) kv_null = 1;
      else if (rc) return rc;
    }
  }
  kv_fit fit32 = {0}, fit16 = {0};
  if (!kv_null) {
    fit32 = kv_capacity(m, &t, dw, dh, P, &lmem, ds.cap, &omem, 4);
    fit16 = kv_capacity(m, &t, dw, dh, P, &lmem, ds.cap, &omem, 2);
  }

  /* ---- simulated samples ---- */
  int64_t pre_sim = -1, dec_sim = -1, pre_sample = 0, dec_sample = 0;
  double pre_layer = 0, pre_wall = 0, dec_wall = 0;
  int64_t pre_once_sample = 0, dec_once_sample = 0, pre_once = 0, dec_once = 0;
  sim_op pops[64], dops[64], oops[8];
  int npo = 0, ndo = 0, noo = 0;
  int g = ps.dp > (ps.eq + pw - 1) / pw ? (int)(ps.dp / ((ps.eq + pw - 1) / pw)) : 1;
  if (!S) S = g > 16 ? g : 16;
  if (S > pw) S = pw;
  if (sim) {
    if (dw != dh || pw != ph) {
      fprintf(stderr, "wafer-bench llm: the simulated samples need square meshes (--no-sim for WxH)\n");
      return WF_EXIT_UNSUPPORTED;
    }
    char *ir = wf_llm_prefill_ir(m, &ps, S);
    if (!ir) {
      fprintf(stderr, "wafer-bench llm: a %dx%d sample cannot hold one head of the prefill's layout "
                      "(--sample-mesh >= %d)\n", S, S, g);
      return WF_EXIT_USAGE;
    }
    wf_target st = t;
    snprintf(mesh, sizeof mesh, "%dx%d", S, S);
    wf_target_set_mesh(&st, mesh);
    char pipe[128];
    snprintf(pipe, sizeof pipe, "partition{mesh=%dx%d},lower-gemm{algo=meshgemm}", S, S);
    clock_t c0 = clock();
    int rc = simulate(ir, pipe, &st, keep, &pre_sample, pops, &npo, 64, 0);
    pre_wall = (double)(clock() - c0) / CLOCKS_PER_SEC;
    free(ir);
    if (rc) return rc;
    double scale = (double)pw / S;
    pre_layer = scaled(pre_sample, pops, npo, scale);
    ir = wf_llm_once_ir(m, &ps, S, 0);
    c0 = clock();
    rc = simulate(ir, pipe, &st, NULL, &pre_once_sample, oops, &noo, 8, 0);
    pre_wall += (double)(clock() - c0) / CLOCKS_PER_SEC;
    free(ir);
    if (rc) return rc;
    pre_once = (int64_t)(scaled(pre_once_sample, oops, noo, scale) + 0.5) + pc.model[0].cycles; /* + embedding */
    pre_sim = (int64_t)(pre_layer * m->layers + 0.5) + pre_once;

    ir = wf_llm_decode_ir(m, &ds);
    wf_target dt = t;
    snprintf(mesh, sizeof mesh, "%dx%d", dw, dh);
    wf_target_set_mesh(&dt, mesh);
    c0 = clock();
    rc = simulate(ir, NULL, &dt, NULL, &dec_sample, dops, &ndo, 64, ds.cap);
    dec_wall = (double)(clock() - c0) / CLOCKS_PER_SEC;
    free(ir);
    if (rc) return rc;
    ir = wf_llm_once_ir(m, &ds, 0, 1);
    c0 = clock();
    rc = simulate(ir, NULL, &dt, NULL, &dec_once_sample, oops, &noo, 8, 0);
    dec_wall += (double)(clock() - c0) / CLOCKS_PER_SEC;
    free(ir);
    if (rc) return rc;
    dec_once = dec_once_sample + dc.model[0].cycles; /* + embedding */
    dec_sim = dec_sample * m->layers + dec_once;
  }

  /* ---- one JSON object ---- */
  double ttft_cm = pre_cm / hz, step_cm = dec_cm / hz;
  printf("{\"model\": \"%s\", \"target\": \"%s\", \"clock_hz\": %.6g, \"prompt\": %lld, \"generate\": %lld, "
         "\"decode_context\": %lld,\n",
         m->name, t.name, hz, (long long)P, (long long)N, (long long)ctx);
  printf(" \"config\": {\"hidden\": %lld, \"layers\": %lld, \"heads\": %lld, \"kv_heads\": %lld, \"ffn\": %lld, "
         "\"vocab\": %lld, \"qkv_bias\": %s},\n",
         (long long)m->hidden, (long long)m->layers, (long long)m->heads, (long long)m->kv_heads, (long long)m->ffn,
         (long long)m->vocab, m->qkv_bias ? "true" : "false");
  printf(" \"prefill_mesh\": [%d, %d], \"decode_mesh\": [%d, %d],\n", pw, ph, dw, dh);
  printf(" \"decode_ktree\": {\"along_y\": {\"k\": %d, \"groups\": %d}, \"along_x\": {\"k\": %d, \"groups\": %d}},\n",
         ds.gemv_k[0], ds.gemv_groups[0], ds.gemv_k[1], ds.gemv_groups[1]);
  printf(" \"layout\": {\"prefill\": {\"q_width\": %lld, \"kv_width\": %lld, \"head_dim_packed\": %lld, "
         "\"kv_shared\": %s, \"rows_per_pe\": %lld}, \"decode\": {\"q_width\": %lld, \"kv_width\": %lld, "
         "\"head_dim_packed\": %lld, \"kv_shared\": %s, \"kv_colocated\": %s, \"cache_slots_per_row\": %lld}},\n",
         (long long)ps.eq, (long long)ps.ekv, (long long)ps.dp, ps.kv_shared ? "true" : "false", (long long)ps.sb,
         (long long)ds.eq, (long long)ds.ekv, (long long)ds.dp, ds.kv_shared ? "true" : "false",
         ds.coloc_m ? "true" : "false", (long long)ds.cap);
  /* what one layer's weights and the decode cache take per PE (f32, as the plans hold them):
   * the estimate assumes each layer's weights are on its mesh when it runs */
  int64_t pwb = wf_llm_weight_words(m, &ps) * 4, dwb = wf_llm_weight_words(m, &ds) * 4;
  int64_t kvb = 2 * ds.cap * ((ds.ekv + dw - 1) / dw) * 4;
  printf(" \"memory_per_pe\": {\"sram_bytes\": %lld, \"prefill_weight_bytes_per_layer\": %lld, "
         "\"prefill_weight_bytes_all_layers\": %lld, \"decode_weight_bytes_per_layer\": %lld, "
         "\"decode_weight_bytes_all_layers\": %lld, \"decode_kv_cache_bytes_per_layer\": %lld, "
         "\"decode_fits\": %s},\n",
         (long long)t.sram_bytes, (long long)pwb, (long long)(pwb * m->layers), (long long)dwb,
         (long long)(dwb * m->layers), (long long)kvb,
         (dwb + kvb) * m->layers <= t.sram_bytes ? "true" : "false");
  if (kv_null) printf(" \"kv_capacity\": null,\n");
  else {
    printf(" \"kv_capacity\": {\"regions_with_layers\": %d, \"region\": [%d, %d], \"max_layers_per_region\": %d, "
           "\"planner_bytes_per_pe\": {\"layer_weights\": %lld, \"cache_per_slot\": %lld, \"beside\": %lld, "
           "\"head_weights\": %lld, \"head_beside\": %lld},\n  ",
           fit32.regions, dw, dh, fit32.max_layers, (long long)lmem.weights,
           (long long)((lmem.caches + ds.cap - 1) / ds.cap), (long long)lmem.other, (long long)omem.weights,
           (long long)omem.other);
    print_fit("f32", &fit32);
    printf(",\n  ");
    print_fit("f16", &fit16);
    printf("},\n");
  }
  printf(" \"cost_model\": {\"prefill_cycles\": %lld, \"prefill_layer_cycles\": %lld, \"prefill_once_cycles\": %lld, "
         "\"time_to_first_token_s\": %.6g, \"prefill_tokens_per_s\": %.6g, \"decode_step_cycles\": %lld, "
         "\"decode_layer_cycles\": %lld, \"decode_once_cycles\": %lld, \"decode_time_per_token_s\": %.6g, "
         "\"decode_tokens_per_s\": %.6g,\n  ",
         (long long)pre_cm, (long long)pc.layer_cycles, (long long)pc.model_cycles, ttft_cm, P / ttft_cm,
         (long long)dec_cm, (long long)dc.layer_cycles, (long long)dc.model_cycles, step_cm, 1.0 / step_cm);
  print_ops("prefill_layer_ops", pc.layer, pc.n_layer);
  printf(",\n  ");
  print_ops("prefill_once_ops", pc.model, pc.n_model);
  printf(",\n  ");
  print_ops("decode_layer_ops", dc.layer, dc.n_layer);
  printf(",\n  ");
  print_ops("decode_once_ops", dc.model, dc.n_model);
  printf("},\n");
  if (!sim) {
    printf(" \"simulated\": null}\n");
    return 0;
  }
  double ttft_s = pre_sim / hz, step_s = dec_sim / hz;
  printf(" \"simulated\": {\"prefill_cycles\": %lld, \"prefill_layer_cycles\": %.0f, \"time_to_first_token_s\": %.6g, "
         "\"prefill_tokens_per_s\": %.6g, \"decode_step_cycles\": %lld, \"decode_layer_cycles\": %lld, "
         "\"decode_time_per_token_s\": %.6g, \"decode_tokens_per_s\": %.6g,\n",
         (long long)pre_sim, pre_layer, ttft_s, P / ttft_s, (long long)dec_sim, (long long)dec_sample,
         step_s, 1.0 / step_s);
  printf("  \"prefill_sample\": {\"mesh\": [%d, %d], \"tokens\": %lld, \"cycles\": %lld, \"step_scale\": %.6g, "
         "\"host_cpu_seconds\": %.1f, ",
         S, S, (long long)(ps.sb * S), (long long)pre_sample, (double)pw / S, pre_wall);
  print_sim_ops(pops, npo, (double)pw / S, 1);
  printf("},\n  \"decode_sample\": {\"mesh\": [%d, %d], \"cycles\": %lld, \"cache_tokens_per_row\": %lld, "
         "\"host_cpu_seconds\": %.1f, ",
         dw, dh, (long long)dec_sample, (long long)ds.cap, dec_wall);
  print_sim_ops(dops, ndo, 1.0, 0);
  printf("},\n  \"once\": {\"prefill_cycles\": %lld, \"prefill_sample_cycles\": %lld, \"decode_cycles\": %lld, "
         "\"decode_sample_cycles\": %lld, \"embedding_from_cost_model\": [%lld, %lld]}}}\n",
         (long long)pre_once, (long long)pre_once_sample, (long long)dec_once, (long long)dec_once_sample,
         (long long)pc.model[0].cycles, (long long)dc.model[0].cycles);
  return 0;
}
