/* waferc runtime — simulator state shared by the cycle engine (sim.c), the services its steps
 * share (sim_sched.c), the fabric (sim_fabric.c), the PEs (sim_pe.c, sim_exec.c), deadlock
 * reports (sim_deadlock.c), scatter and gather (sim_io.c) and report.c. Not a public
 * interface: observers use runtime.h.
 *
 * Memory is spent only where the plan uses it: a router holds state for the colors its
 * class declares (not all 24), a FIFO's buffer is allocated on its first wavelet, and a PE's
 * SRAM on its first access (never in timing mode). */
#ifndef WAFERC_RUNTIME_SIM_SCHED_H
#define WAFERC_RUNTIME_SIM_SCHED_H

#include "runtime/runtime.h"
#include "waferc/diag.h"

/* Internal to libwaferc: direct calls inside the library instead of through the PLT (the
 * cycle loop calls these millions of times per simulated run). */
#define WF_SIM_HIDDEN __attribute__((visibility("hidden")))
#define WF_SIM_LINE_UP(n) (((size_t)(n) + 63) & ~(size_t)63) /* slab blocks (sim_layout.c) */

/* What travels in a FIFO. DATA carries a value; CTL advances the switch of every router
 * that forwards it and activates the receiving PE's control task; TEARDOWN resets every
 * router it passes to position 0; SWSET never leaves the PE's own router (a configuration
 * write that travels down the ramp in order with the data). */
enum { WF_WV_DATA, WF_WV_CTL, WF_WV_TEARDOWN, WF_WV_SWSET };

typedef struct wf_wv {
  float v;
  uint8_t kind;    /* WF_WV_* */
  uint8_t adv;     /* DATA from the ramp: advance this router's switch once forwarded */
  uint8_t arg;     /* SWSET: the position */
  uint8_t pad_;
  int64_t ready;   /* first cycle it may move on */
} wf_wv;

typedef struct wf_fifo {
  wf_wv *buf;      /* capacity queue_depth, from the arena on the first push (sim_layout.c) */
  int16_t head, count;
  uint8_t full_seen; /* its producer found it full since its last pop: the producer (the
                        router of the neighbour it comes from, or the PE's own router for a
                        PE queue) may sleep on it, so the next pop looks (sim.c) */
} wf_fifo;

#define WF_RX_NONE 0xff /* tx table entry: this rx is not accepted in this position */

/* One color at one router, in two cache lines (sim_layout.c aligns the array): a forward
 * from the RAMP reads only the second, one from a link the line of its buffer too. The
 * destination behind a tx port is not stored: it follows from the neighbour and its local
 * color index (wf_router_out), without a read of the neighbour. */
typedef struct wf_rcolor {
  wf_fifo in[WF_DIR_COUNT];                  /* input buffer per rx port */
  uint8_t tx[WF_PE_MAX_POS][WF_DIR_COUNT];   /* [pos][rx]: tx bit set or WF_RX_NONE */
  uint8_t npos;                              /* positions configured (>= 1) */
  uint8_t pos;                               /* current position */
  uint8_t ring;                              /* positions wrap around */
  int8_t out_li[WF_DIR_COUNT];               /* per link tx port: the color's local index at
                                                the neighbour, -1 none (RAMP: unused) */
} wf_rcolor;
_Static_assert(sizeof(wf_rcolor) == 128, "a router color is two cache lines");

typedef struct wf_router {
  /* Hot state first (sim_layout.c aligns a router to a cache line): line 0 is what every
   * visit and every push reads, line 1 what a forward reads and counts, line 2 stalls and
   * sleeping. The cycle loop prefetches these lines, not the whole block. */
  uint64_t ne[3];                  /* bit lc*5+rx: input buffer (lc, rx) holds something */
  wf_rcolor *rc;                   /* [nlc] */
  struct wf_pe *pe;                /* the PE on the ramp */
  int64_t port_now;
  int nlc;                         /* colors of its class */
  int buffered;                    /* items held in the input buffers */
  int16_t rr;                      /* round-robin start among inputs */
  uint8_t active;                  /* in the active router list */
  uint8_t port_mask;               /* out ports that carried a wavelet in cycle port_now */
  uint8_t pe_wait;                 /* 0 only while its PE is awake in the active list, so a
                                      delivery or a freed ramp slot need not look at the PE */
  uint8_t asleep;                  /* blocked: every head waits for a full destination or a
                                      switch position; not visited until an event (sim.c) */
  uint8_t where;                   /* WF_RT_*: which list holds it */
  /* line 1 */
  struct wf_router *nb[WF_DIR_RAMP]; /* neighbours N, E, S, W (NULL: none) */
  int64_t key;                     /* position in the active router list (sorted by key) */
  int64_t out_count[WF_DIR_COUNT]; /* wavelets sent per out port (RAMP = up the ramp) */
  /* line 2 */
  int64_t out_stall[WF_DIR_COUNT]; /* cycles a ready wavelet waited for this out port */
  int64_t ramp_down;               /* items the PE put on the ramp */
  /* sleeping while blocked (sim.c) */
  int64_t sl_from;                 /* first cycle its visits were skipped */
  uint8_t sl_inc[WF_DIR_COUNT];    /* out_stall added per skipped visit */
  int x, y;                        /* absolute position */
} wf_router;

/* Where a router with wavelets is (wf_router.where): in the active list, among the sleepers
 * woken to run later in this cycle's router phase (a heap by key), among those that rejoin
 * the list at the end of this cycle, or in none (asleep, or empty). */
enum { WF_RT_NONE, WF_RT_LIST, WF_RT_NOW, WF_RT_JOIN, WF_RT_PENDING };
/* PENDING (threads only, sim_threads.c): woken from empty in this phase; it joins the list
 * with its key when the phase is committed. */

enum { WF_PE_IDLE, WF_PE_FETCH, WF_PE_COMPUTE, WF_PE_FABRIC };

/* Why a PE is not visited. HARD: every stream waits for a delivery or nothing is left to
 * run; it rejoins the active list at its end when woken. SOFT: it waits for a delivery, a
 * free ramp slot or its own background streams (a `wait`, all async engines busy); it keeps
 * its place in the active list (its key), so the order PEs are stepped in, and with it
 * every cycle count, is the one of a simulator that polled it every cycle. */
enum { WF_SLEEP_NONE, WF_SLEEP_HARD, WF_SLEEP_SOFT, WF_SLEEP_TIMER };
/* TIMER: inside a compute instruction with no background stream; a heap wakes it (by key,
 * like SOFT) in the cycle its instruction ends. Deliveries do not wake it. */

/* A fabric stream in progress: the main thread's current send/recv, or an async engine. */
typedef struct wf_stream {
  const wf_pe_instr *in;
  int ci, co;                      /* local color index in / out (-1 if none) */
  int64_t off;                     /* word offset of the memory operand in SRAM */
  int64_t prog, need;
  int task;                        /* async: task to activate on completion */
} wf_stream;

#define WF_SIM_ASYNC 4             /* background fabric streams per PE */

typedef struct wf_pe {
  /* Hot state first, in two cache lines (sim_layout.c aligns a PE to a line): what every
   * step, the loop around it and its accounting read. The main stream and the async
   * streams follow; what only a fetch or a report reads comes last. */
  struct wf_router *rt;            /* its router */
  const wf_pe_class *cls;
  wf_fifo *q;                      /* input queue per local color (router -> PE) */
  wf_rcolor *rrc;                  /* rt->rc: its ramp buffers without a read of the router */
  uint8_t state;                   /* WF_PE_* */
  uint8_t sleeping;                /* WF_SLEEP_*: waits for a router event; not visited */
  uint8_t cy;                      /* WF_CY_*: what the main thread did in this cycle's step */
  int task;                        /* running task, -1 none */
  int pc;
  int wait_pc;                     /* pc of the `wait` it is parked at (guard held), or -1 */
  int n_async;
  int cls_i;                       /* class index */
  int op;                          /* IR op being executed (n_ops = none yet) */
  /* line 1 */
  int64_t busy_until;              /* COMPUTE: first cycle after the instruction */
  int64_t ramp_used;               /* cycle the PE last put an item down its ramp */
  int64_t acct_to;                 /* first cycle not yet classified (charges only go forward) */
  int64_t finish;                  /* first cycle after its last work */
  uint32_t t_active, t_blocked;    /* task bits */
  /* Cycle classes (docs/cycle-model.md, "Accounting"): every cycle of the run is at most one
   * of compute, comm, stall (idle is the rest); overlap counts compute cycles in which an
   * async stream moved a wavelet, inside compute, never added to it. */
  int64_t compute, comm, stall;
  /* line 2 on */
  wf_stream cur;                   /* FABRIC: the main thread's stream */
  int64_t key;                     /* position in the active PE list (sorted by key) */
  int active;                      /* in the active PE list */
  int depth;
  wf_stream as[WF_SIM_ASYNC];      /* async streams (in = NULL when free) */
  int64_t overlap, ctl_in;
  int64_t sleep_start;
  float *mem;                      /* SRAM, allocated on first access (functional mode) */
  int coll;                        /* collective being executed (`coll` markers), -1 none */
  int phase;                       /* phase of its op (`phase` markers), -1 none */
  int x, y;                        /* absolute position */
  const uint64_t *skip;            /* bit per instruction: its guard never holds here
                                      (sim_guard.c); NULL until the first fetch */
  wf_pe_env env;
  int32_t loop_end[16];
} wf_pe;

/* A PE cycle's class, in order of precedence: a compute instruction covers it; else a wavelet
 * moved (main stream, control item or async stream); else the PE waited with work pending
 * (a blocked main-thread instruction, or async streams that could not move); else idle. */
enum { WF_CY_NONE, WF_CY_COMPUTE, WF_CY_COMM, WF_CY_STALL };

/* A collective inside an op: first cycle a PE entered it, last cycle one left it, and how
 * many times PEs entered it (runs = entries / PEs). */
typedef struct wf_coll_stat {
  int64_t start, end, entries;
} wf_coll_stat;

typedef struct wf_op_stat {
  int64_t start, end;              /* first cycle a PE entered the op, last cycle one left it */
  int64_t compute, comm, stall;    /* PE-cycles, each in one class (wf_pe) */
  int64_t overlap;                 /* compute PE-cycles with async fabric activity */
  int64_t phase_in[3];             /* `phase` markers: the last cycle a PE entered phase k of the
                                      op, plus one (0: no PE did); report.c splits the span */
} wf_op_stat;

/* Per class: color -> local index. */
typedef struct wf_cls_info {
  int8_t lidx[WF_MAX_COLORS];      /* -1 = the class does not use the color */
  int nlc;
  uint8_t lcol[WF_MAX_COLORS];     /* local index -> color */
} wf_cls_info;

struct wf_sim {
  const wf_plan *plan;
  int64_t *route_counts;           /* per plan route (moe), experts + 1 counts (the last: indices
                                      outside [0, experts)); NULL until counted (functional) */
  wf_sim_opts opts;
  int functional;                  /* mode == WF_SIM_FUNCTIONAL */
  int w, h;                        /* mesh */
  int depth;                       /* queue_depth */
  int T_R, hop;
  wf_cls_info *ci;                 /* [n_classes] */
  wf_pe **pes;                     /* [y * w + x], NULL where no class is placed */
  wf_router **routers;             /* same indexing */
  int n_pes;
  wf_pe **act_pe; int n_act_pe;
  wf_pe **soft_woken; int n_soft_woken; /* SOFT sleepers woken this cycle, merged by key */
  int n_soft;                      /* PEs in SOFT sleep */
  wf_pe **timers; int n_timers;    /* TIMER sleepers: min-heap on (busy_until, key) */
  int64_t next_key;
  wf_router **act_rt; int n_act_rt;
  int64_t next_rt_key;
  int64_t rt_cur_key;              /* key of the router being stepped (INT64_MIN in the PE
                                      phase, INT64_MAX after the router phase) */
  wf_router **rt_now; int n_rt_now;   /* woken sleepers still to run this cycle: min-heap by key */
  wf_router **rt_join; int n_rt_join; /* routers that rejoin the list at this cycle's end */
  int n_rt_sleep;                  /* routers asleep */
  int64_t rt_skipped;              /* router visits sleeping saved (statistics only) */
  int rt_poll;                     /* tests: blocked routers never sleep (the polling loop) */
  int *slept, *emptied;            /* list indices of PEs that slept, routers that emptied or
                                      slept during this cycle's steps (sim.c) */
  int64_t now;
  int progress;
  int failed;
  int ran;
  int64_t total;
  int64_t undelivered;
  int64_t mem_bytes;               /* SRAM actually allocated (host bytes) */
  wf_op_stat *ops;                 /* [n_ops + 1]; the last slot is "before any op" */
  wf_coll_stat *colls;             /* [n_colls] */
  void *slab;                      /* every PE and router (sim_layout.c) */
  size_t slab_bytes;
  char *arena_cur, *arena_end;     /* FIFO storage (sim_layout.c) */
  char **chunks; int n_chunks, cap_chunks;
  int pf_q_lines;                  /* cache lines of a PE's queue headers the loop prefetches */
  struct wf_guard_mask *gmask;     /* sim_guard.c: the distinct wf_pe.skip sets */
  uint8_t **gvar;                  /* sim_guard.c: [class][pc], a bit per guard condition that
                                      names a loop variable (shared by the bands) */
  uint64_t **gloop;                /* sim_guard.c: [class], a bit per `loop` instruction */
  size_t n_gmask, n_gmask_cap;
  wf_sim_event_fn ev_fn;
  void *ev_user;
  wf_sim_compute_fn cp_fn;
  void *cp_user;
  /* Threads (sim_threads.c). A band's simulator is a copy of the whole one with its own
   * lists, counters and statistics, stepping rows [y0, y1); `band` is NULL in the one that
   * steps the whole mesh (y0 = 0, y1 = h), which holds the bands in `thr`. */
  struct wf_band *band;
  int y0, y1;
  struct wf_threads *thr;
};

/* sim_sched.c: the services the steps share */
void wf_sim_rt_error(wf_sim *s, const wf_pe *p, const wf_pe_instr *in, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
WF_SIM_HIDDEN void wf_sim_wake_pe(wf_sim *s, wf_pe *p);
WF_SIM_HIDDEN void wf_sim_wake_router(wf_sim *s, wf_router *r);
/* A sleeping router's blocked state may have changed (a destination drained, a buffer of its
 * own became non-empty): it is visited again where the polling loop would visit it. */
WF_SIM_HIDDEN void wf_sim_wake_sleeper(wf_sim *s, wf_router *r);
/* A pop from f, whose producer is router `prod`: if prod found f full, it may sleep on it. */
static inline void wf_sim_drained(wf_sim *s, wf_fifo *f, struct wf_router *prod) {
  if (f->full_seen) {
    f->full_seen = 0;
    if (prod && prod->asleep) wf_sim_wake_sleeper(s, prod);
  }
}
void wf_sim_emit(wf_sim *s, const wf_pe *p, int kind, int pc, int64_t dur);
/* A fabric stream's event: its instruction, async engine (-1: the main thread), wavelets. */
void wf_sim_emit_stream(wf_sim *s, const wf_pe *p, int kind, int pc, int engine, int64_t wavelets);
float *wf_sim_pe_mem(wf_sim *s, wf_pe *p); /* allocates on first use; NULL in timing mode */
static inline wf_router *wf_sim_router_of(wf_sim *s, const wf_pe *p) {
  (void)s;
  return p->rt;
}
/* sim_layout.c puts a router's colors and a PE's input queues right behind them in the
 * slab, so both follow from the address without a read (the loop's prefetch and forwards
 * reach a neighbour's buffers this way). */
static inline wf_rcolor *wf_router_colors(const wf_router *r) {
  return (wf_rcolor *)((char *)(uintptr_t)r + WF_SIM_LINE_UP(sizeof(wf_router)));
}
static inline wf_fifo *wf_pe_queues(const wf_pe *p) {
  return (wf_fifo *)((char *)(uintptr_t)p + WF_SIM_LINE_UP(sizeof(wf_pe)));
}
/* Port d of router r for its local color c leads into this buffer: the PE's input queue
 * (RAMP) or the neighbour's input buffer; NULL when no neighbour runs a class with the
 * color (a forward there is a run-time error, sim_fabric.c). */
static inline wf_fifo *wf_router_out(const wf_router *r, int c, int d) {
  static const uint8_t opp[WF_DIR_COUNT] = {WF_DIR_S, WF_DIR_W, WF_DIR_N, WF_DIR_E, WF_DIR_RAMP};
  if (d == WF_DIR_RAMP) return &wf_pe_queues(r->pe)[c];
  int li = r->rc[c].out_li[d];
  return li < 0 ? NULL : &wf_router_colors(r->nb[d])[li].in[opp[d]];
}
/* The global color of router r's local color c. */
static inline int wf_router_color(const wf_sim *s, const wf_router *r, int c) {
  return s->ci[r->pe->cls_i].lcol[c];
}

/* fifos (inline: every wavelet move pushes and pops; indices wrap without a division) */
/* sim_layout.c: zeroed storage for queue_depth wavelets */
WF_SIM_HIDDEN wf_wv *wf_sim_fifo_storage(wf_sim *s);
static inline void wf_fifo_push(wf_sim *s, wf_fifo *f, wf_wv w) {
  WF_ASSERT(f->count < s->depth);
  if (!f->buf) f->buf = wf_sim_fifo_storage(s);
  int i = f->head + f->count;
  f->buf[i >= s->depth ? i - s->depth : i] = w;
  f->count++;
}
static inline wf_wv *wf_fifo_head(wf_fifo *f) { return f->count ? &f->buf[f->head] : NULL; }
static inline wf_wv wf_fifo_pop(wf_sim *s, wf_fifo *f) {
  wf_wv w = f->buf[f->head];
  f->head = (int16_t)(f->head + 1 == s->depth ? 0 : f->head + 1);
  f->count--;
  return w;
}

/* sim_fabric.c */
/* Puts w into f, router r's input buffer `bit` (local color lc, port rx: lc * WF_DIR_COUNT
 * + rx), and wakes r (inline: every forward and every item down a ramp pushes). */
static inline void wf_router_push_at(wf_sim *s, wf_router *r, wf_fifo *f, int bit, wf_wv w) {
  int was_empty = !f->count;
  wf_fifo_push(s, f, w);
  r->ne[bit >> 6] |= 1ull << (bit & 63);
  r->buffered++;
  /* A sleeper's step changes only if a buffer gains a head; behind a head, nothing. */
  if (!r->active) wf_sim_wake_router(s, r);
  else if (r->asleep && was_empty) wf_sim_wake_sleeper(s, r);
}
/* Returns 1 if nothing moved and the step would repeat identically every cycle until an
 * event (every non-empty buffer's ready head waits for a full destination or a switch
 * position); then r->sl_inc holds the stalls one such step counts. */
WF_SIM_HIDDEN int wf_router_step(wf_sim *s, wf_router *r);
/* Prefetch stages, in the order the cycle loop issues them for one entry of its lists
 * (sim_sched.h, below): each reads only lines the one before fetched. */
/* Hints for the cycle loop, no effect: the colors' state of r's non-empty buffers (MID);
 * the wavelets and destinations they point to (NEAR). FAR, r's hot lines, is inline. */
WF_SIM_HIDDEN void wf_router_prefetch_mid(const wf_router *r);
WF_SIM_HIDDEN void wf_router_prefetch_near(const wf_router *r);

int wf_router_setup(wf_sim *s, wf_pe *p, wf_router *r);
void wf_router_link(wf_sim *s, wf_router *r); /* caches destinations once all PEs exist */

/* sim_threads.c: what a band's step does across its edge, kept for the phase's commit (a
 * push into the neighbour band's router, a drain of a buffer its router fills), and the
 * keys a band hands out in the order one thread would have (a router woken from empty, a
 * PE woken from a hard sleep). */
WF_SIM_HIDDEN void wf_band_push(wf_sim *s, const wf_router *from, wf_router *to, int lc, int rx,
                                wf_wv w);
WF_SIM_HIDDEN void wf_band_drained(wf_sim *s, wf_fifo *f, wf_router *prod, const wf_router *cons);
WF_SIM_HIDDEN void wf_band_new_router(wf_sim *s, wf_router *r);
WF_SIM_HIDDEN void wf_band_new_pe(wf_sim *s, wf_pe *p);
WF_SIM_HIDDEN void wf_band_error(wf_sim *s, const char *where, const char *msg);
WF_SIM_HIDDEN void wf_band_event(const wf_sim_event *ev, void *user);
/* 1 if out port d of r leads into another band (only N and S: bands are rows). */
static inline int wf_band_edge(const wf_sim *s, const wf_router *r, int d) {
  return (d == WF_DIR_N && r->y == s->y0) || (d == WF_DIR_S && r->y + 1 == s->y1);
}
/* sim.c: the pieces of a cycle (step_cycle), shared with the threaded loop. */
typedef struct wf_jump_state {
  int all_compute;
  int64_t next_busy;
} wf_jump_state;
WF_SIM_HIDDEN void wf_sim_cycle_begin(wf_sim *s);
WF_SIM_HIDDEN void wf_sim_compact(wf_sim *s, wf_jump_state *j, int n, int n_slept, int n_emptied);
WF_SIM_HIDDEN void wf_sim_jump_see(wf_jump_state *j, const wf_pe *p);
WF_SIM_HIDDEN void wf_sim_settle(wf_sim *s);
/* sim.c: the end of a run once every PE and router sleeps and nothing is in flight: a PE that
 * still waits is a deadlock (reported, WF_EXIT_RUNTIME); else the total cycles and the
 * wavelets never received. */
int wf_sim_finish(wf_sim *s);
/* Counts each MoE route's indices per expert into s->route_counts (functional mode). */
void wf_sim_count_routes(wf_sim *s);
/* Both cycle loops (sim.c, sim_threads.c), inlined in them: steps router r (li: its index in
 * the active list, -1 when it came from the woken ones) and puts it to sleep when it is
 * stuck, or lists it to join the active ones; an active router whose buffers emptied is
 * noted in s->emptied (*n_emptied counts them). */
static inline void wf_sim_router_stepped(wf_sim *s, wf_router *r, int li, int *n_emptied) {
  int stuck = wf_router_step(s, r) && !s->rt_poll;
  if (stuck) {
    r->asleep = 1;
    r->sl_from = s->now + 1;
    s->n_rt_sleep++;
  }
  if (li >= 0) {
    /* only its own step pops its buffers */
    if (stuck || !r->buffered) s->emptied[(*n_emptied)++] = li;
  } else if (stuck) {
    r->where = WF_RT_NONE;
  } else {
    r->where = WF_RT_JOIN;
    s->rt_join[s->n_rt_join++] = r;
  }
}
/* sim_threads.c: wf_sim_run for more than one band; frees the bands. */
int wf_sim_run_threads(wf_sim *s, int bands);
void wf_sim_threads_free(wf_sim *s);
/* sim_mpi.c: wf_sim_run for one band per MPI rank; rank 0 ends with the whole state. */
int wf_sim_run_mpi(wf_sim *s);
/* sim.c: wf_sim_run in this process (threads or one thread). */
int wf_sim_run_local(wf_sim *s);

/* sim_sched.c: puts a PE inside a compute instruction to sleep until it ends (the timer
 * heap, ordered by timer_before; sim.c pops it). */
WF_SIM_HIDDEN void wf_sim_timer_sleep(wf_sim *s, wf_pe *p);
static inline int wf_sim_timer_before(const wf_pe *a, const wf_pe *b) {
  return a->busy_until < b->busy_until || (a->busy_until == b->busy_until && a->key < b->key);
}
/* sim_sched.c: credits a sleeping router's skipped visits up to cycle `upto`. */
WF_SIM_HIDDEN void wf_sim_rt_credit(wf_sim *s, wf_router *r, int64_t upto);


/* sim_pe.c */
/* Classifies cycles [from, from + n) of p as cls (WF_CY_COMPUTE, COMM or STALL) and charges
 * them to its current op. Charges are made in time order and never overlap: a cycle counted
 * twice is a simulator bug, caught here. */
static inline void wf_pe_charge(wf_sim *s, wf_pe *p, int cls, int64_t from, int64_t n) {
  WF_ASSERT(from >= p->acct_to && n > 0);
  p->acct_to = from + n;
  wf_op_stat *o = &s->ops[p->op];
  if (cls == WF_CY_COMPUTE) {
    p->compute += n;
    o->compute += n;
  } else if (cls == WF_CY_COMM) {
    p->comm += n;
    o->comm += n;
  } else {
    p->stall += n;
    o->stall += n;
  }
}
/* Charges the cycles p slept through up to and including `upto`: asleep inside a task (a
 * receive, a send on a full ramp, a `wait`) or with async streams pending they are stalls
 * (no stream moves while it sleeps); asleep with nothing to do, idle. */
static inline void wf_sim_charge_sleep(wf_sim *s, wf_pe *p, int64_t upto) {
  if ((p->state != WF_PE_IDLE || p->n_async) && upto >= p->sleep_start)
    wf_pe_charge(s, p, WF_CY_STALL, p->sleep_start, upto - p->sleep_start + 1);
}
WF_SIM_HIDDEN void wf_pe_step(wf_sim *s, wf_pe *p);
/* sim_pe.c: prefetch hints for the cycle loop (stages as for routers, below) */
WF_SIM_HIDDEN void wf_pe_prefetch_mid(const wf_pe *p);
WF_SIM_HIDDEN void wf_pe_prefetch_near(const wf_sim *s, const wf_pe *p);

/* Both cycle loops (sim.c's step_cycle, sim_threads.c's phases), inlined in them. How many list
 * entries ahead each prefetch stage goes for entry i of n (its hot lines first, then what they
 * point to), for the awake PEs and for the routers holding wavelets. Each entry prefetches a
 * dozen lines or so, and farther stages (12, 8, 4) put more of them in flight at once: with
 * those the 256x256 allreduce took 10-14% more user time (commit cf79c17): */
enum { WF_PF_AHEAD_FAR = 6, WF_PF_AHEAD_MID = 4, WF_PF_AHEAD_NEAR = 2 };
static inline void wf_sim_prefetch_pes(wf_sim *s, int i, int n) {
  if (i + WF_PF_AHEAD_FAR < n) {
    const char *b = (const char *)s->act_pe[i + WF_PF_AHEAD_FAR];
    __builtin_prefetch(b);
    __builtin_prefetch(b + 64);
    __builtin_prefetch(b + 128);
    const char *q = b + WF_SIM_LINE_UP(sizeof(wf_pe));
    if (s->pf_q_lines > 0) __builtin_prefetch(q);
    if (s->pf_q_lines > 1) __builtin_prefetch(q + 64);
  }
  if (i + WF_PF_AHEAD_MID < n) wf_pe_prefetch_mid(s->act_pe[i + WF_PF_AHEAD_MID]);
  if (i + WF_PF_AHEAD_NEAR < n) wf_pe_prefetch_near(s, s->act_pe[i + WF_PF_AHEAD_NEAR]);
}
static inline void wf_sim_prefetch_routers(wf_sim *s, int i, int n) {
  if (i + WF_PF_AHEAD_FAR < n) {
    const char *b = (const char *)s->act_rt[i + WF_PF_AHEAD_FAR];
    __builtin_prefetch(b);
    __builtin_prefetch(b + 64);
    __builtin_prefetch(b + 128);
  }
  if (i + WF_PF_AHEAD_MID < n) wf_router_prefetch_mid(s->act_rt[i + WF_PF_AHEAD_MID]);
  if (i + WF_PF_AHEAD_NEAR < n) wf_router_prefetch_near(s->act_rt[i + WF_PF_AHEAD_NEAR]);
}
/* Pops the router with the least key off the heap of sleepers woken to run in this cycle. */
static inline wf_router *wf_sim_rt_now_pop(wf_sim *s) {
  wf_router *top = s->rt_now[0], *last = s->rt_now[--s->n_rt_now];
  int i = 0, n = s->n_rt_now;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && s->rt_now[c + 1]->key < s->rt_now[c]->key) c++;
    if (s->rt_now[c]->key >= last->key) break;
    s->rt_now[i] = s->rt_now[c];
    i = c;
  }
  if (n) s->rt_now[i] = last;
  return top;
}
void wf_pe_start(wf_sim *s, wf_pe *p);
int wf_pe_quiescent(const wf_pe *p);

/* sim_exec.c: performs a compute instruction's effect; cycles it costs. */
WF_SIM_HIDDEN int wf_sim_execute(wf_sim *s, wf_pe *p, const wf_pe_instr *in);
WF_SIM_HIDDEN int64_t wf_sim_compute_cycles(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in);
/* Memory operand a of `in`, checked to hold `words` words: 0 and its word offset in SRAM
 * (and *ptr, NULL in timing mode), or -1 after reporting. Inline: every operand of every
 * instruction goes through it (sim_exec.c, sim_f16.c). */
static inline int wf_sim_operand(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int a,
                                 int64_t words,
                   float **ptr, int64_t *off) {
  const wf_pe_sym *sym = &p->cls->syms[in->args[a].sym];
  int64_t o = wf_pe_arg_off(&in->args[a], &p->env);
  if (words < 0 || o < 0 || o + words > sym->bytes / 4) {
    wf_sim_rt_error(s, p, in,
                    "%s operand %d reaches past the end of %s (%lld words at +%lld, symbol holds %lld)",
                    wf_peops[in->op].name, a + 1, sym->name, (long long)words, (long long)o,
                    (long long)(sym->bytes / 4));
    return -1;
  }
  *off = sym->offset / 4 + o;
  float *m = wf_sim_pe_mem(s, p);
  if (ptr) *ptr = m ? m + *off : NULL;
  return 0;
}

/* sim_f16.c: the fp16 SIMD instructions (cost SIMD16): checks operands and, when fn is
 * set, performs `in`. 0, or -1 after reporting. */
int wf_sim_run_f16(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int fn);

/* sim_bank.c: source-operand read pairs of `in` that fall in one SRAM bank (each costs
 * target.bank_conflict_cycles); 0 when the cost is off. */
int64_t wf_sim_bank_conflicts(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in);

/* sim_layout.c: allocates every PE and router (zeroed) in one slab, cell by cell, for the
 * cells whose class is cls[y * w + x] (-1: none) and sets s->pes, s->routers, each PE's
 * class index, queue headers and router, and each router's color state and PE.
 * wf_sim_unpack_free releases the slab, the FIFO arena and every PE's memory. */
void wf_sim_layout(wf_sim *s, const int *cls);
void wf_sim_unpack_free(wf_sim *s);

/* sim_guard.c: p->skip, computed (and shared with PEs of the same bits) on first use;
 * wf_sim_guard_free releases every set. */
WF_SIM_HIDDEN const uint64_t *wf_sim_guard_skip(wf_sim *s, wf_pe *p);
void wf_sim_guard_free(wf_sim *s);
/* 1 if instruction pc's guard never holds on p, so a fetch skips it unevaluated. */
static inline int wf_sim_never(wf_sim *s, wf_pe *p, int pc) {
  const uint64_t *b = p->skip ? p->skip : wf_sim_guard_skip(s, p);
  return (int)(b[pc >> 6] >> (pc & 63) & 1);
}
/* The first instruction after pc that p's fetch cannot skip unevaluated: live on p (its
 * skip bit clear: the bits past the class's code are clear) or a loop (a skipped loop skips
 * its body, which the bits do not say). */
static inline int wf_sim_next_live(const wf_sim *s, const wf_pe *p, int pc) {
  const uint64_t *skip = p->skip, *loop = s->gloop[p->cls_i];
  for (int i = pc + 1;; i = (i | 63) + 1) {
    uint64_t stop = (~skip[i >> 6] | loop[i >> 6]) >> (i & 63);
    if (stop) return i + __builtin_ctzll(stop);
  }
}
/* sim_guard.c: s->gvar and s->gloop, made once by wf_sim_new; freed by wf_sim_free. */
void wf_sim_guard_init(wf_sim *s);
void wf_sim_guard_vars_free(wf_sim *s);
/* Whether instruction `in` (at pc) of p's class holds its guard, given !wf_sim_never(s, p,
 * pc): its conditions without loop variables hold then, so only the others are evaluated. */
static inline int wf_sim_guard_holds(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in,
                                     int pc) {
  for (unsigned m = s->gvar[p->cls_i][pc]; m; m &= m - 1)
    if (!wf_cond_eval(&in->guard.c[__builtin_ctz(m)], &p->env)) return 0;
  return 1;
}

/* sim_deadlock.c */
void wf_sim_report_deadlock(wf_sim *s, const char *why);

/* sim_io.c: copies the whole tensor `src` (row-major) into every PE of t's region by layout. */
void wf_sim_scatter(wf_sim *s, const wf_plan_tensor *t, const float *src);

#endif
