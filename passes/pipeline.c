/* Pipeline text: "a,b{k=v,k2=\"s t\"},c".
 *
 *   pipeline := (entry (',' entry)*)?
 *   entry    := pass-name ('{' (option (',' option)*)? '}')?
 *   option   := option-name '=' value
 *   value    := '"' chars-with-\"-\\-\n-escapes '"' | bare
 *   bare     := one or more characters other than , { } = " and white space
 *               (words, integers, floats, 4x4 mesh specs)
 *
 * White space between tokens is skipped. Values are kept as written, so printing a pipeline
 * gives back its text (minus white space). Errors point at a column with a caret line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

static char *xstrndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  WF_ASSERT(p);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

/* ---- parser ------------------------------------------------------------------------ */

typedef struct parser {
  wf_pass_registry *reg;
  const char *text;
  size_t pos;
} parser;

static void perr(const parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void perr(const parser *p, size_t pos, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* The caret line shows the pipeline and a caret under the column (tabs kept so the caret
   * lines up in a terminal). */
  size_t n = strlen(p->text);
  char *caret = malloc(pos + 2);
  WF_ASSERT(caret);
  for (size_t i = 0; i < pos; i++) caret[i] = (i < n && p->text[i] == '\t') ? '\t' : ' ';
  caret[pos] = '^';
  caret[pos + 1] = '\0';
  wf_error(wf_loc_make("--pass-pipeline", 1, (uint32_t)pos + 1), "%s\n  %s\n  %s", msg, p->text, caret);
  free(caret);
}

static void skip_ws(parser *p) {
  while (p->text[p->pos] && isspace((unsigned char)p->text[p->pos])) p->pos++;
}

static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

static int is_bare_char(char c) {
  return c && !strchr(",{}=\"", c) && !isspace((unsigned char)c);
}

/* Reads a name at the cursor; returns its length (0 = none). */
static size_t read_name(parser *p) {
  size_t start = p->pos;
  while (is_name_char(p->text[p->pos])) p->pos++;
  return p->pos - start;
}

static void known_list(char *buf, size_t cap, wf_pass_registry *r) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < wf_pass_count(r) && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", wf_pass_at(r, i)->name);
}

static void option_list(char *buf, size_t cap, const wf_pass_info *info) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < info->n_options && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", info->options[i].name);
}

static const wf_pass_option *find_option(const wf_pass_info *info, const char *name, size_t len) {
  for (int i = 0; i < info->n_options; i++)
    if (strlen(info->options[i].name) == len && strncmp(info->options[i].name, name, len) == 0)
      return &info->options[i];
  return NULL;
}

/* Reads a value (quoted or bare) at the cursor; returns its length or 0 with an error. */
static size_t read_value(parser *p) {
  size_t start = p->pos;
  const char *t = p->text;
  if (t[p->pos] == '"') {
    p->pos++;
    while (t[p->pos] && t[p->pos] != '"') {
      if (t[p->pos] == '\\' && t[p->pos + 1]) p->pos++;
      p->pos++;
    }
    if (!t[p->pos]) {
      perr(p, start, "unterminated string");
      return 0;
    }
    p->pos++;
  } else {
    while (is_bare_char(t[p->pos])) p->pos++;
    if (p->pos == start) perr(p, start, "expected a value");
  }
  return p->pos - start;
}

static int parse_options(parser *p, wf_pipeline_pass *pp, size_t open_pos) {
  const wf_pass_info *info = pp->info;
  skip_ws(p);
  if (p->text[p->pos] == '}') {
    p->pos++;
    return 0;
  }
  for (;;) {
    skip_ws(p);
    size_t name_pos = p->pos;
    size_t len = read_name(p);
    if (!len) {
      if (!p->text[p->pos])
        perr(p, p->pos, "expected '}' to close the options of pass '%s' opened at column %zu", info->name,
             open_pos + 1);
      else
        perr(p, p->pos, "expected an option name");
      return 1;
    }
    const wf_pass_option *spec = find_option(info, p->text + name_pos, len);
    if (!spec) {
      char opts[512];
      option_list(opts, sizeof opts, info);
      const char *names[64];
      int n = 0;
      for (int i = 0; i < info->n_options && n < 64; i++) names[n++] = info->options[i].name;
      char *word = xstrndup(p->text + name_pos, len);
      const char *near = wf_closest_name(word, names, n);
      free(word);
      if (near)
        perr(p, name_pos, "unknown option '%.*s' for pass '%s'; did you mean '%s'? (options: %s)", (int)len,
             p->text + name_pos, info->name, near, opts);
      else if (info->n_options)
        perr(p, name_pos, "unknown option '%.*s' for pass '%s' (options: %s)", (int)len, p->text + name_pos,
             info->name, opts);
      else
        perr(p, name_pos, "unknown option '%.*s': pass '%s' has no options", (int)len, p->text + name_pos,
             info->name);
      return 1;
    }
    for (int i = 0; i < pp->n_opts; i++)
      if (pp->opts[i].spec == spec) {
        perr(p, name_pos, "option '%s' of pass '%s' is given twice", spec->name, info->name);
        return 1;
      }
    skip_ws(p);
    if (p->text[p->pos] != '=') {
      perr(p, p->pos, "expected '=' after option '%s'", spec->name);
      return 1;
    }
    p->pos++;
    skip_ws(p);
    size_t val_pos = p->pos;
    size_t vlen = read_value(p);
    if (!vlen) return 1;
    char *vtext = xstrndup(p->text + val_pos, vlen);
    wf_opt_value v;
    char why[128];
    int rc = wf_opt_value_parse(spec->kind, vtext, &v, why);
    if (rc == 0 && wf_opt_value_check(spec, &v, why)) {
      wf_opt_value_clear(&v);
      rc = 1;
    }
    if (rc != 0) {
      perr(p, val_pos, "option '%s' of pass '%s' %s, got '%s'", spec->name, info->name, why, vtext);
      free(vtext);
      return 1;
    }
    free(vtext);
    v.spec = spec;
    pp->opts = realloc(pp->opts, (size_t)(pp->n_opts + 1) * sizeof *pp->opts);
    WF_ASSERT(pp->opts);
    pp->opts[pp->n_opts++] = v;
    skip_ws(p);
    char c = p->text[p->pos];
    if (c == ',') {
      p->pos++;
      continue;
    }
    if (c == '}') {
      p->pos++;
      return 0;
    }
    if (!c)
      perr(p, p->pos, "expected '}' to close the options of pass '%s' opened at column %zu", info->name,
           open_pos + 1);
    else
      perr(p, p->pos, "expected ',' or '}' after the value of option '%s'", spec->name);
    return 1;
  }
}

wf_pipeline *wf_pipeline_parse(wf_pass_registry *r, const char *text) {
  WF_ASSERT(r && text);
  parser p = {r, text, 0};
  int cap = 0;
  wf_pipeline *pl = calloc(1, sizeof *pl);
  WF_ASSERT(pl);
  skip_ws(&p);
  if (!text[p.pos]) return pl; /* the empty pipeline runs nothing */
  for (;;) {
    skip_ws(&p);
    size_t name_pos = p.pos;
    size_t len = read_name(&p);
    if (!len) {
      if (text[p.pos] == '}') perr(&p, p.pos, "unbalanced '}'");
      else perr(&p, p.pos, "expected a pass name");
      goto fail;
    }
    char *name = xstrndup(text + name_pos, len);
    const wf_pass_info *info = wf_pass_lookup(r, name);
    if (!info) {
      char known[2048];
      known_list(known, sizeof known, r);
      const char *near = wf_pass_closest(r, name);
      if (near) perr(&p, name_pos, "unknown pass '%s'; did you mean '%s'? (known: %s)", name, near, known);
      else perr(&p, name_pos, "unknown pass '%s' (known: %s)", name, known);
      free(name);
      goto fail;
    }
    free(name);
    if (pl->n == cap) { /* geometric growth: a long pipeline parses in linear time */
      cap = cap ? 2 * cap : 8;
      pl->passes = realloc(pl->passes, (size_t)cap * sizeof *pl->passes);
      WF_ASSERT(pl->passes);
    }
    wf_pipeline_pass *pp = &pl->passes[pl->n++];
    memset(pp, 0, sizeof *pp);
    pp->info = info;
    skip_ws(&p);
    if (text[p.pos] == '{') {
      size_t open = p.pos++;
      pp->braces = 1;
      if (parse_options(&p, pp, open) != 0) goto fail;
      skip_ws(&p);
    }
    char c = text[p.pos];
    if (!c) return pl;
    if (c == ',') {
      p.pos++;
      skip_ws(&p);
      if (!text[p.pos]) {
        perr(&p, p.pos, "expected a pass name after ','");
        goto fail;
      }
      continue;
    }
    if (c == '}') perr(&p, p.pos, "unbalanced '}'");
    else perr(&p, p.pos, "expected ',' or '{' after pass '%s'", info->name);
    goto fail;
  }
fail:
  wf_pipeline_free(pl);
  return NULL;
}

void wf_pipeline_free(wf_pipeline *pl) {
  if (!pl) return;
  for (int i = 0; i < pl->n; i++) {
    for (int j = 0; j < pl->passes[i].n_opts; j++) wf_opt_value_clear(&pl->passes[i].opts[j]);
    free(pl->passes[i].opts);
  }
  free(pl->passes);
  free(pl);
}

/* ---- printer ----------------------------------------------------------------------- */

typedef struct sbuf {
  char *s;
  size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s) {
  size_t k = strlen(s);
  if (b->n + k + 1 > b->cap) {
    b->cap = (b->n + k + 1) * 2;
    b->s = realloc(b->s, b->cap);
    WF_ASSERT(b->s);
  }
  memcpy(b->s + b->n, s, k + 1);
  b->n += k;
}

static void print_pass(sbuf *b, const wf_pipeline_pass *pp) {
  sb_put(b, pp->info->name);
  if (!pp->braces) return;
  sb_put(b, "{");
  for (int j = 0; j < pp->n_opts; j++) {
    if (j) sb_put(b, ",");
    sb_put(b, pp->opts[j].spec->name);
    sb_put(b, "=");
    sb_put(b, pp->opts[j].text);
  }
  sb_put(b, "}");
}

char *wf_pipeline_pass_print(const wf_pipeline_pass *pp) {
  sbuf b = {0};
  sb_put(&b, "");
  print_pass(&b, pp);
  return b.s;
}

char *wf_pipeline_print(const wf_pipeline *pl) {
  sbuf b = {0};
  sb_put(&b, "");
  for (int i = 0; i < pl->n; i++) {
    if (i) sb_put(&b, ",");
    print_pass(&b, &pl->passes[i]);
  }
  return b.s;
}
