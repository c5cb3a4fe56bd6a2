/* Elementwise ops: purely local on matching blocks. Broadcast operands are held by every PE
 * that needs them (the partition replicates size-1 dims): a bias [N] {N_x} against
 * [M, N] {M_y, N_x} is one row of the PE's columns, a statistic [M, 1] one column of its
 * rows, a scale [1] one value, a statistic [1, M, N] or [B, 1, N] of a reduction over
 * another axis one slab per leading index — so broadcasting costs no communication. When
 * both operands of a binary op broadcast, the first is written out in the result first.
 * Bools and integers are f32 words (0 / 1; exact below 2^24): equal and less write 1 or 0
 * (`eq`, `lt`), not is (x == 0), where selects with `sel` (below), cast copies or tests.
 * pow takes a constant exponent (lower_pow) or an f32 tensor one (lower_pow_tensor: exp(y log|x|)
 * with ONNX's signs, zeros and NaN); expand is the broadcast written out. trilu keeps
 * the triangle of its last two dims: each PE compares the global column minus the global row
 * of its positions with k and selects (lower_trilu). */
#include <math.h>
#include <string.h>

#include "backend/resources/lower.h"
#include "ir/rules.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

static int unary_peop(const wf_lower *L, const wf_op *op, wf_peop *out) {
  switch (op->code) {
    case WF_OP_NEG: *out = WF_PEOP_NEG; return 0;
    case WF_OP_EXP: *out = WF_PEOP_EXP; return 0;
    case WF_OP_LOG: *out = WF_PEOP_LOG; return 0;
    case WF_OP_SQRT: *out = WF_PEOP_SQRT; return 0;
    case WF_OP_RSQRT: *out = WF_PEOP_RSQRT; return 0;
    case WF_OP_RECIPROCAL: *out = WF_PEOP_RECIP; return 0;
    case WF_OP_TANH: *out = WF_PEOP_TANH; return 0;
    case WF_OP_COS: *out = WF_PEOP_COS; return 0;
    case WF_OP_SIN: *out = WF_PEOP_SIN; return 0;
    case WF_OP_ERF: *out = WF_PEOP_ERF; return 0;
    case WF_OP_SIGMOID: *out = WF_PEOP_SIGMOID; return 0;
    case WF_OP_RELU: *out = WF_PEOP_RELU; return 0;
    case WF_OP_SILU: *out = WF_PEOP_SILU; return 0;
    case WF_OP_GELU: {
      const char *approx = wf_op_str(L->f, op, "approximate", "none");
      *out = !strcmp(approx, "tanh") ? WF_PEOP_GELU_TANH : WF_PEOP_GELU;
      return 0;
    }
    default: return -1;
  }
}

static int binary_peop(wf_opcode code, wf_peop *out, int *commutes) {
  *commutes = 1;
  switch (code) {
    case WF_OP_ADD: *out = WF_PEOP_ADD; return 0;
    case WF_OP_MUL: *out = WF_PEOP_MUL; return 0;
    case WF_OP_MAXIMUM: *out = WF_PEOP_MAX; return 0;
    case WF_OP_MINIMUM: *out = WF_PEOP_MIN; return 0;
    case WF_OP_SUB: *out = WF_PEOP_SUB; *commutes = 0; return 0;
    case WF_OP_DIV: *out = WF_PEOP_DIV; *commutes = 0; return 0;
    case WF_OP_EQUAL: *out = WF_PEOP_EQ; return 0;
    case WF_OP_LESS: *out = WF_PEOP_LT; *commutes = 0; return 0;
    default: return -1;
  }
}

/* How an operand's block lines up with the result's m x n block (numpy broadcasting,
 * dims aligned from the right): the same block, one row of n values (mode j), one column of
 * m values (mode i), or one value. Every dim the operand does not broadcast must carry the
 * result's split, so both blocks hold the same indices. */
enum { FIT_NONE, FIT_SAME, FIT_ROW, FIT_COL, FIT_SCALAR, FIT_BCAST };

static int fit(const wf_lower *L, wf_value v, wf_value r) {
  const wf_type *vt = wf_value_type(L->f, v), *rt = wf_value_type(L->f, r);
  int same = 1, row = 1, col = 1, scalar = 1, bcast = 1, off = rt->rank - vt->rank;
  if (off < 0) return FIT_NONE;
  for (int d = 0; d < rt->rank; d++) {
    int64_t vd = d < off ? 1 : vt->dims[d - off];
    int vs = d < off ? WF_AXIS_NONE : vt->layout.dims[d - off].split;
    int match = vd == rt->dims[d] && vs == rt->layout.dims[d].split;
    int last = d == rt->rank - 1;
    same &= match;
    scalar &= vd == 1;
    row &= last ? match : vd == 1;
    col &= last ? vd == 1 : match;
    bcast &= match || vd == 1;
  }
  /* A [.., M, N] block folds its leading dims into rows: a column operand must hold all
   * of them, which `match` on every non-last dim ensures. */
  return same ? FIT_SAME : scalar ? FIT_SCALAR : row ? FIT_ROW : col ? FIT_COL : bcast ? FIT_BCAST : FIT_NONE;
}

/* d = a op b over r's block, b broadcast along any of its size-1 dims (FIT_BCAST: a
 * statistic [B, 1, N] of a softmax over axis -2, [1, M, N] over a leading axis). The block
 * is row-major; runs of neighbouring dims that b broadcasts (or not) merge. The innermost
 * two runs are one instruction — b a row (mode j) or a column (mode i) of that [P x Q]
 * slab — repeated for every index of the dims before them. */
static void emit_bcast(wf_lower *L, wf_peop pop, int d, int a, int b, wf_value bv, wf_value r) {
  const wf_type *vt = wf_value_type(L->f, bv), *rt = wf_value_type(L->f, r);
  int64_t rb[WF_MAX_RANK], rs[WF_MAX_RANK], bs[WF_MAX_RANK];
  int isb[WF_MAX_RANK], off = rt->rank - vt->rank;
  wf_lower_block_dims(L, rt, rb);
  for (int i = 0; i < rt->rank; i++) isb[i] = i < off || vt->dims[i - off] == 1;
  int64_t sr = 1, sb = 1;
  for (int i = rt->rank - 1; i >= 0; i--) {
    rs[i] = sr;
    bs[i] = isb[i] ? 0 : sb;
    sr *= rb[i];
    sb *= isb[i] ? 1 : rb[i];
  }
  /* The innermost run [k1, rank) and the one before it [k0, k1), skipping extents of 1. */
  int k1 = rt->rank, k0;
  while (k1 > 0 && rb[k1 - 1] == 1) k1--;
  int inner_b = k1 > 0 && isb[k1 - 1];
  while (k1 > 0 && (rb[k1 - 1] == 1 || isb[k1 - 1] == inner_b)) k1--;
  k0 = k1;
  while (k0 > 0 && (rb[k0 - 1] == 1 || isb[k0 - 1] != inner_b)) k0--;
  int64_t q = 1, p = 1, outer = 1;
  for (int i = k1; i < rt->rank; i++) q *= rb[i];
  for (int i = k0; i < k1; i++) p *= rb[i];
  for (int i = 0; i < k0; i++) outer *= rb[i];
  for (int64_t o = 0; o < outer; o++) {
    int64_t ro = 0, bo = 0, rest = o;
    for (int i = k0 - 1; i >= 0; i--) {
      int64_t idx = rest % rb[i];
      rest /= rb[i];
      ro += idx * rs[i];
      bo += idx * bs[i];
    }
    wf_emit(L, NULL, pop,
            (wf_pe_arg[]){wf_arg_at(d, ro), wf_arg_at(a, ro), wf_arg_at(b, bo), wf_arg_int(p), wf_arg_int(q),
                          wf_arg_int(inner_b ? WF_BMODE_I : WF_BMODE_J)});
  }
}

/* d = a op b[fit] over the m x n block of r (bv: b's value). */
static void emit_fit(wf_lower *L, wf_peop pop, int d, int a, int b, int how, int64_t m, int64_t n,
                     wf_value bv, wf_value r) {
  if (how == FIT_BCAST) {
    emit_bcast(L, pop, d, a, b, bv, r);
    return;
  }
  int64_t rows = m, cols = n;
  int mode = how == FIT_SAME ? WF_BMODE_IJ : how == FIT_ROW ? WF_BMODE_J : WF_BMODE_I;
  if (how == FIT_SCALAR) { /* the block as (m*n) x 1: mode j reads b[0] for every element */
    rows = m * n;
    cols = 1;
    mode = WF_BMODE_J;
  }
  wf_emit(L, NULL, pop,
          (wf_pe_arg[]){wf_arg_sym(d), wf_arg_sym(a), wf_arg_sym(b), wf_arg_int(rows), wf_arg_int(cols),
                        wf_arg_int(mode)});
}

/* d = a[fit] over r's block, for an operand that broadcasts: d = 0, then d = d + a[fit]. */
static void materialize(wf_lower *L, int d, int a, int how, int64_t m, int64_t n, wf_value av, wf_value r) {
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(d), wf_arg_int(m * n)});
  emit_fit(L, WF_PEOP_ADD, d, d, a, how, m, n, av, r);
}

/* d = (a == 0) over n words (1 where a is 0). */
static void is_zero(wf_lower *L, int d, int a, int64_t n) { wf_emit_scal(L, WF_PEOP_EQ, d, a, 0.0f, n); }

static int is_int(wf_dtype t) { return t == WF_I64 || t == WF_I32 || t == WF_BOOL; }

/* cast: integers and bools are f32 words on the PEs (exact below 2^24), so a cast between them
 * or to f32 copies; to bool it is (x != 0), i.e. (x == 0) == 0. From f32 to an integer type it
 * truncates, which no PE instruction does. Returns the predicted cycles, or -1. */
static int64_t lower_cast(wf_lower *L, const wf_op *op, int d, int a, int64_t mn) {
  wf_dtype from = wf_value_type(L->f, op->operands[0])->dtype, to = wf_value_type(L->f, op->results[0])->dtype;
  if (to == WF_BOOL && (from == WF_F32 || is_int(from))) {
    is_zero(L, d, a, mn);
    is_zero(L, d, d, mn);
    return 2 * mn;
  }
  if ((to == WF_F32 && (from == WF_F32 || is_int(from))) || (is_int(to) && is_int(from)) ||
      (is_int(to) && from == WF_F32 && wf_int_valued(L->m, L->f, op->operands[0]))) { /* integers already */
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(d), wf_arg_sym(a), wf_arg_int(mn)});
    return mn;
  }
  wf_error(op->loc, "'cast' from %s to %s has no mesh lowering (the PEs hold integers as f32 words; a cast "
                    "from f32 to an integer truncates, which no PE instruction does, unless the f32 value is built from "
                    "integers: wf_int_valued)",
           wf_dtype_name(from), wf_dtype_name(to));
  return -1;
}

/* where(c, x, y) with c 0 or 1: d = sel(c, x) + sel(c == 0, y), sel(c, v) = c != 0 ? v : 0, so
 * an infinite or NaN value on the side not taken never reaches the result. A broadcast c is
 * first written out in d. Returns the predicted cycles, or -1 when a layout does not line up. */
static int64_t lower_where(wf_lower *L, const wf_op *op, int d, int64_t m, int64_t n) {
  wf_value r = op->results[0], c = op->operands[0], x = op->operands[1], y = op->operands[2];
  int fc = fit(L, c, r), fx = fit(L, x, r), fy = fit(L, y, r);
  if (fc == FIT_NONE || fx == FIT_NONE || fy == FIT_NONE) return -1;
  int64_t mn = m * n, cycles = 4 * mn;
  int sc = wf_lower_sym(L, c), sx = wf_lower_sym(L, x), sy = wf_lower_sym(L, y);
  if (fc != FIT_SAME) {
    materialize(L, d, sc, fc, m, n, c, r);
    sc = d;
    cycles += 2 * mn;
  }
  int t = wf_lower_temp(L, "$where_other", mn * 4);
  is_zero(L, t, sc, mn);
  emit_fit(L, WF_PEOP_SEL, t, t, sy, fy, m, n, y, r);
  emit_fit(L, WF_PEOP_SEL, d, sc, sx, fx, m, n, x, r);
  wf_emit_bin(L, WF_PEOP_ADD, d, d, t, m, n, WF_BMODE_IJ);
  return cycles;
}

/* d = a op b over n words (wf_emit_bin), its predicted cycles. */
static int64_t elem2(wf_lower *L, wf_peop pop, int d, int a, int b, int64_t n) {
  wf_emit_bin(L, pop, d, a, b, 1, n, WF_BMODE_IJ);
  return n * wf_lower_elem_cost(L->t, pop);
}

/* d = a op c, c a constant (wf_emit_scal), its predicted cycles. */
static int64_t elem2c(wf_lower *L, wf_peop pop, int d, int a, float c, int64_t n) {
  wf_emit_scal(L, pop, d, a, c, n);
  return n * wf_lower_elem_cost(L->t, pop);
}

static int64_t elem1(wf_lower *L, wf_peop pop, int d, int a, int64_t n) {
  wf_emit(L, NULL, pop, (wf_pe_arg[]){wf_arg_sym(d), wf_arg_sym(a), wf_arg_int(n)});
  return n * wf_lower_elem_cost(L->t, pop);
}

/* The value of a one-element constant, or 0 when v is none. */
static int const_scalar(const wf_lower *L, wf_value v, double *c) {
  const wf_value_info *vi = &L->f->values[v];
  if (vi->kind != WF_VAL_GLOBAL || vi->index < 0 || wf_type_numel(&vi->type) != 1) return 0;
  wf_tensor *t = wf_global_tensor(L->m, vi->index);
  if (!t) return 0;
  *c = wf_tensor_get(t, 0);
  wf_tensor_free(t);
  return 1;
}

/* pow(a, c) for a constant c over n words: 1 for c = 0 (as C's pow, NaN and 0 included),
 * sqrt / rsqrt for +-1/2, an integer c by repeated squaring (exact in sign for a negative
 * base; 1/x^|c| for c < 0), any other c as exp(c log a) (NaN for a < 0, as pow gives). */
static int64_t lower_pow(wf_lower *L, int d, int a, int64_t n, double c) {
  if (c == 0) {
    int64_t cyc = n;
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(d), wf_arg_int(n)});
    return cyc + elem2c(L, WF_PEOP_ADD, d, d, 1.0f, n);
  }
  if (c == 0.5) return elem1(L, WF_PEOP_SQRT, d, a, n);
  if (c == -0.5) return elem1(L, WF_PEOP_RSQRT, d, a, n);
  if (c != floor(c) || fabs(c) > (double)(1 << 24)) {
    int64_t cyc = elem1(L, WF_PEOP_LOG, d, a, n);
    cyc += elem2c(L, WF_PEOP_MUL, d, d, (float)c, n);
    return cyc + elem1(L, WF_PEOP_EXP, d, d, n);
  }
  int64_t e = (int64_t)fabs(c), cyc = 0;
  int base = a, first = 1, t = -1;
  while (e) {
    if (e & 1) {
      cyc += first ? elem1(L, WF_PEOP_COPY, d, base, n) : elem2(L, WF_PEOP_MUL, d, d, base, n);
      first = 0;
    }
    e >>= 1;
    if (e) {
      if (t < 0) t = wf_lower_temp(L, "$pow_base", n * 4);
      cyc += elem2(L, WF_PEOP_MUL, t, base, base, n);
      base = t;
    }
  }
  if (c < 0) cyc += elem1(L, WF_PEOP_RECIP, d, d, n);
  return cyc;
}

/* d = (v rounds to itself), v >= 0 below 2^23: (v + 2^23) - 2^23 rounds v to an integer (two
 * instructions, so nothing folds them); from 2^23 on every f32 is one. t: scratch. */
static int64_t integral(wf_lower *L, int d, int v, int t, int64_t n) {
  int64_t cyc = elem2c(L, WF_PEOP_ADD, t, v, 8388608.0f, n);
  cyc += elem2c(L, WF_PEOP_SUB, t, t, 8388608.0f, n);
  cyc += elem2(L, WF_PEOP_EQ, d, t, v, n);
  cyc += elem2c(L, WF_PEOP_LT, t, v, 8388608.0f, n); /* 1 below 2^23 */
  cyc += elem2c(L, WF_PEOP_EQ, t, t, 0.0f, n);        /* 1 from 2^23 on */
  return cyc + elem2(L, WF_PEOP_MAX, d, d, t, n);
}

/* pow(x, y) with a tensor exponent y (sy, x's block), as ONNX defines it: |x|^y = exp(y log|x|)
 * (0^y: 0, inf, or 1 for y = 0), negated for a negative x and an odd integer y, NaN for a
 * negative x and a y that is not an integer. Returns the cycles. */
static int64_t lower_pow_tensor(wf_lower *L, int d, int sx, int sy, int64_t n) {
  int t = wf_lower_temp(L, "$pw_t", n * 4), u = wf_lower_temp(L, "$pw_u", n * 4);
  int k = wf_lower_temp(L, "$pw_k", n * 4), w = wf_lower_temp(L, "$pw_w", n * 4);
  int64_t cyc = elem1(L, WF_PEOP_NEG, t, sx, n);
  cyc += elem2(L, WF_PEOP_MAX, t, t, sx, n); /* |x| */
  cyc += elem1(L, WF_PEOP_LOG, t, t, n);
  cyc += elem2(L, WF_PEOP_MUL, t, t, sy, n);
  cyc += elem1(L, WF_PEOP_EXP, t, t, n);    /* |x|^y, NaN for 0^0 */
  cyc += elem2c(L, WF_PEOP_EQ, u, sy, 0.0f, n);
  cyc += elem2c(L, WF_PEOP_EQ, k, u, 0.0f, n);
  cyc += elem2(L, WF_PEOP_SEL, d, k, t, n);
  cyc += elem2(L, WF_PEOP_ADD, d, d, u, n);  /* y = 0: 1 */
  /* y's kind: k = |y| is an integer, w = |y| / 2 is one (y even; every f32 from 2^24 on is) */
  cyc += elem1(L, WF_PEOP_NEG, u, sy, n);
  cyc += elem2(L, WF_PEOP_MAX, u, u, sy, n); /* |y| */
  cyc += integral(L, k, u, t, n);
  cyc += elem2c(L, WF_PEOP_MUL, u, u, 0.5f, n);
  cyc += integral(L, w, u, t, n);
  /* a negative x: times 1 - 2 (k - w) (-1 for an odd y), and NaN where k = 0 */
  cyc += elem2c(L, WF_PEOP_LT, t, sx, 0.0f, n);
  cyc += elem2(L, WF_PEOP_SUB, w, k, w, n);
  cyc += elem2(L, WF_PEOP_MUL, w, w, t, n);
  cyc += elem2c(L, WF_PEOP_MUL, w, w, -2.0f, n);
  cyc += elem2c(L, WF_PEOP_ADD, w, w, 1.0f, n);
  cyc += elem2(L, WF_PEOP_MUL, d, d, w, n);
  cyc += elem2c(L, WF_PEOP_EQ, k, k, 0.0f, n);
  cyc += elem2(L, WF_PEOP_MUL, t, t, k, n);   /* negative x, y not an integer */
  cyc += elem2c(L, WF_PEOP_EQ, k, t, 0.0f, n);
  cyc += elem2(L, WF_PEOP_SEL, d, k, d, n);
  wf_emit_bin(L, WF_PEOP_SEL, u, t, wf_lower_scalar(L, NAN), 1, n, WF_BMODE_I);
  return cyc + n + elem2(L, WF_PEOP_ADD, d, d, u, n);
}

/* d = a / b truncated toward zero, a and b integers held as f32 words (|a|, |b| < 2^24, the
 * mesh's integers) over n words: q = a / b rounded once (div) never reaches an integer it is not,
 * because an inexact quotient lies at least 1/|b| from every integer while its rounding error
 * is under half an ulp of |q| <= |a| / |b|, and |a| < 2^24; so floor(|q|) is the quotient's.
 * floor below 2^23 is (u + 2^23) - 2^23, less 1 where that rounded up; from 2^23 on every f32
 * is an integer. Then the sign of q. Temporaries t, u, w of n words. Returns the cycles. */
static int64_t lower_int_div(wf_lower *L, int d, int sa, int sb, int64_t n) {
  int t = wf_lower_temp(L, "$id_t", n * 4), u = wf_lower_temp(L, "$id_u", n * 4);
  int w = wf_lower_temp(L, "$id_w", n * 4);
  int64_t cyc = elem2(L, WF_PEOP_DIV, d, sa, sb, n); /* q */
  cyc += elem1(L, WF_PEOP_NEG, u, d, n);
  cyc += elem2(L, WF_PEOP_MAX, u, u, d, n);           /* |q| */
  cyc += elem2c(L, WF_PEOP_ADD, t, u, 8388608.0f, n);
  cyc += elem2c(L, WF_PEOP_SUB, t, t, 8388608.0f, n); /* nearest below 2^23 */
  cyc += elem2(L, WF_PEOP_LT, w, u, t, n);
  cyc += elem2(L, WF_PEOP_SUB, t, t, w, n);           /* floor below 2^23 */
  cyc += elem2c(L, WF_PEOP_LT, w, u, 8388608.0f, n);
  cyc += elem2(L, WF_PEOP_SEL, t, w, t, n);
  cyc += elem2c(L, WF_PEOP_EQ, w, w, 0.0f, n);
  cyc += elem2(L, WF_PEOP_SEL, w, w, u, n);
  cyc += elem2(L, WF_PEOP_ADD, t, t, w, n);           /* floor(|q|) */
  cyc += elem2c(L, WF_PEOP_LT, w, d, 0.0f, n);
  cyc += elem2c(L, WF_PEOP_MUL, w, w, -2.0f, n);
  cyc += elem2c(L, WF_PEOP_ADD, w, w, 1.0f, n);       /* -1 for a negative q, else 1 */
  return cyc + elem2(L, WF_PEOP_MUL, d, t, w, n);
}

/* trilu(x), last two dims [M, N] split along y and x: keep x where col - row >= k (upper) or
 * <= k (lower), 0 elsewhere; returns the cycles. */
static int64_t lower_trilu(wf_lower *L, const wf_op *op, int sr, int sa) {
  const wf_type *t = wf_value_type(L->f, op->results[0]);
  int64_t bd[WF_MAX_RANK], o = 1;
  wf_lower_block_dims(L, t, bd);
  int R = t->rank;
  for (int d = 0; d < R - 2; d++) o *= bd[d];
  int64_t mb = bd[R - 2], nb = bd[R - 1], k = wf_op_int(L->f, op, "k", 0);
  if (mb > 4096 || nb > 4096 || k > (1 << 24) || k < -(1 << 24)) return -1;
  int gr = wf_lower_global_index(L, "$tr_row", mb, t->layout.dims[R - 2].split);
  int gc = wf_lower_global_index(L, "$tr_col", nb, t->layout.dims[R - 1].split);
  int keep = wf_lower_temp(L, "$tr_keep", mb * nb * 4);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(keep), wf_arg_int(mb * nb)});
  wf_emit_bin(L, WF_PEOP_ADD, keep, keep, gc, mb, nb, WF_BMODE_J); /* col - row */
  wf_emit_bin(L, WF_PEOP_SUB, keep, keep, gr, mb, nb, WF_BMODE_I);
  if (wf_op_int(L->f, op, "upper", 1)) { /* col - row >= k: row - col < 1 - k (integers) */
    wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(keep), wf_arg_sym(keep), wf_arg_int(mb * nb)});
    wf_emit_scal(L, WF_PEOP_LT, keep, keep, (float)(1 - k), mb * nb);
  } else { /* col - row <= k: col - row < k + 1 */
    wf_emit_scal(L, WF_PEOP_LT, keep, keep, (float)(k + 1), mb * nb);
  }
  for (int64_t i = 0; i < o; i++) /* a select: an inf or NaN outside the triangle never leaks */
    wf_emit(L, NULL, WF_PEOP_SEL, (wf_pe_arg[]){wf_arg_at(sr, i * mb * nb), wf_arg_sym(keep),
                                                wf_arg_at(sa, i * mb * nb), wf_arg_int(mb), wf_arg_int(nb),
                                                wf_arg_int(WF_BMODE_IJ)});
  return mb + nb + 4 * mb * nb + o * mb * nb;
}

int wf_lower_elementwise(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_value r = op->results[0];
  int64_t m, n;
  wf_lower_block(L, r, &m, &n);
  int sr = wf_lower_sym(L, r);
  wf_peop pop;
  out->lowering = "local";
  if (op->code == WF_OP_DIV && is_int(wf_value_type(L->f, r)->dtype)) { /* truncated toward zero */
    int fa = fit(L, op->operands[0], r), fb = fit(L, op->operands[1], r);
    if (fa == FIT_NONE || fb == FIT_NONE) goto layouts;
    int s2[2] = {wf_lower_sym(L, op->operands[0]), wf_lower_sym(L, op->operands[1])}, how[2] = {fa, fb};
    int64_t cyc = 0;
    for (int i = 0; i < 2; i++)
      if (how[i] != FIT_SAME) { /* broadcast: written out first */
        int e = wf_lower_temp(L, i ? "$id_b" : "$id_a", m * n * 4);
        materialize(L, e, s2[i], how[i], m, n, op->operands[i], r);
        s2[i] = e, cyc += 2 * m * n;
      }
    out->predicted = cyc + lower_int_div(L, sr, s2[0], s2[1], m * n);
    return 0;
  }
  if (op->code == WF_OP_POW) {
    double c;
    int fy = fit(L, op->operands[1], r);
    if (!const_scalar(L, op->operands[1], &c) && fit(L, op->operands[0], r) == FIT_SAME && fy != FIT_NONE &&
        wf_value_type(L->f, op->operands[1])->dtype == WF_F32) { /* a tensor exponent */
      int sy = wf_lower_sym(L, op->operands[1]);
      int64_t cyc = 0;
      if (fy != FIT_SAME) { /* broadcast: written out first */
        int e = wf_lower_temp(L, "$pw_y", m * n * 4);
        materialize(L, e, sy, fy, m, n, op->operands[1], r);
        sy = e, cyc = 2 * m * n;
      }
      out->predicted = cyc + lower_pow_tensor(L, sr, wf_lower_sym(L, op->operands[0]), sy, m * n);
      return 0;
    }
    if (!const_scalar(L, op->operands[1], &c) || fit(L, op->operands[0], r) != FIT_SAME) {
      wf_error(op->loc, "'pow' on the mesh takes x laid out like the result and a constant one-element exponent "
                        "(x^2, x^0.5, x^-1, ...) or an f32 one that broadcasts to x (waferc --interpret runs this one)");
      return WF_EXIT_UNSUPPORTED;
    }
    wf_lower_sym(L, op->operands[1]); /* the exponent is a weight of the plan: held, not read */
    out->predicted = lower_pow(L, sr, wf_lower_sym(L, op->operands[0]), m * n, c);
    return 0;
  }
  if (op->code == WF_OP_EXPAND) { /* 0 + x broadcast: its size-1 dims held by every PE that needs them */
    int how = fit(L, op->operands[0], r);
    if (how == FIT_NONE) goto layouts;
    materialize(L, sr, wf_lower_sym(L, op->operands[0]), how, m, n, op->operands[0], r);
    out->predicted = 2 * m * n;
    return 0;
  }
  if (op->code == WF_OP_WHERE) {
    int64_t cyc = lower_where(L, op, sr, m, n);
    if (cyc < 0) goto layouts;
    out->predicted = cyc;
    return 0;
  }
  if (op->code == WF_OP_TRILU) {
    if (fit(L, op->operands[0], r) != FIT_SAME) goto layouts;
    int64_t cyc = lower_trilu(L, op, sr, wf_lower_sym(L, op->operands[0]));
    if (cyc < 0) {
      wf_error(op->loc, "'trilu' on the mesh takes blocks of at most 4096 rows and columns and |k| <= 2^24");
      return WF_EXIT_UNSUPPORTED;
    }
    out->predicted = cyc;
    return 0;
  }
  if (op->n_operands == 1 && (op->code == WF_OP_NOT || op->code == WF_OP_CAST)) {
    if (fit(L, op->operands[0], r) != FIT_SAME) goto layouts;
    int sa = wf_lower_sym(L, op->operands[0]);
    if (op->code == WF_OP_NOT) { /* bools are 0 or 1 */
      is_zero(L, sr, sa, m * n);
      out->predicted = m * n;
      return 0;
    }
    int64_t cyc = lower_cast(L, op, sr, sa, m * n);
    if (cyc < 0) return WF_EXIT_UNSUPPORTED;
    out->predicted = cyc;
    return 0;
  }
  if (op->n_operands == 1) {
    if (unary_peop(L, op, &pop)) goto unsupported;
    if (fit(L, op->operands[0], r) != FIT_SAME) goto layouts;
    int sa = wf_lower_sym(L, op->operands[0]);
    wf_emit(L, NULL, pop, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sa), wf_arg_int(m * n)});
    out->predicted = m * n * wf_lower_elem_cost(L->t, pop);
    return 0;
  }
  int commutes;
  if (op->n_operands != 2 || binary_peop(op->code, &pop, &commutes)) goto unsupported;
  wf_value a = op->operands[0], b = op->operands[1];
  int fa = fit(L, a, r), fb = fit(L, b, r);
  if (fa == FIT_NONE || fb == FIT_NONE) goto layouts;
  int sa = wf_lower_sym(L, a), sb = wf_lower_sym(L, b);
  out->predicted = m * n * wf_lower_elem_cost(L->t, pop);
  if ((fa != FIT_SAME && fb != FIT_SAME) || (fa != FIT_SAME && pop == WF_PEOP_LT)) {
    /* both operands broadcast (or a < b with a broadcast): a written out first */
    materialize(L, sr, sa, fa, m, n, a, r);
    emit_fit(L, pop, sr, sr, sb, fb, m, n, b, r);
    out->predicted += 2 * m * n;
  } else if (fa == FIT_SAME) {
    emit_fit(L, pop, sr, sa, sb, fb, m, n, b, r);
  } else if (commutes) {
    emit_fit(L, pop, sr, sb, sa, fa, m, n, a, r);
  } else if (pop == WF_PEOP_SUB) { /* a - b = -(b - a) */
    emit_fit(L, WF_PEOP_SUB, sr, sb, sa, fa, m, n, a, r);
    wf_emit(L, NULL, WF_PEOP_NEG, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sr), wf_arg_int(m * n)});
    out->predicted += m * n;
  } else { /* a / b = (1 / b) * a */
    wf_emit(L, NULL, WF_PEOP_RECIP, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(sb), wf_arg_int(m * n)});
    emit_fit(L, WF_PEOP_MUL, sr, sr, sa, fa, m, n, a, r);
    out->predicted += m * n;
  }
  return 0;
layouts:
  wf_error(op->loc, "'%s': operand layouts do not line up with the result's (each operand must "
                    "have the result's shape and splits, or broadcast along its size-1 dims); a "
                    "relayout is not implemented", wf_opinfos[op->code].name);
  return WF_EXIT_UNSUPPORTED;
unsupported:
  wf_error(op->loc, "op '%s' has no lowering to PE programs", wf_opinfos[op->code].name);
  return WF_EXIT_UNSUPPORTED;
}
