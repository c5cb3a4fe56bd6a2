/* MeshGEMV's predicted cycles (dist.gemv, WaferLLM §6) as pure functions: the allreduce
 * candidates lower_gemv.c weighs, and the whole op's prediction for a line of P PEs, so that a
 * full-size estimate (wafer-bench llm) reads the same numbers without building a program. */
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/mesh_algos.h"

double wf_gemv_ktree_allreduce(int n, int K, int groups, int64_t len, const wf_coll_params *p) {
  wf_ktree kt;
  if (n <= 1) return 0;
  if (wf_ktree_build(n, K, groups, &kt)) return -1;
  double v = wf_ktree_cost(&kt, len, p, 1);
  wf_ktree_free(&kt);
  return v;
}

/* The candidates are the trees of at most two levels: K = 1, K = 2 (groups of ceil(sqrt P))
 * and the two-level variant's group counts 2 .. P/2. A third level needs route codes of its
 * own where the levels meet: beside a decode step's other collectives, K = 3 and 4 need 33
 * route codes on some PE at 32² and 64², past wse2's 32 (docs/generation.md). */
double wf_gemv_ktree_tune(int P, const int64_t *lens, int nlens, const wf_coll_params *p, int *K, int *groups) {
  double best = -1;
  *K = 2, *groups = 0;
  if (P <= 2) return P <= 1 ? 0 : wf_gemv_ktree_allreduce(P, 2, 0, nlens > 0 ? lens[0] : 0, p);
  for (int cand = 0; cand < 2 + P / 2 - 1; cand++) {
    int k = cand < 2 ? cand + 1 : 2, gr = cand < 2 ? 0 : cand; /* then groups 2 .. P/2 */
    double sum = 0;
    for (int i = 0; i < nlens && sum >= 0; i++) {
      double v = wf_gemv_ktree_allreduce(P, k, gr, lens[i], p);
      sum = v < 0 ? -1 : sum + v;
    }
    if (sum >= 0 && (best < 0 || sum < best)) best = sum, *K = k, *groups = gr;
  }
  return best;
}

double wf_gemv_pipeline_allreduce(int n, int64_t len, const wf_coll_params *p) {
  if (n <= 1) return 0;
  return wf_coll_chain(n, len, p) + wf_coll_bcast_at(n, len, n - 1, p);
}

int64_t wf_gemv_predict(const wf_target *t, int P, int64_t k, int64_t n, const char *how, int K, int groups,
                        const char **chosen) {
  wf_coll_params p = wf_coll_params_from_target(t);
  double ck = wf_gemv_ktree_allreduce(P, K, groups, n, &p), cp = wf_gemv_pipeline_allreduce(P, n, &p);
  double cr = P > 1 ? wf_coll_ring_lowered(P, n, &p) : 0;
  int use_ktree, use_ring = 0;
  if (!strcmp(how, "ktree")) use_ktree = 1;
  else if (!strcmp(how, "pipeline")) use_ktree = 0;
  else if (!strcmp(how, "ring")) use_ktree = 0, use_ring = 1;
  else if (!strcmp(how, "auto")) {
    use_ktree = ck >= 0 && ck <= cp && ck <= cr;
    use_ring = !use_ktree && cr < cp;
  } else return -1;
  if (use_ktree && ck < 0) return -1;
  int64_t f = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1;
  int64_t local = n + (k * n + f - 1) / f; /* zero y, then the 1 x k x n local GEMV */
  double comm = use_ring ? cr : use_ktree ? ck : cp;
  if (chosen) *chosen = use_ring ? "ring" : use_ktree ? "ktree" : "pipeline";
  return local + (int64_t)(comm + 0.5);
}
