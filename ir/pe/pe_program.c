/* PE program classes: the instruction table, the builder and the .wpe writer. The parser is
 * in pe_parse.c. */
#include "ir/pe/pe_program.h"

#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"

const wf_peop_info wf_peops[WF_PEOP_COUNT] = {
#define WF_PEOP(id, name, sig, cost, syn) {name, sig, WF_PECOST_##cost, syn},
#include "ir/pe/peops.def"
#undef WF_PEOP
};

const char *const wf_dir_names[WF_DIR_COUNT] = {"N", "E", "S", "W", "RAMP"};
const int wf_dir_dx[WF_DIR_COUNT] = {0, 1, 0, -1, 0};
const int wf_dir_dy[WF_DIR_COUNT] = {-1, 0, 1, 0, 0};

int wf_peop_lookup(const char *name, wf_peop *out) {
  for (int i = 0; i < WF_PEOP_COUNT; i++)
    if (!strcmp(wf_peops[i].name, name)) {
      *out = (wf_peop)i;
      return 0;
    }
  return -1;
}

#define GROW(arr, n, cap)                                          \
  do {                                                             \
    if ((n) == (cap)) {                                            \
      (cap) = (cap) ? 2 * (cap) : 16;                              \
      (arr) = realloc((arr), (size_t)(cap) * sizeof *(arr));       \
      WF_ASSERT((arr) != NULL);                                    \
    }                                                              \
  } while (0)

wf_pe_class *wf_pe_class_new(const char *name) {
  wf_pe_class *c = calloc(1, sizeof *c);
  WF_ASSERT(c != NULL);
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

void wf_pe_class_free(wf_pe_class *c) {
  if (!c) return;
  free(c->syms);
  free(c->colors);
  free(c->routes);
  free(c->code);
  free(c->tasks);
  for (int i = 0; i < c->n_sets; i++) free(c->sets[i].member);
  free(c->sets);
  free(c);
}

int wf_pe_class_add_sym(wf_pe_class *c, const char *name, int64_t bytes) {
  WF_ASSERT(wf_pe_class_find_sym(c, name) < 0);
  WF_ASSERT(bytes >= 0 && bytes <= WF_PE_MAX_SYM_BYTES && c->mem_bytes <= INT64_MAX / 4);
  GROW(c->syms, c->n_syms, c->cap_syms);
  wf_pe_sym *s = &c->syms[c->n_syms];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->offset = (c->mem_bytes + 15) & ~(int64_t)15;
  s->bytes = bytes;
  c->mem_bytes = s->offset + bytes;
  return c->n_syms++;
}

void wf_pe_class_grow_sym(wf_pe_class *c, int i, int64_t bytes) {
  WF_ASSERT(i >= 0 && i < c->n_syms);
  if (c->syms[i].bytes >= bytes) return;
  c->syms[i].bytes = bytes;
  int64_t end = 0;
  for (int k = 0; k < c->n_syms; k++) {
    c->syms[k].offset = (end + 15) & ~(int64_t)15;
    end = c->syms[k].offset + c->syms[k].bytes;
  }
  c->mem_bytes = end;
}

int wf_pe_class_find_sym(const wf_pe_class *c, const char *name) {
  for (int i = 0; i < c->n_syms; i++)
    if (!strcmp(c->syms[i].name, name)) return i;
  return -1;
}

int wf_pe_class_find_var(wf_pe_class *c, const char *name, int create) {
  for (int i = 0; i < c->n_vars; i++)
    if (!strcmp(c->vars[i], name)) return i;
  if (!create || c->n_vars == 8 || strlen(name) >= sizeof c->vars[0]) return -1;
  /* A loop variable named like a parameter would print as that parameter (the parser
     refuses such names in text; a lowering must not make one). */
  static const char *const params[] = {"x", "y", "W", "H", "R", "C"};
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) WF_ASSERT(strcmp(name, params[i]));
  snprintf(c->vars[c->n_vars], sizeof c->vars[0], "%s", name);
  return c->n_vars++;
}

void wf_pe_class_add_color(wf_pe_class *c, int color, const char *purpose) {
  for (int i = 0; i < c->n_colors; i++)
    if (c->colors[i].color == color) return;
  GROW(c->colors, c->n_colors, c->cap_colors);
  memset(&c->colors[c->n_colors], 0, sizeof c->colors[0]); /* `ring` too: realloc'd memory */
  c->colors[c->n_colors].color = color;
  snprintf(c->colors[c->n_colors].purpose, sizeof c->colors[0].purpose, "%s", purpose);
  c->n_colors++;
}

void wf_pe_class_add_route_pos(wf_pe_class *c, const wf_pe_guard *g, int color, int pos, int rx,
                               unsigned tx) {
  WF_ASSERT(pos >= 0 && pos < WF_PE_MAX_POS);
  /* Routers are configured once per simulator; the step parameters change per decode step
     (the parser refuses such a route with a message; a lowering must never build one). */
  WF_ASSERT(!g || !wf_guard_uses_step(g));
  GROW(c->routes, c->n_routes, c->cap_routes);
  wf_pe_route *r = &c->routes[c->n_routes++];
  memset(r, 0, sizeof *r);
  if (g) r->guard = *g;
  r->color = color;
  r->pos = pos;
  r->rx = rx;
  r->tx = tx;
}

void wf_pe_class_add_route(wf_pe_class *c, const wf_pe_guard *g, int color, int rx, unsigned tx) {
  wf_pe_class_add_route_pos(c, g, color, 0, rx, tx);
}

int wf_pe_class_find_set(const wf_pe_class *c, const char *name) {
  for (int i = 0; i < c->n_sets; i++)
    if (!strcmp(c->sets[i].name, name)) return i;
  return -1;
}

/* n without the trailing non-members of member[0..n). */
static int set_len(const uint8_t *member, int n) {
  while (n > 0 && !member[n - 1]) n--;
  return n;
}

/* The members of set s: member[v] for v < n. */
static void set_fill(wf_pe_set *s, const uint8_t *member, int n) {
  n = set_len(member, n);
  WF_ASSERT(n <= WF_PE_MAX_SET);
  uint8_t *m = realloc(s->member, (size_t)n + 1);
  WF_ASSERT(m != NULL);
  for (int v = 0; v < n; v++) m[v] = member[v] != 0;
  s->member = m;
  s->n = n;
}

static int set_new(wf_pe_class *c, const char *name) {
  GROW(c->sets, c->n_sets, c->cap_sets);
  wf_pe_set *s = &c->sets[c->n_sets];
  memset(s, 0, sizeof *s);
  if (name) snprintf(s->name, sizeof s->name, "%s", name);
  else snprintf(s->name, sizeof s->name, "s%d", c->n_sets);
  return c->n_sets++;
}

int wf_pe_class_add_set(wf_pe_class *c, const uint8_t *member, int n) {
  n = set_len(member, n);
  for (int i = 0; i < c->n_sets; i++) {
    const wf_pe_set *s = &c->sets[i];
    int same = s->n == n;
    for (int v = 0; v < n && same; v++) same = !s->member[v] == !member[v];
    if (same) return i;
  }
  int i = set_new(c, NULL);
  set_fill(&c->sets[i], member, n);
  return i;
}

int wf_pe_class_set_members(wf_pe_class *c, const char *name, const uint8_t *member, int n) {
  int i = wf_pe_class_find_set(c, name);
  if (i < 0) i = set_new(c, name);
  set_fill(&c->sets[i], member, n);
  return i;
}

int wf_pe_class_find_task(const wf_pe_class *c, const char *name) {
  for (int i = 0; i < c->n_tasks; i++)
    if (!strcmp(c->tasks[i].name, name)) return i;
  return -1;
}

int wf_pe_class_add_task(wf_pe_class *c, const char *name, int kind, int color, int active,
                         int blocked) {
  if (c->n_tasks == WF_PE_MAX_TASKS) return -1;
  GROW(c->tasks, c->n_tasks, c->cap_tasks);
  if (c->n_tasks) c->tasks[c->n_tasks - 1].end = c->n_code;
  wf_pe_task *t = &c->tasks[c->n_tasks];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->kind = kind;
  t->color = color;
  t->start = t->end = c->n_code;
  t->active = active;
  t->blocked = blocked;
  return c->n_tasks++;
}

int wf_pe_class_add_instr(wf_pe_class *c, const wf_pe_instr *in) {
  GROW(c->code, c->n_code, c->cap_code);
  int idx = c->n_code++;
  if (c->n_tasks) c->tasks[c->n_tasks - 1].end = c->n_code;
  c->code[idx] = *in;
  c->code[idx].match = -1;
  if (in->op == WF_PEOP_ENDLOOP) {
    /* The innermost open loop is the last LOOP without a match. */
    for (int i = idx - 1; i >= 0; i--)
      if (c->code[i].op == WF_PEOP_LOOP && c->code[i].match < 0) {
        c->code[i].match = idx;
        c->code[idx].match = i;
        break;
      }
    WF_ASSERT(c->code[idx].match >= 0);
  }
  return idx;
}

wf_pe_term wf_term_int(int32_t v) { return (wf_pe_term){WF_TERM_INT, 0, 0, v, 0}; }
wf_pe_term wf_term(wf_term_kind kind, int32_t k) { return (wf_pe_term){(uint8_t)kind, 0, 0, k, 0}; }
wf_pe_term wf_term_var(int var, int32_t k) { return (wf_pe_term){WF_TERM_VAR, (uint8_t)var, 0, k, 0}; }
wf_pe_term wf_term_scaled(wf_pe_term t, int c, int32_t k) {
  WF_ASSERT(c != 0 && c >= -WF_PE_MAX_SCALE && c <= WF_PE_MAX_SCALE && t.kind != WF_TERM_INT);
  t.mul = c == 1 ? 0 : c;
  t.k = k;
  return t;
}
wf_pe_term wf_term_affine(int v, int64_t step, int64_t base) {
  WF_ASSERT(base >= INT32_MIN && base <= INT32_MAX);
  if (v < 0 || step == 0) return wf_term_int((int32_t)base);
  return wf_term_scaled(wf_term_var(v, 0), (int)step, (int32_t)base);
}
wf_pe_guard wf_guard0(void) {
  wf_pe_guard g;
  memset(&g, 0, sizeof g);
  return g;
}
enum { AX_X = 1, AX_Y = 2, AX_OTHER = 4 };

/* R and C are the same on every PE of a row (C is the row's count, R region-wide): they go
 * with y. */
static int term_axes(const wf_pe_term *t) {
  switch (t->kind) {
    case WF_TERM_X: return AX_X;
    case WF_TERM_Y: case WF_TERM_R: case WF_TERM_C: return AX_Y;
    case WF_TERM_VAR: return AX_OTHER;
    default: return 0;
  }
}

static int term_is_step(const wf_pe_term *t) { return t->kind == WF_TERM_R || t->kind == WF_TERM_C; }

int wf_guard_uses_step(const wf_pe_guard *g) {
  for (int i = 0; i < g->n; i++)
    if (term_is_step(&g->c[i].a) || (g->c[i].cmp != WF_CMP_IN && term_is_step(&g->c[i].b))) return 1;
  return 0;
}

int wf_guard_split(const wf_pe_guard *g, wf_pe_guard *gx, wf_pe_guard *gy) {
  *gx = wf_guard0();
  *gy = wf_guard0();
  for (int i = 0; i < g->n; i++) {
    const wf_pe_cond *c = &g->c[i];
    int a = term_axes(&c->a) | (c->cmp == WF_CMP_IN ? 0 : term_axes(&c->b));
    if (a & AX_OTHER || a == (AX_X | AX_Y)) return 1;
    wf_pe_guard *to = a == AX_Y ? gy : gx;
    to->c[to->n++] = *c;
  }
  return 0;
}

void wf_guard_add(wf_pe_guard *g, wf_pe_term a, wf_cmp cmp, wf_pe_term b) {
  WF_ASSERT(g->n < WF_PE_MAX_GUARD);
  g->c[g->n++] = (wf_pe_cond){a, b, (uint8_t)cmp};
}
void wf_guard_add_in(wf_pe_guard *g, wf_pe_term a, int set) {
  WF_ASSERT(set >= 0);
  wf_guard_add(g, a, WF_CMP_IN, wf_term_int(set));
}

int wf_guard_eval(const wf_pe_guard *g, const wf_pe_env *e) {
  for (int i = 0; i < g->n; i++)
    if (!wf_cond_eval(&g->c[i], e)) return 0;
  return 1;
}

/* ---- writer ---------------------------------------------------------------------------- */

static const char *const cmp_text[] = {"==", "!=", "<", "<=", ">", ">=", " in "};

static void term_str(const wf_pe_class *c, const wf_pe_term *t, char *buf, size_t cap) {
  const char *base = NULL;
  switch (t->kind) {
    case WF_TERM_INT: snprintf(buf, cap, "%d", (int)t->k); return;
    case WF_TERM_X: base = "x"; break;
    case WF_TERM_Y: base = "y"; break;
    case WF_TERM_W: base = "W"; break;
    case WF_TERM_H: base = "H"; break;
    case WF_TERM_VAR: base = c->vars[t->var]; break;
    case WF_TERM_R: base = "R"; break;
    case WF_TERM_C: base = "C"; break;
    default: snprintf(buf, cap, "?"); return;
  }
  char m[16] = "", sc[16] = "";
  if (t->mod) snprintf(m, sizeof m, "%%%d", (int)t->mod);
  if (t->mul > 1 || t->mul < 0) snprintf(sc, sizeof sc, "%d*", (int)t->mul);
  if (t->k) snprintf(buf, cap, "%s%s%s%+d", sc, base, m, (int)t->k);
  else snprintf(buf, cap, "%s%s%s", sc, base, m);
}

static void guard_str(const wf_pe_class *c, const wf_pe_guard *g, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  if (!g->n) return;
  n += snprintf(buf + n, cap - n, "[");
  for (int i = 0; i < g->n && n < cap; i++) {
    char a[32], b[32];
    term_str(c, &g->c[i].a, a, sizeof a);
    if (g->c[i].cmp == WF_CMP_IN) {
      int k = g->c[i].b.k;
      snprintf(b, sizeof b, "%s", k >= 0 && k < c->n_sets ? c->sets[k].name : "?");
    } else {
      term_str(c, &g->c[i].b, b, sizeof b);
    }
    n += snprintf(buf + n, cap - n, "%s%s%s%s", i ? ", " : "", a, cmp_text[g->c[i].cmp], b);
  }
  if (n < cap) snprintf(buf + n, cap - n, "] ");
}

static const char *const mode_text[] = {"ij", "i", "j"};

/* `+T2` for an operand's second term, "" when it has none (an integer term). */
static void plus_term2(const wf_pe_class *c, const wf_pe_term *t2, char *buf, size_t cap) {
  buf[0] = 0;
  if (t2->kind == WF_TERM_INT) return;
  buf[0] = '+';
  term_str(c, t2, buf + 1, cap - 1);
}

static void arg_str(const wf_pe_class *c, char letter, const wf_pe_arg *a, char *buf, size_t cap) {
  switch (letter) {
    case 'd':
    case 's':
      if (a->term.kind != WF_TERM_INT || a->term2.kind != WF_TERM_INT) {
        /* the first term carries the constant: the parser reads `+16*j+4` back the same */
        wf_pe_term t = a->term;
        t.k += a->off;
        char ts[64], t2[40];
        term_str(c, &t, ts, sizeof ts);
        plus_term2(c, &a->term2, t2, sizeof t2);
        snprintf(buf, cap, "%s+%s%s", c->syms[a->sym].name, ts, t2);
      } else if (a->off) snprintf(buf, cap, "%s+%d", c->syms[a->sym].name, (int)a->off);
      else snprintf(buf, cap, "%s", c->syms[a->sym].name);
      return;
    case 'c': snprintf(buf, cap, "c%d", (int)a->term.k); return;
    case 'm': snprintf(buf, cap, "%s", mode_text[a->term.k]); return;
    case 'v': snprintf(buf, cap, "%s", c->vars[a->term.var]); return;
    case 't':
      snprintf(buf, cap, "%s", a->term.k >= 0 && a->term.k < c->n_tasks ? c->tasks[a->term.k].name : "?");
      return;
    default: {
      char ts[64], t2[40];
      term_str(c, &a->term, ts, sizeof ts);
      plus_term2(c, &a->term2, t2, sizeof t2);
      snprintf(buf, cap, "%s%s", ts, t2);
      return;
    }
  }
}

void wf_pe_instr_synopsis(const wf_pe_class *c, const wf_pe_instr *in, char *buf, size_t cap) {
  const wf_peop_info *info = &wf_peops[in->op];
  size_t n = 0;
  for (const char *p = info->synopsis; *p && n + 1 < cap; p++) {
    if (p[0] == 'P' && p[1] >= '1' && p[1] <= '9' && p[1] - '1' < (int)strlen(info->sig)) {
      int i = p[1] - '1';
      char a[160];
      arg_str(c, info->sig[i], &in->args[i], a, sizeof a);
      n += snprintf(buf + n, cap - n, "%s", a);
      p++;
    } else {
      buf[n++] = *p;
      buf[n] = 0;
    }
  }
  if (n < cap) buf[n] = 0;
}

/* `.set NAME RUN...`, runs `lo-hi` or `v`, at most about 100 characters a line: a longer set
 * goes on several lines of the same name (the parser adds them up). */
static void write_set(const wf_pe_set *s, FILE *out) {
  char line[160];
  int n = snprintf(line, sizeof line, ".set %s", s->name);
  for (int v = 0; v < s->n;) {
    if (!s->member[v]) {
      v++;
      continue;
    }
    int e = v;
    while (e + 1 < s->n && s->member[e + 1]) e++;
    if (n > 96) {
      fprintf(out, "%s\n", line);
      n = snprintf(line, sizeof line, ".set %s", s->name);
    }
    n += e > v ? snprintf(line + n, sizeof line - (size_t)n, " %d-%d", v, e)
               : snprintf(line + n, sizeof line - (size_t)n, " %d", v);
    v = e + 1;
  }
  fprintf(out, "%s\n", line);
}

void wf_pe_class_write(const wf_pe_class *c, FILE *out) {
  fprintf(out, "# waferc PE program class '%s' (format documented in docs/pe-programs.md)\n",
          c->name);
  fprintf(out, "# Every PE of the class runs this text; x, y (position in the region) and W, H\n"
               "# (region size) are its parameters. [cond, ...] guards select roles.\n");
  fprintf(out, ".format %d\n.class %s\n\n", WF_PE_FORMAT_VERSION, c->name);
  fprintf(out, "# memory map: symbol, byte offset, bytes\n");
  for (int i = 0; i < c->n_syms; i++)
    fprintf(out, ".sym %-12s %8lld %8lld\n", c->syms[i].name, (long long)c->syms[i].offset,
            (long long)c->syms[i].bytes);
  if (c->n_sets) fprintf(out, "\n# coordinate sets (guards `x in NAME`): members, as runs lo-hi\n");
  for (int i = 0; i < c->n_sets; i++) write_set(&c->sets[i], out);
  fprintf(out, "\n# colors and router configuration: rx direction -> tx directions\n");
  for (int i = 0; i < c->n_colors; i++) {
    int col = c->colors[i].color;
    fprintf(out, ".color c%d %s\n", col, c->colors[i].purpose);
    if (c->colors[i].ring) fprintf(out, ".switch c%d ring\n", col);
    for (int r = 0; r < c->n_routes; r++) {
      const wf_pe_route *rt = &c->routes[r];
      if (rt->color != col) continue;
      char g[160];
      guard_str(c, &rt->guard, g, sizeof g);
      if (rt->pos) fprintf(out, "%s.route c%d p%d %s ->", g, col, rt->pos, wf_dir_names[rt->rx]);
      else fprintf(out, "%s.route c%d %s ->", g, col, wf_dir_names[rt->rx]);
      if (!rt->tx) fprintf(out, " none");
      for (int d = 0; d < WF_DIR_COUNT; d++)
        if (rt->tx >> d & 1) fprintf(out, " %s", wf_dir_names[d]);
      fputc('\n', out);
    }
  }
  fprintf(out, "\n.code\n");
  int depth = 0;
  static const char *const kinds[] = {"local", "data", "control"};
  for (int i = 0; i <= c->n_code; i++) {
    for (int t = 0; t < c->n_tasks; t++) {
      const wf_pe_task *tk = &c->tasks[t];
      if (tk->start != i || (t == 0 && !strcmp(tk->name, "main") && tk->active && !tk->blocked &&
                             tk->kind == WF_TASK_LOCAL && tk->start == 0 && c->n_tasks == 1))
        continue;
      fprintf(out, ".task %s %s", tk->name, kinds[tk->kind]);
      if (tk->kind != WF_TASK_LOCAL) fprintf(out, " c%d", tk->color);
      fprintf(out, "%s%s\n", tk->active ? " active" : "", tk->blocked ? " blocked" : "");
    }
    if (i == c->n_code) break;
    const wf_pe_instr *in = &c->code[i];
    const wf_peop_info *info = &wf_peops[in->op];
    if (in->op == WF_PEOP_ENDLOOP) depth--;
    char line[512];
    size_t n = 0;
    n += snprintf(line + n, sizeof line - n, "%*s", 2 * depth, "");
    char g[160];
    guard_str(c, &in->guard, g, sizeof g);
    n += snprintf(line + n, sizeof line - n, "%s%s", g, info->name);
    for (int a = 0; info->sig[a] && n < sizeof line; a++) {
      char s[160];
      arg_str(c, info->sig[a], &in->args[a], s, sizeof s);
      n += snprintf(line + n, sizeof line - n, " %s", s);
    }
    char syn[256];
    wf_pe_instr_synopsis(c, in, syn, sizeof syn);
    fprintf(out, "%-44s # %s\n", line, syn);
    if (in->op == WF_PEOP_LOOP) depth++;
  }
}
