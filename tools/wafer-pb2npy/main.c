/* wafer-pb2npy — converts serialized ONNX TensorProtos (input_N.pb / output_N.pb of ONNX's
 * test data sets) to .npy, so the node tests' data can feed waferrun and wafer-npycmp.
 *
 *   wafer-pb2npy test_data_set_0/input_0.pb a.npy
 *
 * Exit codes (waferc/diag.h): 0 success, 1 (WF_EXIT_INPUT) not a valid TensorProto,
 * 2 (WF_EXIT_USAGE) bad arguments, 6 (WF_EXIT_IO) a file that cannot be read or written. */
#include <stdio.h>
#include <string.h>

#include "waferc/diag.h"
#include "waferc/onnx.h"
#include "waferc/tensor.h"
#include "waferc/version.h"

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-pb2npy"); /* names it in messages without a place (out of host memory) */
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: wafer-pb2npy IN.pb OUT.npy\nConverts an ONNX TensorProto to .npy.\n"
           "exit codes: 0 ok, 1 not a valid TensorProto, 2 usage, 6 a file cannot be read or written\n");
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--version")) {
    printf("wafer-pb2npy (waferc) %s\n", WF_VERSION_STRING);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: wafer-pb2npy IN.pb OUT.npy\n");
    return WF_EXIT_USAGE;
  }
  if (argv[1][0] == '-' || argv[2][0] == '-') {
    static const char *const own[] = {"--help", "--version"};
    wf_error_unknown_option("wafer-pb2npy", argv[1][0] == '-' ? argv[1] : argv[2], own, 2);
    return WF_EXIT_USAGE;
  }
  wf_tensor *t = wf_onnx_read_tensor(argv[1]);
  if (!t) return wf_exit_for_file(argv[1], WF_EXIT_INPUT);
  int rc = wf_npy_write(argv[2], t) ? WF_EXIT_IO : 0;
  wf_tensor_free(t);
  return rc;
}
