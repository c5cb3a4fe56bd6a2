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

#include "backend/pe_program.h"
#include "waferc/target.h"
#include "waferc/tensor.h"

#define WF_PLAN_FORMAT_VERSION 1

/* A tensor bound to PE memory: an input, output or weight. */
typedef struct wf_plan_tensor {
  char name[64];
  char symbol[64];   /* symbol in every class of the region */
  wf_dtype dtype;
  int rank;
  int64_t dims[WF_MAX_RANK];
  uint8_t split[WF_MAX_RANK]; /* wf_axis each dim is split along (others: replicated) */
  char layout[128];  /* text form, for messages */
  int region;
  int64_t offset, bytes; /* weights: byte range in weights.bin */
} wf_plan_tensor;

typedef struct wf_plan_region {
  char name[64];
  int x, y, w, h;
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
  int64_t predicted;
} wf_plan_op;

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
  int64_t predicted_total;
  uint32_t colors_used;       /* bit set */
} wf_plan;

wf_plan *wf_plan_load(const char *dir);
void wf_plan_free(wf_plan *p);

typedef struct wf_sim_opts {
  int64_t max_cycles;       /* 0 = unlimited */
  int64_t deadlock_cycles;  /* no progress for this long = deadlock */
} wf_sim_opts;
#define WF_SIM_OPTS_DEFAULT ((wf_sim_opts){0, 10000})

typedef struct wf_sim wf_sim;
wf_sim *wf_sim_new(const wf_plan *p, const wf_sim_opts *o);
void wf_sim_free(wf_sim *s);
/* Scatters a host tensor into the PEs by the input's layout. 0 on success, else reports. */
int wf_sim_set_input(wf_sim *s, const char *name, const wf_tensor *t);
/* Runs to completion. Returns a WF_EXIT_* code; errors (deadlock ...) are reported. */
int wf_sim_run(wf_sim *s);
int64_t wf_sim_cycles(const wf_sim *s);
/* Gathers output i by its layout (caller frees). */
wf_tensor *wf_sim_output(wf_sim *s, int i);
int wf_sim_write_report(const wf_sim *s, const char *path);
void wf_sim_print_summary(const wf_sim *s, FILE *out);

/* Number of elements of tensor t held by one PE (the block), and the block's dims. */
int64_t wf_plan_block_dims(const wf_plan *p, const wf_plan_tensor *t, int64_t *bdims);

#endif
