/* Shared by the fuzz targets (tests/fuzz/README.md): silence diagnostics (a fuzzer runs
 * millions of inputs, each reporting its error) and hand an input to a reader that wants a
 * NUL-terminated string. Inputs are fed from memory, never written to a file: a write per
 * input (and the disk flush ext4 does when a truncated file is closed) cost more than the
 * parsing it fed. Fixed files a target needs are written once, in LLVMFuzzerInitialize. */
#ifndef WF_FUZZ_UTIL_H
#define WF_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waferc/diag.h"

static void wf_fuzz_no_diag(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)msg, (void)user;
}

static inline void wf_fuzz_quiet(void) { wf_diag_set_sink(wf_fuzz_no_diag, NULL); }

/* data as a malloc'd NUL-terminated string (inner NULs end it early, as a file reader would). */
static inline char *wf_fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* A private scratch directory, made once per process. */
static inline const char *wf_fuzz_dir(void) {
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/wf-fuzz-XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  return dir;
}

#endif
