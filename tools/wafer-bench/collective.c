/* wafer-bench collective: one dist.reduce / dist.allreduce / dist.broadcast over P PEs
 * (a row, or a square grid with --dims=2), B words per PE, compiled and simulated.
 * Prints one JSON object: op, algo (the lowered one), requested, pes, mesh, len,
 * simulated_cycles, predicted_cycles, lower_bound_cycles (reduces; Lemma 5.5 / 7.2),
 * model_error ((simulated - predicted) / predicted), correct (functional runs), explain. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/wafer-bench/bench.h"
#include "waferc/collectives.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

int wf_bench_collective(int argc, char **argv) {
  const char *algo = "auto", *op = "reduce", *tname = "wse2", *keep = NULL, *mesh = NULL, *v;
  int64_t P = 0, B = 0, dims = 1;
  int functional = -1;
  for (int i = 1; i < argc; i++) {
    if ((v = wf_bench_opt(argv[i], "algo"))) algo = v;
    else if ((v = wf_bench_opt(argv[i], "op"))) op = v;
    else if ((v = wf_bench_opt(argv[i], "target"))) tname = v;
    else if ((v = wf_bench_opt(argv[i], "keep"))) keep = v;
    else if ((v = wf_bench_opt(argv[i], "mesh"))) mesh = v;
    else if ((v = wf_bench_opt(argv[i], "pes"))) { if ((P = wf_bench_int("pes", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(argv[i], "len"))) { if ((B = wf_bench_int("len", v)) < 0) return WF_EXIT_USAGE; }
    else if ((v = wf_bench_opt(argv[i], "dims"))) { if ((dims = wf_bench_int("dims", v)) < 0) return WF_EXIT_USAGE; }
    else if (!strcmp(argv[i], "--timing")) functional = 0;
    else if (!strcmp(argv[i], "--functional")) functional = 1;
    else {
      static const char *const own[] = {"--algo", "--op", "--target", "--keep", "--mesh", "--pes", "--len",
                                        "--dims", "--timing", "--functional"};
      wf_error_unknown_option("wafer-bench collective", argv[i], own, 10);
      return WF_EXIT_USAGE;
    }
  }
  if (!P || !B || (dims != 1 && dims != 2)) {
    fprintf(stderr, "wafer-bench collective: --pes=P and --len=B are required; --dims is 1 or 2\n");
    return WF_EXIT_USAGE;
  }
  int kind = !strcmp(op, "reduce") ? WF_COLL_REDUCE : !strcmp(op, "allreduce") ? WF_COLL_ALLREDUCE
             : !strcmp(op, "broadcast") ? WF_COLL_BROADCAST : -1;
  if (kind < 0) {
    fprintf(stderr, "wafer-bench collective: --op is reduce, allreduce or broadcast, got '%s'\n", op);
    return WF_EXIT_USAGE;
  }
  const char *algo_attr = algo;
  if (strcmp(algo, "auto")) {
    int a = wf_coll_algo_parse(algo);
    if (a < 0) {
      fprintf(stderr, "wafer-bench collective: unknown algorithm '%s'\n", algo);
      return WF_EXIT_USAGE;
    }
    algo_attr = wf_coll_algo_name((wf_coll_algo)a);
  }
  int64_t W = P, H = 1;
  if (dims == 2) {
    W = (int64_t)llround(sqrt((double)P));
    H = W ? P / W : 0;
    if (mesh && sscanf(mesh, "%lldx%lld", (long long *)&W, (long long *)&H) != 2) W = H = 0;
    if (W * H != P) {
      fprintf(stderr, "wafer-bench collective: --dims=2 needs a square P or --mesh=WxH with W*H = P\n");
      return WF_EXIT_USAGE;
    }
  }
  wf_target t;
  if (wf_target_load(tname, &t)) return wf_exit_for_target(tname);
  char ms[64];
  snprintf(ms, sizeof ms, "%lldx%lld", (long long)W, (long long)H);
  if (wf_target_set_mesh(&t, ms)) return WF_EXIT_USAGE;

  /* The op's IR: the leading dim(s) hold one partial per PE. */
  char ir[2048], ain[160], attrs[128];
  const char *axis = dims == 2 ? "xy" : "x";
  if (kind == WF_COLL_BROADCAST) snprintf(ain, sizeof ain, "f32[%lld]{B} @mesh", (long long)B);
  else if (dims == 2) snprintf(ain, sizeof ain, "f32[%lld, %lld, %lld]{Q_y, P_x, B} @mesh", (long long)H, (long long)W, (long long)B);
  else snprintf(ain, sizeof ain, "f32[%lld, %lld]{P_x, B} @mesh", (long long)W, (long long)B);
  snprintf(attrs, sizeof attrs, "{algo = %s, axis = %s}",
           kind == WF_COLL_BROADCAST ? "flood" : algo_attr, axis);
  snprintf(ir, sizeof ir,
           "module @bench {\n  region @mesh = rect(0, 0, %lld, %lld)\n"
           "  func @main(%%a: %s) -> f32[%lld]{B} @mesh {\n"
           "    %%b = dist.%s(%%a) %s : f32[%lld]{B} @mesh\n    return %%b\n  }\n}\n",
           (long long)W, (long long)H, ain, (long long)B, op, attrs, (long long)B);

  /* Small integers: every sum is exact in f32 whatever the order. */
  if (functional < 0) functional = P * B <= (1 << 22);
  int64_t idims[3] = {H, W, B};
  int irank = kind == WF_COLL_BROADCAST ? 1 : dims == 2 ? 3 : 2;
  const int64_t *id = kind == WF_COLL_BROADCAST ? idims + 2 : dims == 2 ? idims : idims + 1;
  wf_tensor *in = functional ? wf_tensor_new(WF_F32, irank, id) : NULL;
  int64_t nin = in ? wf_tensor_numel(in) : 0;
  for (int64_t i = 0; i < nin; i++) wf_tensor_set(in, i, (double)((i / B + i % B) % 7 + 1));
  int64_t cycles = 0;
  wf_tensor *outp = NULL;
  char plan[4096];
  int rc = wf_bench_run(ir, &t, keep, in, &cycles, &outp, plan);
  int correct = -1;
  if (!rc && outp) {
    correct = 1;
    for (int64_t i = 0; i < B && correct; i++) {
      double want = 0;
      if (kind == WF_COLL_BROADCAST) want = wf_tensor_get(in, i);
      else for (int64_t p = 0; p < W * H; p++) want += wf_tensor_get(in, p * B + i);
      correct = wf_tensor_get(outp, i) == want;
    }
  }
  char predicted_s[64] = "-1", lowering[96] = "", explain[512] = "";
  if (!rc) {
    wf_bench_manifest_field(plan, "predicted_cycles", predicted_s, sizeof predicted_s);
    wf_bench_manifest_field(plan, "lowering", lowering, sizeof lowering);
    wf_bench_manifest_field(plan, "explain", explain, sizeof explain);
  }
  if (!keep) wf_bench_rmplan(plan);
  wf_tensor_free(in);
  wf_tensor_free(outp);
  if (rc) return rc;

  double predicted = atof(predicted_s);
  const char *chosen = strrchr(lowering, ':');
  wf_coll_params p = wf_coll_params_from_target(&t);
  double lb = kind != WF_COLL_REDUCE ? -1
              : dims == 2           ? wf_coll_lower_bound_2d(W, H, B, &p)
                                    : wf_coll_lower_bound(P, B, &p);
  printf("{\"op\":\"%s\",\"algo\":", op);
  wf_bench_json_str(stdout, chosen ? chosen + 1 : "?");
  printf(",\"requested\":");
  wf_bench_json_str(stdout, algo);
  printf(",\"pes\":%lld,\"dims\":%lld,\"mesh\":[%lld,%lld],\"len\":%lld,\"target\":\"%s\","
         "\"simulated_cycles\":%lld,\"predicted_cycles\":%.0f,",
         (long long)P, (long long)dims, (long long)W, (long long)H, (long long)B, t.name,
         (long long)cycles, predicted);
  if (lb >= 0) printf("\"lower_bound_cycles\":%.0f,", ceil(lb));
  else printf("\"lower_bound_cycles\":null,");
  printf("\"model_error\":%.4f,\"correct\":%s,\"explain\":",
         predicted > 0 ? (cycles - predicted) / predicted : 0.0,
         correct < 0 ? "null" : correct ? "true" : "false");
  wf_bench_json_str(stdout, explain);
  printf("}\n");
  return correct == 0 ? WF_EXIT_RUNTIME : 0;
}
