/* wafer-onnx-test — runs ONNX backend node tests through wf_onnx_import + wf_interpret. */
#ifndef WAFER_ONNX_TEST_RUNNER_H
#define WAFER_ONNX_TEST_RUNNER_H

#include <stdio.h>

#include "scope.h"

enum { RT_PASS, RT_FAIL, RT_SKIP };
/* Exit codes of a single test (77 is ctest's SKIP_RETURN_CODE, as automake's). */
enum { RT_EXIT_PASS = 0, RT_EXIT_FAIL = 1, RT_EXIT_USAGE = 2, RT_EXIT_SKIP = 77 };

typedef struct rt_result {
  int status;         /* RT_PASS / RT_FAIL / RT_SKIP */
  double max_err;     /* worst |got - expected| over compared elements; -1 = nothing compared */
  char name[128];     /* test directory name */
  char group[64];     /* op the test belongs to (scope table, else the model's ops) */
  int in_scope;       /* the scope table puts this test under an in-scope op */
  char reason[480];   /* one line */
  char missing[256];  /* SKIP: the model's out-of-scope ops, comma-separated */
  char frozen[128];   /* inputs frozen into initializers (shape-like operands), comma-separated */
} rt_result;

typedef struct rt_opts {
  const scope *scope;
  int verbose;        /* echo the importer's and interpreter's diagnostics to stderr */
} rt_opts;

/* Tolerance for comparing outputs of a dtype (|got-want| <= atol + rtol*|want|). */
void rt_tolerance(int dtype, double *atol, double *rtol);

/* Runs the test in directory `dir` (model.onnx + test_data_set_*). Never exits. */
void rt_run(const char *dir, const rt_opts *o, rt_result *r);
/* Fills name, group and in_scope only (status FAIL): for a test whose run crashed. */
void rt_classify(const char *dir, const scope *s, rt_result *r);
/* The status word and the line printed for a result: "PASS name: reason (max abs err E)". */
const char *rt_status_word(int status);
void rt_print(FILE *out, const rt_result *r);

/* Runs every test_* directory under `root` (each in a child process, so a crash or a hang is
 * one FAIL) and writes the results section of `markdown` (NULL = none). 0 on success. */
int rt_batch(const char *root, const char *markdown, const char *known_path, const char *cmdline,
             const rt_opts *o, int timeout_s);

#endif
