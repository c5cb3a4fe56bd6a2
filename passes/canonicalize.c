/* canonicalize: local folds of data-movement ops that do nothing or undo each other.
 *
 *   reshape(x) : T          where x : T              ->  x          (identity-reshape)
 *   reshape(reshape(x))                              ->  reshape(x) (reshape-of-reshape)
 *   transpose(x){perm=[0,1,..]} where types equal    ->  x          (identity-transpose)
 *   transpose(transpose(x){p1}){p2}                  ->  transpose(x){p1[p2[i]]}, or x when
 *                                                        that is the identity
 *                                                        (transpose-of-transpose)
 *   dist.relayout(dist.relayout(x))                  ->  dist.relayout(x), or x when the
 *                                                        layouts match (double-relayout)
 *   slice(topk(x){k = K, sorted}, 0:k' along its axis) ->  topk(x){k = k'} when every use of
 *                                                        the topk is that slice (sorted-topk-
 *                                                        prefix: torch.sort(descending)[..., :k'])
 *
 * One forward walk: operands are first mapped through the replacements made so far (every
 * use follows its definition), so chains fold completely. Inner ops left without uses by a
 * rewrite are erased at the end; other dead code is dce's job. */
#include <string.h>

#include "waferc/pass.h"

typedef struct canon {
  wf_func *f;
  wf_pass_ctx *ctx;
  wf_value *repl;     /* value -> value standing for it */
  wf_op **orphans;    /* ops whose uses a rewrite redirected: erased if dead at the end */
  int n_orphans, cap_orphans;
  int changed;
} canon;

static wf_value resolve(const canon *c, wf_value v) {
  while (c->repl[v] != v) v = c->repl[v];
  return v;
}

static void note_orphan(canon *c, wf_op *op) {
  if (c->n_orphans == c->cap_orphans) {
    int cap = c->cap_orphans ? 2 * c->cap_orphans : 16;
    wf_op **v = wf_arena_alloc(wf_pass_scratch(c->ctx), (size_t)cap * sizeof *v);
    if (c->n_orphans) memcpy(v, c->orphans, (size_t)c->n_orphans * sizeof *v);
    c->orphans = v;
    c->cap_orphans = cap;
  }
  c->orphans[c->n_orphans++] = op;
}

/* `op`'s single result is replaced by `by`; the op is unlinked. */
static void replace_op(canon *c, wf_op *op, wf_value by, const char *stat) {
  c->repl[op->results[0]] = by;
  wf_op_unlink(c->f, op);
  wf_pass_stat_add(c->ctx, stat, 1);
  c->changed = 1;
}

static int same_type(const canon *c, wf_value a, wf_value b) {
  return wf_type_equal(wf_value_type(c->f, a), wf_value_type(c->f, b));
}

static const wf_attr *perm_of(const canon *c, const wf_op *op) {
  const wf_attr *a = wf_op_attr(c->f, op, "perm");
  return a && a->kind == WF_ATTR_INTS ? a : NULL;
}

static int is_identity_perm(const int64_t *p, int n) {
  for (int i = 0; i < n; i++)
    if (p[i] != i) return 0;
  return 1;
}

/* op(inner(x)) -> op(x) for ops where applying `inner` first makes no difference. */
static void bypass_inner(canon *c, wf_op *op, wf_op *inner, const char *stat) {
  wf_value x = inner->operands[0];
  if (same_type(c, x, op->results[0])) {
    replace_op(c, op, x, stat);
  } else {
    wf_op_set_operand(c->f, op, 0, x);
    wf_pass_stat_add(c->ctx, stat, 1);
    c->changed = 1;
  }
  note_orphan(c, inner);
}

static void fold_transpose(canon *c, wf_op *op) {
  const wf_attr *p2 = perm_of(c, op);
  if (!p2) return;
  wf_op *inner = wf_def_of(c->f, op->operands[0], WF_OP_TRANSPOSE);
  const wf_attr *p1 = inner ? perm_of(c, inner) : NULL;
  if (p1 && p1->u.ints.n == p2->u.ints.n) {
    int n = p2->u.ints.n;
    int64_t q[WF_MAX_RANK];
    if (n > WF_MAX_RANK) return;
    for (int i = 0; i < n; i++) {
      int64_t k = p2->u.ints.v[i];
      if (k < 0 || k >= n) return; /* malformed (the verifier would say so); leave it */
      q[i] = p1->u.ints.v[k];
    }
    wf_value x = inner->operands[0];
    if (is_identity_perm(q, n) && same_type(c, x, op->results[0])) {
      replace_op(c, op, x, "transpose-of-transpose");
    } else {
      wf_op_set_operand(c->f, op, 0, x);
      wf_op_set_ints(c->f, op, "perm", n, q);
      wf_pass_stat_add(c->ctx, "transpose-of-transpose", 1);
      c->changed = 1;
    }
    note_orphan(c, inner);
    return;
  }
  if (is_identity_perm(p2->u.ints.v, p2->u.ints.n) && same_type(c, op->operands[0], op->results[0]))
    replace_op(c, op, op->operands[0], "identity-transpose");
}

static void canon_op(canon *c, wf_op *op) {
  if (op->n_operands != 1 || op->n_results != 1) return;
  switch (op->code) {
  case WF_OP_RESHAPE: {
    wf_op *inner = wf_def_of(c->f, op->operands[0], WF_OP_RESHAPE);
    if (inner) bypass_inner(c, op, inner, "reshape-of-reshape");
    else if (same_type(c, op->operands[0], op->results[0])) replace_op(c, op, op->operands[0], "identity-reshape");
    break;
  }
  case WF_OP_TRANSPOSE:
    fold_transpose(c, op);
    break;
  case WF_OP_DIST_RELAYOUT: {
    wf_op *inner = wf_def_of(c->f, op->operands[0], WF_OP_DIST_RELAYOUT);
    if (inner) bypass_inner(c, op, inner, "double-relayout");
    break;
  }
  default:
    break;
  }
}

/* End k' of a slice reading the first k' entries of the topk that defines its operand, along
 * the topk's axis (start 0, step 1); 0 when op is not such a slice. */
static int64_t topk_prefix(const canon *c, const wf_op *op) {
  const wf_func *f = c->f;
  const wf_op *tk = op->code == WF_OP_SLICE ? wf_def_of(f, op->operands[0], WF_OP_TOPK) : NULL;
  if (!tk) return 0;
  const wf_attr *st = wf_op_attr(f, op, "starts"), *en = wf_op_attr(f, op, "ends"), *ax = wf_op_attr(f, op, "axes"),
                *sp = wf_op_attr(f, op, "steps");
  const wf_attr *one[4] = {st, en, ax, sp};
  for (int i = 0; i < 4; i++)
    if (one[i] && (one[i]->kind != WF_ATTR_INTS || one[i]->u.ints.n != 1)) return 0;
  if (!st || !en || !ax || st->u.ints.v[0] != 0 || (sp && sp->u.ints.v[0] != 1)) return 0;
  int rank = wf_value_type(f, op->operands[0])->rank;
  int64_t a = ax->u.ints.v[0], ta = wf_op_int(f, tk, "axis", -1);
  if ((a < 0 ? a + rank : a) != (ta < 0 ? ta + rank : ta)) return 0;
  int64_t e = en->u.ints.v[0];
  return e > 0 && e < wf_op_int(f, tk, "k", 0) ? e : 0;
}

/* A sorted topk whose results are only read through prefix slices of one length k' becomes
 * a topk of k': the first k' of the K largest, in order, are the k' largest (ties go to the
 * lower index either way). Before layouts only. */
static void narrow_sorted_topk(canon *c) {
  wf_func *f = c->f;
  /* per value: 0 unused, k' read only through prefix slices of k', -1 read otherwise */
  int64_t *end = wf_arena_alloc(wf_pass_scratch(c->ctx), (size_t)(f->n_values + 1) * sizeof *end);
  char *ret = wf_arena_alloc(wf_pass_scratch(c->ctx), (size_t)f->n_values + 1); /* zeroed */
  const wf_op *rop = wf_func_return(f); /* a returned slice keeps its name as an output: it stays */
  for (int i = 0; rop && i < rop->n_operands; i++) ret[rop->operands[i]] = 1;
  wf_func_foreach_op(f, op) {
    int64_t e = topk_prefix(c, op);
    if (e && ret[op->results[0]]) e = 0;
    for (int i = 0; i < op->n_operands; i++) {
      wf_value v = op->operands[i];
      end[v] = i || !e || (end[v] && end[v] != e) ? -1 : e;
    }
  }
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_TOPK || op->n_results != 2 || !wf_op_int(f, op, "sorted", 1)) continue;
    int64_t e0 = end[op->results[0]], e1 = end[op->results[1]], e = e0 ? e0 : e1;
    if (e0 < 0 || e1 < 0 || !e || (e1 && e1 != e)) continue;
    const wf_type *t = wf_value_type(f, op->results[0]);
    if (t->layout.rank || wf_value_type(f, op->operands[0])->layout.rank) continue;
    int64_t ax = wf_op_int(f, op, "axis", -1);
    int a = (int)(ax < 0 ? ax + t->rank : ax);
    wf_op_set_int(f, op, "k", e);
    for (int r = 0; r < 2; r++) f->values[op->results[r]].type.dims[a] = e;
  }
  for (wf_op *op = f->first, *next; op; op = next) { /* the slices, now of the whole topk */
    next = op->next;
    wf_value v = op->n_operands ? op->operands[0] : 0;
    if (op->code == WF_OP_SLICE && end[v] > 0 && wf_def_of(f, v, WF_OP_TOPK) && same_type(c, v, op->results[0]))
      replace_op(c, op, v, "sorted-topk-prefix");
  }
}

static void erase_orphans(canon *c) {
  wf_func *f = c->f;
  int32_t *uses = wf_arena_alloc(wf_pass_scratch(c->ctx), (size_t)(f->n_values + 1) * sizeof *uses);
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]++;
  /* Later orphans use earlier ones, so erasing from the back frees whole chains. */
  for (int k = c->n_orphans - 1; k >= 0; k--) {
    wf_op *op = c->orphans[k];
    int used = 0;
    for (int r = 0; r < op->n_results; r++) used |= uses[op->results[r]] != 0;
    if (used || !(op->prev || op->next || f->first == op)) continue; /* live, or already erased */
    for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]--;
    wf_op_unlink(f, op);
  }
}

static int canon_func(wf_func *f, wf_pass_ctx *ctx) {
  canon c = {f, ctx, NULL, NULL, 0, 0, 0};
  c.repl = wf_arena_alloc(wf_pass_scratch(ctx), (size_t)(f->n_values + 1) * sizeof *c.repl);
  for (uint32_t v = 0; v <= f->n_values; v++) c.repl[v] = v;
  narrow_sorted_topk(&c);
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    for (int i = 0; i < op->n_operands; i++) {
      wf_value v = resolve(&c, op->operands[i]);
      if (v != op->operands[i]) wf_op_set_operand(f, op, i, v);
    }
    canon_op(&c, op);
  }
  erase_orphans(&c);
  return c.changed;
}

static int canon_run(wf_module *m, wf_pass_ctx *ctx) {
  int changed = 0;
  for (int i = 0; i < m->n_funcs; i++) changed |= canon_func(m->funcs[i], ctx);
  if (changed) wf_pass_set_changed(ctx);
  return 0;
}

static const char *const canon_stats[] = {
    "identity-reshape", "reshape-of-reshape", "identity-transpose", "transpose-of-transpose", "double-relayout",
    "sorted-topk-prefix",
};

const wf_pass_info wf_pass_canonicalize = {
    "canonicalize",
    "Fold identity and back-to-back reshapes, transposes and relayouts",
    NULL,
    0,
    canon_stats,
    (int)(sizeof canon_stats / sizeof canon_stats[0]),
    canon_run,
};
