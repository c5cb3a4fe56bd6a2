/* The ONNX importer (frontend/onnx): a model file, with every input's shape left as the file
 * gives it, then the verifier on what imports. */
#include "fuzz_util.h"
#include "waferc/ir.h"
#include "waferc/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  wf_onnx_opts o = WF_ONNX_OPTS_DEFAULT;
  wf_module *m = NULL;
  if (wf_onnx_import(wf_fuzz_file("fuzz.onnx", data, size), &o, &m) == 0 && m) wf_verify_module(m);
  if (m) wf_module_free(m);
  return 0;
}
