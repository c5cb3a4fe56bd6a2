/* The .wpe parser (ir/pe/pe_parse.c): PE program text from a plan. */
#include "fuzz_util.h"
#include "ir/pe/pe_program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  char *text = wf_fuzz_cstr(data, size);
  wf_pe_class *c = wf_pe_class_parse_string(text, "fuzz.wpe");
  wf_pe_class_free(c);
  free(text);
  return 0;
}
