/* Pass option values (pass_internal.h): parsing an option's text by its kind, as the pipeline
 * parser, the registry (checking defaults) and the pass context (reading them) all do. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

const char *wf_opt_kind_name(wf_opt_kind kind) {
  switch (kind) {
  case WF_OPT_INT: return "int";
  case WF_OPT_BOOL: return "bool";
  case WF_OPT_STRING: return "string";
  case WF_OPT_FLOAT: return "float";
  }
  return "?";
}

static char *dup(const char *s) {
  char *p = strdup(s);
  WF_ASSERT(p);
  return p;
}

/* Resolves a quoted string's escapes. Returns NULL if `text` is not a well-formed string. */
static char *unquote(const char *text) {
  size_t n = strlen(text);
  if (n < 2 || text[0] != '"' || text[n - 1] != '"') return NULL;
  char *out = malloc(n), *o = out;
  WF_ASSERT(out);
  for (size_t i = 1; i + 1 < n; i++) {
    char c = text[i];
    if (c == '"') goto fail;
    if (c == '\\') {
      if (i + 2 >= n) goto fail;
      c = text[++i];
      if (c == 'n') c = '\n';
      else if (c != '"' && c != '\\') goto fail;
    }
    *o++ = c;
  }
  *o = '\0';
  return out;
fail:
  free(out);
  return NULL;
}

int wf_opt_value_parse(wf_opt_kind kind, const char *text, wf_opt_value *out, char *why) {
  memset(out, 0, sizeof *out);
  why[0] = '\0';
  int quoted = text[0] == '"';
  char *end = NULL;
  switch (kind) {
  case WF_OPT_INT:
    errno = 0;
    out->i = quoted || !*text ? 0 : strtoll(text, &end, 10);
    if (quoted || !*text || *end || errno) {
      snprintf(why, 128, "expects an int");
      return 1;
    }
    break;
  case WF_OPT_FLOAT:
    errno = 0;
    out->f = quoted || !*text ? 0 : strtod(text, &end);
    if (quoted || !*text || *end || errno || !isfinite(out->f)) {
      snprintf(why, 128, "expects a float");
      return 1;
    }
    break;
  case WF_OPT_BOOL:
    if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0) out->i = 1;
    else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0) out->i = 0;
    else {
      snprintf(why, 128, "expects a bool (true or false)");
      return 1;
    }
    break;
  case WF_OPT_STRING:
    out->str = quoted ? unquote(text) : dup(text);
    if (!out->str) {
      snprintf(why, 128, "has a malformed string");
      return 1;
    }
    break;
  }
  out->text = dup(text);
  return 0;
}

void wf_opt_value_clear(wf_opt_value *v) {
  free(v->text);
  free(v->str);
  memset(v, 0, sizeof *v);
}

int wf_opt_value_check(const wf_pass_option *spec, const wf_opt_value *v, char *why) {
  why[0] = '\0';
  if (spec->kind == WF_OPT_INT && (v->i > WF_OPT_INT_LIMIT || v->i < -WF_OPT_INT_LIMIT)) {
    snprintf(why, 128, "expects an int in [-%lld, %lld]", (long long)WF_OPT_INT_LIMIT, (long long)WF_OPT_INT_LIMIT);
    return 1;
  }
  if (spec->kind == WF_OPT_STRING && !strcmp(spec->name, "mesh") && v->str && v->str[0]) {
    long long w = 0, h = 0;
    char tail;
    if (sscanf(v->str, "%7lldx%7lld%c", &w, &h, &tail) != 2 || w < 1 || h < 1 || w > WF_OPT_MESH_SIDE ||
        h > WF_OPT_MESH_SIDE || w * h > WF_OPT_MESH_PES) {
      snprintf(why, 128, "expects a mesh WxH with sides in 1..%d and at most %d PEs", WF_OPT_MESH_SIDE,
               WF_OPT_MESH_PES);
      return 1;
    }
  }
  return 0;
}
