/* waferc die-level engine — a mesh of dies (one wafer or several) simulated on SimGrid.
 *
 * The second level of the device model (DESIGN.md, "Two levels of simulation"): each die is
 * a host with compute and HBM; neighbouring dies are joined by one link per direction with a
 * bandwidth and a latency; dies on different wafers share the border's bandwidth. Messages
 * follow X-Y routes (shortest detours around dead links, when the system has any), so
 * concurrent messages share links and SimGrid's flow-level model shares their bandwidth
 * (max-min fair). waferc writes the platform XML from a die target file
 * (targets/dies/NAME.target, docs/moe.md) and runs phases of concurrent flows on it.
 *
 *   wf_die_target t;
 *   if (wf_die_target_load("moe-b200-4x4", &t)) return WF_EXIT_INPUT;   // reported
 *   wf_die_system sys;
 *   wf_die_system_init(&sys, &t, 1, 1);                 // wafer grid 1x1
 *   wf_die_flows f = {0};
 *   wf_die_flows_add(&f, 0, 5, 1e6, 0);                 // die 0 -> die 5, 1 MB, step 0
 *   wf_die_engine *e = wf_die_engine_open(&sys, &f, 1, "/tmp/plat.xml");  // routes for f
 *   double secs = wf_die_engine_run(e, &f);             // simulated seconds, steps in order
 *
 * Layering: runtime/die reaches only ir/ and runtime/ (tests/scripts/layering.sh). */
#ifndef WAFERC_RUNTIME_DIE_H
#define WAFERC_RUNTIME_DIE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Where die targets and their tables are looked up after $WAFERC_TARGET_PATH: the build's and
 * the installed targets/dies (set by CMake; empty when a file is compiled alone). */
#ifndef WF_DIE_BUILD_TARGET_DIR
#define WF_DIE_BUILD_TARGET_DIR ""
#endif
#ifndef WF_DIE_INSTALL_TARGET_DIR
#define WF_DIE_INSTALL_TARGET_DIR ""
#endif

/* ---- the die target (target.c) ----------------------------------------------------------- */

typedef struct wf_die_target {
  char name[64];          /* preset name */
  char description[200];  /* one line for reports */
  int dies_w, dies_h;     /* dies per wafer */
  int wafers_w, wafers_h; /* default wafer grid (--wafers overrides) */
  double fp16_flops;      /* per die, FLOP/s (attention, communication precision) */
  double int8_ops;        /* per die, OP/s (expert linear layers) */
  double hbm_bytes;       /* HBM capacity per die */
  double hbm_bw;          /* HBM bandwidth per die, B/s */
  double link_bw;         /* one D2D link, one direction, B/s */
  double link_latency;    /* one D2D link, s */
  double border_bw;       /* one wafer border, one direction, B/s: shared by its die links */
  double border_latency;  /* one die link across a wafer border, s */
  /* Optional (0 when absent): the core array inside a die, for wafer-dse (docs/dse.md). */
  int core_w, core_h;     /* cores per die (Dojo-style) */
  double core_sram;       /* SRAM per core, bytes */
  double core_clock;      /* Hz */
} wf_die_target;

/* NAME (looked up as NAME.target in $WAFERC_TARGET_PATH, the build tree's targets/dies/,
 * the installed targets/dies/) or a path. Every key is required but core_array, core_sram and
 * core_clock. 0, or a WF_EXIT_* code
 * after reporting (file:line for bad values, every missing key at once). */
int wf_die_target_load(const char *name_or_path, wf_die_target *t);
/* Opens a die-level file: `name` itself when it has a '/' or ends in `suffix` (*given = 1),
 * else NAME<suffix> in each $WAFERC_TARGET_PATH entry and its dies/, then the build's and the
 * installed targets/dies (*given = 0). path receives the file opened, or `name`; NULL when
 * none opens (errno says why for a given path). Die targets and wafer-dse's tables. */
FILE *wf_die_file_open(const char *name, const char *suffix, char *path, size_t cap, int *given);

/* ---- the system: wafers of dies on one global mesh (topo.c) ------------------------------- */

enum { WF_DIE_E, WF_DIE_W, WF_DIE_N, WF_DIE_S }; /* link directions; N is toward y-1 */

typedef struct wf_die_system {
  wf_die_target t;
  int wafers_w, wafers_h; /* wafer grid */
  int w, h;               /* global mesh in dies: wafers_w*dies_w x wafers_h*dies_h */
  int n;                  /* dies */
  /* NULL (wf_die_system_init), or n*4 flags by directed link index: dead links, which routes
   * avoid. The caller owns the array; it must outlive the system and its engine. */
  const unsigned char *link_dead;
} wf_die_system;

void wf_die_system_init(wf_die_system *s, const wf_die_target *t, int wafers_w, int wafers_h);
static inline int wf_die_id(const wf_die_system *s, int x, int y) { return y * s->w + x; }
static inline int wf_die_x(const wf_die_system *s, int d) { return d % s->w; }
static inline int wf_die_y(const wf_die_system *s, int d) { return d / s->w; }
int wf_die_wafer(const wf_die_system *s, int d);   /* wafer index, row-major in the grid */
int wf_die_hops(const wf_die_system *s, int a, int b); /* Manhattan distance = X-Y hops */
/* Directed link index die*4 + dir; -1 when the die has no neighbour that way. */
int wf_die_link(const wf_die_system *s, int d, int dir);
int wf_die_link_crosses_wafer(const wf_die_system *s, int link);
double wf_die_link_bw(const wf_die_system *s, int link);
double wf_die_link_latency(const wf_die_system *s, int link);
/* The route a -> b: writes up to cap link indices into out, returns the hop count. X-Y when no
 * link on it is dead, else a shortest path over healthy links (deterministic: the same faults
 * give the same route), which may be up to n - 1 hops; -1 when no healthy path joins a to b. */
int wf_die_route(const wf_die_system *s, int a, int b, int *out, int cap);

/* ---- flows: what a phase sends (flows.c) -------------------------------------------------- */

typedef struct wf_die_flow {
  int src, dst;  /* dies; src == dst costs nothing and is skipped */
  double bytes;
  int step;      /* steps run in order, each after the previous has finished (a barrier) */
} wf_die_flow;

typedef struct wf_die_flows {
  wf_die_flow *v;
  size_t n, cap;
  int steps;     /* 1 + the largest step */
} wf_die_flows;

void wf_die_flows_add(wf_die_flows *f, int src, int dst, double bytes, int step);
void wf_die_flows_append(wf_die_flows *f, const wf_die_flows *g, int step_offset);
void wf_die_flows_free(wf_die_flows *f);
/* Bytes per directed link summed over the flows' routes (loads has s->n*4 entries). */
void wf_die_flows_link_bytes(const wf_die_system *s, const wf_die_flows *f, double *loads);
/* Volume-weighted mean X-Y hops of the flows that move (src != dst). */
double wf_die_flows_mean_hops(const wf_die_system *s, const wf_die_flows *f);

/* MoEntwine Eq. 1: latency = (volume / bandwidth + link_latency) x hops, per step: the
 * largest per-destination value (its received bytes over one link's bandwidth, times its
 * volume-weighted hops), summed over steps. A contention-free, store-and-forward estimate. */
double wf_die_flows_eq1(const wf_die_system *s, const wf_die_flows *f);

/* ---- the SimGrid engine (engine.c, platform.c) -------------------------------------------- */

typedef struct wf_die_engine wf_die_engine;

/* Writes the platform XML to xml_path with a route for every (src, dst) pair used by any of
 * the nsets flow sets (only those: a 256-die system has 65536 pairs), loads it into SimGrid.
 * SimGrid holds one platform per process: call once. NULL after reporting. */
wf_die_engine *wf_die_engine_open(const wf_die_system *s, const wf_die_flows *sets, int nsets,
                                  const char *xml_path);
int wf_die_platform_write(const wf_die_system *s, const wf_die_flows *sets, int nsets, const char *path);
/* Frees the engine's tables (SimGrid's platform stays loaded for the process). NULL is fine. */
void wf_die_engine_close(wf_die_engine *e);
/* Simulates f, step after step (each step's flows concurrent), and returns the seconds. */
double wf_die_engine_run(wf_die_engine *e, const wf_die_flows *f);
/* The same with background flows (an expert migration) sent at once alongside, which no
 * step waits for: returns the phase's seconds; *bg_secs gets the background's (may be NULL). */
double wf_die_engine_run_with(wf_die_engine *e, const wf_die_flows *f, const wf_die_flows *bg, double *bg_secs);
/* Simulates one compute phase: die d executes ops[d] operations at `ops_per_s` while reading
 * bytes[d] from its HBM (a host of its own behind a link of the HBM's bandwidth); a die
 * finishes when both are done. Returns the slowest die's seconds. */
double wf_die_engine_compute(wf_die_engine *e, const double *ops, const double *bytes, double ops_per_s);

/* ---- link heatmaps (linkmap.c) ------------------------------------------------------------ */

/* DIR/<file>_link_{e,w,n,s}.png + .csv (bytes each die sends on that link, in MB, through
 * runtime/heatmap.c) and DIR/<file>_links.csv (one row per directed link: from, to, bytes,
 * crosses_wafer). Returns a WF_EXIT_* code. */
int wf_die_heatmap_write(const wf_die_system *s, const double *loads, const char *dir, const char *file,
                         const char *title);

#endif
