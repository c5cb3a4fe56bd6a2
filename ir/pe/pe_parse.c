/* Parser of the .wpe text form (docs/pe-programs.md). Line oriented: each line is a
 * directive (.format, .class, .sym, .color, .route, .code) or, after .code, one instruction,
 * optionally preceded by a guard `[cond, ...]`. '#' starts a comment. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/pe/pe_program.h"
#include "ir/support/fsutil.h"
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
  char names[WF_PE_MAX_TASKS][32]; /* .task names in file order (pre-scan) */
  int n_names;
  int main_offset;                 /* 1 when code precedes the first .task (implicit main) */
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

/* term := int | ('-'? int '*')? (x|y|W|H|R|C|var) ('%' int)? ([+-]int)? */
static int parse_term(pstate *ps, const char *s, wf_pe_term *t) {
  while (isspace((unsigned char)*s)) s++;
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  size_t n = strlen(buf);
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  t->mul = 0;
  size_t i = 0;
  int neg = buf[0] == '-';
  if (isdigit((unsigned char)buf[neg])) { /* a constant, or the scale of `3*y`, `-3*y` */
    i = (size_t)neg;
    while (isdigit((unsigned char)buf[i])) i++;
    if (buf[i] == '*') {
      char c[16];
      int32_t cv;
      if (i >= sizeof c) return -1;
      memcpy(c, buf, i);
      c[i] = 0;
      if (parse_int(c, &cv) || cv == 0 || cv < -WF_PE_MAX_SCALE || cv > WF_PE_MAX_SCALE) return -1;
      t->mul = cv == 1 ? 0 : cv;
      memmove(buf, buf + i + 1, strlen(buf + i + 1) + 1);
      i = 0;
    }
  }
  if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
    if (t->mul) return -1; /* `2*3`: a scale applies to a parameter or loop variable */
    t->kind = WF_TERM_INT;
    t->var = 0;
    t->mod = 0;
    return parse_int(buf, &t->k);
  }
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
  else if (!strcmp(name, "R")) t->kind = WF_TERM_R;
  else if (!strcmp(name, "C")) t->kind = WF_TERM_C;
  else {
    int v = wf_pe_class_find_var(ps->c, name, 0);
    if (v < 0) return -1;
    t->kind = WF_TERM_VAR;
    t->var = (uint8_t)v;
  }
  t->mod = 0;
  if (buf[i] == '%') {
    size_t j = i + 1;
    while (isdigit((unsigned char)buf[j])) j++;
    char m[16];
    if (j == i + 1 || j - i - 1 >= sizeof m) return -1;
    memcpy(m, buf + i + 1, j - i - 1);
    m[j - i - 1] = 0;
    int32_t mv;
    if (parse_int(m, &mv) || mv < 1 || mv > 65535) return -1;
    t->mod = (uint16_t)mv;
    i = j;
  }
  if (!buf[i]) return 0;
  if (buf[i] != '+' && buf[i] != '-') return -1;
  return parse_int(buf + i + (buf[i] == '+'), &t->k);
}

/* A sum of pieces joined by + or - (`16*j+-8*x+4`, `x-1`, `-2*u+30`), each a constant or a
 * scaled variable term: the constants summed into *k, at most two variable pieces (their
 * own k 0) in v[0..*nv). */
static int parse_sum(pstate *ps, const char *s, wf_pe_term v[2], int *nv, int64_t *k) {
  char buf[96];
  if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf || !buf[0]) return -1;
  *k = 0;
  *nv = 0;
  for (size_t i = 0; buf[i];) {
    size_t j = i + 1;
    while (buf[j] && !((buf[j] == '+' || buf[j] == '-') && buf[j - 1] != '+' && buf[j - 1] != '*' &&
                       buf[j - 1] != '%'))
      j++;
    char piece[96];
    size_t from = i + (buf[i] == '+' && i > 0);
    if (j <= from) return -1;
    memcpy(piece, buf + from, j - from);
    piece[j - from] = 0;
    wf_pe_term t;
    if (parse_term(ps, piece, &t)) return -1;
    *k += t.k;
    if (t.kind != WF_TERM_INT) {
      if (*nv == 2) return -1;
      t.k = 0;
      v[(*nv)++] = t;
    }
    if (*k < INT32_MIN || *k > INT32_MAX) return -1;
    i = j;
  }
  return 0;
}

/* An integer operand: a constant or up to two variable terms plus a constant. */
static int parse_int_sum(pstate *ps, const char *s, wf_pe_arg *a) {
  wf_pe_term v[2];
  int nv;
  int64_t k;
  if (parse_sum(ps, s, v, &nv, &k)) return -1;
  a->term = nv ? v[0] : wf_term_int(0);
  a->term.k = (int32_t)k;
  a->term2 = nv == 2 ? v[1] : wf_term_int(0);
  return 0;
}

/* A buffer offset after `%sym+`: as an integer operand, but not a negative constant; a
 * constant alone is kept in off. */
static int parse_offset(pstate *ps, const char *s, wf_pe_arg *a) {
  if (parse_int_sum(ps, s, a)) return -1;
  if (a->term.kind != WF_TERM_INT) return 0;
  if (a->term.k < 0) return -1;
  a->off = a->term.k;
  a->term.k = 0;
  return 0;
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
    char *in = strstr(cond, " in ");
    if (in && g->n < WF_PE_MAX_GUARD) { /* `term in NAME`: a member of a declared set */
      *in = 0;
      char name[64];
      const char *nst;
      wf_pe_cond *c = &g->c[g->n];
      if (parse_term(ps, cond, &c->a)) {
        perr(ps, q, "bad term in guard '%s': expected an integer or [c*](x|y|W|H|R|C|loop variable)[%%M][+-k]",
             cond, NULL);
        return NULL;
      }
      const char *rest = next_tok(in + 4, name, sizeof name, &nst);
      int set = rest ? wf_pe_class_find_set(ps->c, name) : -1;
      if (set < 0 || *skip_ws(rest)) {
        perr(ps, q, "unknown set in guard condition '%s in %s' (declare it with .set first)", cond,
             rest ? name : "");
        return NULL;
      }
      c->b = wf_term_int(set);
      c->cmp = WF_CMP_IN;
      g->n++;
      q = end + 1;
      continue;
    }
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    static const wf_cmp codes[] = {WF_CMP_EQ, WF_CMP_NE, WF_CMP_LE, WF_CMP_GE, WF_CMP_LT, WF_CMP_GT};
    char *at = NULL;
    int which = -1;
    for (int i = 0; i < 6 && !at; i++)
      if ((at = strstr(cond, ops[i]))) which = i;
    if (!at || g->n == WF_PE_MAX_GUARD) {
      perr(ps, q, "bad guard condition '%s': expected term (==|!=|<|<=|>|>=) term or term in SET, at most " WF_PE_MAX_GUARD_TEXT, cond,
           NULL);
      return NULL;
    }
    *at = 0;
    wf_pe_cond *c = &g->c[g->n];
    if (parse_term(ps, cond, &c->a) || parse_term(ps, at + strlen(ops[which]), &c->b)) {
      perr(ps, q, "bad term in guard '%s': expected an integer or [c*](x|y|W|H|R|C|loop variable)[%%M][+-k]", cond,
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

/* .task NAME local|data cN|control cN [active] [blocked]: starts the task's body. */
static void parse_task(pstate *ps, const char *p, const char *dir_at) {
  char name[64], tok[64];
  const char *st, *nst;
  if (ps->c->format < 2) {
    perr(ps, dir_at, ".task needs .format 2", NULL, NULL);
    return;
  }
  if (!ps->in_code) {
    perr(ps, dir_at, ".task must follow .code", NULL, NULL);
    return;
  }
  if (ps->depth) {
    perr(ps, dir_at, ".task inside a loop", NULL, NULL);
    return;
  }
  const char *q = next_tok(p, name, sizeof name, &nst);
  if (!q || !isalpha((unsigned char)name[0]) || strlen(name) >= 32) {
    perr(ps, dir_at, "expected a task name after .task", NULL, NULL);
    return;
  }
  if (wf_pe_class_find_task(ps->c, name) >= 0) {
    perr(ps, nst, "duplicate task '%s'", name, NULL);
    return;
  }
  q = next_tok(q, tok, sizeof tok, &st);
  int kind = !q ? -1 : !strcmp(tok, "local") ? WF_TASK_LOCAL : !strcmp(tok, "data") ? WF_TASK_DATA
                     : !strcmp(tok, "control") ? WF_TASK_CONTROL : -1;
  if (kind < 0) {
    perr(ps, q ? st : dir_at, "expected the task kind: local, data cN or control cN", NULL, NULL);
    return;
  }
  int32_t col = -1;
  if (kind != WF_TASK_LOCAL) {
    q = next_tok(q, tok, sizeof tok, &st);
    if (!q || parse_color(tok, &col) || !class_has_color(ps->c, col)) {
      perr(ps, q ? st : dir_at, "a data or control task needs a declared color", NULL, NULL);
      return;
    }
    for (int i = 0; i < ps->c->n_tasks; i++)
      if (ps->c->tasks[i].kind == kind && ps->c->tasks[i].color == col) {
        perr(ps, st, "color '%s' already has a task of this kind", tok, NULL);
        return;
      }
  }
  int active = 0, blocked = 0;
  while ((q = next_tok(q, tok, sizeof tok, &st))) {
    if (!strcmp(tok, "active")) active = 1;
    else if (!strcmp(tok, "blocked")) blocked = 1;
    else {
      perr(ps, st, "unexpected '%s' (expected active or blocked)", tok, NULL);
      return;
    }
  }
  if (!ps->c->n_tasks && ps->c->n_code) { /* code before the first .task: implicit main */
    wf_pe_class_add_task(ps->c, "main", WF_TASK_LOCAL, -1, 1, 0);
    ps->c->tasks[0].start = 0;
  }
  int t = wf_pe_class_add_task(ps->c, name, kind, col, active, blocked);
  if (t < 0) {
    perr(ps, nst, "too many tasks (at most 32)", NULL, NULL);
    return;
  }
  ps->c->tasks[t].line = (int)ps->line;
}

/* `.set NAME RUN...`: runs `v` or `lo-hi` of coordinates (0 <= v < WF_PE_MAX_SET), in
 * increasing order; a second line of the same name adds to the set (the writer wraps long
 * sets). The set must come before the guards that name it. */
static void parse_set(pstate *ps, const char *p, const char *dir_at) {
  char tok[64];
  const char *st;
  const char *q = next_tok(p, tok, sizeof tok, &st);
  if (ps->c->format < 2) {
    perr(ps, dir_at, ".set needs .format 2", NULL, NULL);
    return;
  }
  if (!q || !islower((unsigned char)tok[0]) || strlen(tok) >= sizeof ps->c->sets[0].name) {
    perr(ps, q ? st : dir_at, "expected a set name after .set (a lower-case letter first, at most 15 "
                              "characters)", NULL, NULL);
    return;
  }
  for (const char *c = tok; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '_') {
      perr(ps, st, "bad set name '%s' (letters, digits and '_')", tok, NULL);
      return;
    }
  char name[64];
  memcpy(name, tok, strlen(tok) + 1);
  int i = wf_pe_class_find_set(ps->c, name);
  wf_pe_set *set = i >= 0 ? &ps->c->sets[i] : NULL;
  int32_t last = set ? set->n - 1 : -1, lo, hi;
  uint8_t *member = calloc(WF_PE_MAX_SET, 1);
  WF_ASSERT(member != NULL);
  if (set) memcpy(member, set->member, (size_t)set->n);
  while ((q = next_tok(q, tok, sizeof tok, &st))) {
    char *dash = strchr(tok, '-');
    if (dash) *dash = 0;
    if (parse_int(tok, &lo) || (dash ? parse_int(dash + 1, &hi) : (hi = lo, 0)) || lo < 0 || hi < lo ||
        hi >= WF_PE_MAX_SET) {
      if (dash) *dash = '-';
      perr(ps, st, "bad run '%s' in .set (expected V or LO-HI, 0 <= LO <= HI < 65536)", tok, NULL);
      goto done;
    }
    if (lo <= last) {
      if (dash) *dash = '-';
      perr(ps, st, "run '%s' in .set is not after the set's earlier members", tok, NULL);
      goto done;
    }
    for (int32_t v = lo; v <= hi; v++) member[v] = 1;
    last = hi;
  }
  wf_pe_class_set_members(ps->c, name, member, last + 1);
done:
  free(member);
}

static void parse_directive(pstate *ps, const char *p, const wf_pe_guard *g, const char *gstart) {
  char tok[128];
  const char *st = NULL; /* next_tok sets it when it finds a token */
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
    if (v < WF_PE_FORMAT_MIN_VERSION || v > WF_PE_FORMAT_VERSION) {
      char want[32];
      snprintf(want, sizeof want, "%d..%d", WF_PE_FORMAT_MIN_VERSION, WF_PE_FORMAT_VERSION);
      perr(ps, st, "unsupported .wpe format version %s (supported: %s)", tok, want);
      return;
    }
    ps->have_format = 1;
    ps->c->format = v;
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
    char *e1 = NULL, *e2 = NULL;
    errno = 0;
    long long o = q ? strtoll(off, &e1, 10) : -1, b = q ? strtoll(bytes, &e2, 10) : -1;
    if (!q || *e1 || *e2 || errno || o < 0 || b < 0 || o > WF_PE_MAX_SYM_BYTES ||
        b > WF_PE_MAX_SYM_BYTES || (o % 4) || strlen(name) >= 64 || !strchr("%@$", name[0])) {
      perr(ps, dir_at, ".sym expects NAME OFFSET BYTES (name starting with %%, @ or $; offset "
                       "4-byte aligned; offset and bytes at most 2^40)", NULL, NULL);
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
    int32_t pos = 0;
    if (q && tok[0] == 'p' && isdigit((unsigned char)tok[1])) {
      if (ps->c->format < 2) {
        perr(ps, st, "switch positions ('%s') need .format 2", tok, NULL);
        return;
      }
      if (parse_int(tok + 1, &pos) || pos < 0 || pos >= WF_PE_MAX_POS) {
        perr(ps, st, "bad switch position '%s' (p0..p7)", tok, NULL);
        return;
      }
      q = next_tok(q, tok, sizeof tok, &st);
    }
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
    if (wf_guard_uses_step(g)) {
      /* The routers are configured once, when the simulator is built; R and C change with
         every decode step (and the route checks evaluate rules per column and row). */
      perr(ps, dir_at, "a route's guard cannot name the step parameters R or C (routes are fixed "
                       "when the program is loaded; guard the instructions instead)", NULL, NULL);
      return;
    }
    wf_pe_class_add_route_pos(ps->c, g, col, pos, rx, tx);
    ps->c->routes[ps->c->n_routes - 1].line = (int)ps->line;
  } else if (!strcmp(tok, ".set")) {
    parse_set(ps, p, dir_at);
  } else if (!strcmp(tok, ".switch")) {
    int32_t col;
    const char *q = next_tok(p, tok, sizeof tok, &st);
    if (!q || parse_color(tok, &col) || !class_has_color(ps->c, col)) {
      perr(ps, q ? st : dir_at, "expected a declared color after .switch", NULL, NULL);
      return;
    }
    q = next_tok(q, tok, sizeof tok, &st);
    if (!q || strcmp(tok, "ring")) {
      perr(ps, q ? st : dir_at, "expected 'ring' after .switch cN", NULL, NULL);
      return;
    }
    for (int i = 0; i < ps->c->n_colors; i++)
      if (ps->c->colors[i].color == col) ps->c->colors[i].ring = 1;
  } else if (!strcmp(tok, ".task")) {
    parse_task(ps, p, dir_at);
  } else if (!strcmp(tok, ".code")) {
    ps->in_code = 1;
  } else {
    perr(ps, dir_at, "unknown directive '%s'", tok, NULL);
  }
}

/* Task names may be used before their .task line: names seen in the pre-scan are numbered
 * in order of their .task lines, which is the order the parser creates them in. */
static int task_ref(pstate *ps, const char *name) {
  for (int i = 0; i < ps->n_names; i++)
    if (!strcmp(ps->names[i], name)) return i + ps->main_offset;
  if (!strcmp(name, "main") && ps->main_offset) return 0;
  return -1;
}

static void parse_instr(pstate *ps, const char *p, const wf_pe_guard *g) {
  char tok[128];
  const char *st = NULL; /* next_tok sets it when it finds a token */
  p = next_tok(p, tok, sizeof tok, &st);
  wf_peop op;
  if (!p) {
    perr(ps, NULL, "expected an instruction", NULL, NULL);
    return;
  }
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
        a->term = wf_term_int(0);
        a->term2 = wf_term_int(0);
        if (plus) {
          /* `%s+8`: a constant; `%s+16*j+4`, `%s+16*j+-8*x+4`: terms (checked when it runs) */
          *plus = 0;
          if (parse_offset(ps, plus + 1, a)) {
            *plus = '+';
            perr(ps, st, "bad buffer offset in '%s' (a word count, or at most two terms and a constant such as 16*j+-8*x+4)",
                 tok, NULL);
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
            !strcmp(tok, "W") || !strcmp(tok, "H") || !strcmp(tok, "R") || !strcmp(tok, "C")) {
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
      case 't': {
        int t = task_ref(ps, tok);
        if (t < 0) {
          perr(ps, st, "unknown task '%s' (declare it with .task)", tok, NULL);
          return;
        }
        a->term = wf_term_int(t);
        break;
      }
      default:
        if (parse_int_sum(ps, tok, a)) {
          perr(ps, st,
               "expected an integer term (int, x, y, W, H, R, C or a loop variable[+-int]; at most two such terms and a "
               "constant), got '%s'",
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

/* Collects .task names in order, and whether instructions precede the first one. */
static void prescan_tasks(pstate *ps, const char *text) {
  int in_code = 0, seen_task = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[256];
    size_t n = len < sizeof line ? len : sizeof line - 1;
    memcpy(line, p, n);
    line[n] = 0;
    p += len + (nl ? 1 : 0);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    const char *q = skip_ws(line);
    if (!*q) continue;
    if (!strncmp(q, ".code", 5)) in_code = 1;
    else if (!strncmp(q, ".task", 5) && (q[5] == ' ' || q[5] == '\t')) {
      char name[64];
      const char *st;
      if (next_tok(q + 5, name, sizeof name, &st) && ps->n_names < WF_PE_MAX_TASKS &&
          strlen(name) < 32)
        memcpy(ps->names[ps->n_names++], name, strlen(name) + 1);
      seen_task = 1;
    } else if (in_code && !seen_task && *q != '.') ps->main_offset = 1;
  }
}

wf_pe_class *wf_pe_class_parse_string(const char *text, const char *path) {
  pstate ps;
  memset(&ps, 0, sizeof ps);
  ps.path = path;
  ps.c = wf_pe_class_new("");
  ps.c->format = WF_PE_FORMAT_MIN_VERSION;
  prescan_tasks(&ps, text);
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
      if (!*q) { /* found by fuzzing: a guard alone read an uninitialised mnemonic */
        perr(&ps, gstart, "a guard must be followed by an instruction or .route", NULL, NULL);
        continue;
      }
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
  if (!ps.errors && !ps.c->n_tasks) { /* no .task line: the whole code is task main */
    wf_pe_class_add_task(ps.c, "main", WF_TASK_LOCAL, -1, 1, 0);
    ps.c->tasks[0].start = 0;
    ps.c->tasks[0].end = ps.c->n_code;
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
  char *text = wf_read_file(path, NULL);
  if (!text) {
    wf_error_at(path, "cannot read PE program: %s", strerror(errno));
    return NULL;
  }
  wf_pe_class *c = wf_pe_class_parse_string(text, path);
  free(text);
  return c;
}
