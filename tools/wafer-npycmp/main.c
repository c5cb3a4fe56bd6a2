/* wafer-npycmp — compares two .npy files elementwise: |a-b| <= atol + rtol*|b|. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "waferc/tensor.h"
#include "waferc/version.h"

static void usage(FILE *out) {
  fprintf(out, "usage: wafer-npycmp A.npy B.npy [--atol X] [--rtol Y] [--any-dtype] [-q]\n"
               "Prints the max absolute error; exits 0 when every element satisfies\n"
               "|a-b| <= atol + rtol*|b| (defaults atol 1e-5, rtol 1e-4), the shapes match and\n"
               "the dtypes are of one kind (floating point, integer or bool; --any-dtype compares\n"
               "the values whatever their dtypes),\n"
               "1 on a mismatch or a file that is not a valid .npy, 2 on bad usage, 6 when a file\n"
               "cannot be read.\n");
}

/* 0 floating point, 1 integer, 2 bool */
static int kind(wf_dtype d) { return d == WF_I32 || d == WF_I64 ? 1 : d == WF_BOOL ? 2 : 0; }

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-npycmp");
  const char *files[2] = {NULL, NULL};
  int nf = 0, quiet = 0, any_dtype = 0;
  double atol = 1e-5, rtol = 1e-4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--version")) {
      printf("wafer-npycmp %s\n", WF_VERSION_STRING);
      return 0;
    } else if (!strcmp(argv[i], "-q")) {
      quiet = 1;
    } else if (!strcmp(argv[i], "--any-dtype")) {
      any_dtype = 1;
    } else if ((!strcmp(argv[i], "--atol") || !strcmp(argv[i], "--rtol")) && i + 1 < argc) {
      char *end;
      double v = strtod(argv[i + 1], &end);
      if (*end || v < 0) {
        wf_error_at("wafer-npycmp", "%s expects a non-negative number", argv[i]);
        return 2;
      }
      if (argv[i][2] == 'a') atol = v;
      else rtol = v;
      i++;
    } else if (argv[i][0] != '-' && nf < 2) {
      files[nf++] = argv[i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      static const char *const own[] = {"--atol", "--rtol", "--any-dtype", "-q", "--help", "--version"};
      wf_error_unknown_option("wafer-npycmp", argv[i], own, 6);
      return WF_EXIT_USAGE;
    } else {
      usage(stderr);
      return WF_EXIT_USAGE;
    }
  }
  if (nf != 2) {
    usage(stderr);
    return 2;
  }
  wf_tensor *a = wf_npy_read(files[0]), *b = a ? wf_npy_read(files[1]) : NULL;
  if (!a || !b) {
    wf_tensor_free(a);
    return wf_exit_for_file(files[a ? 1 : 0], WF_EXIT_INPUT);
  }
  int same_shape = a->rank == b->rank;
  for (int d = 0; same_shape && d < a->rank; d++) same_shape = a->dims[d] == b->dims[d];
  /* token ids against logits, or a mask against scores, are not the same tensor however
   * close their values */
  int same_kind = any_dtype || kind(a->dtype) == kind(b->dtype);
  double err = 0;
  int ok = same_shape && same_kind && wf_tensor_allclose(a, b, atol, rtol, &err);
  if (!same_shape) fprintf(stderr, "wafer-npycmp: shapes differ\n");
  if (!same_kind)
    fprintf(stderr, "wafer-npycmp: dtypes differ: %s against %s (--any-dtype compares the values)\n",
            wf_dtype_name(a->dtype), wf_dtype_name(b->dtype));
  if (!quiet || !ok)
    printf("%s: max abs error %.3g (atol %g, rtol %g, %lld elements)\n", ok ? "match" : "MISMATCH",
           err, atol, rtol, (long long)wf_tensor_numel(a));
  wf_tensor_free(a);
  wf_tensor_free(b);
  return ok ? 0 : 1;
}
