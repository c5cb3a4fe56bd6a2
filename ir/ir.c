/* The IR core: interned strings, modules, functions, values, ops and attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"

/* ---- interned strings: open-addressing hash of ids into an arena-backed string array ---- */

typedef struct wf_strtab {
  const char **strs; /* id -> string; strs[0] = "" */
  uint32_t n, cap;
  uint32_t *slots;   /* hash slots holding ids; 0 = empty */
  uint32_t n_slots;  /* power of two */
} wf_strtab;

static uint32_t hash_bytes(const char *s, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q && n) wf_internal_error(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
  return q;
}

static void strtab_grow_slots(wf_strtab *t) {
  uint32_t ns = t->n_slots ? t->n_slots * 2 : 256;
  uint32_t *slots = calloc(ns, sizeof *slots);
  if (!slots) wf_internal_error(__FILE__, __LINE__, "out of memory");
  for (uint32_t id = 1; id < t->n; id++) {
    uint32_t h = hash_bytes(t->strs[id], strlen(t->strs[id])) & (ns - 1);
    while (slots[h]) h = (h + 1) & (ns - 1);
    slots[h] = id;
  }
  free(t->slots);
  t->slots = slots;
  t->n_slots = ns;
}

uint32_t wf_intern_n(wf_module *m, const char *s, size_t n) {
  wf_strtab *t = m->strtab;
  if (n == 0) return 0;
  if ((t->n + 1) * 2 > t->n_slots) strtab_grow_slots(t);
  uint32_t h = hash_bytes(s, n) & (t->n_slots - 1);
  for (; t->slots[h]; h = (h + 1) & (t->n_slots - 1)) {
    const char *c = t->strs[t->slots[h]];
    if (strncmp(c, s, n) == 0 && c[n] == 0) return t->slots[h];
  }
  if (t->n == t->cap) {
    t->cap *= 2;
    t->strs = xrealloc(t->strs, t->cap * sizeof *t->strs);
  }
  char *copy = wf_arena_alloc(m->arena, n + 1);
  memcpy(copy, s, n);
  t->strs[t->n] = copy;
  t->slots[h] = t->n;
  return t->n++;
}

uint32_t wf_intern(wf_module *m, const char *s) { return s ? wf_intern_n(m, s, strlen(s)) : 0; }

const char *wf_str(const wf_module *m, uint32_t id) {
  WF_ASSERT(id < m->strtab->n);
  return m->strtab->strs[id];
}

/* ---- module ---- */

wf_module *wf_module_new(void) {
  wf_module *m = calloc(1, sizeof *m);
  if (!m) wf_internal_error(__FILE__, __LINE__, "out of memory");
  m->arena = wf_arena_new();
  m->strtab = calloc(1, sizeof *m->strtab);
  WF_ASSERT(m->strtab);
  m->strtab->cap = 256;
  m->strtab->strs = xrealloc(NULL, m->strtab->cap * sizeof(char *));
  m->strtab->strs[0] = "";
  m->strtab->n = 1;
  m->base_dir = ".";
  return m;
}

void wf_module_free(wf_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_funcs; i++) {
    free(m->funcs[i]->values);
    free(m->funcs[i]->global_values);
  }
  free(m->funcs);
  free(m->regions);
  free(m->globals);
  free(m->attrs.v);
  free(m->strtab->strs);
  free(m->strtab->slots);
  free(m->strtab);
  wf_arena_free(m->arena);
  free(m);
}

void wf_module_set_base_dir(wf_module *m, const char *dir) {
  m->base_dir = wf_arena_strdup(m->arena, dir && *dir ? dir : ".");
}

/* Grows a malloc'd array held in (ptr, n, cap) to room for one more element. */
#define WF_GROW(ptr, n, cap)                                    \
  do {                                                          \
    if ((n) == (cap)) {                                         \
      (cap) = (cap) ? (cap) * 2 : 8;                            \
      (ptr) = xrealloc((ptr), (size_t)(cap) * sizeof *(ptr));   \
    }                                                           \
  } while (0)

int wf_module_add_region(wf_module *m, const char *name, int x, int y, int w, int h, wf_loc loc) {
  WF_GROW(m->regions, m->n_regions, m->cap_regions);
  wf_region *r = &m->regions[m->n_regions];
  r->name = wf_intern(m, name);
  r->x = x;
  r->y = y;
  r->w = w;
  r->h = h;
  r->loc = loc;
  return m->n_regions++;
}

int wf_module_find_region(const wf_module *m, const char *name) {
  for (int i = 0; i < m->n_regions; i++)
    if (strcmp(wf_str(m, m->regions[i].name), name) == 0) return i;
  return -1;
}

int wf_module_add_global(wf_module *m, const char *name, wf_type type, wf_loc loc) {
  WF_GROW(m->globals, m->n_globals, m->cap_globals);
  wf_global *g = &m->globals[m->n_globals];
  memset(g, 0, sizeof *g);
  g->name = wf_intern(m, name);
  g->type = type;
  g->kind = WF_DATA_ELIDED;
  g->offset = -1;
  g->loc = loc;
  return m->n_globals++;
}

int wf_module_add_data_global(wf_module *m, const char *base, wf_type type, const void *data) {
  char name[512];
  snprintf(name, sizeof name, "%s", base);
  for (int i = 1; wf_module_find_global(m, name) >= 0; i++) snprintf(name, sizeof name, "%s.%d", base, i);
  int g = wf_module_add_global(m, name, type, WF_LOC_NONE);
  m->globals[g].kind = WF_DATA_INLINE;
  m->globals[g].data = wf_arena_dup(m->arena, data, (size_t)wf_type_numel(&type) * wf_dtype_size(type.dtype));
  return g;
}

int wf_module_find_global(const wf_module *m, const char *name) {
  for (int i = 0; i < m->n_globals; i++)
    if (strcmp(wf_str(m, m->globals[i].name), name) == 0) return i;
  return -1;
}

wf_func *wf_module_find_func(const wf_module *m, const char *name) {
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(wf_str(m, m->funcs[i]->name), name) == 0) return m->funcs[i];
  return NULL;
}

void wf_module_keep_func(wf_module *m, wf_func *f) {
  int kept = 0;
  for (int i = 0; i < m->n_funcs; i++) {
    if (m->funcs[i] == f) {
      kept = 1;
      continue;
    }
    free(m->funcs[i]->values);
    free(m->funcs[i]->global_values);
  }
  WF_ASSERT(kept);
  m->funcs[0] = f;
  m->n_funcs = 1;
}

static void attr_list_set(wf_module *m, wf_attr_list *l, wf_attr a) {
  (void)m;
  for (int i = 0; i < l->n; i++)
    if (l->v[i].name == a.name) {
      l->v[i] = a;
      return;
    }
  l->v = xrealloc(l->v, (size_t)(l->n + 1) * sizeof *l->v);
  l->v[l->n++] = a;
}

void wf_module_set_attr(wf_module *m, wf_attr a) { attr_list_set(m, &m->attrs, a); }

/* ---- functions and values ---- */

wf_func *wf_func_new(wf_module *m, const char *name, wf_loc loc) {
  wf_func *f = wf_arena_alloc(m->arena, sizeof *f);
  f->module = m;
  f->name = wf_intern(m, name);
  f->loc = loc;
  f->cap_values = 64;
  f->values = xrealloc(NULL, f->cap_values * sizeof *f->values);
  memset(&f->values[0], 0, sizeof f->values[0]);
  f->n_values = 1; /* 0 is WF_NO_VALUE */
  WF_GROW(m->funcs, m->n_funcs, m->cap_funcs);
  m->funcs[m->n_funcs++] = f;
  return f;
}

static wf_value value_new(wf_func *f, wf_value_kind kind, const wf_type *t, int index) {
  if (f->n_values == f->cap_values) {
    f->cap_values *= 2;
    f->values = xrealloc(f->values, f->cap_values * sizeof *f->values);
  }
  wf_value v = f->n_values++;
  wf_value_info *vi = &f->values[v];
  memset(vi, 0, sizeof *vi);
  vi->kind = kind;
  vi->type = *t;
  vi->index = index;
  return v;
}

wf_value wf_func_add_arg(wf_func *f, wf_type t, const char *name) {
  wf_value v = value_new(f, WF_VAL_ARG, &t, f->n_args);
  if (name) f->values[v].name = wf_intern(f->module, name);
  wf_value *args = wf_arena_alloc(f->module->arena, (size_t)(f->n_args + 1) * sizeof *args);
  if (f->n_args) memcpy(args, f->args, (size_t)f->n_args * sizeof *args);
  args[f->n_args++] = v;
  f->args = args;
  return v;
}

void wf_func_set_result_types(wf_func *f, int n, const wf_type *types) {
  f->n_results = n;
  f->result_types = n ? wf_arena_dup(f->module->arena, types, (size_t)n * sizeof *types) : NULL;
}

/* One value per global and function, found through an index by global (a model's import
 * asks for thousands of them: a scan of the values each time was quadratic). */
wf_value wf_func_global_value(wf_func *f, int global) {
  WF_ASSERT(global >= 0 && global < f->module->n_globals);
  if (global >= f->cap_global_values) {
    int cap = f->module->n_globals > 2 * global ? f->module->n_globals : 2 * global + 16;
    f->global_values = xrealloc(f->global_values, (size_t)cap * sizeof *f->global_values);
    memset(f->global_values + f->cap_global_values, 0, (size_t)(cap - f->cap_global_values) * sizeof *f->global_values);
    f->cap_global_values = cap;
  }
  wf_value v = f->global_values[global];
  if (v) return v;
  v = value_new(f, WF_VAL_GLOBAL, &f->module->globals[global].type, global);
  f->values[v].name = f->module->globals[global].name;
  f->global_values[global] = v;
  return v;
}

wf_value_info *wf_value_get(const wf_func *f, wf_value v) {
  WF_ASSERT(v != WF_NO_VALUE && v < f->n_values);
  return &f->values[v];
}

wf_op *wf_def_of(const wf_func *f, wf_value v, wf_opcode code) {
  const wf_value_info *vi = wf_value_get(f, v);
  return vi->kind == WF_VAL_RESULT && vi->def && vi->def->code == code ? vi->def : NULL;
}

void wf_value_set_name(wf_func *f, wf_value v, const char *name) {
  wf_value_get(f, v)->name = wf_intern(f->module, name);
}

wf_op *wf_func_return(const wf_func *f) {
  return f->last && f->last->code == WF_OP_RETURN ? f->last : NULL;
}

/* ---- ops ---- */

wf_op *wf_op_new(wf_func *f, wf_opcode code, int n_operands, const wf_value *operands,
                 int n_results, const wf_type *result_types, wf_loc loc) {
  wf_arena *a = f->module->arena;
  wf_op *op = wf_arena_alloc(a, sizeof *op);
  op->code = code;
  op->loc = loc;
  op->n_operands = n_operands;
  if (n_operands) op->operands = wf_arena_dup(a, operands, (size_t)n_operands * sizeof *operands);
  op->n_results = n_results;
  if (n_results) op->results = wf_arena_alloc(a, (size_t)n_results * sizeof *op->results);
  for (int i = 0; i < n_results; i++) {
    op->results[i] = value_new(f, WF_VAL_RESULT, &result_types[i], i);
    f->values[op->results[i]].def = op;
  }
  return op;
}

wf_op *wf_op_append(wf_func *f, wf_opcode code, int n_operands, const wf_value *operands,
                    int n_results, const wf_type *result_types, wf_loc loc) {
  wf_op *op = wf_op_new(f, code, n_operands, operands, n_results, result_types, loc);
  wf_op_insert_before(f, NULL, op);
  return op;
}

wf_value wf_op_insert_new(wf_func *f, wf_op *pos, wf_opcode code, int n_operands, const wf_value *operands,
                          wf_type result, wf_loc loc) {
  wf_op *op = wf_op_new(f, code, n_operands, operands, 1, &result, loc);
  wf_op_insert_before(f, pos, op);
  return op->results[0];
}

wf_value wf_op_insert_slice(wf_func *f, wf_op *pos, wf_value v, wf_type result, int64_t start, int64_t end,
                            int64_t axis, int64_t step, wf_loc loc) {
  wf_value r = wf_op_insert_new(f, pos, WF_OP_SLICE, 1, &v, result, loc);
  wf_op *sl = f->values[r].def;
  wf_op_set_ints(f, sl, "starts", 1, &start);
  wf_op_set_ints(f, sl, "ends", 1, &end);
  wf_op_set_ints(f, sl, "axes", 1, &axis);
  wf_op_set_ints(f, sl, "steps", 1, &step);
  return r;
}

void wf_op_insert_before(wf_func *f, wf_op *pos, wf_op *op) {
  if (!pos) { /* append */
    op->prev = f->last;
    op->next = NULL;
    if (f->last) f->last->next = op;
    else f->first = op;
    f->last = op;
    return;
  }
  op->next = pos;
  op->prev = pos->prev;
  if (pos->prev) pos->prev->next = op;
  else f->first = op;
  pos->prev = op;
}

void wf_op_insert_after(wf_func *f, wf_op *pos, wf_op *op) {
  if (!pos) {
    wf_op_insert_before(f, f->first, op);
    return;
  }
  wf_op_insert_before(f, pos->next, op);
}

void wf_op_unlink(wf_func *f, wf_op *op) {
  if (op->prev) op->prev->next = op->next;
  else f->first = op->next;
  if (op->next) op->next->prev = op->prev;
  else f->last = op->prev;
  op->prev = op->next = NULL;
}

void wf_op_set_operand(wf_func *f, wf_op *op, int i, wf_value v) {
  (void)f;
  WF_ASSERT(i >= 0 && i < op->n_operands);
  op->operands[i] = v;
}

void wf_value_replace_uses(wf_func *f, wf_value from, wf_value to) {
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) if (op->operands[i] == from)
      op->operands[i] = to;
}

void wf_value_replace_named(wf_func *f, wf_value from, wf_value to) {
  wf_value_replace_uses(f, from, to);
  if (f->values[from].name) f->values[to].name = f->values[from].name;
}

int wf_value_use_count(const wf_func *f, wf_value v) {
  int n = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) n += op->operands[i] == v;
  return n;
}

/* One backward walk is enough: in SSA order every use follows its definition, so by the time
 * the walk reaches an op, all of its users have been seen (and removed if dead). */
int64_t wf_func_remove_dead_ops(wf_func *f) {
  int32_t *uses = calloc((size_t)f->n_values + 1, sizeof *uses);
  if (!uses) wf_internal_error(__FILE__, __LINE__, "out of memory");
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]++;
  int64_t removed = 0;
  for (wf_op *op = f->last, *prev; op; op = prev) {
    prev = op->prev;
    if (!(wf_opinfos[op->code].flags & WF_OPF_PURE)) continue;
    int live = 0;
    for (int r = 0; r < op->n_results; r++) live |= uses[op->results[r]] != 0;
    if (live) continue;
    for (int i = 0; i < op->n_operands; i++) uses[op->operands[i]]--;
    wf_op_unlink(f, op);
    removed++;
  }
  free(uses);
  return removed;
}

int64_t wf_module_remove_unused_globals(wf_module *m) {
  if (m->n_globals == 0) return 0;
  char *used = calloc((size_t)m->n_globals, 1);
  int *map = malloc((size_t)m->n_globals * sizeof *map);
  WF_ASSERT(used && map);
  for (int fi = 0; fi < m->n_funcs; fi++) {
    const wf_func *f = m->funcs[fi];
    wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
      const wf_value_info *vi = wf_value_get(f, op->operands[i]);
      if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < m->n_globals) used[vi->index] = 1;
    }
  }
  int k = 0, n_old = m->n_globals;
  for (int g = 0; g < n_old; g++) {
    map[g] = used[g] ? k : -1;
    if (used[g]) m->globals[k++] = m->globals[g];
  }
  m->n_globals = k;
  for (int fi = 0; k < n_old && fi < m->n_funcs; fi++) {
    wf_func *f = m->funcs[fi];
    if (f->cap_global_values) memset(f->global_values, 0, (size_t)f->cap_global_values * sizeof *f->global_values);
    for (uint32_t v = 1; v < f->n_values; v++) {
      wf_value_info *vi = &f->values[v];
      if (vi->kind != WF_VAL_GLOBAL || vi->index < 0 || vi->index >= n_old) continue;
      vi->index = map[vi->index];
      if (vi->index >= 0 && vi->index < f->cap_global_values) f->global_values[vi->index] = v;
    }
  }
  free(used);
  free(map);
  return n_old - k;
}

/* ---- attributes ---- */

void wf_op_set_attr(wf_func *f, wf_op *op, wf_attr a) {
  for (int i = 0; i < op->n_attrs; i++)
    if (op->attrs[i].name == a.name) {
      op->attrs[i] = a;
      return;
    }
  wf_attr *v = wf_arena_alloc(f->module->arena, (size_t)(op->n_attrs + 1) * sizeof *v);
  if (op->n_attrs) memcpy(v, op->attrs, (size_t)op->n_attrs * sizeof *v);
  v[op->n_attrs++] = a;
  op->attrs = v;
}

static wf_attr attr_named(wf_func *f, const char *name, wf_attr_kind kind) {
  wf_attr a;
  memset(&a, 0, sizeof a);
  a.name = wf_intern(f->module, name);
  a.kind = kind;
  return a;
}

void wf_op_set_int(wf_func *f, wf_op *op, const char *name, int64_t v) {
  wf_attr a = attr_named(f, name, WF_ATTR_INT);
  a.u.i = v;
  wf_op_set_attr(f, op, a);
}

void wf_op_set_float(wf_func *f, wf_op *op, const char *name, double v) {
  wf_attr a = attr_named(f, name, WF_ATTR_FLOAT);
  a.u.f = v;
  wf_op_set_attr(f, op, a);
}

void wf_op_set_str(wf_func *f, wf_op *op, const char *name, const char *v) {
  wf_attr a = attr_named(f, name, WF_ATTR_STR);
  a.u.s = wf_intern(f->module, v);
  wf_op_set_attr(f, op, a);
}

void wf_op_set_ident(wf_func *f, wf_op *op, const char *name, const char *v) {
  wf_attr a = attr_named(f, name, WF_ATTR_IDENT);
  a.u.s = wf_intern(f->module, v);
  wf_op_set_attr(f, op, a);
}

void wf_op_set_ints(wf_func *f, wf_op *op, const char *name, int n, const int64_t *v) {
  wf_attr a = attr_named(f, name, WF_ATTR_INTS);
  a.u.ints.n = n;
  a.u.ints.v = n ? wf_arena_dup(f->module->arena, v, (size_t)n * sizeof *v) : NULL;
  wf_op_set_attr(f, op, a);
}

const wf_attr *wf_op_attr(const wf_func *f, const wf_op *op, const char *name) {
  for (int i = 0; i < op->n_attrs; i++)
    if (strcmp(wf_str(f->module, op->attrs[i].name), name) == 0) return &op->attrs[i];
  return NULL;
}

int64_t wf_op_int(const wf_func *f, const wf_op *op, const char *name, int64_t dflt) {
  const wf_attr *a = wf_op_attr(f, op, name);
  if (!a) return dflt;
  if (a->kind == WF_ATTR_INT || a->kind == WF_ATTR_BOOL) return a->u.i;
  if (a->kind == WF_ATTR_FLOAT) return (int64_t)a->u.f;
  return dflt;
}

double wf_op_float(const wf_func *f, const wf_op *op, const char *name, double dflt) {
  const wf_attr *a = wf_op_attr(f, op, name);
  if (!a) return dflt;
  if (a->kind == WF_ATTR_FLOAT) return a->u.f;
  if (a->kind == WF_ATTR_INT) return (double)a->u.i;
  return dflt;
}

const char *wf_op_str(const wf_func *f, const wf_op *op, const char *name, const char *dflt) {
  const wf_attr *a = wf_op_attr(f, op, name);
  if (!a || (a->kind != WF_ATTR_STR && a->kind != WF_ATTR_IDENT)) return dflt;
  return wf_str(f->module, a->u.s);
}
