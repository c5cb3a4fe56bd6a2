/* raise-rmsnorm: RMSNorm as exporters write it -> rmsnorm(x, w) {axis, epsilon}.
 *
 *   n = x * rsqrt(reduce_mean(pow(x, 2), trailing axes) + eps)        (HF LlamaRMSNorm)
 *   y = w * n  |  n * w  |  (x * w) * rsqrt(...)  |  n alone (scale = ones)
 *
 * with every spelling torch.onnx writes: pow(x, 2) or x * x; rsqrt, reciprocal(sqrt) or
 * 1 / sqrt, or x / sqrt(...); `.to(float32)` casts to the value's own dtype on the way. A
 * weight in another dtype than the normalised value (an f16 model normalising in f32 and
 * casting back) stays outside: only the f32 part is raised, with a ones scale. eps is read
 * from the constant as stored. Each matched value must be used only inside the pattern. */
#include "passes/raise.h"

typedef struct rms_match {
  wf_value x, w; /* w = WF_NO_VALUE: no weight */
  double eps;
  int axis;
  wf_raise_ops ops;
} rms_match;

/* v = x * rsqrt(mean(x^2) + eps), optionally with x * w in place of the first x. */
static int match_core(wf_raise *r, wf_value v, rms_match *mt) {
  wf_value num, var, sq, y;
  if (!wf_raise_normalised(r, v, &num, &var, &mt->ops)) return 0;
  if (!wf_raise_mean_plus_eps(r, var, &sq, &mt->eps, &mt->axis, &mt->ops)) return 0;
  if (!wf_raise_square_of(r, sq, &y, &mt->ops)) return 0;
  mt->x = y;
  mt->w = WF_NO_VALUE;
  num = wf_raise_strip_casts(r, num);
  if (num != y) { /* the weight multiplied first: (x * w) * rsqrt(...) */
    wf_value a, b;
    wf_op *m = wf_raise_bin(r, num, WF_OP_MUL, &a, &b);
    if (!m) return 0;
    a = wf_raise_strip_casts(r, a), b = wf_raise_strip_casts(r, b);
    if (a != y && b != y) return 0;
    mt->w = a == y ? b : a;
    if (!wf_raise_norm_param(r, NULL, mt->w, y, mt->axis)) return 0;
    mt->ops.v[mt->ops.n++ % WF_RAISE_MAX_OPS] = m;
  }
  const wf_type *xt = wf_raise_type(r, y);
  return wf_dtype_is_float(xt->dtype) && wf_raise_same_shape(r, v, y) && wf_raise_ops_ok(&mt->ops);
}

static int match(wf_raise *r, wf_op *root) {
  if (root->n_results != 1) return 0;
  rms_match mt = {0};
  wf_value y = root->results[0], a, b;
  int ok = 0;
  /* outermost first: the weight multiply after normalising */
  wf_op *m = wf_raise_bin(r, y, WF_OP_MUL, &a, &b);
  for (int side = 0; m && !ok && side < 2; side++) {
    mt.ops.n = 0;
    wf_value n = wf_raise_peel(r, side ? b : a, &mt.ops), w = side ? a : b;
    if (!wf_raise_def(r, n, -1) || !match_core(r, n, &mt) || mt.w) continue;
    if (!wf_raise_norm_param(r, NULL, w, mt.x, mt.axis) || !wf_raise_same_shape(r, y, mt.x)) continue;
    mt.w = w;
    mt.ops.v[mt.ops.n++ % WF_RAISE_MAX_OPS] = root;
    ok = wf_raise_ops_ok(&mt.ops);
  }
  if (!ok) {
    mt.ops.n = 0;
    ok = match_core(r, y, &mt);
  }
  if (!ok || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) return 0;

  const wf_type *xt = wf_raise_type(r, mt.x);
  wf_value ops[2] = {mt.x, WF_NO_VALUE};
  if (mt.w) {
    ops[1] = wf_raise_norm_param(r, root, mt.w, mt.x, mt.axis);
  } else {
    int64_t d[WF_MAX_RANK];
    for (int i = 0; i < -mt.axis; i++) d[i] = xt->dims[xt->rank + mt.axis + i];
    ops[1] = wf_raise_splat(r, xt->dtype, -mt.axis, d, 1.0, "ones");
    wf_pass_stat_add(r->ctx, "unit-scale", 1);
  }
  wf_op *op = wf_raise_build(r, root, WF_OP_RMSNORM, 2, ops, NULL);
  wf_op_set_int(r->f, op, "axis", mt.axis);
  wf_op_set_float(r->f, op, "epsilon", xt->dtype == WF_F32 ? wf_raise_f32_decimal(mt.eps) : mt.eps);
  wf_raise_replace(r, root, op->results[0]);
  wf_pass_stat_add(r->ctx, "rmsnorm", 1);
  return 1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"rmsnorm", "unit-scale"};
const wf_pass_info wf_pass_raise_rmsnorm = {
    "raise-rmsnorm", "Raise exported RMSNorm chains (pow/mean/add/sqrt/div/mul) to rmsnorm", NULL, 0, stats, 2, run,
};
