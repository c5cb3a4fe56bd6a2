/* waferc runtime — loads a plan (docs/plan-format.md) and simulates the fabric cycle by cycle
 * at wavelet level (docs/cycle-model.md).
 *
 *   wf_plan *p = wf_plan_load("plan");                 // NULL + errors reported
 *   wf_sim *s = wf_sim_new(p, NULL);
 *   wf_sim_set_input(s, "x", x_tensor);
 *   int rc = wf_sim_run(s);                              // WF_EXIT_*
 *   wf_tensor *y = wf_sim_output(s, 0);                 // caller frees
 *   wf_sim_write_report(s, "report.json");
 */
#ifndef WAFERC_RUNTIME_H
#define WAFERC_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "ir/pe/pe_program.h"
#include "waferc/target.h"
#include "waferc/tensor.h"

#define WF_PLAN_FORMAT_VERSION 2 /* manifest.json (2: weights[].skew); PE programs carry their own (.format) */
#define WF_PLAN_FORMAT_MIN 1     /* the oldest manifest format still read: 1, without skew */

/* A tensor bound to PE memory: an input, output or weight. */
typedef struct wf_plan_tensor {
  char name[256];    /* the model's name (ONNX names can be long); the symbol is shortened */
  char symbol[64];   /* symbol in every class of the region */
  wf_dtype dtype;
  int rank;
  int64_t dims[WF_MAX_RANK];
  uint8_t split[WF_MAX_RANK]; /* wf_axis each dim is split along (others: replicated) */
  int64_t padded[WF_MAX_RANK]; /* padded_shape: a multiple of the dim's PEs, >= dims; 0 = the
                                  default ceil(dim/parts)*parts */
  char layout[128];  /* text form, for messages */
  int region;
  int64_t offset, bytes; /* weights: byte range in weights.bin */
  int64_t index_bound; /* an integer input (a gather's ids): valid ids are in [0, this); 0 = none given */
  /* a weight's "skew" (docs/plan-format.md): its blocks hold the K tiles MeshGEMM's or
   * Cannon's alignment would bring (ir/support/gemm_skew.h); skew_ring WF_SKEW_NONE = none */
  uint8_t skew_ring;
  int skew_k_dim, skew_other_dim;
  int64_t skew_tiles, skew_k_tile, skew_other_tile;
} wf_plan_tensor;

typedef struct wf_plan_region {
  char name[64];
  int x, y, w, h;
  int within; /* -1, or the region this one is a band of (its PEs run that region's classes;
                 tensors on it are scattered over its rectangle only) */
} wf_plan_region;

/* One class placed on a rectangle of a region. */
typedef struct wf_plan_place {
  int cls;      /* index into classes */
  int region;
  int x, y, w, h; /* absolute PE rectangle */
} wf_plan_place;

typedef struct wf_plan_op {
  char op[32];
  char result[64];
  char loc[128];
  char lowering[32]; /* manifest "lowering" (e.g. "cannon-ring"); "" when absent */
  char fabric_move[24]; /* manifest "fabric_move" ("transpose", "relayout"); "" when none */
  int64_t predicted;
  int has_phases;       /* manifest "phases" (a dist.gemm's): `phase` markers may occur in it */
  int64_t phase_predicted[3]; /* alignment, loop, drain: they add up to `predicted` */
  int band;             /* manifest "band": the region (a band of the rows) it runs on; -1 = none */
} wf_plan_op;

/* The phases of a dist.gemm (manifest ops[].phases, `phase N` markers), in marker order. */
extern const char *const wf_plan_phase_names[3];

/* A collective inside an op (manifest ops[i].collectives), bracketed in the programs by
 * `coll index` ... `coll -1`. */
typedef struct wf_plan_coll {
  int op;                     /* the op it is part of */
  char collective[16];        /* "allreduce-x" */
  char algo[16];
  int pes;
  int64_t words, predicted, lowered; /* lowered: 0 when the manifest gives none */
} wf_plan_coll;

/* A generation plan's manifest key "generate" (docs/plan-format.md, "Generation"): how
 * waferrun --generate runs the prefill plan, then the decode step plan in decode_plan/ once
 * per new token. Names refer to the prefill plan's tensors (prompt_input, prefill_next,
 * caches[].prefill, checked at load) or the decode plan's (decode_*, caches[].decode,
 * checked when it is loaded). */
typedef struct wf_plan_cache_pair {
  char prefill[256], decode[256]; /* the same cache as a prefill output and a decode input/output */
  char via[256];                  /* with a switch plan: its output that becomes the decode cache */
} wf_plan_cache_pair;

typedef struct wf_plan_generate {
  int present;                  /* 0: the plan was not compiled with --generate */
  char decode_plan[256];        /* a relative directory inside the plan (no "..", not absolute) */
  char switch_plan[256];        /* "" or, when decode runs on a smaller region, the plan that moves
                                   the caches onto it (its inputs caches[].prefill, its outputs
                                   caches[].via); a relative directory like decode_plan */
  char prompt_input[256], prefill_next[256];
  char decode_ids[256], decode_position[256], decode_next[256];
  int64_t prompt_length, max_new_tokens;
  char kv_cache[16];            /* "shift" or "concat" */
  int rows, slots_per_row;      /* the cache's rows of PEs and the tokens one row can hold */
  wf_plan_cache_pair *caches; int n_caches;
  char (*shared)[256]; int n_shared; /* "shared_weights": weights of this plan the decode step's
                                        namesakes must equal (held once, docs/generation.md) */
} wf_plan_generate;

/* A pipelined plan's manifest key "pipeline" (waferc --pipeline=N, docs/pipeline.md): the
 * stages in order, each a plan on its band of rows; stage 0 is this plan. A later stage's
 * transfer plan moves the values the previous stage returns (carries[].name, its input) onto
 * the stage's band (carries[].moved, its output), which the stage takes as input `name`.
 * Checked when waferrun loads the stages. */
typedef struct wf_plan_carry {
  char name[256], moved[256];
} wf_plan_carry;

typedef struct wf_plan_stage {
  char plan[256];     /* "" for this plan; else a relative directory inside it */
  char transfer[256]; /* stages after the first: like plan */
  int rows[2];        /* the band [y0, y1) of the pipeline's mesh */
  wf_plan_carry *carries; int n_carries;
} wf_plan_stage;

typedef struct wf_plan_pipeline {
  int present;
  int mesh_w, mesh_h, rows_per_stage;
  wf_plan_stage *stages; int n_stages;
} wf_plan_pipeline;

/* The manifest's "moe" (passes/moe_routes.c, docs/moe-plans.md): outputs holding an MoE
 * router's expert indices ([.., k] integers in [0, experts)); the report counts them per
 * expert (functional mode). */
typedef struct wf_plan_route {
  int output; /* index into outputs */
  int64_t experts, k;
} wf_plan_route;

/* A switch plan's "switch_weights" (waferc --decode-mesh, docs/generation.md "The switch"):
 * input `input` takes the prefill plan's weight `prefill`, and output `output` holds, in the
 * decode region's corner, the decode plan's weight `decode`. Checked when waferrun loads the
 * three plans. */
typedef struct wf_plan_weight_move {
  char prefill[256], decode[256];
  int input, output; /* indices into inputs and outputs */
} wf_plan_weight_move;

typedef struct wf_plan {
  char dir[1024];
  wf_target target;           /* parameters as recorded in the manifest */
  int mesh_w, mesh_h;
  wf_plan_region *regions; int n_regions;
  wf_pe_class **classes; int n_classes;
  wf_plan_place *places; int n_places;
  wf_plan_tensor *inputs; int n_inputs;
  wf_plan_tensor *outputs; int n_outputs;
  wf_plan_tensor *weights; int n_weights;
  uint8_t *weight_data; int64_t weight_bytes;
  wf_plan_op *ops; int n_ops;
  wf_plan_coll *colls; int n_colls; /* indexed by the `coll` markers */
  int64_t predicted_total;
  uint32_t colors_used;       /* bit set */
  int64_t tokens_per_run;     /* manifest "tokens_per_run" (optional, default 1) */
  int fabric_transposes, relayouts; /* manifest counts of the ops moving data so; -1 when absent */
  wf_plan_generate gen;       /* manifest "generate" (optional) */
  wf_plan_pipeline pipe;      /* manifest "pipeline" (optional) */
  wf_plan_route *routes; int n_routes; /* manifest "moe" (optional) */
  wf_plan_weight_move *moves; int n_moves; /* manifest "switch_weights" (optional) */
  int allow_modified;         /* loaded with WF_PLAN_ALLOW_MODIFIED (runtime/jit_llvm.c warns, not refuses) */
} wf_plan;

/* A program whose routes no WSE router can hold (per color and switch position, rx ports
 * with different tx sets) is refused, naming the PE, the color, the position and the rules
 * (docs/cycle-model.md). */
wf_plan *wf_plan_load(const char *dir);
/* wf_plan_load with flags: WF_PLAN_ALLOW_MODIFIED accepts a plan whose files or manifest
 * differ from their digests, or that has none (a plan edited or written by hand), with a
 * warning per file; every other check still applies. */
#define WF_PLAN_ALLOW_MODIFIED 1u
wf_plan *wf_plan_load_ex(const char *dir, unsigned flags);
/* wf_plan_load_ex with the manifest's text given (len bytes at text) in place of
 * dir/manifest.json, which is not read; messages still name that path, and the programs
 * and weights are read from dir. */
wf_plan *wf_plan_load_text(const char *dir, const char *text, size_t len, unsigned flags);
void wf_plan_free(wf_plan *p);
/* Two layouts' text forms equal but for the dims' names (capital letters: {M_y, N_x} is
 * {K_y, N_x}), as a weight held once by a generation plan's two phases must be. */
int wf_plan_layouts_match(const char *a, const char *b);

typedef enum wf_sim_mode {
  WF_SIM_FUNCTIONAL, /* data and cycles */
  WF_SIM_TIMING      /* cycles only: no PE memory, no data; the same cycles as functional */
} wf_sim_mode;

typedef struct wf_sim_opts {
  int64_t max_cycles;       /* 0 = unlimited */
  int64_t deadlock_cycles;  /* no progress for this long = deadlock */
  int mode;                 /* wf_sim_mode */
  int64_t max_seconds;      /* host wall-clock limit of wf_sim_run, 0 = unlimited; it only
                               stops a run (exit 5), never changes a cycle count */
  int threads;              /* bands of rows stepped on their own threads (sim_threads.c,
                               docs/cycle-model.md "Threads"): 0 or 1 = one thread (the
                               loop of sim.c), N > 1 = N bands (at most one per row),
                               WF_SIM_THREADS_AUTO = the idle cores (wf_sim_cores_idle), one
                               thread for a mesh under WF_SIM_THREADS_MIN_PES PEs. Results
                               never depend on it. */
} wf_sim_opts;
#define WF_SIM_THREADS_AUTO (-1)
int wf_sim_cores(void); /* the cores online (at least 1) */
/* The cores not busy with other work: the cores online less the 1-minute load average
 * (rounded), at least 1. WF_SIM_THREADS_AUTO uses it: on a shared machine a thread that
 * has to share its core stalls every cycle's join, and one thread is faster. */
int wf_sim_cores_idle(void);
#define WF_SIM_THREADS_MIN_PES 4096
#define WF_SIM_THREADS_MAX 64
/* MPI ranks (runtime/sim_mpi.c, docs/cycle-model.md "Ranks"; built when CMake finds MPI):
 * under `mpirun -np R`, wf_sim_run steps one band of rows per rank, and rank 0 ends the run
 * holding the whole simulator's state, as one process would. wf_sim_mpi_init joins the job
 * (only when a launcher started the process; a plain run never initialises MPI) and returns
 * this process's rank, 0 outside a job or without MPI; wf_sim_mpi_ranks gives the job's size
 * (1 outside a job); wf_sim_mpi_finalize leaves it. */
int wf_sim_mpi_init(int *argc, char ***argv);
int wf_sim_mpi_ranks(void);
int wf_sim_mpi_rank(void); /* this process's rank, 0 outside a job */
void wf_sim_mpi_finalize(void);
/* After a run under mpirun only rank 0's wf_sim_output is right (it holds the state). A host
 * loop that feeds one run's outputs to the next (waferrun --generate, a pipeline's stages)
 * reads each output on every rank and calls this, which gives every rank rank 0's elements
 * (collective: every rank calls it, in the same order; the shapes are the plan's). NULL (a
 * timing run's output) and one process: nothing to do. */
void wf_sim_mpi_share(wf_tensor *t);
#define WF_SIM_OPTS_DEFAULT ((wf_sim_opts){.max_cycles = 0, .deadlock_cycles = 10000, .mode = WF_SIM_FUNCTIONAL})

typedef struct wf_sim wf_sim;
wf_sim *wf_sim_new(const wf_plan *p, const wf_sim_opts *o);
/* The host bytes a functional-mode simulator allocates for PE memory: every PE of every class
 * placement holds its class's memory map (timing mode holds none). For a memory ceiling
 * checked before anything is allocated. */
int64_t wf_plan_sram_host_bytes(const wf_plan *p);
void wf_sim_free(wf_sim *s);
/* Scatters a host tensor into the PEs by the input's layout. 0 on success, else reports.
 * In timing mode the shape is checked and the data ignored. */
int wf_sim_set_input(wf_sim *s, const char *name, const wf_tensor *t);
/* Replaces weight w's blocks (plan->weights[w]) with data, f32 of its shape: the host carrying
 * into the PEs a weight that another plan's run built there (waferrun --generate's switch).
 * Nothing in timing mode. */
void wf_sim_set_weight(wf_sim *s, int w, const float *data);
/* Sets the step parameters of a decode step (docs/pe-programs.md, "Parameters"): on every PE
 * of every region, R = grow_row (the region row whose KV cache grows at this step) and
 * C = row_counts[y] (the tokens its row holds after the append; y relative to its region,
 * so row_counts has as many entries as the tallest region has rows). Call it after
 * wf_sim_new and before wf_sim_run; without it both are 0. Returns 0, or -1 (reported) when
 * the run has started or a value is negative. */
int wf_sim_set_step(wf_sim *s, int grow_row, const int *row_counts);
/* Runs to completion. Returns a WF_EXIT_* code; errors (deadlock ...) are reported. */
int wf_sim_run(wf_sim *s);
int64_t wf_sim_cycles(const wf_sim *s);
/* Gathers output i by its layout (caller frees). NULL in timing mode. */
wf_tensor *wf_sim_output(wf_sim *s, int i);
int wf_sim_write_report(const wf_sim *s, const char *path);
void wf_sim_print_summary(const wf_sim *s, FILE *out);
/* Op `op`'s phases (a dist.gemm's alignment, loop and drain: manifest ops[].phases and the
 * programs' `phase` markers; docs/report-format.md says how its span is cut): simulated
 * cycles into cycles[0..2] (they add up to the op's span) and, if predicted != NULL, the
 * manifest's predictions. Returns 1, or 0 when the op has no phases. After wf_sim_run. */
int wf_sim_op_phases(const wf_sim *s, int op, int64_t cycles[3], int64_t predicted[3]);

/* ---- read-only statistics and events: for --trace, --heatmap and other observers ----------
 * A stable, small view of the simulator's counters. Every number is in simulated cycles or
 * wavelets, never host time. Valid after wf_sim_run (counters also grow during the run and
 * may be read from an event callback). Coordinates are absolute mesh positions.
 *
 *   wf_sim_set_event_callback(s, on_event, ctx);   // before wf_sim_run
 *   wf_sim_run(s);
 *   for (y...) for (x...) if (wf_sim_pe_stats_at(s, x, y, &st) == 0) use(st.busy, st.stall);
 *   int64_t east = wf_sim_link_wavelets(s, x, y, WF_DIR_E);
 */
typedef struct wf_sim_pe_stats {
  int present;          /* 1 if a program class is placed on this PE */
  int cls;              /* index into plan->classes, -1 if none */
  /* Every cycle of the run is in exactly one of compute, comm, stall, idle (after a finished
   * run they add up to wf_sim_cycles; docs/cycle-model.md, "Accounting"). */
  int64_t compute;      /* cycles inside a compute instruction */
  int64_t comm;         /* other cycles in which a wavelet was sent or received (the main
                           thread's fabric instruction or an async stream) or a control
                           item went down the ramp */
  int64_t stall;        /* other cycles the PE waited with work pending (backpressure, an
                           empty queue, a `wait`, async streams that could not move) */
  int64_t idle;         /* the rest: wf_sim_cycles - compute - comm - stall */
  int64_t overlap;      /* compute cycles in which an async stream also moved a wavelet
                           (part of compute, not added to it) */
  int64_t busy;         /* compute + comm: cycles the PE did useful work */
  int64_t finish;       /* first cycle after the PE's last work (0 if it never ran) */
  int64_t ctl_wavelets; /* control wavelets delivered to this PE */
} wf_sim_pe_stats;

int wf_sim_mesh_w(const wf_sim *s);
int wf_sim_mesh_h(const wf_sim *s);
/* Fills *out for PE (x, y). Returns 0, or -1 when (x, y) is outside the mesh. A mesh cell
 * without a program gets present = 0 and zero counters (still returns 0). */
int wf_sim_pe_stats_at(const wf_sim *s, int x, int y, wf_sim_pe_stats *out);
/* Wavelets (data + control) that left router (x, y) through port dir: WF_DIR_N/E/S/W over
 * the link to the neighbour, WF_DIR_RAMP up the ramp into the PE. 0 outside the mesh. */
int64_t wf_sim_link_wavelets(const wf_sim *s, int x, int y, int dir);
/* Cycles a wavelet waited at router (x, y) to leave through port dir (backpressure). */
int64_t wf_sim_link_stalls(const wf_sim *s, int x, int y, int dir);
/* Wavelets PE (x, y) put down its ramp into its router. */
int64_t wf_sim_ramp_down(const wf_sim *s, int x, int y);
/* IR op `op`'s mesh-wide extent, as in the report: the first cycle a PE entered it and the
 * cycle after the last PE's last work in it. Returns 0, or -1 if no PE entered it. */
int wf_sim_op_extent(const wf_sim *s, int op, int64_t *start, int64_t *end);

/* Events, delivered in simulation order (deterministic: cycle, then row-major PE order).
 * Instruction events cover costed instructions only (compute and fabric); `dur` is known at
 * WF_SIM_EV_INSTR_BEGIN for compute instructions and -1 for fabric ones (their end is a
 * separate WF_SIM_EV_INSTR_END). */
typedef enum wf_sim_event_kind {
  WF_SIM_EV_TASK_BEGIN,  /* a task starts running on a PE (v1 programs: task "main") */
  WF_SIM_EV_TASK_END,
  WF_SIM_EV_OP_BEGIN,    /* the PE enters IR op `op` (an `op N` marker) */
  WF_SIM_EV_OP_END,      /* the PE leaves op `op` (next marker or end of program) */
  WF_SIM_EV_INSTR_BEGIN,
  WF_SIM_EV_INSTR_END,
  WF_SIM_EV_PE_DONE,     /* the PE finished its program */
  WF_SIM_EV_ASYNC_BEGIN, /* an async fabric stream (asend, arecv, ...) starts on `engine` */
  WF_SIM_EV_ASYNC_END    /* ... and moved its last wavelet in this cycle */
} wf_sim_event_kind;

typedef struct wf_sim_event {
  int kind;                 /* wf_sim_event_kind */
  int64_t cycle;            /* simulated cycle the event happens in */
  int64_t dur;              /* INSTR_BEGIN of a compute instruction: cycles; else -1 */
  int x, y;                 /* absolute PE position */
  int cls;                  /* class index into plan->classes */
  int op;                   /* IR op index into plan->ops, -1 before the first marker */
  int task;                 /* task index into the class's tasks */
  const char *task_name;    /* the task's name (owned by the plan) */
  int pc;                   /* INSTR_*: instruction index in the class's code, else -1 */
  const wf_pe_instr *instr; /* INSTR_*, ASYNC_*: the instruction (wf_pe_instr_synopsis prints it) */
  int engine;               /* ASYNC_*: the PE's async engine (0..3), else -1 */
  int64_t wavelets;         /* fabric INSTR_* and ASYNC_*: wavelets the stream moves, else -1 */
} wf_sim_event;

typedef void (*wf_sim_event_fn)(const wf_sim_event *ev, void *user);
/* Installs (or with fn = NULL removes) the event observer. Costs nothing when unset. */
void wf_sim_set_event_callback(wf_sim *s, wf_sim_event_fn fn, void *user);

/* Optional compute hook (e.g. a JIT): called in functional mode for each compute instruction
 * instead of the built-in interpreter. `mem` is the PE's SRAM (cls->mem_bytes bytes, symbol
 * offsets from the class), env its parameters and loop variables. Return 0 when executed,
 * 1 to fall back to the interpreter, -1 on error (the run stops with WF_EXIT_RUNTIME).
 * Cycles are charged from the cost model either way. */
typedef int (*wf_sim_compute_fn)(void *user, const wf_pe_class *cls, int cls_index,
                                 const wf_pe_instr *in, float *mem, const wf_pe_env *env);
void wf_sim_set_compute_hook(wf_sim *s, wf_sim_compute_fn fn, void *user);

/* Number of elements of tensor t held by one PE (the block), and the block's dims. */
int64_t wf_plan_block_dims(const wf_plan *p, const wf_plan_tensor *t, int64_t *bdims);

#endif
