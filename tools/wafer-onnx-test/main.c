/* wafer-onnx-test — runs ONNX backend node tests (model.onnx + test_data_set_*) through the
 * ONNX importer and the reference interpreter, and writes CONFORMANCE.md's results.
 *
 *   wafer-onnx-test /usr/share/libonnx-testdata/data/node/test_add       # one test
 *   wafer-onnx-test --batch /usr/share/libonnx-testdata/data/node --markdown CONFORMANCE.md
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxinfo.h"
#include "runner.h"
#include "waferc/diag.h"
#include "waferc/version.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: wafer-onnx-test [-v] [--scope FILE] DIR\n"
          "       wafer-onnx-test --batch ROOT [--markdown FILE] [--known FILE] [--timeout S]\n"
          "       wafer-onnx-test --freeze OUT.onnx DIR\n"
          "\n"
          "Runs one ONNX node test: imports DIR/model.onnx (fixing dynamic input dimensions\n"
          "from the test's input tensors), runs it through the reference interpreter for each\n"
          "DIR/test_data_set_*, compares every output_N.pb (f32: |got-want| <= 1e-5 + 1e-4*|want|;\n"
          "f16 1e-3 + 1e-3*|want|; bf16 1e-2 + 1e-2*|want|; integers and bools exactly) and prints\n"
          "  PASS|FAIL|SKIP name: reason (max abs err E)\n"
          "Exit 0 pass, 1 fail, 77 skip (the importer rejected an op outside the scope listed\n"
          "in tests/onnx/scope.txt; an in-scope op that is rejected or wrong is a FAIL), 2 usage,\n"
          "6 when DIR/model.onnx, --scope, --known or --markdown cannot be read.\n"
          "\n"
          "--batch runs every ROOT/test_* (each in a child process, so a crash is one FAIL) and,\n"
          "with --markdown, rewrites the generated results section of FILE (CONFORMANCE.md),\n"
          "keeping the rest of the file. --known names tests/onnx/known_failures.txt (default:\n"
          "beside the scope table). --timeout limits each test (default 120 s). Exit 0 once\n"
          "every test ran and the file is written, whatever the results (they are the report).\n"
          "--freeze writes DIR/model.onnx to OUT.onnx with its shape-like inputs (Reshape's\n"
          "shape, Slice's starts, TopK's K, ...) frozen into initializers holding the tensors of\n"
          "DIR/test_data_set_0, as a run does, and prints `frozen|live INDEX NAME` per graph\n"
          "input (for compiling the test to a plan: tests/tools/plan_sweep.py).\n"
          "  -v, --verbose   print the importer's and interpreter's diagnostics\n"
          "  --scope FILE    the scope table (default: $WAFERC_SOURCE_DIR/tests/onnx/scope.txt,\n"
          "                  else ../../tests/onnx/scope.txt from the executable)\n");
}

/* --freeze OUT DIR: DIR/model.onnx with its shape-like inputs frozen from test_data_set_0. */
static int freeze(const char *dir, const char *out) {
  char model[4200], why[300];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  static oi_model mi;
  if (oi_read(model, &mi, why, sizeof why)) {
    wf_error_at(model, "%s", why);
    return RT_EXIT_FAIL;
  }
  const char *names[OI_MAX_IO];
  char pbs[OI_MAX_IO][4300];
  const char *pb[OI_MAX_IO];
  int n = 0;
  for (int i = 0; i < mi.n_inputs; i++) {
    int fr = mi.inputs[i].shape_operand && mi.inputs[i].is_tensor;
    printf("%s %d %s\n", fr ? "frozen" : "live", i, mi.inputs[i].name);
    if (!fr) continue;
    snprintf(pbs[n], sizeof pbs[n], "%s/test_data_set_0/input_%d.pb", dir, i);
    names[n] = mi.inputs[i].name;
    pb[n] = pbs[n];
    n++;
  }
  if (oi_freeze_inputs(model, out, n, names, pb, why, sizeof why)) {
    wf_error_at(out, "cannot write the frozen model: %s", why);
    return WF_EXIT_IO;
  }
  return 0;
}

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-onnx-test");
  const char *dir = NULL, *batch = NULL, *freeze_out = NULL, *markdown = NULL, *scope_path = NULL, *known = NULL;
  int verbose = 0, timeout_s = 120;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_val = i + 1 < argc;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("wafer-onnx-test %s\n", WF_VERSION_STRING);
      return 0;
    } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      verbose = 1;
    } else if (!strcmp(a, "--batch") && has_val) {
      batch = argv[++i];
    } else if (!strcmp(a, "--freeze") && has_val) {
      freeze_out = argv[++i];
    } else if (!strcmp(a, "--markdown") && has_val) {
      markdown = argv[++i];
    } else if (!strcmp(a, "--scope") && has_val) {
      scope_path = argv[++i];
    } else if (!strcmp(a, "--known") && has_val) {
      known = argv[++i];
    } else if (!strcmp(a, "--timeout") && has_val) {
      char *end;
      long t = strtol(argv[++i], &end, 10);
      if (*end || t <= 0 || t > 86400) {
        wf_error_at("wafer-onnx-test", "--timeout expects seconds (1..86400)");
        return RT_EXIT_USAGE;
      }
      timeout_s = (int)t;
    } else if (a[0] != '-' && !dir) {
      dir = a;
    } else if (a[0] == '-' && a[1]) {
      static const char *const own[] = {"--verbose", "--batch", "--markdown", "--scope", "--known",
                                        "--timeout", "--freeze", "--help", "--version"};
      wf_error_unknown_option("wafer-onnx-test", a, own, 9);
      return RT_EXIT_USAGE;
    } else {
      usage(stderr);
      return RT_EXIT_USAGE;
    }
  }
  if (!!dir == !!batch || (markdown && !batch) || (freeze_out && !dir)) {
    usage(stderr);
    return RT_EXIT_USAGE;
  }
  /* Files that cannot be read (or, for --markdown, rewritten) are exit 6 before any test
   * runs: a batch takes minutes. */
  const char *unreadable = scope_path && access(scope_path, R_OK) ? scope_path
                           : markdown && access(markdown, R_OK | W_OK) ? markdown
                           : known && access(known, R_OK) ? known : NULL;
  char model[4200];
  snprintf(model, sizeof model, "%s/model.onnx", dir ? dir : "");
  if (!unreadable && dir && access(model, R_OK)) unreadable = model;
  if (unreadable) {
    wf_error_at(unreadable, "cannot read: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  if (freeze_out) return freeze(dir, freeze_out);
  scope sc;
  if (scope_load(&sc, scope_path, argv[0]) != 0) return RT_EXIT_USAGE;
  rt_opts o = {&sc, verbose};

  if (batch) {
    char known_default[600];
    if (!known) {
      snprintf(known_default, sizeof known_default, "%s", sc.path);
      char *slash = strrchr(known_default, '/');
      snprintf(slash ? slash + 1 : known_default,
               sizeof known_default - (size_t)(slash ? slash + 1 - known_default : 0),
               "known_failures.txt");
      known = known_default;
    }
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "build/bin/wafer-onnx-test --batch %s%s%s", batch,
             markdown ? " --markdown " : "", markdown ? markdown : "");
    int rc = rt_batch(batch, markdown, known, cmd, &o, timeout_s);
    scope_free(&sc);
    return rc == 0 ? 0 : 1;
  }

  rt_result r;
  rt_run(dir, &o, &r);
  rt_print(stdout, &r);
  scope_free(&sc);
  return r.status == RT_PASS ? RT_EXIT_PASS : r.status == RT_SKIP ? RT_EXIT_SKIP : RT_EXIT_FAIL;
}
