/* waferc backend — lowering a partitioned function to SPMD program classes. Internal to the
 * backend: emit.c drives it, lower_*.c lower one op family each, cost.c predicts cycles. */
#ifndef WAFERC_BACKEND_LOWER_H
#define WAFERC_BACKEND_LOWER_H

#include "backend/pe_program.h"
#include "waferc/ir.h"
#include "waferc/target.h"

/* Colors by purpose; allocated on first use from the target's usable colors. */
enum { WF_COLOR_ROW_BCAST, WF_COLOR_COL_BCAST, WF_COLOR_REDUCE_X, WF_COLOR_BCAST_X, WF_COLOR_ROLES };

typedef struct wf_lowered_op {
  const wf_op *op;
  char result[64];       /* symbol of its (first) result */
  const char *lowering;  /* "summa-broadcast", "local", ... */
  int64_t predicted;     /* cycles, cost model */
} wf_lowered_op;

typedef struct wf_lower {
  wf_module *m;
  wf_func *f;
  const wf_target *t;
  int region;            /* index of the region every value lives on */
  int w, h;              /* its size in PEs */
  wf_pe_class *cls;      /* phase 1: one class covers the whole region */
  int *sym_of;           /* value -> symbol index, -1 = none yet */
  int color[WF_COLOR_ROLES]; /* -1 = not allocated */
  wf_lowered_op *ops; int n_ops;
} wf_lower;

/* Symbol text of a value: %name, %N (canonical numbering as the printer's) or @global. */
void wf_lower_value_name(const wf_lower *L, wf_value v, char *buf, size_t cap);
/* Symbol holding v's local block (created on first use). */
int wf_lower_sym(wf_lower *L, wf_value v);
/* A scratch symbol shared by all ops, at least `bytes` large. */
int wf_lower_temp(wf_lower *L, const char *name, int64_t bytes);
/* The color for a purpose, allocating it and its routes on first use; -1 (reported) if the
 * target has no color left. */
int wf_lower_color(wf_lower *L, int purpose, wf_loc loc);
/* Local block of a value: rows x cols (rank 1: 1 x cols). */
void wf_lower_block(const wf_lower *L, wf_value v, int64_t *rows, int64_t *cols);

/* Instruction helpers: guard may be NULL. */
void wf_emit(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args);
wf_pe_arg wf_arg_sym(int sym);
wf_pe_arg wf_arg_int(int64_t v);
wf_pe_arg wf_arg_term(wf_pe_term t);

/* Op families; each returns 0 or a WF_EXIT_* code after reporting. */
int wf_lower_matmul(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_elementwise(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_softmax(wf_lower *L, const wf_op *op, wf_lowered_op *out);

/* cost.c: the phase-1 cost model (docs/cycle-model.md, "Predicted cycles"). */
int64_t wf_cost_bcast(const wf_target *t, int64_t wavelets, int hops);
int64_t wf_cost_chain_allreduce(const wf_target *t, int64_t wavelets, int pes);
int64_t wf_cost_summa(const wf_target *t, int p, int64_t m, int64_t k, int64_t n);

#endif
