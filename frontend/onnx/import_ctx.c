/* The importer's context as the op importers see it (onnx_internal.h, import_ctx.h): the name
 * table of values, new values and constants, a node's outputs, and diagnostics that name the
 * node. The driver that walks the graph is import.c. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"

/* ---- name table -------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static ox_slot *find_slot(ox_ctx *cx, const char *name) {
  if (!cx->cap) return NULL;
  for (size_t i = hash_str(name) & (cx->cap - 1);; i = (i + 1) & (cx->cap - 1)) {
    if (!cx->slots[i]) return NULL;
    if (strcmp(cx->slots[i]->name, name) == 0) return cx->slots[i];
  }
}

ox_val *ox_lookup(ox_ctx *cx, const char *name) {
  ox_slot *s = find_slot(cx, name);
  return s ? s->val : NULL;
}

const ox_node *ox_producer(ox_ctx *cx, const char *name) {
  ox_slot *s = find_slot(cx, name);
  return s ? s->by : NULL;
}

static void bind_by(ox_ctx *cx, const char *name, ox_val *v, const ox_node *by);

void ox_bind(ox_ctx *cx, const char *name, ox_val *v) { bind_by(cx, name, v, NULL); }

static void bind_by(ox_ctx *cx, const char *name, ox_val *v, const ox_node *by) {
  if ((cx->count + 1) * 2 > cx->cap) {
    size_t ncap = cx->cap ? cx->cap * 2 : 256;
    ox_slot **ns = calloc(ncap, sizeof *ns);
    WF_ASSERT(ns);
    for (size_t i = 0; i < cx->cap; i++) {
      if (!cx->slots[i]) continue;
      size_t j = hash_str(cx->slots[i]->name) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = cx->slots[i];
    }
    free(cx->slots);
    cx->slots = ns;
    cx->cap = ncap;
  }
  size_t i = hash_str(name) & (cx->cap - 1);
  for (; cx->slots[i]; i = (i + 1) & (cx->cap - 1))
    if (strcmp(cx->slots[i]->name, name) == 0) {
      cx->slots[i]->val = v; /* SSA is the model's job; a rebinding wins, as in onnxruntime */
      cx->slots[i]->by = by;
      return;
    }
  ox_slot *s = wf_arena_alloc(cx->arena, sizeof *s);
  s->name = wf_arena_strdup(cx->arena, name);
  s->val = v;
  s->by = by;
  cx->slots[i] = s;
  cx->count++;
}

/* ---- values ------------------------------------------------------------------------------ */

ox_val *ox_val_new(ox_ctx *cx, const wf_type *t) {
  ox_val *v = wf_arena_alloc(cx->arena, sizeof *v);
  v->type = *t;
  v->global = -1;
  return v;
}

int ox_host_budget(ox_ctx *cx, int64_t bytes) {
  if (bytes < 0 || bytes > OX_HOST_BYTES_MAX - cx->host_made) return -1;
  cx->host_made += bytes;
  return 0;
}

ox_val *ox_const_new(ox_ctx *cx, wf_tensor *k) {
  wf_type t = wf_type_make(k->dtype, k->rank, k->dims);
  ox_val *v = ox_val_new(cx, &t);
  v->k = k;
  if (cx->n_consts == cx->cap_consts) {
    cx->cap_consts = cx->cap_consts ? cx->cap_consts * 2 : 64;
    cx->consts = realloc(cx->consts, (size_t)cx->cap_consts * sizeof *cx->consts);
    WF_ASSERT(cx->consts);
  }
  cx->consts[cx->n_consts++] = k;
  return v;
}

ox_val *ox_seq_new(ox_ctx *cx, wf_dtype dt, int n, ox_val *const *items) {
  wf_type t = wf_type_make(dt, 0, NULL);
  ox_val *v = ox_val_new(cx, &t);
  v->is_seq = 1;
  v->n_items = n;
  v->items = wf_arena_alloc(cx->arena, ((size_t)n + 1) * sizeof *v->items);
  for (int i = 0; i < n; i++) v->items[i] = items[i];
  return v;
}

wf_module *ox_module(ox_ctx *cx) { return cx->m; }
wf_func *ox_func(ox_ctx *cx) { return cx->f; }
const char *ox_model_dir(ox_ctx *cx) { return cx->dir; }

/* Whether every element of k has the same bytes (stored as a splat). */
static int is_splat(const wf_tensor *k) {
  size_t es = wf_dtype_size(k->dtype), bytes = wf_tensor_bytes(k);
  if (bytes <= es) return 0;
  for (size_t off = es; off < bytes; off += es)
    if (memcmp((const char *)k->data + off, k->data, es) != 0) return 0;
  return 1;
}

static int materialize(ox_ctx *cx, ox_val *v, wf_loc loc) {
  wf_module *m = cx->m;
  char name[64];
  const char *gname = v->name;
  if (!gname || !*gname) {
    snprintf(name, sizeof name, "const%d", cx->n_anon++);
    gname = name;
  }
  int g = wf_module_add_global(m, gname, v->type, loc);
  wf_global *gl = &m->globals[g];
  size_t es = wf_dtype_size(v->k->dtype), bytes = wf_tensor_bytes(v->k);
  if (is_splat(v->k)) {
    gl->kind = WF_DATA_SPLAT;
    gl->data = wf_arena_dup(m->arena, v->k->data, es);
  } else {
    gl->kind = WF_DATA_INLINE;
    gl->data = wf_arena_alloc(m->arena, bytes ? bytes : 1);
    if (bytes) memcpy(gl->data, v->k->data, bytes);
  }
  v->global = g;
  v->v = wf_func_global_value(cx->f, g);
  return 0;
}

wf_value ox_ir_value(ox_nctx *n, ox_val *v) {
  if (!v->v) {
    WF_ASSERT(v->k != NULL);
    materialize(n->cx, v, n->oploc);
  }
  return v->v;
}

int ox_n_out(const ox_nctx *n) { return n->node->n_out; }
int ox_out_used(const ox_nctx *n, int i) { return i < n->node->n_out && n->node->out[i][0] != '\0'; }

int ox_set_out(ox_nctx *n, int i, ox_val *v) {
  if (!ox_out_used(n, i)) return 0;
  const char *name = n->node->out[i];
  if (!v->name) {
    v->name = wf_arena_strdup(n->cx->arena, name);
    if (v->v && wf_value_get(n->cx->f, v->v)->kind == WF_VAL_RESULT) wf_value_set_name(n->cx->f, v->v, name);
  }
  bind_by(n->cx, name, v, n->node);
  return 0;
}

/* ---- diagnostics ------------------------------------------------------------------------- */

const char *ox_shape_str(const wf_type *t) {
  static char bufs[4][256];
  static int next;
  char *b = bufs[next];
  next = (next + 1) % 4;
  size_t k = (size_t)snprintf(b, 256, "%s[", wf_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && k < 256; i++)
    k += (size_t)snprintf(b + k, 256 - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  if (k < 256) snprintf(b + k, 256 - k, "]");
  return b;
}

void ox_err(const ox_nctx *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf_verror(WF_SEV_ERROR, n->eloc, fmt, ap);
  va_end(ap);
}

int ox_unsupported(const ox_nctx *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf_verror(WF_SEV_ERROR, n->eloc, fmt, ap);
  va_end(ap);
  return WF_EXIT_UNSUPPORTED;
}

/* "model.onnx: node 'name' (Op, opset N)"; kept in the context's arena for the import. */
wf_loc ox_node_loc(ox_ctx *cx, const ox_node *nd) {
  char buf[1024];
  int k;
  if (nd->name && *nd->name) k = snprintf(buf, sizeof buf, "%s: node '%s' (%s, opset %d)", cx->path, nd->name, nd->op_type, nd->opset);
  else k = snprintf(buf, sizeof buf, "%s: node #%d (%s, opset %d)", cx->path, nd->index, nd->op_type, nd->opset);
  if (nd->via && k > 0 && (size_t)k < sizeof buf) k += snprintf(buf + k, sizeof buf - (size_t)k, " in function '%s'", nd->via);
  for (const ox_scope *s = nd->scope; s; s = s->up)
    if (s->what && k > 0 && (size_t)k < sizeof buf) {
      k += snprintf(buf + k, sizeof buf - (size_t)k, " in %s", s->what);
      break;
    }
  wf_loc l = {wf_arena_strdup(cx->arena, buf), 0, 0};
  return l;
}
