/* A transpose of a computed mask, sunk into the ops that compute it, for the partition pass.
 *
 * Hugging Face's MoE dispatch permutes the one-hot of the top-k indices,
 *
 *   expert_mask = one_hot(sel [T, k], N).permute(2, 1, 0)           # [N, k, T]
 *
 * and a Switch layer's dispatch einsum transposes its [T, N, C] mask. The importer writes the
 * one-hot as compares and wheres of reshape(sel) -> [T, k, 1] against a constant [1, 1, N]; a
 * rank-3 tensor's tokens lie in its first dim, which partition's rule keeps whole on every PE,
 * so the transpose (of other dims than the last two) and the reshape both gather the tensor
 * whole (lower_reshape_whole.c: at most 4096 words, padding included; 64 tokens of top-2 over
 * 8 experts on 8x8 is past it).
 *
 * An elementwise op commutes with a transpose: transpose(f(a, b)) = f(transpose(a),
 * transpose(b)), broadcasting alike. So the transpose moves to the chain's leaves:
 *   - a constant with at most one dim past 1: the same data under the permuted dims (a new
 *     global, the original kept for its other readers);
 *   - reshape(L) of a value L of rank 2 or less whose dims past 1 the reshape keeps in order
 *     (it only inserts 1s): reshape(L) to the permuted dims when the permutation keeps those
 *     dims in order, else reshape(transpose(L)), a transpose of a matrix's two dims;
 *   - a value whose dims are all 1 (or rank 0): as it is.
 * The chain is rebuilt on the permuted leaves (the original stays for its other readers) and
 * replaces the transpose. Chains of at most 16 ops; any other leaf leaves the transpose alone.
 * With the one-hot's N in the first dim, no op of the chain moves data between PEs. */
#include <stdio.h>

#include "passes/decompose.h"
#include "waferc/diag.h"

#define MAX_CHAIN 16

typedef struct sink {
  wf_module *m;
  wf_func *f;
  wf_op *at; /* new ops go before it */
  int rank;
  int perm[WF_MAX_RANK];
  int n_ops;
  wf_value from[4 * MAX_CHAIN], to[4 * MAX_CHAIN]; /* values already made transposed */
  int n_made;
} sink;

/* The positions of t's dims past 1, seen as rank r (right-aligned); their count. */
static int big_dims(const wf_type *t, int r, int *pos) {
  int n = 0;
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] != 1) pos[n++] = d + (r - t->rank);
  return n;
}

/* t (right-aligned to rank s->rank) with its dims permuted: result dim j = t's dim perm[j]. */
static wf_type permuted(const sink *s, const wf_type *t) {
  wf_type r = wf_rewrite_type(t);
  int64_t d[WF_MAX_RANK];
  for (int j = 0; j < s->rank; j++) {
    int k = s->perm[j] - (s->rank - t->rank);
    d[j] = k >= 0 ? t->dims[k] : 1;
  }
  r.rank = s->rank;
  for (int j = 0; j < s->rank; j++) r.dims[j] = d[j];
  return r;
}

/* Whether the permutation keeps the dims at positions pos (ascending) in order. */
static int keeps_order(const sink *s, const int *pos, int n) {
  int inv[WF_MAX_RANK], last = -1;
  for (int j = 0; j < s->rank; j++) inv[s->perm[j]] = j;
  for (int i = 0; i < n; i++) {
    if (inv[pos[i]] < last) return 0;
    last = inv[pos[i]];
  }
  return 1;
}

/* transpose(v) {perm = [1, 0]} of type t, before at. */
static wf_value matrix_transpose(wf_func *f, wf_op *at, wf_value v, wf_type t, wf_loc loc) {
  wf_value r = wf_op_insert_new(f, at, WF_OP_TRANSPOSE, 1, &v, t, loc);
  int64_t p[2] = {1, 0};
  wf_op_set_ints(f, f->values[r].def, "perm", 2, p);
  return r;
}

/* Whether v can be made transposed (dry: build = 0), or v made so (build = 1): the new value,
 * or 0. */
static wf_value sunk_new(sink *s, wf_value v, int build);

static wf_value sunk(sink *s, wf_value v, int build) {
  for (int i = 0; build && i < s->n_made; i++)
    if (s->from[i] == v) return s->to[i];
  wf_value r = sunk_new(s, v, build);
  if (build && r && s->n_made < 4 * MAX_CHAIN) s->from[s->n_made] = v, s->to[s->n_made++] = r;
  return r;
}

static wf_value sunk_new(sink *s, wf_value v, int build) {
  const wf_value_info *vi = &s->f->values[v];
  const wf_type *t = &vi->type;
  int pos[WF_MAX_RANK];
  if (t->rank > s->rank) return 0;
  int nb = big_dims(t, s->rank, pos);
  if (nb == 0) return v; /* all 1: broadcasts as it is */
  if (vi->kind == WF_VAL_GLOBAL) {
    if (nb > 1) return 0;
    if (!build) return v;
    wf_module *m = s->m;
    const wf_global *src = &m->globals[vi->index];
    char name[128];
    snprintf(name, sizeof name, "%s_t", wf_str(m, src->name));
    for (int i = 1; wf_module_find_global(m, name) >= 0; i++) snprintf(name, sizeof name, "%s_t.%d", wf_str(m, src->name), i);
    int g = wf_module_add_global(m, name, permuted(s, t), src->loc);
    src = &m->globals[vi->index]; /* the table may have moved */
    m->globals[g].kind = src->kind;
    m->globals[g].data = src->data;
    m->globals[g].path = src->path;
    m->globals[g].offset = src->offset;
    return wf_func_global_value(s->f, g);
  }
  if (vi->kind != WF_VAL_RESULT || !vi->def || ++s->n_ops > MAX_CHAIN) return 0;
  wf_op *d = vi->def;
  if (d->code == WF_OP_RESHAPE) {
    wf_value l = d->operands[0];
    const wf_type *lt = wf_value_type(s->f, l);
    int lpos[WF_MAX_RANK];
    if (lt->rank > 2 || big_dims(lt, lt->rank, lpos) != nb) return 0;
    for (int i = 0; i < nb; i++)
      if (lt->dims[lpos[i]] != t->dims[pos[i] - (s->rank - t->rank)]) return 0;
    int keep = keeps_order(s, pos, nb);
    if (!keep && (nb != 2 || lt->rank != 2)) return 0;
    if (!build) return v;
    wf_value src = l;
    if (!keep) {
      wf_type tt = wf_rewrite_type(lt);
      tt.dims[0] = lt->dims[1], tt.dims[1] = lt->dims[0];
      src = matrix_transpose(s->f, s->at, l, tt, d->loc);
    }
    return wf_op_insert_new(s->f, s->at, WF_OP_RESHAPE, 1, &src, permuted(s, t), d->loc);
  }
  if (!(wf_opinfos[d->code].flags & WF_OPF_ELEMENTWISE) || d->n_results != 1) return 0;
  wf_value ops[8];
  if (d->n_operands > 8) return 0;
  for (int k = 0; k < d->n_operands; k++)
    if (!(ops[k] = sunk(s, d->operands[k], build))) return 0;
  if (!build) return v;
  wf_type rt = permuted(s, t);
  wf_op *n = wf_op_new(s->f, d->code, d->n_operands, ops, 1, &rt, d->loc);
  for (int a = 0; a < d->n_attrs; a++) wf_op_set_attr(s->f, n, d->attrs[a]);
  wf_op_insert_before(s->f, s->at, n);
  return n->results[0];
}

/* op's operand, a computed chain (not a reshape), made permuted by s: the new value, or 0. */
static wf_value permuted_chain(sink *s, const wf_op *op) {
  const wf_value_info *vi = &s->f->values[op->operands[0]];
  if (vi->kind != WF_VAL_RESULT || !vi->def || vi->def->code == WF_OP_RESHAPE) return 0;
  if (!sunk(s, op->operands[0], 0)) return 0;
  s->n_ops = 0;
  wf_value v = sunk(s, op->operands[0], 1);
  WF_ASSERT(v);
  return v;
}

/* op's result replaced by v (keeping its name), op and the ops left dead removed. */
static void replace_op(wf_func *f, wf_op *op, wf_value v) {
  wf_value_replace_named(f, op->results[0], v);
  wf_op_unlink(f, op);
  wf_func_remove_dead_ops(f);
}

/* The transpose at op sunk: 1, else 0. Only a permutation that moves the first dim (the ones
 * lowered by gathering whole) of a rank-3 or higher computed chain. */
static int sink_transpose(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_TRANSPOSE) return 0;
  const wf_type *t = wf_value_type(f, op->operands[0]);
  int n;
  const wf_attr *pa = wf_op_attr(f, op, "perm");
  if (t->rank < 3 || !pa || (n = pa->u.ints.n) != t->rank) return 0;
  sink s = {m, f, op, t->rank, {0}, 0, {0}, {0}, 0};
  for (int j = 0; j < n; j++) s.perm[j] = (int)pa->u.ints.v[j];
  wf_value v = s.perm[0] != 0 ? permuted_chain(&s, op) : 0;
  if (!v) return 0;
  replace_op(f, op, v);
  return 1;
}

/* The reshape at op, [a, b, c] -> [a, b c] of a computed chain (a Switch layer's combine
 * weights, viewed for its einsum's product), made as transpose(reshape(X permuted to [b, c, a])
 * -> [b c, a]): 1, else 0. Merging b with the split last dim moves every element between PEs
 * (gathered whole); the permuted chain is computed in place, the reshape of [b, c, a] regroups
 * rows keeping the last dim (lower_reshape_rows.c) and the transpose is of a matrix. */
static int sink_flatten(wf_module *m, wf_func *f, wf_op *op) {
  if (op->code != WF_OP_RESHAPE) return 0;
  const wf_type *t = wf_value_type(f, op->operands[0]), *rt = wf_value_type(f, op->results[0]);
  if (t->rank != 3 || rt->rank != 2 || rt->dims[0] != t->dims[0] || rt->dims[1] != t->dims[1] * t->dims[2] ||
      t->dims[1] == 1 || t->dims[2] == 1 || t->dtype != WF_F32)
    return 0;
  sink s = {m, f, op, 3, {1, 2, 0}, 0, {0}, {0}, 0};
  wf_value v = permuted_chain(&s, op);
  if (!v) return 0;
  wf_type rows = wf_rewrite_type(rt);
  rows.dims[0] = rt->dims[1], rows.dims[1] = rt->dims[0];
  wf_value r = wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &v, rows, op->loc);
  replace_op(f, op, matrix_transpose(f, op, r, wf_rewrite_type(rt), op->loc));
  return 1;
}

int wf_partition_sink_transpose(wf_module *m, wf_func *f) {
  int n = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    if (sink_transpose(m, f, op) || sink_flatten(m, f, op)) {
      n++;
      next = f->first; /* dead ops removed */
    }
  }
  return n;
}
