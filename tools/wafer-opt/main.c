/* wafer-opt: runs passes on a .wir module and prints the result. Each pass is testable alone:
 *
 *   wafer-opt in.wir --pass-pipeline='canonicalize,dce' -o out.wir
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/cli.h"
#include "waferc/version.h"

static void usage(FILE *out) {
  fputs("usage: wafer-opt [options] in.wir [-o out.wir]\n"
        "Parses a module (- = standard input), verifies it, runs --pass-pipeline and prints\n"
        "the result to standard output or -o.\n\n"
        "  -o FILE                    write the module to FILE\n"
        "  --help, --version\n",
        out);
  wf_cli_print_common_help(out);
}

int main(int argc, char **argv) {
  wf_cli c;
  wf_cli_init(&c, "wafer-opt");
  const char *input = NULL, *output = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = wf_cli_parse_common(&c, argc, argv, &i);
    if (k < 0) return WF_EXIT_USAGE;
    if (k > 0) continue;
    if ((k = wf_cli_opt(argc, argv, &i, "-o", &output))) {
      if (k < 0) return WF_EXIT_USAGE;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return WF_EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
      printf("wafer-opt (waferc) %s\n", WF_VERSION_STRING);
      return WF_EXIT_OK;
    } else if (a[0] == '-' && a[1] != '\0') {
      static const char *const own[] = {"-o"};
      wf_cli_unknown_option(&c, a, own, 1);
      return WF_EXIT_USAGE;
    } else if (input) {
      wf_error(WF_LOC_NONE, "more than one input file ('%s' and '%s')", input, a);
      return WF_EXIT_USAGE;
    } else {
      input = a;
    }
  }

  int rc = wf_cli_load_passes(&c);
  if (rc) return rc;
  if (c.list_passes) {
    wf_cli_list_passes(stdout);
    return WF_EXIT_OK;
  }
  wf_pipeline *pipeline = wf_cli_parse_pipeline(&c, c.pipeline ? c.pipeline : "");
  if (!pipeline) return WF_EXIT_USAGE;
  if (c.print_pipeline) {
    char *text = wf_pipeline_print(pipeline);
    printf("%s\n", text);
    free(text);
    wf_pipeline_free(pipeline);
    return WF_EXIT_OK;
  }
  if (!input) {
    wf_error(WF_LOC_NONE, "no input file (see wafer-opt --help)");
    wf_pipeline_free(pipeline);
    return WF_EXIT_USAGE;
  }
  if ((rc = wf_cli_load_target(&c)) != 0) {
    wf_pipeline_free(pipeline);
    return rc;
  }

  wf_module *m = wf_cli_read_module(input, &rc); /* sets rc when it fails */
  if (m) {
    rc = c.pm.verify_each && wf_verify_module(m) != 0 ? WF_EXIT_INPUT : wf_pipeline_run(pipeline, m, &c.pm);
  }
  if (rc == WF_EXIT_OK) rc = wf_cli_write_module(&c, output, m);
  if (m) wf_module_free(m);
  wf_pipeline_free(pipeline);
  return rc;
}
