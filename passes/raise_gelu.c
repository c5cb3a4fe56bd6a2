/* raise-gelu: GELU as exporters write it -> gelu(x) {approximate = none | tanh}.
 *
 *   erf form:  0.5 * x * (1 + erf(x / sqrt(2)))        x / 1.41421... or x * 0.70710...
 *   tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 *              x^3 as pow(x, 3), x * (x * x) or (x * x) * x
 *
 * The product 0.5 * x * (1 + ...) may be grouped and ordered in any way (torch's own
 * symbolic writes (x * g) * 0.5 and 0.5 * (x * g); HF's gelu_new writes (0.5 * x) * g): the
 * multiply tree is flattened into factors, which must be exactly x, the 1 + erf/tanh term
 * and constants whose product is 0.5. Constants are compared within 1e-6 relative (they are
 * stored as f32). Every matched value must be used only inside the pattern. */
#include <math.h>

#include "passes/raise.h"

#define MAX_FACTORS 8

typedef struct gelu_match {
  wf_raise_ops ops;
  int tanh_form;
} gelu_match;

static void push(gelu_match *g, wf_op *op) { g->ops.v[g->ops.n++ % WF_RAISE_MAX_OPS] = op; }

/* Both operands of a commutative op `code` at v: (x, c) where c is a scalar ~ want. */
static wf_op *bin_const(wf_raise *r, wf_value v, wf_opcode code, double want, wf_value *x) {
  wf_value a, b;
  wf_op *op = wf_raise_bin(r, v, code, &a, &b);
  if (!op) return NULL;
  if (wf_raise_is_scalar(r, b, want)) *x = a;
  else if (code != WF_OP_DIV && wf_raise_is_scalar(r, a, want)) *x = b;
  else return NULL;
  return op;
}

/* v = x^3: pow(x, 3), x * (x * x), (x * x) * x */
static int cube_of(wf_raise *r, wf_value v, wf_value x, gelu_match *g) {
  wf_value a, b, c, d;
  wf_op *op = wf_raise_bin(r, v, WF_OP_POW, &a, &b);
  if (op && wf_raise_strip_casts(r, a) == x && wf_raise_is_scalar(r, b, 3.0)) return push(g, op), 1;
  if (!(op = wf_raise_bin(r, v, WF_OP_MUL, &a, &b))) return 0;
  for (int side = 0; side < 2; side++) {
    wf_value lone = side ? b : a, sq = side ? a : b;
    wf_op *m2 = wf_raise_bin(r, sq, WF_OP_MUL, &c, &d);
    if (wf_raise_strip_casts(r, lone) == x && m2 && wf_raise_strip_casts(r, c) == x &&
        wf_raise_strip_casts(r, d) == x) {
      push(g, op);
      push(g, m2);
      return 1;
    }
  }
  return 0;
}

/* The inner argument of erf / tanh as a function of x; returns x. */
static wf_value erf_arg(wf_raise *r, wf_value u, gelu_match *g) {
  wf_value x;
  wf_op *op = bin_const(r, u, WF_OP_DIV, sqrt(2.0), &x);
  if (!op) op = bin_const(r, u, WF_OP_MUL, sqrt(0.5), &x);
  if (!op) return WF_NO_VALUE;
  push(g, op);
  return wf_raise_strip_casts(r, x);
}

static wf_value tanh_arg(wf_raise *r, wf_value u, gelu_match *g) {
  wf_value s, a, b;
  wf_op *m = bin_const(r, u, WF_OP_MUL, 0.7978845608028654 /* sqrt(2/pi) */, &s);
  wf_op *add = m ? wf_raise_bin(r, s, WF_OP_ADD, &a, &b) : NULL;
  for (int side = 0; add && side < 2; side++) {
    wf_value x = wf_raise_strip_casts(r, side ? b : a), kc = side ? a : b, c;
    wf_op *km = bin_const(r, kc, WF_OP_MUL, 0.044715, &c);
    if (!km || !cube_of(r, c, x, g)) continue; /* cube_of pushes only on success */
    push(g, m);
    push(g, add);
    push(g, km);
    return x;
  }
  return WF_NO_VALUE;
}

/* v = 1 + erf(..) or 1 + tanh(..) (either order); returns the x inside. */
static wf_value one_plus(wf_raise *r, wf_value v, gelu_match *g) {
  wf_value a, b;
  wf_op *add = wf_raise_bin(r, v, WF_OP_ADD, &a, &b);
  for (int side = 0; add && side < 2; side++) {
    wf_value t = side ? a : b, one = side ? b : a;
    if (!wf_raise_is_scalar(r, one, 1.0)) continue;
    int n0 = g->ops.n;
    wf_op *e = wf_raise_def(r, t, WF_OP_ERF), *th = wf_raise_def(r, t, WF_OP_TANH);
    wf_value x = e ? erf_arg(r, e->operands[0], g) : th ? tanh_arg(r, th->operands[0], g) : WF_NO_VALUE;
    if (!x) {
      g->ops.n = n0;
      continue;
    }
    g->tanh_form = th != NULL;
    push(g, add);
    push(g, e ? e : th);
    return x;
  }
  return WF_NO_VALUE;
}

/* Flattens the multiply tree at v into factors, not descending into `stop` (x itself). */
static int factors(wf_raise *r, wf_value v, wf_value stop, wf_value *out, int *n, gelu_match *g, int depth) {
  wf_value a, b;
  wf_op *m = v != stop && depth < 4 ? wf_raise_bin(r, v, WF_OP_MUL, &a, &b) : NULL;
  if (!m) {
    if (*n == MAX_FACTORS) return 0;
    out[(*n)++] = v;
    return 1;
  }
  push(g, m);
  return factors(r, a, stop, out, n, g, depth + 1) && factors(r, b, stop, out, n, g, depth + 1);
}

/* Finds a 1 + erf/tanh term among the multiply tree's leaves (x is not known yet). */
static wf_value find_x(wf_raise *r, wf_value v, int depth) {
  gelu_match scratch = {0};
  wf_value x = one_plus(r, v, &scratch), a, b;
  if (x || depth >= 3 || !wf_raise_bin(r, v, WF_OP_MUL, &a, &b)) return x;
  x = find_x(r, a, depth + 1);
  return x ? x : find_x(r, b, depth + 1);
}

static int match(wf_raise *r, wf_op *root) {
  if (root->n_results != 1 || root->code != WF_OP_MUL) return 0;
  wf_value y = root->results[0];
  wf_value x = find_x(r, y, 0);
  if (!x || !wf_raise_same_shape(r, y, x)) return 0;
  gelu_match g = {0};
  wf_value f[MAX_FACTORS];
  int n = 0, n_x = 0, n_term = 0;
  double c = 1.0;
  if (!factors(r, y, x, f, &n, &g, 0)) return 0;
  for (int i = 0; i < n; i++) {
    double k;
    if (wf_raise_strip_casts(r, f[i]) == x) n_x++;
    else if (wf_raise_scalar(r, f[i], &k)) c *= k;
    else if (one_plus(r, f[i], &g) == x) n_term++;
    else return 0;
  }
  if (n_x != 1 || n_term != 1 || !wf_raise_near(c, 0.5, 1e-6) || !wf_raise_ops_ok(&g.ops)) return 0;
  if (!wf_raise_closed(r, g.ops.v, g.ops.n, root)) return 0;
  wf_op *op = wf_raise_build(r, root, WF_OP_GELU, 1, &x, NULL);
  if (g.tanh_form) wf_op_set_ident(r->f, op, "approximate", "tanh");
  wf_raise_replace(r, root, op->results[0]);
  wf_pass_stat_add(r->ctx, g.tanh_form ? "gelu-tanh" : "gelu-erf", 1);
  return 1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) { return wf_raise_run(m, ctx, match); }

static const char *const stats[] = {"gelu-erf", "gelu-tanh"};
const wf_pass_info wf_pass_raise_gelu = {
    "raise-gelu", "Raise exported GELU (erf and tanh forms) to gelu", NULL, 0, stats, 2, run,
};
