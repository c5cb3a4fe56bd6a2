/* waferc --generate --decode-mesh: the switch plan between a prefill region and the decode
 * region in its corner, which moves the KV caches and the decode step's matrix weights over the
 * fabric (docs/generation.md, "The switch"). */
#ifndef WAFERC_TOOLS_SWITCH_H
#define WAFERC_TOOLS_SWITCH_H

#include <cjson/cJSON.h>

#include "generate.h"
#include "ir/rules.h"
#include "ir/support/gemm_skew.h"

/* One attention layer's packed k (and v) as a plan holds it: the heads, the packed slot width
 * (head_dim), the kv heads when k and v hold their own (0: one slot per query head) and k's
 * type [1, S, Nk]. */
typedef struct layer_pack {
  int64_t heads, dp, kvh, dims[3];
  char proj[4][128]; /* the constants the q, k, v and output projections multiply by ("" when not found) */
  int kvgat, coloc;  /* k and v cut over columns as `ga` says (attention {kv_gather}), and q
                      * colocated with the pieces (attention {q_colocated}) */
  wf_attn_gather ga;
} layer_pack;
#define MAX_LAYERS 31

/* A decode weight that the switch builds from the prefill's weight W [K, N] {K_y, N_x} of the
 * same name (docs/generation.md, "The switch"). The decode step holds it in the same axes (q,
 * k, v, the MLP's up and gate, the LM head) or in the other ones, {K_x, N_y} (W_o, W_down:
 * `swap`). One kv_switch moves it, over W or, swapped, over Wᵀ (a transpose over the fabric
 * first): the operand's rows (K, or N when swapped) are re-cut for the decode region's rows and
 * its columns mapped by head slot for the projections whose packing the layer says (q, k and v
 * as the caches, W_o's rows as q) and one to one for the rest. */
typedef struct weight_move {
  char *name, *psym, *dsym;               /* the weight's name; its symbol in each plan */
  int swap;
  wf_gemm_skew skew;                      /* the prefill's pre-skew (unskew first); ring none if not */
  int64_t rows, np, cap, cbd, src_dp, dst_dp, d; /* the kv_switch's operand [rows, np] and map */
  int64_t *slots;
  int n_slots;
  int64_t *cols;                          /* kv_switch's cols (then no slots), n_cols entries */
  int64_t n_cols;
} weight_move;

/* The manifest of the plan in dir, parsed (NULL when unreadable). */
cJSON *wf_switch_read_manifest(const char *dir);
/* The decode weights the switch can build (*n_out of them) for the prefill plan pdir on the
 * target's mesh and the decode step ddir on its dw x dh corner; free with wf_switch_free_moves. */
weight_move *wf_switch_plan_moves(const wf_cli *c, int layers, const layer_pack *pre, const layer_pack *dec, int dw,
                                  int dh, const char *pdir, const char *ddir, int *n_out);
void wf_switch_free_moves(weight_move *mv, int n);
/* The weights both plans of one region hold the same way (docs/generation.md, "One region"):
 * the decode step's weights whose prefill namesake has the same dtype, shape, padding, split
 * and bytes and neither is pre-skewed; a PE holds them once. Only name, psym and dsym are set;
 * free with wf_switch_free_moves. */
weight_move *wf_switch_shared_weights(const char *pdir, const char *ddir, int *n_out);
/* Writes dir/, the switch plan for the target's mesh: the caches of `layers` attention layers
 * and the n_mv weight moves onto the dw x dh corner, cap cache slots per row. A WF_EXIT_* code. */
int wf_switch_compile(wf_cli *c, const wf_gen_compile *g, int layers, const layer_pack *pre, const layer_pack *dec,
                      int64_t cap, int dw, int dh, const weight_move *mv, int n_mv, const char *dir);

#endif
