/* The DSL parser (frontend/dsl): the .wir text form, then the verifier on what parses. */
#include "fuzz_util.h"
#include "waferc/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  char *text = wf_fuzz_cstr(data, size);
  wf_module *m = wf_parse_string(text, "fuzz.wir");
  if (m) {
    wf_verify_module(m);
    wf_module_free(m);
  }
  free(text);
  return 0;
}
