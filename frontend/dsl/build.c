/* waferc — turns what the DSL grammar reads into IR through the ir.h API.
 *
 * The parser (parser.y) only collects tokens; every check that needs the module (symbols,
 * value names, the op table) and every error message for them lives here. Op semantics
 * (operand counts, shapes) are the verifier's job, not the parser's. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "waferc/tensor.h"

void wf_dsl_report(wf_dsl_state *s, wf_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf_verror(WF_SEV_ERROR, loc, fmt, ap);
  va_end(ap);
  s->errors++;
}

wf_loc wf_dsl_loc(wf_dsl_state *s, uint32_t line, uint32_t col) {
  wf_loc l = {s->file, line, col};
  return l;
}

void wf_dsl_vec_reserve(void **v, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int n = *cap ? *cap * 2 : 16;
  while (n < need) n *= 2;
  void *p = realloc(*v, (size_t)n * elem);
  WF_ASSERT(p != NULL);
  *v = p;
  *cap = n;
}

int wf_dsl_int_from(wf_dsl_state *s, const char *text, wf_loc loc, int64_t *out) {
  errno = 0;
  long long v = strtoll(text, NULL, 10);
  if (errno == ERANGE) {
    wf_dsl_report(s, loc, "integer out of range");
    *out = 0;
    return 1;
  }
  *out = (int64_t)v;
  return 0;
}

char *wf_dsl_unescape(wf_dsl_state *s, const char *text, size_t len, wf_loc at) {
  char *out = wf_arena_alloc(s->scratch, len + 1);
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (c == '\\' && i + 1 < len) {
      char e = text[++i];
      if (e == '"' || e == '\\') c = e;
      else if (e == 'n') c = '\n';
      else {
        unsigned char u = (unsigned char)e;
        if (u >= 0x21 && u < 0x7f)
          wf_dsl_report(s, at, "unknown escape sequence '\\%c' in string", e);
        else
          wf_dsl_report(s, at, "unknown escape sequence in string (byte 0x%02x)", u);
        return NULL;
      }
    }
    out[k++] = c;
  }
  out[k] = '\0';
  return out;
}

/* ---- symbols ------------------------------------------------------------------------ */

/* Regions, constants and functions share one namespace: `@x` must name one thing. */
static int symbol_taken(wf_dsl_state *s, const char *name, wf_loc loc) {
  wf_module *m = s->m;
  wf_loc prev = WF_LOC_NONE;
  int r = wf_module_find_region(m, name), g = wf_module_find_global(m, name);
  wf_func *f = wf_module_find_func(m, name);
  if (r >= 0) prev = m->regions[r].loc;
  else if (g >= 0) prev = m->globals[g].loc;
  else if (f) prev = f->loc;
  else return 0;
  wf_dsl_report(s, loc, "redefinition of symbol '@%s'", name);
  wf_note(prev, "previous definition of '@%s' is here", name);
  return 1;
}

void wf_dsl_region(wf_dsl_state *s, const char *name, wf_loc loc, int64_t x, int64_t y,
                   int64_t w, int64_t h, wf_loc nums_loc) {
  if (symbol_taken(s, name, loc)) return;
  if (x < 0 || y < 0 || x > INT32_MAX || y > INT32_MAX) {
    wf_dsl_report(s, nums_loc, "region origin must be non-negative and fit in 32 bits");
    return;
  }
  if (w < 1 || h < 1 || w > INT32_MAX || h > INT32_MAX) {
    wf_dsl_report(s, nums_loc, "region width and height must be positive and fit in 32 bits");
    return;
  }
  wf_module_add_region(s->m, name, (int)x, (int)y, (int)w, (int)h, loc);
}

/* ---- types -------------------------------------------------------------------------- */

void wf_dsl_layout_dim(wf_dsl_state *s, const char *label, wf_loc loc, const char *repl,
                       wf_loc repl_loc, wf_layout_dim *out) {
  memset(out, 0, sizeof *out);
  size_t n = strlen(label);
  if (n > 2 && label[n - 2] == '_' && (label[n - 1] == 'x' || label[n - 1] == 'y')) {
    out->split = label[n - 1] == 'x' ? WF_AXIS_X : WF_AXIS_Y;
    n -= 2;
  }
  out->label = wf_intern_n(s->m, label, n);
  if (!repl) return;
  if (strcmp(repl, "x") != 0 && strcmp(repl, "y") != 0) {
    wf_dsl_report(s, repl_loc, "expected 'x' or 'y' after '^', got '%s'", repl);
    return;
  }
  if (out->split) {
    wf_dsl_report(s, loc, "layout dim '%s' cannot be split and replicated at once", label);
    return;
  }
  out->repl = repl[0] == 'x' ? WF_AXIS_X : WF_AXIS_Y;
}

void wf_dsl_layout(wf_dsl_state *s, const char *region, wf_loc loc, wf_layout *out) {
  memset(out, 0, sizeof *out);
  out->region = -1;
  if (s->ldims.n > WF_MAX_RANK) {
    wf_dsl_report(s, loc, "layout has %d entries, at most %d are supported", s->ldims.n,
                  WF_MAX_RANK);
    return;
  }
  out->rank = s->ldims.n;
  memcpy(out->dims, s->ldims.v, (size_t)s->ldims.n * sizeof *out->dims);
  if (region) {
    out->region = wf_module_find_region(s->m, region);
    if (out->region < 0) wf_dsl_report(s, loc, "unknown region '@%s'", region);
  }
}

void wf_dsl_type(wf_dsl_state *s, const char *dtype, wf_loc dtype_loc, const wf_layout *layout,
                 wf_loc layout_loc, wf_type *out) {
  wf_dtype dt = WF_F32;
  if (wf_dtype_parse(dtype, &dt) != 0)
    wf_dsl_report(s, dtype_loc, "unknown element type '%s' (expected f32, f16, bf16, i32, i64 or bool)",
                  dtype);
  int rank = s->dims.n;
  if (rank > WF_MAX_RANK) {
    wf_dsl_report(s, dtype_loc, "type has rank %d, at most %d is supported", rank, WF_MAX_RANK);
    rank = 0;
  }
  *out = wf_type_make(dt, rank, s->dims.v);
  /* every size computed from a type stays in range, zero dims aside (dynamic dims: reported
   * where read) */
  int64_t known[WF_MAX_RANK];
  for (int i = 0; i < rank; i++) known[i] = out->dims[i] > 0 ? out->dims[i] : 0;
  if (!wf_dims_fit(rank, known)) {
    wf_dsl_report(s, dtype_loc, "a tensor type holds at most 2^40 elements; these dims multiply past it");
    out->rank = 0;
  }
  if (layout->rank == 0) return;
  if (layout->rank != rank) {
    wf_dsl_report(s, layout_loc, "layout has %d entries but the type has rank %d", layout->rank,
                  rank);
    return;
  }
  out->layout = *layout;
}

/* ---- constants ---------------------------------------------------------------------- */

static int64_t checked_numel(wf_dsl_state *s, const wf_type *t, wf_loc loc) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return -1; /* reported where the dim was read */
    if (__builtin_mul_overflow(n, t->dims[i], &n) || n > (INT64_C(1) << 40)) {
      wf_dsl_report(s, loc, "constant is too large");
      return -1;
    }
  }
  return n;
}

/* Stores element `e` as dtype dt at dst; 0 on success. */
static int store_element(wf_dsl_state *s, wf_dtype dt, const wf_dsl_num *e, void *dst) {
  const char *dn = wf_dtype_name(dt);
  if (wf_dtype_is_float(dt)) {
    if (e->is_float == 2) {
      wf_dsl_report(s, e->loc, "expected a number for %s data, got a boolean", dn);
      return 1;
    }
    double v = e->is_float ? e->f : (double)e->i;
    float f = (float)v;
    if (isfinite(v) && !isfinite(f)) {
      wf_dsl_report(s, e->loc, "value out of range for %s", dn);
      return 1;
    }
    if (dt == WF_F32) memcpy(dst, &f, 4);
    else {
      uint16_t h = dt == WF_F16 ? wf_f32_to_f16(f) : wf_f32_to_bf16(f);
      float back = dt == WF_F16 ? wf_f16_to_f32(h) : wf_bf16_to_f32(h);
      if (isfinite(f) && !isfinite(back)) {
        wf_dsl_report(s, e->loc, "value out of range for %s", dn);
        return 1;
      }
      memcpy(dst, &h, 2);
    }
    return 0;
  }
  if (dt == WF_BOOL) {
    if (e->is_float == 1 || (e->is_float == 0 && e->i != 0 && e->i != 1)) {
      wf_dsl_report(s, e->loc, "expected true, false, 0 or 1 for bool data");
      return 1;
    }
    *(uint8_t *)dst = (uint8_t)(e->i != 0);
    return 0;
  }
  if (e->is_float != 0) {
    wf_dsl_report(s, e->loc, "expected an integer for %s data", dn);
    return 1;
  }
  if (dt == WF_I32) {
    if (e->i < INT32_MIN || e->i > INT32_MAX) {
      wf_dsl_report(s, e->loc, "integer out of range for i32");
      return 1;
    }
    int32_t v = (int32_t)e->i;
    memcpy(dst, &v, 4);
  } else {
    memcpy(dst, &e->i, 8);
  }
  return 0;
}

void wf_dsl_const(wf_dsl_state *s, const char *name, wf_loc loc, const wf_type *t,
                  wf_data_kind kind, const char *path, int64_t offset, wf_loc data_loc) {
  if (symbol_taken(s, name, loc)) return;
  int g = wf_module_add_global(s->m, name, *t, loc);
  wf_global *gl = &s->m->globals[g];
  gl->kind = kind;
  if (kind == WF_DATA_FILE) {
    gl->path = wf_intern(s->m, path);
    gl->offset = offset;
    return;
  }
  if (kind == WF_DATA_ELIDED) return;
  int64_t numel = checked_numel(s, t, data_loc);
  if (numel < 0) return;
  int64_t n = kind == WF_DATA_SPLAT ? 1 : numel;
  if (kind == WF_DATA_INLINE && s->nums.n != numel) {
    wf_dsl_report(s, data_loc, "dense<...> has %d element%s but the type has %lld", s->nums.n,
                  s->nums.n == 1 ? "" : "s", (long long)numel);
    return;
  }
  size_t esz = wf_dtype_size(t->dtype);
  char *data = wf_arena_alloc(s->m->arena, (size_t)(n ? n : 1) * esz);
  for (int64_t i = 0; i < n; i++)
    if (store_element(s, t->dtype, &s->nums.v[i], data + (size_t)i * esz) != 0) return;
  gl->data = data;
}

/* ---- value names -------------------------------------------------------------------- */

static uint32_t hash_name(const char *p) {
  uint32_t h = 2166136261u;
  for (; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h;
}

static wf_dsl_binding *bind_find(wf_dsl_state *s, const char *name) {
  if (!s->cap_bind) return NULL;
  for (uint32_t i = hash_name(name) & (s->cap_bind - 1);; i = (i + 1) & (s->cap_bind - 1)) {
    wf_dsl_binding *b = &s->bind[i];
    if (!b->name) return NULL;
    if (strcmp(b->name, name) == 0) return b;
  }
}

static void bind_insert(wf_dsl_state *s, const char *name, wf_value v, wf_loc loc) {
  if (2 * (s->n_bind + 1) > s->cap_bind) {
    uint32_t old_cap = s->cap_bind;
    wf_dsl_binding *old = s->bind;
    s->cap_bind = old_cap ? old_cap * 2 : 64;
    s->bind = calloc(s->cap_bind, sizeof *s->bind);
    WF_ASSERT(s->bind != NULL);
    s->n_bind = 0;
    for (uint32_t i = 0; i < old_cap; i++)
      if (old[i].name) bind_insert(s, old[i].name, old[i].value, old[i].loc);
    free(old);
  }
  uint32_t i = hash_name(name) & (s->cap_bind - 1);
  while (s->bind[i].name) i = (i + 1) & (s->cap_bind - 1);
  s->bind[i] = (wf_dsl_binding){name, v, loc};
  s->n_bind++;
}

/* Defines `name` unless it already is (reported); returns 0 when it was free. */
static int define_name(wf_dsl_state *s, const char *name, wf_value v, wf_loc loc) {
  wf_dsl_binding *b = bind_find(s, name);
  if (b) {
    wf_dsl_report(s, loc, "redefinition of value '%%%s'", name);
    wf_note(b->loc, "previous definition of '%%%s' is here", name);
    return 1;
  }
  bind_insert(s, name, v, loc);
  return 0;
}

/* All-digit names are positional (the printer renumbers them), so they are not stored. */
static int is_number_name(const char *name) {
  for (const char *p = name; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

/* ---- functions and ops -------------------------------------------------------------- */

void wf_dsl_func_begin(wf_dsl_state *s, const char *name, wf_loc loc) {
  symbol_taken(s, name, loc);
  s->func = wf_func_new(s->m, name, loc);
  free(s->bind);
  s->bind = NULL;
  s->n_bind = s->cap_bind = 0;
}

void wf_dsl_func_arg(wf_dsl_state *s, const char *name, wf_loc loc, const wf_type *t) {
  wf_value v = wf_func_add_arg(s->func, *t, is_number_name(name) ? NULL : name);
  define_name(s, name, v, loc);
}

void wf_dsl_func_end(wf_dsl_state *s) { s->func = NULL; }

wf_value wf_dsl_operand_value(wf_dsl_state *s, const char *name, wf_loc loc) {
  wf_dsl_binding *b = bind_find(s, name);
  if (!b) {
    wf_dsl_report(s, loc, "use of undefined value '%%%s'", name);
    return WF_DSL_POISON;
  }
  return b->value ? b->value : WF_DSL_POISON;
}

wf_value wf_dsl_operand_global(wf_dsl_state *s, const char *name, wf_loc loc) {
  int g = wf_module_find_global(s->m, name);
  if (g >= 0) return wf_func_global_value(s->func, g);
  if (wf_module_find_region(s->m, name) >= 0 || wf_module_find_func(s->m, name))
    wf_dsl_report(s, loc, "'@%s' is not a constant", name);
  else
    wf_dsl_report(s, loc, "unknown global constant '@%s'", name);
  return WF_DSL_POISON;
}

static int operands_ok(const wf_dsl_state *s) {
  for (int i = 0; i < s->operands.n; i++)
    if (s->operands.v[i] == WF_DSL_POISON) return 0;
  return 1;
}

/* The op table says an attribute holds floats; `1` or `[1, 2]` then mean floats. */
static wf_attr coerce_attr(wf_dsl_state *s, wf_opcode code, wf_attr a) {
  const wf_attr_spec *spec = wf_op_attr_spec(code, wf_str(s->m, a.name));
  if (!spec) return a;
  if (spec->kind == WF_ATTR_FLOAT && a.kind == WF_ATTR_INT) {
    double f = (double)a.u.i;
    a.kind = WF_ATTR_FLOAT;
    a.u.f = f;
  } else if (spec->kind == WF_ATTR_FLOATS && a.kind == WF_ATTR_INTS) {
    int n = a.u.ints.n;
    int64_t *iv = a.u.ints.v;
    double *fv = wf_arena_alloc(s->m->arena, (size_t)(n ? n : 1) * sizeof *fv);
    for (int i = 0; i < n; i++) fv[i] = (double)iv[i];
    a.kind = WF_ATTR_FLOATS;
    a.u.floats.n = n;
    a.u.floats.v = fv;
  }
  return a;
}

void wf_dsl_op(wf_dsl_state *s, int n_names, const char *opname, wf_loc opname_loc, int n_types,
               int has_loc, wf_loc first_loc) {
  int ok = operands_ok(s);
  wf_opcode code;
  if (wf_opcode_lookup(opname, &code) != 0 || code == WF_OP_RETURN) {
    const char *names[WF_OP_COUNT];
    for (int i = 0; i < WF_OP_COUNT; i++) names[i] = i == WF_OP_RETURN ? NULL : wf_opinfos[i].name;
    const char *near = wf_closest_name(opname, names, WF_OP_COUNT);
    if (near) wf_dsl_report(s, opname_loc, "unknown op '%s'; did you mean '%s'?", opname, near);
    else wf_dsl_report(s, opname_loc, "unknown op '%s' (docs/ops.md lists the ops)", opname);
    ok = 0;
  }
  if (n_names != n_types) {
    wf_dsl_report(s, opname_loc, "op '%s' has %d result%s but %d result type%s", opname, n_names,
                  n_names == 1 ? "" : "s", n_types, n_types == 1 ? "" : "s");
    ok = 0;
  }
  wf_op *op = NULL;
  if (ok) {
    op = wf_op_append(s->func, code, s->operands.n, s->operands.v, n_types, s->types.v,
                      has_loc ? s->written_loc : first_loc);
    for (int i = 0; i < s->attrs.n; i++) wf_op_set_attr(s->func, op, coerce_attr(s, code, s->attrs.v[i]));
  }
  for (int i = 0; i < n_names; i++) {
    const char *name = s->names.v[i].text;
    wf_value v = op ? op->results[i] : WF_NO_VALUE;
    if (define_name(s, name, v, s->names.v[i].loc) == 0 && op && !is_number_name(name))
      wf_value_set_name(s->func, v, name);
  }
}

void wf_dsl_return(wf_dsl_state *s, int has_loc, wf_loc loc) {
  if (!operands_ok(s)) return;
  wf_op_append(s->func, WF_OP_RETURN, s->operands.n, s->operands.v, 0, NULL,
               has_loc ? s->written_loc : loc);
}

/* ---- attributes --------------------------------------------------------------------- */

void wf_dsl_attr(wf_dsl_state *s, const char *name, wf_loc loc, wf_attr value) {
  value.name = wf_intern(s->m, name);
  for (int i = 0; i < s->attrs.n; i++)
    if (s->attrs.v[i].name == value.name) {
      wf_dsl_report(s, loc, "duplicate attribute '%s'", name);
      return;
    }
  WF_DSL_PUSH(s->attrs, value);
}

wf_attr wf_dsl_attr_list(wf_dsl_state *s) {
  wf_attr a = {0};
  int n = s->nums.n, any_float = 0;
  for (int i = 0; i < n; i++) {
    if (s->nums.v[i].is_float == 2) {
      wf_dsl_report(s, s->nums.v[i].loc, "attribute lists hold numbers, not booleans");
      break;
    }
    if (s->nums.v[i].is_float) any_float = 1;
  }
  size_t cnt = (size_t)(n ? n : 1);
  if (any_float) {
    a.kind = WF_ATTR_FLOATS;
    a.u.floats.n = n;
    a.u.floats.v = wf_arena_alloc(s->m->arena, cnt * sizeof(double));
    for (int i = 0; i < n; i++) a.u.floats.v[i] = s->nums.v[i].f;
  } else {
    a.kind = WF_ATTR_INTS;
    a.u.ints.n = n;
    a.u.ints.v = wf_arena_alloc(s->m->arena, cnt * sizeof(int64_t));
    for (int i = 0; i < n; i++) a.u.ints.v[i] = s->nums.v[i].i;
  }
  return a;
}

void wf_dsl_module_attrs(wf_dsl_state *s) {
  for (int i = 0; i < s->attrs.n; i++) wf_module_set_attr(s->m, s->attrs.v[i]);
}
