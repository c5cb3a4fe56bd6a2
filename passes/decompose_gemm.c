/* gemm decomposition for the partition pass: ONNX's Gemm, Y = alpha op(A) op(B) + beta C,
 * becomes the ops the backend distributes — `transpose` where trans_a / trans_b ask for it,
 * `matmul`, and `mul` / `add` with one-element constants for alpha, beta and C. The backend
 * then lowers each with its own distribution (matmul by the chosen GEMM algorithm, the
 * scalars as broadcast operands, C as a bias along the split axes). */
#include <stdio.h>
#include <string.h>

#include "passes/decompose.h"
#include "waferc/tensor.h"

/* A one-element f32 constant [1] holding v. */
static wf_value scalar_const(wf_module *m, wf_func *f, const char *base, float v, wf_loc loc) {
  char name[64];
  for (int i = 0;; i++) {
    snprintf(name, sizeof name, "%s%s%d", base, i ? "_" : "", i);
    if (wf_module_find_global(m, name) < 0) break;
  }
  wf_type t;
  memset(&t, 0, sizeof t);
  t.dtype = WF_F32;
  t.rank = 1;
  t.dims[0] = 1;
  int g = wf_module_add_global(m, name, t, loc);
  m->globals[g].kind = WF_DATA_SPLAT;
  m->globals[g].data = wf_arena_dup(m->arena, &v, sizeof v);
  return wf_func_global_value(f, g);
}

static wf_type plain(const wf_type *t, int64_t d0, int64_t d1) {
  wf_type r;
  memset(&r, 0, sizeof r);
  r.dtype = t->dtype;
  r.rank = 2;
  r.dims[0] = d0;
  r.dims[1] = d1;
  return r;
}

/* A constant operand is transposed here, once: its weights are stored the way the matmul
 * reads them (as WaferLLM pre-places decode weights), so no transpose runs on the mesh. */
static wf_value transposed_const(wf_module *m, wf_func *f, wf_value v, wf_loc loc) {
  const wf_global *src = &m->globals[f->values[v].index];
  wf_tensor *t = wf_global_tensor(m, f->values[v].index);
  if (!t) return 0;
  char name[96];
  for (int i = 0;; i++) {
    snprintf(name, sizeof name, "%s_t%s%d", wf_str(m, src->name), i ? "_" : "", i);
    if (wf_module_find_global(m, name) < 0) break;
  }
  int64_t r = t->dims[0], c = t->dims[1];
  wf_type ty = src->type;
  memset(&ty.layout, 0, sizeof ty.layout);
  ty.dims[0] = c;
  ty.dims[1] = r;
  int g = wf_module_add_global(m, name, ty, loc);
  float *out = wf_arena_alloc(m->arena, (size_t)(r * c) * sizeof *out + 1);
  const float *in = t->data;
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) out[j * r + i] = in[i * c + j];
  m->globals[g].kind = WF_DATA_INLINE;
  m->globals[g].data = out;
  wf_tensor_free(t);
  return wf_func_global_value(f, g);
}

static wf_value transposed(wf_func *f, wf_op *pos, wf_value v, wf_loc loc) {
  const wf_type *t = wf_value_type(f, v);
  if (f->values[v].kind == WF_VAL_GLOBAL && t->dtype == WF_F32) {
    wf_value c = transposed_const(f->module, f, v, loc);
    if (c) return c;
  }
  wf_type rt = plain(t, t->dims[1], t->dims[0]);
  wf_value r = wf_op_insert_new(f, pos, WF_OP_TRANSPOSE, 1, &v, rt, loc);
  int64_t perm[2] = {1, 0};
  wf_op_set_ints(f, f->values[r].def, "perm", 2, perm);
  return r;
}

int wf_decompose_gemm(wf_module *m, wf_func *f) {
  int n = 0;
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    if (op->code != WF_OP_GEMM) continue;
    wf_loc loc = op->loc;
    wf_value a = op->operands[0], b = op->operands[1];
    const wf_type *yt = wf_value_type(f, op->results[0]);
    if (wf_value_type(f, a)->rank != 2 || wf_value_type(f, b)->rank != 2) continue;
    double alpha = wf_op_float(f, op, "alpha", 1.0), beta = wf_op_float(f, op, "beta", 1.0);
    if (wf_op_int(f, op, "trans_a", 0)) a = transposed(f, op, a, loc);
    if (wf_op_int(f, op, "trans_b", 0)) b = transposed(f, op, b, loc);
    wf_type rt = plain(yt, yt->dims[0], yt->dims[1]);
    wf_value ab[2] = {a, b};
    wf_value y = wf_op_insert_new(f, op, WF_OP_MATMUL, 2, ab, rt, loc);
    if (alpha != 1.0) {
      wf_value x[2] = {y, scalar_const(m, f, "gemm_alpha", (float)alpha, loc)};
      y = wf_op_insert_new(f, op, WF_OP_MUL, 2, x, rt, loc);
    }
    if (op->n_operands > 2 && beta != 0.0) {
      wf_value c = op->operands[2];
      if (beta != 1.0) {
        wf_value x[2] = {c, scalar_const(m, f, "gemm_beta", (float)beta, loc)};
        wf_type ct = *wf_value_type(f, c);
        memset(&ct.layout, 0, sizeof ct.layout);
        c = wf_op_insert_new(f, op, WF_OP_MUL, 2, x, ct, loc);
      }
      wf_value x[2] = {y, c};
      y = wf_op_insert_new(f, op, WF_OP_ADD, 2, x, rt, loc);
    }
    wf_value old = op->results[0];
    wf_value_replace_uses(f, old, y);
    wf_value_set_name(f, y, wf_str(m, f->values[old].name));
    wf_op_unlink(f, op);
    n++;
  }
  return n;
}
