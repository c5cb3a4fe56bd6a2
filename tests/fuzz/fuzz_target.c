/* The target-file parser (backend/resources/target.c): a .target file, read from memory by
 * the parser wf_target_load runs on a file. */
#include "fuzz_util.h"
#include "waferc/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  wf_target t;
  wf_target_parse((const char *)data, size, "fuzz.target", &t);
  return 0;
}
