/* The ONNX importer (frontend/onnx): a model file, with every input's shape left as the file
 * gives it, then the verifier on what imports. The model is unpacked from memory as if it
 * were the file fuzz.onnx of a scratch directory that holds external.bin (the external data
 * file of corpus/onnx/external.onnx: 4 KiB of floats), so external data can be read. */
#include "fuzz_util.h"
#include "waferc/ir.h"
#include "waferc/onnx.h"

static char model_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char path[128];
  snprintf(path, sizeof path, "%s/external.bin", wf_fuzz_dir());
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  float w[1024];
  for (int i = 0; i < 1024; i++) w[i] = (float)i / 8;
  fwrite(w, sizeof w, 1, f);
  fclose(f);
  snprintf(model_path, sizeof model_path, "%s/fuzz.onnx", wf_fuzz_dir());
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  wf_onnx_opts o = WF_ONNX_OPTS_DEFAULT;
  wf_module *m = NULL;
  if (wf_onnx_import_buffer(data, size, model_path, &o, &m) == 0 && m) wf_verify_module(m);
  if (m) wf_module_free(m);
  return 0;
}
