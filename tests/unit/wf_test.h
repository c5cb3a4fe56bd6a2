/* The unit tests' shared helpers: CHECK counts failures and prints file:line, the condition
 * and an optional printf-style message; wf_test_result() ends main; wf_test_targets() points
 * target loading at the source tree's targets/. No framework. */
#ifndef WF_TEST_H
#define WF_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int g_failures;

static __attribute__((unused, format(printf, 4, 5))) void wf_check_failed(const char *file, int line,
                                                                         const char *cond,
                                                                         const char *fmt, ...) {
  va_list ap;
  g_failures++;
  fprintf(stderr, "%s:%d: check failed: %s", file, line, cond);
  if (fmt[1]) { /* fmt is "-" followed by the caller's format, so it is never empty */
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt + 1, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
}

/* CHECK(cond) or CHECK(cond, "fmt", args...) */
#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    if (!(cond)) wf_check_failed(__FILE__, __LINE__, #cond, "-" __VA_ARGS__);     \
  } while (0)

/* WAFERC_TARGET_PATH = $WAFERC_SOURCE_DIR/targets (ctest sets the source dir; ../.. when run
 * by hand from build/tests/unit), so that wf_target_load finds the committed targets. */
static __attribute__((unused)) void wf_test_targets(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/targets", src ? src : "../..");
  setenv("WAFERC_TARGET_PATH", dir, 1);
}

/* Return value of main: prints a summary line. */
static __attribute__((unused)) int wf_test_result(const char *name) {
  if (g_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, g_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif
