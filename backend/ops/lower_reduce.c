/* Reductions over one axis of the local block and the allreduce that completes them across
 * the mesh.
 *
 * A tensor's PE block is row-major over its dims, each ceil(D/p) long along a split dim. A
 * reduction over one axis views it as [outer][len][inner] (the dims before the axis, the
 * axis, the dims after) and gives outer x inner values: rmax / rsum rows when inner is 1,
 * column statistics otherwise. When the axis is split along x or y the partial results are
 * combined by an allreduce along that axis, so every PE of the line ends with the full
 * statistic — what softmax, layernorm and rmsnorm broadcast back.
 *
 * Padding (docs/partition.md): along a split axis the mesh side does not divide, the last
 * PEs hold fewer real elements than the block (or none). Each PE reads only its real ones:
 * the local statistic is emitted once per case, guarded on the PE's coordinate along the
 * axis (a full block, the remainder, nothing), and a PE with nothing contributes the
 * identity (0 for a sum, -inf for a max). The result never depends on what the padding
 * holds, so no reduction needs it to be zero.
 *
 * The allreduce is phase 1's chain: partials flow to position 0 of the line, combined as
 * they arrive (recvadd / recvmax), then position 0 floods the result back. Every value
 * crosses the fabric as wavelets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

int64_t wf_lower_elem_cost(const wf_target *t, wf_peop op) {
  switch (wf_peops[op].cost) {
    case WF_PECOST_EXP: return t->exp_cycles;
    case WF_PECOST_DIV: return t->div_cycles;
    default: return 1;
  }
}

/* Records a library allreduce in the current op's manifest `explain` (a softmax or norm may
 * hold two): "allreduce-x:star (4 words, 28 cycles predicted, 31 as lowered)" — the model's
 * prediction, which chose it, and the lowered tree's schedule with the broadcast, which the
 * op's predicted_cycles adds up. */
static void note_collective(wf_lower *L, const wf_coll_result *res, int axis, int64_t len) {
  char *e = L->ops[L->n_ops].explain;
  size_t n = strlen(e);
  char low[48] = "";
  if (res->lowered > 0 && (int64_t)(res->lowered + 0.5) != (int64_t)(res->predicted + 0.5))
    snprintf(low, sizeof low, ", %.0f as lowered", res->lowered);
  snprintf(e + n, sizeof L->ops[0].explain - n, "%sallreduce-%s:%s (%lld words, %.0f cycles predicted%s)",
           n ? "; " : "", axis == WF_AXIS_X ? "x" : "y", wf_coll_algo_name(res->algo), (long long)len,
           res->predicted, low);
}

int wf_lower_allreduce(wf_lower *L, int sym, int64_t len, int axis, int is_max, wf_loc loc,
                       int64_t *cycles, int64_t *spread) {
  if (spread) *spread = 0;
  int pes = axis == WF_AXIS_X ? L->w : L->h;
  if (pes <= 1) return 0;
  /* The collectives library: the model's choice for this P and B, or the algorithm forced by
   * waferc --reduce-algo (a ring cannot combine maxima: a max takes the model's choice among
   * the trees). */
  wf_coll_line ln = {axis, pes, wf_guard0()};
  int algo = L->reduce_algo == -2 || (L->reduce_algo == WF_COLL_RING && is_max) ? -1 : L->reduce_algo;
  wf_coll_result res;
  memset(&res, 0, sizeof res);
  /* bracketed by `coll` markers, so that the report can give its own cycles */
  wf_lowered_op *lo = &L->ops[L->n_ops];
  int mark = lo->n_colls < WF_LOWER_MAX_COLLS, index = L->n_colls;
  if (mark) wf_emit(L, NULL, WF_PEOP_COLL, (wf_pe_arg[]){wf_arg_int(index)});
  int rc = wf_lower_coll_allreduce(L, &ln, algo, sym, len, is_max ? WF_PEOP_RECVMAX : WF_PEOP_RECVADD,
                                   loc, &res);
  if (mark) {
    wf_emit(L, NULL, WF_PEOP_COLL, (wf_pe_arg[]){wf_arg_int(-1)});
    lo->colls[lo->n_colls++] = (wf_lowered_coll){index, axis, res.algo, pes, len, res.predicted, res.lowered};
    L->n_colls++;
  }
  /* the op's prediction takes the collective as lowered where the lowering knows it (the
   * tree's schedule, the broadcast, the switch resets); the model's equation picked it */
  if (cycles) *cycles += (int64_t)((res.lowered > 0 ? res.lowered : res.predicted) + 0.5);
  if (spread && res.algo != WF_COLL_RING) {
    int far = res.root > pes - 1 - res.root ? res.root : pes - 1 - res.root;
    *spread = (int64_t)far * L->t->hop_cycles;
  }
  note_collective(L, &res, axis, len);
  return rc;
}

void wf_lower_block_dims(const wf_lower *L, const wf_type *t, int64_t *b) {
  WF_ASSERT(t->layout.rank == t->rank);
  for (int d = 0; d < t->rank; d++) {
    int parts = t->layout.dims[d].split == WF_AXIS_X ? L->w : t->layout.dims[d].split == WF_AXIS_Y ? L->h : 1;
    b[d] = (t->dims[d] + parts - 1) / parts;
  }
}

wf_axis_view wf_lower_axis_view(const wf_lower *L, const wf_type *t, const int64_t *b, int axis) {
  WF_ASSERT(axis >= 0 && axis < t->rank);
  wf_axis_view v = {1, b[axis], 1, t->dims[axis], t->layout.dims[axis].split, 1};
  for (int d = 0; d < axis; d++) v.outer *= b[d];
  for (int d = axis + 1; d < t->rank; d++) v.inner *= b[d];
  v.parts = v.split == WF_AXIS_X ? L->w : v.split == WF_AXIS_Y ? L->h : 1;
  if (v.parts == 1) v.split = WF_AXIS_NONE;
  return v;
}

int64_t wf_lower_zero_axis_padding(wf_lower *L, wf_value v, int axis) {
  const wf_type *t = wf_value_type(L->f, v);
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  wf_axis_view a = wf_lower_axis_view(L, t, b, axis);
  if (a.split == WF_AXIS_NONE || a.full >= a.len * a.parts) return 0;
  int sym = wf_lower_sym(L, v);
  wf_pe_term at = wf_term(a.split == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  int64_t q = a.full / a.len, r = a.full % a.len, cycles = 0;
  if (r) { /* PE q holds the dim's end: the rows past it in each outer row */
    int64_t cols = (a.len - r) * a.inner;
    float *zeros = calloc((size_t)cols, sizeof *zeros);
    WF_ASSERT(zeros);
    int z = wf_lower_const_block(L, zeros, cols);
    free(zeros);
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, at, WF_CMP_EQ, wf_term(WF_TERM_INT, (int32_t)q));
    wf_emit(L, &g, WF_PEOP_COPY2D,
            (wf_pe_arg[]){wf_arg_at(sym, (int32_t)(r * a.inner)), wf_arg_sym(z), wf_arg_int(a.outer), wf_arg_int(cols),
                          wf_arg_int(a.len * a.inner), wf_arg_int(0)});
    cycles = a.outer * cols;
    q++;
  }
  if (q < a.parts) { /* the PEs past it hold only padding */
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, at, WF_CMP_GE, wf_term(WF_TERM_INT, (int32_t)q));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sym), wf_arg_int(a.outer * a.len * a.inner)});
    cycles = a.outer * a.len * a.inner;
  }
  return cycles;
}

static void emit2(wf_lower *L, const wf_pe_guard *g, wf_peop op, wf_pe_arg d, wf_pe_arg a, wf_pe_arg b,
                  int64_t m, int64_t n, int mode) {
  wf_emit(L, g, op, (wf_pe_arg[]){d, a, b, wf_arg_int(m), wf_arg_int(n), wf_arg_int(mode)});
}

/* dst[outer x inner] = sum / max over the first `real` of the axis' len elements of src, on
 * the PEs of guard g; returns its cycles. */
static int64_t local_stat(wf_lower *L, const wf_pe_guard *g, int dst, int src, const wf_axis_view *v,
                          int64_t real, int is_max) {
  int64_t o = v->outer, len = v->len, in = v->inner;
  if (real == 0) { /* only padding here: the identity, so the allreduce sees nothing */
    wf_emit(L, g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_int(o * in)});
    if (!is_max) return o * in;
    emit2(L, g, WF_PEOP_ADD, wf_arg_sym(dst), wf_arg_sym(dst), wf_arg_sym(wf_lower_scalar(L, -INFINITY)),
          o * in, 1, WF_BMODE_J);
    return 2 * o * in;
  }
  wf_peop comb = is_max ? WF_PEOP_MAX : WF_PEOP_ADD;
  if (in == 1) {
    wf_peop red = is_max ? WF_PEOP_RMAX : WF_PEOP_RSUM;
    int from = src;
    int64_t cyc = o * real;
    if (real < len && o > 1) { /* the real columns of every row, packed */
      from = wf_lower_temp(L, "$stat_tmp", o * real * 4);
      wf_emit(L, g, WF_PEOP_COPY2D,
              (wf_pe_arg[]){wf_arg_sym(from), wf_arg_sym(src), wf_arg_int(o), wf_arg_int(real),
                            wf_arg_int(real), wf_arg_int(len)});
      cyc *= 2;
    }
    wf_emit(L, g, red, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(from), wf_arg_int(o), wf_arg_int(real)});
    return cyc;
  }
  if (o == 1 && !is_max) {
    /* Column sums as a [1 x real] . [real x inner] product with a row of ones (exp(0)). */
    int ones = wf_lower_temp(L, "$ones", real * 4);
    wf_emit(L, g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(ones), wf_arg_int(real)});
    wf_emit(L, g, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(ones), wf_arg_sym(ones), wf_arg_int(real)});
    wf_emit(L, g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_int(in)});
    wf_emit(L, g, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(ones), wf_arg_sym(src), wf_arg_int(1),
                          wf_arg_int(real), wf_arg_int(in)});
    return real * (1 + L->t->exp_cycles) + in + (real * in + L->t->fmac_per_cycle - 1) / L->t->fmac_per_cycle;
  }
  if (o == 1) { /* max: row by row into dst, each row one contiguous slice */
    wf_emit(L, g, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(src), wf_arg_int(in)});
    for (int64_t l = 1; l < real; l++)
      emit2(L, g, comb, wf_arg_sym(dst), wf_arg_sym(dst), wf_arg_at(src, l * in), 1, in, WF_BMODE_IJ);
    return real * in;
  }
  /* Leading dims too: slice l of every outer index is strided; copy2d packs it, then one
   * elementwise combine per slice (2*real instructions, whatever outer is). */
  int tmp = wf_lower_temp(L, "$stat_tmp", o * in * 4);
  for (int64_t l = 0; l < real; l++) {
    int to = l ? tmp : dst;
    wf_emit(L, g, WF_PEOP_COPY2D,
            (wf_pe_arg[]){wf_arg_sym(to), wf_arg_at(src, l * in), wf_arg_int(o), wf_arg_int(in), wf_arg_int(in),
                          wf_arg_int(len * in)});
    if (l) emit2(L, g, comb, wf_arg_sym(dst), wf_arg_sym(dst), wf_arg_sym(tmp), o, in, WF_BMODE_IJ);
  }
  return o * in * (2 * real - 1);
}

int wf_lower_axis_stat(wf_lower *L, int dst, int src, const wf_axis_view *v, int is_max, wf_loc loc,
                       int64_t *cycles) {
  int64_t cyc = 0;
  if (v->split == WF_AXIS_NONE || v->full == v->len * v->parts) {
    cyc = local_stat(L, NULL, dst, src, v, v->len, is_max);
  } else {
    /* Padded: PEs below q hold full blocks, PE q the remainder r, the rest only padding. */
    int64_t q = v->full / v->len, r = v->full - q * v->len;
    wf_pe_term pos = wf_term(v->split == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
    wf_pe_guard full = wf_guard0(), rem = wf_guard0(), none = wf_guard0();
    wf_guard_add(&full, pos, WF_CMP_LT, wf_term_int((int32_t)q));
    wf_guard_add(&rem, pos, WF_CMP_EQ, wf_term_int((int32_t)q));
    wf_guard_add(&none, pos, r ? WF_CMP_GT : WF_CMP_GE, wf_term_int((int32_t)q));
    cyc = local_stat(L, &full, dst, src, v, v->len, is_max);
    if (r) {
      int64_t c = local_stat(L, &rem, dst, src, v, r, is_max);
      if (c > cyc) cyc = c;
    }
    if (q + (r != 0) < v->parts) {
      int64_t c = local_stat(L, &none, dst, src, v, 0, is_max);
      if (c > cyc) cyc = c;
    }
  }
  if (cycles) *cycles += cyc;
  return v->split == WF_AXIS_NONE ? 0
                                  : wf_lower_allreduce(L, dst, v->outer * v->inner, v->split, is_max, loc, cycles, NULL);
}

int64_t wf_lower_axis_apply(wf_lower *L, wf_peop op, int dst, int a, int stat, const wf_axis_view *v) {
  int64_t o = v->outer, len = v->len, in = v->inner;
  if (in == 1) {
    emit2(L, NULL, op, wf_arg_sym(dst), wf_arg_sym(a), wf_arg_sym(stat), o, len, WF_BMODE_I);
  } else {
    /* One [len x inner] slab per outer index, the statistic's row o broadcast down it. */
    for (int64_t i = 0; i < o; i++)
      emit2(L, NULL, op, wf_arg_at(dst, i * len * in), wf_arg_at(a, i * len * in), wf_arg_at(stat, i * in), len, in, WF_BMODE_J);
  }
  return o * len * in * wf_lower_elem_cost(L->t, op);
}

const char *wf_lower_stat_name(wf_lower *L, unsigned axes, int masked, wf_lowered_op *out) {
  if (!axes && !masked) return "local";
  snprintf(out->text, sizeof out->text, "local%s%s%s%s", masked ? "+masked" : "",
           !axes ? "" : "+allreduce-", axes & (1u << WF_AXIS_X) ? "x" : "",
           axes & (1u << WF_AXIS_Y) ? "y" : "");
  return out->text;
}
