/* Importers of MatMul, Gemm, Einsum and CumSum.
 *
 * Einsum takes the equations exporters emit for attention and batched projections
 * ("bhqd,bhkd->bhqk", "bij,bjk->bik", "ij->ji"): each letter of a two-operand equation is a
 * batch letter (both inputs and the output), a free letter of one input (kept in the output),
 * a contracted letter (both inputs, not the output) or a summed letter (one input only, not
 * the output). The lowering is reduce_sum (summed letters), transpose + reshape of each
 * operand to [batch..., M, K] and [batch..., K, N], matmul, then reshape + transpose to the
 * output's order. Ellipses, repeated letters in a term and more than two operands are
 * unsupported. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

int ox_imp_matmul(ox_nctx *n) {
  ox_val *ins[2] = {ox_in(n, 0), ox_in(n, 1)};
  if (!ins[0] || !ins[1]) return WF_EXIT_INPUT;
  ox_val *r = ox_emit1(n, WF_OP_MATMUL, 2, ins, 0, NULL, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_gemm(ox_nctx *n) {
  ox_val *ins[3] = {ox_in(n, 0), ox_in(n, 1), n->n_in > 2 ? n->in[2] : NULL};
  if (!ins[0] || !ins[1]) return WF_EXIT_INPUT;
  ox_attrv at[4] = {
      OX_A_FLOAT("alpha", ox_attr_float(n, "alpha", 1.0)),
      OX_A_FLOAT("beta", ox_attr_float(n, "beta", 1.0)),
      OX_A_BOOL("trans_a", ox_attr_int(n, "transA", 0)),
      OX_A_BOOL("trans_b", ox_attr_int(n, "transB", 0)),
  };
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *r = ox_emit1(n, WF_OP_GEMM, ins[2] ? 3 : 2, ins, 4, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

/* ---- CumSum ------------------------------------------------------------------------------
 * A running sum along one axis is a product with a triangle of ones: along the last axis
 * X·U (U[i][j] = 1 where i <= j: column j sums rows 0..j), along the one before it L·X (L = Uᵀ),
 * along another the axis brought last by a transpose and back. exclusive drops the diagonal,
 * reverse flips the triangle. So the mesh needs nothing new: a matmul by a constant (for the
 * one-hot masks MoE routers count, every sum is an integer and exact). Integers are summed
 * as f32 words and cast back (exact below 2^24). The triangle is L x L f32 on the host. */
int ox_imp_cumsum(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t *av;
  int cnt;
  int rc = ox_in_ints(n, 1, "axis", &av, &cnt);
  if (rc) return rc;
  int64_t a = cnt == 1 ? av[0] : 0;
  free(av);
  int r = x->type.rank;
  if (cnt != 1 || r < 1 || a < -r || a >= r) {
    ox_err(n, "axis must be one number in [%d, %d) for %s", -r, r, ox_shape_str(&x->type));
    return WF_EXIT_INPUT;
  }
  int axis = (int)(a < 0 ? a + r : a);
  int excl = ox_attr_int(n, "exclusive", 0) != 0, rev = ox_attr_int(n, "reverse", 0) != 0;
  if (n->failed) return WF_EXIT_INPUT;
  int64_t len = x->type.dims[axis];
  if (len > 8192 || ox_host_budget(n->cx, len * len * 4))
    return ox_unsupported(n, "a running sum over %lld elements (its %lld x %lld triangle passes the host budget of %s)",
                          (long long)len, (long long)len, (long long)len, OX_HOST_BUDGET_TEXT);
  /* along the last axis: X·U, U[i][j] = 1 when i (the summed element) counts into j */
  int64_t d[2] = {len, len};
  wf_tensor *u = wf_tensor_new(WF_F32, 2, d);
  float *uf = u->data;
  for (int64_t i = 0; i < len; i++)
    for (int64_t j = 0; j < len; j++) {
      int in = rev ? (excl ? i > j : i >= j) : (excl ? i < j : i <= j);
      uf[i * len + j] = in ? 1.0f : 0.0f;
    }
  wf_dtype dt = x->type.dtype;
  ox_val *v = dt == WF_F32 ? x : ox_cast(n, x, WF_F32);
  int rows = r >= 2 && axis == r - 2; /* L·X: no transpose */
  int64_t perm[WF_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  if (!rows && axis != r - 1) perm[axis] = r - 1, perm[r - 1] = axis; /* an involution */
  if (v && !rows && axis != r - 1) v = ox_transpose(n, v, r, perm);
  if (!v) return WF_EXIT_INPUT;
  ox_val *k = ox_const_new(n->cx, u);
  if (rows) { /* L = Uᵀ on the left */
    int64_t p2[2] = {1, 0};
    k = ox_transpose(n, k, 2, p2);
  }
  ox_val *ins[2] = {rows ? k : v, rows ? v : k};
  ox_val *y = k ? ox_emit1(n, WF_OP_MATMUL, 2, ins, 0, NULL, NULL) : NULL;
  if (y && !rows && axis != r - 1) y = ox_transpose(n, y, r, perm);
  if (y && dt != WF_F32) y = ox_cast(n, y, dt);
  return y ? ox_set_out(n, 0, y) : WF_EXIT_INPUT;
}

/* ---- Einsum ------------------------------------------------------------------------------ */

typedef struct term {
  char l[WF_MAX_RANK + 1];
  int n;
} term;

static int parse_term(const char *s, size_t len, term *t) {
  t->n = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (!isalpha((unsigned char)c) || t->n == WF_MAX_RANK || memchr(t->l, c, (size_t)t->n)) return -1;
    t->l[t->n++] = c;
  }
  t->l[t->n] = '\0';
  return 0;
}

static int pos(const term *t, char c) {
  const char *p = memchr(t->l, c, (size_t)t->n);
  return p ? (int)(p - t->l) : -1;
}

/* Sums x over the letters of t not in `keep` (and drops them from t). */
static ox_val *sum_out(ox_nctx *n, ox_val *x, term *t, const term *keep1, const term *keep2) {
  int64_t axes[WF_MAX_RANK];
  int na = 0;
  term nt = {{0}, 0};
  for (int i = 0; i < t->n; i++) {
    if (pos(keep1, t->l[i]) < 0 && pos(keep2, t->l[i]) < 0) axes[na++] = i;
    else nt.l[nt.n++] = t->l[i];
  }
  if (!na) return x;
  *t = nt;
  ox_attrv at[2] = {OX_A_INTS("axes", na, axes), OX_A_BOOL("keepdims", 0)};
  return ox_emit1(n, WF_OP_REDUCE_SUM, 1, &x, 2, at, NULL);
}

static int einsum_unsupported(ox_nctx *n, const char *eq, const char *why) {
  return ox_unsupported(n, "Einsum equation '%s' is not supported: %s (waferc lowers matmul-shaped equations only)", eq, why);
}

int ox_imp_einsum(ox_nctx *n) {
  const char *eq_attr = ox_attr_str(n, "equation", NULL);
  if (n->failed || !eq_attr) {
    if (!eq_attr) ox_err(n, "attribute 'equation' is required");
    return WF_EXIT_INPUT;
  }
  char eq[256];
  snprintf(eq, sizeof eq, "%s", eq_attr);
  if (strstr(eq, "...")) return einsum_unsupported(n, eq, "ellipsis");
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  term in[2], out;
  int nt = 0;
  const char *p = eq;
  while (nt < 3) {
    const char *comma = memchr(p, ',', lhs_len - (size_t)(p - eq));
    size_t len = comma ? (size_t)(comma - p) : lhs_len - (size_t)(p - eq);
    if (nt == 2) return einsum_unsupported(n, eq, "more than two operands");
    if (parse_term(p, len, &in[nt])) return einsum_unsupported(n, eq, "a term repeats a letter, has a non-letter or too many letters");
    nt++;
    if (!comma) break;
    p = comma + 1;
  }
  if (nt != n->n_in) {
    ox_err(n, "Einsum equation '%s' has %d operand terms but the node has %d inputs", eq, nt, n->n_in);
    return WF_EXIT_INPUT;
  }
  if (arrow) {
    if (parse_term(arrow + 2, strlen(arrow + 2), &out)) return einsum_unsupported(n, eq, "the output repeats a letter");
  } else { /* implicit output: letters appearing once, alphabetically */
    out.n = 0;
    for (char c = 'A'; c <= 'z'; c++) {
      int cnt = 0;
      for (int t = 0; t < nt; t++) cnt += pos(&in[t], c) >= 0;
      if (cnt == 1 && isalpha((unsigned char)c)) out.l[out.n++] = c;
    }
    out.l[out.n] = '\0';
  }
  ox_val *x[2];
  int64_t size[128];
  for (int c = 0; c < 128; c++) size[c] = -1;
  for (int t = 0; t < nt; t++) {
    if (!(x[t] = ox_in(n, t))) return WF_EXIT_INPUT;
    if (x[t]->type.rank != in[t].n) {
      ox_err(n, "Einsum term '%s' has %d letters but input %d is %s", in[t].l, in[t].n, t, ox_shape_str(&x[t]->type));
      return WF_EXIT_INPUT;
    }
    for (int i = 0; i < in[t].n; i++) {
      int64_t d = x[t]->type.dims[i];
      int64_t *s = &size[(int)in[t].l[i]];
      if (*s >= 0 && *s != d && *s != 1 && d != 1) {
        ox_err(n, "Einsum letter '%c' has size %lld and %lld", in[t].l[i], (long long)*s, (long long)d);
        return WF_EXIT_INPUT;
      }
      if (*s < 0 || *s == 1) *s = d;
    }
  }
  for (int i = 0; i < out.n; i++)
    if (size[(int)out.l[i]] < 0) {
      ox_err(n, "Einsum output letter '%c' appears in no input", out.l[i]);
      return WF_EXIT_INPUT;
    }
  term none = {{0}, 0};
  if (nt == 1) {
    if (!(x[0] = sum_out(n, x[0], &in[0], &out, &none))) return WF_EXIT_INPUT;
    int64_t perm[WF_MAX_RANK];
    for (int i = 0; i < out.n; i++) perm[i] = pos(&in[0], out.l[i]);
    ox_val *r = ox_transpose(n, x[0], out.n, perm);
    return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
  }
  if (!(x[0] = sum_out(n, x[0], &in[0], &out, &in[1])) || !(x[1] = sum_out(n, x[1], &in[1], &out, &in[0])))
    return WF_EXIT_INPUT;
  /* classify, in output order for batch/free letters and A's order for contracted ones */
  term bat = {{0}, 0}, fa = {{0}, 0}, fb = {{0}, 0}, con = {{0}, 0};
  for (int i = 0; i < out.n; i++) {
    char c = out.l[i];
    int ia = pos(&in[0], c) >= 0, ib = pos(&in[1], c) >= 0;
    if (ia && ib) bat.l[bat.n++] = c;
    else if (ia) fa.l[fa.n++] = c;
    else fb.l[fb.n++] = c;
  }
  for (int i = 0; i < in[0].n; i++)
    if (pos(&out, in[0].l[i]) < 0) con.l[con.n++] = in[0].l[i];
  for (int i = 0; i < con.n; i++) {
    int ia = pos(&in[0], con.l[i]), ib = pos(&in[1], con.l[i]);
    if (x[0]->type.dims[ia] != x[1]->type.dims[ib]) {
      ox_err(n, "Einsum contracted letter '%c' has size %lld in input 0 and %lld in input 1", con.l[i],
             (long long)x[0]->type.dims[ia], (long long)x[1]->type.dims[ib]);
      return WF_EXIT_INPUT;
    }
  }
  /* A -> [batch..., M, K], B -> [batch..., K, N] */
  int64_t perm[WF_MAX_RANK], dims[WF_MAX_RANK];
  int k = 0;
  int64_t M = 1, N = 1, K = 1;
  for (int i = 0; i < bat.n; i++) perm[k++] = pos(&in[0], bat.l[i]);
  for (int i = 0; i < fa.n; i++) perm[k++] = pos(&in[0], fa.l[i]), M *= size[(int)fa.l[i]];
  for (int i = 0; i < con.n; i++) perm[k++] = pos(&in[0], con.l[i]), K *= size[(int)con.l[i]];
  ox_val *a = ox_transpose(n, x[0], k, perm);
  for (int i = 0; i < bat.n; i++) dims[i] = x[0]->type.dims[pos(&in[0], bat.l[i])];
  dims[bat.n] = M, dims[bat.n + 1] = K;
  if (!a || !(a = ox_reshape(n, a, bat.n + 2, dims))) return WF_EXIT_INPUT;
  k = 0;
  for (int i = 0; i < bat.n; i++) perm[k++] = pos(&in[1], bat.l[i]);
  for (int i = 0; i < con.n; i++) perm[k++] = pos(&in[1], con.l[i]);
  for (int i = 0; i < fb.n; i++) perm[k++] = pos(&in[1], fb.l[i]), N *= size[(int)fb.l[i]];
  ox_val *b = ox_transpose(n, x[1], k, perm);
  for (int i = 0; i < bat.n; i++) dims[i] = x[1]->type.dims[pos(&in[1], bat.l[i])];
  dims[bat.n] = K, dims[bat.n + 1] = N;
  if (!b || !(b = ox_reshape(n, b, bat.n + 2, dims))) return WF_EXIT_INPUT;
  ox_val *ab[2] = {a, b};
  ox_val *c = ox_emit1(n, WF_OP_MATMUL, 2, ab, 0, NULL, NULL);
  if (!c) return WF_EXIT_INPUT;
  /* [batch..., M, N] -> [batch..., fa..., fb...] -> output order */
  term mid = bat;
  for (int i = 0; i < bat.n; i++) dims[i] = c->type.dims[i];
  for (int i = 0; i < fa.n; i++) dims[mid.n] = size[(int)fa.l[i]], mid.l[mid.n++] = fa.l[i];
  for (int i = 0; i < fb.n; i++) dims[mid.n] = size[(int)fb.l[i]], mid.l[mid.n++] = fb.l[i];
  if (!(c = ox_reshape(n, c, mid.n, dims))) return WF_EXIT_INPUT;
  for (int i = 0; i < out.n; i++) perm[i] = pos(&mid, out.l[i]);
  c = ox_transpose(n, c, out.n, perm);
  return c ? ox_set_out(n, 0, c) : WF_EXIT_INPUT;
}
