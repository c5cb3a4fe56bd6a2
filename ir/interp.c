/* The reference interpreter: runs a function op by op on host tensors, dispatching to the
 * kernels wf_kern_<ID> through an X-macro table over ops.def. The function is verified
 * first, so kernels may trust shapes and attributes. A value's tensor is freed after its
 * last use, so peak memory follows the live set rather than the whole graph. */
#include <stdlib.h>
#include <string.h>

#include "ir/kernels/kernels.h"

typedef int (*kern_fn)(const wf_kctx *k);

static const kern_fn g_kernels[WF_OP_COUNT] = {
#define WF_OP(id, text, nin, nout, flags, rule, attrs) [WF_OP_##id] = wf_kern_##id,
#include "waferc/ops.def"
#undef WF_OP
};

static const char *shape_text(char *buf, size_t n, wf_dtype dt, int rank, const int64_t *dims) {
  size_t k = (size_t)snprintf(buf, n, "%s[", wf_dtype_name(dt));
  for (int i = 0; i < rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

static int bind_inputs(wf_func *f, const char *fname, int n_inputs, wf_tensor *const *inputs,
                       wf_tensor **vals) {
  if (n_inputs != f->n_args) {
    wf_error_at(fname, "function @%s takes %d input%s, got %d", fname, f->n_args,
                f->n_args == 1 ? "" : "s", n_inputs);
    return -1;
  }
  for (int i = 0; i < n_inputs; i++) {
    const wf_type *t = wf_value_type(f, f->args[i]);
    const wf_tensor *x = inputs[i];
    int ok = x && x->dtype == t->dtype && x->rank == t->rank;
    for (int d = 0; ok && d < t->rank; d++) ok = x->dims[d] == t->dims[d];
    if (!ok) {
      char a[160], b[160] = "nothing";
      const char *aname = wf_str(f->module, wf_value_get(f, f->args[i])->name);
      if (x) shape_text(b, sizeof b, x->dtype, x->rank, x->dims);
      wf_error_at(fname, "input %d (%%%s) must be %s, got %s", i, *aname ? aname : "?",
                  shape_text(a, sizeof a, t->dtype, t->rank, t->dims), b);
      return -1;
    }
    vals[f->args[i]] = wf_tensor_clone(x);
  }
  return 0;
}

int wf_interpret(wf_module *m, const char *func, int n_inputs, wf_tensor *const *inputs,
                 wf_tensor **outputs, int max_outputs, int *n_outputs) {
  *n_outputs = 0;
  wf_func *f = wf_module_find_func(m, func);
  if (!f) {
    wf_error_at(func, "the module has no function @%s", func);
    return -1;
  }
  if (wf_verify_func(f) != 0) return -1;
  wf_op *ret = wf_func_return(f);
  if (ret->n_operands > max_outputs) {
    wf_error_at(func, "function @%s returns %d values, room for %d", func, ret->n_operands, max_outputs);
    return -1;
  }
  uint32_t nv = f->n_values;
  wf_tensor **vals = calloc(nv, sizeof *vals);
  wf_op **last_use = calloc(nv, sizeof *last_use);
  WF_ASSERT(vals && last_use);
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) last_use[op->operands[i]] = op;
  int rc = bind_inputs(f, func, n_inputs, inputs, vals);

  for (wf_op *op = f->first; rc == 0 && op != ret; op = op->next) {
    wf_tensor *in[64], *out[64];
    wf_tensor **ins = op->n_operands <= 64 ? in : calloc((size_t)op->n_operands, sizeof *ins);
    wf_tensor **outs = op->n_results <= 64 ? out : calloc((size_t)op->n_results, sizeof *outs);
    WF_ASSERT(ins && outs);
    for (int i = 0; rc == 0 && i < op->n_operands; i++) {
      wf_value v = op->operands[i];
      const wf_value_info *vi = wf_value_get(f, v);
      if (!vals[v] && vi->kind == WF_VAL_GLOBAL) {
        vals[v] = wf_global_tensor(m, vi->index);
        if (!vals[v]) {
          wf_error(op->loc, "'%s' cannot read its operand %d", wf_opinfos[op->code].name, i);
          rc = -1;
        }
      }
      ins[i] = vals[v];
    }
    for (int i = 0; rc == 0 && i < op->n_results; i++) {
      const wf_type *t = wf_value_type(f, op->results[i]);
      outs[i] = wf_tensor_new(t->dtype, t->rank, t->dims);
    }
    if (rc == 0) {
      wf_kctx k = {f, op, op->n_operands, ins, op->n_results, outs};
      rc = g_kernels[op->code](&k);
      for (int i = 0; i < op->n_results; i++) {
        if (rc == 0) vals[op->results[i]] = outs[i];
        else wf_tensor_free(outs[i]);
      }
    }
    if (ins != in) free(ins);
    if (outs != out) free(outs);
    for (int i = 0; rc == 0 && i < op->n_operands; i++) {
      wf_value v = op->operands[i];
      if (last_use[v] == op && vals[v]) {
        wf_tensor_free(vals[v]);
        vals[v] = NULL;
      }
    }
  }
  if (rc == 0) {
    int filled = 0;
    for (int i = 0; i < ret->n_operands; i++) {
      wf_value v = ret->operands[i];
      if (!vals[v] && wf_value_get(f, v)->kind == WF_VAL_GLOBAL) vals[v] = wf_global_tensor(m, wf_value_get(f, v)->index);
      if (!vals[v]) {
        wf_error(ret->loc, "'return' cannot read its operand %d", i);
        rc = -1;
        break;
      }
      outputs[filled++] = wf_tensor_clone(vals[v]);
    }
    if (rc == 0) *n_outputs = filled;
    else
      while (filled > 0) wf_tensor_free(outputs[--filled]), outputs[filled] = NULL;
  }
  for (uint32_t v = 0; v < nv; v++) wf_tensor_free(vals[v]);
  free(vals);
  free(last_use);
  return rc;
}
