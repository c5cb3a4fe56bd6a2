/* The ONNX op table (onnx_ops.def) as an array, with lookup by op type. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

#define OX_OP(op, lo, hi, fn, ir, note) int fn(ox_nctx *n);
#define OX_OP_SEQ OX_OP
#include "frontend/onnx/onnx_ops.def"
#undef OX_OP_SEQ
#undef OX_OP

static const ox_opdef g_ops[] = {
#define OX_OP(op, lo, hi, fn, ir, note) {#op, lo, hi, fn, note, 0, ir},
#define OX_OP_SEQ(op, lo, hi, fn, ir, note) {#op, lo, hi, fn, note, 1, ir},
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

/* Where op i runs, from the graph ops it becomes: "mesh" when each has a mesh lowering,
 * else "interpreter only" naming those without one. */
static void runs_on(const ox_opdef *d, int (*lowered)(const char *ir_op), char *buf, size_t cap) {
  if (!d->ir_ops[0]) {
    snprintf(buf, cap, "folded at import");
    return;
  }
  if (!strcmp(d->ir_ops, "*")) {
    snprintf(buf, cap, "as the ops of its inlined subgraph");
    return;
  }
  size_t n = (size_t)snprintf(buf, cap, "interpreter only (no mesh lowering of ");
  size_t start = n;
  for (const char *p = d->ir_ops; *p;) {
    size_t k = strcspn(p, ",");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)k, p);
    int l = lowered(name);
    if (l <= 0 && n < cap)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s%s", n > start ? ", " : "", name, l < 0 ? " (not an op!)" : "");
    p += k + (p[k] == ',');
  }
  if (n == start) snprintf(buf, cap, "mesh");
  else if (n < cap) snprintf(buf + n, cap - n, ")");
}

void wf_onnx_list_ops(FILE *out, int (*lowered)(const char *ir_op)) {
  if (!lowered) {
    fprintf(out, "| ONNX op | opsets | notes |\n| --- | --- | --- |\n");
    for (int i = 0; i < N_OPS; i++)
      fprintf(out, "| %s | %d-%d | %s |\n", g_ops[i].op_type, g_ops[i].min_opset, g_ops[i].max_opset, g_ops[i].note);
    return;
  }
  fprintf(out, "| ONNX op | opsets | runs on | notes |\n| --- | --- | --- | --- |\n");
  for (int i = 0; i < N_OPS; i++) {
    char where[256];
    runs_on(&g_ops[i], lowered, where, sizeof where);
    fprintf(out, "| %s | %d-%d | %s | %s |\n", g_ops[i].op_type, g_ops[i].min_opset, g_ops[i].max_opset, where,
            g_ops[i].note);
  }
}
