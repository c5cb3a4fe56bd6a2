/* lower-gemm — turns every partitioned matmul into dist.gemm{algo=...} (docs/gemm.md):
 * rank 2, batched (batch dims whole on each PE, broadcast as numpy's) and vector-matrix
 * (a 1-D A); a matrix-vector product (1-D B) was rewritten by partition (decompose_matvec.c).
 * `algo=auto` (the default) takes the algorithm with the lowest predicted cycles among those
 * that can lower the matmul, each predicted as its lowering will report it (all matrices of a
 * batch; MeshGEMM and Cannon on W x H with K padded to lcm tiles where the operands allow it:
 * backend/gemm/gemm_choose.c); a named algorithm is used as given. matmul(A, transpose(B))
 * becomes dist.gemm_t(A, B) (option gemm-t). `buffers` picks MeshGEMM's and Cannon's schedule
 * (gemm_algos.h, wf_gemm_buffers): 2 double buffers (the default), 1 the memory-minimal one
 * (set as the dist.gemm's buffers = 1), auto 2 where the chooser's SRAM estimate fits, else 1;
 * `algo=auto` weighs every algorithm with the schedule it would get; `one-ring` keeps one shift
 * ring kind per region (waferc's fallback when a plan mixing them is out of colors or route
 * codes). Runs after partition: the blocks come from the layouts. */
#include <string.h>

#include "backend/gemm/gemm_choose.h"
#include "waferc/pass.h"

static const wf_pass_option lower_gemm_opts[] = {
    {"algo", WF_OPT_STRING, "auto", "meshgemm, cannon, summa, allgather or auto (lowest predicted cycles)"},
    {"gemm-t", WF_OPT_BOOL, "true", "matmul(A, transpose(B)) becomes dist.gemm_t(A, B) (no transpose of B)"},
    {"buffers", WF_OPT_STRING, "2",
     "MeshGEMM/Cannon buffers per operand: 2 (double buffered), 1 (memory-minimal: A, B, C and one spare) or auto "
     "(2 when it fits the SRAM)"},
    {"one-ring", WF_OPT_BOOL, "false",
     "algo=auto: one shift ring kind per region, MeshGEMM's or Cannon's, whichever is chosen first; the other is "
     "no candidate there (a plan mixing both holds both rings' colors and route codes)"},
};
static const char *const lower_gemm_stats[] = {"gemms-lowered"};

/* The producer of v when it is a rank-2 `transpose` with perm [1, 0], else NULL. */
static wf_op *transpose_of(wf_func *f, wf_value v) {
  wf_func_foreach_op(f, op) {
    if (op->n_results != 1 || op->results[0] != v) continue;
    if (op->code != WF_OP_TRANSPOSE) return NULL;
    const wf_attr *p = wf_op_attr(f, op, "perm");
    if (!p || p->u.ints.n != 2 || p->u.ints.v[0] != 1 || p->u.ints.v[1] != 0) return NULL;
    return op;
  }
  return NULL;
}

/* matmul(A, transpose(B)) -> dist.gemm_t(A, B): B stays as stored (WaferLLM's
 * dist-GEMM-T); the transpose goes when nothing else reads it. Both B and B^T are
 * {rows_y, cols_x}, so B's layout is the one gemm_t wants. */
static int to_gemm_t(wf_func *f, wf_op *op) {
  wf_op *tr = transpose_of(f, op->operands[1]);
  if (!tr) return 0;
  const wf_type *tb = wf_value_type(f, tr->operands[0]);
  if (tb->rank != 2 || !tb->layout.rank) return 0;
  wf_op_set_operand(f, op, 1, tr->operands[0]);
  op->code = WF_OP_DIST_GEMM_T;
  if (wf_value_use_count(f, tr->results[0]) == 0) wf_op_unlink(f, tr);
  return 1;
}

/* Batch dims (all but the last two) whole on every PE: the batched lowering's premise
 * (partition never splits them). A 1-D A or C has none. */
static int batch_whole(const wf_type *t) {
  for (int d = 0; d + 2 < t->rank; d++)
    if (t->layout.dims[d].split != WF_AXIS_NONE) return 0;
  return 1;
}

#define WF_MAX_REGIONS_USED 64 /* regions told apart for the tie-break; more share the last */

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
  int gemm_t = wf_pass_opt_bool(ctx, "gemm-t"), one_ring = wf_pass_opt_bool(ctx, "one-ring");
  const char *bufs = wf_pass_opt_str(ctx, "buffers");
  int nbuf = 2;
  if (bufs && *bufs && wf_gemm_buffers_parse(bufs, &nbuf)) {
    wf_error_at("lower-gemm", "buffers=%s: expected 1, 2 or auto", bufs);
    return WF_EXIT_USAGE;
  }
  int64_t n = 0;
  for (int fi = 0; fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    /* the algorithms chosen so far on each region (a class's routes: MeshGEMM's and Cannon's
     * rings take their own colors) */
    unsigned used[WF_MAX_REGIONS_USED] = {0};
    wf_func_foreach_op(f, op) {
      if (op->code != WF_OP_MATMUL) continue;
      const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
      const wf_type *tc = wf_value_type(f, op->results[0]);
      if (tb->rank < 2 || !ta->layout.rank || !tb->layout.rank || !tc->layout.rank || !batch_whole(ta) ||
          !batch_whole(tb) || !batch_whole(tc))
        continue; /* not partitioned, or a matrix-vector product: left to the matmul lowering */
      if (gemm_t && to_gemm_t(f, op)) { /* A's batch dims are whole: they fold into its rows */
        n++;
        continue;
      }
      const wf_region *r = &m->regions[tc->layout.region];
      wf_gemm_algo a = forced;
      int ri = tc->layout.region < WF_MAX_REGIONS_USED ? tc->layout.region : WF_MAX_REGIONS_USED - 1;
      int nb = nbuf;
      if (is_auto || nbuf != 2) {
        wf_gemm_choice ch;
        wf_gemm_choose(t, f, op, r->w, r->h, nbuf, &ch);
        if (is_auto) a = ch.best;
        /* an exact tie goes to an algorithm an earlier dist.gemm of the region uses: its
         * colors are set up, the other's would take more of the budget (pre-skewed weights
         * make MeshGEMM and Cannon tie on square regions) */
        for (int o = 0; o < WF_GEMM_COUNT && !(used[ri] >> a & 1u); o++)
          if (is_auto && (used[ri] >> o & 1u) && ch.predicted[o] == ch.predicted[a] && ch.bytes[o] <= ch.sram)
            a = (wf_gemm_algo)o;
        /* one ring kind: once the region has one shift algorithm, the other is no candidate */
        unsigned other = used[ri] & 1u << WF_GEMM_MESHGEMM ? 1u << WF_GEMM_CANNON
                         : used[ri] & 1u << WF_GEMM_CANNON ? 1u << WF_GEMM_MESHGEMM : 0;
        if (is_auto && one_ring && other >> a & 1u) {
          int b = wf_gemm_lowest_fitting(&ch, other);
          if (b >= 0) a = (wf_gemm_algo)b;
        }
        nb = ch.buffers[a];
        if (nbuf == 1 && ch.predicted[a] < 0 && ch.why_not[a] == WF_GEMM_NO_ONEBUF) {
          wf_error(op->loc, "lower-gemm: %s with buffers=1 on the %dx%d region: the one-buffer schedule exists on "
                            "square regions only (use buffers=2 or auto, or algo=summa)",
                   wf_gemm_algo_names[a], r->w, r->h);
          return WF_EXIT_UNSUPPORTED;
        }
      }
      used[ri] |= 1u << a;
      op->code = WF_OP_DIST_GEMM;
      wf_op_set_ident(f, op, "algo", wf_gemm_algo_names[a]);
      if (nb == 1) wf_op_set_int(f, op, "buffers", 1); /* 2 is the attribute's default */
      n++;
    }
  }
  wf_pass_stat_add(ctx, "gemms-lowered", n);
  if (n) wf_pass_set_changed(ctx);
  return 0;
}

const wf_pass_info wf_pass_lower_gemm = {
    "lower-gemm", "Turn partitioned matmuls into dist.gemm{algo=...}, chosen by the cost model",
    lower_gemm_opts, (int)(sizeof lower_gemm_opts / sizeof lower_gemm_opts[0]), lower_gemm_stats, 1, run_lower_gemm};
