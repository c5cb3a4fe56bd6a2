/* waferc — ONNX frontend: imports a ModelProto into the IR.
 *
 * The protobuf-c code is generated at build time from Debian's /usr/include/onnx/onnx.proto.
 * Dynamic dimensions are fixed with input shapes (`--input-shape NAME=1x128`); shape
 * subgraphs are folded once shapes are known; exporter patterns are raised by passes.
 *
 *   wf_onnx_opts o = WF_ONNX_OPTS_DEFAULT;
 *   const char *shapes[] = {"input_ids=1x16"};
 *   o.input_shapes = shapes; o.n_input_shapes = 1;
 *   wf_module *m = NULL;
 *   int rc = wf_onnx_import("model.onnx", &o, &m);   // a WF_EXIT_* code; errors reported
 */
#ifndef WAFERC_ONNX_H
#define WAFERC_ONNX_H

#include "waferc/ir.h"
#include "waferc/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_onnx_opts {
  const char *const *input_shapes; /* "NAME=1x128" each: fixes the input's dynamic dims */
  int n_input_shapes;
  const char *func_name;           /* name of the IR function; NULL = "main" */
  int keep_dead;                   /* keep nodes that no graph output depends on */
  /* Graph inputs whose values are known at import time (a Reshape's shape or TopK's K fed
   * as an input, as in ONNX's node tests): bound as constants, so they fold. The tensors are
   * copied; each must match the input's declared dtype and rank. */
  const char *const *const_input_names;
  wf_tensor *const *const_input_values;
  int n_const_inputs;
} wf_onnx_opts;
#define WF_ONNX_OPTS_DEFAULT ((wf_onnx_opts){NULL, 0, NULL, 0, NULL, NULL, 0})

/* Imports `path`. On success returns WF_EXIT_OK and sets *out (caller frees with
 * wf_module_free). Otherwise returns WF_EXIT_INPUT (malformed / inconsistent model),
 * WF_EXIT_UNSUPPORTED (every unsupported op listed at once, with node name, op type and
 * opset), or WF_EXIT_IO, having reported the errors. */
int wf_onnx_import(const char *path, const wf_onnx_opts *opts, wf_module **out);
/* The same for a model held in memory (size bytes at data): `path` names it in messages and
 * its directory is where external data is looked for, as for a file at `path`. */
int wf_onnx_import_buffer(const void *data, size_t size, const char *path, const wf_onnx_opts *opts,
                          wf_module **out);

/* Reads a serialized TensorProto (.pb, as in ONNX's test data sets). NULL + error on failure. */
wf_tensor *wf_onnx_read_tensor(const char *path);

/* Prints the supported ONNX operators with their opset ranges and notes, as a Markdown
 * table (`waferc --list-onnx-ops`; CONFORMANCE.md's "Supported operators"). With
 * `lowered` (1 when the named graph op has a mesh lowering, 0 when not, -1 for a name that
 * is no op), a "runs on" column says for each whether it reaches the mesh, runs only in
 * the reference interpreter, or is folded at import. */
void wf_onnx_list_ops(FILE *out, int (*lowered)(const char *ir_op));

#ifdef __cplusplus
}
#endif
#endif
