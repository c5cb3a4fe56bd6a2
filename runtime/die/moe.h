/* MoE at die level (MoEntwine §IV-§V): the models of its Table I, the mappings of attention
 * TP groups and their Full Token Domains (baseline, ER, hierarchical ER), the flows of their
 * collectives, expert-load traces and the balancers.
 *
 *   const wf_moe_model *m = wf_moe_model_find("deepseek-v3");
 *   wf_moe_mapping map;
 *   if (wf_moe_mapping_build(&sys, WF_MOE_ER, 4, &map)) ...     // 0, or why it cannot tile
 *   wf_die_flows ar = {0}, a2a = {0};
 *   wf_moe_allreduce_flows(&sys, &map, 256 * m->hidden * 2.0, 1, &ar);
 *   wf_moe_dispatch_flows(&sys, &map, m, 256, NULL, &a2a);      // NULL: uniform gating
 */
#ifndef WAFERC_RUNTIME_DIE_MOE_H
#define WAFERC_RUNTIME_DIE_MOE_H

#include "runtime/die/die.h"

/* ---- models (moe_models.c): MoEntwine Table I, plus each model's hidden size ------------- */

typedef struct wf_moe_model {
  const char *name;
  double params;        /* total parameters */
  int sparse_layers, layers;
  double expert_bytes;  /* one expert's weights (INT8: one byte per parameter) */
  int active, experts;  /* top-k, experts per layer */
  int hidden;           /* token width (not in Table I: the models' published configs) */
} wf_moe_model;

const wf_moe_model *wf_moe_model_find(const char *name);
const wf_moe_model *wf_moe_models(int *count);

/* ---- mappings and FTDs (moe_mapping.c) -------------------------------------------------- */

typedef enum { WF_MOE_BASELINE, WF_MOE_ER, WF_MOE_HER } wf_moe_mapping_kind;

typedef struct wf_moe_mapping {
  wf_moe_mapping_kind kind;
  int n, tp, groups;   /* dies, TP degree, TP groups (n / tp) */
  int *group_of;       /* [n] */
  int *ring;           /* [groups * tp]: each group's members in ring order */
  int *ftd_of;         /* [n]: the Full Token Domain each die fetches tokens in */
  int nftd;
  int blk_w, blk_h;    /* baseline: a TP group's block; ER/HER: an FTD's block (in dies) */
} wf_moe_mapping;

/* Baseline: each TP group a block of the mesh (MoEntwine Fig. 8(b)); a die's FTD is the set of
 * dies at its offset in every block. ER: each FTD a block holding one die of every group
 * (Fig. 8(c)); a group is one offset in every block, its ring visiting the blocks in a cycle
 * (entwined rings of fw- or fh-hop steps). HER: ER inside each wafer, the wafer the FTD
 * (Fig. 10(c)). 0, or WF_EXIT_UNSUPPORTED after reporting why the mesh cannot be tiled. */
int wf_moe_mapping_build(const wf_die_system *s, wf_moe_mapping_kind kind, int tp, wf_moe_mapping *m);
void wf_moe_mapping_free(wf_moe_mapping *m);
const char *wf_moe_mapping_name(wf_moe_mapping_kind k);
/* Mean bounding-box area of the FTDs, in dies. */
double wf_moe_ftd_area(const wf_die_system *s, const wf_moe_mapping *m);
/* The die of group g in FTD f (baseline, ER), or -1. */
int wf_moe_ftd_member(const wf_moe_mapping *m, int f, int g);

/* ---- collectives (collectives.c) --------------------------------------------------------- */

/* Ring allreduce of `bytes` over ring[0..n): a reduce-scatter of n-1 steps, then (with_ag) an
 * all-gather of n-1 steps; each step sends bytes/n to the next die, or half each way when
 * bidir. Steps numbered from step0; returns the steps used. */
int wf_die_ring_allreduce(wf_die_flows *f, const int *ring, int n, double bytes, int with_ag, int bidir, int step0);
/* All-gather only: each die's `shard` bytes reach every die of the ring (n-1 steps). */
int wf_die_ring_allgather(wf_die_flows *f, const int *ring, int n, double shard, int bidir, int step0);

/* The attention allreduce of every TP group at once (`bytes` per group). Baseline and ER: a
 * ring allreduce per group (with_ag: keep the all-gather half, as MoEntwine §IV-A does). HER:
 * the reduce-scatter inside each wafer, then an all-gather of the shards across wafers among
 * the dies at one position of every wafer (Fig. 10(c)). */
void wf_moe_allreduce_flows(const wf_die_system *s, const wf_moe_mapping *m, double bytes, int with_ag,
                            wf_die_flows *out);

/* The MoE dispatch: every die fetches the tokens its experts get, from inside its FTD (HER: its
 * wafer, where each die holds distinct tokens). `tokens` per TP group; dev_share[d] is the
 * share of all routed tokens that die d computes (NULL: experts spread evenly, uniform
 * gating). Without the all-gather (with_ag = 0; baseline and ER) a group's tokens lie in
 * shards, 1/tp on each member, so a die fetches from every member of every group (§IV-A,
 * Fig. 9). Combine is the same flows reversed (wf_moe_reverse). */
void wf_moe_dispatch_flows(const wf_die_system *s, const wf_moe_mapping *m, const wf_moe_model *md, double tokens,
                           const double *dev_share, int with_ag, wf_die_flows *out);
void wf_moe_reverse(const wf_die_flows *f, wf_die_flows *out);
/* The expert share per die when experts are spread evenly (E >= n: E/n each; E < n:
 * replicas split their expert's tokens). share has n entries and sums to 1. */
void wf_moe_even_share(int n, int experts, double *share);

/* ---- expert-load traces (moe_trace.c) ---------------------------------------------------- */

typedef struct wf_moe_trace {
  int iterations, experts;
  double *load; /* [iterations * experts]: tokens routed to each expert in one MoE layer */
} wf_moe_trace;

/* File format (docs/moe.md): `# wafer-moe expert-load trace` line, `experts E`, then one
 * line per iteration with E non-negative numbers. 0 or a WF_EXIT_* code after reporting. */
int wf_moe_trace_read(const char *path, wf_moe_trace *t);
int wf_moe_trace_write(const char *path, const wf_moe_trace *t);
/* A generated trace: `math` (one scenario: popularity settles after a warm-up) or `mixed`
 * (four scenarios whose mix drifts), `tokens` routed per iteration, seeded. 0 or -1 (bad
 * scenario name). */
int wf_moe_trace_generate(const char *scenario, int experts, int iterations, double tokens, unsigned seed,
                          double skew, wf_moe_trace *t);
void wf_moe_trace_free(wf_moe_trace *t);

/* ---- balancers (moe_balance.c) ----------------------------------------------------------- */

typedef enum { WF_BAL_NONE, WF_BAL_GREEDY, WF_BAL_TOPOLOGY, WF_BAL_NON_INVASIVE } wf_moe_balancer;

/* Expert placement: native experts (expert e on die e % n when E >= n; replicas otherwise)
 * plus `slots` shadow slots per die. */
typedef struct wf_moe_placement {
  int n, experts, slots;
  int *native;   /* [experts]: a die hosting it natively (first replica) */
  int *nrep;     /* [experts]: copies (native replicas + shadows) */
  int *shadow;   /* [n * slots]: expert in each shadow slot, -1 = free */
  int *rep_of;   /* [experts * max_rep]: dies hosting it */
  int max_rep;
} wf_moe_placement;

void wf_moe_placement_init(wf_moe_placement *p, int n, int experts, int slots);
void wf_moe_placement_copy(wf_moe_placement *dst, const wf_moe_placement *src);
void wf_moe_placement_free(wf_moe_placement *p);
/* heat[d] = sum over its experts of load[e] / copies(e). */
void wf_moe_device_heat(const wf_moe_placement *p, const double *load, double *heat);

typedef struct wf_moe_migration {
  int expert, src, dst; /* copy expert from die src into a shadow slot of die dst */
} wf_moe_migration;

/* Re-plans the shadow slots from predicted loads: greedy (EPLB-like: the globally hottest
 * expert per copy to the coldest die) or topology-aware (MoEntwine Alg. 1: the hottest die's
 * hottest expert to the nearest die that stays below the peak). Writes the copies that are
 * new into mig (cap entries) and returns their count; *p becomes the new placement. */
int wf_moe_rebalance(const wf_die_system *s, wf_moe_balancer b, const double *predicted, wf_moe_placement *p,
                     wf_moe_migration *mig, int cap);

#endif
