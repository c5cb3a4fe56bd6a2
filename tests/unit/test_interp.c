/* The reference interpreter against hand-computed results, one small case per op family. */
#include "h2_testutil.h"

/* Runs @main on the given inputs; returns the first output (or NULL on error). */
static wf_tensor *run(int n, wf_tensor **ins) {
  wf_tensor *outs[4] = {0};
  int nout = 0;
  int rc = wf_interpret(g_m, "main", n, ins, outs, 4, &nout);
  for (int i = 0; i < n; i++) wf_tensor_free(ins[i]);
  if (rc != 0) return NULL;
  for (int i = 1; i < nout; i++) wf_tensor_free(outs[i]);
  return nout ? outs[0] : NULL;
}

/* A function applying one op to fresh arguments of the given types. */
static wf_op *unit_op(wf_opcode c, int n, const wf_type *in, wf_type rt) {
  begin();
  wf_value v[8];
  for (int i = 0; i < n; i++) v[i] = arg(in[i]);
  wf_op *o = op1(c, n, v, rt);
  return o;
}
static wf_tensor *finish_run(wf_op *o, int n, wf_tensor **ins) {
  finish(1, &o->results[0]);
  wf_tensor *r = run(n, ins);
  return r;
}

static void test_matmul(void) {
  wf_type a = TY(WF_F32, 2, 3), b = TY(WF_F32, 3, 2);
  wf_op *o = unit_op(WF_OP_MATMUL, 2, (wf_type[]){a, b}, TY(WF_F32, 2, 2));
  wf_tensor *r = finish_run(o, 2, (wf_tensor *[]){tens(a, VALS(1, 2, 3, 4, 5, 6)), tens(b, VALS(7, 8, 9, 10, 11, 12))});
  check_vals("matmul 2x3.3x2", r, VALS(58, 64, 139, 154), 4, 0);
  wf_tensor_free(r);
  end();

  /* batch broadcast: A [2,1,2,2] = {1*I, 2*I}, B [3,2,2] = {[[j+1,1],[0,j+1]]} -> (i+1)*B_j */
  wf_type ab = TY(WF_F32, 2, 1, 2, 2), bb = TY(WF_F32, 3, 2, 2);
  o = unit_op(WF_OP_MATMUL, 2, (wf_type[]){ab, bb}, TY(WF_F32, 2, 3, 2, 2));
  r = finish_run(o, 2, (wf_tensor *[]){tens(ab, VALS(1, 0, 0, 1, 2, 0, 0, 2)),
                                       tens(bb, VALS(1, 1, 0, 1, 2, 1, 0, 2, 3, 1, 0, 3))});
  double want[24];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double *w = want + (i * 3 + j) * 4;
      w[0] = (i + 1) * (j + 1), w[1] = i + 1, w[2] = 0, w[3] = (i + 1) * (j + 1);
    }
  check_vals("matmul batched", r, want, 24, 0);
  wf_tensor_free(r);
  end();

  /* 1-D operands: [3].[3,2] -> [2]; [3].[3] -> scalar */
  wf_type v3 = TY(WF_F32, 3);
  o = unit_op(WF_OP_MATMUL, 2, (wf_type[]){v3, b}, TY(WF_F32, 2));
  r = finish_run(o, 2, (wf_tensor *[]){tens(v3, VALS(1, 0, -1)), tens(b, VALS(7, 8, 9, 10, 11, 12))});
  check_vals("matmul vec.mat", r, VALS(-4, -4), 2, 0);
  CHECK(r && r->rank == 1, "vec.mat rank");
  wf_tensor_free(r);
  end();
  o = unit_op(WF_OP_MATMUL, 2, (wf_type[]){v3, v3}, TY0(WF_F32));
  r = finish_run(o, 2, (wf_tensor *[]){tens(v3, VALS(1, 2, 3)), tens(v3, VALS(4, 5, 6))});
  check_vals("matmul dot", r, VALS(32), 1, 0);
  CHECK(r && r->rank == 0, "dot is a scalar");
  wf_tensor_free(r);
  end();

  /* integers are exact beyond 2^53 */
  wf_type i1 = TY(WF_I64, 1, 1);
  o = unit_op(WF_OP_MATMUL, 2, (wf_type[]){i1, i1}, TY(WF_I64, 1, 1));
  wf_tensor *x = wf_tensor_new(WF_I64, 2, DIMS(1, 1)), *y = wf_tensor_new(WF_I64, 2, DIMS(1, 1));
  ((int64_t *)x->data)[0] = (INT64_C(1) << 53) + 1;
  ((int64_t *)y->data)[0] = 1;
  r = finish_run(o, 2, (wf_tensor *[]){x, y});
  CHECK(r && ((int64_t *)r->data)[0] == (INT64_C(1) << 53) + 1, "i64 matmul exact");
  wf_tensor_free(r);
  end();
}

static void test_gemm(void) {
  /* Y = 2 * A . B^T + 0.5 * C, C [2] broadcast along rows */
  wf_type a = TY(WF_F32, 2, 2), bt = TY(WF_F32, 2, 2), c = TY(WF_F32, 2);
  wf_op *o = unit_op(WF_OP_GEMM, 3, (wf_type[]){a, bt, c}, TY(WF_F32, 2, 2));
  wf_op_set_float(g_f, o, "alpha", 2.0);
  wf_op_set_float(g_f, o, "beta", 0.5);
  wf_op_set_attr(g_f, o, (wf_attr){.name = wf_intern(g_m, "trans_b"), .kind = WF_ATTR_BOOL, .u.i = 1});
  /* A = [[1,2],[3,4]], B^T stored = [[1,0],[1,1]] so B = [[1,1],[0,1]]: A.B = [[1,3],[3,7]] */
  wf_tensor *r = finish_run(o, 3, (wf_tensor *[]){tens(a, VALS(1, 2, 3, 4)), tens(bt, VALS(1, 0, 1, 1)),
                                                  tens(c, VALS(10, 20))});
  check_vals("gemm", r, VALS(2 + 5, 6 + 10, 6 + 5, 14 + 10), 4, 0);
  wf_tensor_free(r);
  end();
}

static void test_binary(void) {
  wf_type a = TY(WF_F32, 2, 1), b = TY(WF_F32, 1, 3);
  wf_op *o = unit_op(WF_OP_SUB, 2, (wf_type[]){a, b}, TY(WF_F32, 2, 3));
  wf_tensor *r = finish_run(o, 2, (wf_tensor *[]){tens(a, VALS(10, 20)), tens(b, VALS(1, 2, 3))});
  check_vals("sub [2,1]-[1,3]", r, VALS(9, 8, 7, 19, 18, 17), 6, 0);
  wf_tensor_free(r);
  end();

  wf_type i = TY(WF_I32, 4);
  o = unit_op(WF_OP_DIV, 2, (wf_type[]){i, i}, i);
  r = finish_run(o, 2, (wf_tensor *[]){tens(i, VALS(-7, 7, 9, -1)), tens(i, VALS(2, -2, 3, 5))});
  check_vals("int div truncates", r, VALS(-3, -3, 3, 0), 4, 0);
  wf_tensor_free(r);
  end();

  o = unit_op(WF_OP_DIV, 2, (wf_type[]){i, i}, i);
  diag_capture();
  r = finish_run(o, 2, (wf_tensor *[]){tens(i, VALS(1, 1, 1, 1)), tens(i, VALS(1, 0, 1, 1))});
  diag_release();
  CHECK(r == NULL, "division by zero fails");
  CHECK_DIAG("t.wir:2:3: error: 'div': integer division by zero");
  end();

  wf_type s = TY(WF_F32, 3);
  o = unit_op(WF_OP_MAXIMUM, 2, (wf_type[]){s, s}, s);
  r = finish_run(o, 2, (wf_tensor *[]){tens(s, VALS(1, NAN, -2)), tens(s, VALS(0, 1, -3))});
  check_vals("maximum propagates nan", r, VALS(1, NAN, -2), 3, 0);
  wf_tensor_free(r);
  end();

  /* f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 and rounds to even (1) */
  wf_type h = TY(WF_F16, 2);
  o = unit_op(WF_OP_ADD, 2, (wf_type[]){h, h}, h);
  r = finish_run(o, 2, (wf_tensor *[]){tens(h, VALS(1, 1)), tens(h, VALS(0x1p-11, 0x1p-10))});
  CHECK(r && ((uint16_t *)r->data)[0] == 0x3c00 && ((uint16_t *)r->data)[1] == 0x3c01,
        "f16 add rounding: %04x %04x", r ? ((uint16_t *)r->data)[0] : 0, r ? ((uint16_t *)r->data)[1] : 0);
  wf_tensor_free(r);
  end();
}

static void test_compare_where(void) {
  wf_type a = TY(WF_F32, 3), b = TY(WF_F32, 1);
  wf_op *o = unit_op(WF_OP_LESS, 2, (wf_type[]){a, b}, TY(WF_BOOL, 3));
  wf_tensor *r = finish_run(o, 2, (wf_tensor *[]){tens(a, VALS(1, 2, 3)), tens(b, VALS(2))});
  check_vals("less", r, VALS(1, 0, 0), 3, 0);
  CHECK(r && r->dtype == WF_BOOL, "less gives bool");
  wf_tensor_free(r);
  end();

  wf_type c = TY(WF_BOOL, 2, 1), x = TY(WF_F32, 2, 2), y = TY0(WF_F32);
  o = unit_op(WF_OP_WHERE, 3, (wf_type[]){c, x, y}, TY(WF_F32, 2, 2));
  r = finish_run(o, 3, (wf_tensor *[]){tens(c, VALS(1, 0)), tens(x, VALS(1, 2, 3, 4)), tens(y, VALS(-1))});
  check_vals("where", r, VALS(1, 2, -1, -1), 4, 0);
  wf_tensor_free(r);
  end();
}

static void test_unary(void) {
  wf_type t = TY(WF_F32, 4);
  struct { wf_opcode c; double x[4], want[4]; double tol; } cases[] = {
      {WF_OP_SIGMOID, {0, -1000, 1000, 1}, {0.5, 0, 1, 0.7310585786300049}, 1e-7},
      {WF_OP_SILU, {1, 0, -1, 2}, {0.7310585786300049, 0, -0.2689414213699951, 1.7615941559557649}, 1e-6},
      {WF_OP_GELU, {1, 0, -1, 2}, {0.8413447460685429, 0, -0.15865525393145707, 1.9544997361036416}, 1e-6},
      {WF_OP_RSQRT, {4, 0.25, 1, 16}, {0.5, 2, 1, 0.25}, 0},
      {WF_OP_RELU, {-1, 2, 0, -0.5}, {0, 2, 0, 0}, 0},
      {WF_OP_ERF, {0, 1, -1, 3}, {0, 0.8427007929497149, -0.8427007929497149, 0.9999779095030014}, 1e-7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_op *o = unit_op(cases[i].c, 1, &t, t);
    wf_tensor *r = finish_run(o, 1, (wf_tensor *[]){tens(t, cases[i].x)});
    check_vals(wf_opinfos[cases[i].c].name, r, cases[i].want, 4, cases[i].tol);
    wf_tensor_free(r);
    end();
  }
  /* gelu tanh approximation at 1: 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) */
  wf_op *o = unit_op(WF_OP_GELU, 1, &t, t);
  wf_op_set_ident(g_f, o, "approximate", "tanh");
  wf_tensor *r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 0, -1, 2))});
  check_vals("gelu tanh", r, VALS(0.8411919906082768, 0, -0.15880800939172324, 1.954597694087775), 4, 1e-6);
  wf_tensor_free(r);
  end();

  /* cast: f32 -> f16 rounds to nearest even (0.1 -> 0x2e66), f32 -> i32 truncates */
  wf_type h = TY(WF_F16, 1), i = TY(WF_I32, 2), f2 = TY(WF_F32, 2);
  o = unit_op(WF_OP_CAST, 1, (wf_type[]){TY(WF_F32, 1)}, h);
  wf_op_set_ident(g_f, o, "to", "f16");
  r = finish_run(o, 1, (wf_tensor *[]){tens(TY(WF_F32, 1), VALS(0.1))});
  CHECK(r && ((uint16_t *)r->data)[0] == 0x2e66, "cast 0.1 to f16");
  wf_tensor_free(r);
  end();
  o = unit_op(WF_OP_CAST, 1, &f2, i);
  wf_op_set_ident(g_f, o, "to", "i32");
  r = finish_run(o, 1, (wf_tensor *[]){tens(f2, VALS(-2.7, 2.7))});
  check_vals("cast to i32", r, VALS(-2, 2), 2, 0);
  wf_tensor_free(r);
  end();
}

static void test_softmax(void) {
  wf_type t = TY(WF_F32, 2, 3);
  wf_op *o = unit_op(WF_OP_SOFTMAX, 1, &t, t);
  wf_tensor *r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 2, 3, 1000, 1001, 1002))});
  CHECK(r != NULL, "softmax ran");
  if (r) {
    for (int row = 0; row < 2; row++) {
      double s = 0;
      for (int j = 0; j < 3; j++) s += wf_tensor_get(r, row * 3 + j);
      CHECK(fabs(s - 1) < 1e-6, "row %d sums to %g", row, s);
      /* consecutive entries differ by a factor e; large inputs do not overflow */
      for (int j = 0; j < 2; j++)
        CHECK(fabs(wf_tensor_get(r, row * 3 + j + 1) / wf_tensor_get(r, row * 3 + j) - M_E) < 1e-5,
              "exp ratio row %d", row);
    }
  }
  wf_tensor_free(r);
  end();

  /* along axis 0 */
  o = unit_op(WF_OP_SOFTMAX, 1, &t, t);
  wf_op_set_int(g_f, o, "axis", 0);
  r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(0, 0, 5, 0, 0, 5))});
  check_vals("softmax axis 0", r, VALS(0.5, 0.5, 0.5, 0.5, 0.5, 0.5), 6, 1e-7);
  wf_tensor_free(r);
  end();
}

static void test_norms(void) {
  wf_type x = TY(WF_F32, 1, 4), s = TY(WF_F32, 4), b = TY(WF_F32, 1);
  wf_op *o = unit_op(WF_OP_LAYERNORM, 3, (wf_type[]){x, s, b}, x);
  wf_op_set_float(g_f, o, "epsilon", 0.0);
  wf_tensor *r = finish_run(o, 3, (wf_tensor *[]){tens(x, VALS(1, 2, 3, 4)), tens(s, VALS(1, 1, 2, 2)), tens(b, VALS(10))});
  /* mean 2.5, variance 1.25 */
  double k = 1 / sqrt(1.25);
  check_vals("layernorm", r, VALS(10 - 1.5 * k, 10 - 0.5 * k, 10 + 2 * 0.5 * k, 10 + 2 * 1.5 * k), 4, 1e-6);
  wf_tensor_free(r);
  end();

  wf_type x2 = TY(WF_F32, 2, 2), s2 = TY(WF_F32, 2);
  o = unit_op(WF_OP_RMSNORM, 2, (wf_type[]){x2, s2}, x2);
  wf_op_set_float(g_f, o, "epsilon", 0.0);
  r = finish_run(o, 2, (wf_tensor *[]){tens(x2, VALS(3, 4, 1, 1)), tens(s2, VALS(1, 2))});
  double rms = sqrt(12.5);
  check_vals("rmsnorm", r, VALS(3 / rms, 8 / rms, 1, 2), 4, 1e-6);
  wf_tensor_free(r);
  end();
}

static void test_rope(void) {
  /* x [1, 2, 4] (S = 2, D = 4); position 0 has angle 0 (identity), position 1 uses c, s */
  wf_type x = TY(WF_F32, 1, 2, 4), cs = TY(WF_F32, 2, 4);
  double c = 0.6, s = 0.8;
  for (int inter = 0; inter < 2; inter++) {
    wf_op *o = unit_op(WF_OP_ROPE, 3, (wf_type[]){x, cs, cs}, x);
    wf_op_set_attr(g_f, o, (wf_attr){.name = wf_intern(g_m, "interleaved"), .kind = WF_ATTR_BOOL, .u.i = inter});
    wf_tensor *r = finish_run(o, 3, (wf_tensor *[]){tens(x, VALS(1, 2, 3, 4, 1, 2, 3, 4)),
                                                    tens(cs, VALS(1, 1, 1, 1, c, c, c, c)),
                                                    tens(cs, VALS(0, 0, 0, 0, s, s, s, s))});
    if (!inter) /* pairs (x0, x2), (x1, x3): (x0 c - x2 s, x1 c - x3 s, x2 c + x0 s, x3 c + x1 s) */
      check_vals("rope half", r, VALS(1, 2, 3, 4, 0.6 - 2.4, 1.2 - 3.2, 1.8 + 0.8, 2.4 + 1.6), 8, 1e-6);
    else /* pairs (x0, x1), (x2, x3) */
      check_vals("rope interleaved", r, VALS(1, 2, 3, 4, 0.6 - 1.6, 1.2 + 0.8, 1.8 - 3.2, 2.4 + 2.4), 8, 1e-6);
    wf_tensor_free(r);
    end();
  }
}

static void test_reduce(void) {
  wf_type t = TY(WF_F32, 2, 3);
  wf_op *o = unit_op(WF_OP_REDUCE_SUM, 1, &t, TY(WF_F32, 2));
  wf_op_set_ints(g_f, o, "axes", 1, DIMS(-1));
  wf_op_set_attr(g_f, o, (wf_attr){.name = wf_intern(g_m, "keepdims"), .kind = WF_ATTR_BOOL, .u.i = 0});
  wf_tensor *r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 2, 3, 4, 5, 6))});
  check_vals("reduce_sum axis -1", r, VALS(6, 15), 2, 0);
  wf_tensor_free(r);
  end();

  o = unit_op(WF_OP_REDUCE_MAX, 1, &t, TY(WF_F32, 1, 3));
  wf_op_set_ints(g_f, o, "axes", 1, DIMS(0));
  r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 9, 3, 4, 5, -6))});
  check_vals("reduce_max axis 0 keepdims", r, VALS(4, 9, 3), 3, 0);
  wf_tensor_free(r);
  end();

  o = unit_op(WF_OP_REDUCE_MEAN, 1, &t, TY(WF_F32, 1, 1));
  wf_op_set_ints(g_f, o, "axes", 0, NULL);
  r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 2, 3, 4, 5, 6))});
  check_vals("reduce_mean all", r, VALS(3.5), 1, 0);
  wf_tensor_free(r);
  end();
}

static void test_movement(void) {
  wf_type t = TY(WF_F32, 2, 3);
  wf_op *o = unit_op(WF_OP_TRANSPOSE, 1, &t, TY(WF_F32, 3, 2));
  wf_op_set_ints(g_f, o, "perm", 2, DIMS(1, 0));
  wf_tensor *r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 2, 3, 4, 5, 6))});
  check_vals("transpose", r, VALS(1, 4, 2, 5, 3, 6), 6, 0);
  wf_tensor_free(r);
  end();

  /* slice of 0..9 with negative steps and clamping */
  wf_type v = TY(WF_I64, 10);
  struct { int64_t start, end, step; double want[10]; int n; } sl[] = {
      {-1, INT64_MIN, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10},
      {8, 1, -3, {8, 5, 2}, 3},
      {-100, 100, 4, {0, 4, 8}, 3},
      {5, 5, 1, {0}, 0},
      {-3, -1, 1, {7, 8}, 2},
  };
  for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++) {
    o = unit_op(WF_OP_SLICE, 1, &v, TY(WF_I64, sl[i].n));
    wf_op_set_ints(g_f, o, "starts", 1, &sl[i].start);
    wf_op_set_ints(g_f, o, "ends", 1, &sl[i].end);
    wf_op_set_ints(g_f, o, "axes", 1, DIMS(0));
    wf_op_set_ints(g_f, o, "steps", 1, &sl[i].step);
    r = finish_run(o, 1, (wf_tensor *[]){tens(v, VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))});
    char what[64];
    snprintf(what, sizeof what, "slice case %zu", i);
    check_vals(what, r, sl[i].want, sl[i].n, 0);
    wf_tensor_free(r);
    end();
  }

  /* concat along axis 1, then split back */
  begin();
  wf_value a = arg(TY(WF_F32, 2, 1)), b = arg(TY(WF_F32, 2, 2));
  wf_op *cat = op1(WF_OP_CONCAT, 2, (wf_value[]){a, b}, TY(WF_F32, 2, 3));
  wf_op_set_int(g_f, cat, "axis", 1);
  wf_type parts[2] = {TY(WF_F32, 2, 2), TY(WF_F32, 2, 1)};
  wf_op *sp = wf_op_append(g_f, WF_OP_SPLIT, 1, &cat->results[0], 2, parts, next_loc());
  wf_op_set_int(g_f, sp, "axis", -1);
  wf_op_set_ints(g_f, sp, "sizes", 2, DIMS(2, 1));
  finish(2, sp->results);
  wf_tensor *outs[2] = {0};
  int nout = 0;
  wf_tensor *ins[2] = {tens(TY(WF_F32, 2, 1), VALS(1, 4)), tens(TY(WF_F32, 2, 2), VALS(2, 3, 5, 6))};
  int rc = wf_interpret(g_m, "main", 2, ins, outs, 2, &nout);
  CHECK(rc == 0 && nout == 2, "concat/split ran");
  if (rc == 0) {
    check_vals("split 0", outs[0], VALS(1, 2, 4, 5), 4, 0);
    check_vals("split 1", outs[1], VALS(3, 6), 2, 0);
  }
  for (int i = 0; i < 2; i++) wf_tensor_free(ins[i]), wf_tensor_free(outs[i]);
  end();

  /* gather rows with a negative index; an out-of-range index is a located error */
  wf_type d = TY(WF_F32, 3, 2), ix = TY(WF_I32, 2);
  o = unit_op(WF_OP_GATHER, 2, (wf_type[]){d, ix}, TY(WF_F32, 2, 2));
  r = finish_run(o, 2, (wf_tensor *[]){tens(d, VALS(1, 2, 3, 4, 5, 6)), tens(ix, VALS(-1, 0))});
  check_vals("gather", r, VALS(5, 6, 1, 2), 4, 0);
  wf_tensor_free(r);
  end();
  o = unit_op(WF_OP_GATHER, 2, (wf_type[]){d, ix}, TY(WF_F32, 2, 2));
  diag_capture();
  r = finish_run(o, 2, (wf_tensor *[]){tens(d, VALS(1, 2, 3, 4, 5, 6)), tens(ix, VALS(0, 3))});
  diag_release();
  CHECK(r == NULL, "gather out of range fails");
  CHECK_DIAG("t.wir:2:3: error: 'gather' index 3");
  end();

  /* gather along axis 1 with 2-D indices: out [3, 1, 2] */
  wf_type ix2 = TY(WF_I64, 1, 2);
  o = unit_op(WF_OP_GATHER, 2, (wf_type[]){d, ix2}, TY(WF_F32, 3, 1, 2));
  wf_op_set_int(g_f, o, "axis", 1);
  r = finish_run(o, 2, (wf_tensor *[]){tens(d, VALS(1, 2, 3, 4, 5, 6)), tens(ix2, VALS(1, 0))});
  check_vals("gather axis 1", r, VALS(2, 1, 4, 3, 6, 5), 6, 0);
  wf_tensor_free(r);
  end();

  /* reshape and relayout keep the row-major data */
  o = unit_op(WF_OP_RESHAPE, 1, &t, TY(WF_F32, 3, 2));
  r = finish_run(o, 1, (wf_tensor *[]){tens(t, VALS(1, 2, 3, 4, 5, 6))});
  check_vals("reshape", r, VALS(1, 2, 3, 4, 5, 6), 6, 0);
  CHECK(r && r->dims[0] == 3 && r->dims[1] == 2, "reshape shape");
  wf_tensor_free(r);
  end();
}

static void test_globals_and_inputs(void) {
  /* out = x * @s (splat) + @b (inline) */
  begin();
  int s = wf_module_add_global(g_m, "s", TY(WF_F32, 2), WF_LOC_NONE);
  int b = wf_module_add_global(g_m, "b", TY(WF_F32, 2), WF_LOC_NONE);
  float sv = 3, bv[2] = {1, 2};
  g_m->globals[s].kind = WF_DATA_SPLAT;
  g_m->globals[s].data = wf_arena_dup(g_m->arena, &sv, 4);
  g_m->globals[b].kind = WF_DATA_INLINE;
  g_m->globals[b].data = wf_arena_dup(g_m->arena, bv, 8);
  wf_value x = arg(TY(WF_F32, 2));
  wf_op *m1 = op1(WF_OP_MUL, 2, (wf_value[]){x, wf_func_global_value(g_f, s)}, TY(WF_F32, 2));
  wf_op *a1 = op1(WF_OP_ADD, 2, (wf_value[]){m1->results[0], wf_func_global_value(g_f, b)}, TY(WF_F32, 2));
  finish(1, &a1->results[0]);
  wf_tensor *r = run(1, (wf_tensor *[]){tens(TY(WF_F32, 2), VALS(1, -1))});
  check_vals("globals", r, VALS(4, -1), 2, 0);
  wf_tensor_free(r);

  /* wrong input shape is reported, not crashed on */
  diag_capture();
  r = run(1, (wf_tensor *[]){tens(TY(WF_F32, 3), NULL)});
  diag_release();
  CHECK(r == NULL, "bad input shape fails");
  CHECK_DIAG("input 0");
  end();

  /* an elided constant cannot be interpreted */
  begin();
  int w = wf_module_add_global(g_m, "w", TY(WF_F32, 2), wf_loc_make("t.wir", 4, 3));
  wf_op *n1 = op1(WF_OP_NEG, 1, (wf_value[]){wf_func_global_value(g_f, w)}, TY(WF_F32, 2));
  finish(1, &n1->results[0]);
  diag_capture();
  r = run(0, NULL);
  diag_release();
  CHECK(r == NULL, "elided constant fails");
  CHECK_DIAG("t.wir:4:3: error: constant @w was elided in this dump; its data is not available");
  end();
}

int main(void) {
  test_matmul();
  test_gemm();
  test_binary();
  test_compare_where();
  test_unary();
  test_softmax();
  test_norms();
  test_rope();
  test_reduce();
  test_movement();
  test_globals_and_inputs();
  if (g_failures) fprintf(stderr, "test_interp: %d failure(s)\n", g_failures);
  else printf("test_interp: all passed\n");
  return g_failures != 0;
}
