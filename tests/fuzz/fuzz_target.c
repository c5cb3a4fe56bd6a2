/* The target-file parser (backend/resources/target.c): a .target file. */
#include "fuzz_util.h"
#include "waferc/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  wf_target t;
  wf_target_load(wf_fuzz_file("fuzz.target", data, size), &t);
  return 0;
}
