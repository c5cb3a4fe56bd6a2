/* wafer-bench gemm --algo=NAME --mesh=S --m=M --k=K --n=N [--target=T] [--keep=DIR]
 *
 * Builds C[M,N] = A[M,K] . B[K,N] as IR, partitions it over an S x S region, lowers the
 * matmul to dist.gemm{algo=NAME} (lower-gemm), compiles and simulates it in timing mode
 * (cycles only: every instruction's cost is data-independent, docs/cycle-model.md) and
 * prints one JSON object. compute_efficiency = useful FMACs / (PEs x fmac/cycle x cycles). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm_algos.h"
#include "tools/wafer-bench/bench.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

static int compile_ir(const char *algo, int S, int64_t M, int64_t K, int64_t N, const wf_target *t,
                      char **out) {
  char text[1024];
  snprintf(text, sizeof text,
           "module @gemm {\n  func @main(%%a: f32[%lld, %lld], %%b: f32[%lld, %lld]) -> f32[%lld, %lld] {\n"
           "    %%c = matmul(%%a, %%b) : f32[%lld, %lld]\n    return %%c\n  }\n}\n",
           (long long)M, (long long)K, (long long)K, (long long)N, (long long)M, (long long)N,
           (long long)M, (long long)N);
  wf_module *m = wf_parse_string(text, "wafer-bench-gemm.wir");
  if (!m) return WF_EXIT_INPUT;
  char pipe[256];
  snprintf(pipe, sizeof pipe, "partition{mesh=%dx%d},lower-gemm{algo=%s}", S, S, algo);
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
  const char *algo = "meshgemm", *target = "wse2", *keep = NULL, *v;
  int64_t S = 8, M = 512, K = 512, N = 512;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((v = wf_bench_opt(a, "algo"))) algo = v;
    else if ((v = wf_bench_opt(a, "target"))) target = v;
    else if ((v = wf_bench_opt(a, "keep"))) keep = v;
    else if ((v = wf_bench_opt(a, "mesh"))) { if ((S = wf_bench_int("mesh", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "m"))) { if ((M = wf_bench_int("m", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "k"))) { if ((K = wf_bench_int("k", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(a, "n"))) { if ((N = wf_bench_int("n", v)) < 0) return WF_EXIT_USAGE; }
    else {
      fprintf(stderr, "wafer-bench gemm: unknown option '%s'\n"
                      "usage: wafer-bench gemm --algo=meshgemm|cannon|summa|allgather|auto --mesh=S "
                      "--m=M --k=K --n=N [--target=T] [--keep=PLAN_DIR]\n", a);
      return WF_EXIT_USAGE;
    }
  }
  wf_target t;
  if (wf_target_load(target, &t)) return WF_EXIT_INPUT;
  char mesh[64];
  snprintf(mesh, sizeof mesh, "%lldx%lld", (long long)S, (long long)S);
  if (wf_target_set_mesh(&t, mesh)) return WF_EXIT_NOFIT;
  char *ir = NULL;
  int rc = compile_ir(algo, (int)S, M, K, N, &t, &ir);
  if (rc) return rc;
  /* The algorithm lower-gemm chose (auto) and its prediction, from the lowered text. */
  const char *at = strstr(ir, "algo = ");
  char chosen[32] = "?";
  if (at) sscanf(at + 7, "%31[a-z]", chosen);
  wf_gemm_algo ga = WF_GEMM_MESHGEMM;
  wf_gemm_algo_parse(chosen, &ga);
  int64_t predicted = wf_gemm_predict(&t, ga, (int)S, (int)S, M / S, K / S, N / S);
  int64_t cycles = 0;
  char plan[4096];
  rc = wf_bench_run(ir, &t, keep, NULL, &cycles, NULL, plan);
  if (!keep) wf_bench_rmplan(plan);
  free(ir);
  if (rc) return rc;
  double fmac = t.fmac_per_cycle > 0 ? t.fmac_per_cycle : 1;
  double eff = cycles > 0 ? (double)M * K * N / ((double)S * S * fmac * (double)cycles) : 0;
  printf("{\"op\": \"gemm\", \"algo\": \"%s\", \"requested\": \"%s\", \"target\": \"%s\", \"mesh\": %lld, "
         "\"m\": %lld, \"k\": %lld, \"n\": %lld, \"simulated_cycles\": %lld, \"predicted_cycles\": %lld, "
         "\"compute_efficiency\": %.4f}\n",
         chosen, algo, t.name, (long long)S, (long long)M, (long long)K, (long long)N, (long long)cycles,
         (long long)predicted, eff);
  return 0;
}
