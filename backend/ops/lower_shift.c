/* shift (ops.def) on the mesh: out[.., i, ..] = x[.., i - by, ..] along one axis, zero fill.
 * waferc --pipeline moves the activations from one stage's band of rows to the next with one
 * (docs/pipeline.md). Operand and result share one layout; along the axis the block is
 * [outer][len][inner] (wf_axis_view):
 *
 *   local    the axis is not split (every PE holds all of it): one copy2d over the outer rows
 *            into the zeroed result.
 *   fabric   the axis is split over a line of P PEs in blocks of len, and len divides by:
 *            k = |by| / len steps, each passing every PE's current block one hop along the
 *            line (toward +1 for by > 0) while it takes its neighbour's, between two
 *            buffers; the k PEs at the line's start (end for by < 0) are zeroed after. A
 *            router holds one rx -> tx rule per color, so a PE sends on the color of its
 *            coordinate's parity and receives on the other (as the decode cache's shift:
 *            lower_decode_attention.c): two colors per axis and direction, once per class.
 *            Every link carries one block per step, which is the least a band move can do:
 *            the k blocks of a line's first k PEs all cross the link after them.
 *   refused  a shift by part of a block along a split axis would split blocks over two PEs:
 *            exit 3, said.
 *
 * Along the axis the result's padding (the last block's indices past the axis' length) holds
 * data that shifted into it; partition_pad.c marks it so. */
#include <stdio.h>

#include "backend/collectives/lower_collective.h"
#include "ir/rules.h"
#include "waferc/diag.h"

/* The two colors of the one-hop line along `axis` toward +1 (dir 0) or -1 (dir 1), with
 * their routes, allocated once per class: -1 after reporting that no color is left. */
static int line_colors(wf_lower *L, int axis, int dir, wf_loc loc) {
  int a = axis == WF_AXIS_X ? 0 : 1;
  unsigned bit = 1u << (a * 2 + dir);
  int *col = L->shift_col[a][dir];
  if (L->shift_set & bit) return 0;
  static const char *const names[2][2][2] = {
      {{"shift east (even columns send)", "shift east (odd columns send)"},
       {"shift west (even columns send)", "shift west (odd columns send)"}},
      {{"shift south (even rows send)", "shift south (odd rows send)"},
       {"shift north (even rows send)", "shift north (odd rows send)"}}};
  for (int p = 0; p < 2; p++)
    if ((col[p] = wf_lower_color_fresh(L, names[a][dir][p], loc)) < 0) return -1;
  /* toward +1: x -> E, y -> S (docs/cycle-model.md's port names); the receiver's rx port is
   * the opposite one */
  int tx = a ? (dir ? WF_DIR_N : WF_DIR_S) : (dir ? WF_DIR_W : WF_DIR_E);
  int rx = a ? (dir ? WF_DIR_S : WF_DIR_N) : (dir ? WF_DIR_E : WF_DIR_W);
  wf_pe_term c = wf_term(a ? WF_TERM_Y : WF_TERM_X, 0);
  for (int p = 0; p < 2; p++) {
    wf_pe_guard par = wf_guard0();
    wf_gadd_mod(&par, c, 2, p);
    wf_pe_class_add_route(L->cls, &par, col[p], WF_DIR_RAMP, 1u << tx);
    wf_pe_class_add_route(L->cls, &par, col[1 - p], rx, 1u << WF_DIR_RAMP);
  }
  L->shift_set |= bit;
  return 0;
}

int wf_lower_shift(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_type *tx = wf_value_type(L->f, op->operands[0]), *tr = wf_value_type(L->f, op->results[0]);
  int axis = wf_norm_axis(wf_op_int(L->f, op, "axis", 0), tx->rank);
  int64_t by = wf_op_int(L->f, op, "by", 0);
  WF_ASSERT(axis >= 0); /* verified */
  if (!wf_type_equal(tx, tr)) {
    wf_error(op->loc, "'shift' on the %dx%d mesh: operand and result are laid out differently (lowered for "
                      "the one layout the partition pass gives both)", L->w, L->h);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, tx, b);
  wf_axis_view v = wf_lower_axis_view(L, tx, b, axis);
  int sx = wf_lower_sym(L, op->operands[0]), sr = wf_lower_sym(L, op->results[0]);
  int64_t words = v.outer * v.len * v.inner, mag = by < 0 ? -by : by;
  out->predicted = 0;
  if (v.parts == 1) {
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_int(words)});
    out->predicted = words;
    int64_t row = v.len * v.inner, cols = (v.len - mag) * v.inner;
    out->lowering = "local";
    if (cols > 0) {
      wf_emit(L, NULL, WF_PEOP_COPY2D,
              (wf_pe_arg[]){wf_arg_at(sr, by > 0 ? mag * v.inner : 0), wf_arg_at(sx, by < 0 ? mag * v.inner : 0),
                            wf_arg_int(v.outer), wf_arg_int(cols), wf_arg_int(row), wf_arg_int(row)});
      out->predicted += v.outer * cols;
    }
    return 0;
  }
  if (mag % v.len) {
    wf_error(op->loc, "'shift' by %lld along axis %d, split over %d PEs in blocks of %lld on the %dx%d mesh: "
                      "only whole blocks move over the fabric (shift by a multiple of %lld, or on a mesh whose "
                      "blocks divide %lld)",
             (long long)by, axis, v.parts, (long long)v.len, L->w, L->h, (long long)v.len, (long long)mag);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t k = mag / v.len;
  int dir = by < 0, P = v.parts;
  wf_pe_term c = wf_term(v.split == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0);
  snprintf(out->text, sizeof out->text, "fabric-%c%s%lld", v.split == WF_AXIS_X ? 'x' : 'y', dir ? "-" : "+",
           (long long)k);
  out->lowering = out->text;
  if (k == 0 || k >= P) { /* nothing moves, or everything leaves the line */
    out->lowering = "local";
    if (k) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_int(words)});
    else wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sx), wf_arg_int(words)});
    out->predicted = words;
    return 0;
  }
  if (line_colors(L, v.split, dir, op->loc)) return WF_EXIT_NOFIT;
  const int *col = L->shift_col[v.split == WF_AXIS_X ? 0 : 1][dir];
  L->move_bits |= WF_MOVE_RELAYOUT;
  /* Step u receives into buf(u): the result on the last step (u = k - 1) and on every second
   * one before it, `$shift` on the others; step 0 sends the operand itself. */
  int tmp = k > 1 ? wf_lower_temp(L, "$shift", words * 4) : -1, done = wf_lower_done_task(L);
  wf_pe_guard send = wf_guard0(), recv = wf_guard0();
  wf_gadd(&send, c, dir ? WF_CMP_GT : WF_CMP_LT, wf_term_int(dir ? 0 : P - 1));
  wf_gadd(&recv, c, dir ? WF_CMP_LT : WF_CMP_GT, wf_term_int(dir ? P - 1 : 0));
  int u = k > 1 ? wf_lower_var(L, "u") : -1;
  wf_pe_term tu = wf_term_var(u, 0);
  for (int first = 1; first >= 0; first--) {
    if (!first && k == 1) break;
    if (!first) wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tu), wf_arg_int(1), wf_arg_int(k)});
    for (int q = 0; q < (first ? 1 : 2); q++) {
      /* in the loop, q = u's parity; buf(u) is the result when (k - 1 - u) is even */
      int to = first ? ((k - 1) % 2 == 0 ? sr : tmp) : (((k - 1 - q) % 2 + 2) % 2 == 0 ? sr : tmp);
      int from = first ? sx : (to == sr ? tmp : sr);
      for (int p = 0; p < 2; p++) {
        wf_pe_guard gs = send, gr = recv;
        wf_gadd_mod(&gs, c, 2, p);
        wf_gadd_mod(&gr, c, 2, p);
        if (!first) {
          wf_gadd(&gs, wf_gterm(tu, 2, 0), WF_CMP_EQ, wf_term_int(q));
          wf_gadd(&gr, wf_gterm(tu, 2, 0), WF_CMP_EQ, wf_term_int(q));
        }
        wf_emit(L, &gr, WF_PEOP_ARECV,
                (wf_pe_arg[]){wf_arg_int(col[1 - p]), wf_arg_sym(to), wf_arg_int(words), wf_arg_int(done)});
        wf_emit(L, &gs, WF_PEOP_ASEND,
                (wf_pe_arg[]){wf_arg_int(col[p]), wf_arg_sym(from), wf_arg_int(words), wf_arg_int(done)});
      }
    }
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    if (!first) wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  /* the line's first k PEs (last k for by < 0) took what came from outside the operand: 0 */
  wf_pe_guard z = wf_guard0();
  wf_gadd(&z, c, dir ? WF_CMP_GE : WF_CMP_LT, wf_term_int((int32_t)(dir ? P - k : k)));
  wf_emit(L, &z, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_int(words)});
  /* Each step is one message of `words` over one hop (bc). The PE at the line's start only
   * sends: its step u ends after (u + 1) streams of the block, so its neighbour's receives run
   * one message latency (bc - words) ahead of the chain behind it. The PEs past the first k
   * end after k messages; the last of the first k ends after k - 1 messages, the stream of
   * its last block and the zeroing of it. */
  int64_t bc = wf_cost_bcast(L->t, words, 1), chain = k * bc, lead = (k - 1) * bc + 2 * words;
  out->predicted = chain > lead ? chain : lead;
  return 0;
}
