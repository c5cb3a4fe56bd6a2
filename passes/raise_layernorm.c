/* raise-layernorm: LayerNorm as torch.onnx writes it below opset 17 (and as hand-written
 * modules do) -> layernorm(x, scale, bias) {axis, epsilon}.
 *
 *   d = x - reduce_mean(x)                      over trailing axes, kept
 *   n = d / sqrt(reduce_mean(pow(d, 2)) + eps)  (or d * rsqrt(...), d * d for the square)
 *   y = n * w + b   (either operand order; without b: zero bias; without w: unit scale)
 *
 * Both reductions must cover the same axes; w and b must broadcast to the normalised dims
 * (leading 1s are reshaped away); every matched value must be used only inside the
 * pattern; eps is read from the constant as stored. */
#include "passes/raise.h"

typedef struct ln_match {
  wf_value x, w, b;
  double eps;
  int axis;
  wf_raise_ops ops;
} ln_match;

static void push(ln_match *mt, wf_op *op) { mt->ops.v[mt->ops.n++ % WF_RAISE_MAX_OPS] = op; }

/* v = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) */
static int match_core(wf_raise *r, wf_value v, ln_match *mt) {
  wf_value num, var, sq, dd, x, mean;
  if (!wf_raise_normalised(r, v, &num, &var, &mt->ops)) return 0;
  if (!wf_raise_mean_plus_eps(r, var, &sq, &mt->eps, &mt->axis, &mt->ops)) return 0;
  if (!wf_raise_square_of(r, sq, &dd, &mt->ops)) return 0;
  if (wf_raise_strip_casts(r, num) != dd) return 0;
  wf_op *sub = wf_raise_bin(r, dd, WF_OP_SUB, &x, &mean);
  wf_op *red = sub ? wf_raise_def(r, mean, WF_OP_REDUCE_MEAN) : NULL;
  int axis;
  if (!red || red->operands[0] != x || !wf_raise_trailing_reduce(r, red, &axis) || axis != mt->axis) return 0;
  push(mt, sub);
  push(mt, red);
  mt->x = x;
  return wf_dtype_is_float(wf_raise_type(r, x)->dtype) && wf_raise_same_shape(r, v, x) &&
         wf_raise_same_shape(r, dd, x) && wf_raise_ops_ok(&mt->ops);
}

/* y = core * w (either order), or core alone. */
static int match_scaled(wf_raise *r, wf_value y, ln_match *mt) {
  int n0 = mt->ops.n;
  wf_value a, b;
  wf_op *m = wf_raise_bin(r, y, WF_OP_MUL, &a, &b);
  for (int side = 0; m && side < 2; side++) {
    wf_value n = side ? b : a, w = side ? a : b;
    mt->ops.n = n0;
    if (!match_core(r, n, mt) || !wf_raise_norm_param(r, NULL, w, mt->x, mt->axis)) continue;
    if (!wf_raise_same_shape(r, y, mt->x)) continue;
    mt->w = w;
    push(mt, m);
    return wf_raise_ops_ok(&mt->ops);
  }
  mt->ops.n = n0;
  mt->w = WF_NO_VALUE;
  return match_core(r, y, mt);
}

static int match(wf_raise *r, wf_op *root) {
  if (root->n_results != 1) return 0;
  ln_match mt = {0};
  wf_value y = root->results[0], a, b;
  int ok = 0;
  wf_op *add = wf_raise_bin(r, y, WF_OP_ADD, &a, &b);
  for (int side = 0; add && !ok && side < 2; side++) {
    mt.ops.n = 0;
    mt.b = side ? a : b;
    if (!match_scaled(r, side ? b : a, &mt)) continue;
    if (!wf_raise_norm_param(r, NULL, mt.b, mt.x, mt.axis) || !wf_raise_same_shape(r, y, mt.x)) continue;
    push(&mt, add);
    ok = wf_raise_ops_ok(&mt.ops);
  }
  if (!ok) {
    mt.ops.n = 0;
    mt.b = WF_NO_VALUE;
    ok = match_scaled(r, y, &mt);
  }
  if (!ok || !wf_raise_closed(r, mt.ops.v, mt.ops.n, root)) return 0;

  const wf_type *xt = wf_raise_type(r, mt.x);
  int64_t d[WF_MAX_RANK];
  for (int i = 0; i < -mt.axis; i++) d[i] = xt->dims[xt->rank + mt.axis + i];
  wf_value ops[3];
  ops[0] = mt.x;
  ops[1] = mt.w ? wf_raise_norm_param(r, root, mt.w, mt.x, mt.axis) : wf_raise_splat(r, xt->dtype, -mt.axis, d, 1.0, "ones");
  ops[2] = mt.b ? wf_raise_norm_param(r, root, mt.b, mt.x, mt.axis) : wf_raise_splat(r, xt->dtype, -mt.axis, d, 0.0, "zeros");
  wf_op *op = wf_raise_build(r, root, WF_OP_LAYERNORM, 3, ops, NULL);
  wf_op_set_int(r->f, op, "axis", mt.axis);
  wf_op_set_float(r->f, op, "epsilon", xt->dtype == WF_F32 ? wf_raise_f32_decimal(mt.eps) : mt.eps);
  wf_raise_replace(r, root, op->results[0]);
  wf_pass_stat_add(r->ctx, "layernorm", 1);
  return 1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"layernorm"};
const wf_pass_info wf_pass_raise_layernorm = {
    "raise-layernorm", "Raise exported LayerNorm chains (mean/sub/pow/mean/add/sqrt/div/mul/add) to layernorm",
    NULL, 0, stats, 1, run,
};
