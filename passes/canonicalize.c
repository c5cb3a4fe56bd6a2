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
