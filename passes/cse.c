/* cse: common subexpression elimination. Two ops compute the same value when they have the
 * same kind, the same operands, the same attributes (in any order) and the same result
 * types, layouts included; every op but `return` is pure (ops.def), so the later one is
 * replaced by the earlier, which dominates it (a function body is one block in SSA order).
 * Constants count as equal operands when they are equal by value: same type and kind and the
 * same bytes (so -0.0 and 0.0 differ), or the same file<> reference. The merged constants
 * are left for symbol-dce. */
#include <stdlib.h>
#include <string.h>

#include "waferc/pass.h"

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211u; }

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = mix(h, p[i]);
  return h;
}

/* ---- constants equal by value ------------------------------------------------------- */

static size_t global_bytes(const wf_global *g) {
  return g->kind == WF_DATA_SPLAT ? wf_dtype_size(g->type.dtype) : wf_type_bytes(&g->type);
}

static int same_global(const wf_module *m, const wf_global *a, const wf_global *b) {
  if (a->kind != b->kind || !wf_type_equal(&a->type, &b->type)) return 0;
  switch (a->kind) {
  case WF_DATA_INLINE:
  case WF_DATA_SPLAT: return a->data && b->data && memcmp(a->data, b->data, global_bytes(a)) == 0;
  case WF_DATA_FILE: return a->path == b->path && a->offset == b->offset && wf_str(m, a->path)[0];
  default: return 0; /* elided: no data to compare */
  }
}

/* rep[g]: the first constant equal to g by value (g itself if none). Returns how many differ. */
static int64_t find_equal_globals(const wf_module *m, int *rep) {
  uint64_t *h = malloc(((size_t)m->n_globals + 1) * sizeof *h);
  WF_ASSERT(h != NULL);
  int64_t merged = 0;
  for (int g = 0; g < m->n_globals; g++) {
    const wf_global *gl = &m->globals[g];
    h[g] = mix(1469598103934665603u, (uint64_t)gl->kind);
    if ((gl->kind == WF_DATA_INLINE || gl->kind == WF_DATA_SPLAT) && gl->data)
      h[g] = hash_bytes(h[g], gl->data, global_bytes(gl));
    rep[g] = g;
    for (int e = 0; e < g; e++)
      if (rep[e] == e && h[e] == h[g] && same_global(m, &m->globals[e], gl)) {
        rep[g] = e;
        merged++;
        break;
      }
  }
  free(h);
  return merged;
}

/* ---- ops ---------------------------------------------------------------------------- */

static int same_attr(const wf_attr *a, const wf_attr *b) {
  if (a->name != b->name || a->kind != b->kind) return 0;
  switch (a->kind) {
  case WF_ATTR_INT:
  case WF_ATTR_BOOL: return a->u.i == b->u.i;
  case WF_ATTR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
  case WF_ATTR_STR:
  case WF_ATTR_IDENT: return a->u.s == b->u.s;
  case WF_ATTR_INTS:
    return a->u.ints.n == b->u.ints.n &&
           (a->u.ints.n == 0 || memcmp(a->u.ints.v, b->u.ints.v, (size_t)a->u.ints.n * sizeof(int64_t)) == 0);
  case WF_ATTR_FLOATS:
    return a->u.floats.n == b->u.floats.n &&
           (a->u.floats.n == 0 || memcmp(a->u.floats.v, b->u.floats.v, (size_t)a->u.floats.n * sizeof(double)) == 0);
  }
  return 0;
}

static int same_op(const wf_func *f, const wf_op *a, const wf_op *b) {
  if (a->code != b->code || a->n_operands != b->n_operands || a->n_results != b->n_results ||
      a->n_attrs != b->n_attrs)
    return 0;
  for (int i = 0; i < a->n_operands; i++)
    if (a->operands[i] != b->operands[i]) return 0;
  for (int i = 0; i < a->n_results; i++)
    if (!wf_type_equal(wf_value_type(f, a->results[i]), wf_value_type(f, b->results[i]))) return 0;
  for (int i = 0; i < a->n_attrs; i++) { /* attribute names are unique within an op */
    int found = 0;
    for (int j = 0; j < b->n_attrs && !found; j++) found = same_attr(&a->attrs[i], &b->attrs[j]);
    if (!found) return 0;
  }
  return 1;
}

/* Operands in order and attribute names (order-free); values are compared by same_op. */
static uint64_t op_hash(const wf_op *op) {
  uint64_t h = mix(mix(1469598103934665603u, (uint64_t)op->code), (uint64_t)op->n_results);
  for (int i = 0; i < op->n_operands; i++) h = mix(h, op->operands[i]);
  uint64_t names = 0;
  for (int i = 0; i < op->n_attrs; i++) names += mix(0, op->attrs[i].name) + op->attrs[i].kind;
  return mix(h, names);
}

static int anonymous(const wf_func *f, wf_value v) {
  const char *s = wf_str(f->module, f->values[v].name);
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

typedef struct op_table {
  wf_op **slot;
  uint64_t *hash;
  size_t cap;
} op_table;

static int64_t cse_func(wf_func *f, const int *rep) {
  const wf_module *m = f->module;
  /* Global values first: wf_func_global_value may grow the value table. */
  for (uint32_t v = 1; v < f->n_values; v++) {
    const wf_value_info *vi = &f->values[v];
    if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < m->n_globals && rep[vi->index] != vi->index)
      wf_func_global_value(f, rep[vi->index]);
  }
  wf_value *to = calloc((size_t)f->n_values + 1, sizeof *to); /* replacement; 0 = itself */
  WF_ASSERT(to != NULL);
  for (uint32_t v = 1; v < f->n_values; v++) {
    const wf_value_info *vi = &f->values[v];
    if (vi->kind != WF_VAL_GLOBAL || vi->index < 0 || vi->index >= m->n_globals || rep[vi->index] == vi->index)
      continue;
    wf_value r = wf_func_global_value(f, rep[vi->index]);
    if (wf_type_equal(&f->values[r].type, &vi->type)) to[v] = r;
  }

  size_t n_ops = 0;
  wf_func_foreach_op(f, op) n_ops++;
  op_table t = {NULL, NULL, 16};
  while (t.cap < 2 * n_ops) t.cap *= 2;
  t.slot = calloc(t.cap, sizeof *t.slot);
  t.hash = calloc(t.cap, sizeof *t.hash);
  WF_ASSERT(t.slot && t.hash);

  int64_t removed = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    for (int i = 0; i < op->n_operands; i++)
      if (to[op->operands[i]]) op->operands[i] = to[op->operands[i]];
    if (op->code == WF_OP_RETURN || op->n_results == 0 || !(wf_opinfos[op->code].flags & WF_OPF_PURE)) continue;
    uint64_t h = op_hash(op);
    size_t i = (size_t)h & (t.cap - 1);
    while (t.slot[i] && !(t.hash[i] == h && same_op(f, t.slot[i], op))) i = (i + 1) & (t.cap - 1);
    if (!t.slot[i]) {
      t.slot[i] = op;
      t.hash[i] = h;
      continue;
    }
    const wf_op *kept = t.slot[i];
    for (int r = 0; r < op->n_results; r++) {
      wf_value dead = op->results[r], live = kept->results[r];
      to[dead] = live;
      /* Keep a name the model gave (an output's name) when the survivor has none. */
      if (anonymous(f, live) && !anonymous(f, dead)) f->values[live].name = f->values[dead].name;
    }
    wf_op_unlink(f, op);
    removed++;
  }
  free(t.slot);
  free(t.hash);
  free(to);
  return removed;
}

static int cse_run(wf_module *m, wf_pass_ctx *ctx) {
  int *rep = malloc(((size_t)m->n_globals + 1) * sizeof *rep);
  WF_ASSERT(rep != NULL);
  int64_t merged = find_equal_globals(m, rep), removed = 0;
  for (int i = 0; i < m->n_funcs; i++) removed += cse_func(m->funcs[i], rep);
  free(rep);
  if (merged) wf_pass_stat_add(ctx, "constants-merged", merged);
  if (removed) wf_pass_stat_add(ctx, "ops-removed", removed);
  if (merged || removed) wf_pass_set_changed(ctx);
  return 0;
}

static const char *const cse_stats[] = {"ops-removed", "constants-merged"};

const wf_pass_info wf_pass_cse = {
    "cse", "Merge ops with the same kind, operands and attributes, and constants equal by value",
    NULL, 0, cse_stats, 2, cse_run,
};
