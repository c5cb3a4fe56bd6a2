/* Diagnostics: "did you mean" (wf_closest_name, wf_error_unknown_option), the source line
 * and caret under a located error, and wf_exit_for_file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waferc/diag.h"
#include "wf_test.h"

static void test_closest(void) {
  static const char *const passes[] = {"canonicalize", "dce", "partition", "lower-gemm", "raise"};
  CHECK(!strcmp(wf_closest_name("canonicalise", passes, 5) ?: "", "canonicalize"));
  CHECK(!strcmp(wf_closest_name("partiton", passes, 5) ?: "", "partition"));
  CHECK(!strcmp(wf_closest_name("dec", passes, 5) ?: "", "dce"), "a transposition is one edit");
  CHECK(!strcmp(wf_closest_name("lower-gem", passes, 5) ?: "", "lower-gemm"));
  CHECK(wf_closest_name("frobnicate", passes, 5) == NULL, "nothing close: no suggestion");
  CHECK(wf_closest_name("x", passes, 5) == NULL, "too short to guess");
  CHECK(wf_closest_name("dce", passes, 5) == NULL, "the word itself is not a suggestion");
  CHECK(wf_closest_name("", passes, 5) == NULL);
  static const char *const ins[] = {"x", "w"};
  CHECK(wf_closest_name("w", ins, 2) == NULL, "'w' is not a typo of 'x'");
}

/* stderr into a file for the duration of fn, returned as text (caller frees). */
static char *capture(void (*fn)(void *), void *arg) {
  char path[] = "/tmp/wf_test_diag_XXXXXX";
  int fd = mkstemp(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  char *buf = calloc(1, 8192);
  ssize_t n = read(fd, buf, 8191);
  (void)n;
  close(fd);
  unlink(path);
  return buf;
}

static void unknown_opt(void *arg) {
  static const char *const opts[] = {"--input", "--output-dir", "--help", "--keep"};
  wf_error_unknown_option("tool sub", arg, opts, 4);
}

static void located(void *path) { wf_error(wf_loc_make(path, 2, 7), "bad thing"); }
static void from_stdin(void *unused) {
  (void)unused;
  wf_error(wf_loc_make("<test-text>", 1, 3), "here");
}

int main(void) {
  test_closest();

  char *out = capture(unknown_opt, "--inptu=a.npy");
  CHECK(strstr(out, "tool sub: error: unknown option '--inptu=a.npy'; did you mean '--input'? (see tool --help)"),
        "%s", out);
  free(out);
  out = capture(unknown_opt, "--help2");
  CHECK(strstr(out, "did you mean '--help'?"), "%s", out);
  free(out);
  out = capture(unknown_opt, "--hepl");
  CHECK(!strstr(out, "--keep"), "dashes do not count: %s", out);
  free(out);

  /* A located error prints the line and a caret under the column (tabs kept). */
  char path[] = "/tmp/wf_test_diag_src_XXXXXX";
  int fd = mkstemp(path);
  const char *text = "line one\n\tab cdef\nline three\n";
  CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  out = capture(located, path);
  char want[512];
  snprintf(want, sizeof want, "%s:2:7: error: bad thing\n\tab cdef\n\t     ^\n", path);
  CHECK(!strcmp(out, want), "got:\n%s\nwant:\n%s", out, want);
  free(out);
  wf_diag_set_snippets(0);
  out = capture(located, path);
  CHECK(!strchr(out, '^'), "snippets off: %s", out);
  free(out);
  wf_diag_set_snippets(1);

  /* Text that is not on disk is shown once registered. */
  wf_diag_add_source("<test-text>", "abcdef", 6);
  out = capture(from_stdin, NULL);
  CHECK(strstr(out, "<test-text>:1:3: error: here\nabcdef\n  ^\n"), "%s", out);
  free(out);

  CHECK(wf_exit_for_file(path, WF_EXIT_INPUT) == WF_EXIT_INPUT, "a readable file: its content was bad");
  unlink(path);
  CHECK(wf_exit_for_file(path, WF_EXIT_INPUT) == WF_EXIT_IO, "a missing file: exit 6");
  CHECK(wf_exit_for_target("wse9") == WF_EXIT_USAGE, "an unknown preset is a usage error");
  CHECK(wf_exit_for_target("/nonexistent/x.target") == WF_EXIT_IO);
  return wf_test_result("test_diag");
}
