/* waferc — entry points of the DSL front end: wf_parse_file and wf_parse_string (ir.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "ir/support/fsutil.h"

static wf_module *parse(const char *text, size_t len, const char *name, const char *base_dir) {
  wf_dsl_state s;
  memset(&s, 0, sizeof s);
  s.file = wf_loc_file(name);
  if (len > INT_MAX) {
    wf_error_at(name, "input too large (%zu bytes)", len);
    return NULL;
  }
  s.m = wf_module_new();
  if (base_dir) wf_module_set_base_dir(s.m, base_dir);
  s.scratch = wf_arena_new();
  wf_diag_push_source(s.file, text, len); /* parse errors show the line and a caret */
  int rc = wf_dsl_run(&s, text, len);
  if (rc != 0 && s.errors == 0)
    wf_dsl_report(&s, wf_dsl_loc(&s, s.line, s.col), "cannot parse the input");
  wf_diag_push_source(NULL, NULL, 0);
  free(s.bind);
  free(s.dims.v);
  free(s.ldims.v);
  free(s.types.v);
  free(s.operands.v);
  free(s.names.v);
  free(s.attrs.v);
  free(s.nums.v);
  wf_arena_free(s.scratch);
  if (s.errors) {
    wf_module_free(s.m);
    return NULL;
  }
  return s.m;
}

wf_module *wf_parse_string(const char *text, const char *name_for_errors) {
  WF_ASSERT(text != NULL);
  return parse(text, strlen(text), name_for_errors ? name_for_errors : "<string>", NULL);
}

/* The directory part of path ("." when it has none). */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

wf_module *wf_parse_file(const char *path) {
  size_t len = 0;
  char *buf = wf_read_file(path, &len);
  if (!buf) {
    wf_error_at(path, "cannot read: %s", strerror(errno));
    return NULL;
  }
  char *dir = dir_of(path);
  wf_module *m = parse(buf, len, path, dir);
  free(dir);
  free(buf);
  return m;
}
