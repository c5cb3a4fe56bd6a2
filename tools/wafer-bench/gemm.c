/* wafer-bench gemm --algo=NAME --mesh=S|WxH --m=M --k=K --n=N [--weights=none|a|b|ab] [--target=T]
 *                  [--gemm-buffers=1|2|auto] [--sample-mesh=S] [--keep=DIR]
 *
 * Builds C[M,N] = A[M,K] . B[K,N] as IR (--weights: the operands that are constants of the
 * module, as a model's weights are, instead of inputs; MeshGEMM and Cannon get them written
 * pre-skewed, docs/gemm.md), partitions it over an S x S (or W x H) region, lowers
 * the matmul to dist.gemm{algo=NAME} (lower-gemm; --gemm-buffers: its buffers option, MeshGEMM's
 * and Cannon's schedule, gemm_algos.h), compiles and simulates it in timing mode
 * (cycles only: every instruction's cost is data-independent, docs/cycle-model.md) and
 * prints one JSON object ("mesh": [W, H]). predicted_cycles is the plan's own (the cost
 * model's number for the blocks the lowering really got, padding included).
 * compute_efficiency = useful FMACs / (PEs x fmac/cycle x cycles); buffers: the schedule
 * MeshGEMM or Cannon was lowered with (1 or 2; null for the other algorithms).
 *
 * --sample-mesh=S (a square --mesh larger than S; for meshes too large to simulate whole, such
 * as a LLaMA3-8B projection on 660 x 660): the plan for the full mesh is compiled, not run, for
 * its algorithm, schedule and predicted cycles; an S x S region with the same per-PE blocks
 * (the full plan's, padding included) and that algorithm and schedule is simulated, and
 * simulated_cycles is its cycles times W / S, the steps and alignment rounds the full mesh
 * has more (exact for a step whose cost does not grow with the mesh: MeshGEMM's two-hop
 * ring; SUMMA's broadcasts and Cannon's wrap-around pay more per step on the full mesh, so
 * theirs is a lower bound). "sample" gives the sample's own simulated and predicted cycles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "tools/wafer-bench/bench.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

/* wa / wb: A / B is a constant (a splat: timing mode reads no data) instead of an argument. */
static int compile_ir(const char *algo, const char *bufs, int W, int H, int64_t M, int64_t K, int64_t N, int wa, int wb,
                      const wf_target *t, char **out) {
  char text[1024], consts[256] = "", args[128] = "";
  if (wa) snprintf(consts, sizeof consts, "  const @a : f32[%lld, %lld] = dense<0.5>\n", (long long)M, (long long)K);
  if (wb)
    snprintf(consts + strlen(consts), sizeof consts - strlen(consts), "  const @b : f32[%lld, %lld] = dense<0.5>\n",
             (long long)K, (long long)N);
  if (!wa) snprintf(args, sizeof args, "%%a: f32[%lld, %lld]", (long long)M, (long long)K);
  if (!wb)
    snprintf(args + strlen(args), sizeof args - strlen(args), "%s%%b: f32[%lld, %lld]", wa ? "" : ", ", (long long)K,
             (long long)N);
  snprintf(text, sizeof text,
           "module @gemm {\n%s  func @main(%s) -> f32[%lld, %lld] {\n"
           "    %%c = matmul(%ca, %cb) : f32[%lld, %lld]\n    return %%c\n  }\n}\n",
           consts, args, (long long)M, (long long)N, wa ? '@' : '%', wb ? '@' : '%', (long long)M, (long long)N);
  wf_module *m = wf_parse_string(text, "wafer-bench-gemm.wir");
  if (!m) return WF_EXIT_INPUT;
  char pipe[256];
  snprintf(pipe, sizeof pipe, "partition{mesh=%dx%d},lower-gemm{algo=%s,buffers=%s}", W, H, algo, bufs);
  wf_register_builtin_passes();
  wf_pipeline *p = wf_pipeline_parse(wf_pass_registry_global(), pipe);
  int rc = p ? 0 : WF_EXIT_USAGE;
  wf_pm_opts o;
  wf_pm_opts_init(&o);
  o.target = t;
  if (!rc) rc = wf_pipeline_run(p, m, &o);
  if (!rc) *out = wf_print_module_str(m, NULL);
  wf_pipeline_free(p);
  wf_module_free(m);
  return rc;
}

int wf_bench_gemm(int argc, char **argv) {
  const char *algo = "meshgemm", *target = "wse2", *keep = NULL, *weights = "none", *bufs = "2", *v;
  long long W = 8, H = 8, S = 0;
  int64_t M = 512, K = 512, N = 512;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((v = wf_bench_opt(a, "algo"))) algo = v;
    else if ((v = wf_bench_opt(a, "target"))) target = v;
    else if ((v = wf_bench_opt(a, "keep"))) keep = v;
    else if ((v = wf_bench_opt(a, "gemm-buffers"))) {
      int nb;
      if (wf_gemm_buffers_parse(v, &nb)) {
        fprintf(stderr, "wafer-bench gemm: --gemm-buffers=%s: expected 1, 2 or auto\n", v);
        return WF_EXIT_USAGE;
      }
      bufs = v;
    }
    else if ((v = wf_bench_opt(a, "weights"))) {
      if (strcmp(v, "none") && strcmp(v, "a") && strcmp(v, "b") && strcmp(v, "ab")) {
        fprintf(stderr, "wafer-bench gemm: --weights=%s: expected none, a, b or ab\n", v);
        return WF_EXIT_USAGE;
      }
      weights = v;
    }
    else if ((v = wf_bench_opt(a, "mesh"))) {
      /* S (an S x S region) or WxH; the cap keeps W x H in an int (the target rejects
       * anything past its program rectangle anyway) */
      char tail = 0;
      int got = sscanf(v, "%lldx%lld%c", &W, &H, &tail);
      if (got == 1 && v[strspn(v, "0123456789")]) got = 0; /* "8x", "8y" */
      if (got == 1) H = W;
      if ((got != 1 && got != 2) || W < 1 || H < 1 || W > 1000000 || H > 1000000) {
        fprintf(stderr, "wafer-bench gemm: --mesh=%s: expected S or WxH (positive integers)\n", v);
        return WF_EXIT_USAGE;
      }
    }
    else if ((v = wf_bench_opt(a, "sample-mesh"))) { if ((S = wf_bench_int("sample-mesh", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "m"))) { if ((M = wf_bench_int("m", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "k"))) { if ((K = wf_bench_int("k", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "n"))) { if ((N = wf_bench_int("n", v)) < 0) return WF_EXIT_USAGE; }
    else {
      static const char *const own[] = {"--algo", "--target", "--keep", "--mesh", "--m", "--k", "--n", "--weights",
                                        "--gemm-buffers", "--sample-mesh"};
      wf_error_unknown_option("wafer-bench gemm", a, own, 10);
      fprintf(stderr, "usage: wafer-bench gemm --algo=meshgemm|cannon|summa|allgather|auto --mesh=S|WxH "
                      "--m=M --k=K --n=N [--weights=none|a|b|ab] [--gemm-buffers=1|2|auto] [--sample-mesh=S] "
                      "[--target=T] [--keep=PLAN_DIR]\n");
      return WF_EXIT_USAGE;
    }
  }
  if (S && (W != H || S >= W)) {
    fprintf(stderr, "wafer-bench gemm: --sample-mesh=%lld needs a square --mesh larger than %lldx%lld (got %lldx%lld)\n",
            S, S, S, W, H);
    return WF_EXIT_USAGE;
  }
  wf_target t;
  if (wf_target_load(target, &t)) return wf_exit_for_target(target);
  char mesh[64];
  snprintf(mesh, sizeof mesh, "%lldx%lld", W, H);
  if (wf_target_set_mesh(&t, mesh)) return WF_EXIT_NOFIT;
  char *ir = NULL;
  int wa = strchr(weights, 'a') != NULL, wb = strchr(weights, 'b') != NULL;
  int rc = compile_ir(algo, bufs, (int)W, (int)H, M, K, N, wa, wb, &t, &ir);
  if (rc) return rc;
  /* The algorithm lower-gemm chose (auto), from the lowered text. */
  const char *at = strstr(ir, "algo = ");
  char chosen[32] = "?";
  if (at) sscanf(at + 7, "%31[a-z]", chosen);
  /* the schedule it emitted (MeshGEMM and Cannon; buffers = 1 is printed, 2 is the
   * attribute's default), "null" for the algorithms that lower the same for both */
  const char *nbuf = strcmp(chosen, "meshgemm") && strcmp(chosen, "cannon") ? "null"
                     : strstr(ir, "buffers = 1")                             ? "1"
                                                                             : "2";
  int64_t cycles = 0;
  char plan[4096], predicted_s[64] = "-1";
  int64_t ph[6];
  long long sample_pred = -1;
  int64_t sample_cycles = -1;
  /* the full mesh's per-PE blocks (padding included), which the sample keeps */
  int64_t bm = (M + W - 1) / W, bk = (K + W - 1) / W, bn = (N + W - 1) / W;
  if (S) {
    /* the full plan, compiled only; then the sample with its blocks, algorithm and schedule */
    rc = wf_bench_compile(ir, &t, keep, plan);
    if (!rc) wf_bench_manifest_field(plan, "predicted_cycles", predicted_s, sizeof predicted_s);
    if (!keep) wf_bench_rmplan(plan);
    free(ir);
    ir = NULL;
    if (rc) return rc;
    wf_target ts = t;
    snprintf(mesh, sizeof mesh, "%lldx%lld", S, S);
    if (wf_target_set_mesh(&ts, mesh)) return WF_EXIT_NOFIT;
    rc = compile_ir(chosen, strcmp(nbuf, "1") ? "2" : "1", (int)S, (int)S, bm * S, bk * S, bn * S, wa, wb, &ts, &ir);
    if (rc) return rc;
    rc = wf_bench_run_phases(ir, &ts, NULL, NULL, &sample_cycles, NULL, plan, ph);
    char sp[64] = "-1";
    if (!rc) wf_bench_manifest_field(plan, "predicted_cycles", sp, sizeof sp);
    sample_pred = atoll(sp);
    wf_bench_rmplan(plan);
    free(ir);
    if (rc) return rc;
    ph[0] = -1; /* the sample's phases are not the full mesh's */
    cycles = (int64_t)((double)sample_cycles * (double)W / (double)S + 0.5);
  } else {
    rc = wf_bench_run_phases(ir, &t, keep, NULL, &cycles, NULL, plan, ph);
    if (!rc) wf_bench_manifest_field(plan, "predicted_cycles", predicted_s, sizeof predicted_s);
    if (!keep) wf_bench_rmplan(plan);
    free(ir);
    if (rc) return rc;
  }
  long long predicted = atoll(predicted_s);
  double fmac = t.fmac_per_cycle > 0 ? t.fmac_per_cycle : 1;
  double eff = cycles > 0 ? (double)M * K * N / ((double)W * H * fmac * (double)cycles) : 0;
  printf("{\"op\": \"gemm\", \"algo\": \"%s\", \"requested\": \"%s\", \"target\": \"%s\", \"mesh\": [%lld, %lld], "
         "\"m\": %lld, \"k\": %lld, \"n\": %lld, \"weights\": \"%s\", \"simulated_cycles\": %lld, "
         "\"predicted_cycles\": %lld, \"compute_efficiency\": %.4f, \"buffers\": %s",
         chosen, algo, t.name, W, H, (long long)M, (long long)K, (long long)N, weights, (long long)cycles,
         predicted, eff, nbuf);
  /* the report's phases of the dist.gemm (docs/report-format.md), when it has them */
  if (ph[0] >= 0)
    printf(", \"phases\": {\"alignment\": {\"cycles\": %lld, \"predicted\": %lld}, \"loop\": {\"cycles\": %lld, "
           "\"predicted\": %lld}, \"drain\": {\"cycles\": %lld, \"predicted\": %lld}}",
           (long long)ph[0], (long long)ph[3], (long long)ph[1], (long long)ph[4], (long long)ph[2], (long long)ph[5]);
  if (S)
    printf(", \"sample\": {\"mesh\": [%lld, %lld], \"m\": %lld, \"k\": %lld, \"n\": %lld, \"simulated_cycles\": %lld, "
           "\"predicted_cycles\": %lld, \"scale\": %.6g}",
           S, S, (long long)(bm * S), (long long)(bk * S), (long long)(bn * S),
           (long long)sample_cycles, sample_pred, (double)W / (double)S);
  printf("}\n");
  return 0;
}
