/* wafer-bench llm: full-size prefill and decode estimates for LLaMA-shaped models (llm*.c).
 *
 *   const wf_llm_model *m = wf_llm_model_find("llama3-8b");
 *   wf_llm_shape s;  wf_llm_prefill_shape(m, &t, 660, 660, 4096, &s);
 *   wf_llm_cost c;   wf_llm_prefill_cost(m, &t, &s, &c);   // cycles per layer, per op
 */
#ifndef WAFERC_TOOLS_WAFER_BENCH_LLM_H
#define WAFERC_TOOLS_WAFER_BENCH_LLM_H

#include <stdint.h>

#include "waferc/target.h"

/* A model's public configuration (Hugging Face config.json). */
typedef struct wf_llm_model {
  const char *name;
  int64_t hidden, layers, heads, kv_heads, ffn, vocab;
  int qkv_bias;                 /* Qwen2: q, k and v projections carry a bias */
  int prefill_w, decode_w;      /* default square meshes (the paper's settings, docs/llm-estimates.md) */
} wf_llm_model;

const wf_llm_model *wf_llm_model_find(const char *name);
extern const wf_llm_model wf_llm_models[];
extern const int wf_llm_n_models;

/* The per-PE blocks one layer runs on, for a W x H region (head-layout's packing for W). */
typedef struct wf_llm_shape {
  int w, h;
  int64_t tokens;     /* prefill: the prompt P; decode: 1 */
  int64_t ctx;        /* decode: the context attended (keys in the cache) */
  int64_t eq, ekv;    /* packed widths of q and of k / v (head-layout: E'', replicated or shared kv) */
  int64_t dp;         /* packed head dim */
  int kv_shared;      /* GQA packed with its own heads (attention {kv_heads}) */
  /* decode: kv heads colocated with q (head-layout{gqa=colocate}, wf_llm_shape_colocate): each
   * kv head cut over coloc_m columns of coloc_sub, coloc_parts parts per query head, q's
   * coloc_group pieces beside each; coloc_m = 0: replicated (or shared) */
  int64_t coloc_m, coloc_group, coloc_parts, coloc_sub;
  int64_t sb;         /* prefill: sequence rows per PE (ceil(P / H)) */
  int64_t cap;        /* decode: cache slots per row (ceil(ctx / H), the shift policy's balance) */
  /* decode: the K-tree's shape per reduced axis, [0] along y (H PEs), [1] along x (W PEs):
   * K levels, or the two-level variant's group count when groups > 0; K = 0: not tuned, K = 2 */
  int gemv_k[2], gemv_groups[2];
} wf_llm_shape;

void wf_llm_shape_init(const wf_llm_model *m, int w, int h, int64_t tokens, int64_t ctx, wf_llm_shape *s);
/* Decode with kv heads colocated with q where head-layout's gathered map allows it (GQA / MQA
 * whose query heads span columns): eq and ekv become the colocated widths. 1 when colocated. */
int wf_llm_shape_colocate(const wf_llm_model *m, wf_llm_shape *s);
/* Decode: the K-tree shapes the compiler's dist.gemv lowering would pick for the whole model's
 * step (wf_gemv_ktree_tune over every GEMV reducing along each axis: all layers and the LM
 * head), into s->gemv_k / gemv_groups. */
void wf_llm_decode_tune(const wf_llm_model *m, const wf_target *t, wf_llm_shape *s);

/* One op of a layer: how many per layer and the predicted cycles of one. */
#define WF_LLM_MAX_OPS 24
typedef struct wf_llm_op {
  const char *name;  /* "q_proj", "attention", ... */
  const char *kind;  /* "meshgemm", "meshgemv:ktree", "attention", "rmsnorm", "elementwise", ... */
  int count;
  int64_t cycles;    /* one of them */
} wf_llm_op;

typedef struct wf_llm_cost {
  wf_llm_op layer[WF_LLM_MAX_OPS], model[WF_LLM_MAX_OPS]; /* per layer; once per pass (embedding, head) */
  int n_layer, n_model;
  int64_t layer_cycles, model_cycles; /* sums */
} wf_llm_cost;

/* The cost model for one prefill (MeshGEMM, packed attention) or decode step (MeshGEMV with the
 * K-tree allreduce, decode attention over a balanced cache). 0, or -1 with a message on stderr
 * when a piece cannot be predicted (e.g. a mesh the MeshGEMM model refuses). */
int wf_llm_prefill_cost(const wf_llm_model *m, const wf_target *t, const wf_llm_shape *s, wf_llm_cost *c);
int wf_llm_decode_cost(const wf_llm_model *m, const wf_target *t, const wf_llm_shape *s, wf_llm_cost *c);

/* Words of one layer's weights a PE holds (its blocks of the seven projection matrices, K
 * split over the rows, N over the columns; the norms' vectors left out). */
int64_t wf_llm_weight_words(const wf_llm_model *m, const wf_llm_shape *s);

/* IR text of one layer (llm_ir.c): prefill in head-layout's packed form on an S x S region with
 * the blocks of `full` (so a smaller mesh runs the same per-PE work per step); decode as the
 * layer's dist.gemv ops with the K-tree and its local ops at the full decode mesh. Splat
 * constants as weights. Caller frees. */
char *wf_llm_prefill_ir(const wf_llm_model *m, const wf_llm_shape *full, int S);
char *wf_llm_decode_ir(const wf_llm_model *m, const wf_llm_shape *s);
/* The final norm and LM head, sampled the same way (decode = 0: prefill on S x S). */
char *wf_llm_once_ir(const wf_llm_model *m, const wf_llm_shape *s, int S, int decode);

#endif
