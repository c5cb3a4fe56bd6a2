/* waferc — the printer of the IR text form (docs/ir-text-format.md, "Printing rules").
 *
 * Output is canonical: parse(print(m)) prints byte-identically. Names that could not be read
 * back (characters outside the name alphabet, duplicates) are rewritten here, so every dump
 * parses whatever a pass or a frontend stored. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"
#include "waferc/tensor.h"

/* ---- a set of strings, for making printed names unique ------------------------------ */

typedef struct name_set {
  char **slot;
  size_t cap, n;
} name_set;

static size_t hash_str(const char *p) {
  size_t h = 1469598103934665603u;
  for (; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
  return h;
}

static int set_has(const name_set *s, const char *k) {
  if (!s->cap) return 0;
  for (size_t i = hash_str(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (!s->slot[i]) return 0;
    if (strcmp(s->slot[i], k) == 0) return 1;
  }
}

/* Takes ownership of k (malloc'd). */
static void set_add(name_set *s, char *k) {
  if (2 * (s->n + 1) > s->cap) {
    name_set big = {NULL, s->cap ? s->cap * 2 : 64, 0};
    big.slot = calloc(big.cap, sizeof *big.slot);
    WF_ASSERT(big.slot != NULL);
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i]) set_add(&big, s->slot[i]);
    free(s->slot);
    *s = big;
  }
  size_t i = hash_str(k) & (s->cap - 1);
  while (s->slot[i]) i = (i + 1) & (s->cap - 1);
  s->slot[i] = k;
  s->n++;
}

static void set_free(name_set *s) {
  for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
  free(s->slot);
}

static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '$' || c == '-';
}

static int all_digits(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* `raw` with characters outside [A-Za-z0-9_.$-] replaced by '_'; "" stays "". */
static char *sanitize(const char *raw) {
  char *s = strdup(raw);
  WF_ASSERT(s != NULL);
  for (char *p = s; *p; p++)
    if (!name_char(*p)) *p = '_';
  return s;
}

/* A copy of `base` not yet in set (base, base.1, base.2, ...), added to the set. */
static char *unique(name_set *set, const char *base) {
  size_t n = strlen(base) + 24;
  char *s = malloc(n);
  WF_ASSERT(s != NULL);
  snprintf(s, n, "%s", base);
  for (unsigned k = 1; set_has(set, s); k++) snprintf(s, n, "%s.%u", base, k);
  set_add(set, strdup(s));
  return s;
}

/* ---- printer state ------------------------------------------------------------------ */

typedef struct printer {
  FILE *out;
  const wf_module *m;
  wf_print_opts opts;
  char **regions, **globals; /* printed symbol names, without '@' */
  char **funcs;
  const wf_func *f;          /* function whose values are named below */
  char **values;             /* printed value names, without '%'; NULL = not defined */
  uint32_t n_values;
} printer;

static char *symbol_name(name_set *set, const wf_module *m, uint32_t name) {
  char *base = sanitize(wf_str(m, name));
  char *s = unique(set, *base ? base : "_");
  free(base);
  return s;
}

/* Regions, constants and functions share one namespace in the text form. */
static void name_symbols(printer *p) {
  const wf_module *m = p->m;
  name_set set = {0};
  p->regions = calloc((size_t)m->n_regions + 1, sizeof *p->regions);
  p->globals = calloc((size_t)m->n_globals + 1, sizeof *p->globals);
  p->funcs = calloc((size_t)m->n_funcs + 1, sizeof *p->funcs);
  WF_ASSERT(p->regions && p->globals && p->funcs);
  for (int i = 0; i < m->n_regions; i++) p->regions[i] = symbol_name(&set, m, m->regions[i].name);
  for (int i = 0; i < m->n_globals; i++) p->globals[i] = symbol_name(&set, m, m->globals[i].name);
  for (int i = 0; i < m->n_funcs; i++) p->funcs[i] = symbol_name(&set, m, m->funcs[i]->name);
  set_free(&set);
}

static void free_names(char **v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void name_value(printer *p, name_set *set, unsigned *next, wf_value v) {
  if (v == WF_NO_VALUE || v >= p->n_values || p->values[v]) return;
  char *base = sanitize(wf_str(p->m, p->f->values[v].name));
  if (*base && !all_digits(base)) {
    p->values[v] = unique(set, base);
  } else {
    char num[24];
    snprintf(num, sizeof num, "%u", (*next)++);
    p->values[v] = strdup(num);
    WF_ASSERT(p->values[v]);
  }
  free(base);
}

/* Kept names first come first served; anonymous and all-digit names are numbered in order
 * of definition, arguments first, so numbering is stable across parse and print. */
static void name_values(printer *p, const wf_func *f) {
  p->f = f;
  p->n_values = f->n_values;
  p->values = calloc(f->n_values + 1, sizeof *p->values);
  WF_ASSERT(p->values != NULL);
  name_set set = {0};
  unsigned next = 0;
  for (int i = 0; i < f->n_args; i++) name_value(p, &set, &next, f->args[i]);
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_results; i++)
      name_value(p, &set, &next, op->results[i]);
  set_free(&set);
}

static void unname_values(printer *p) {
  free_names(p->values, p->n_values);
  p->values = NULL;
  p->n_values = 0;
  p->f = NULL;
}

static void printer_free(printer *p) {
  unname_values(p);
  free_names(p->regions, (size_t)p->m->n_regions);
  free_names(p->globals, (size_t)p->m->n_globals);
  free_names(p->funcs, (size_t)p->m->n_funcs);
}

/* ---- scalars ------------------------------------------------------------------------ */

/* Ensures a float reads back as a float: "1" -> "1.0". */
static void add_point(char *buf, size_t n) {
  if (strpbrk(buf, ".eEn")) return; /* 'n' covers inf and nan */
  size_t len = strlen(buf);
  if (len + 3 <= n) memcpy(buf + len, ".0", 3);
}

static int special(char *buf, size_t n, double v) {
  if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
  else return 0;
  return 1;
}

/* Shortest %g form that reads back to the same double. */
static void fmt_double(char *buf, size_t n, double v) {
  if (special(buf, n, v)) return;
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  add_point(buf, n);
}

/* Shortest form that reads back to the same element of dtype dt (f32, f16 or bf16). */
static void fmt_element_float(char *buf, size_t n, wf_dtype dt, const void *src) {
  float f;
  uint16_t h = 0;
  if (dt == WF_F32) memcpy(&f, src, 4);
  else {
    memcpy(&h, src, 2);
    f = dt == WF_F16 ? wf_f16_to_f32(h) : wf_bf16_to_f32(h);
  }
  if (special(buf, n, f)) return;
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, n, "%.*g", prec, (double)f);
    float back = (float)strtod(buf, NULL);
    if (dt == WF_F32 ? back == f
                     : (dt == WF_F16 ? wf_f32_to_f16(back) : wf_f32_to_bf16(back)) == h)
      break;
  }
  add_point(buf, n);
}

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
    else if (*s == '\n') fputs("\\n", out);
    else fputc(*s, out);
  }
  fputc('"', out);
}

/* A bare word the grammar reads back as an identifier (not a value keyword). */
static int plain_word(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
  for (const char *p = s; *p; p++)
    if (!name_char(*p) || *p == '$' || *p == '-') return 0;
  static const char *const reserved[] = {"true", "false", "inf", "nan"};
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strcmp(s, reserved[i]) == 0) return 0;
  return 1;
}

static void print_attr_value(FILE *out, const wf_module *m, const wf_attr *a) {
  char buf[40];
  switch (a->kind) {
  case WF_ATTR_INT: fprintf(out, "%lld", (long long)a->u.i); break;
  case WF_ATTR_FLOAT: fmt_double(buf, sizeof buf, a->u.f); fputs(buf, out); break;
  case WF_ATTR_BOOL: fputs(a->u.i ? "true" : "false", out); break;
  case WF_ATTR_STR: print_string(out, wf_str(m, a->u.s)); break;
  case WF_ATTR_IDENT:
    if (plain_word(wf_str(m, a->u.s))) fputs(wf_str(m, a->u.s), out);
    else print_string(out, wf_str(m, a->u.s));
    break;
  case WF_ATTR_INTS:
    fputc('[', out);
    for (int i = 0; i < a->u.ints.n; i++)
      fprintf(out, "%s%lld", i ? ", " : "", (long long)a->u.ints.v[i]);
    fputc(']', out);
    break;
  case WF_ATTR_FLOATS:
    fputc('[', out);
    for (int i = 0; i < a->u.floats.n; i++) {
      fmt_double(buf, sizeof buf, a->u.floats.v[i]);
      fprintf(out, "%s%s", i ? ", " : "", buf);
    }
    fputc(']', out);
    break;
  default: WF_UNREACHABLE("attribute kind");
  }
}

static void print_attrs(FILE *out, const wf_module *m, int n, const wf_attr *attrs) {
  fputc('{', out);
  for (int i = 0; i < n; i++) {
    char *name = sanitize(wf_str(m, attrs[i].name));
    fprintf(out, "%s%s = ", i ? ", " : "", *name ? name : "_");
    free(name);
    print_attr_value(out, m, &attrs[i]);
  }
  fputc('}', out);
}

/* ---- types -------------------------------------------------------------------------- */

static void print_label(FILE *out, const wf_module *m, const wf_layout_dim *d) {
  const char *label = wf_str(m, d->label);
  fputs(*label ? label : "_", out);
  if (d->split) fputs(d->split == WF_AXIS_X ? "_x" : "_y", out);
  if (d->repl) fputs(d->repl == WF_AXIS_X ? "^x" : "^y", out);
}

static void print_type_p(const printer *p, const wf_type *t) {
  FILE *out = p->out;
  fprintf(out, "%s[", wf_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  fputc(']', out);
  const wf_layout *l = &t->layout;
  if (l->rank == 0) return;
  fputc('{', out);
  for (int i = 0; i < l->rank; i++) {
    if (i) fputs(", ", out);
    print_label(out, p->m, &l->dims[i]);
  }
  fputc('}', out);
  if (l->region >= 0 && l->region < p->m->n_regions) fprintf(out, " @%s", p->regions[l->region]);
}

/* ---- ops ---------------------------------------------------------------------------- */

static void print_value(const printer *p, wf_value v) {
  if (v != WF_NO_VALUE && v < p->n_values) {
    const wf_value_info *vi = &p->f->values[v];
    if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < p->m->n_globals) {
      fprintf(p->out, "@%s", p->globals[vi->index]);
      return;
    }
    if (p->values[v]) {
      fprintf(p->out, "%%%s", p->values[v]);
      return;
    }
  }
  /* Not defined by the printed body: a broken IR, shown so the verifier's report makes sense
   * (it does not parse back). */
  fprintf(p->out, "%%<undefined %u>", (unsigned)v);
}

static void print_op_p(const printer *p, const wf_op *op) {
  FILE *out = p->out;
  if (op->code == WF_OP_RETURN) {
    fputs("return", out);
    for (int i = 0; i < op->n_operands; i++) {
      fputs(i ? ", " : " ", out);
      print_value(p, op->operands[i]);
    }
  } else {
    for (int i = 0; i < op->n_results; i++) {
      if (i) fputs(", ", out);
      print_value(p, op->results[i]);
    }
    if (op->n_results) fputs(" = ", out);
    fprintf(out, "%s(", wf_opinfos[op->code].name);
    for (int i = 0; i < op->n_operands; i++) {
      if (i) fputs(", ", out);
      print_value(p, op->operands[i]);
    }
    fputc(')', out);
    if (op->n_attrs) {
      fputc(' ', out);
      print_attrs(out, p->m, op->n_attrs, op->attrs);
    }
    for (int i = 0; i < op->n_results; i++) {
      fputs(i ? ", " : " : ", out);
      print_type_p(p, &p->f->values[op->results[i]].type);
    }
  }
  if (p->opts.print_locations && op->loc.file) {
    fputs(" loc(", out);
    print_string(out, op->loc.file);
    fprintf(out, ":%u:%u)", (unsigned)op->loc.line, (unsigned)op->loc.col);
  }
}

/* ---- module ------------------------------------------------------------------------- */

static void print_data(const printer *p, const wf_global *g) {
  FILE *out = p->out;
  if (g->kind == WF_DATA_FILE) {
    fputs("file<", out);
    print_string(out, wf_str(p->m, g->path));
    if (g->offset >= 0) fprintf(out, ", offset = %lld", (long long)g->offset);
    fputc('>', out);
    return;
  }
  int64_t n = g->kind == WF_DATA_SPLAT ? 1 : wf_type_numel(&g->type);
  int64_t limit = p->opts.elide_elements_above;
  if (g->kind == WF_DATA_ELIDED || !g->data || (g->kind == WF_DATA_INLINE && limit >= 0 && n > limit)) {
    /* A side file keeps the bytes exactly (a raw file<> reads them back as they were). */
    int64_t off = -1;
    if (g->kind == WF_DATA_INLINE && g->data && p->opts.store)
      off = p->opts.store(p->opts.store_user, g->data, wf_type_bytes(&g->type));
    if (off < 0) {
      fputs("dense<elided>", out);
      return;
    }
    fputs("file<", out);
    print_string(out, p->opts.store_file);
    fprintf(out, ", offset = %lld>", (long long)off);
    return;
  }
  fputs(g->kind == WF_DATA_SPLAT ? "dense<" : "dense<[", out);
  wf_dtype dt = g->type.dtype;
  size_t esz = wf_dtype_size(dt);
  char buf[40];
  for (int64_t i = 0; i < n; i++) {
    const char *src = (const char *)g->data + (size_t)i * esz;
    if (i) fputs(", ", out);
    switch (dt) {
    case WF_F32:
    case WF_F16:
    case WF_BF16: fmt_element_float(buf, sizeof buf, dt, src); fputs(buf, out); break;
    case WF_I32: {
      int32_t v;
      memcpy(&v, src, 4);
      fprintf(out, "%d", (int)v);
      break;
    }
    case WF_I64: {
      int64_t v;
      memcpy(&v, src, 8);
      fprintf(out, "%lld", (long long)v);
      break;
    }
    case WF_BOOL: fputs(*(const uint8_t *)src ? "true" : "false", out); break;
    default: WF_UNREACHABLE("dtype");
    }
  }
  fputs(g->kind == WF_DATA_SPLAT ? ">" : "]>", out);
}

static void print_func(printer *p, const wf_func *f, int index) {
  FILE *out = p->out;
  name_values(p, f);
  fprintf(out, "  func @%s(", p->funcs[index]);
  for (int i = 0; i < f->n_args; i++) {
    if (i) fputs(", ", out);
    print_value(p, f->args[i]);
    fputs(": ", out);
    print_type_p(p, &f->values[f->args[i]].type);
  }
  fputc(')', out);
  if (f->n_results == 1) {
    fputs(" -> ", out);
    print_type_p(p, &f->result_types[0]);
  } else if (f->n_results > 1) {
    fputs(" -> (", out);
    for (int i = 0; i < f->n_results; i++) {
      if (i) fputs(", ", out);
      print_type_p(p, &f->result_types[i]);
    }
    fputc(')', out);
  }
  fputs(" {\n", out);
  wf_func_foreach_op(f, op) {
    fputs("    ", out);
    print_op_p(p, op);
    fputc('\n', out);
  }
  fputs("  }\n", out);
  unname_values(p);
}

void wf_print_module(FILE *out, const wf_module *m, const wf_print_opts *opts) {
  printer p = {.out = out, .m = m, .opts = opts ? *opts : WF_PRINT_OPTS_DEFAULT};
  name_symbols(&p);
  fputs("module", out);
  if (m->name) {
    char *name = sanitize(wf_str(m, m->name));
    fprintf(out, " @%s", *name ? name : "_");
    free(name);
  }
  if (m->attrs.n) {
    fputs(" attributes ", out);
    print_attrs(out, m, m->attrs.n, m->attrs.v);
  }
  fputs(" {\n", out);
  int blank = 0; /* a section was printed: separate the next one */
  for (int i = 0; i < m->n_regions; i++) {
    const wf_region *r = &m->regions[i];
    fprintf(out, "  region @%s = rect(%d, %d, %d, %d)\n", p.regions[i], r->x, r->y, r->w, r->h);
    blank = 1;
  }
  if (m->n_globals && blank) fputc('\n', out);
  for (int i = 0; i < m->n_globals; i++) {
    const wf_global *g = &m->globals[i];
    fprintf(out, "  const @%s : ", p.globals[i]);
    print_type_p(&p, &g->type);
    fputs(" = ", out);
    print_data(&p, g);
    fputc('\n', out);
    blank = 1;
  }
  for (int i = 0; i < m->n_funcs; i++) {
    if (blank) fputc('\n', out);
    print_func(&p, m->funcs[i], i);
    blank = 1;
  }
  fputs("}\n", out);
  printer_free(&p);
}

char *wf_print_module_str(const wf_module *m, const wf_print_opts *opts) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  WF_ASSERT(out != NULL);
  wf_print_module(out, m, opts);
  /* a memory stream's writes fail only when growing its buffer does: out of host memory, not
   * a shorter module (exit 7, said) */
  int bad = ferror(out);
  bad |= fclose(out) != 0;
  if (bad) errno = ENOMEM;
  WF_ASSERT(!bad && buf != NULL);
  return buf;
}

void wf_print_type(FILE *out, const wf_module *m, const wf_type *t) {
  printer p = {.out = out, .m = m, .opts = WF_PRINT_OPTS_DEFAULT};
  name_symbols(&p);
  print_type_p(&p, t);
  printer_free(&p);
}

/* ---- names for other outputs --------------------------------------------------------- */

struct wf_value_names {
  uint32_t n;
  char **name; /* with the sigil; NULL = not named */
};

wf_value_names *wf_value_names_new(const wf_func *f) {
  printer p = {.out = NULL, .m = f->module, .opts = WF_PRINT_OPTS_DEFAULT};
  name_symbols(&p);
  name_values(&p, f);
  wf_value_names *n = malloc(sizeof *n);
  WF_ASSERT(n != NULL);
  n->n = f->n_values;
  n->name = calloc((size_t)f->n_values + 1, sizeof *n->name);
  WF_ASSERT(n->name != NULL);
  for (uint32_t v = 1; v < f->n_values; v++) {
    const wf_value_info *vi = &f->values[v];
    const char *s = NULL, *sigil = "%";
    if (vi->kind == WF_VAL_GLOBAL && vi->index >= 0 && vi->index < p.m->n_globals) {
      s = p.globals[vi->index];
      sigil = "@";
    } else if (vi->kind != WF_VAL_GLOBAL) {
      s = p.values[v];
    }
    if (!s) continue;
    size_t len = strlen(s) + 2;
    n->name[v] = malloc(len);
    WF_ASSERT(n->name[v] != NULL);
    snprintf(n->name[v], len, "%s%s", sigil, s);
  }
  printer_free(&p);
  return n;
}

const char *wf_value_names_get(const wf_value_names *n, wf_value v) {
  return n && v != WF_NO_VALUE && v < n->n ? n->name[v] : NULL;
}

void wf_value_names_free(wf_value_names *n) {
  if (!n) return;
  free_names(n->name, n->n);
  free(n);
}

/* One op, without indentation or newline, named as in a dump of its whole function. */
void wf_print_op(FILE *out, const wf_func *f, const wf_op *op) {
  printer p = {.out = out, .m = f->module, .opts = WF_PRINT_OPTS_DEFAULT};
  name_symbols(&p);
  name_values(&p, f);
  print_op_p(&p, op);
  printer_free(&p);
}
