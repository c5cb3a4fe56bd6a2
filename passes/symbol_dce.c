/* symbol-dce: removes global constants no op of any function uses. Raising, partitioning and
 * GEMM decomposition leave the constants they replaced behind (partition's transposed
 * `@w_t0` makes `@w` dead); they cost nothing in a plan (the backend writes only what ops
 * read) but fill every later dump. The work is wf_module_remove_unused_globals (ir.c), which
 * the ONNX importer calls too. */
#include "waferc/pass.h"

static int symbol_dce_run(wf_module *m, wf_pass_ctx *ctx) {
  int64_t removed = wf_module_remove_unused_globals(m);
  if (removed) {
    wf_pass_stat_add(ctx, "globals-removed", removed);
    wf_pass_set_changed(ctx);
  }
  return 0;
}

static const char *const symbol_dce_stats[] = {"globals-removed"};

const wf_pass_info wf_pass_symbol_dce = {
    "symbol-dce", "Remove global constants no op uses", NULL, 0, symbol_dce_stats, 1, symbol_dce_run,
};
