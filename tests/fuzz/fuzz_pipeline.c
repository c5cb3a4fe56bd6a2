/* Pipeline strings (passes/pipeline.c, passes/options.c): parse, print, parse the print back. */
#include "fuzz_util.h"
#include "waferc/pass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int registered;
  if (!registered) {
    wf_register_builtin_passes();
    registered = 1;
  }
  wf_fuzz_quiet();
  char *text = wf_fuzz_cstr(data, size);
  wf_pipeline *p = wf_pipeline_parse(wf_pass_registry_global(), text);
  if (p) { /* what parses prints back to a pipeline that parses to the same text */
    char *printed = wf_pipeline_print(p);
    wf_pipeline *q = wf_pipeline_parse(wf_pass_registry_global(), printed);
    if (!q) abort();
    char *again = wf_pipeline_print(q);
    if (strcmp(printed, again)) abort();
    free(again);
    free(printed);
    wf_pipeline_free(q);
    wf_pipeline_free(p);
  }
  free(text);
  return 0;
}
