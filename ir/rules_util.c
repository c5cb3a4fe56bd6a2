/* Helpers the shape and cost rules share (ir/rules.h): operand types, attributes, broadcasting,
 * axes and slice bounds. The table that dispatches to the rules is rules.c. */
#include <stdlib.h>
#include <string.h>

#include "ir/rules.h"

wf_type wf_rule_type(wf_dtype dt, int rank, const int64_t *dims) { return wf_type_make(dt, rank, dims); }

const wf_type *wf_rule_in(const wf_func *f, const wf_op *op, int i) {
  WF_ASSERT(i >= 0 && i < op->n_operands);
  return wf_value_type(f, op->operands[i]);
}

const char *wf_rule_type_str(const wf_func *f, const wf_type *t) {
  static char bufs[4][256];
  static int next;
  char *buf = bufs[next];
  next = (next + 1) % 4;
  char *text = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&text, &len);
  if (mf) {
    wf_print_type(mf, f ? f->module : NULL, t);
    fclose(mf);
  }
  snprintf(buf, sizeof bufs[0], "%s", text ? text : "?");
  free(text);
  return buf;
}

int wf_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rank_out,
                       int64_t *out) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    /* align from the right */
    int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
    int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da < 0 || db < 0) return -1; /* no dim is negative (an Expand's shape input may say so) */
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else return -1;
  }
  *rank_out = r;
  return 0;
}

int wf_perm_swaps_last_two(const wf_func *f, const wf_op *tr, int rank) {
  const wf_attr *a = wf_op_attr(f, tr, "perm");
  if (!a || a->kind != WF_ATTR_INTS || a->u.ints.n != rank || rank < 2) return 0;
  for (int d = 0; d < rank; d++)
    if (a->u.ints.v[d] != (d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d)) return 0;
  return 1;
}

int wf_norm_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return -1;
  return (int)(axis < 0 ? axis + rank : axis);
}

const int64_t *wf_rule_ints(const wf_func *f, const wf_op *op, const char *name, int *n) {
  const wf_attr *a = wf_op_attr(f, op, name);
  *n = -1;
  if (!a) return NULL;
  if (a->kind == WF_ATTR_INTS) {
    *n = a->u.ints.n;
    return a->u.ints.v;
  }
  if (a->kind == WF_ATTR_FLOATS && a->u.floats.n == 0) *n = 0;
  return NULL;
}

double wf_rule_float(const wf_func *f, const wf_op *op, const char *name, double dflt) {
  return wf_op_float(f, op, name, dflt);
}

int64_t wf_rule_int(const wf_func *f, const wf_op *op, const char *name, int64_t dflt) {
  const wf_attr *a = wf_op_attr(f, op, name);
  return a && a->kind == WF_ATTR_INT ? a->u.i : dflt;
}

int wf_rule_bool(const wf_func *f, const wf_op *op, const char *name, int dflt) {
  const wf_attr *a = wf_op_attr(f, op, name);
  return a && a->kind == WF_ATTR_BOOL ? a->u.i != 0 : dflt;
}

/* Python's slice.indices for one bound: negative counts from the end, then clamp to
 * [0, dim] (step > 0) or [-1, dim-1] (step < 0). */
static int64_t slice_bound(int64_t v, int64_t dim, int64_t step) {
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
  if (v < 0) v = v < -dim ? lo : v + dim; /* compared first: v + dim may overflow */
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

void wf_slice_resolve(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first,
                      int64_t *count) {
  WF_ASSERT(step != 0);
  if (step == INT64_MIN) step = -INT64_MAX; /* same slice for any dim; keeps -step defined */
  /* ONNX Slice as its reference implementation runs it: numpy / Python slicing, where
   * INT64_MAX / INT64_MIN ends mean "to the end" / "to the beginning". */
  start = slice_bound(start, dim, step);
  end = slice_bound(end, dim, step);
  int64_t n = 0;
  if (step > 0 && end > start) n = (end - start - 1) / step + 1;
  if (step < 0 && start > end) n = (start - end - 1) / (-step) + 1;
  *first = start;
  *count = n;
}

int wf_unary_allows_int(wf_opcode code) { return code == WF_OP_NEG || code == WF_OP_RELU; }
