/* The op table (ops.def) expanded into data, plus dtype and type helpers. */
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"

const wf_opinfo wf_opinfos[WF_OP_COUNT] = {
#define WF_OP(id, text, nin, nout, flags, rule, attrs) [WF_OP_##id] = {text, nin, nout, flags, attrs},
#include "waferc/ops.def"
#undef WF_OP
};

int wf_opcode_lookup(const char *name, wf_opcode *out) {
  for (int i = 0; i < WF_OP_COUNT; i++)
    if (strcmp(wf_opinfos[i].name, name) == 0) {
      *out = (wf_opcode)i;
      return 0;
    }
  return -1;
}

/* ---- attribute specs: parsed once from the ops.def strings ---- */

#define WF_MAX_ATTR_SPECS 8
typedef struct spec_set {
  int n;
  wf_attr_spec v[WF_MAX_ATTR_SPECS];
} spec_set;
static spec_set g_specs[WF_OP_COUNT];
static int g_specs_ready;

static int kind_from_name(const char *k) {
  static const struct { const char *name; int kind; } kinds[] = {
      {"int", WF_ATTR_INT},     {"float", WF_ATTR_FLOAT}, {"bool", WF_ATTR_BOOL},
      {"str", WF_ATTR_STR},     {"ident", WF_ATTR_IDENT}, {"ints", WF_ATTR_INTS},
      {"floats", WF_ATTR_FLOATS},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].name, k) == 0) return kinds[i].kind;
  return -1;
}

static void parse_specs(void) {
  for (int op = 0; op < WF_OP_COUNT; op++) {
    const char *p = wf_opinfos[op].attrs;
    spec_set *set = &g_specs[op];
    while (p && *p) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      char item[128];
      WF_ASSERT(len < sizeof item && set->n < WF_MAX_ATTR_SPECS);
      memcpy(item, p, len);
      item[len] = 0;
      char *colon = strchr(item, ':');
      WF_ASSERT(colon);
      *colon = 0;
      char *eq = strchr(colon + 1, '=');
      if (eq) *eq = 0;
      wf_attr_spec *s = &set->v[set->n++];
      WF_ASSERT(strlen(item) < sizeof s->name);
      strcpy(s->name, item);
      s->kind = kind_from_name(colon + 1);
      WF_ASSERT(s->kind >= 0);
      s->required = eq == NULL;
      if (eq) {
        WF_ASSERT(strlen(eq + 1) < sizeof s->dflt);
        strcpy(s->dflt, eq + 1);
      }
      p = end ? end + 1 : NULL;
    }
  }
  g_specs_ready = 1;
}

int wf_op_attr_specs(wf_opcode code, wf_attr_spec *out, int max) {
  if (!g_specs_ready) parse_specs();
  const spec_set *set = &g_specs[code];
  for (int i = 0; i < set->n && i < max; i++) out[i] = set->v[i];
  return set->n;
}

const wf_attr_spec *wf_op_attr_spec(wf_opcode code, const char *name) {
  if (!g_specs_ready) parse_specs();
  const spec_set *set = &g_specs[code];
  for (int i = 0; i < set->n; i++)
    if (strcmp(set->v[i].name, name) == 0) return &set->v[i];
  return NULL;
}

/* ---- dtypes ---- */

static const struct { const char *name; size_t size; int is_float; } g_dtypes[WF_DTYPE_COUNT] = {
    [WF_F32] = {"f32", 4, 1}, [WF_F16] = {"f16", 2, 1}, [WF_BF16] = {"bf16", 2, 1},
    [WF_I32] = {"i32", 4, 0}, [WF_I64] = {"i64", 8, 0}, [WF_BOOL] = {"bool", 1, 0},
};

const char *wf_dtype_name(wf_dtype t) { return (unsigned)t < WF_DTYPE_COUNT ? g_dtypes[t].name : "?"; }
size_t wf_dtype_size(wf_dtype t) { return (unsigned)t < WF_DTYPE_COUNT ? g_dtypes[t].size : 0; }
int wf_dtype_is_float(wf_dtype t) { return (unsigned)t < WF_DTYPE_COUNT && g_dtypes[t].is_float; }

int wf_dtype_parse(const char *name, wf_dtype *out) {
  for (int i = 0; i < WF_DTYPE_COUNT; i++)
    if (strcmp(g_dtypes[i].name, name) == 0) {
      *out = (wf_dtype)i;
      return 0;
    }
  return -1;
}

/* ---- types ---- */

wf_type wf_type_make(wf_dtype dt, int rank, const int64_t *dims) {
  wf_type t;
  memset(&t, 0, sizeof t);
  WF_ASSERT(rank >= 0 && rank <= WF_MAX_RANK);
  t.dtype = dt;
  t.rank = rank;
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  t.layout.region = -1;
  return t;
}

int wf_dims_fit(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    if (dims[i] > 0 && (__builtin_mul_overflow(n, dims[i], &n) || n > WF_MAX_ELEMS)) return 0;
  return 1;
}

int64_t wf_type_numel(const wf_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

size_t wf_type_bytes(const wf_type *t) { return (size_t)wf_type_numel(t) * wf_dtype_size(t->dtype); }

int wf_type_same_shape(const wf_type *a, const wf_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static int layout_equal(const wf_layout *a, const wf_layout *b) {
  if (a->rank != b->rank) return 0;
  if (a->rank == 0) return 1;
  if (a->region != b->region) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i].label != b->dims[i].label || a->dims[i].split != b->dims[i].split ||
        a->dims[i].repl != b->dims[i].repl)
      return 0;
  return 1;
}

int wf_type_equal(const wf_type *a, const wf_type *b) {
  return wf_type_same_shape(a, b) && layout_equal(&a->layout, &b->layout);
}
