/* slice, concat and split on the mesh (docs/partition.md, "Slice, concat and split").
 *
 * Each is made of moves along one axis: a move fills the result's indices [d_lo, d_hi) along
 * the axis with the operand's indices s0, s0 + step, ... — a piece. Concat is one move with a
 * piece per operand, split one move per result, a slice one move per axis it cuts (chained
 * through scratch when it cuts several). The other dims are the same in operand and result,
 * so their blocks are too, padding included. A piece reads its operand where it lies:
 *
 *   whole   the operand's axis is not split over the mesh (a leading dim, a dim of size 1,
 *           a side of one PE): every PE holds every index. Local.
 *   local   the axis is split alike in operand and result, and every index a PE writes comes
 *           from its own block (the cut falls on block edges). Checked PE by PE, not assumed.
 *   gather  otherwise: the operand's blocks the piece reads are gathered along the axis into
 *           a panel, in index order (wf_relayout_gather_axis, the transpose's phase 1), and
 *           each PE copies its indices out of it: a relayout over the fabric. A step > 1
 *           along a split axis usually is one.
 *
 * A PE's copy of a piece is one copy2d over the block's outer rows (a step > 1: one per outer
 * row, in a loop), whose source offset is linear in the PE's coordinate, so all the PEs the
 * piece covers whole share one instruction; the PEs it covers in part (at most two) get their
 * own. The result's padding along the axis is zeroed first, so it is zero whatever the
 * operand's held there (partition_pad.c relies on it); along the other dims the result's
 * padding is the operand's. */
#include <stdlib.h>

#include "backend/collectives/lower_relayout.h"
#include "ir/rules.h"
#include "waferc/diag.h"

enum { SL_WHOLE, SL_LOCAL, SL_GATHER };

typedef struct sl_piece {
  int sym;             /* the operand's block */
  wf_axis_view v;      /* the operand along the axis */
  int64_t d_lo, d_hi;  /* the result's indices it fills */
  int64_t s0, step;    /* result index i takes operand index s0 + step (i - d_lo) */
  int how;             /* SL_* */
  int j0, j1;          /* gather: the operand's blocks it reads */
  /* Operand index g of outer row o on PE c (coordinate along the axis) is at word
   * base + boff + o ostride + (g - c cshift + goff) inner. */
  int base;
  int64_t boff, ostride, cshift, goff;
} sl_piece;

typedef struct sl_move {
  int dst;          /* the result's block (or scratch) */
  wf_axis_view dv;  /* the result along the axis */
  sl_piece *p;
  int np;
} sl_move;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static wf_pe_term coord(int axis) { return wf_term(axis == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0); }

/* Whether every index PE c writes comes from PE c's own block (both split alike). */
static int is_local(const sl_piece *p, const wf_axis_view *dv) {
  if (dv->parts != p->v.parts || dv->split != p->v.split) return 0;
  int64_t bd = dv->len, bs = p->v.len;
  for (int64_t c = 0; c < dv->parts; c++) {
    int64_t lo = max64(p->d_lo, c * bd), hi = min64(p->d_hi, c * bd + bd);
    if (lo >= hi) continue;
    int64_t g0 = p->s0 + p->step * (lo - p->d_lo), g1 = p->s0 + p->step * (hi - 1 - p->d_lo);
    if (g0 < c * bs || g1 >= c * bs + bs) return 0;
  }
  return 1;
}

/* Decides where each piece reads (the `how` and the address fields but a gather's panel
 * offset, which place_panels sets). */
static void place(sl_piece *p, const wf_axis_view *dv) {
  p->ostride = p->v.len * p->v.inner;
  p->base = p->sym;
  p->boff = p->cshift = p->goff = 0;
  if (p->v.parts == 1) {
    p->how = SL_WHOLE;
  } else if (is_local(p, dv)) {
    p->how = SL_LOCAL;
    p->cshift = p->v.len;
  } else {
    p->how = SL_GATHER;
    int64_t g_last = p->s0 + p->step * (p->d_hi - 1 - p->d_lo);
    p->j0 = (int)(p->s0 / p->v.len);
    p->j1 = (int)(g_last / p->v.len) + 1;
  }
}

/* Copies of one piece on the PEs `g` selects (NULL: all): result indices [dl, dl + cnt) of
 * their block from operand offset `src` (its constant part k plus cs times the coordinate). */
static int emit_copy(wf_lower *L, const wf_op *op, const wf_pe_guard *g, const sl_move *mv, const sl_piece *p,
                     int64_t dl, int64_t cnt, int64_t k, int64_t cs) {
  int64_t in = p->v.inner, outer = p->v.outer, bd = mv->dv.len;
  if (cnt <= 0) return 0;
  /* Scales of terms (the coordinate's, the row loop's) are limited, plain integers are not. */
  int looped = p->step != 1 && outer > 1;
  if (llabs(cs) > WF_PE_MAX_SCALE || (looped && (p->ostride > WF_PE_MAX_SCALE || bd * in > WF_PE_MAX_SCALE)) ||
      k > INT32_MAX / 2 || k < INT32_MIN / 2 || outer * p->ostride > INT32_MAX / 2) {
    wf_error(op->loc, "'%s': a block of %lld words is past the PE's addressing of strided copies",
             wf_opinfos[op->code].name, (long long)(outer * p->ostride));
    return WF_EXIT_NOFIT;
  }
  wf_pe_arg s = wf_arg_at(p->base, k);
  if (cs) s.term = wf_term_scaled(coord(mv->dv.split), (int)cs, 0);
  wf_pe_arg d = wf_arg_at(mv->dst, dl * in);
  if (p->step == 1 && outer == 1) {
    wf_emit(L, g, WF_PEOP_COPY, (wf_pe_arg[]){d, s, wf_arg_int(cnt * in)});
  } else if (p->step == 1) {
    wf_emit(L, g, WF_PEOP_COPY2D,
            (wf_pe_arg[]){d, s, wf_arg_int(outer), wf_arg_int(cnt * in), wf_arg_int(bd * in), wf_arg_int(p->ostride)});
  } else {
    /* A step > 1: per outer row, cnt rows of `in` words, the source's `step` rows apart. */
    int64_t sstride = p->step * in;
    if (sstride > INT32_MAX / 2) {
      wf_error(op->loc, "'slice': a step of %lld is past the PE's addressing", (long long)p->step);
      return WF_EXIT_NOFIT;
    }
    if (looped) {
      /* the gathers' round variable: never live here, and a class holds only 8 names */
      int ov = wf_lower_var(L, "rq");
      wf_pe_term to = wf_term_var(ov, 0);
      wf_pe_term tdo = wf_term_scaled(to, (int)(bd * in), 0), tso = wf_term_scaled(to, (int)p->ostride, 0);
      d.term = tdo;
      if (cs) s.term2 = tso;
      else s.term = tso;
      wf_emit(L, g, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(to), wf_arg_int(0), wf_arg_int(outer)});
    }
    wf_emit(L, looped ? NULL : g, WF_PEOP_COPY2D,
            (wf_pe_arg[]){d, s, wf_arg_int(cnt), wf_arg_int(in), wf_arg_int(in), wf_arg_int(sstride)});
    if (looped) wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  return 0;
}

/* The word offset of operand index g for PE c (c = 0: the part that does not move with the
 * PE). */
static int64_t src_word(const sl_piece *p, int64_t g, int64_t c) {
  return p->boff + (g - c * p->cshift + p->goff) * p->v.inner;
}

/* Every PE's copies of piece p into the move's result. */
static int extract(wf_lower *L, const wf_op *op, const sl_move *mv, const sl_piece *p) {
  const wf_axis_view *dv = &mv->dv;
  int64_t bd = dv->len, in = p->v.inner;
  if (dv->parts == 1) /* the result is whole on every PE: its indices are the block's */
    return emit_copy(L, op, NULL, mv, p, p->d_lo, p->d_hi - p->d_lo, src_word(p, p->s0, 0), 0);
  wf_pe_term tc = coord(dv->split);
  int P = dv->parts, rc = 0;
  /* The PEs whose whole block lies in the piece: [ca, cb). */
  int64_t ca = (p->d_lo + bd - 1) / bd, cb = min64(p->d_hi / bd, P);
  if (cb > ca) {
    wf_pe_guard g = wf_guard0();
    if (ca > 0) wf_guard_add(&g, tc, WF_CMP_GE, wf_term_int((int32_t)ca));
    if (cb < P) wf_guard_add(&g, tc, WF_CMP_LT, wf_term_int((int32_t)cb));
    /* PE c's index l is i = c bd + l: operand index s0 + step (c bd + l - d_lo). */
    int64_t k = src_word(p, p->s0 - p->step * p->d_lo, 0), cs = (p->step * bd - p->cshift) * in;
    if (cb - ca == 1) {
      g = wf_guard0();
      wf_guard_add(&g, tc, WF_CMP_EQ, wf_term_int((int32_t)ca));
      rc = emit_copy(L, op, &g, mv, p, 0, bd, k + ca * cs, 0);
    } else {
      rc = emit_copy(L, op, g.n ? &g : NULL, mv, p, 0, bd, k, cs);
    }
  }
  /* The PEs it covers in part: the first and the last. */
  int64_t ends[2] = {p->d_lo / bd, (p->d_hi - 1) / bd};
  for (int e = 0; e < 2 && !rc; e++) {
    int64_t c = ends[e];
    if ((c >= ca && c < cb) || (e == 1 && c == ends[0])) continue;
    int64_t lo = max64(p->d_lo, c * bd), hi = min64(p->d_hi, c * bd + bd);
    wf_pe_guard g = wf_guard0();
    wf_guard_add(&g, tc, WF_CMP_EQ, wf_term_int((int32_t)c));
    rc = emit_copy(L, op, &g, mv, p, lo - c * bd, hi - lo, src_word(p, p->s0 + p->step * (lo - p->d_lo), c), 0);
  }
  return rc;
}

/* Lowers the moves: the gathers first (one per operand, over the union of the blocks its
 * pieces read), then each result's padding along the axis zeroed and its pieces copied.
 * *fabric: the mesh axes gathered along (bit WF_AXIS_X / WF_AXIS_Y). */
static int lower_moves(wf_lower *L, const wf_op *op, sl_move *mv, int nm, int64_t *pred, unsigned *fabric) {
  int n_all = 0;
  for (int m = 0; m < nm; m++) n_all += mv[m].np;
  sl_piece **g = calloc((size_t)n_all + 1, sizeof *g); /* each gathered operand's first piece */
  WF_ASSERT(g);
  int ng = 0;
  for (int m = 0; m < nm; m++)
    for (int i = 0; i < mv[m].np; i++) {
      sl_piece *p = &mv[m].p[i];
      place(p, &mv[m].dv);
      if (p->how != SL_GATHER) continue;
      int k = 0;
      while (k < ng && g[k]->sym != p->sym) k++;
      if (k == ng) g[ng++] = p;
      g[k]->j0 = g[k]->j0 < p->j0 ? g[k]->j0 : p->j0;
      g[k]->j1 = g[k]->j1 > p->j1 ? g[k]->j1 : p->j1;
    }
  /* Panel regions, one per gathered operand: its outer rows of (j1 - j0) blocks each. */
  int64_t words = 0, *region = calloc((size_t)ng + 1, sizeof *region);
  WF_ASSERT(region);
  for (int k = 0; k < ng; k++) {
    region[k] = words;
    words += g[k]->v.outer * (g[k]->j1 - g[k]->j0) * g[k]->v.len * g[k]->v.inner;
  }
  int panel = ng ? wf_lower_temp(L, "$sl_panel", words * 4) : -1, rc = 0;
  for (int k = 0; k < ng && !rc; k++) {
    const wf_axis_view *v = &g[k]->v;
    int64_t prow = (g[k]->j1 - g[k]->j0) * v->len * v->inner;
    wf_relayout_gather ga = {v->split, g[k]->sym, panel, 0, region[k], v->outer, v->inner, v->len, prow,
                             g[k]->j0, g[k]->j1};
    rc = wf_relayout_gather_axis(L, &ga, op->loc, pred);
    *fabric |= 1u << v->split;
  }
  /* Every gathered piece reads its operand's region. */
  for (int m = 0; m < nm && !rc; m++)
    for (int i = 0; i < mv[m].np; i++) {
      sl_piece *p = &mv[m].p[i];
      if (p->how != SL_GATHER) continue;
      int k = 0;
      while (g[k]->sym != p->sym) k++;
      p->base = panel;
      p->boff = region[k];
      p->ostride = (g[k]->j1 - g[k]->j0) * p->v.len * p->v.inner;
      p->goff = -(int64_t)g[k]->j0 * p->v.len;
    }
  for (int m = 0; m < nm && !rc; m++) {
    const wf_axis_view *dv = &mv[m].dv;
    int64_t blk = dv->outer * dv->len * dv->inner, q = dv->full / dv->len;
    /* Padding along the axis: PE q holds the last real indices, the PEs after it none. */
    int padded = dv->parts > 1 && dv->parts * dv->len > dv->full;
    if (padded) {
      wf_pe_guard z = wf_guard0();
      wf_guard_add(&z, coord(dv->split), WF_CMP_GE, wf_term_int((int32_t)q));
      wf_emit(L, &z, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(mv[m].dst), wf_arg_int(blk)});
    }
    for (int i = 0; i < mv[m].np && !rc; i++) rc = extract(L, op, &mv[m], &mv[m].p[i]);
    /* The busiest PE: its zeroing and the words it copies (each piece's indices on it). */
    int64_t busiest = 0;
    for (int64_t c = 0; c < dv->parts; c++) {
      int64_t words = padded && c >= q ? blk : 0;
      for (int i = 0; i < mv[m].np; i++) {
        const sl_piece *p = &mv[m].p[i];
        int64_t lo = dv->parts > 1 ? max64(p->d_lo, c * dv->len) : p->d_lo;
        int64_t hi = dv->parts > 1 ? min64(p->d_hi, c * dv->len + dv->len) : p->d_hi;
        if (hi > lo) words += dv->outer * (hi - lo) * dv->inner;
      }
      busiest = max64(busiest, words);
    }
    *pred += busiest;
  }
  free(g);
  free(region);
  return rc;
}

/* The view of `axis` of type t (its blocks as partition cuts them). */
static wf_axis_view view(const wf_lower *L, const wf_type *t, int axis) {
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  return wf_lower_axis_view(L, t, b, axis);
}

/* Operand and result must agree off the axis (same dims, same splits), as partition makes
 * them; anything else is a layout this lowering does not know. */
static int off_axis_ok(const wf_type *a, const wf_type *b, int axis) {
  int ok = a->rank == b->rank && a->layout.rank == a->rank && b->layout.rank == b->rank;
  for (int d = 0; ok && d < a->rank; d++)
    ok = d == axis || (a->dims[d] == b->dims[d] && a->layout.dims[d].split == b->layout.dims[d].split);
  return ok && (a->layout.dims[axis].split == b->layout.dims[axis].split ||
                a->layout.dims[axis].split == WF_AXIS_NONE || b->layout.dims[axis].split == WF_AXIS_NONE);
}

static int same_off_axis(const wf_lower *L, const wf_op *op, const wf_type *a, const wf_type *b, int axis) {
  int axis_ok = off_axis_ok(a, b, axis);
  if (!axis_ok)
    wf_error(op->loc, "'%s' on the %dx%d mesh: operand and result are laid out differently off axis %d "
                      "(lowered for the layouts the partition pass gives)",
             wf_opinfos[op->code].name, L->w, L->h, axis);
  return axis_ok;
}

static const char *name_of(wf_lowered_op *out, unsigned fabric) {
  if (!fabric) return "local-copy";
  snprintf(out->text, sizeof out->text, "relayout-%s%s", fabric >> WF_AXIS_X & 1 ? "x" : "",
           fabric >> WF_AXIS_Y & 1 ? "y" : "");
  return out->text;
}

static int lower_concat(wf_lower *L, const wf_op *op, wf_lowered_op *out, unsigned *fabric) {
  const wf_type *rt = wf_value_type(L->f, op->results[0]);
  int axis = wf_norm_axis(wf_rule_int(L->f, op, "axis", 0), rt->rank);
  sl_piece *p = calloc((size_t)op->n_operands, sizeof *p);
  WF_ASSERT(p);
  int64_t off = 0;
  int np = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const wf_type *t = wf_value_type(L->f, op->operands[i]);
    if (!same_off_axis(L, op, t, rt, axis)) {
      free(p);
      return WF_EXIT_UNSUPPORTED;
    }
    if (t->dims[axis] > 0)
      p[np++] = (sl_piece){.sym = wf_lower_sym(L, op->operands[i]), .v = view(L, t, axis), .d_lo = off,
                           .d_hi = off + t->dims[axis], .s0 = 0, .step = 1};
    off += t->dims[axis];
  }
  sl_move mv = {wf_lower_sym(L, op->results[0]), view(L, rt, axis), p, np};
  int rc = lower_moves(L, op, &mv, 1, &out->predicted, fabric);
  free(p);
  return rc;
}

static int lower_split(wf_lower *L, const wf_op *op, wf_lowered_op *out, unsigned *fabric) {
  const wf_type *xt = wf_value_type(L->f, op->operands[0]);
  int axis = wf_norm_axis(wf_rule_int(L->f, op, "axis", 0), xt->rank);
  sl_move *mv = calloc((size_t)op->n_results, sizeof *mv);
  sl_piece *p = calloc((size_t)op->n_results, sizeof *p);
  WF_ASSERT(mv && p);
  int64_t off = 0;
  int nm = 0, rc = 0;
  for (int i = 0; i < op->n_results && !rc; i++) {
    const wf_type *rt = wf_value_type(L->f, op->results[i]);
    if (!same_off_axis(L, op, xt, rt, axis)) rc = WF_EXIT_UNSUPPORTED;
    else if (rt->dims[axis] > 0) {
      p[nm] = (sl_piece){.sym = wf_lower_sym(L, op->operands[0]), .v = view(L, xt, axis), .d_lo = 0,
                         .d_hi = rt->dims[axis], .s0 = off, .step = 1};
      mv[nm] = (sl_move){wf_lower_sym(L, op->results[i]), view(L, rt, axis), &p[nm], 1};
      nm++;
    }
    off += rt->dims[axis];
  }
  if (!rc) rc = lower_moves(L, op, mv, nm, &out->predicted, fabric);
  free(mv);
  free(p);
  return rc;
}

/* The type after cut k of a slice (of nc) from cur: axis ax down to count (whole when 1); the
 * last cut gives the result's type rt. */
static wf_type cut_type(const wf_type *cur, const wf_type *rt, int ax, int64_t count, int last) {
  wf_type next = *cur;
  next.dims[ax] = count;
  if (count == 1) next.layout.dims[ax].split = WF_AXIS_NONE;
  return last ? *rt : next;
}

/* Operand and result laid out differently off the cut axes (a reduction's result that kept its
 * operand's splits, read by a slice laid out by the rule): a small tensor is made whole on
 * every PE, sliced there (step 1) and cut to the result's blocks (lower_reshape_whole.c).
 * 0 done, -1 when it does not apply (too large), else an exit code. */
static int slice_whole(wf_lower *L, const wf_op *op, int nc, const int *cut_axis, const int64_t *first,
                       const int64_t *count, wf_lowered_op *out, unsigned *fabric) {
  wf_whole w;
  int64_t cyc = 0;
  int rc = wf_lower_whole_gather(L, op, op->operands[0], 0, &w, &cyc);
  if (rc) return rc;
  wf_type whole = *wf_value_type(L->f, op->operands[0]);
  for (int k = 0; k < nc; k++) {
    wf_lower_whole_slice(L, &w, &whole, cut_axis[k], first[k], count[k], &cyc);
    whole.dims[cut_axis[k]] = count[k];
  }
  if ((rc = wf_lower_whole_cut(L, &w, op->results[0], &cyc)) != 0) return rc;
  out->predicted = cyc;
  *fabric = 1u << WF_AXIS_X | 1u << WF_AXIS_Y;
  return 0;
}

/* A slice cuts its axes one at a time, each a move from the previous one's result (scratch
 * `$sl_t0` / `$sl_t1`) to the next; the last writes the result. Axes it keeps whole are
 * skipped; a slice that keeps every axis whole is a copy. */
static int lower_slice1(wf_lower *L, const wf_op *op, wf_lowered_op *out, unsigned *fabric) {
  const wf_type *xt = wf_value_type(L->f, op->operands[0]), *rt = wf_value_type(L->f, op->results[0]);
  int n;
  const int64_t *starts = wf_rule_ints(L->f, op, "starts", &n), *ends = wf_rule_ints(L->f, op, "ends", &n);
  const int64_t *axes = wf_rule_ints(L->f, op, "axes", &n), *steps = wf_rule_ints(L->f, op, "steps", &n);
  int cut_axis[WF_MAX_RANK], nc = 0;
  int64_t first[WF_MAX_RANK], count[WF_MAX_RANK], step[WF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int ax = wf_norm_axis(axes[i], xt->rank);
    int64_t f0, cnt;
    wf_slice_resolve(xt->dims[ax], starts[i], ends[i], steps[i], &f0, &cnt);
    if (f0 == 0 && cnt == xt->dims[ax] && steps[i] == 1) continue;
    if (steps[i] < 0 || cnt <= 0) {
      wf_error(op->loc, "'slice' along axis %d with step %lld%s has no mesh lowering yet (it runs in the "
                        "reference interpreter, waferc --interpret)",
               ax, (long long)steps[i], cnt <= 0 ? " and no element" : "");
      return WF_EXIT_UNSUPPORTED;
    }
    cut_axis[nc] = ax;
    first[nc] = f0;
    count[nc] = cnt;
    step[nc++] = steps[i];
  }
  int sx = wf_lower_sym(L, op->operands[0]), sr = wf_lower_sym(L, op->results[0]);
  if (!nc) {
    int64_t b[WF_MAX_RANK], words = 1;
    wf_lower_block_dims(L, xt, b);
    for (int d = 0; d < xt->rank; d++) words *= b[d];
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sx), wf_arg_int(words)});
    out->predicted = words;
    return 0;
  }
  int lines_up = 1, steps1 = 1;
  wf_type c0 = *xt;
  for (int k = 0; k < nc; k++) {
    wf_type nx = cut_type(&c0, rt, cut_axis[k], count[k], k == nc - 1);
    lines_up &= off_axis_ok(&c0, &nx, cut_axis[k]);
    steps1 &= step[k] == 1;
    c0 = nx;
  }
  if (!lines_up && steps1) {
    int wrc = slice_whole(L, op, nc, cut_axis, first, count, out, fabric);
    if (wrc >= 0) return wrc;
  }
  wf_type cur = *xt;
  int src = sx, rc = 0;
  for (int k = 0; k < nc && !rc; k++) {
    int ax = cut_axis[k];
    wf_type next = cut_type(&cur, rt, ax, count[k], k == nc - 1);
    if (!same_off_axis(L, op, &cur, &next, ax)) return WF_EXIT_UNSUPPORTED;
    int dst = sr;
    if (k < nc - 1) {
      int64_t b[WF_MAX_RANK], words = 1;
      wf_lower_block_dims(L, &next, b);
      for (int d = 0; d < next.rank; d++) words *= b[d];
      dst = wf_lower_temp(L, k % 2 ? "$sl_t1" : "$sl_t0", words * 4);
    }
    sl_piece p = {.sym = src, .v = view(L, &cur, ax), .d_lo = 0, .d_hi = count[k], .s0 = first[k], .step = step[k]};
    sl_move mv = {dst, view(L, &next, ax), &p, 1};
    rc = lower_moves(L, op, &mv, 1, &out->predicted, fabric);
    cur = next;
    src = dst;
  }
  return rc;
}

/* Whether v has no element (a split's or concat's part of size 0). */
static int empty(const wf_lower *L, wf_value v) {
  const wf_type *t = wf_value_type(L->f, v);
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] == 0) return 1;
  return 0;
}

int wf_lower_slice_concat(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  unsigned fabric = 0;
  out->predicted = 0;
  /* A tensor without elements has no blocks, and a plan's interface cannot hold one. */
  for (int i = 0; i < op->n_operands + op->n_results; i++) {
    wf_value v = i < op->n_operands ? op->operands[i] : op->results[i - op->n_operands];
    if (!empty(L, v)) continue;
    char name[64];
    wf_lower_value_name(L, v, name, sizeof name);
    wf_error(op->loc, "'%s': %s has no element; empty tensors have no mesh lowering (the reference "
                      "interpreter, waferc --interpret, runs them)",
             wf_opinfos[op->code].name, name);
    return WF_EXIT_UNSUPPORTED;
  }
  int rc = op->code == WF_OP_CONCAT  ? lower_concat(L, op, out, &fabric)
           : op->code == WF_OP_SPLIT ? lower_split(L, op, out, &fabric)
                                     : lower_slice1(L, op, out, &fabric);
  out->lowering = name_of(out, fabric);
  return rc;
}

/* kv_switch (ops.def; docs/generation.md, "The switch"): the prefill's packed cache x
 * [B, L, Np] {B, L_y, N_x} (or a weight [K, Np] {K_y, N_x}, B = 1) re-cut for the decode region's first Wd x Hd PEs, as two moves
 * through scratch `$kv_t`, each a relayout as above:
 *   1. along x: `$kv_t` [B][Lbp][cbd] (x's rows, the decode packing's columns) takes one piece
 *      per decode slot h: its columns [h dst_dp, + d) from x's [slots[h] src_dp, + d) (with
 *      cols, one per run of result columns reading consecutive columns of x);
 *   2. along y: the result's [B][cap][cbd] takes one piece per decode row y < Hd: its first
 *      slots from `$kv_t`'s tokens [y Lbd, + n_y), n_y the row's prompt tokens.
 * Both are zeroed first: phantom slots, a slot's columns past d, the slots past a row's tokens
 * and the PEs outside the decode region read 0, as the reference kernel says. With swap (a
 * weight that decode holds in the other axes), the result's block is the one built so,
 * transposed on the PE. */
int wf_lower_kv_switch(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_kv_switch s;
  if (wf_kv_switch_of(L->f, op, &s)) return WF_EXIT_UNSUPPORTED;
  const wf_type *xt = wf_value_type(L->f, op->operands[0]), *rt = wf_value_type(L->f, op->results[0]);
  int a = xt->rank - 2; /* the rows' dim: 1 for a cache [B, L, N], 0 for a weight [K, N] */
  /* with swap the result [cols, rows] is {C_x, R_y}: its dim 1 is the rows' (along y) */
  wf_axis_view x1 = view(L, xt, a), x2 = view(L, xt, a + 1), r1 = view(L, rt, a + s.swap),
               r2 = view(L, rt, a + 1 - s.swap);
  if (x2.parts != L->w || r2.parts != L->w || r1.parts != L->h || r1.len != s.cap || r2.len != s.cbd ||
      s.wd > L->w || s.hd > L->h) {
    wf_error(op->loc, "'kv_switch' on the %dx%d mesh: its decode region %lldx%lld with blocks of [%lld, %lld] is not "
                      "a corner of this region's blocks ([%lld, %lld]); compile the switch for the prefill's mesh",
             L->w, L->h, (long long)s.wd, (long long)s.hd, (long long)s.cap, (long long)s.cbd, (long long)r1.len,
             (long long)r2.len);
    return WF_EXIT_NOFIT;
  }
  unsigned fabric = 0;
  out->predicted = 0;
  /* 1. the columns: $kv_t's view along x, then along y (x's rows, cbd columns) */
  int64_t tmp_words = x2.outer * s.cbd;
  int tmp = wf_lower_temp(L, "$kv_t", tmp_words * 4), sx = wf_lower_sym(L, op->operands[0]), rc = 0;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(tmp), wf_arg_int(tmp_words)});
  int64_t ncol = s.colmap ? (s.n_colmap < (int64_t)L->w * s.cbd ? s.n_colmap : (int64_t)L->w * s.cbd) : 0;
  sl_piece *p = calloc((size_t)(s.colmap ? ncol + 1 : s.n_slots), sizeof *p);
  WF_ASSERT(p);
  int np = 0;
  if (s.colmap) /* one piece per run of consecutive source columns */
    for (int64_t j = 0; j < ncol;) {
      if (s.colmap[j] < 0) {
        j++;
        continue;
      }
      int64_t e = j + 1;
      while (e < ncol && s.colmap[e] == s.colmap[e - 1] + 1) e++;
      p[np++] = (sl_piece){.sym = sx, .v = x2, .d_lo = j, .d_hi = e, .s0 = s.colmap[j], .step = 1};
      j = e;
    }
  else
    for (int h = 0; h < s.n_slots; h++)
      if (s.slots[h] >= 0 && h * s.dst_dp < (int64_t)L->w * s.cbd)
        p[np++] = (sl_piece){.sym = sx, .v = x2, .d_lo = h * s.dst_dp, .d_hi = h * s.dst_dp + s.d,
                             .s0 = s.slots[h] * s.src_dp, .step = 1};
  wf_axis_view t2 = {x2.outer, s.cbd, 1, (int64_t)L->w * s.cbd, WF_AXIS_X, L->w};
  sl_move mv = {tmp, t2, p, np};
  if (np) rc = lower_moves(L, op, &mv, 1, &out->predicted, &fabric);
  /* 2. the rows: every column gathers $kv_t's blocks along y into a panel in token order
   * (x's rows are whole on every PE when not split: then the panel is $kv_t itself), and
   * decode row y copies tokens [y Lbd, + n_y) into its first slots: one copy for the rows
   * holding Lbd tokens (its source offset linear in y) and one for the row holding the rest,
   * so the program does not grow with the rows. */
  int64_t nb = s.swap ? 1 : r1.outer; /* the result's matrices (a swapped result's dim 1 has cbd outside it) */
  int64_t res_words = nb * s.cap * s.cbd;
  int sr = wf_lower_sym(L, op->results[0]), res = sr;
  if (s.swap) res = wf_lower_temp(L, "$kv_r", res_words * 4); /* [cap][cbd], transposed into sr at the end */
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(res), wf_arg_int(res_words)});
  int panel = tmp;
  int64_t prow = x1.len * s.cbd; /* words between the panel's outer rows (batches) */
  if (!rc && x1.parts > 1) { /* only the rows holding the prompt's tokens: its padding rows are never read */
    int j1 = (int)((s.L + x1.len - 1) / x1.len);
    j1 = j1 < x1.parts ? j1 : x1.parts;
    prow = j1 * x1.len * s.cbd;
    panel = wf_lower_temp(L, "$sl_panel", x1.outer * prow * 4); /* step 1's panel is dead by now */
    wf_relayout_gather ga = {x1.split, tmp, panel, 0, 0, x1.outer, s.cbd, x1.len, prow, 0, j1};
    rc = wf_relayout_gather_axis(L, &ga, op->loc, &out->predicted);
    fabric |= 1u << x1.split;
  }
  int64_t full = s.L / s.lbd < s.hd ? s.L / s.lbd : s.hd, rest = s.L - full * s.lbd; /* rows of Lbd; the last's */
  wf_pe_term ty = wf_term(WF_TERM_Y, 0);
  int64_t ystride = s.lbd * s.cbd, blk = s.cap * s.cbd, most = 0;
  if (!rc && (ystride > WF_PE_MAX_SCALE || nb * prow > INT32_MAX / 2)) {
    wf_error(op->loc, "'kv_switch': a panel of %lld words is past the PE's addressing", (long long)(nb * prow));
    rc = WF_EXIT_NOFIT;
  }
  for (int part = 0; part < 2 && !rc; part++) {
    int64_t rows = part ? rest : s.lbd, y0 = part ? full : 0, y1 = part ? full + 1 : full;
    if (rows <= 0 || y1 <= y0 || y0 >= s.hd) continue;
    wf_pe_guard g = wf_guard0();
    if (y1 - y0 == 1) wf_guard_add(&g, ty, WF_CMP_EQ, wf_term_int((int32_t)y0));
    else wf_guard_add(&g, ty, WF_CMP_LT, wf_term_int((int32_t)y1));
    wf_guard_add(&g, wf_term(WF_TERM_X, 0), WF_CMP_LT, wf_term_int((int32_t)s.wd));
    wf_pe_arg src = wf_arg_at(panel, y1 - y0 == 1 ? y0 * ystride : 0);
    if (y1 - y0 > 1) src.term = wf_term_scaled(ty, (int)ystride, 0);
    if (nb == 1)
      wf_emit(L, &g, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(res), src, wf_arg_int(rows * s.cbd)});
    else
      wf_emit(L, &g, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(sr), src, wf_arg_int(nb), wf_arg_int(rows * s.cbd),
                                                   wf_arg_int(blk), wf_arg_int(prow)});
    most = rows * s.cbd * nb > most ? rows * s.cbd * nb : most;
  }
  out->predicted += most;
  free(p);
  out->predicted += tmp_words + res_words; /* the zeroing */
  if (!rc && s.swap) { /* every PE's [cap][cbd] block transposed into the result's [cbd][cap] */
    wf_emit(L, NULL, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(res), wf_arg_int(s.cap), wf_arg_int(s.cbd)});
    out->predicted += res_words;
  }
  out->lowering = name_of(out, fabric);
  return rc;
}
