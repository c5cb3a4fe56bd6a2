/* lower-gemm — turns every partitioned rank-2 matmul into dist.gemm{algo=...}
 * (docs/gemm.md). `algo=auto` (the default) takes the algorithm with the lowest predicted
 * cycles for the matmul's block sizes on its region (backend/gemm_cost.c); a named algorithm
 * is used as given. Runs after partition: the blocks come from the layouts. */
#include <string.h>

#include "backend/gemm_algos.h"
#include "waferc/pass.h"

static const wf_pass_option lower_gemm_opts[] = {
    {"algo", WF_OPT_STRING, "auto", "meshgemm, cannon, summa, allgather or auto (lowest predicted cycles)"},
};
static const char *const lower_gemm_stats[] = {"gemms-lowered"};

static int64_t block(const wf_type *t, int d, const wf_region *r) {
  int s = t->layout.dims[d].split;
  return t->dims[d] / (s == WF_AXIS_X ? r->w : s == WF_AXIS_Y ? r->h : 1);
}

static int run_lower_gemm(wf_module *m, wf_pass_ctx *ctx) {
  const wf_target *t = wf_pass_target(ctx);
  const char *algo = wf_pass_opt_str(ctx, "algo");
  wf_gemm_algo forced = WF_GEMM_MESHGEMM;
  int is_auto = !algo || !*algo || strcmp(algo, "auto") == 0;
  if (!is_auto && wf_gemm_algo_parse(algo, &forced)) {
    wf_error_at("lower-gemm", "unknown algo '%s' (expected meshgemm, cannon, summa, allgather or auto)",
                algo);
    return WF_EXIT_USAGE;
  }
  int64_t n = 0;
  for (int fi = 0; fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    wf_func_foreach_op(f, op) {
      if (op->code != WF_OP_MATMUL) continue;
      const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
      const wf_type *tc = wf_value_type(f, op->results[0]);
      if (ta->rank != 2 || tb->rank != 2 || !ta->layout.rank || !tb->layout.rank || !tc->layout.rank)
        continue; /* not partitioned (or batched): left to the matmul lowering's diagnostics */
      const wf_region *r = &m->regions[tc->layout.region];
      wf_gemm_algo a = forced;
      if (is_auto) a = wf_gemm_auto(t, r->w, r->h, block(ta, 0, r), block(ta, 1, r), block(tb, 1, r));
      op->code = WF_OP_DIST_GEMM;
      wf_op_set_ident(f, op, "algo", wf_gemm_algo_names[a]);
      n++;
    }
  }
  wf_pass_stat_add(ctx, "gemms-lowered", n);
  if (n) wf_pass_set_changed(ctx);
  return 0;
}

const wf_pass_info wf_pass_lower_gemm = {
    "lower-gemm", "Turn partitioned matmuls into dist.gemm{algo=...}, chosen by the cost model",
    lower_gemm_opts, 1, lower_gemm_stats, 1, run_lower_gemm};
