/* waferc training co-exploration (WATOS) on the die-level model: the wafer template and its
 * enumerator (train_hw.c), the training workload (train_models.c, train_ops.c), the schedulers
 * (train_sched.c: Alg. 1, GCMR Alg. 2, placement by GlobalCost Eq. 2, Alg. 3; train_ga.c: the
 * genetic optimizer), the evaluators (train_eval.c: 1F1B event schedule with the alpha-beta
 * model of Eq. 1; train_sim.c: the same pipeline on the SimGrid engine of die.h) and the
 * baselines (train_base.c). docs/dse.md.
 *
 *   wf_die_target t;  wf_die_target_load("watos-config3", &t);
 *   wf_train_work w;  wf_train_work_init(&w, wf_train_model_find("llama2-30b"), NULL);
 *   wf_train_plan p;  wf_train_search(&t, &w, &WF_TRAIN_SEARCH_DEFAULT, &p);  // Alg. 1 .. GA
 *   double secs = p.iter_s;                  // alpha-beta 1F1B; train_sim.c gives SimGrid's
 */
#ifndef WAFERC_RUNTIME_DIE_TRAIN_H
#define WAFERC_RUNTIME_DIE_TRAIN_H

#include "runtime/die/die.h"

/* ---- models (train_models.c) -------------------------------------------------------------- */

typedef struct wf_train_model {
  const char *name;
  int layers, hidden, heads, kv_heads, ffn, vocab;
  int gated;        /* SwiGLU (3 FFN matrices) or GELU (2) */
  int experts;      /* 0: dense */
  int topk, expert_ffn, shared_experts;
  int moe_every;    /* every k-th layer is MoE (1: all) */
  int dense_first;  /* the first layers stay dense (DeepSeek-V3: 3) */
  const char *source;
} wf_train_model;

const wf_train_model *wf_train_models(int *count);
const wf_train_model *wf_train_model_find(const char *name);
double wf_train_model_params(const wf_train_model *m);        /* all parameters */
double wf_train_model_active_params(const wf_train_model *m); /* per token (MoE: top-k) */
int wf_train_layer_is_moe(const wf_train_model *m, int layer);

/* ---- the workload: one layer's operators on one die (train_ops.c) ------------------------- */

enum { WF_OP_LN1, WF_OP_QKV, WF_OP_FLASH, WF_OP_PROJ, WF_OP_LN2, WF_OP_UP, WF_OP_ACT, WF_OP_DOWN, WF_OP_N };
enum { WF_TP_HK, WF_TP_SK, WF_TP_B, WF_TP_N }; /* TP split strategies */
enum { WF_DF_OS, WF_DF_WS, WF_DF_IS };          /* intra-die dataflows */

typedef struct wf_train_cfg {
  int seq, micro_batch, micro_batches; /* tokens per micro-batch = seq * micro_batch */
  double efficiency;                    /* achieved fraction of peak FLOP/s */
} wf_train_cfg;

typedef struct wf_train_op {
  double flops_f, flops_b;  /* per die, one micro-batch */
  double ema_f, ema_b;      /* DRAM bytes per die (chosen dataflow) */
  double ckpt;              /* bytes per die this op stores for the backward (0 if recomputed) */
  double comm_f, comm_b;    /* TP collective bytes (allreduce-equivalent) after this op */
  int dataflow;
  double gm, gk, gn;        /* a GEMM op: one GEMM's M x K x N on the die (MoE: one expert's); 0 otherwise */
} wf_train_op;

struct wf_train_optable;
typedef struct wf_train_work {
  const wf_train_model *m;
  wf_train_cfg c;
  const struct wf_train_optable *optable; /* GEMM efficiencies (train_optable.c); NULL: roofline */
  double tokens;            /* per micro-batch */
  double model_flops;       /* useful FLOPs per iteration (6 x active params x tokens + attention) */
} wf_train_work;

extern const wf_train_cfg WF_TRAIN_CFG_DEFAULT;
void wf_train_work_init(wf_train_work *w, const wf_train_model *m, const wf_train_cfg *c);
/* Layer `layer` (0-based) on one die of a TP group of tp with strategy st, on die target t. */
void wf_train_layer_ops(const wf_train_work *w, const wf_die_target *t, int layer, int tp, int st,
                        wf_train_op ops[WF_OP_N]);
/* Bytes per die for the weights, gradients and optimizer of `layers` layers (mixed precision:
 * fp16 weights and gradients, fp32 master weights and Adam moments: 16 B per parameter). */
double wf_train_layer_params(const wf_train_model *m, int layer); /* parameters of one layer */
extern const char *const wf_train_op_names[WF_OP_N];
extern const char *const wf_train_tp_names[WF_TP_N];
extern const char *const wf_train_df_names[3];
double wf_train_gemm_ema(double M, double K, double N, double sram, int *dataflow);
/* The LM head's GEMM (tokens x hidden x vocab / tp) on one die of the last stage. */
void wf_train_head_op(const wf_train_work *w, int tp, int st, wf_train_op *o);

/* ---- per-operator costs (train_optable.c): the roofline, or a table simulated by waferc ---- */

/* The efficiency of a per-core GEMM block m_core x k_core x n_core on a core array, simulated
 * by waferc's fabric runtime on the Dojo-like target (tools/wafer-dse/gen_optable.py writes
 * the CSV; targets/dies/dojo-gemm.csv is the committed one). docs/dse.md. */
enum { WF_OPT_AXIS = 16 };
typedef struct wf_train_optable {
  char path[4096];             /* where it was read from */
  int mesh_w, mesh_h;          /* the core array the tiles were simulated on */
  int nm, nk, nn;              /* grid values per axis */
  double m[WF_OPT_AXIS], k[WF_OPT_AXIS], n[WF_OPT_AXIS]; /* ascending */
  double eff[WF_OPT_AXIS][WF_OPT_AXIS][WF_OPT_AXIS];     /* useful FMACs / (cores x rate x cycles) */
} wf_train_optable;
/* NAME (NAME.csv in $WAFERC_TARGET_PATH, its dies/, or targets/dies/) or a path. 0, WF_EXIT_IO,
 * or WF_EXIT_INPUT for a malformed table (every error at file:line). */
int wf_train_optable_load(const char *name, wf_train_optable *t);
/* A block's efficiency: an extent above the grid's largest runs as equal tiles no larger than
 * it; inside, trilinear in log2 of each extent; 0 when any extent is below the grid's smallest
 * (the caller keeps the roofline). */
double wf_train_optable_block_eff(const wf_train_optable *t, double m_core, double k_core, double n_core);
/* An M x K x N GEMM on a die of cores_w x cores_h cores: blocks M / cores_h, K / max, N / cores_w. */
double wf_train_optable_eff(const wf_train_optable *t, double M, double K, double N, int cores_w, int cores_h);
enum { WF_COST_SIM = 1, WF_COST_ROOFLINE = 2 }; /* bits: where an op's compute time came from */
extern const char *const wf_train_cost_names[]; /* by bits: "none", "sim", "roofline", "sim+roofline" */
/* An op's compute seconds on one die, forward (bwd 0) or backward: FLOPs / (peak x efficiency),
 * the table's efficiency for a GEMM inside it, else the roofline's (w->c.efficiency); *src gets
 * the source bits or'ed in (src may be NULL). */
double wf_train_op_compute_s(const wf_die_target *t, const wf_train_work *w, const wf_train_op *o, int bwd, int *src);
/* max(compute, DRAM bytes / bandwidth): the op's time. */
double wf_train_op_time(const wf_die_target *t, const wf_train_work *w, const wf_train_op *o, int bwd, int *src);

/* ---- the wafer template and enumerator (train_hw.c) ---------------------------------------- */

typedef struct wf_train_template {
  double wafer_mm2;            /* usable wafer area */
  double die_mm2[2];           /* compute die areas (16x16 and 18x18 cores) */
  int die_cores[2];
  double core_flops;           /* FP16 FLOP/s per core */
  double hbm_mm2, hbm_gb, hbm_bw;  /* one DRAM chiplet */
  double edge_bw;              /* a compute die's edge I/O, shared by D2D and DRAM */
  double hbm_io_bw;            /* edge I/O one DRAM chiplet takes */
} wf_train_template;
extern const wf_train_template WF_TRAIN_TEMPLATE_DEFAULT;
/* Candidates under the area constraint, as die targets (mesh as square as the count allows).
 * Returns the count written (at most cap). */
int wf_train_enumerate(const wf_train_template *tp, wf_die_target *out, int cap);

/* ---- plans and the schedulers (train_sched.c, train_ga.c) ---------------------------------- */

enum { WF_MAX_STAGES = 64, WF_MAX_DIES = 256, WF_MAX_PAIRS = 128 };

typedef struct wf_train_stage {
  int layer0, layers;
  double F, B;                 /* seconds per micro-batch without recomputation */
  double modelp;               /* bytes per die */
  double ckpt_full;            /* bytes per die of checkpoints per in-flight micro-batch */
  int inflight;                /* micro-batches in flight (1F1B: p - s) */
  int kind_layers[2];          /* dense and MoE layers of the stage */
  double r_time[2][WF_OP_N];   /* recomputing the op in one layer of that kind, s */
  double r_ckpt[2][WF_OP_N];   /* its checkpoint per micro-batch, bytes per die */
  int recomp[2][WF_OP_N];      /* layers of each kind that recompute each op */
  double cap;                  /* checkpoint bytes the die holds itself: DRAM - modelP */
  double xfer;                 /* p2p to the next stage, s (alpha-beta, with link penalty) */
  double off_s, help_s;        /* offload transfer (Sender) and extra DRAM time (Helper), s */
  double recomp_s;             /* seconds of recomputation per micro-batch */
  double mem;                  /* checkpoint bytes the stage keeps (local + offloaded) */
} wf_train_stage;

typedef struct wf_train_alloc { int sender, helper; double bytes; } wf_train_alloc;

typedef struct wf_train_plan {
  int tp, pp, strategy;
  int shape_w, shape_h;        /* a stage's dies: shape_w x shape_h */
  int slots, slot[WF_MAX_STAGES]; /* stage s sits in slot slot[s] of the tiling */
  int slot_x[WF_MAX_STAGES * 4], slot_y[WF_MAX_STAGES * 4]; /* slot origins */
  wf_train_stage st[WF_MAX_STAGES];
  int nalloc;
  wf_train_alloc alloc[WF_MAX_PAIRS];
  int recompute;               /* recomputation allowed */
  int micro_batches;
  double opt_s;                /* optimizer step (and strategy B's gradient allreduce), s */
  double act_bytes;            /* activation a stage hands the next, per micro-batch */
  int feasible;
  double t_max;                /* the slowest stage, s per micro-batch */
  double global_cost;          /* Eq. 2 */
  double iter_s;               /* alpha-beta 1F1B iteration */
  double sim_s;                /* SimGrid 1F1B iteration (0 if not simulated) */
  double comm_ar_s;            /* one TP allreduce of a layer's activation (Eq. 1) */
} wf_train_plan;

typedef struct wf_train_faults {
  unsigned char die_dead[WF_MAX_DIES];
  unsigned char link_dead[WF_MAX_DIES * 4];
  int any;
} wf_train_faults;

typedef struct wf_train_search_opts {
  int recompute;      /* allow recomputation */
  int gcmr, memsched, ga; /* ablation switches: +R, +M, +GA */
  int fixed_tp, fixed_pp; /* 0: Alg. 1 chooses */
  int serpentine;     /* naive placement */
  int hk_only;        /* Megatron's split (H then K) only */
  int naive_recompute;/* Megatron-like: full-layer recompute, uniform across stages */
  int ga_steps, ga_pop;
  double ga_elite;    /* omega */
  double gamma_w;     /* weight of the conflict factor */
  unsigned seed;
  const wf_train_faults *faults; /* NULL: a healthy wafer */
} wf_train_search_opts;
extern const wf_train_search_opts WF_TRAIN_SEARCH_DEFAULT;

/* Stage costs for a (tp, pp, strategy) on the target: F, B, modelP, checkpoints. */
int wf_train_stages(const wf_die_target *t, const wf_train_work *w, int tp, int pp, int st, wf_train_plan *p);
/* A stage's recomputation profile: the least seconds of recomputation per micro-batch that keep
 * its checkpoints within `budget` bytes per die (bounded knapsack over the ops of its layers);
 * counts[] gets the choice. Infinity when even full recomputation does not fit. */
double wf_train_recomp_profile(const wf_train_stage *st, double budget, int counts[2][WF_OP_N]);
/* GCMR (Alg. 2) over budgets in quanta: q[s][k] = stage s's time with k quanta; cap[s] its local
 * quanta; total the pool. Fills take[s] (quanta per stage) and returns the minimal max time. */
double wf_train_gcmr_dp(int pp, int quanta, const double *q /* [pp][quanta+1] */, int total, int *take);
/* Mem_pair (Alg. 2 lines 12-14): Senders by overflow and Helpers by spare, both descending,
 * popped in pairs; a Sender left over spills to the next Helpers. Returns the pairs. */
int wf_train_mem_pair(int pp, const double *overflow, const double *spare, wf_train_alloc *out, int cap);
/* The full GCMR on a plan: budgets, recomputation, Senders and Helpers, Mem_pair. */
int wf_train_gcmr(wf_train_plan *p, int pooled);
/* Alg. 3: overflow[s] > 0 for Senders, spare[h] > 0 for Helpers; cost(s, h) per byte. */
int wf_train_alloc3(int pp, const double *overflow, const double *spare, const double *cost, wf_train_alloc *out,
                    int cap);
/* Slots: tile the mesh with shape_w x shape_h rectangles; returns the count (healthy ones). */
int wf_train_tile(const wf_die_system *s, const wf_train_faults *f, int sw, int sh, int *sx, int *sy, int cap);
/* Eq. 2 for the plan's placement and allocation. */
double wf_train_global_cost(const wf_die_system *s, const wf_train_plan *p, const wf_train_work *w, double gamma_w);
void wf_train_place_serpentine(wf_train_plan *p);
void wf_train_place_opt(const wf_die_system *s, wf_train_plan *p, const wf_train_work *w, double gamma_w);
/* Memory scheduling: offload overflow by Alg. 3 over the placement (GlobalCost per byte). */
void wf_train_memsched(const wf_die_system *s, wf_train_plan *p, const wf_train_work *w, double gamma_w);
/* Alg. 1 and the downstream schedulers; p gets the best plan. 0, or WF_EXIT_NOFIT. */
int wf_train_search(const wf_die_system *s, const wf_train_work *w, const wf_train_search_opts *o, wf_train_plan *p);
/* The GA (Op1-Op5, fitness t_max x GlobalCost, elitism omega) from a seed plan. */
void wf_train_ga(const wf_die_system *s, const wf_train_work *w, const wf_train_search_opts *o, wf_train_plan *p);
/* Re-derives recomp_s, mem, t_max, offload costs and iter_s from recomp[] and alloc[]; returns
 * 0 when every die's memory holds. */
int wf_train_evaluate(const wf_die_system *s, const wf_train_work *w, wf_train_plan *p);

/* The faults the schedulers' routes avoid (wf_train_search sets them; tests may too): call it
 * again after changing them. A plan no healthy path holds together is infeasible. */
void wf_train_set_faults(const wf_train_faults *f);

/* ---- evaluators (train_eval.c, train_sim.c) ------------------------------------------------ */

/* 1F1B with per-stage forward f[s] and backward b[s] seconds and p2p transfer x[s] (stage s to
 * s + 1, each way): the event schedule's iteration time. */
double wf_train_1f1b(int pp, int n, const double *f, const double *b, const double *x);
/* Eq. 1: t = alpha + beta / BW with beta = 2 (tp - 1) / tp * bytes. */
double wf_train_eq1(double alpha, double bw, int tp, double bytes);
/* The die a stage's rank r sits on, and every die of the plan (for the SimGrid platform). */
int wf_train_stage_die(const wf_die_system *s, const wf_train_plan *p, int stage, int r);
/* A stage's dies in its TP ring's order (a cycle round the shape when it has one, 2 x k, else
 * a line); returns how many. */
int wf_train_ring_of(const wf_die_system *s, const wf_train_plan *p, int stage, int *ring);
/* Hops of the route a -> b round the search's dead links (wf_train_set_faults), -1 when none. */
int wf_train_route_hops(const wf_die_system *s, int a, int b);
/* The plan's 1F1B on SimGrid: TP rings and offload flows with contention, compute and DRAM per
 * die. Needs the engine open with wf_train_sim_flows' pairs. Returns seconds. */
double wf_train_simulate(wf_die_engine *e, const wf_die_system *s, const wf_train_work *w, wf_train_plan *p,
                         double *die_busy, double *dram_use, double *link_bytes);
/* The die pairs a plan's simulation uses (TP rings, stage hand-offs, Mem_pairs), to give
 * wf_die_engine_open: SimGrid holds one platform per process, so it is written for every plan
 * to be simulated at once. */
void wf_train_sim_flows(const wf_die_system *s, const wf_train_plan *p, wf_die_flows *f);

/* ---- baselines (train_base.c) -------------------------------------------------------------- */

double wf_train_megatron(const wf_die_system *s, const wf_train_work *w, wf_train_plan *p);
double wf_train_cerebras(const wf_die_system *s, const wf_train_work *w, int *recompute_layers);
/* The first-order analytic model (WATOS Fig. 15's footnote), seconds per iteration. */
double wf_train_analytic(const wf_die_system *s, const wf_train_work *w, int recompute);

#endif
