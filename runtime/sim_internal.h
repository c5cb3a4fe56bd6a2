/* waferc runtime — simulator state shared by sim.c (the cycle engine), sim_io.c (scatter and
 * gather by layout) and report.c. Not a public interface. */
#ifndef WAFERC_RUNTIME_SIM_INTERNAL_H
#define WAFERC_RUNTIME_SIM_INTERNAL_H

#include "runtime/runtime.h"

/* A wavelet in a buffer: its payload and the first cycle it may move on. Buffers hold the
 * wavelets still travelling towards them (ready in the future), so capacity counts them. */
typedef struct wf_wv {
  float v;
  int64_t ready;
} wf_wv;

typedef struct wf_fifo {
  wf_wv *buf;
  int head, count;
} wf_fifo;

#define WF_NO_ROUTE 0xffffffffu

typedef struct wf_router {
  int x, y;                      /* absolute position */
  wf_fifo *in;                   /* [rx * ncol + color index] */
  unsigned *tx;                  /* [rx * ncol + color index]: tx set, WF_NO_ROUTE if none */
  int64_t port_used[WF_DIR_COUNT]; /* cycle each out port last carried a wavelet */
  int64_t out_count[WF_DIR_COUNT]; /* wavelets sent per out port (RAMP = up the ramp) */
  int64_t ramp_down;             /* wavelets the PE put on the ramp */
  int buffered;                  /* wavelets held in `in` */
  int active;                    /* in the active router list */
  int rr;                        /* round-robin start among inputs */
} wf_router;

enum { WF_PE_FETCH, WF_PE_COMPUTE, WF_PE_FABRIC, WF_PE_DONE };

typedef struct wf_pe {
  int x, y;                      /* absolute position */
  int place;                     /* index into plan places */
  const wf_pe_class *cls;
  wf_pe_env env;
  float *mem;
  int64_t mem_words;
  wf_fifo *q;                    /* input queue per color index */
  int pc;
  int loop_pc[16];
  int32_t loop_end[16];
  int depth;
  int state;
  int64_t busy_until;            /* COMPUTE: first cycle after the instruction */
  const wf_pe_instr *cur;        /* FABRIC: the send/recv in progress */
  float *cur_buf;
  int cur_ci;
  int64_t prog, need;
  int op;                        /* IR op being executed (n_ops = none yet) */
  int sleeping;
  int64_t sleep_start;
  int active;
  int64_t finish;
  int64_t compute, comm, stall;  /* PE-cycles */
} wf_pe;

typedef struct wf_op_stat {
  int64_t start, end;            /* first cycle a PE entered the op, last cycle one left it */
  int64_t compute, comm, stall;  /* PE-cycles */
} wf_op_stat;

struct wf_sim {
  const wf_plan *plan;
  wf_sim_opts opts;
  int w, h;                      /* mesh */
  int ncol;
  int col_idx[WF_MAX_COLORS];    /* color -> dense index, -1 = unused */
  int col_of[WF_MAX_COLORS];     /* dense index -> color */
  int depth;                     /* queue_depth */
  wf_pe **pes;                   /* [y * w + x], NULL where no class is placed */
  wf_router **routers;           /* same indexing */
  int n_pes, n_done;
  wf_pe **act_pe; int n_act_pe;
  wf_router **act_rt; int n_act_rt;
  int64_t now;
  int progress;
  int failed;
  int ran;
  int64_t total;
  int64_t undelivered;
  wf_op_stat *ops;               /* [n_ops + 1]; the last slot is "before any op" */
};

/* sim_io.c: copies the whole tensor `src` (row-major) into every PE of t's region by layout. */
void wf_sim_scatter(wf_sim *s, const wf_plan_tensor *t, const float *src);

#endif
