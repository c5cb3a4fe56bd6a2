/* The pattern-matching toolkit of the raising passes (passes/raise.h): the driver, IR
 * queries that never modify anything, and the three rewriting primitives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/raise.h"

/* ---- use counts -------------------------------------------------------------------------- */

static void ensure_uses(wf_raise *r) {
  uint32_t need = r->f->n_values + 1;
  if (need <= r->cap_uses) return;
  uint32_t cap = need * 2 + 64;
  int32_t *u = wf_arena_alloc(wf_pass_scratch(r->ctx), (size_t)cap * sizeof *u);
  if (r->uses) memcpy(u, r->uses, (size_t)r->cap_uses * sizeof *u);
  r->uses = u;
  r->cap_uses = cap;
}

static int is_linked(const wf_func *f, const wf_op *op) { return op->prev || op->next || f->first == op; }

int wf_raise_run(wf_module *m, wf_pass_ctx *ctx, wf_raise_match_fn match) {
  for (int fi = 0; fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    wf_raise r = {m, f, ctx, NULL, 0, 0};
    ensure_uses(&r);
    int n = 0;
    wf_func_foreach_op(f, op) {
      n++;
      for (int i = 0; i < op->n_operands; i++) r.uses[op->operands[i]]++;
    }
    wf_op **ops = wf_arena_alloc(wf_pass_scratch(ctx), (size_t)(n ? n : 1) * sizeof *ops);
    n = 0;
    wf_func_foreach_op(f, op) ops[n++] = op;
    /* Backward: the outermost root of a pattern is tried before its sub-patterns. Ops a
     * rewrite erased are skipped; ops it created are not roots in this walk. */
    for (int i = n - 1; i >= 0; i--) {
      wf_op *op = ops[i];
      if (op->code == WF_OP_RETURN || !is_linked(f, op)) continue;
      if (match(&r, op)) r.changed = 1;
    }
    if (r.changed) wf_pass_set_changed(ctx);
  }
  return 0;
}

/* ---- queries ----------------------------------------------------------------------------- */

wf_op *wf_raise_def(const wf_raise *r, wf_value v, int code) {
  const wf_value_info *vi = wf_value_get(r->f, v);
  if (vi->kind != WF_VAL_RESULT || !vi->def) return NULL;
  return code < 0 || (int)vi->def->code == code ? vi->def : NULL;
}

int wf_raise_uses(const wf_raise *r, wf_value v) { return v < r->cap_uses ? r->uses[v] : 0; }

const wf_type *wf_raise_type(const wf_raise *r, wf_value v) { return wf_value_type(r->f, v); }

int wf_raise_opcode(const char *name) {
  wf_opcode c;
  return wf_opcode_lookup(name, &c) == 0 ? (int)c : -1;
}

wf_value wf_raise_strip_casts(const wf_raise *r, wf_value v) {
  for (wf_op *c; (c = wf_raise_def(r, v, WF_OP_CAST)) != NULL;) {
    if (wf_raise_type(r, c->operands[0])->dtype != wf_raise_type(r, v)->dtype) break;
    v = c->operands[0];
  }
  return v;
}

wf_op *wf_raise_bin(const wf_raise *r, wf_value v, wf_opcode code, wf_value *a, wf_value *b) {
  wf_op *op = wf_raise_def(r, v, (int)code);
  if (!op || op->n_operands != 2) return NULL;
  *a = op->operands[0];
  *b = op->operands[1];
  return op;
}

int wf_raise_near(double a, double b, double rel) {
  if (a == b) return 1;
  return fabs(a - b) <= rel * fmax(fabs(a), fabs(b));
}

wf_tensor *wf_raise_const_tensor(const wf_raise *r, wf_value v) {
  const wf_value_info *vi = wf_value_get(r->f, v);
  if (vi->kind != WF_VAL_GLOBAL) return NULL;
  wf_global *g = &r->m->globals[vi->index];
  if (g->kind == WF_DATA_ELIDED) return NULL;
  if (g->kind == WF_DATA_FILE && !g->data) {
    /* Only try files that are there: loading reports errors, and a match must not. */
    const char *base = r->m->base_dir && *r->m->base_dir ? r->m->base_dir : ".";
    const char *path = wf_str(r->m, g->path);
    char full[4096];
    snprintf(full, sizeof full, "%s%s%s", path[0] == '/' ? "" : base, path[0] == '/' ? "" : "/", path);
    FILE *fp = fopen(full, "rb");
    if (!fp) return NULL;
    fclose(fp);
  }
  return wf_global_tensor(r->m, vi->index);
}

int wf_raise_scalar(const wf_raise *r, wf_value v, double *out) {
  const wf_type *t = wf_raise_type(r, v);
  if (wf_type_numel(t) < 1 || wf_type_numel(t) > 64 || !wf_dtype_is_float(t->dtype)) return 0;
  wf_tensor *c = wf_raise_const_tensor(r, v);
  if (!c) return 0;
  double x = wf_tensor_get(c, 0);
  int ok = 1;
  for (int64_t i = 1; ok && i < wf_tensor_numel(c); i++) ok = wf_tensor_get(c, i) == x;
  wf_tensor_free(c);
  if (ok) *out = x;
  return ok;
}

double wf_raise_f32_decimal(double v) {
  char buf[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    if ((float)strtod(buf, NULL) == (float)v) return strtod(buf, NULL);
  }
  return v;
}

int wf_raise_is_scalar(const wf_raise *r, wf_value v, double want) {
  double x;
  return wf_raise_scalar(r, v, &x) && wf_raise_near(x, want, 1e-6);
}

int wf_raise_trailing_reduce(const wf_raise *r, const wf_op *red, int *axis) {
  const wf_type *x = wf_raise_type(r, red->operands[0]);
  const wf_attr *a = wf_op_attr(r->f, red, "axes");
  const wf_attr *k = wf_op_attr(r->f, red, "keepdims");
  if (k && k->kind == WF_ATTR_BOOL && k->u.i == 0) return 0;
  if (!a || a->kind != WF_ATTR_INTS || a->u.ints.n == 0) return 0;
  int seen[WF_MAX_RANK] = {0}, lo = x->rank;
  for (int i = 0; i < a->u.ints.n; i++) {
    int64_t ax = a->u.ints.v[i];
    if (ax < -x->rank || ax >= x->rank) return 0;
    int n = (int)(ax < 0 ? ax + x->rank : ax);
    seen[n] = 1;
    if (n < lo) lo = n;
  }
  for (int i = lo; i < x->rank; i++)
    if (!seen[i]) return 0;
  *axis = lo - x->rank;
  return 1;
}

/* Whether ops[j] is the first occurrence of that op in the list. */
static int first_occurrence(wf_op *const *ops, int j) {
  for (int p = 0; p < j; p++)
    if (ops[p] == ops[j]) return 0;
  return 1;
}

int wf_raise_closed(const wf_raise *r, wf_op *const *ops, int n, const wf_op *root) {
  for (int i = 0; i < n; i++) {
    if (ops[i] == root || !first_occurrence(ops, i)) continue;
    for (int k = 0; k < ops[i]->n_results; k++) {
      wf_value v = ops[i]->results[k];
      int inside = 0;
      for (int j = 0; j < n; j++)
        if (first_occurrence(ops, j))
          for (int o = 0; o < ops[j]->n_operands; o++) inside += ops[j]->operands[o] == v;
      if (inside != wf_raise_uses(r, v)) return 0;
    }
  }
  return 1;
}

/* ---- pieces of normalisations ------------------------------------------------------------ */

void wf_raise_push(wf_raise_ops *o, wf_op *op) {
  if (o->n < WF_RAISE_MAX_OPS) o->v[o->n] = op;
  o->n++;
}
#define push wf_raise_push

wf_value wf_raise_peel(const wf_raise *r, wf_value v, wf_raise_ops *o) {
  wf_value s = wf_raise_strip_casts(r, v);
  while (v != s) {
    wf_op *c = wf_raise_def(r, v, WF_OP_CAST);
    push(o, c);
    v = c->operands[0];
  }
  return s;
}

int wf_raise_ops_ok(const wf_raise_ops *o) { return o->n <= WF_RAISE_MAX_OPS; }

int wf_raise_rsqrt_of(const wf_raise *r, wf_value v, wf_value *var, wf_raise_ops *o) {
  wf_op *op;
  wf_value a, b;
  if ((op = wf_raise_def(r, v, WF_OP_RSQRT))) {
    push(o, op);
    *var = op->operands[0];
    return 1;
  }
  wf_value s = WF_NO_VALUE;
  if ((op = wf_raise_def(r, v, WF_OP_RECIPROCAL))) s = op->operands[0];
  else if ((op = wf_raise_bin(r, v, WF_OP_DIV, &a, &b)) && wf_raise_is_scalar(r, a, 1.0)) s = b;
  wf_op *sq = s ? wf_raise_def(r, s, WF_OP_SQRT) : NULL;
  if (!sq) return 0;
  push(o, op);
  push(o, sq);
  *var = sq->operands[0];
  return 1;
}

int wf_raise_normalised(const wf_raise *r, wf_value v, wf_value *num, wf_value *var, wf_raise_ops *o) {
  wf_value a, b;
  wf_op *op;
  int n0 = o->n;
  if ((op = wf_raise_bin(r, v, WF_OP_DIV, &a, &b))) {
    wf_op *sq = wf_raise_def(r, b, WF_OP_SQRT);
    if (!sq) return 0;
    push(o, op);
    push(o, sq);
    *num = a;
    *var = sq->operands[0];
    return 1;
  }
  if (!(op = wf_raise_bin(r, v, WF_OP_MUL, &a, &b))) return 0;
  push(o, op);
  for (int side = 0; side < 2; side++) {
    if (wf_raise_rsqrt_of(r, side ? a : b, var, o)) {
      *num = side ? b : a;
      return 1;
    }
  }
  o->n = n0;
  return 0;
}

int wf_raise_mean_plus_eps(const wf_raise *r, wf_value var, wf_value *sq, double *eps, int *axis,
                           wf_raise_ops *o) {
  wf_value a, b;
  wf_op *add = wf_raise_bin(r, var, WF_OP_ADD, &a, &b);
  if (!add) return 0;
  for (int side = 0; side < 2; side++) {
    wf_value m = side ? b : a, e = side ? a : b;
    wf_op *red = wf_raise_def(r, wf_raise_strip_casts(r, m), WF_OP_REDUCE_MEAN);
    if (!red || !wf_raise_scalar(r, e, eps) || !(*eps >= 0.0)) continue;
    if (!wf_raise_trailing_reduce(r, red, axis)) continue;
    if (!wf_raise_same_shape(r, add->results[0], m)) continue; /* eps must not broadcast it */
    push(o, add);
    push(o, red);
    *sq = red->operands[0];
    return 1;
  }
  return 0;
}

int wf_raise_square_of(const wf_raise *r, wf_value v, wf_value *y, wf_raise_ops *o) {
  wf_value a, b;
  wf_op *op;
  if ((op = wf_raise_bin(r, v, WF_OP_POW, &a, &b)) && wf_raise_is_scalar(r, b, 2.0) &&
      wf_raise_same_shape(r, op->results[0], a)) {
    push(o, op);
    *y = wf_raise_strip_casts(r, a);
    return 1;
  }
  if ((op = wf_raise_bin(r, v, WF_OP_MUL, &a, &b)) &&
      wf_raise_strip_casts(r, a) == wf_raise_strip_casts(r, b)) {
    push(o, op);
    *y = wf_raise_strip_casts(r, a);
    return 1;
  }
  return 0;
}

wf_value wf_raise_norm_param(wf_raise *r, wf_op *root, wf_value p, wf_value x, int axis) {
  const wf_type *pt = wf_raise_type(r, p), *xt = wf_raise_type(r, x);
  int nr = -axis, lead = 0;
  if (pt->dtype != xt->dtype) return WF_NO_VALUE;
  while (lead < pt->rank && pt->rank - lead > nr && pt->dims[lead] == 1) lead++;
  if (pt->rank - lead > nr) return WF_NO_VALUE;
  for (int i = lead; i < pt->rank; i++) {
    int64_t d = pt->dims[i], e = xt->dims[xt->rank - (pt->rank - i)];
    if (d != e && d != 1) return WF_NO_VALUE;
  }
  if (!root || lead == 0) return p;
  wf_type t = wf_type_make(pt->dtype, pt->rank - lead, pt->dims + lead);
  return wf_raise_build(r, root, WF_OP_RESHAPE, 1, &p, &t)->results[0];
}

int wf_raise_same_shape(const wf_raise *r, wf_value a, wf_value b) {
  return wf_type_same_shape(wf_raise_type(r, a), wf_raise_type(r, b));
}

/* ---- rewriting --------------------------------------------------------------------------- */

wf_op *wf_raise_build(wf_raise *r, wf_op *root, wf_opcode code, int n, const wf_value *operands,
                      const wf_type *type) {
  wf_type t = type ? *type : *wf_raise_type(r, root->results[0]);
  wf_op *op = wf_op_new(r->f, code, n, operands, 1, &t, root->loc);
  /* the raised value keeps the name of the one it replaces (dumps and --interpret outputs) */
  if (!type) wf_value_get(r->f, op->results[0])->name = wf_value_get(r->f, root->results[0])->name;
  wf_op_insert_before(r->f, root, op);
  ensure_uses(r);
  for (int i = 0; i < n; i++) r->uses[operands[i]]++;
  return op;
}

static void erase_if_dead(wf_raise *r, wf_op *op) {
  if (!(wf_opinfos[op->code].flags & WF_OPF_PURE) || !is_linked(r->f, op)) return;
  for (int k = 0; k < op->n_results; k++)
    if (r->uses[op->results[k]] != 0) return;
  wf_op_unlink(r->f, op);
  for (int i = 0; i < op->n_operands; i++) {
    wf_value v = op->operands[i];
    if (--r->uses[v] == 0) {
      wf_op *d = wf_raise_def(r, v, -1);
      if (d) erase_if_dead(r, d);
    }
  }
}

void wf_raise_replace(wf_raise *r, wf_op *root, wf_value by) {
  wf_value from = root->results[0];
  ensure_uses(r);
  wf_func_foreach_op(r->f, op) for (int i = 0; i < op->n_operands; i++) if (op->operands[i] == from) {
      op->operands[i] = by;
      r->uses[by]++;
    }
  r->uses[from] = 0;
  if (wf_value_get(r->f, by)->name == wf_value_get(r->f, from)->name) wf_value_get(r->f, from)->name = 0;
  erase_if_dead(r, root);
}

wf_value wf_raise_splat(wf_raise *r, wf_dtype dt, int rank, const int64_t *dims, double value,
                        const char *what) {
  char name[256];
  size_t k = (size_t)snprintf(name, sizeof name, "raise.%s.%s", what, wf_dtype_name(dt));
  for (int i = 0; i < rank && k < sizeof name; i++)
    k += (size_t)snprintf(name + k, sizeof name - k, "%s%lld", i ? "x" : ".", (long long)dims[i]);
  wf_type t = wf_type_make(dt, rank, dims);
  int g = wf_module_find_global(r->m, name);
  if (g < 0 || !wf_type_same_shape(&r->m->globals[g].type, &t)) {
    g = wf_module_add_global(r->m, name, t, WF_LOC_NONE);
    wf_tensor *one = wf_tensor_new(dt, 0, NULL);
    wf_tensor_set(one, 0, value);
    wf_global *gl = &r->m->globals[g];
    gl->kind = WF_DATA_SPLAT;
    gl->data = wf_arena_dup(r->m->arena, one->data, wf_dtype_size(dt));
    wf_tensor_free(one);
  }
  wf_value v = wf_func_global_value(r->f, g);
  ensure_uses(r);
  return v;
}

