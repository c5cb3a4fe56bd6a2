/* A reshape that regroups the rows of a tensor and keeps its last dim: [B, T, E] -> [B*T, E]
 * and back, as Hugging Face's MoE layers flatten the tokens of a batch before the router and
 * restore them after the combine (docs/moe-plans.md). Under partition's rule the rows are the
 * second-last dim, split along y ({B, T_y, E_x} and {M_y, N_x}), so a PE row holds different
 * rows on the two sides. Every PE column assembles all the rows of its columns — each PE
 * writes its real rows at their global place in a zeroed buffer and an allreduce-sum along y
 * completes it (an allgather; a side held whole on every PE needs none) — and then copies the
 * rows of its block of the result. A row of the result past the tensor's end (padding) holds
 * whatever the buffer holds there. Other reshapes stay with lower_movement.c. */
#include "backend/resources/lower.h"
#include "waferc/diag.h"

typedef struct rows_view {
  int64_t outer, t, tb; /* rows = outer * t: the leading dims, the second-last (split or not) */
  int split;            /* the second-last dim split along y (over more than one PE) */
} rows_view;

static int parts_of(const wf_lower *L, int split) {
  return split == WF_AXIS_X ? L->w : split == WF_AXIS_Y ? L->h : 1;
}

/* 0 when t is laid out as the rows view needs: every dim but the last two whole, the
 * second-last split along y or whole. */
static int view_of(const wf_lower *L, const wf_type *t, rows_view *v) {
  int r = t->rank;
  if (r < 1 || t->layout.rank != r) return -1;
  v->outer = 1;
  for (int d = 0; d + 2 < r; d++) {
    if (parts_of(L, t->layout.dims[d].split) != 1) return -1;
    v->outer *= t->dims[d];
  }
  v->t = r >= 2 ? t->dims[r - 2] : 1;
  int s = r >= 2 ? t->layout.dims[r - 2].split : WF_AXIS_NONE;
  if (s == WF_AXIS_X && parts_of(L, s) > 1) return -1;
  v->split = s == WF_AXIS_Y && L->h > 1;
  v->tb = v->split ? (v->t + L->h - 1) / L->h : v->t;
  return 0;
}

int wf_lower_reshape_rows(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_type *xt = wf_value_type(L->f, op->operands[0]), *rt = wf_value_type(L->f, op->results[0]);
  rows_view a, b;
  if (op->code != WF_OP_RESHAPE || xt->dtype != WF_F32 || view_of(L, xt, &a) || view_of(L, rt, &b)) return -1;
  int ex = xt->layout.dims[xt->rank - 1].split, er = rt->layout.dims[rt->rank - 1].split;
  if (xt->dims[xt->rank - 1] != rt->dims[rt->rank - 1] || parts_of(L, ex) != parts_of(L, er) ||
      (parts_of(L, ex) > 1 && ex != er) || ex == WF_AXIS_Y)
    return -1;
  int64_t rows = a.outer * a.t;
  if (rows != b.outer * b.t) return -1;
  int64_t e = (xt->dims[xt->rank - 1] + parts_of(L, ex) - 1) / parts_of(L, ex); /* the block's columns */
  if (a.tb * e > WF_PE_MAX_SCALE || b.tb * e > WF_PE_MAX_SCALE) return -1;
  int sx = wf_lower_sym(L, op->operands[0]), sr = wf_lower_sym(L, op->results[0]);
  int64_t words = (rows + (int64_t)L->h * b.tb) * e; /* room for the last PE's padding rows */
  int full = wf_lower_temp(L, "$rows_full", words * 4);
  wf_pe_term y = wf_term(WF_TERM_Y, 0);
  int64_t cyc = words;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(full), wf_arg_int(words)});
  if (!a.split) { /* every PE holds every row */
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(full), wf_arg_sym(sx), wf_arg_int(rows * e)});
    cyc += rows * e;
  } else {
    int64_t q = a.t / a.tb, rem = a.t - q * a.tb;
    for (int c = 0; c < 2; c++) { /* PEs below q: tb real rows of each outer index; PE q: rem */
      int64_t real = c == 0 ? a.tb : rem;
      if (!real || (c == 0 && q == 0)) continue;
      wf_pe_guard g = wf_guard0();
      if (a.t < a.tb * L->h) wf_guard_add(&g, y, c == 0 ? WF_CMP_LT : WF_CMP_EQ, wf_term_int((int32_t)q));
      wf_pe_arg d = wf_arg_sym(full);
      d.term = wf_term_scaled(y, (int)(a.tb * e), 0);
      wf_emit(L, &g, WF_PEOP_COPY2D, (wf_pe_arg[]){d, wf_arg_sym(sx), wf_arg_int(a.outer), wf_arg_int(real * e),
                                                   wf_arg_int(a.t * e), wf_arg_int(a.tb * e)});
    }
    cyc += a.outer * a.tb * e;
    L->move_bits |= WF_MOVE_RELAYOUT;
    int rc = wf_lower_allreduce(L, full, rows * e, WF_AXIS_Y, 0, op->loc, &cyc, NULL);
    if (rc) return rc;
  }
  wf_pe_arg s = wf_arg_sym(full);
  if (b.split) s.term = wf_term_scaled(y, (int)(b.tb * e), 0);
  wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(sr), s, wf_arg_int(b.outer), wf_arg_int(b.tb * e),
                                                 wf_arg_int(b.tb * e), wf_arg_int(b.t * e)});
  cyc += b.outer * b.tb * e;
  out->lowering = a.split ? "rows-allgather-y" : "local-rows";
  out->predicted = cyc;
  return 0;
}
