/* dist.gemv — MeshGEMV (WaferLLM §6): y[N] = x[K] . W[K,N] with W {K_x, N_y}, x {K_x}
 * (replicated along y) and y {N_y} (replicated along x). Each PE multiplies its x block by
 * its W block (a 1 x k x n local GEMV), then every row allreduces its n partial sums along x.
 * The same with the axes swapped (x {K_y}, W {K_y, N_x}, y {N_x}: every column allreduces
 * along y), so that a decode step alternates them (docs/generation.md); x and y may carry
 * leading dims of 1 (the token's [1, 1, K]). The allreduce:
 *   ktree     the K-tree of WaferLLM §6.2 (k levels, or the two-level variant with `groups`
 *             groups), root in the middle, then a flooding broadcast back;
 *   pipeline  the baseline: a chain reduce to the row's end, then a flooding broadcast;
 *   auto      the lower predicted cycles of the two.
 * Every row runs the same program at once (one class for the region).
 *
 * dist.gemv_t is the same with W kept transposed, W[N, K] {N_y, K_x}: the local product reads
 * the block as stored (x . Wᵀ), the decode step's LM head tied to the embedding table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/mesh_algos.h"
#include "waferc/diag.h"

static double ktree_cost(int n, int K, int groups, int64_t len, const wf_coll_params *p) {
  return wf_gemv_ktree_allreduce(n, K, groups, len, p); /* gemv_cost.c: also wafer-bench llm's */
}

static double pipeline_cost(int n, int64_t len, const wf_coll_params *p) {
  return wf_gemv_pipeline_allreduce(n, len, p);
}

int wf_lower_gemv(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value xv = op->operands[0], wv = op->operands[1], yv = op->results[0];
  const wf_type *tx = wf_value_type(f, xv), *tw = wf_value_type(f, wv), *ty = wf_value_type(f, yv);
  int tr = op->code == WF_OP_DIST_GEMV_T, dk = tr ? 1 : 0, dn = 1 - dk; /* W's K and N dims */
  int lead_ok = tx->rank >= 1 && ty->rank == tx->rank;
  for (int d = 0; lead_ok && d + 1 < tx->rank; d++)
    lead_ok = tx->dims[d] == 1 && ty->dims[d] == 1;
  int ax = lead_ok ? tx->layout.dims[tx->rank - 1].split : WF_AXIS_NONE;
  if (ax == WF_AXIS_NONE && lead_ok && tx->dims[tx->rank - 1] == 1 && tw->rank == 2)
    ax = tw->layout.dims[dk].split; /* K = 1 */
  int oy = ax == WF_AXIS_X ? WF_AXIS_Y : WF_AXIS_X;
  if (!lead_ok || tw->rank != 2 || (ax != WF_AXIS_X && ax != WF_AXIS_Y) || tw->layout.dims[dk].split != ax ||
      (tw->layout.dims[dn].split != oy && tw->layout.dims[dn].split != WF_AXIS_NONE) ||
      ty->layout.dims[ty->rank - 1].split != tw->layout.dims[dn].split) {
    wf_error(op->loc, "%s needs x[K]{K_x}, W%s and y[N]{N_y} (N may be unsplit), or the same with x and y "
                      "swapped, and x, y [1, .., K]; got other layouts",
             wf_opinfos[op->code].name, tr ? "[N,K]{N_y, K_x}" : "[K,N]{K_x, N_y}");
    return WF_EXIT_UNSUPPORTED;
  }
  int P = ax == WF_AXIS_X ? L->w : L->h; /* the PEs of one allreduce line */
  int64_t r, k, kb, n, yr, yc;
  wf_lower_block(L, xv, &r, &k);
  if (tr) wf_lower_block(L, wv, &n, &kb);
  else wf_lower_block(L, wv, &kb, &n);
  wf_lower_block(L, yv, &yr, &yc);
  WF_ASSERT(k == kb && yr * yc == n);
  const char *how = wf_op_str(f, op, "allreduce", "auto");
  int K = (int)wf_op_int(f, op, "k", 2), groups = (int)wf_op_int(f, op, "groups", 0);
  if (L->gemv_how) how = L->gemv_how; /* waferc --gemv-allreduce, --gemv-k, --gemv-groups */
  if (L->gemv_k >= 0) K = L->gemv_k;
  if (L->gemv_groups >= 0) groups = L->gemv_groups;
  if (K < 1 || groups < 0) {
    wf_error(op->loc, "dist.gemv: k must be >= 1 and groups >= 0 (got k=%d, groups=%d)", K, groups);
    return WF_EXIT_INPUT;
  }
  wf_coll_params p = wf_coll_params_from_target(L->t);
  /* Neither the op nor the command line fixes the K-tree's shape: the cost model picks it
   * (WaferLLM §6.2 tunes K and the groups by P and message length), one shape per mesh axis
   * for every dist.gemv of the function that allreduces along it (gemv_cost.c). */
  int tuned = P > 2 && !wf_op_attr(f, op, "k") && !wf_op_attr(f, op, "groups") && L->gemv_k < 0 && L->gemv_groups < 0;
  if (tuned) {
    int64_t *lens = NULL;
    int nl = 0, cap = 0;
    wf_func_foreach_op(f, o2) {
      if (o2->code != WF_OP_DIST_GEMV && o2->code != WF_OP_DIST_GEMV_T) continue;
      const wf_type *x2 = wf_value_type(f, o2->operands[0]);
      if (x2->rank < 1 || x2->layout.rank != x2->rank || x2->layout.dims[x2->rank - 1].split != ax) continue;
      if (nl == cap) {
        lens = realloc(lens, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *lens);
        WF_ASSERT(lens);
      }
      int64_t kb2;
      if (o2->code == WF_OP_DIST_GEMV_T) wf_lower_block(L, o2->operands[1], &lens[nl++], &kb2);
      else wf_lower_block(L, o2->operands[1], &kb2, &lens[nl++]);
    }
    wf_gemv_ktree_tune(P, lens, nl, &p, &K, &groups);
    free(lens);
  }
  double ck = ktree_cost(P, K, groups, n, &p), cp = pipeline_cost(P, n, &p);
  double cr = P > 1 ? wf_coll_ring_lowered(P, n, &p) : 0;
  if (strcmp(how, "ktree") && strcmp(how, "pipeline") && strcmp(how, "ring") && strcmp(how, "auto")) {
    wf_error(op->loc, "dist.gemv: allreduce '%s' is not lowered (ktree, pipeline, ring or auto)", how);
    return WF_EXIT_UNSUPPORTED;
  }
  /* the choice and the prediction are gemv_cost.c's, which full-size estimates read too */
  const char *chosen = how;
  int64_t predicted = wf_gemv_predict(L->t, P, k, n, how, K, groups, &chosen);
  int use_ring = !strcmp(chosen, "ring"), use_ktree = !strcmp(chosen, "ktree");
  int sx = wf_lower_sym(L, xv), sw = wf_lower_sym(L, wv), sy = wf_lower_sym(L, yv);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_int(n)});
  wf_emit(L, NULL, tr ? WF_PEOP_MATMUL_T : WF_PEOP_MATMUL,
          (wf_pe_arg[]){wf_arg_sym(sy), wf_arg_sym(sx), wf_arg_sym(sw), wf_arg_int(1), wf_arg_int(k),
                        wf_arg_int(n)});
  int64_t local = n + (k * n + L->t->fmac_per_cycle - 1) / L->t->fmac_per_cycle;
  int rc = 0;
  wf_coll_line ln = {ax, P, wf_guard0()};
  if (P > 1) {
    wf_line_tree t = {0, NULL, 1}; /* by shape: its groups repeat along the row */
    int root = P - 1;
    if (use_ring) {
      rc = wf_lower_coll_ring(L, &ln, sy, n, op->loc);
    } else if (use_ktree) {
      wf_ktree kt;
      if (wf_ktree_build(P, K, groups, &kt)) {
        wf_error(op->loc, "dist.gemv: cannot build a %d-level K-tree over %d PEs", K, P);
        return WF_EXIT_NOFIT;
      }
      t.n = P;
      t.parent = kt.tree.parent;
      root = kt.root;
      rc = wf_lower_tree_reduce(L, &ln, &t, sy, n, WF_PEOP_RECVADD, op->loc, NULL);
      /* relayed past the color budget: the relay's cycles replace the K-tree's reduce */
      wf_coll_cache_relay_extra(L, ck - wf_coll_bcast_at(P, n, root, &p));
      wf_ktree_free(&kt);
    } else {
      wf_coll_result res;
      rc = wf_lower_coll_reduce(L, &ln, WF_COLL_CHAIN, root, sy, n, WF_PEOP_RECVADD, op->loc, &res);
    }
    if (!rc && !use_ring) rc = wf_lower_coll_bcast(L, &ln, root, sy, n, op->loc);
    if (!rc && !use_ring) wf_coll_cache_reset_last(L, &ln);
  }
  if (use_ring) snprintf(out->text, sizeof out->text, "gemv:ring-allreduce");
  else if (groups > 0 && use_ktree) snprintf(out->text, sizeof out->text, "meshgemv:ktree{groups=%d}", groups);
  else if (use_ktree) snprintf(out->text, sizeof out->text, "meshgemv:ktree{k=%d}", K);
  else snprintf(out->text, sizeof out->text, "gemv:pipeline-allreduce");
  out->lowering = out->text;
  WF_ASSERT(predicted == local + (int64_t)((use_ring ? cr : use_ktree ? ck : cp) + 0.5));
  out->predicted = predicted;
  snprintf(out->explain, sizeof out->explain,
           "%s: local GEMV 1x%lldx%lld (%lld cycles), allreduce of %lld words over %d PEs: ktree "
           "%.0f (%s %s=%d), pipeline %.0f, ring %.0f cycles predicted", !strcmp(how, "auto") ? "auto" : "forced",
           (long long)k, (long long)n, (long long)local, (long long)n, P, ck, tuned ? "the cost model's" : "fixed",
           groups > 0 ? "groups" : "k", groups > 0 ? groups : K, cp, cr);
  return rc;
}
