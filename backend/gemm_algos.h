/* waferc backend — distributed GEMM algorithms (dist.gemm, docs/gemm.md): names, the cost
 * formulas `--gemm-algo=auto` ranks them by, and the lowering entry points.
 *
 *   wf_gemm_algo a;
 *   wf_gemm_algo_parse("meshgemm", &a);
 *   int64_t c = wf_gemm_predict(t, a, 8, 8, 64, 64, 64); // 8x8 mesh, 64x64 blocks
 */
#ifndef WAFERC_BACKEND_GEMM_ALGOS_H
#define WAFERC_BACKEND_GEMM_ALGOS_H

#include <stdint.h>

#include "waferc/target.h"

typedef enum wf_gemm_algo {
  WF_GEMM_MESHGEMM,  /* WaferLLM §5: cyclic shift over INTERLEAVE two-hop rings */
  WF_GEMM_CANNON,    /* the same shifts over the plain ring (wrap link N-1 hops long) */
  WF_GEMM_SUMMA,     /* per k-step row and column broadcasts */
  WF_GEMM_ALLGATHER, /* gather the whole A row panel and B column panel, then compute */
  WF_GEMM_COUNT
} wf_gemm_algo;

extern const char *const wf_gemm_algo_names[WF_GEMM_COUNT];
/* 0 and *out set, or -1 for an unknown name. */
int wf_gemm_algo_parse(const char *name, wf_gemm_algo *out);

/* Predicted cycles of one dist.gemm on a w x h region whose PEs hold A blocks m x k and
 * B blocks k x n (C blocks m x n). -1 when the algorithm cannot lower that shape. */
int64_t wf_gemm_predict(const wf_target *t, wf_gemm_algo a, int w, int h, int64_t m, int64_t k,
                        int64_t n);
/* The algorithm with the lowest prediction (ties: table order). */
wf_gemm_algo wf_gemm_auto(const wf_target *t, int w, int h, int64_t m, int64_t k, int64_t n);

#endif
