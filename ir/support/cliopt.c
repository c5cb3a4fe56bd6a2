/* Option values of the tools' command lines (cliopt.h). */
#include "ir/support/cliopt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"

const char *wf_cli_value(const char *tool, int argc, char **argv, int *i, const char *name, int *bad) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n)) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n]) return NULL;
  if (*i + 1 >= argc) {
    wf_error_at(tool, "option '%s' needs a value", name);
    *bad = 1;
    return NULL;
  }
  return argv[++*i];
}

int wf_cli_long(const char *opt, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > hi) {
    wf_error_at(opt, "bad value '%s': expected an integer in %ld..%ld", v, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}
