/* unskew (ops.def; docs/generation.md, "The switch"): a weight W [K, N] {K_y, N_x} that the host
 * wrote pre-skewed (docs/plan-format.md, weights' `skew`: inside PE (x, y)'s block of bk x bn,
 * the K tile at virtual position a = v_k y + i / k_tile, seen from column tile
 * b = v_o x + j / other_tile, is K tile s = wf_skew_source(ring, a, b, L)) put back in
 * partition's block order, where the block's K tile t is tile v_k y + t.
 *
 * A K tile travels along its column of PEs only, and which one sits where depends on the
 * column tile, so a PE needs its columns' whole K:
 *   1. the block transposed on the PE ([bn][bk]: each row one column's K tiles);
 *   2. gathered along y into a panel [bn][L k_tile] (wf_relayout_gather_axis: each row now
 *      holds every K tile of that column, in the skewed order);
 *   3. one `gather` of k_tile-word chunks by the PE's indices ix (the op's second operand,
 *      written by the compiler: ix[j v_k + t] = j L + a, a the position where the column's
 *      tile v_k y + t sits) into [bn][bk];
 *   4. transposed back into the result's [bk][bn].
 * The fabric moves only the gather along y; the rest is local. */
#include "backend/collectives/lower_relayout.h"
#include "ir/rules.h"
#include "waferc/diag.h"

int wf_lower_unskew(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_gemm_skew u;
  if (wf_unskew_of(L->f, op, &u)) return WF_EXIT_UNSUPPORTED;
  const wf_type *xt = wf_value_type(L->f, op->operands[0]), *it = wf_value_type(L->f, op->operands[1]);
  int64_t b[WF_MAX_RANK], ib[WF_MAX_RANK];
  wf_lower_block_dims(L, xt, b);
  wf_lower_block_dims(L, it, ib);
  int64_t bk = b[0], bn = b[1], H = L->h, vk = u.tiles / H;
  if (xt->layout.dims[0].split != WF_AXIS_Y || xt->layout.dims[1].split != WF_AXIS_X || H < 2 || u.tiles % H ||
      u.tiles % L->w || vk * u.k_tile != bk || ib[0] * ib[1] != bn * vk || bn * u.tiles > (1 << 24)) {
    wf_error(op->loc, "'unskew' of a [%lld, %lld] block on %dx%d in %lld tiles of %lld rows: it takes {K_y, N_x} "
                      "with K over more than one row of PEs, the tiles a multiple of both sides, and bn v_k indices "
                      "per PE",
             (long long)bk, (long long)bn, L->w, L->h, (long long)u.tiles, (long long)u.k_tile);
    return WF_EXIT_UNSUPPORTED;
  }
  int sx = wf_lower_sym(L, op->operands[0]), six = wf_lower_sym(L, op->operands[1]);
  int sr = wf_lower_sym(L, op->results[0]);
  int64_t words = bk * bn, panel_words = bn * H * bk;
  /* the names of kv_switch's temporaries: op-local, so the switch's ops share their memory */
  int t = wf_lower_temp(L, "$kv_t", words * 4), panel = wf_lower_temp(L, "$sl_panel", panel_words * 4);
  /* 1. [bk][bn] -> [bn][bk] */
  wf_emit(L, NULL, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(t), wf_arg_sym(sx), wf_arg_int(bk), wf_arg_int(bn)});
  out->predicted = words;
  /* 2. every column's K along y: block [bn][bk][1], row o of the panel holds column o's */
  wf_relayout_gather ga = {WF_AXIS_Y, t, panel, 0, 0, bn, 1, bk, H * bk, 0, (int)H};
  int rc = wf_relayout_gather_axis(L, &ga, op->loc, &out->predicted);
  if (rc) return rc;
  /* 3. the tiles back in place: chunks of k_tile words, bn L of them in the panel */
  wf_emit(L, NULL, WF_PEOP_GATHER,
          (wf_pe_arg[]){wf_arg_sym(t), wf_arg_sym(panel), wf_arg_sym(six), wf_arg_int(bn * vk), wf_arg_int(u.k_tile),
                        wf_arg_int(bn * u.tiles)});
  /* 4. [bn][bk] -> [bk][bn] */
  wf_emit(L, NULL, WF_PEOP_TRANSPOSE, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(t), wf_arg_int(bn), wf_arg_int(bk)});
  out->predicted += 2 * words;
  out->lowering = "relayout-unskew";
  return 0;
}
