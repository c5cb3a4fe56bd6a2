/* wafer-bench llm --model=NAME --prompt=P --generate=N [--target=T] [--prefill-mesh=WxH]
 *                 [--decode-mesh=WxH] [--sample-mesh=S] [--no-sim] [--keep=DIR]
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

static int simulate(const char *ir, const char *pipeline, const wf_target *t, const char *keep, int64_t *total,
                    sim_op *ops, int *n_ops, int cap, int64_t step_count) {
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
  char dir[4096];
  if (keep) snprintf(dir, sizeof dir, "%s", keep);
  else if (wf_bench_tmpdir(dir, "wafer-bench-llm")) {
    wf_module_free(m);
    return WF_EXIT_IO;
  }
  wf_plan_opts po = WF_PLAN_OPTS_DEFAULT;
  po.compiler_flags = "wafer-bench llm";
  po.quiet = 1;
  if (!rc) rc = wf_backend_emit_plan(m, t, dir, &po);
  wf_module_free(m);
  wf_plan *p = rc ? NULL : wf_plan_load(dir);
  if (!rc && !p) rc = WF_EXIT_INPUT;
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
  if (!keep) wf_bench_rmplan(dir);
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

int wf_bench_llm(int argc, char **argv) {
  const char *model = NULL, *tname = "wse2", *keep = NULL, *v;
  int64_t P = 4096, N = 128;
  int pw = 0, ph = 0, dw = 0, dh = 0, S = 0, sim = 1;
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
    else {
      static const char *const own[] = {"--model", "--target", "--keep", "--prompt", "--generate", "--sample-mesh",
                                        "--prefill-mesh", "--decode-mesh", "--no-sim"};
      wf_error_unknown_option("wafer-bench llm", a, own, 9);
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
  wf_llm_decode_tune(m, &t, &ds);
  wf_llm_cost pc, dc;
  if (wf_llm_prefill_cost(m, &t, &ps, &pc) || wf_llm_decode_cost(m, &t, &ds, &dc)) return WF_EXIT_UNSUPPORTED;
  double hz = t.clock_hz > 0 ? t.clock_hz : 1e9;
  int64_t pre_cm = pc.layer_cycles * m->layers + pc.model_cycles;
  int64_t dec_cm = dc.layer_cycles * m->layers + dc.model_cycles;

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
         "\"head_dim_packed\": %lld, \"kv_shared\": %s, \"cache_slots_per_row\": %lld}},\n",
         (long long)ps.eq, (long long)ps.ekv, (long long)ps.dp, ps.kv_shared ? "true" : "false", (long long)ps.sb,
         (long long)ds.eq, (long long)ds.ekv, (long long)ds.dp, ds.kv_shared ? "true" : "false", (long long)ds.cap);
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
