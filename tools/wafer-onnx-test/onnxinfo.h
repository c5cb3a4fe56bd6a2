/* wafer-onnx-test — what the runner needs to know about a model without importing it.
 *
 * A small reader of the protobuf wire format that walks ModelProto -> GraphProto and keeps only
 * node op types, graph input/output names and which inputs have dynamic dimensions. It is
 * deliberately independent of the importer under test: it decides whether a test is in scope
 * (every op in the scope list) and how to bind the test's input_N.pb files, so an importer bug
 * cannot turn a failure into a skip.
 */
#ifndef WAFER_ONNX_TEST_ONNXINFO_H
#define WAFER_ONNX_TEST_ONNXINFO_H

#define OI_MAX_NAME 128
#define OI_MAX_IO 32
#define OI_MAX_OPS 64

typedef struct oi_io {
  char name[OI_MAX_NAME];
  int is_tensor;  /* type is a tensor_type (not a sequence, map or optional) */
  int elem_type;  /* TensorProto.DataType of a tensor (1 FLOAT, 16 BFLOAT16, ...); 0 = unknown */
  int dynamic;    /* some dimension is a dim_param or absent */
  int shape_operand; /* feeds an operand ONNX uses as a shape, axes, index bound or count
                        (Reshape's shape, Slice's starts, TopK's K, ...): see oi_shape_operand */
} oi_io;

typedef struct oi_model {
  int n_ops;                    /* distinct op types, in order of first appearance */
  char ops[OI_MAX_OPS][OI_MAX_NAME];
  int n_nodes;
  int n_inputs;                 /* graph inputs that are not initializers */
  oi_io inputs[OI_MAX_IO];
  int n_outputs;
  oi_io outputs[OI_MAX_IO];
  int n_functions;              /* model-local FunctionProtos */
} oi_model;

/* Whether input `index` of `op` is a shape-like operand: a value that exported models always
 * hold as a constant and that waferc, which compiles static shapes, folds at import. */
int oi_shape_operand(const char *op, int index);

/* Writes a copy of model `in` to `out` in which each graph input names[i] becomes an
 * initializer holding the TensorProto serialized in file pb_paths[i]. 0, or -1 with `why`. */
int oi_freeze_inputs(const char *in, const char *out, int n, const char *const *names,
                     const char *const *pb_paths, char *why, int why_len);

/* Reads `path`. Returns 0 on success; otherwise fills `why` (a short reason) and returns -1. */
int oi_read(const char *path, oi_model *m, char *why, int why_len);

#endif
