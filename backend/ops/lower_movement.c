/* reshape and transpose, where they move no data between PEs.
 *
 * A reshape only renames dims when, after dropping the dims of size 1, input and result
 * have the same dims with the same splits ([1, S, E] {B, S_y, E_x} -> [S, E] {S_y, E_x}):
 * every PE's block is then the same bytes, copied. A transpose of the last two dims is a
 * local block transpose when neither dim is split (a 1x1 mesh, or dims the partition left
 * whole); a transpose of a split matrix is a relayout over the fabric (lower_transpose.c);
 * a vector (one dim longer than 1) whose split moves to another axis is gathered and
 * sliced (vector_resplit); a reshape that regroups rows is lower_reshape_rows.c's, any other
 * of a small tensor is gathered whole and cut (lower_reshape_whole.c); other permutations
 * and larger reshapes are rejected by name. */
#include "backend/resources/lower.h"
#include "ir/rules.h"
#include "waferc/diag.h"

/* The non-1 dims of t and their splits. */
static int squeeze(const wf_type *t, int64_t *dims, int *split) {
  int k = 0;
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] != 1) {
      dims[k] = t->dims[d];
      split[k++] = t->layout.dims[d].split;
    }
  return k;
}

/* PEs a dim split along `axis` is divided over (1 when not split, or on a 1-wide mesh). */
static int parts(const wf_lower *L, int axis) {
  return axis == WF_AXIS_X ? L->w : axis == WF_AXIS_Y ? L->h : 1;
}

static int same_blocks(const wf_type *a, const wf_type *b) {
  int64_t da[WF_MAX_RANK], db[WF_MAX_RANK];
  int sa[WF_MAX_RANK], sb[WF_MAX_RANK];
  int na = squeeze(a, da, sa), nb = squeeze(b, db, sb);
  if (na != nb) return 0;
  for (int i = 0; i < na; i++)
    if (da[i] != db[i] || sa[i] != sb[i]) return 0;
  return 1;
}

/* A vector re-split: operand and result have one dim longer than 1, of the same length D,
 * split along different axes (or one of them whole): [K, 1] {K_y} -> [1, K] {K_x}, the
 * transpose ONNX Gemm(transA) makes of a one-column A, or [1, M] {M_x} -> [M, 1] {M_y}.
 * Every PE gathers the whole vector into a panel along the operand's axis (round j: PE j of
 * the line multicasts its block on the axis' flooding broadcast color into slot j, a term
 * offset; its own block it copies), then copies its slice of the result out of the panel.
 * The panel's tail past the operand's blocks is zero, so the result's padding is the
 * operand's padding, then zeros (partition_pad.c's rule for a transpose or reshape). */
static int vector_resplit(wf_lower *L, const wf_op *op, int64_t len, int sa, int sb, wf_lowered_op *out) {
  int pa = parts(L, sa), pb = parts(L, sb);
  int64_t bs = (len + pa - 1) / pa, bd = (len + pb - 1) / pb, got = pa * bs, np = got > pb * bd ? got : pb * bd;
  if (bs > WF_PE_MAX_SCALE || bd > WF_PE_MAX_SCALE) {
    wf_error(op->loc, "'%s' of a %lld-element vector: a block is past the PE's addressing of panel slots",
             wf_opinfos[op->code].name, (long long)len);
    return WF_EXIT_NOFIT;
  }
  int col = pa > 1 ? wf_lower_color(L, sa == WF_AXIS_X ? WF_COLOR_ROW_BCAST : WF_COLOR_COL_BCAST, op->loc) : 0;
  if (col < 0) return WF_EXIT_NOFIT;
  int sx = wf_lower_sym(L, op->operands[0]), sr = wf_lower_sym(L, op->results[0]);
  int panel = wf_lower_temp(L, "$vr_panel", np * 4);
  wf_pe_term ta = wf_term(sa == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0), tb = wf_term(sb == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  wf_pe_arg own = wf_arg_sym(panel), mine = wf_arg_sym(panel);
  if (pa > 1) own.term = wf_term_scaled(ta, (int)bs, 0);
  if (pb > 1) mine.term = wf_term_scaled(tb, (int)bd, 0);
  wf_pe_arg tail = wf_arg_sym(panel);
  tail.off = (int32_t)got;
  if (np > got) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){tail, wf_arg_int(np - got)});
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){own, wf_arg_sym(sx), wf_arg_int(bs)});
  int64_t pred = (np - got) + bs + bd;
  if (pa > 1) {
    L->move_bits |= WF_MOVE_TRANSPOSE; /* the gather crosses the fabric */
    int jv = wf_lower_var(L, "vr");
    wf_pe_term tj = wf_term_var(jv, 0);
    wf_pe_guard snd = wf_guard0(), rcv = wf_guard0();
    wf_guard_add(&snd, ta, WF_CMP_EQ, tj);
    wf_guard_add(&rcv, ta, WF_CMP_NE, tj);
    wf_pe_arg slot = wf_arg_sym(panel);
    slot.term = wf_term_scaled(tj, (int)bs, 0);
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tj), wf_arg_int(0), wf_arg_int(pa)});
    wf_emit(L, &snd, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sx), wf_arg_int(bs)});
    wf_emit(L, &rcv, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), slot, wf_arg_int(bs)});
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    /* the rounds pipeline as the transpose's gather does (lower_relayout.c) */
    /* each round: a swset on every PE (the broadcast color's position), then the broadcast */
    pred += (int64_t)pa * (wf_cost_bcast(L->t, bs, 1) + 1) + (pa > 2 ? (int64_t)(pa - 2) * L->t->hop_cycles : 0);
  }
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), mine, wf_arg_int(bd)});
  out->lowering = "vector-resplit";
  out->predicted = pred;
  return 0;
}

int wf_lower_movement(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value xv = op->operands[0], rv = op->results[0];
  const wf_type *xt = wf_value_type(L->f, xv), *rt = wf_value_type(L->f, rv);
  int64_t m, n;
  wf_lower_block(L, xv, &m, &n);
  int sx = wf_lower_sym(L, xv), sr = wf_lower_sym(L, rv);
  /* A transpose is a copy only when it keeps the dims longer than 1 in order: a square
   * matrix's transpose has the same blocks but not the same bytes. */
  int keeps_order = 1;
  if (op->code == WF_OP_TRANSPOSE) {
    const wf_attr *perm = wf_op_attr(L->f, op, "perm");
    int64_t last = -1;
    for (int d = 0; perm && d < perm->u.ints.n && d < xt->rank; d++) {
      int64_t src = perm->u.ints.v[d];
      if (src < 0 || src >= xt->rank || xt->dims[src] == 1) continue;
      keeps_order &= src > last;
      last = src;
    }
  }
  if (keeps_order && same_blocks(xt, rt)) {
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sx), wf_arg_int(m * n)});
    out->lowering = "local-copy";
    out->predicted = m * n;
    return 0;
  }
  {
    int64_t da[WF_MAX_RANK], db[WF_MAX_RANK];
    int sa[WF_MAX_RANK], sb[WF_MAX_RANK];
    if (squeeze(xt, da, sa) == 1 && squeeze(rt, db, sb) == 1 && da[0] == db[0] && parts(L, sa[0]) * parts(L, sb[0]) > 1)
      return vector_resplit(L, op, da[0], sa[0], sb[0], out);
  }
  if (op->code == WF_OP_TRANSPOSE) {
    int r = xt->rank, swaps_last_two = wf_perm_swaps_last_two(L->f, op, r);
    int lead1 = 1;
    for (int d = 0; d < r - 2; d++) lead1 &= xt->dims[d] == 1;
    /* Both sides whole: an operand every PE holds whole whose result is split ([16, 1]
     * {M_y, N} on 3x1 -> [1, 16] {M, N_x}) has smaller result blocks than the transpose. */
    int whole = r >= 2 && parts(L, xt->layout.dims[r - 1].split) == 1 &&
                parts(L, xt->layout.dims[r - 2].split) == 1 && parts(L, rt->layout.dims[r - 1].split) == 1 &&
                parts(L, rt->layout.dims[r - 2].split) == 1;
    if (swaps_last_two && lead1 && whole) {
      wf_emit(L, NULL, WF_PEOP_TRANSPOSE,
              (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sx), wf_arg_int(m), wf_arg_int(n)});
      out->lowering = "local-transpose";
      out->predicted = m * n;
      return 0;
    }
    /* A split matrix (or a batch of them): the mirror relayout over the fabric. */
    if (swaps_last_two) return wf_lower_transpose_dist(L, op, out);
    /* Any other permutation of a small tensor: gathered whole, permuted, cut again. */
    const wf_attr *pa = wf_op_attr(L->f, op, "perm");
    if (pa && pa->u.ints.n == r) {
      int64_t perm[WF_MAX_RANK], cyc = 0;
      for (int d = 0; d < r; d++) perm[d] = pa->u.ints.v[d] < 0 ? pa->u.ints.v[d] + r : pa->u.ints.v[d];
      wf_whole w;
      if (!wf_lower_whole_gather(L, op, op->operands[0], 0, &w, &cyc) &&
          !wf_lower_whole_permute(L, &w, xt, perm, &cyc) && !wf_lower_whole_cut(L, &w, op->results[0], &cyc)) {
        out->lowering = "gather-whole";
        out->predicted = cyc;
        return 0;
      }
    }
    wf_error(op->loc, "'transpose' of a tensor split over the %dx%d mesh is lowered for the last two dims, or "
                      "for any permutation of at most 4096 words (gathered whole); this one is larger "
                      "(a relayout over the fabric for it is not implemented)",
             L->w, L->h);
    return WF_EXIT_UNSUPPORTED;
  }
  int rows = wf_lower_reshape_rows(L, op, out); /* rows regrouped, the last dim kept */
  if (rows >= 0) return rows;
  int whole = wf_lower_reshape_whole(L, op, out); /* small: gathered whole, cut again */
  if (whole >= 0) return whole;
  wf_error(op->loc, "'reshape' that changes how the partitioned dims are blocked is not "
                    "supported for a tensor this large: only reshapes that add or drop dims of size 1, "
                    "regroup rows keeping the last dim, or move at most 4096 words (gathered whole) "
                    "are lowered");
  return WF_EXIT_UNSUPPORTED;
}
