/* wafer-bench gemv: one dist.gemv y[N] = x[K] . W[K,N] on a W x H mesh (K split along x,
 * N along y), with the allreduce named by --allreduce (ktree, pipeline, auto) and --k /
 * --groups for the K-tree. Prints simulated and predicted cycles and whether y is right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/wafer-bench/bench.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

int wf_bench_gemv(int argc, char **argv) {
  const char *how = "auto", *tname = "wse2", *mesh = "8x8", *keep = NULL, *v;
  int64_t K = 0, N = 0, levels = 2, groups = 0;
  for (int i = 1; i < argc; i++) {
    if ((v = wf_bench_opt(argv[i], "allreduce"))) how = v;
    else if ((v = wf_bench_opt(argv[i], "target"))) tname = v;
    else if ((v = wf_bench_opt(argv[i], "mesh"))) mesh = v;
    else if ((v = wf_bench_opt(argv[i], "keep"))) keep = v;
    else if ((v = wf_bench_opt(argv[i], "k"))) { if ((K = wf_bench_int("k", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(argv[i], "n"))) { if ((N = wf_bench_int("n", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(argv[i], "levels"))) { if ((levels = wf_bench_int("levels", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(argv[i], "groups"))) { if ((groups = wf_bench_int("groups", v)) < 0) return WF_EXIT_USAGE; }
    else {
      static const char *const own[] = {"--allreduce", "--target", "--mesh", "--keep", "--k", "--n",
                                        "--levels", "--groups"};
      wf_error_unknown_option("wafer-bench gemv", argv[i], own, 8);
      return WF_EXIT_USAGE;
    }
  }
  long long W = 0, H = 0;
  if (sscanf(mesh, "%lldx%lld", &W, &H) != 2 || W < 1 || H < 1 || !K || !N || K % W || N % H) {
    fprintf(stderr, "wafer-bench gemv: --mesh=WxH, --k=K (a multiple of W) and --n=N (a multiple "
                    "of H) are required\n");
    return WF_EXIT_USAGE;
  }
  wf_target t;
  if (wf_target_load(tname, &t)) return wf_exit_for_target(tname);
  if (wf_target_set_mesh(&t, mesh)) return WF_EXIT_USAGE;
  char ir[2048];
  snprintf(ir, sizeof ir,
           "module @bench {\n  region @mesh = rect(0, 0, %lld, %lld)\n"
           "  func @main(%%x: f32[%lld]{K_x} @mesh, %%w: f32[%lld, %lld]{K_x, N_y} @mesh) -> "
           "f32[%lld]{N_y} @mesh {\n"
           "    %%y = dist.gemv(%%x, %%w) {allreduce = %s, k = %lld, groups = %lld} : f32[%lld]{N_y} @mesh\n"
           "    return %%y\n  }\n}\n",
           W, H, (long long)K, (long long)K, (long long)N, (long long)N, how, (long long)levels,
           (long long)groups, (long long)N);
  int64_t cycles = 0;
  char plan[4096];
  int rc = wf_bench_run(ir, &t, keep, NULL, &cycles, NULL, plan);
  char predicted_s[64] = "-1", low[96] = "", ex[512] = "";
  if (!rc) {
    wf_bench_manifest_field(plan, "predicted_cycles", predicted_s, sizeof predicted_s);
    wf_bench_manifest_field(plan, "lowering", low, sizeof low);
    wf_bench_manifest_field(plan, "explain", ex, sizeof ex);
  }
  if (!keep) wf_bench_rmplan(plan);
  if (rc) return rc;
  double predicted = atof(predicted_s);
  printf("{\"op\":\"gemv\",\"allreduce\":\"%s\",\"lowering\":\"%s\",\"mesh\":[%lld,%lld],\"k\":%lld,"
         "\"n\":%lld,\"simulated_cycles\":%lld,\"predicted_cycles\":%.0f,\"explain\":\"%s\"}\n",
         how, low, W, H, (long long)K, (long long)N, (long long)cycles, predicted,
         ex);
  return 0;
}
