/* The ONNX op table (onnx_ops.def) as an array, with lookup by op type. */
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

#define OX_OP(op, lo, hi, fn, note) int fn(ox_nctx *n);
#define OX_OP_SEQ OX_OP
#include "frontend/onnx/onnx_ops.def"
#undef OX_OP_SEQ
#undef OX_OP

static const ox_opdef g_ops[] = {
#define OX_OP(op, lo, hi, fn, note) {#op, lo, hi, fn, note, 0},
#define OX_OP_SEQ(op, lo, hi, fn, note) {#op, lo, hi, fn, note, 1},
#include "frontend/onnx/onnx_ops.def"
#undef OX_OP_SEQ
#undef OX_OP
};

#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

const ox_opdef *ox_op_lookup(const char *op_type) {
  for (int i = 0; i < N_OPS; i++)
    if (strcmp(g_ops[i].op_type, op_type) == 0) return &g_ops[i];
  return NULL;
}

int ox_op_count(void) { return N_OPS; }
const ox_opdef *ox_op_at(int i) { return i >= 0 && i < N_OPS ? &g_ops[i] : NULL; }

void wf_onnx_list_ops(FILE *out) {
  fprintf(out, "| ONNX op | opsets | notes |\n| --- | --- | --- |\n");
  for (int i = 0; i < N_OPS; i++)
    fprintf(out, "| %s | %d-%d | %s |\n", g_ops[i].op_type, g_ops[i].min_opset, g_ops[i].max_opset,
            g_ops[i].note[0] ? g_ops[i].note : "");
}
