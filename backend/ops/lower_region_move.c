/* dist.relayout between the region and a band of its rows (passes/expert_bands.c): the
 * dispatch of a value onto the band and the combine of a band's value back (docs/moe-plans.md,
 * "Experts on bands"). Both keep the layout; only the blocks of the dim split over the rows
 * change, cut over the band's h rows instead of the region's H.
 *
 *   onto a band: the value's blocks are gathered along each column into a panel on every PE
 *     (wf_relayout_gather_axis), and each PE of the band copies its rows out of it;
 *   off a band: every PE zeroes a panel, the band's PEs copy their rows into it, an allreduce
 *     along the columns sums it (each index has one writer), and each PE copies its rows out.
 *
 * A dim held whole along the rows needs no gather: the band copies its block, or the band's
 * first row writes it for the allreduce. The result's padding along the dim is zeroed, so zero
 * padding stays zero (partition_pad.c). */
#include <stdio.h>

#include "backend/collectives/lower_band.h"
#include "backend/collectives/lower_relayout.h"
#include "waferc/diag.h"

typedef struct move {
  int64_t outer, inner; /* the block around the dim split over the rows: [outer][b][inner] */
  int64_t D;            /* that dim's length; 0 when no dim is split over the rows */
  int64_t bm, bb;       /* its block on the region (H rows) and on the band (h rows) */
  int64_t P;            /* the panel's indices along it */
} move;

static wf_pe_arg at_row(int sym, int64_t words_per_row) {
  wf_pe_arg a = wf_arg_sym(sym);
  if (words_per_row > 0) a.term = wf_term_scaled(wf_term(WF_TERM_Y, 0), (int)words_per_row, 0);
  return a;
}

static void copy2d(wf_lower *L, const wf_pe_guard *g, wf_pe_arg d, wf_pe_arg s, int64_t rows, int64_t cols,
                   int64_t dstride, int64_t sstride) {
  wf_emit(L, g, WF_PEOP_COPY2D,
          (wf_pe_arg[]){d, s, wf_arg_int(rows), wf_arg_int(cols), wf_arg_int(dstride), wf_arg_int(sstride)});
}

/* Zeroes the indices past D of a [outer][b][inner] block cut in b's over the current rows:
 * part of the row holding index D, all of the rows after it. */
static void zero_padding(wf_lower *L, int sym, const move *m, int64_t b, int rows) {
  int64_t q = m->D / b, r = m->D % b;
  if (q >= rows) return;
  wf_pe_guard g = wf_guard0();
  if (r) {
    wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int((int32_t)q));
    for (int64_t o = 0; o < m->outer; o++)
      wf_emit(L, &g, WF_PEOP_ZERO,
              (wf_pe_arg[]){wf_arg_at(sym, o * b * m->inner + r * m->inner), wf_arg_int((b - r) * m->inner)});
    q++;
  }
  if (q < rows) {
    g = wf_guard0();
    wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_GE, wf_term_int((int32_t)q));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sym), wf_arg_int(m->outer * b * m->inner)});
  }
}

/* The panel's indices along a dim of length D onto a band: the gathered blocks (bm on each of
 * the region's H rows) and every used band's blocks (ceil(D/h) on each of its h rows), so that
 * one gather serves bands of every height. */
static int64_t onto_panel(const wf_lower *L, int64_t D, int64_t bm, int H) {
  int64_t P = bm * H;
  for (int r = 0; r < L->m->n_regions; r++) {
    if (!wf_lower_is_band(L, r) || !wf_lower_region_used(L, r)) continue;
    int64_t h = L->m->regions[r].h, p = (D + h - 1) / h * h;
    if (p > P) P = p;
  }
  return P;
}

/* Whether a dist.relayout moves its value from the region onto a band. */
static int onto_band(const wf_lower *L, const wf_op *op) {
  int rs = wf_value_type(L->f, op->operands[0])->layout.region, rd = wf_value_type(L->f, op->results[0])->layout.region;
  return rs == L->region && rd != L->region;
}

int wf_lower_region_move(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_type *ts = wf_value_type(L->f, op->operands[0]), *td = wf_value_type(L->f, op->results[0]);
  int rs = ts->layout.region, rd = td->layout.region;
  int onto = onto_band(L, op), off = rd == L->region && rs != L->region;
  int same = ts->layout.rank == td->layout.rank;
  for (int d = 0; same && d < ts->layout.rank; d++) same = ts->layout.dims[d].split == td->layout.dims[d].split;
  if (!(onto || off) || !same) {
    wf_error(op->loc, "dist.relayout is lowered only between the region and a band of its rows, with the "
                      "same layout (expert-bands makes these)");
    return WF_EXIT_UNSUPPORTED;
  }
  int band = onto ? rd : rs;
  const wf_region *b = &L->m->regions[band];
  int H = L->h, h = b->h;
  move m = {1, 1, 0, 0, 0, 0};
  int dim = -1;
  for (int d = 0; d < ts->rank; d++)
    if (ts->layout.dims[d].split == WF_AXIS_Y) dim = d;
  int64_t bd[WF_MAX_RANK];
  wf_lower_block_dims(L, onto ? ts : td, bd); /* the region's blocks (the band's differ only along dim) */
  for (int d = 0; d < ts->rank; d++) {
    if (d == dim) continue;
    if (dim >= 0 && d < dim) m.outer *= bd[d];
    else m.inner *= bd[d];
  }
  if (dim >= 0) {
    m.D = ts->dims[dim];
    m.bm = bd[dim];
    m.bb = (m.D + h - 1) / h;
    m.P = onto ? onto_panel(L, m.D, m.bm, H) : m.bm * H > m.bb * h ? m.bm * H : m.bb * h;
    if (m.outer > 64 || m.bb * m.inner > WF_PE_MAX_SCALE || m.bm * m.inner > WF_PE_MAX_SCALE) {
      wf_error(op->loc, "dist.relayout onto or off band @%s: blocks of %lld x %lld words per row are past what "
                        "one instruction addresses",
               wf_str(L->m, b->name), (long long)m.outer, (long long)(m.bb * m.inner));
      return WF_EXIT_UNSUPPORTED;
    }
  }
  int src = wf_lower_sym(L, op->operands[0]), dst = wf_lower_sym(L, op->results[0]), rc = 0;
  int64_t *pred = &out->predicted;
  out->lowering = onto ? "onto-band" : "off-band";
  L->move_bits |= WF_MOVE_RELAYOUT;
  if (onto) {
    if (dim < 0) { /* every PE holds the whole: the band copies its own */
      int64_t n = m.outer * m.inner;
      if ((rc = wf_lower_band_enter(L, band, op->loc))) return rc;
      wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(src), wf_arg_int(n)});
      *pred += n;
      return wf_lower_band_leave(L, op->loc);
    }
    int panel = wf_lower_temp(L, "$rm_panel", m.outer * m.P * m.inner * 4);
    /* the op before relaid the same value onto another band: its panel holds the gathered
     * columns already, laid out alike for every band (expert-bands puts a value's relayouts
     * side by side) */
    const wf_op *prev = L->n_ops ? L->ops[L->n_ops - 1].op : NULL;
    int again = prev && prev->code == WF_OP_DIST_RELAYOUT && prev->operands[0] == op->operands[0] && onto_band(L, prev);
    wf_relayout_gather ga = {WF_AXIS_Y, src, panel, 0, 0, m.outer, m.inner, m.bm, m.P * m.inner, 0, H};
    if (!again && (rc = wf_relayout_gather_axis(L, &ga, op->loc, pred))) return rc;
    if ((rc = wf_lower_band_enter(L, band, op->loc))) return rc;
    copy2d(L, NULL, wf_arg_sym(dst), at_row(panel, m.bb * m.inner), m.outer, m.bb * m.inner, m.bb * m.inner,
           m.P * m.inner);
    zero_padding(L, dst, &m, m.bb, h);
    *pred += m.outer * m.bb * m.inner;
    return wf_lower_band_leave(L, op->loc);
  }
  /* off the band: a sum along the columns of what the band's PEs write */
  int64_t n = dim < 0 ? m.outer * m.inner : m.outer * m.P * m.inner;
  int panel = dim < 0 ? dst : wf_lower_temp(L, "$rm_panel", n * 4);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(panel), wf_arg_int(n)});
  if ((rc = wf_lower_band_enter(L, band, op->loc))) return rc;
  if (dim < 0) {
    wf_pe_guard g = wf_guard0();
    wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int(0));
    wf_emit(L, &g, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(panel), wf_arg_sym(src), wf_arg_int(n)});
  } else {
    copy2d(L, NULL, at_row(panel, m.bb * m.inner), wf_arg_sym(src), m.outer, m.bb * m.inner, m.P * m.inner,
           m.bb * m.inner);
  }
  if ((rc = wf_lower_band_leave(L, op->loc))) return rc;
  *pred += n + (dim < 0 ? m.outer * m.inner : m.outer * m.bb * m.inner);
  if ((rc = wf_lower_allreduce(L, panel, n, WF_AXIS_Y, 0, op->loc, pred, NULL))) return rc;
  if (dim >= 0) {
    copy2d(L, NULL, wf_arg_sym(dst), at_row(panel, m.bm * m.inner), m.outer, m.bm * m.inner, m.bm * m.inner,
           m.P * m.inner);
    zero_padding(L, dst, &m, m.bm, H);
    *pred += m.outer * m.bm * m.inner;
  }
  return 0;
}
