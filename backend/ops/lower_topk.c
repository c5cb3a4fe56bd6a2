/* The gating of a Mixture-of-Experts layer on the mesh: topk over the experts, the
 * scatter_elements that spreads the chosen gate weights back into a [.., N] matrix and the
 * gather_elements that reads them from one (docs/moe-plans.md). Integers live on the PEs as
 * f32, exact below 2^24, as in lower_index.c: the indices topk writes and the others read are
 * f32 row numbers.
 *
 * All three work along the LAST axis, whose block on a PE is [o][len] (o: the rows of the block,
 * every dim before the axis). Under partition's rule that axis is split along x when the mesh
 * is wider than one PE (else whole), so each op has a local form and one with collectives along
 * x; the local one is just the split one with no allreduce. Every PE knows the global column
 * of each of its positions, g[c] = x * len + c (`rfind` of a one-word row writes its base term
 * as data), which is how positions are compared with indices without per-element branches:
 * for integers held exactly, eq = 1 - min(1, |g - i|) is 1 where g == i and 0 elsewhere.
 *
 * topk(x, k), largest (or smallest: on -x, the values negated back), ties to the lowest index
 * as ONNX and torch do: k rounds of
 *   m   = the row maxima (`rmax`, then an allreduce-max along x when the axis is split)
 *   i   = the lowest global position holding m (`rfind` from the PE's base, +inf when none;
 *         then -allreduce-max(-i) along x: the lowest index of the line wins)
 *   out[:, r] = m, i; the winner is masked to -inf (min with +-inf built from eq) for the next
 * Padding columns (the axis is not a multiple of the mesh width) are -inf from the start, so
 * they never win. The k values and indices end whole on every PE of the line; each PE then
 * copies its block of the results' last axis (split along x like any last dim of size > 1).
 * NaN is not a maximum here (rmax skips it), and a row with fewer than k values above -inf
 * may repeat an index; torch orders NaN first.
 *
 * scatter_elements(data, indices, updates), axis last, reduction none / add / mul: the k
 * indices and updates of each row are made whole on every PE of the line (each PE puts its
 * real columns at their global place in a zeroed [o, k] buffer; an allreduce-sum along x
 * assembles them: an allgather), then (none, add) each PE scatters them into a row holding
 * its block with its row scatter (scatter_direct), or (mul, or more than 256 rows a block)
 * for each r < k every PE updates its own columns where
 * g == indices[:, r]: out += eq * (u - out) (none: later r win, as ONNX's row-major order),
 * out += eq * u (add), out *= 1 + eq * (u - 1) (mul). Negative indices count from the end. An
 * index out of range matches no column and changes nothing (the interpreter reports it). A
 * non-finite data or update value leaks NaN into its row's other columns (0 * inf).
 *
 * gather_elements(data, indices), axis last: data's rows made whole along the line (the
 * allgather above), then each PE reads its own indices' values straight from them with the
 * PE's row gather (gather_direct: one `gather` per real row of its block, at most 256). Where
 * that does not apply (more rows a block, a dim before the last two split), the allgather of
 * the indices, then for each r < k the value is the sum over the row of data * eq (only the
 * real columns: the guards of lower_reduce.c's statistic), completed by an allreduce-sum
 * along x when the axis is split: k passes over the block where the row gather makes one. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/resources/lower.h"
#include "waferc/diag.h"

#define MAX_EXACT_INT (1 << 24)

static int unsupported(const wf_op *op, const char *why) {
  wf_error(op->loc, "'%s' has no mesh lowering here: %s (waferc --interpret runs it)", wf_opinfos[op->code].name,
           why);
  return WF_EXIT_UNSUPPORTED;
}

/* d = a <op> b over an m x n block, b broadcast by mode (WF_BMODE_*). */
static void bin(wf_lower *L, const wf_pe_guard *g, wf_peop op, wf_pe_arg d, wf_pe_arg a, wf_pe_arg b, int64_t m,
                int64_t n, int mode) {
  wf_emit(L, g, op, (wf_pe_arg[]){d, a, b, wf_arg_int(m), wf_arg_int(n), wf_arg_int(mode)});
}

/* The last axis of t as the lowering sees it: its block [o][len], the mesh axis it is split
 * along (WF_AXIS_NONE when whole here) and the PEs it is split over. */
typedef struct last_axis {
  int64_t o, len, full;
  int split, parts;
} last_axis;

static last_axis last_of(const wf_lower *L, const wf_type *t) {
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  wf_axis_view v = wf_lower_axis_view(L, t, b, t->rank - 1);
  return (last_axis){v.outer, v.len, v.full, v.split, v.parts};
}

static wf_pe_term pos_term(int split) { return wf_term(split == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0); }

/* eq[o x len] = 1 where g[c] == idx[r] (exact integers), else 0; returns its cycles. */
static int64_t match(wf_lower *L, int eq, int g, int idx, int tmp, int64_t o, int64_t len) {
  int64_t n = o * len;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(eq), wf_arg_int(n)});
  bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(eq), wf_arg_sym(eq), wf_arg_sym(g), o, len, WF_BMODE_J);
  bin(L, NULL, WF_PEOP_SUB, wf_arg_sym(eq), wf_arg_sym(eq), wf_arg_sym(idx), o, len, WF_BMODE_I);
  wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(tmp), wf_arg_sym(eq), wf_arg_int(n)});
  bin(L, NULL, WF_PEOP_MAX, wf_arg_sym(eq), wf_arg_sym(eq), wf_arg_sym(tmp), 1, n, WF_BMODE_IJ);
  wf_emit_scal(L, WF_PEOP_MIN, eq, eq, 1.0f, n);
  wf_emit_scal(L, WF_PEOP_MUL, eq, eq, -1.0f, n);
  wf_emit_scal(L, WF_PEOP_ADD, eq, eq, 1.0f, n);
  return 8 * n;
}

/* pm[n] = +inf where b[i] == 0, -inf where b[i] == 1 (b holds 0 or 1): (1 - 2b) * FLT_MAX * 2. */
static int64_t pm_inf(wf_lower *L, int pm, int b, int64_t n) {
  wf_emit_scal(L, WF_PEOP_MUL, pm, b, -2.0f, n);
  wf_emit_scal(L, WF_PEOP_ADD, pm, pm, 1.0f, n);
  wf_emit_scal(L, WF_PEOP_MUL, pm, pm, FLT_MAX, n);
  wf_emit_scal(L, WF_PEOP_MUL, pm, pm, 2.0f, n);
  return 4 * n;
}

/* Copies the PE's block of a last axis of `total` columns (kb per PE along `split`) out of
 * `whole` [o x kp] (every PE holds all of them, zero past total) into dst [o x kb]. */
static int64_t copy_own_block(wf_lower *L, int dst, int whole, int64_t o, int64_t kb, int64_t kp, int split) {
  wf_pe_arg s = wf_arg_sym(whole);
  if (split != WF_AXIS_NONE) s.term = wf_term_scaled(pos_term(split), (int)kb, 0);
  wf_emit(L, NULL, WF_PEOP_COPY2D,
          (wf_pe_arg[]){wf_arg_sym(dst), s, wf_arg_int(o), wf_arg_int(kb), wf_arg_int(kb), wf_arg_int(kp)});
  return o * kb;
}

/* Shape checks both ops share: the operand's last axis is the op's, the other dims keep their
 * blocks (the same rows on every PE). */
static int rows_match(const wf_lower *L, const wf_op *op, const wf_type *a, const wf_type *b) {
  if (a->rank != b->rank || a->layout.rank != a->rank || b->layout.rank != b->rank) return 0;
  for (int d = 0; d + 1 < a->rank; d++)
    if (a->dims[d] != b->dims[d] || a->layout.dims[d].split != b->layout.dims[d].split) return 0;
  (void)L, (void)op;
  return 1;
}

/* The k columns of each row of n tensors [.., k] (k split along the line), whole on every PE:
 * each PE writes its real columns at their place in a zeroed [n][o x kp] buffer (kp = the
 * padded k), summed along the line: an allgather. */
/* Part c of the line's PEs along ki's axis, by their real columns: c = 0 the PEs below q = K / kb
 * (kb each), c = 1 PE q (the rest, K mod kb); its guard into g (none when no PE holds padding)
 * and its columns into cols; 0 when the part holds none. The axis whole: one part, kb = K. */
static int col_part(const last_axis *ki, int c, wf_pe_guard *g, int64_t *cols) {
  int64_t K = ki->full, kb = ki->len, q = K / kb;
  *cols = c == 0 ? kb : K - q * kb;
  if (!*cols || (c == 0 && q == 0)) return 0;
  if (K < kb * ki->parts) wf_guard_add(g, pos_term(ki->split), c == 0 ? WF_CMP_LT : WF_CMP_EQ, wf_term_int((int32_t)q));
  return 1;
}

static int allgather_last(wf_lower *L, const wf_op *op, const int *src, int n, const last_axis *ki, int *whole_out,
                          int64_t *cyc) {
  int64_t o = ki->o, kb = ki->len, kp = kb * ki->parts;
  int whole = wf_lower_temp(L, "$sc_whole", n * o * kp * 4);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(whole), wf_arg_int(n * o * kp)});
  wf_pe_term pos = pos_term(ki->split);
  for (int c = 0; c < 2; c++) { /* PEs below q: kb real columns; PE q: rem; the rest none */
    int64_t cols;
    wf_pe_guard gd = wf_guard0();
    if (!col_part(ki, c, &gd, &cols)) continue;
    for (int h = 0; h < n; h++) {
      wf_pe_arg d = wf_arg_at(whole, h * o * kp);
      d.term = wf_term_scaled(pos, (int)kb, 0);
      wf_emit(L, &gd, WF_PEOP_COPY2D, (wf_pe_arg[]){d, wf_arg_sym(src[h]), wf_arg_int(o), wf_arg_int(cols),
                                                    wf_arg_int(kp), wf_arg_int(kb)});
    }
  }
  *cyc += n * (o * kp + o * kb);
  *whole_out = whole;
  return wf_lower_allreduce(L, whole, n * o * kp, ki->split, 0, op->loc, cyc, NULL);
}

/* i[o] += D where i < 0 (a negative index counts from the end): D * (1 - min(1, max(0, i + 1))). */
static int64_t wrap_negative(wf_lower *L, int ci, int neg, int64_t o, int64_t D) {
  wf_emit_scal(L, WF_PEOP_ADD, neg, ci, 1.0f, o);
  wf_emit_scal(L, WF_PEOP_MAX, neg, neg, 0.0f, o);
  wf_emit_scal(L, WF_PEOP_MIN, neg, neg, 1.0f, o);
  wf_emit_scal(L, WF_PEOP_MUL, neg, neg, (float)-D, o);
  wf_emit_scal(L, WF_PEOP_ADD, neg, neg, (float)D, o);
  bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(ci), wf_arg_sym(ci), wf_arg_sym(neg), 1, o, WF_BMODE_IJ);
  return 6 * o;
}

/* ---- topk ------------------------------------------------------------------------------ */

int wf_lower_topk(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_func *f = L->f;
  wf_value xv = op->operands[0], vv = op->results[0], iv = op->results[1];
  const wf_type *t = wf_value_type(f, xv), *tv = wf_value_type(f, vv), *ti = wf_value_type(f, iv);
  if (t->dtype != WF_F32 && t->dtype != WF_I64 && t->dtype != WF_I32)
    return unsupported(op, "its operand must be f32 or integers (f32 words)");
  int axis = (int)wf_op_int(f, op, "axis", -1);
  axis = axis < 0 ? axis + t->rank : axis;
  if (axis != t->rank - 1) return unsupported(op, "only the last axis is lowered");
  int64_t k = wf_op_int(f, op, "k", 1);
  if (t->dims[axis] > MAX_EXACT_INT)
    return unsupported(op, "the axis is longer than the 2^24 indices an f32 holds exactly");
  if (!rows_match(L, op, t, tv) || !rows_match(L, op, t, ti) ||
      tv->layout.dims[axis].split != ti->layout.dims[axis].split)
    return unsupported(op, "its results must keep the layout of the dims before the axis");
  last_axis a = last_of(L, t), r = last_of(L, tv);
  if (a.len > 4096 || a.len > WF_PE_MAX_SCALE) return unsupported(op, "a PE's block of the axis is longer than 4096");
  if (a.split == WF_AXIS_Y || r.split == WF_AXIS_Y) return unsupported(op, "the axis must be whole or split along x");
  if (r.o != a.o) return unsupported(op, "its results must keep the rows of its operand");
  int64_t o = a.o, len = a.len, n = o * len, kp = r.len * r.parts;
  int largest = wf_op_int(f, op, "largest", 1) != 0;

  int sx = wf_lower_sym(L, xv), sv = wf_lower_sym(L, vv), si = wf_lower_sym(L, iv);
  int work = wf_lower_temp(L, "$tk_work", n * 4), eq = wf_lower_temp(L, "$tk_eq", n * 4);
  int tmp = wf_lower_temp(L, "$tk_tmp", n * 4);
  int m = wf_lower_temp(L, "$tk_max", o * 4), ix = wf_lower_temp(L, "$tk_idx", o * 4);
  int wv = wf_lower_temp(L, "$tk_vals", o * kp * 4), wi = wf_lower_temp(L, "$tk_ids", o * kp * 4);
  int64_t cyc = 0;
  wf_emit(L, NULL, largest ? WF_PEOP_COPY : WF_PEOP_NEG,
          (wf_pe_arg[]){wf_arg_sym(work), wf_arg_sym(sx), wf_arg_int(n)});
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(wv), wf_arg_int(o * kp)});
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(wi), wf_arg_int(o * kp)});
  int g = wf_lower_global_index(L, "$tk_g", a.len, a.split);
  cyc += n + 2 * o * kp + 2 * len;
  int padded = a.split != WF_AXIS_NONE && a.full < a.len * a.parts;
  if (padded) { /* columns at or past the axis' end: -inf, never chosen */
    int v = wf_lower_temp(L, "$tk_pad", len * 4), pm = wf_lower_temp(L, "$tk_pm", len * 4);
    wf_emit_scal(L, WF_PEOP_SUB, v, g, (float)a.full, len); /* g - full: >= 0 on padding */
    wf_emit_scal(L, WF_PEOP_ADD, v, v, 1.0f, len);
    wf_emit_scal(L, WF_PEOP_MAX, v, v, 0.0f, len);
    wf_emit_scal(L, WF_PEOP_MIN, v, v, 1.0f, len); /* 1 on padding, 0 on real columns */
    cyc += 4 * len + pm_inf(L, pm, v, len);
    bin(L, NULL, WF_PEOP_MIN, wf_arg_sym(work), wf_arg_sym(work), wf_arg_sym(pm), o, len, WF_BMODE_J);
    cyc += n;
  }
  wf_pe_term base = a.split == WF_AXIS_NONE ? wf_term_int(0) : wf_term_scaled(pos_term(a.split), (int)len, 0);
  for (int64_t j = 0; j < k; j++) {
    wf_emit(L, NULL, WF_PEOP_RMAX, (wf_pe_arg[]){wf_arg_sym(m), wf_arg_sym(work), wf_arg_int(o), wf_arg_int(len)});
    cyc += n;
    if (a.split != WF_AXIS_NONE) {
      int rc = wf_lower_allreduce(L, m, o, a.split, 1, op->loc, &cyc, NULL);
      if (rc) return rc;
    }
    wf_emit(L, NULL, WF_PEOP_RFIND, (wf_pe_arg[]){wf_arg_sym(ix), wf_arg_sym(work), wf_arg_sym(m), wf_arg_int(o),
                                                  wf_arg_int(len), wf_arg_term(base)});
    cyc += n;
    if (a.split != WF_AXIS_NONE) { /* the lowest index of the line: -max(-index) */
      wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(ix), wf_arg_sym(ix), wf_arg_int(o)});
      int rc = wf_lower_allreduce(L, ix, o, a.split, 1, op->loc, &cyc, NULL);
      if (rc) return rc;
      wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(ix), wf_arg_sym(ix), wf_arg_int(o)});
      cyc += 2 * o;
    }
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_at(wv, j), wf_arg_sym(m), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(kp), wf_arg_int(1)});
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_at(wi, j), wf_arg_sym(ix), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(kp), wf_arg_int(1)});
    cyc += 2 * o;
    if (j + 1 == k) break;
    /* the winner leaves the race: work = min(work, -inf where g == index) */
    cyc += match(L, eq, g, ix, tmp, o, len) + pm_inf(L, eq, eq, n);
    bin(L, NULL, WF_PEOP_MIN, wf_arg_sym(work), wf_arg_sym(work), wf_arg_sym(eq), 1, n, WF_BMODE_IJ);
    cyc += n;
  }
  if (!largest) wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(wv), wf_arg_sym(wv), wf_arg_int(o * kp)});
  cyc += copy_own_block(L, sv, wv, o, r.len, kp, r.split);
  cyc += copy_own_block(L, si, wi, o, r.len, kp, r.split);
  if (a.split == WF_AXIS_NONE) out->lowering = "local";
  else {
    snprintf(out->text, sizeof out->text, "local%s+allreduce-x(%lld)", padded ? "+masked" : "", (long long)(2 * k));
    out->lowering = out->text;
  }
  out->predicted = cyc;
  return 0;
}

/* ---- scatter_elements -------------------------------------------------------------------- */

/* The rows of t's block, the last axis aside: rows whose dims are whole but the second-last
 * (split along y or whole), else 0: *rb the split dim's block, *R its length, *split whether
 * it is split over more than one PE row. */
static int block_rows(const wf_lower *L, const wf_type *t, int64_t *rb, int64_t *R, int *split) {
  int r = t->rank, rs = r >= 2 ? t->layout.dims[r - 2].split : WF_AXIS_NONE;
  if (rs == WF_AXIS_X) return 0;
  for (int d = 0; d + 2 < r; d++)
    if (t->layout.dims[d].split != WF_AXIS_NONE) return 0;
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  *rb = r >= 2 ? b[r - 2] : 1;
  *R = r >= 2 ? t->dims[r - 2] : 1;
  *split = rs == WF_AXIS_Y && L->h > 1;
  return 1;
}

/* The guard of block row `row` being a real row (y rb + rr < R), into g; 0 when no PE holds it
 * real. */
static int real_row(int64_t row, int64_t rb, int64_t R, int split, wf_pe_guard *g) {
  int64_t rr = row % rb;
  if (split) wf_guard_add(g, wf_term(WF_TERM_Y, 0), WF_CMP_LT, wf_term_int((int32_t)((R - rr + rb - 1) / rb)));
  return split || rr < R;
}

/* scatter_elements (reduction none or add) by the PEs' row scatter, the indices and updates
 * whole along the line (fi, fu: [o][kp], the first K of each row real): each PE puts its own
 * block of data's row at its place in a row as long as the axis, scatters every update of the
 * row into it (`scatter` / `scatteradd`, in order: the last index's update wins, as ONNX's
 * row-major order), and takes its block back. Padding rows are left as data has them. 1 when
 * lowered, 0 when the shapes want the compare-and-update lowering. */
static int scatter_direct(wf_lower *L, const wf_op *op, const last_axis *a, const last_axis *ki, int fi, int fu,
                          int mode, int64_t *cyc) {
  const wf_type *td = wf_value_type(L->f, op->operands[0]);
  int64_t rb, R, o = a->o, len = a->len, ap = a->len * a->parts, kp = ki->len * ki->parts;
  int split;
  if (mode > 1 || o > 256 || !block_rows(L, td, &rb, &R, &split)) return 0;
  int sd = wf_lower_sym(L, op->operands[0]), sr = wf_lower_sym(L, op->results[0]);
  int row_buf = wf_lower_temp(L, "$sc_rows", o * ap * 4);
  wf_pe_arg at = wf_arg_sym(row_buf), back = wf_arg_sym(row_buf);
  if (a->split != WF_AXIS_NONE) at.term = back.term = wf_term_scaled(pos_term(a->split), (int)len, 0);
  wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){at, wf_arg_sym(sd), wf_arg_int(o), wf_arg_int(len), wf_arg_int(ap),
                                                 wf_arg_int(len)});
  for (int64_t row = 0; row < o; row++) {
    wf_pe_guard g = wf_guard0();
    if (!real_row(row, rb, R, split, &g)) continue;
    wf_emit(L, &g, mode ? WF_PEOP_SCATTERADD : WF_PEOP_SCATTER,
            (wf_pe_arg[]){wf_arg_at(row_buf, row * ap), wf_arg_at(fu, row * kp), wf_arg_at(fi, row * kp),
                          wf_arg_int(ki->full), wf_arg_int(1), wf_arg_int(a->full)});
  }
  wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(sr), back, wf_arg_int(o), wf_arg_int(len), wf_arg_int(len),
                                                 wf_arg_int(ap)});
  *cyc += 2 * o * len + o * ki->full;
  return 1;
}

int wf_lower_scatter(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_func *f = L->f;
  wf_value dv = op->operands[0], iv = op->operands[1], uv = op->operands[2], rv = op->results[0];
  const wf_type *td = wf_value_type(f, dv), *ti = wf_value_type(f, iv), *tu = wf_value_type(f, uv),
                *tr = wf_value_type(f, rv);
  if (td->dtype != WF_F32 || tu->dtype != WF_F32) return unsupported(op, "data and updates must be f32");
  int axis = (int)wf_op_int(f, op, "axis", 0);
  axis = axis < 0 ? axis + td->rank : axis;
  if (axis != td->rank - 1) return unsupported(op, "only the last axis is lowered");
  const char *red = wf_op_str(f, op, "reduction", "none");
  int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2 : -1;
  if (mode < 0) return unsupported(op, "reduction max and min are not lowered (none, add and mul are)");
  if (td->dims[axis] > MAX_EXACT_INT)
    return unsupported(op, "the axis is longer than the 2^24 indices an f32 holds exactly");
  if (!rows_match(L, op, td, ti) || !rows_match(L, op, td, tu) || !rows_match(L, op, td, tr) ||
      ti->layout.dims[axis].split != tu->layout.dims[axis].split ||
      td->layout.dims[axis].split != tr->layout.dims[axis].split)
    return unsupported(op, "indices, updates and the result must keep the layout of data's dims before the axis");
  last_axis a = last_of(L, td), ki = last_of(L, ti);
  if (a.len > 4096 || a.len > WF_PE_MAX_SCALE) return unsupported(op, "a PE's block of the axis is longer than 4096");
  if (a.split == WF_AXIS_Y || ki.split == WF_AXIS_Y)
    return unsupported(op, "the axis must be whole or split along x");
  if (ki.o != a.o) return unsupported(op, "indices must have the rows of data");
  int64_t o = a.o, len = a.len, n = o * len, K = ki.full, kb = ki.len, kp = kb * ki.parts;

  int sd = wf_lower_sym(L, dv), si = wf_lower_sym(L, iv), su = wf_lower_sym(L, uv), sr = wf_lower_sym(L, rv);
  int64_t cyc = 0;
  int fi = si, fu = su;
  if (ki.split != WF_AXIS_NONE) {
    int src[2] = {si, su}, whole;
    int rc = allgather_last(L, op, src, 2, &ki, &whole, &cyc);
    if (rc) return rc;
    fi = whole;
    fu = wf_lower_temp(L, "$sc_upd", o * kp * 4);
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(fu), wf_arg_at(whole, o * kp), wf_arg_int(o * kp)});
    cyc += o * kp;
  }
  if (scatter_direct(L, op, &a, &ki, fi, fu, mode, &cyc)) {
    out->lowering = ki.split == WF_AXIS_NONE ? "local-scatter" : "allgather-x+local-scatter";
    out->predicted = cyc;
    return 0;
  }
  int g = wf_lower_global_index(L, "$sc_g", a.len, a.split);
  int ci = wf_lower_temp(L, "$sc_ci", o * 4), cu = wf_lower_temp(L, "$sc_cu", o * 4);
  int neg = wf_lower_temp(L, "$sc_neg", o * 4);
  int eq = wf_lower_temp(L, "$sc_eq", n * 4), tmp = wf_lower_temp(L, "$sc_tmp", n * 4);
  if (sr != sd) wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sd), wf_arg_int(n)});
  cyc += n + 2 * len;
  for (int64_t j = 0; j < K; j++) {
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(ci), wf_arg_at(fi, j), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(1), wf_arg_int(kp)});
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(cu), wf_arg_at(fu, j), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(1), wf_arg_int(kp)});
    cyc += 2 * o + wrap_negative(L, ci, neg, o, a.full) + match(L, eq, g, ci, tmp, o, len);
    if (mode == 0) { /* out += eq * (u - out) */
      wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(tmp), wf_arg_sym(sr), wf_arg_int(n)});
      bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(tmp), wf_arg_sym(tmp), wf_arg_sym(cu), o, len, WF_BMODE_I);
      bin(L, NULL, WF_PEOP_MUL, wf_arg_sym(tmp), wf_arg_sym(tmp), wf_arg_sym(eq), 1, n, WF_BMODE_IJ);
      bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_sym(tmp), 1, n, WF_BMODE_IJ);
      cyc += 4 * n;
    } else if (mode == 1) { /* out += eq * u */
      bin(L, NULL, WF_PEOP_MUL, wf_arg_sym(tmp), wf_arg_sym(eq), wf_arg_sym(cu), o, len, WF_BMODE_I);
      bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_sym(tmp), 1, n, WF_BMODE_IJ);
      cyc += 2 * n;
    } else { /* out *= 1 + eq * (u - 1) */
      bin(L, NULL, WF_PEOP_MUL, wf_arg_sym(tmp), wf_arg_sym(eq), wf_arg_sym(cu), o, len, WF_BMODE_I);
      bin(L, NULL, WF_PEOP_SUB, wf_arg_sym(tmp), wf_arg_sym(tmp), wf_arg_sym(eq), 1, n, WF_BMODE_IJ);
      wf_emit_scal(L, WF_PEOP_ADD, tmp, tmp, 1.0f, n);
      bin(L, NULL, WF_PEOP_MUL, wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_sym(tmp), 1, n, WF_BMODE_IJ);
      cyc += 4 * n;
    }
  }
  if (ki.split == WF_AXIS_NONE) out->lowering = "local";
  else {
    snprintf(out->text, sizeof out->text, "allgather-%s+local", ki.split == WF_AXIS_X ? "x" : "y");
    out->lowering = out->text;
  }
  out->predicted = cyc;
  return 0;
}

/* ---- gather_elements ----------------------------------------------------------------------- */

/* gather_elements by the PEs' row gather: data's rows made whole along the line (the same
 * allgather as the indices' above), then each row's own indices read straight from it, one
 * `gather` of width 1 per real row of the block (at most 256; guards keep padding rows and
 * the padding columns of the last PEs out, and the result's padding is zeros). It needs the
 * rows' dims whole but the last two (the second-last split along y or whole). An index out
 * of range stops the run (the gather's check), as the interpreter reports it. 1 when it took
 * the op (*rc its exit code, 0 when lowered), 0 when the shapes want the compare-and-sum
 * lowering. */
static int gather_direct(wf_lower *L, const wf_op *op, const last_axis *a, const last_axis *ki, int64_t *cyc,
                         wf_lowered_op *out, int *rc) {
  const wf_type *ti = wf_value_type(L->f, op->operands[1]);
  int64_t rb, R, o = a->o, kb = ki->len;
  int rows_split;
  if (o > 256 || !block_rows(L, ti, &rb, &R, &rows_split)) return 0;
  int sd = wf_lower_sym(L, op->operands[0]), si = wf_lower_sym(L, op->operands[1]), sr = wf_lower_sym(L, op->results[0]);
  int whole = sd;
  int64_t ap = a->len * a->parts;
  *rc = 0;
  if (a->split != WF_AXIS_NONE && (*rc = allgather_last(L, op, &sd, 1, a, &whole, cyc))) return 1;
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_int(o * kb)});
  *cyc += o * kb;
  for (int64_t row = 0; row < o; row++) {
    for (int c = 0; c < 2; c++) { /* PEs below q hold kb real columns, PE q the rest */
      int64_t cols;
      wf_pe_guard g = wf_guard0();
      if (!col_part(ki, c, &g, &cols) || !real_row(row, rb, R, rows_split, &g)) continue;
      wf_emit(L, &g, WF_PEOP_GATHER,
              (wf_pe_arg[]){wf_arg_at(sr, row * kb), wf_arg_at(whole, row * ap), wf_arg_at(si, row * kb),
                            wf_arg_int(cols), wf_arg_int(1), wf_arg_int(a->full)});
    }
  }
  *cyc += o * kb;
  if (a->split == WF_AXIS_NONE && ki->split == WF_AXIS_NONE) out->lowering = "local-gather";
  else out->lowering = a->split != WF_AXIS_NONE ? "allgather-x+local-gather" : "local-gather";
  out->predicted = *cyc;
  return 1;
}

int wf_lower_gather_elements(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_func *f = L->f;
  wf_value dv = op->operands[0], iv = op->operands[1], rv = op->results[0];
  const wf_type *td = wf_value_type(f, dv), *ti = wf_value_type(f, iv), *tr = wf_value_type(f, rv);
  if (td->dtype != WF_F32) return unsupported(op, "data must be f32");
  int axis = (int)wf_op_int(f, op, "axis", 0);
  axis = axis < 0 ? axis + td->rank : axis;
  if (axis != td->rank - 1) return unsupported(op, "only the last axis is lowered");
  if (td->dims[axis] > MAX_EXACT_INT)
    return unsupported(op, "the axis is longer than the 2^24 indices an f32 holds exactly");
  if (!rows_match(L, op, td, ti) || !rows_match(L, op, td, tr) ||
      ti->layout.dims[axis].split != tr->layout.dims[axis].split)
    return unsupported(op, "indices and the result must keep the layout of data's dims before the axis");
  last_axis a = last_of(L, td), ki = last_of(L, ti);
  if (a.len > 4096 || a.len > WF_PE_MAX_SCALE) return unsupported(op, "a PE's block of the axis is longer than 4096");
  if (a.split == WF_AXIS_Y || ki.split == WF_AXIS_Y)
    return unsupported(op, "the axis must be whole or split along x");
  if (ki.o != a.o) return unsupported(op, "indices must have the rows of data");
  int64_t o = a.o, len = a.len, n = o * len, K = ki.full, kp = ki.len * ki.parts;
  int64_t bd[WF_MAX_RANK];
  wf_lower_block_dims(L, td, bd);
  wf_axis_view v = wf_lower_axis_view(L, td, bd, axis);

  int64_t cyc = 0;
  int drc;
  if (gather_direct(L, op, &a, &ki, &cyc, out, &drc)) return drc;
  int sd = wf_lower_sym(L, dv), si = wf_lower_sym(L, iv), sr = wf_lower_sym(L, rv);
  int fi = si;
  if (ki.split != WF_AXIS_NONE) {
    int rc = allgather_last(L, op, &si, 1, &ki, &fi, &cyc);
    if (rc) return rc;
  }
  int g = wf_lower_global_index(L, "$ge_g", a.len, a.split);
  int ci = wf_lower_temp(L, "$ge_ci", o * 4), neg = wf_lower_temp(L, "$ge_neg", o * 4);
  int sum = wf_lower_temp(L, "$ge_sum", o * 4), wv = wf_lower_temp(L, "$ge_vals", o * kp * 4);
  int eq = wf_lower_temp(L, "$ge_eq", n * 4), tmp = wf_lower_temp(L, "$ge_tmp", n * 4);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(wv), wf_arg_int(o * kp)});
  cyc += o * kp + 2 * len;
  for (int64_t j = 0; j < K; j++) {
    /* value j of each row: the sum over the axis of data where g == index (padding columns
     * left out by the statistic's guards), completed along the line */
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_sym(ci), wf_arg_at(fi, j), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(1), wf_arg_int(kp)});
    cyc += o + wrap_negative(L, ci, neg, o, a.full) + match(L, eq, g, ci, tmp, o, len);
    bin(L, NULL, WF_PEOP_MUL, wf_arg_sym(tmp), wf_arg_sym(eq), wf_arg_sym(sd), 1, n, WF_BMODE_IJ);
    cyc += n;
    int rc = wf_lower_axis_stat(L, sum, tmp, &v, 0, op->loc, &cyc);
    if (rc) return rc;
    wf_emit(L, NULL, WF_PEOP_COPY2D, (wf_pe_arg[]){wf_arg_at(wv, j), wf_arg_sym(sum), wf_arg_int(o), wf_arg_int(1),
                                                   wf_arg_int(kp), wf_arg_int(1)});
    cyc += o;
  }
  cyc += copy_own_block(L, sr, wv, o, ki.len, kp, ki.split);
  if (a.split == WF_AXIS_NONE && ki.split == WF_AXIS_NONE) out->lowering = "local";
  else {
    snprintf(out->text, sizeof out->text, "%slocal%s", ki.split != WF_AXIS_NONE ? "allgather-x+" : "",
             a.split != WF_AXIS_NONE ? "+allreduce-x" : "");
    out->lowering = out->text;
  }
  out->predicted = cyc;
  return 0;
}
