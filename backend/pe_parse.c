/* Parser of the .wpe text form (docs/pe-programs.md). Line oriented: each line is a
 * directive (.format, .class, .sym, .color, .route, .code) or, after .code, one instruction,
 * optionally preceded by a guard `[cond, ...]`. '#' starts a comment. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/pe_program.h"
#include "waferc/diag.h"

typedef struct {
  const char *path;
  unsigned line;
  const char *line_start;
  wf_pe_class *c;
  int errors;
  int in_code;
  int have_format;
  int loop_stack[16];
  int depth;
} pstate;

static void perr(pstate *ps, const char *at, const char *fmt, const char *a, const char *b) {
  unsigned col = at ? (unsigned)(at - ps->line_start) + 1 : 1;
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
  wf_error(wf_loc_make(ps->path, ps->line, col), "%s", msg);
  ps->errors++;
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Copies the next whitespace-delimited token into tok; returns the pointer after it, or NULL
 * at end of line. *start receives the token's start. */
static const char *next_tok(const char *p, char *tok, size_t cap, const char **start) {
  p = skip_ws(p);
  if (!*p) return NULL;
  *start = p;
  size_t n = 0;
  while (*p && *p != ' ' && *p != '\t') {
    if (n + 1 < cap) tok[n++] = *p;
    p++;
  }
  tok[n] = 0;
  return p;
}

static int parse_int(const char *s, int32_t *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < INT32_MIN || v > INT32_MAX) return -1;
  *out = (int32_t)v;
  return 0;
}

/* term := int | (x|y|W|H|var) ([+-]int)? */
static int parse_term(pstate *ps, const char *s, wf_pe_term *t) {
  while (isspace((unsigned char)*s)) s++;
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  size_t n = strlen(buf);
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
    t->kind = WF_TERM_INT;
    t->var = 0;
    return parse_int(buf, &t->k);
  }
  size_t i = 0;
  while (isalnum((unsigned char)buf[i]) || buf[i] == '_') i++;
  if (!i) return -1;
  char name[32];
  if (i >= sizeof name) return -1;
  memcpy(name, buf, i);
  name[i] = 0;
  t->var = 0;
  t->k = 0;
  if (!strcmp(name, "x")) t->kind = WF_TERM_X;
  else if (!strcmp(name, "y")) t->kind = WF_TERM_Y;
  else if (!strcmp(name, "W")) t->kind = WF_TERM_W;
  else if (!strcmp(name, "H")) t->kind = WF_TERM_H;
  else {
    int v = wf_pe_class_find_var(ps->c, name, 0);
    if (v < 0) return -1;
    t->kind = WF_TERM_VAR;
    t->var = (uint8_t)v;
  }
  if (!buf[i]) return 0;
  if (buf[i] != '+' && buf[i] != '-') return -1;
  return parse_int(buf + i + (buf[i] == '+'), &t->k);
}

/* Parses "[a==b, c<d]" at p; returns the pointer after ']' or NULL after reporting. */
static const char *parse_guard(pstate *ps, const char *p, wf_pe_guard *g) {
  *g = wf_guard0();
  const char *close = strchr(p, ']');
  if (!close) {
    perr(ps, p, "unterminated guard: expected ']'", NULL, NULL);
    return NULL;
  }
  const char *q = p + 1;
  while (q < close) {
    const char *comma = memchr(q, ',', (size_t)(close - q));
    const char *end = comma ? comma : close;
    char cond[128];
    size_t len = (size_t)(end - q);
    if (len >= sizeof cond) len = sizeof cond - 1;
    memcpy(cond, q, len);
    cond[len] = 0;
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    static const wf_cmp codes[] = {WF_CMP_EQ, WF_CMP_NE, WF_CMP_LE, WF_CMP_GE, WF_CMP_LT, WF_CMP_GT};
    char *at = NULL;
    int which = -1;
    for (int i = 0; i < 6 && !at; i++)
      if ((at = strstr(cond, ops[i]))) which = i;
    if (!at || g->n == WF_PE_MAX_GUARD) {
      perr(ps, q, "bad guard condition '%s': expected term (==|!=|<|<=|>|>=) term, at most 4", cond,
           NULL);
      return NULL;
    }
    *at = 0;
    wf_pe_cond *c = &g->c[g->n];
    if (parse_term(ps, cond, &c->a) || parse_term(ps, at + strlen(ops[which]), &c->b)) {
      perr(ps, q, "bad term in guard '%s': expected an integer, x, y, W, H or a loop variable", cond,
           NULL);
      return NULL;
    }
    c->cmp = (uint8_t)codes[which];
    g->n++;
    q = end + 1;
  }
  return close + 1;
}

static int parse_dir(const char *s) {
  for (int d = 0; d < WF_DIR_COUNT; d++)
    if (!strcmp(s, wf_dir_names[d])) return d;
  return -1;
}

static int parse_color(const char *s, int32_t *out) {
  return (s[0] == 'c' && parse_int(s + 1, out) == 0 && *out >= 0 && *out < 32) ? 0 : -1;
}

static int class_has_color(const wf_pe_class *c, int color) {
  for (int i = 0; i < c->n_colors; i++)
    if (c->colors[i].color == color) return 1;
  return 0;
}

static void parse_directive(pstate *ps, const char *p, const wf_pe_guard *g, const char *gstart) {
  char tok[128];
  const char *st;
  p = next_tok(p, tok, sizeof tok, &st);
  const char *dir_at = st;
  if (g->n && strcmp(tok, ".route")) {
    perr(ps, gstart, "a guard may only precede .route or an instruction", NULL, NULL);
    return;
  }
  if (!strcmp(tok, ".format")) {
    int32_t v;
    const char *q = next_tok(p, tok, sizeof tok, &st);
    if (!q || parse_int(tok, &v)) {
      perr(ps, dir_at, "expected a format version after .format", NULL, NULL);
      return;
    }
    if (v != WF_PE_FORMAT_VERSION) {
      char want[16];
      snprintf(want, sizeof want, "%d", WF_PE_FORMAT_VERSION);
      perr(ps, st, "unsupported .wpe format version %s (supported: %s)", tok, want);
      return;
    }
    ps->have_format = 1;
  } else if (!strcmp(tok, ".class")) {
    if (!next_tok(p, tok, sizeof tok, &st)) {
      perr(ps, dir_at, "expected a class name after .class", NULL, NULL);
      return;
    }
    if (strlen(tok) >= sizeof ps->c->name) {
      perr(ps, st, "class name too long", NULL, NULL);
      return;
    }
    memcpy(ps->c->name, tok, strlen(tok) + 1);
  } else if (!strcmp(tok, ".sym")) {
    char name[128], off[64], bytes[64];
    const char *s1, *s2, *s3;
    const char *q = next_tok(p, name, sizeof name, &s1);
    q = q ? next_tok(q, off, sizeof off, &s2) : NULL;
    q = q ? next_tok(q, bytes, sizeof bytes, &s3) : NULL;
    char *e1, *e2;
    long long o = q ? strtoll(off, &e1, 10) : -1, b = q ? strtoll(bytes, &e2, 10) : -1;
    if (!q || *e1 || *e2 || o < 0 || b < 0 || (o % 4) || strlen(name) >= 64 ||
        !strchr("%@$", name[0])) {
      perr(ps, dir_at, ".sym expects NAME OFFSET BYTES (name starting with %%, @ or $; offset "
                       "4-byte aligned)", NULL, NULL);
      return;
    }
    if (wf_pe_class_find_sym(ps->c, name) >= 0) {
      perr(ps, s1, "duplicate symbol '%s'", name, NULL);
      return;
    }
    int i = wf_pe_class_add_sym(ps->c, name, b);
    ps->c->syms[i].offset = o;
    ps->c->mem_bytes = 0;
    for (int k = 0; k < ps->c->n_syms; k++) {
      int64_t end = ps->c->syms[k].offset + ps->c->syms[k].bytes;
      if (end > ps->c->mem_bytes) ps->c->mem_bytes = end;
    }
  } else if (!strcmp(tok, ".color")) {
    int32_t col;
    const char *q = next_tok(p, tok, sizeof tok, &st);
    if (!q || parse_color(tok, &col)) {
      perr(ps, q ? st : dir_at, "expected a color c0..c31 after .color", NULL, NULL);
      return;
    }
    const char *purpose = skip_ws(q);
    wf_pe_class_add_color(ps->c, col, *purpose ? purpose : "-");
  } else if (!strcmp(tok, ".route")) {
    int32_t col;
    const char *q = next_tok(p, tok, sizeof tok, &st);
    if (!q || parse_color(tok, &col)) {
      perr(ps, q ? st : dir_at, "expected a color c0..c31 after .route", NULL, NULL);
      return;
    }
    if (!class_has_color(ps->c, col)) {
      perr(ps, st, "unknown color '%s': declare it with .color first", tok, NULL);
      return;
    }
    q = next_tok(q, tok, sizeof tok, &st);
    int rx = q ? parse_dir(tok) : -1;
    if (rx < 0) {
      perr(ps, q ? st : dir_at, "expected an rx direction (N, E, S, W or RAMP)", NULL, NULL);
      return;
    }
    q = next_tok(q, tok, sizeof tok, &st);
    if (!q || strcmp(tok, "->")) {
      perr(ps, q ? st : dir_at, "expected '->' after the rx direction", NULL, NULL);
      return;
    }
    unsigned tx = 0;
    int any = 0;
    while ((q = next_tok(q, tok, sizeof tok, &st))) {
      any = 1;
      if (!strcmp(tok, "none")) continue;
      int d = parse_dir(tok);
      if (d < 0) {
        perr(ps, st, "unknown direction '%s' (expected N, E, S, W, RAMP or none)", tok, NULL);
        return;
      }
      if (d == rx && d != WF_DIR_RAMP) {
        perr(ps, st, "route sends a wavelet back where it came from (%s)", tok, NULL);
        return;
      }
      tx |= 1u << d;
    }
    if (!any) {
      perr(ps, dir_at, "expected tx directions after '->' (or none)", NULL, NULL);
      return;
    }
    wf_pe_class_add_route(ps->c, g, col, rx, tx);
  } else if (!strcmp(tok, ".code")) {
    ps->in_code = 1;
  } else {
    perr(ps, dir_at, "unknown directive '%s'", tok, NULL);
  }
}

static void parse_instr(pstate *ps, const char *p, const wf_pe_guard *g) {
  char tok[128];
  const char *st;
  p = next_tok(p, tok, sizeof tok, &st);
  wf_peop op;
  if (wf_peop_lookup(tok, &op)) {
    perr(ps, st, "unknown instruction '%s'", tok, NULL);
    return;
  }
  const char *op_at = st;
  wf_pe_instr in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.guard = *g;
  in.line = (int)ps->line;
  const char *sig = wf_peops[op].sig;
  for (int i = 0; sig[i]; i++) {
    const char *q = next_tok(p, tok, sizeof tok, &st);
    if (!q) {
      char want[8];
      snprintf(want, sizeof want, "%d", (int)strlen(sig));
      perr(ps, op_at, "'%s' expects %s operands", wf_peops[op].name, want);
      return;
    }
    p = q;
    wf_pe_arg *a = &in.args[i];
    switch (sig[i]) {
      case 'd':
      case 's': {
        char *plus = strchr(tok, '+');
        a->off = 0;
        if (plus) {
          *plus = 0;
          if (parse_int(plus + 1, &a->off) || a->off < 0) {
            perr(ps, st, "bad buffer offset in '%s'", tok, NULL);
            return;
          }
        }
        a->sym = wf_pe_class_find_sym(ps->c, tok);
        if (a->sym < 0) {
          perr(ps, st, "unknown symbol '%s' (declare it with .sym)", tok, NULL);
          return;
        }
        break;
      }
      case 'c': {
        int32_t col;
        if (parse_color(tok, &col)) {
          perr(ps, st, "expected a color c0..c31, got '%s'", tok, NULL);
          return;
        }
        if (!class_has_color(ps->c, col)) {
          perr(ps, st, "unknown color '%s': declare it with .color", tok, NULL);
          return;
        }
        a->term = wf_term_int(col);
        break;
      }
      case 'm':
        if (!strcmp(tok, "ij")) a->term = wf_term_int(WF_BMODE_IJ);
        else if (!strcmp(tok, "i")) a->term = wf_term_int(WF_BMODE_I);
        else if (!strcmp(tok, "j")) a->term = wf_term_int(WF_BMODE_J);
        else {
          perr(ps, st, "expected a broadcast mode ij, i or j, got '%s'", tok, NULL);
          return;
        }
        break;
      case 'v': {
        if (!isalpha((unsigned char)tok[0]) || !strcmp(tok, "x") || !strcmp(tok, "y") ||
            !strcmp(tok, "W") || !strcmp(tok, "H")) {
          perr(ps, st, "bad loop variable '%s'", tok, NULL);
          return;
        }
        int v = wf_pe_class_find_var(ps->c, tok, 1);
        if (v < 0) {
          perr(ps, st, "too many loop variables ('%s')", tok, NULL);
          return;
        }
        a->term = wf_term_var(v, 0);
        break;
      }
      default:
        if (parse_term(ps, tok, &a->term)) {
          perr(ps, st, "expected an integer term (int, x, y, W, H or a loop variable[+-int]), got '%s'",
               tok, NULL);
          return;
        }
    }
  }
  if (next_tok(p, tok, sizeof tok, &st)) {
    perr(ps, st, "unexpected operand '%s'", tok, NULL);
    return;
  }
  if (op == WF_PEOP_LOOP) {
    if (ps->depth == 16) {
      perr(ps, op_at, "loops nested too deeply", NULL, NULL);
      return;
    }
    ps->loop_stack[ps->depth++] = ps->c->n_code;
  } else if (op == WF_PEOP_ENDLOOP) {
    if (g->n) {
      perr(ps, op_at, "endloop cannot be guarded (guard the loop instead)", NULL, NULL);
      return;
    }
    if (!ps->depth) {
      perr(ps, op_at, "endloop without loop", NULL, NULL);
      return;
    }
    ps->depth--;
  }
  wf_pe_class_add_instr(ps->c, &in);
}

wf_pe_class *wf_pe_class_parse_string(const char *text, const char *path) {
  pstate ps;
  memset(&ps, 0, sizeof ps);
  ps.path = path;
  ps.c = wf_pe_class_new("");
  const char *p = text;
  char line[1024];
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    ps.line++;
    if (len >= sizeof line) {
      ps.line_start = line;
      perr(&ps, NULL, "line too long", NULL, NULL);
      len = sizeof line - 1;
    }
    memcpy(line, p, len);
    line[len] = 0;
    p += len + (nl ? 1 : 0);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    ps.line_start = line;
    const char *q = skip_ws(line);
    if (!*q) continue;
    wf_pe_guard g = wf_guard0();
    const char *gstart = q;
    if (*q == '[') {
      q = parse_guard(&ps, q, &g);
      if (!q) continue;
      q = skip_ws(q);
    }
    if (*q == '.') parse_directive(&ps, q, &g, gstart);
    else if (!ps.in_code) perr(&ps, q, "instruction before .code", NULL, NULL);
    else parse_instr(&ps, q, &g);
  }
  ps.line_start = NULL;
  if (!ps.errors && !ps.have_format) {
    wf_error_at(path, "missing '.format %d' line", WF_PE_FORMAT_VERSION);
    ps.errors++;
  }
  if (!ps.errors && ps.depth) {
    wf_error_at(path, "%d loop(s) not closed by endloop", ps.depth);
    ps.errors++;
  }
  if (!ps.errors && !ps.c->name[0]) {
    wf_error_at(path, "missing '.class NAME' line");
    ps.errors++;
  }
  if (ps.errors) {
    wf_pe_class_free(ps.c);
    return NULL;
  }
  return ps.c;
}

wf_pe_class *wf_pe_class_parse(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    wf_error_at(path, "cannot open PE program: %s", strerror(errno));
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  WF_ASSERT(text != NULL);
  size_t got = fread(text, 1, (size_t)n, f);
  text[got] = 0;
  fclose(f);
  wf_pe_class *c = wf_pe_class_parse_string(text, path);
  free(text);
  return c;
}
