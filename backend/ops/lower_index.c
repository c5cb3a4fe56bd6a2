/* The embedding lookup and the argmax over the vocabulary: what turns a model from token ids
 * to logits (and to the next token) into one plan.
 *
 * Integers on the PEs. A PE word is an f32; the ids a gather reads and the index an argmax
 * writes are held as f32 integers, exact below 2^24 (checked against the table's rows and
 * the argmax's axis here). The plan's interface still says i64 (or i32): waferrun converts
 * them when it scatters an input and when it gathers an output (runtime/sim_io.c).
 *
 * gather(table, ids), axis 0: table [V, E] is a constant held as {V, E_x} (partition.c): every
 * PE of column x holds the V x ceil(E/W) slice of its columns, so the lookup is a local copy of
 * rows (the PE instruction `gather`, which checks each id against V at run time) and the
 * result [.., L, E] has the activations' layout {.., L_y, E_x}. The ids [.., L] are held like
 * the result's rows ({.., L_y}, every PE of a row holds them). A PE row past the last real
 * row of L gathers nothing and writes zeros, so the result's padding is zero and the ids'
 * padding is never read (it may be an argmax's index of padding). A table whose rows are
 * split too (a tied LM head's, a vocabulary too large for {V, E_x}, a decode step's) is read
 * by a masked lookup on every PE and a sum of the rows along the split axis (below).
 *
 * argmax(x) over any axis (the vocabulary's: the last, split along x): the maxima by the
 * statistic of lower_reduce.c (a masked local max, then an allreduce-max along the mesh axis
 * the axis is split along), then each PE finds the first position of its block holding the
 * maximum (`rfind`, +inf when none: padding never matches, a PE of padding only finds
 * nothing), and the lowest such index over the line wins: an allreduce-max of the negated
 * indices, negated back. Ties go to the first index, as ONNX and torch do with
 * select_last_index = 0; with select_last_index = 1 each PE finds the last position
 * (`rfindl`, -inf when none) and the highest index wins, an allreduce-max as is. NaN is not
 * a maximum here (rmax skips it), unlike in the reference interpreter, which follows numpy. */
#include <math.h>
#include <stdio.h>

#include "backend/resources/lower.h"
#include "waferc/diag.h"

#define MAX_EXACT_INT (1 << 24) /* f32 holds every integer up to here */

static int is_int(wf_dtype d) { return d == WF_I64 || d == WF_I32; }

int64_t wf_lower_index_bound(const wf_lower *L, wf_value v) {
  int64_t bound = 0;
  wf_func_foreach_op(L->f, op) {
    if (op->code != WF_OP_GATHER || op->operands[1] != v) continue;
    int64_t rows = wf_value_type(L->f, op->operands[0])->dims[0];
    if (!bound || rows < bound) bound = rows;
  }
  return bound;
}

static int unsupported(const wf_op *op, const char *why) {
  wf_error(op->loc, "'%s' has no mesh lowering here: %s (waferc --interpret runs it)",
           wf_opinfos[op->code].name, why);
  return WF_EXIT_UNSUPPORTED;
}

static int split_of(const wf_type *t, int d) {
  return t->layout.rank == t->rank ? t->layout.dims[d].split : WF_AXIS_NONE;
}

/* ---- gather -------------------------------------------------------------------------- */

/* A table whose rows are split along a ({V_a, E_b}) and ids every PE holds: each PE looks up the
 * ids that fall in its block of rows and zeros the others; summed along a (exactly one PE of
 * the line holds each id), the rows are the lookup. Per id i, with base = Vb a the PE's first
 * row (written as data by `rfind` of a one-word row against itself, whose result is its base
 * term):
 *   id' = id + V [id < 0]                    (negative ids count from the end)
 *   loc = id' - base; idx = clamp(loc, 0, Vb - 1); keep = 1 - min(1, |loc - idx|)
 *   rows = table[idx] * keep                 (an id outside the block: idx is any valid row)
 * ids past V match no PE and give a row of zeros: the host checks the ids it feeds against
 * the input's index_bound, and an argmax's index is in range. The n ids' rows go to `dst` in
 * `parts` runs of n / parts, run p at word p * stride (a batch's rows, then the padding of its
 * L that the caller zeroed); returns the lookup's cycles. */
static int64_t masked_lookup(wf_lower *L, const wf_op *op, int dst, int64_t n, int64_t eb, int a, int64_t parts,
                             int64_t stride) {
  const wf_type *tt = wf_value_type(L->f, op->operands[0]);
  int64_t bt[WF_MAX_RANK];
  wf_lower_block_dims(L, tt, bt);
  int64_t V = tt->dims[0], vb = bt[0];
  int st = wf_lower_sym(L, op->operands[0]), si = wf_lower_sym(L, op->operands[1]);
  int one = wf_lower_scalar(L, 1.0f), zero = wf_lower_scalar(L, 0.0f), vmax = wf_lower_scalar(L, (float)(vb - 1));
  int vs = wf_lower_scalar(L, (float)V), mone = wf_lower_scalar(L, -1.0f);
  int base = wf_lower_temp(L, "$gx_base", 4), loc = wf_lower_temp(L, "$gx_loc", n * 4);
  int idx = wf_lower_temp(L, "$gx_idx", n * 4), keep = wf_lower_temp(L, "$gx_keep", n * 4);
  wf_pe_term coord = wf_term_scaled(wf_term(a == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0), (int)vb, 0);
  wf_emit(L, NULL, WF_PEOP_RFIND, (wf_pe_arg[]){wf_arg_sym(base), wf_arg_sym(one), wf_arg_sym(one), wf_arg_int(1),
                                                wf_arg_int(1), wf_arg_term(coord)});
  /* keep = 1 - min(1, max(0, id + 1)): 1 for a negative id; loc = id + V keep - base */
  wf_emit_bin(L, WF_PEOP_ADD, keep, si, one, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MAX, keep, keep, zero, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MIN, keep, keep, one, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MUL, keep, keep, mone, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_ADD, keep, keep, one, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MUL, loc, keep, vs, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_ADD, loc, loc, si, 1, n, WF_BMODE_IJ);
  wf_emit_bin(L, WF_PEOP_SUB, loc, loc, base, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MAX, idx, loc, zero, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MIN, idx, idx, vmax, 1, n, WF_BMODE_I);
  /* keep = 1 - min(1, |loc - idx|) */
  wf_emit_bin(L, WF_PEOP_SUB, keep, loc, idx, 1, n, WF_BMODE_IJ);
  wf_emit_bin(L, WF_PEOP_MUL, loc, keep, mone, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MAX, keep, keep, loc, 1, n, WF_BMODE_IJ);
  wf_emit_bin(L, WF_PEOP_MIN, keep, keep, one, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_MUL, keep, keep, mone, 1, n, WF_BMODE_I);
  wf_emit_bin(L, WF_PEOP_ADD, keep, keep, one, 1, n, WF_BMODE_I);
  int64_t run = n / parts;
  for (int64_t p = 0; p < parts; p++) {
    wf_pe_arg d = wf_arg_sym(dst), ix = wf_arg_sym(idx), kp = wf_arg_sym(keep);
    d.off = (int32_t)(p * stride);
    ix.off = kp.off = (int32_t)(p * run);
    wf_emit(L, NULL, WF_PEOP_GATHER,
            (wf_pe_arg[]){d, wf_arg_sym(st), ix, wf_arg_int(run), wf_arg_int(eb), wf_arg_int(vb)});
    wf_emit(L, NULL, WF_PEOP_MUL, (wf_pe_arg[]){d, d, kp, wf_arg_int(run), wf_arg_int(eb), wf_arg_int(WF_BMODE_I)});
  }
  return 1 + 16 * n + 2 * n * eb;
}

/* A decode step's large tables ({V_a, E_b}: partition_decode.c): the token's rows whole on
 * every PE of the line, summed along a. */
static int gather_split_rows(wf_lower *L, const wf_op *op, wf_lowered_op *out, int64_t n, int64_t eb, int a) {
  int sr = wf_lower_sym(L, op->results[0]);
  int64_t cyc = masked_lookup(L, op, sr, n, eb, a, 1, 0);
  int rc = wf_lower_allreduce(L, sr, n * eb, a, 0, op->loc, &cyc, NULL);
  out->lowering = a == WF_AXIS_X ? "split-rows+allreduce-x" : "split-rows+allreduce-y";
  out->predicted = cyc;
  return rc;
}

/* A table with split rows in a prefill ({V_y, E_x}: a tied LM head's, or one too large for
 * {V, E_x}: passes/partition_table.c), the ids [outer, Lf] whole on every PE and the result
 * {.., L_y, E_x}: every PE looks up all the ids into rows [outer,
 * Lp, Eb] (Lp = H lb, the padding rows zero), the rows are summed along y, and PE row y keeps
 * rows [y lb, (y + 1) lb) of each batch: its block of the result. */
static int gather_rows_y(wf_lower *L, const wf_op *op, wf_lowered_op *out, int64_t outer, int64_t lf, int64_t lb,
                       int64_t eb) {
  int64_t lp = lb * L->h, all = outer * lp * eb;
  if (lb * eb > WF_PE_MAX_SCALE) {
    wf_error(op->loc, "'gather' of a table with split rows: a block of %lld x %lld rows is more than the %d words a PE "
                      "offset term can step; use a mesh with more rows",
             (long long)lb, (long long)eb, WF_PE_MAX_SCALE);
    return WF_EXIT_NOFIT;
  }
  int sr = wf_lower_sym(L, op->results[0]);
  int rows = wf_lower_temp(L, "$gx_rows", all * 4);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(rows), wf_arg_int(all)});
  int64_t cyc = all + masked_lookup(L, op, rows, outer * lf, eb, WF_AXIS_Y, outer, lp * eb);
  int rc = wf_lower_allreduce(L, rows, all, WF_AXIS_Y, 0, op->loc, &cyc, NULL);
  if (rc) return rc;
  for (int64_t o = 0; o < outer; o++) {
    wf_pe_arg d = wf_arg_sym(sr), s = wf_arg_sym(rows);
    d.off = (int32_t)(o * lb * eb);
    s.off = (int32_t)(o * lp * eb);
    s.term = wf_term_scaled(wf_term(WF_TERM_Y, 0), (int)(lb * eb), 0);
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){d, s, wf_arg_int(lb * eb)});
  }
  out->lowering = "split-rows+allreduce-y+own-rows";
  out->predicted = cyc + outer * lb * eb;
  return 0;
}

int wf_lower_gather(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_func *f = L->f;
  wf_value tv = op->operands[0], iv = op->operands[1], rv = op->results[0];
  const wf_type *tt = wf_value_type(f, tv), *it = wf_value_type(f, iv), *rt = wf_value_type(f, rv);
  if (wf_op_int(f, op, "axis", 0) != 0) return unsupported(op, "only axis 0 (rows of the table) is lowered");
  if (f->values[tv].kind != WF_VAL_GLOBAL || tt->rank != 2 || tt->dtype != WF_F32)
    return unsupported(op, "the table must be an f32 constant [V, E]");
  /* {V, E_y} and {V_a, E_b} are a decode step's (partition_decode.c): the token's row along
   * one axis, its ids whole */
  int ids_whole = 1;
  for (int d = 0; d < it->rank; d++) ids_whole &= split_of(it, d) == WF_AXIS_NONE;
  if ((split_of(tt, 0) != WF_AXIS_NONE && (!ids_whole || split_of(tt, 0) == split_of(tt, 1))) ||
      (split_of(tt, 1) == WF_AXIS_Y && !ids_whole))
    return unsupported(op, "the table must be laid out {V, E_x} (partition's layout for it)");
  if (!is_int(it->dtype) || it->rank < 1 || rt->rank != it->rank + 1)
    return unsupported(op, "the ids must be an integer tensor [.., L]");
  /* {V_y, E_x} with the result's rows along y: a prefill's table with split rows
   * (partition_table.c) */
  int tied = split_of(tt, 0) == WF_AXIS_Y && ids_whole && split_of(rt, rt->rank - 2) == WF_AXIS_Y;
  for (int d = 0; d + 1 < it->rank; d++)
    if (split_of(it, d) != WF_AXIS_NONE || split_of(rt, d) != WF_AXIS_NONE)
      return unsupported(op, "the ids' leading dims must be whole on every PE");
  int l = it->rank - 1;
  if (split_of(it, l) == WF_AXIS_X || (split_of(it, l) != split_of(rt, l) && !tied) ||
      split_of(rt, rt->rank - 1) != split_of(tt, 1))
    return unsupported(op, "the ids must be laid out like the result's rows ({.., L_y}) and the "
                           "result's E like the table's");
  int64_t V = tt->dims[0];
  if (V > MAX_EXACT_INT) {
    wf_error(op->loc, "'gather': a table of %lld rows is larger than the %d row numbers an f32 "
                      "holds exactly (the PEs hold ids as f32)", (long long)V, MAX_EXACT_INT);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t bi[WF_MAX_RANK], bt[WF_MAX_RANK];
  wf_lower_block_dims(L, it, bi);
  wf_lower_block_dims(L, tt, bt);
  int64_t eb = bt[1], lb = bi[l], outer = 1;
  for (int d = 0; d < l; d++) outer *= bi[d];
  if (tied) {
    int64_t br[WF_MAX_RANK];
    wf_lower_block_dims(L, rt, br);
    return gather_rows_y(L, op, out, outer, it->dims[l], br[l], eb);
  }
  if (split_of(tt, 0) != WF_AXIS_NONE) return gather_split_rows(L, op, out, outer * lb, eb, split_of(tt, 0));
  int st = wf_lower_sym(L, tv), si = wf_lower_sym(L, iv), sr = wf_lower_sym(L, rv);

  /* Rows of L: PEs y < q hold lb real rows, y == q holds r, the rest none. */
  int parts = split_of(it, l) == WF_AXIS_Y ? L->h : 1;
  int64_t full = it->dims[l], q = parts > 1 ? full / lb : 1, r = parts > 1 ? full - q * lb : 0;
  wf_pe_term y = wf_term(WF_TERM_Y, 0);
  wf_pe_guard gfull = wf_guard0(), grem = wf_guard0(), gnone = wf_guard0();
  int padded = parts > 1 && full < lb * parts;
  if (padded) {
    wf_guard_add(&gfull, y, WF_CMP_LT, wf_term_int((int32_t)q));
    wf_guard_add(&grem, y, WF_CMP_EQ, wf_term_int((int32_t)q));
    wf_guard_add(&gnone, y, r ? WF_CMP_GT : WF_CMP_GE, wf_term_int((int32_t)q));
  }
  if (!padded || q > 0)
    wf_emit(L, padded ? &gfull : NULL, WF_PEOP_GATHER,
            (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(st), wf_arg_sym(si), wf_arg_int(outer * lb),
                          wf_arg_int(eb), wf_arg_int(V)});
  if (padded && r) { /* the real rows of each leading index, then zeros */
    for (int64_t o = 0; o < outer; o++) {
      wf_pe_arg d = wf_arg_sym(sr), s = wf_arg_sym(si), z = wf_arg_sym(sr);
      d.off = (int32_t)(o * lb * eb);
      s.off = (int32_t)(o * lb);
      z.off = (int32_t)((o * lb + r) * eb);
      wf_emit(L, &grem, WF_PEOP_GATHER,
              (wf_pe_arg[]){d, wf_arg_sym(st), s, wf_arg_int(r), wf_arg_int(eb), wf_arg_int(V)});
      wf_emit(L, &grem, WF_PEOP_ZERO, (wf_pe_arg[]){z, wf_arg_int((lb - r) * eb)});
    }
  }
  if (padded && q + (r != 0) < parts)
    wf_emit(L, &gnone, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_int(outer * lb * eb)});
  out->lowering = "local-rows";
  out->predicted = outer * lb * eb; /* one word per cycle, the longest PE (a full block) */
  return 0;
}

/* ---- argmax -------------------------------------------------------------------------- */

/* dst[outer x inner] = base + the first (last) of the `real` leading positions along the
 * axis holding key[o, i], on the PEs of guard g (NULL: all); returns its cycles. Rows along
 * the axis are contiguous when inner is 1 (packed by copy2d when the block also holds
 * padding); otherwise each outer slab's first `real` rows are transposed, so that the axis
 * runs along rows of [inner x real]. */
static int64_t emit_find(wf_lower *L, const wf_pe_guard *g, wf_peop find, int dst, int src, int key,
                         const wf_axis_view *v, int64_t real, wf_pe_term base) {
  int64_t o = v->outer, len = v->len, in = v->inner;
  if (real == 0) { /* padding only: nothing to find (+inf, or -inf for the last) */
    wf_emit(L, g, find, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(src), wf_arg_sym(key), wf_arg_int(o * in),
                                      wf_arg_int(0), wf_arg_int(0)});
    return o * in;
  }
  if (in == 1) {
    int from = src;
    int64_t cyc = o * real;
    if (real < len && o > 1) { /* the real columns of every row, packed */
      from = wf_lower_temp(L, "$argmax_pack", o * real * 4);
      wf_emit(L, g, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(from), wf_arg_sym(src), wf_arg_int(o), wf_arg_int(real),
                                                  wf_arg_int(real), wf_arg_int(len)});
      cyc *= 2;
    }
    wf_emit(L, g, find, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_sym(from), wf_arg_sym(key), wf_arg_int(o),
                                      wf_arg_int(real), wf_arg_term(base)});
    return cyc;
  }
  int tmp = wf_lower_temp(L, "$argmax_pack", real * in * 4);
  for (int64_t k = 0; k < o; k++) {
    wf_emit(L, g, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(tmp), wf_arg_at(src, k * len * in), wf_arg_int(real), wf_arg_int(in)});
    wf_emit(L, g, find, (wf_pe_arg[]){wf_arg_at(dst, k * in), wf_arg_sym(tmp), wf_arg_at(key, k * in), wf_arg_int(in),
                                      wf_arg_int(real), wf_arg_term(base)});
  }
  return 2 * o * real * in;
}

int wf_lower_argmax(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_func *f = L->f;
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *t = wf_value_type(f, xv);
  if (t->dtype != WF_F32) return unsupported(op, "its operand must be f32");
  int axis = (int)wf_op_int(f, op, "axis", 0);
  axis = axis < 0 ? axis + t->rank : axis;
  if (t->dims[axis] > MAX_EXACT_INT) {
    wf_error(op->loc, "'argmax': an axis of %lld is longer than the %d indices an f32 holds exactly",
             (long long)t->dims[axis], MAX_EXACT_INT);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t b[WF_MAX_RANK], rr, rc_;
  wf_lower_block_dims(L, t, b);
  wf_axis_view v = wf_lower_axis_view(L, t, b, axis);
  wf_lower_block(L, rv, &rr, &rc_);
  if (rr * rc_ != v.outer * v.inner) /* partition keeps the other dims' splits (reduce_layout) */
    return unsupported(op, "its result must keep the layout of the dims it keeps");
  if (v.len > WF_PE_MAX_SCALE) return unsupported(op, "a PE's block of the axis is longer than 65535");
  if (v.inner > 1 && v.outer > 64) /* one transpose per outer slab */
    return unsupported(op, "an axis other than the last with more than 64 blocks before it");
  int sx = wf_lower_sym(L, xv), sr = wf_lower_sym(L, rv);
  int gmax = wf_lower_temp(L, "$argmax_max", v.outer * v.inner * 4);
  int64_t cyc = 0;
  int rc = wf_lower_axis_stat(L, gmax, sx, &v, 1, op->loc, &cyc);
  if (rc) return rc;

  /* The first position holding the maximum (the last with select_last_index), as an index
   * into the whole axis: the PE's coordinate along the axis times the block, plus j. */
  int last = wf_op_int(f, op, "select_last_index", 0) != 0;
  wf_peop find = last ? WF_PEOP_RFINDL : WF_PEOP_RFIND;
  wf_pe_term pos = wf_term(v.split == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  wf_pe_term base = v.split == WF_AXIS_NONE ? wf_term_int(0) : v.len == 1 ? pos : wf_term_scaled(pos, (int)v.len, 0);
  int64_t q = v.full / v.len, r = v.full - q * v.len;
  int padded = v.split != WF_AXIS_NONE && v.full < v.len * v.parts;
  wf_pe_guard gfull = wf_guard0(), grem = wf_guard0(), gnone = wf_guard0();
  if (padded) { /* PEs below q hold whole blocks, PE q the remainder r, the rest padding */
    wf_guard_add(&gfull, pos, WF_CMP_LT, wf_term_int((int32_t)q));
    wf_guard_add(&grem, pos, WF_CMP_EQ, wf_term_int((int32_t)q));
    wf_guard_add(&gnone, pos, r ? WF_CMP_GT : WF_CMP_GE, wf_term_int((int32_t)q));
  }
  int64_t fcyc = 0;
  if (!padded || q > 0) fcyc = emit_find(L, padded ? &gfull : NULL, find, sr, sx, gmax, &v, v.len, base);
  if (padded && r) {
    int64_t c = emit_find(L, &grem, find, sr, sx, gmax, &v, r, wf_term_int((int32_t)(q * v.len)));
    if (c > fcyc) fcyc = c;
  }
  if (padded && q + (r != 0) < v.parts) emit_find(L, &gnone, find, sr, sx, gmax, &v, 0, wf_term_int(0));
  cyc += fcyc;
  int64_t n = v.outer * v.inner;
  if (v.split != WF_AXIS_NONE) { /* the lowest index of the line: -max(-index); the highest */
    wf_pe_arg d = wf_arg_sym(sr);
    if (!last) wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){d, d, wf_arg_int(n)});
    rc = wf_lower_allreduce(L, sr, n, v.split, 1, op->loc, &cyc, NULL);
    if (rc) return rc;
    if (!last) wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){d, d, wf_arg_int(n)});
    if (!last) cyc += 2 * n;
  }
  /* two allreduces along the axis: the maxima, then the indices */
  if (v.split == WF_AXIS_NONE) out->lowering = "local";
  else {
    snprintf(out->text, sizeof out->text, "local%s+allreduce-%s(2)", padded ? "+masked" : "",
             v.split == WF_AXIS_X ? "x" : "y");
    out->lowering = out->text;
  }
  out->predicted = cyc;
  return 0;
}
