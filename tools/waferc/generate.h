/* waferc --generate: compiles a model for generation (docs/generation.md). */
#ifndef WAFERC_TOOLS_GENERATE_H
#define WAFERC_TOOLS_GENERATE_H

#include "passes/cli.h"
#include "waferc/backend.h"

/* --switch-weights (docs/generation.md, "The switch"): move every decode weight the switch can
 * build, keep both phases' weights resident, or move them when the SRAM budgets allow it. */
enum { WF_SW_AUTO, WF_SW_MOVE, WF_SW_RESIDENT };

typedef struct wf_gen_compile {
  const char *model;                /* an ONNX export with a dynamic sequence axis */
  const char *ids_shape;            /* --input-shape NAME=1xL: the prompt's token ids */
  int64_t n;                        /* tokens to generate (the first comes from the prefill) */
  const char *kv_cache;             /* "shift" (default) or "concat" */
  const char *gemm_algo;            /* lower-gemm's algo, NULL = auto ("A,buffers=B" with
                                     * --gemm-buffers: lower-gemm{algo=%s} takes both) */
  const char *out_dir;
  wf_plan_opts po;                  /* flags, collectives, quiet */
  int autotune;                     /* --autotune: the mesh from the cost model's candidates */
  int dec_w, dec_h;                 /* --decode-mesh=WxH: the decode region (0: the prefill's mesh) */
  int switch_weights;               /* --switch-weights: WF_SW_AUTO (the default), _MOVE or _RESIDENT */
  int rope_computed;                /* --rope=computed: decode steps compute RoPE's rows, hold no table */
  const char *gqa;                  /* --gqa: NULL or "auto" (on one region the decode step holding
                                     * fewer bytes per PE of colocate and replicate; replicate with a
                                     * switch plan), "colocate" or "replicate" */
} wf_gen_compile;

/* Writes out_dir/ (the prefill plan, with the manifest's "generate"), out_dir/decode/ (the
 * decode step) and, when the decode region differs from the prefill's, out_dir/switch/ (the
 * caches moved onto it). Returns a WF_EXIT_* code; exit 4 names the largest N whose KV cache fits. */
int wf_waferc_compile_generate(wf_cli *c, const wf_gen_compile *g);

#endif
