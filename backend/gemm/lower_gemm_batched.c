/* dist.gemm with batch dims (numpy/ONNX broadcasting) or a 1-D A (docs/gemm.md, "Batched").
 *
 * partition never splits a batch dim: PE (x, y) holds every matrix of the batch, its block
 * (y, x) of each, one after the other (wf_lower_block folds the leading dims into rows). So
 * matrix i of an operand is the PE's block at word i * (block rows * block cols), and a
 * batched GEMM is the rank-2 algorithm run once per matrix of the broadcast batch on those
 * sub-blocks. The rank-2 lowerings take values, not symbols, so each matrix is presented as
 * a rank-2 *view*: a fresh value of the matrix's type whose symbol is the batched operand's
 * (wf_lower_alias); the instructions the lowering emitted are then rebased by the matrix's
 * word offset. A broadcast operand (batch dim 1, or no batch dims: a weight shared by every
 * matrix) is read at the same offset by every step. A 1-D A [K] is the row [1, K]: its
 * {K_x} block is exactly that row's, replicated along y, and so is C's [.., N]. The program
 * grows with the batch count (one unrolled GEMM per matrix), never with the PE count; the
 * prediction is the sum of the steps'.
 *
 * MeshGEMM and Cannon on W x H pad K to lcm tiles when the operands are graph inputs or
 * constants used only here (wf_gemm_rect_k_padded): then every matrix's K is padded, the
 * PE's blocks hold K_pad / W columns of A and K_pad / H rows of B per matrix, and the views
 * say so (their K is K_pad), so the rank-2 lowering sees blocks that cut in lcm tiles. */
#include <stdio.h>
#include <string.h>

#include "backend/gemm/gemm_choose.h"
#include "backend/gemm/lower_gemm.h"
#include "waferc/diag.h"

/* The rank-2 type of one matrix of t: its last two dims, or for a vector (has_rows = 0) the
 * row [1, last dim], with the layout of those dims. */
static wf_type matrix_type(wf_lower *L, const wf_type *t, int has_rows, int k_dim, int64_t k_pad) {
  wf_type v;
  memset(&v, 0, sizeof v);
  v.dtype = t->dtype;
  v.rank = 2;
  v.layout.rank = 2;
  v.layout.region = t->layout.region;
  if (has_rows) {
    for (int i = 0; i < 2; i++) {
      v.dims[i] = t->dims[t->rank - 2 + i];
      v.layout.dims[i] = t->layout.dims[t->rank - 2 + i];
    }
  } else {
    v.dims[0] = 1;
    v.layout.dims[0] = (wf_layout_dim){wf_intern(L->m, "M"), WF_AXIS_NONE, WF_AXIS_NONE};
    v.dims[1] = t->dims[t->rank - 1];
    v.layout.dims[1] = t->layout.dims[t->rank - 1];
  }
  if (k_pad) v.dims[k_dim] = k_pad; /* the blocks the host scattered (wf_lower_block) */
  return v;
}

/* Words of one matrix's block on a PE. */
static int64_t matrix_words(const wf_lower *L, const wf_type *m) {
  int64_t w = 1;
  for (int d = 0; d < 2; d++) {
    int s = m->layout.dims[d].split;
    int64_t p = s == WF_AXIS_X ? L->w : s == WF_AXIS_Y ? L->h : 1;
    w *= (m->dims[d] + p - 1) / p;
  }
  return w;
}

/* Row-major index of batch element `idx` (over the broadcast batch shape, nb dims) in an
 * operand whose `lead` batch dims are the last `lead` of the shape; a dim of 1 broadcasts. */
static int64_t operand_matrix(const wf_type *t, int lead, const int64_t *idx, int nb) {
  int64_t i = 0;
  for (int d = 0; d < lead; d++) {
    int64_t dim = t->dims[d];
    i = i * dim + (dim == 1 ? 0 : idx[nb - lead + d]);
  }
  return i;
}

/* Adds `off` words to every buffer operand naming symbol `sym` in code[from..]. */
static void rebase(wf_pe_class *c, int from, int sym, int64_t off) {
  for (int i = from; i < c->n_code; i++) {
    wf_pe_instr *in = &c->code[i];
    const char *sig = wf_peops[in->op].sig;
    for (int a = 0; sig[a]; a++)
      if ((sig[a] == 'd' || sig[a] == 's') && in->args[a].sym == sym) in->args[a].off += (int32_t)off;
  }
}

int wf_lower_gemm_batched(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value a = op->operands[0], b = op->operands[1], c = op->results[0];
  /* Copies: creating the views grows the value table (and may move it). */
  const wf_type cta = *wf_value_type(f, a), ctb = *wf_value_type(f, b), ctc = *wf_value_type(f, c);
  const wf_type *ta = &cta, *tb = &ctb, *tc = &ctc;
  if (tb->rank < 2) {
    wf_error(op->loc, "'%s' with a 1-D B (a matrix-vector product) is not a distributed GEMM: "
                      "partition rewrites it into mul and reduce_sum", wf_opinfos[op->code].name);
    return WF_EXIT_UNSUPPORTED;
  }
  int la = ta->rank > 2 ? ta->rank - 2 : 0, lb = tb->rank - 2;
  int has_rows = ta->rank >= 2, nb = tc->rank - (has_rows ? 2 : 1);
  const wf_type *split_of[3] = {ta, tb, tc};
  int lead_of[3] = {la, lb, nb};
  for (int o = 0; o < 3; o++)
    for (int d = 0; d < lead_of[o]; d++)
      if (split_of[o]->layout.dims[d].split != WF_AXIS_NONE) {
        wf_error(op->loc, "'%s': batch dim %d of %s is split over the mesh; the batched GEMM "
                          "lowering needs every batch dim whole on each PE (partition's layout)",
                 wf_opinfos[op->code].name, d, o == 0 ? "A" : o == 1 ? "B" : "the result");
        return WF_EXIT_UNSUPPORTED;
      }
  int64_t count = 1;
  for (int d = 0; d < nb; d++) count *= tc->dims[d];

  /* The views: fresh values of the matrix types, standing for the batched operands'
   * symbols; `sub` is the rank-2 op the algorithm lowers (never linked into the body). */
  /* K as both operands' blocks cut it (a computed operand's blocks are partition's) */
  int64_t k_pad = wf_gemm_rect_k_padded(f, op, L->w, L->h);
  /* weights written aligned: every matrix of them (the views are fresh values) */
  int preskew = wf_gemm_preskewed(f, op, L->w, L->h);
  wf_type mt[3] = {matrix_type(L, ta, has_rows, 1, k_pad), matrix_type(L, tb, 1, 0, k_pad),
                   matrix_type(L, tc, has_rows, 0, 0)};
  int64_t words[3];
  for (int o = 0; o < 3; o++) words[o] = matrix_words(L, &mt[o]);
  wf_op *holder = wf_op_new(f, op->code, 0, NULL, 2, mt, op->loc);
  wf_op *sub = wf_op_new(f, op->code, 2, holder->results, 1, &mt[2], op->loc);
  sub->n_attrs = op->n_attrs;
  sub->attrs = op->attrs;
  int sym[3] = {wf_lower_sym(L, a), wf_lower_sym(L, b), wf_lower_sym(L, c)};
  wf_lower_alias(L, sub->operands[0], sym[0]);
  wf_lower_alias(L, sub->operands[1], sym[1]);
  wf_lower_alias(L, sub->results[0], sym[2]);

  /* One matrix takes and gives the rows' skew as a rank-2 GEMM does (row_skew.h); a batch of
   * several starts together and gives none, so that its prediction stays the sum the
   * chooser lists for it (gemm_choose.c prices each algorithm alone, rows together). */
  if (count > 1) L->skew_in_ok = 0;
  int64_t idx[WF_MAX_RANK] = {0}, predicted = 0;
  wf_lowered_op step;
  memset(&step, 0, sizeof step);
  for (int64_t i = 0; i < count; i++) {
    int64_t at[3] = {operand_matrix(ta, la, idx, nb), operand_matrix(tb, lb, idx, nb), i};
    /* A and B may be one value (X·X): then the same matrix of it, by broadcasting. */
    WF_ASSERT(sym[0] != sym[1] || at[0] * words[0] == at[1] * words[1]);
    int from = L->cls->n_code;
    memset(&step, 0, sizeof step);
    step.op = sub;
    int rc = wf_lower_gemm_matrix(L, sub, &step, preskew);
    if (rc) return rc;
    for (int o = 0; o < 3; o++) {
      if (o == 1 && sym[1] == sym[0]) continue;
      if (at[o]) rebase(L->cls, from, sym[o], at[o] * words[o]);
    }
    predicted += step.predicted;
    for (int d = nb - 1; d >= 0 && ++idx[d] == tc->dims[d]; d--) idx[d] = 0;
  }
  if (count > 1) L->skew_out_ok = 0;
  snprintf(out->text, sizeof out->text, "%s x%lld", step.lowering ? step.lowering : "gemm",
           (long long)count);
  out->lowering = out->text;
  out->predicted = predicted;
  return 0;
}
