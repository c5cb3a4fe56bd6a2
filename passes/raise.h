/* Private to passes/raise_*.c: the pattern-matching toolkit the raising passes share.
 *
 * A raising pass walks each function backward (outermost ops first, so a pattern is matched
 * whole before any of its sub-patterns), tries its matcher on every op as the root, and on a
 * match builds the raised op before the root, redirects the root's uses and erases the ops
 * of the pattern that are left unused. Matchers only read the IR until every precondition
 * holds, so a failed match leaves the function untouched.
 *
 *   static int match(wf_raise *r, wf_op *root) {
 *     wf_value a, b;
 *     if (!wf_raise_bin(r, root->results[0], WF_OP_MUL, &a, &b)) return 0;
 *     ...check everything, collect the matched ops, check wf_raise_closed...
 *     wf_op *op = wf_raise_build(r, root, WF_OP_SILU, 1, &x);
 *     wf_raise_replace(r, root, op->results[0]);
 *     wf_pass_stat_add(r->ctx, "silu", 1);
 *     return 1;
 *   }
 *   static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); } */
#ifndef WAFERC_PASSES_RAISE_H
#define WAFERC_PASSES_RAISE_H

#include "waferc/pass.h"
#include "waferc/tensor.h"

typedef struct wf_raise {
  wf_module *m;
  wf_func *f;
  wf_pass_ctx *ctx;
  int32_t *uses;    /* use count per value, kept up to date by the helpers below */
  uint32_t cap_uses;
  int changed;
} wf_raise;

/* A matcher: tries `root` as the last op of its pattern; returns 1 if it rewrote. */
typedef int (*wf_raise_match_fn)(wf_raise *r, wf_op *root);

/* Runs `match` over every function (backward walk) and marks the pass changed. Returns 0. */
int wf_raise_run(wf_module *m, wf_pass_ctx *ctx, wf_raise_match_fn match);

/* ---- reading the IR ---------------------------------------------------------------------- */

/* The op defining v if it has opcode `code` (any op for code < 0), else NULL. */
wf_op *wf_raise_def(const wf_raise *r, wf_value v, int code);
int wf_raise_uses(const wf_raise *r, wf_value v);
const wf_type *wf_raise_type(const wf_raise *r, wf_value v);
/* Opcode of an op that may not be in this build's table yet (e.g. "expand"); -1 if absent. */
int wf_raise_opcode(const char *name);
/* v with casts to its own dtype stripped (exporters emit `.to(float32)` on f32 values). */
wf_value wf_raise_strip_casts(const wf_raise *r, wf_value v);
/* v = code(a, b) (a binary op): fills a, b and returns its op, else NULL. */
wf_op *wf_raise_bin(const wf_raise *r, wf_value v, wf_opcode code, wf_value *a, wf_value *b);
/* If v is a global constant of at most 64 elements that are all equal: 1 and *out. */
int wf_raise_scalar(const wf_raise *r, wf_value v, double *out);
/* The same, also requiring the value to be within a relative 1e-6 of `want`. */
int wf_raise_is_scalar(const wf_raise *r, wf_value v, double want);
/* The shortest decimal that rounds to the same f32 as v: an f32 constant's value as its
 * author wrote it (1e-06 rather than 9.99999997e-07), for attributes read from constants. */
double wf_raise_f32_decimal(double v);
int wf_raise_near(double a, double b, double rel);
/* A global constant's data as a tensor (caller frees), or NULL if v is not a global or its
 * data is not available. Never reports. */
wf_tensor *wf_raise_const_tensor(const wf_raise *r, wf_value v);
/* Whether reduce op `red` (reduce_mean...) reduces exactly the trailing dims from some axis
 * on, keeping them: sets *axis (negative, counted from the end). */
int wf_raise_trailing_reduce(const wf_raise *r, const wf_op *red, int *axis);
/* Whether every result of every op in ops[0..n) other than `root` is used only by ops in
 * the set: the pattern can be replaced without keeping any of them alive. */
int wf_raise_closed(const wf_raise *r, wf_op *const *ops, int n, const wf_op *root);
/* Whether the two types have the same dtype and shape. */
int wf_raise_same_shape(const wf_raise *r, wf_value a, wf_value b);


/* ---- pieces of normalisations (each appends the ops it matched to o) --------------------- */

#define WF_RAISE_MAX_OPS 64
typedef struct wf_raise_ops {
  wf_op *v[WF_RAISE_MAX_OPS];
  int n; /* may exceed WF_RAISE_MAX_OPS: then the match is refused (wf_raise_ops_ok) */
} wf_raise_ops;
int wf_raise_ops_ok(const wf_raise_ops *o);
void wf_raise_push(wf_raise_ops *o, wf_op *op);
/* wf_raise_strip_casts, recording the casts it went through. */
wf_value wf_raise_peel(const wf_raise *r, wf_value v, wf_raise_ops *o);

/* v = 1/sqrt(var): rsqrt(var), reciprocal(sqrt(var)) or div(1, sqrt(var)). */
int wf_raise_rsqrt_of(const wf_raise *r, wf_value v, wf_value *var, wf_raise_ops *o);
/* v = num / sqrt(var) or num * (1/sqrt(var)) (either operand order). */
int wf_raise_normalised(const wf_raise *r, wf_value v, wf_value *num, wf_value *var, wf_raise_ops *o);
/* var = reduce_mean(sq) + eps over trailing dims kept (either operand order): sq, eps and the
 * first reduced axis (negative). */
int wf_raise_mean_plus_eps(const wf_raise *r, wf_value var, wf_value *sq, double *eps, int *axis,
                           wf_raise_ops *o);
/* v = pow(y, 2) or mul(y, y); y with identity casts stripped. */
int wf_raise_square_of(const wf_raise *r, wf_value v, wf_value *y, wf_raise_ops *o);
/* A scale or bias p usable by a norm of x over dims [axis, rank): same dtype, broadcasting to
 * those dims once leading 1s are dropped. Returns p, or (root given) a reshape of p without
 * its leading 1s built before root; WF_NO_VALUE if p does not fit. Call with root = NULL to
 * check only. */
wf_value wf_raise_norm_param(wf_raise *r, wf_op *root, wf_value p, wf_value x, int axis);

/* ---- rewriting --------------------------------------------------------------------------- */

/* A new op inserted before `root`, with root's location and the given result type (NULL =
 * root's result type, and then the result also takes the name of root's result). */
wf_op *wf_raise_build(wf_raise *r, wf_op *root, wf_opcode code, int n, const wf_value *operands,
                      const wf_type *type);
/* Redirects the uses of root's (single) result to `by`, then erases root and every pure op
 * of the function left without uses by that. */
void wf_raise_replace(wf_raise *r, wf_op *root, wf_value by);
/* A splat global constant of the given type (reused if one with the same name exists). */
wf_value wf_raise_splat(wf_raise *r, wf_dtype dt, int rank, const int64_t *dims, double value,
                        const char *what);

#endif
