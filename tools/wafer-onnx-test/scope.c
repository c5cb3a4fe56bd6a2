/* wafer-onnx-test — loads the scope table (tests/onnx/scope.txt). */
#include "scope.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waferc/diag.h"

static int add_op(scope *s, const char *op) {
  if (scope_has_op(s, op)) return 0;
  char (*nv)[64] = realloc(s->ops, (size_t)(s->n_ops + 1) * sizeof *nv);
  if (!nv) return -1;
  s->ops = nv;
  snprintf(s->ops[s->n_ops++], 64, "%s", op);
  return 0;
}

static int parse(scope *s, FILE *fp) {
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, fp)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok) continue;
    int in_scope = tok[0] != '-';
    const char *op = in_scope ? tok : tok + 1;
    if (!op[0] || strlen(op) >= 64) {
      wf_error_at(s->path, "line %d: bad op name", lineno);
      return -1;
    }
    if (in_scope && add_op(s, op) != 0) return -1;
    while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
      if (strlen(tok) >= 96) {
        wf_error_at(s->path, "line %d: prefix too long", lineno);
        return -1;
      }
      scope_entry *nv = realloc(s->v, (size_t)(s->n + 1) * sizeof *nv);
      if (!nv) return -1;
      s->v = nv;
      scope_entry *e = &s->v[s->n++];
      snprintf(e->prefix, sizeof e->prefix, "%s", tok);
      snprintf(e->op, sizeof e->op, "%s", op);
      e->in_scope = in_scope;
    }
  }
  if (s->n_ops == 0) {
    wf_error_at(s->path, "no in-scope op");
    return -1;
  }
  return 0;
}

int scope_load(scope *s, const char *path, const char *argv0) {
  memset(s, 0, sizeof *s);
  char cand[3][512];
  int nc = 0;
  if (path) {
    snprintf(cand[nc++], 512, "%s", path);
  } else {
    const char *src = getenv("WAFERC_SOURCE_DIR");
    if (src && *src) snprintf(cand[nc++], 512, "%s/tests/onnx/scope.txt", src);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = 0;
      char *slash = strrchr(exe, '/');
      if (slash) *slash = 0;
      snprintf(cand[nc++], 512, "%.400s/../../tests/onnx/scope.txt", exe);
    }
    (void)argv0;
  }
  for (int i = 0; i < nc; i++) {
    FILE *fp = fopen(cand[i], "r");
    if (!fp) continue;
    snprintf(s->path, sizeof s->path, "%.511s", cand[i]);
    int rc = parse(s, fp);
    fclose(fp);
    if (rc != 0) scope_free(s);
    return rc;
  }
  wf_error_at("wafer-onnx-test", "cannot find the scope table %s (give --scope FILE)",
              nc ? cand[0] : "tests/onnx/scope.txt");
  return -1;
}

void scope_free(scope *s) {
  free(s->v);
  free(s->ops);
  s->v = NULL;
  s->ops = NULL;
  s->n = s->n_ops = 0;
}

const scope_entry *scope_match(const scope *s, const char *name) {
  const scope_entry *best = NULL;
  for (int i = 0; i < s->n; i++) {
    size_t n = strlen(s->v[i].prefix);
    if (!strncmp(name, s->v[i].prefix, n) && (!best || n > strlen(best->prefix))) best = &s->v[i];
  }
  return best;
}

int scope_has_op(const scope *s, const char *op) {
  for (int i = 0; i < s->n_ops; i++)
    if (!strcmp(s->ops[i], op)) return 1;
  return 0;
}
