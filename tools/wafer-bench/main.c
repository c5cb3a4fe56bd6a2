/* wafer-bench: explore lowering strategies one operation at a time.
 *
 *   wafer-bench collective --algo=NAME --pes=P --len=B [--dims=2] [--op=reduce] [--target=T]
 *   wafer-bench gemm --algo=NAME --mesh=S|WxH --m=M --k=K --n=N
 *   wafer-bench llm --model=NAME --prompt=P --generate=N     (llm.c: full-size estimates)
 *
 * Each subcommand builds the op's IR, compiles it with the real backend, runs it on the
 * runtime library and prints one JSON object (simulated and predicted cycles, ...). */
#include <stdio.h>
#include <string.h>

#include "waferc/version.h"

#include "tools/wafer-bench/bench.h"
#include "waferc/diag.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: wafer-bench collective --algo=NAME|auto --pes=P --len=B [--dims=1|2]\n"
          "                  [--op=reduce|allreduce|broadcast] [--target=T] [--keep=DIR]\n"
          "       wafer-bench gemm --algo=NAME --mesh=S|WxH --m=M --k=K --n=N [--weights=none|a|b|ab]\n"
          "                  [--target=T]\n"
          "       wafer-bench gemv --allreduce=ktree|pipeline|auto --mesh=WxH --k=K --n=N\n"
          "       wafer-bench llm --model=llama3-8b|llama2-13b|codellama-34b|qwen2-72b|test-tiny\n"
          "                  [--prompt=P] [--generate=N] [--prefill-mesh=WxH] [--decode-mesh=WxH]\n"
          "                  [--sample-mesh=S] [--no-sim] [--target=T] [--keep=DIR]\n"
          "                  [--gqa=auto|colocate|replicate]\n"
          "Prints one JSON object: simulated_cycles, predicted_cycles, ...\n");
}

int wf_bench_gemv(int argc, char **argv);
int wf_bench_llm(int argc, char **argv);

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-bench"); /* names it in messages without a place (out of host memory) */
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? WF_EXIT_USAGE : 0;
  }
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { /* wafer-bench gemm --help */
      usage(stdout);
      return 0;
    }
  if (!strcmp(argv[1], "--version")) {
    printf("wafer-bench (waferc) %s\n", WF_VERSION_STRING);
    return 0;
  }
  if (!strcmp(argv[1], "collective")) return wf_bench_collective(argc - 1, argv + 1);
  if (!strcmp(argv[1], "gemm")) return wf_bench_gemm(argc - 1, argv + 1);
  if (!strcmp(argv[1], "gemv")) return wf_bench_gemv(argc - 1, argv + 1);
  if (!strcmp(argv[1], "llm")) return wf_bench_llm(argc - 1, argv + 1);
  static const char *const subs[] = {"collective", "gemm", "gemv", "llm"};
  const char *near = wf_closest_name(argv[1], subs, 4);
  if (near) wf_error_at("wafer-bench", "unknown subcommand '%s'; did you mean '%s'?", argv[1], near);
  else wf_error_at("wafer-bench", "unknown subcommand '%s' (collective, gemm, gemv or llm)", argv[1]);
  return WF_EXIT_USAGE;
}
