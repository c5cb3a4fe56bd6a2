/* waferc runtime — the bands of rows the mesh is cut into when more than one stepper runs it:
 * threads on one machine (sim_threads.c) and MPI ranks across machines (sim_mpi.c). Not a
 * public interface.
 *
 * A band's simulator is a copy of the whole one with its own lists, timers, counters and
 * statistics. Its steps keep what crosses its edge, or what is global, as records tagged
 * with the key of the PE or router that made them; the records of every band are committed
 * between the phases in key order, which is the one-thread order (docs/cycle-model.md,
 * "Threads"). Threads share one memory; ranks each hold the whole simulator, step their own
 * band and exchange the records that cross their edges (sim_mpi.c says how). */
#ifndef WAFERC_RUNTIME_SIM_BAND_H
#define WAFERC_RUNTIME_SIM_BAND_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/sim_sched.h"

/* What a band's step left for the commit (each band's list is in key order: the steps are).
 * POP (ranks only): the band popped a buffer across its edge; the rank of its producer
 * applies it to its copy of the buffer's fill. */
enum { REC_NEW_RT, REC_NEW_PE, REC_PUSH, REC_WAKE, REC_POP };
typedef struct rec {
  int64_t key;
  void *obj;       /* wf_router (NEW_RT, PUSH, WAKE, POP: the consumer) or wf_pe (NEW_PE) */
  wf_wv w;         /* PUSH */
  uint8_t kind, lc, rx;
  int16_t to;      /* threads: the band that applies it (obj's band) */
} rec;

/* Threads: a phase's records of one band, in key order. */
typedef struct recbuf {
  rec *r;
  int n, cap;
} recbuf;

typedef struct evrec {
  int64_t key;
  wf_sim_event ev;
} evrec;

/* A buffer across an edge, full when the router phase starts: before its step at key `at`,
 * the band waits until band `other` has stepped everything up to `need`; when the later one
 * is the producer and sleeps on the buffer (`fs`: found it full), a pop by then wakes it.
 * Ranks (sim_mpi.c) keep only the points where the producer is later: its rank waits (WAIT)
 * for the consumer's rank to say, once past the consumer (NOTIFY), whether it popped. */
enum { PT_THREADS, PT_WAIT, PT_NOTIFY };
typedef struct point {
  int64_t at, need;
  struct wf_band *other;
  wf_router *prod;
  wf_fifo *f;
  int fs;
  int kind, id;    /* PT_*; the ranks' index of the buffer in their canonical list */
  int said;        /* NOTIFY: sent */
} point;

typedef struct wf_band {
  wf_sim sim;                      /* the band's copy of the simulator */
  int64_t cur;                     /* key of the PE or router being stepped */
  rec *recs;
  int n_recs, cap_recs;
  int64_t *nkey;                   /* ranks: the key each record hands out ([cap_recs]) */
  evrec *evs;
  int n_evs, cap_evs;
  point *pts;
  int n_pts, cap_pts;
  char *err_where, *err_msg;       /* the band's first run-time error */
  int64_t err_key;
  int n, n_slept, n_emptied;       /* what the steps noted for wf_sim_compact */
  double busy, wait;               /* host seconds stepping, and waiting at meeting points */
  double cpu;                      /* CPU seconds of its thread stepping (WF_SIM_THREAD_STATS) */
  int64_t n_points, n_waits;
  wf_jump_state j;
  /* Threads: each band commits, after each phase, the records addressed to it (its own and
   * its neighbours'), with keys from the records' places in the merged order of every band's
   * (sim_threads.c); the two phases keep their records apart, since a band reads the PE
   * phase's while its neighbour may already step its routers. */
  int k;                           /* its index */
  int ph;                          /* 0: PE phase, 1: router phase */
  recbuf rb[2];
  int n_full;                      /* buffers across its edges that it pops and that are full:
                                      while none is, a cycle has no meeting point */
  double bar_wait;                 /* host seconds waiting at the barriers inside a cycle */
  size_t cap;                      /* entries its list arrays hold (its rows' PEs, plus one) */
  int64_t *hist;                   /* [h] sim_split.c: its awake PEs and busy routers per row */
  wf_pe **mv_pe, **mv_tm;          /* sim_split.c: what leaves its rows (active, timers) */
  wf_router **mv_rt;
  int n_mv_pe, n_mv_tm, n_mv_rt, cap_mv_pe, cap_mv_tm, cap_mv_rt;
  double seg_cpu[3], seg_sum[3];   /* this cycle's CPU per part, and the sums (stats) */
  _Alignas(64) _Atomic int64_t done; /* every router with a key below it has been stepped */
  char pad_[56];
} wf_band;

/* What the run loop decides on: the bands' sums after a cycle. */
typedef struct wf_totals {
  int64_t n_act_pe, n_act_rt, n_timers, n_rt_sleep, n_soft;
  int progress, expired;           /* expired: --time-limit passed (on any rank) */
  wf_jump_state j;
} wf_totals;

struct wf_threads;
/* How a cycle runs: threads (sim_threads.c) or ranks (sim_mpi.c). The run loop around it and
 * its decisions (the end, deadlock, the clock jump, --max-cycles) are shared. */
typedef struct wf_band_ops {
  /* Sums of the bands' lists; `expired` in, agreed out. */
  void (*totals)(struct wf_threads *T, wf_totals *t, int expired);
  /* One cycle: both phases, their commits, the compaction; -1 after a run-time error. */
  int (*cycle)(struct wf_threads *T);
  /* The deadlock message (after the bands' sleepers are credited). */
  void (*deadlock)(struct wf_threads *T, const char *why);
  /* A meeting point in the router phase (rt_phase). */
  void (*meet)(wf_band *b, point *pt);
} wf_band_ops;

typedef struct wf_threads {
  int nb;
  wf_band **b;
  int *row_band;                   /* [h] */
  pthread_t *tid;
  _Alignas(64) _Atomic int gen;
  _Atomic int gen_sleepers;        /* workers blocked on gen (futex) */
  _Alignas(64) _Atomic int finished;
  _Atomic int fin_sleepers;        /* 1 while band 0 is blocked on finished */
  int phase;
  wf_sim *s;
  _Alignas(64) _Atomic int bar_gen;  /* barriers inside a cycle (sim_threads.c) */
  _Atomic int bar_sleepers;
  _Alignas(64) _Atomic int bar_n;
  _Alignas(64) int points;         /* this cycle has full buffers across band edges */
  int pe_failed;                   /* a run-time error in this cycle's PE phase */
  double crit_cpu, crit_seg[3], crit_fused;
  /* sim_split.c: where the bands are cut, moved as the work moves */
  int split_every;                 /* cycles between two looks (0: never; WF_SIM_SPLIT_EVERY) */
  int since_split;
  int count_now;                   /* the bands count their rows' work as this cycle ends */
  char **row_addr;                 /* [h + 1] the slab address where row y starts */
  int *bucket_row;                 /* row of each 2^bshift bytes of the slab */
  int bshift;
  int *ny;                         /* [nb + 1] the new cut */
  int64_t *work, *work_prev;       /* [h] the bands' counts, merged: carried forward, and as
                                      they were at the last look */
  int64_t n_splits, rows_moved;    /* statistics */
  int64_t n_recs, n_cycles;        /* statistics: records committed, cycles stepped */    /* stats: sums over cycles of the slowest band's part */
  double join_wait;                /* host seconds band 0 waited for the others (stats) */
  int stats;                       /* WF_SIM_THREAD_STATS is set */
  int spin;                        /* pauses before a wait blocks (0 with more bands than cores):
                                      short, since spinning for a thread that has lost its core
                                      (a shared machine) keeps it off the core longer */
  int *live, *at;                  /* [nb]: the bands a merge walks, and its cursors */
  const wf_band_ops *ops;
  int me;                          /* ranks: the band this process steps (-1: threads) */
  void *mpi;                       /* ranks: sim_mpi.c's state */
} wf_threads;

/* sim_threads.c, shared with sim_mpi.c */
WF_SIM_HIDDEN wf_threads *wf_threads_setup(wf_sim *s, int nb);
WF_SIM_HIDDEN void wf_band_pe_phase(wf_band *b);
WF_SIM_HIDDEN void wf_band_rt_phase(wf_band *b);
/* Applies every band's records in key order; with ranks, each hands out its nkey. */
WF_SIM_HIDDEN void wf_threads_commit(wf_threads *T);
WF_SIM_HIDDEN void wf_threads_replay_events(wf_threads *T, int64_t upto);
/* After a phase: the first run-time error in key order is said; -1 if any. */
WF_SIM_HIDDEN int wf_threads_failed(wf_threads *T, int replay);
WF_SIM_HIDDEN void wf_threads_gather(wf_threads *T);
WF_SIM_HIDDEN int wf_threads_loop(wf_sim *s, wf_threads *T);
WF_SIM_HIDDEN void *wf_band_grow(void *p, int *cap, size_t elem);
/* sim_split.c: moving rows between the threads' bands */
WF_SIM_HIDDEN void wf_split_init(wf_threads *T);
WF_SIM_HIDDEN void wf_split_free(wf_threads *T);
WF_SIM_HIDDEN void wf_split_count(wf_threads *T, wf_band *b);
WF_SIM_HIDDEN int wf_split_plan(wf_threads *T);
WF_SIM_HIDDEN void wf_split_leave(wf_threads *T, wf_band *b);
WF_SIM_HIDDEN void wf_split_join(wf_threads *T, wf_band *b);

#endif
