/* How partition lays out a gather's table (docs/partition.md "Embedding tables").
 *
 * A table [V, E] is {V, E_x}: every PE holds all V rows of its columns, and the lookup is a
 * local copy. Two cases split its rows along y as well, {V_y, E_x}:
 *
 * - An LM head tied to the embedding: one copy of the table serves both (WaferLLM §5.4's
 *   dist-GEMM-T).
 * - A table whose {V, E_x} slice would take more than 1/16 of a PE's SRAM (a vocabulary):
 *   memory first, as a decode step's tables (partition_decode.c).
 *
 *
 * torch exports a tied head as matmul(x, C) where C [E, V] is the embedding table T [V, E]
 * transposed and folded into a constant of its own, so the plan would hold the vocabulary
 * twice: T as the gather's table and C as the head's weight. When C equals Tᵀ bit for bit,
 * the head becomes matmul(x, transpose(T)): lower-gemm turns that into dist.gemm_t(x, T),
 * which multiplies by T as stored (no transpose over the fabric), and symbol-dce drops C.
 *
 * T is then laid out {V_y, E_x}, partition's rule for a matrix and what dist.gemm_t wants
 * for B: every PE holds V/H x E/W of it rather than V x E/W. The gather reads a table with
 * split rows with the ids whole on every PE: each PE looks up the ids whose rows it holds and
 * the rows are summed along the column (backend/ops/lower_index.c). */
#include <string.h>

#include "passes/partition_table.h"
#include "waferc/tensor.h"

/* 1 when global c [E, V] holds exactly the transpose of global t [V, E] (both f32). */
static int is_transpose_of(wf_module *m, int c, int t) {
  const wf_type *ct = &m->globals[c].type, *tt = &m->globals[t].type;
  if (ct->rank != 2 || tt->rank != 2 || ct->dtype != WF_F32 || tt->dtype != WF_F32 ||
      ct->dims[0] != tt->dims[1] || ct->dims[1] != tt->dims[0])
    return 0;
  wf_tensor *a = wf_global_tensor(m, c), *b = a ? wf_global_tensor(m, t) : NULL;
  int same = a && b;
  if (same) {
    const float *ca = a->data, *tb = b->data;
    int64_t e = ct->dims[0], v = ct->dims[1];
    for (int64_t i = 0; same && i < e; i++)
      for (int64_t j = 0; j < v; j++)
        if (memcmp(&ca[i * v + j], &tb[j * e + i], sizeof(float))) {
          same = 0;
          break;
        }
  }
  if (a) wf_tensor_free(a);
  if (b) wf_tensor_free(b);
  return same;
}

int wf_partition_tied_table(wf_module *m, const wf_func *f, int c) {
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_GATHER || f->values[op->operands[0]].kind != WF_VAL_GLOBAL) continue;
    int t = f->values[op->operands[0]].index;
    if (t != c && is_transpose_of(m, c, t)) return t;
  }
  return -1;
}

int wf_partition_tie_heads(wf_module *m, wf_func *f) {
  int n = 0;
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_MATMUL) continue;
    wf_value b = op->operands[1];
    const wf_type *at = wf_value_type(f, op->operands[0]), *bt = wf_value_type(f, b);
    if (f->values[b].kind != WF_VAL_GLOBAL || at->rank < 2 || bt->rank != 2) continue;
    int t = wf_partition_tied_table(m, f, f->values[b].index);
    if (t < 0) continue;
    wf_value tv = wf_func_global_value(f, t);
    wf_type rt;
    memset(&rt, 0, sizeof rt);
    rt.dtype = WF_F32;
    rt.rank = 2;
    rt.dims[0] = bt->dims[0];
    rt.dims[1] = bt->dims[1];
    wf_op *tr = wf_op_new(f, WF_OP_TRANSPOSE, 1, &tv, 1, &rt, op->loc);
    int64_t perm[2] = {1, 0};
    wf_op_set_ints(f, tr, "perm", 2, perm);
    wf_op_insert_before(f, op, tr);
    wf_op_set_operand(f, op, 1, tr->results[0]);
    n++;
  }
  return n;
}

/* A rank-2 transpose with perm [1, 0] whose every use is a matmul's B. */
static int head_transpose(const wf_func *f, const wf_op *op) {
  if (op->code != WF_OP_TRANSPOSE || wf_value_type(f, op->operands[0])->rank != 2) return 0;
  const wf_attr *p = wf_op_attr(f, op, "perm");
  if (!p || p->u.ints.n != 2 || p->u.ints.v[0] != 1 || p->u.ints.v[1] != 0) return 0;
  int uses = 0;
  wf_func_foreach_op(f, u) for (int i = 0; i < u->n_operands; i++) {
    if (u->operands[i] != op->results[0]) continue;
    if (u->code != WF_OP_MATMUL || i != 1) return 0;
    uses++;
  }
  return uses > 0;
}

int wf_partition_table_tied(const wf_func *f, int global) {
  int as_table = 0, as_head = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
    const wf_value_info *vi = &f->values[op->operands[i]];
    if (vi->kind != WF_VAL_GLOBAL || vi->index != global) continue;
    if (op->code == WF_OP_GATHER && i == 0) as_table = 1;
    else if (head_transpose(f, op)) as_head = 1;
    else return 0;
  }
  return as_table && as_head;
}

int wf_partition_table_rows_split(const wf_module *m, const wf_func *f, int global, int w, int h,
                                  int64_t sram_bytes) {
  const wf_type *t = &m->globals[global].type;
  if (h <= 1 || t->rank != 2 || t->dims[0] <= 1) return 0;
  int64_t bytes = t->dims[0] * ((t->dims[1] + w - 1) / w) * 4;
  return bytes * 16 > sram_bytes || wf_partition_table_tied(f, global);
}

int wf_partition_ids_whole(const wf_module *m, const wf_func *f, wf_value ids, int w, int h, int64_t sram_bytes) {
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_GATHER || op->operands[1] != ids) continue;
    const wf_value_info *vi = &f->values[op->operands[0]];
    if (vi->kind == WF_VAL_GLOBAL && wf_partition_table_rows_split(m, f, vi->index, w, h, sram_bytes)) return 1;
  }
  return 0;
}
