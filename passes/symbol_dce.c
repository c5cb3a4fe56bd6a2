/* symbol-dce: removes global constants no op of any function uses. Raising, partitioning and
 * GEMM decomposition leave the constants they replaced behind (partition's transposed
 * `@w_t0` makes `@w` dead); they cost nothing in a plan (the backend writes only what ops
 * read) but fill every later dump. The survivors keep their order; the values standing for
 * a removed constant inside a function are detached (index -1), so nothing can reach it. */
#include <stdlib.h>

#include "waferc/pass.h"

static int symbol_dce_run(wf_module *m, wf_pass_ctx *ctx) {
  if (m->n_globals == 0) return 0;
  char *used = calloc((size_t)m->n_globals, 1);
  int *map = malloc((size_t)m->n_globals * sizeof *map);
  WF_ASSERT(used && map);
  for (int fi = 0; fi < m->n_funcs; fi++) {
    const wf_func *f = m->funcs[fi];
    wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
      const wf_value_info *vi = wf_value_get(f, op->operands[i]);
      if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < m->n_globals) used[vi->index] = 1;
    }
  }
  int k = 0;
  for (int g = 0; g < m->n_globals; g++) {
    map[g] = used[g] ? k : -1;
    if (used[g]) m->globals[k++] = m->globals[g];
  }
  int n_old = m->n_globals;
  int64_t removed = n_old - k;
  m->n_globals = k;
  for (int fi = 0; removed && fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    for (uint32_t v = 1; v < f->n_values; v++) {
      wf_value_info *vi = &f->values[v];
      if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < n_old) vi->index = map[vi->index];
    }
  }
  free(used);
  free(map);
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
