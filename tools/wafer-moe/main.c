/* wafer-moe: MoE inference on a mesh of dies (MoEntwine), simulated on SimGrid.
 *
 *   wafer-moe mapping --dies=WxH [--wafers=K] --tp=N --model=NAME --tokens=T
 *   wafer-moe balance --dies=WxH --model=NAME (--trace=FILE | --gen=math|mixed) --iterations=I
 *   wafer-moe trace --gen=math|mixed --model=NAME --iterations=I -o FILE
 *
 * Each prints one JSON object (docs/moe.md). */
#include <stdio.h>
#include <string.h>

#include "tools/wafer-moe/moe.h"
#include "waferc/diag.h"
#include "waferc/version.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: wafer-moe mapping --dies=WxH [--wafers=K|KxL] --tp=N --model=NAME --tokens=T\n"
          "                 [--no-ag] [--target=T] [--heatmap DIR] [--platform FILE]\n"
          "       wafer-moe balance --dies=WxH --model=NAME (--trace=FILE | --gen=math|mixed)\n"
          "                 --iterations=I [--tp=N] [--tokens=T] [--slots=S] [--alpha=A] [--beta=B]\n"
          "                 [--window=W] [--seed=N] [--skew=S] [--wafers=K] [--target=T] [--heatmap DIR]\n"
          "       wafer-moe trace --gen=math|mixed --model=NAME --iterations=I [--tokens=T] [--seed=N]\n"
          "                 [--skew=S] -o FILE\n"
          "models (MoEntwine Table I): deepseek-v3, qwen3, deepseek-v2, dbrx, mixtral-8x22b\n"
          "die targets: targets/dies/*.target (default moe-b200); docs/moe.md\n"
          "Prints one JSON object: per mapping all_to_all_us, allreduce_us, ftd_area, avg_hops;\n"
          "per balancer max_over_avg_load, critical_migration_us, moe_latency_us.\n");
}

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-moe"); /* names it in messages without a place (out of host memory) */
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? WF_EXIT_USAGE : 0;
  }
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
  if (!strcmp(argv[1], "--version")) {
    printf("wafer-moe (waferc) %s\n", WF_VERSION_STRING);
    return 0;
  }
  if (!strcmp(argv[1], "mapping")) return moe_cmd_mapping(argc - 1, argv + 1);
  if (!strcmp(argv[1], "balance")) return moe_cmd_balance(argc - 1, argv + 1);
  if (!strcmp(argv[1], "trace")) return moe_cmd_trace(argc - 1, argv + 1);
  static const char *const subs[] = {"mapping", "balance", "trace"};
  const char *near = wf_closest_name(argv[1], subs, 3);
  if (near) wf_error_at("wafer-moe", "unknown subcommand '%s'; did you mean '%s'?", argv[1], near);
  else wf_error_at("wafer-moe", "unknown subcommand '%s' (mapping, balance or trace)", argv[1]);
  return WF_EXIT_USAGE;
}
