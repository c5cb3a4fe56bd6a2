/* The verifier: each invalid construct gives one located error naming the op. */
#include "h2_testutil.h"

/* Verifies g_m and expects `n` errors, each message containing `sub`. */
static void expect_errors(const char *what, int n, const char *sub) {
  diag_capture();
  int errs = wf_verify_module(g_m);
  diag_release();
  CHECK(errs == n, "%s: %d errors, want %d:\n%s", what, errs, n, g_diag);
  if (sub) CHECK_DIAG(sub);
}

/* Returns v with the function's result type stripped of any layout. */
static void finish_plain(wf_value v) {
  wf_op_append(g_f, WF_OP_RETURN, 1, &v, 0, NULL, next_loc());
  wf_type t = *wf_value_type(g_f, v);
  t = wf_type_make(t.dtype, t.rank, t.dims);
  wf_func_set_result_types(g_f, 1, &t);
}

static void test_valid(void) {
  begin();
  wf_value x = arg(TY(WF_F32, 8, 64));
  int w = wf_module_add_global(g_m, "w", TY(WF_F32, 64, 16), WF_LOC_NONE);
  wf_op *mm = op1(WF_OP_MATMUL, 2, (wf_value[]){x, wf_func_global_value(g_f, w)}, TY(WF_F32, 8, 16));
  wf_op *sm = op1(WF_OP_SOFTMAX, 1, &mm->results[0], TY(WF_F32, 8, 16));
  finish(1, &sm->results[0]);
  expect_errors("valid", 0, NULL);
  end();
}

static void test_result_shape(void) {
  begin();
  wf_value a = arg(TY(WF_F32, 2, 3)), b = arg(TY(WF_F32, 3, 4));
  wf_op *mm = op1(WF_OP_MATMUL, 2, (wf_value[]){a, b}, TY(WF_F32, 2, 5));
  finish(1, &mm->results[0]);
  expect_errors("wrong result shape", 1, "t.wir:2:3: error: 'matmul' result 0 has type f32[2, 5] but its operands give f32[2, 4]");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  b = arg(TY(WF_F32, 4, 5));
  mm = op1(WF_OP_MATMUL, 2, (wf_value[]){a, b}, TY(WF_F32, 2, 5));
  finish(1, &mm->results[0]);
  expect_errors("inner dims", 1, "t.wir:2:3: error: 'matmul' inner dimensions differ: f32[2, 3] and f32[4, 5] (3 vs 4)");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  b = arg(TY(WF_F32, 4));
  wf_op *ad = op1(WF_OP_ADD, 2, (wf_value[]){a, b}, TY(WF_F32, 2, 3));
  finish(1, &ad->results[0]);
  expect_errors("broadcast", 1, "'add' operand shapes do not broadcast");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  b = arg(TY(WF_F16, 2, 3));
  ad = op1(WF_OP_MUL, 2, (wf_value[]){a, b}, TY(WF_F32, 2, 3));
  finish(1, &ad->results[0]);
  expect_errors("dtypes", 1, "'mul' operands 0 and 1 have different dtypes");
  end();
}

static void test_attributes(void) {
  begin();
  wf_value a = arg(TY(WF_F32, 2, 3));
  wf_op *sm = op1(WF_OP_SOFTMAX, 1, &a, TY(WF_F32, 2, 3));
  wf_op_set_int(g_f, sm, "dim", 1);
  finish(1, &sm->results[0]);
  expect_errors("unknown attr", 1, "t.wir:2:3: error: 'softmax' has no attribute 'dim' (allowed: axis)");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  wf_op *e = op1(WF_OP_EXP, 1, &a, TY(WF_F32, 2, 3));
  wf_op_set_int(g_f, e, "axis", 1);
  finish(1, &e->results[0]);
  expect_errors("attr on attr-less op", 1, "'exp' has no attribute 'axis' ('exp' takes no attributes)");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  wf_op *t = op1(WF_OP_TRANSPOSE, 1, &a, TY(WF_F32, 3, 2));
  finish(1, &t->results[0]);
  expect_errors("missing attr", 1, "t.wir:2:3: error: 'transpose' is missing required attribute 'perm'");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  t = op1(WF_OP_SOFTMAX, 1, &a, TY(WF_F32, 2, 3));
  wf_op_set_str(g_f, t, "axis", "last");
  finish(1, &t->results[0]);
  expect_errors("attr kind", 1, "'softmax' attribute 'axis' must be an int, got a string");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  t = op1(WF_OP_TRANSPOSE, 1, &a, TY(WF_F32, 3, 2));
  wf_op_set_ints(g_f, t, "perm", 2, DIMS(1, 1));
  finish(1, &t->results[0]);
  expect_errors("bad perm", 1, "'transpose' perm is not a permutation");
  end();

  begin();
  a = arg(TY(WF_F32, 10));
  t = op1(WF_OP_SLICE, 1, &a, TY(WF_F32, 10));
  wf_op_set_ints(g_f, t, "starts", 1, DIMS(0));
  wf_op_set_ints(g_f, t, "ends", 1, DIMS(10));
  wf_op_set_ints(g_f, t, "axes", 1, DIMS(0));
  wf_op_set_ints(g_f, t, "steps", 1, DIMS(0));
  finish(1, &t->results[0]);
  expect_errors("slice step 0", 1, "'slice' step for axis 0 is 0");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 6));
  wf_type parts[2] = {TY(WF_F32, 2, 3), TY(WF_F32, 2, 2)};
  t = wf_op_append(g_f, WF_OP_SPLIT, 1, &a, 2, parts, next_loc());
  wf_op_set_int(g_f, t, "axis", 1);
  wf_op_set_ints(g_f, t, "sizes", 2, DIMS(3, 2));
  finish(2, t->results);
  expect_errors("split sizes", 1, "'split' sizes sum to 5 but dim 1 of f32[2, 6] is 6");
  end();
}

static void test_structure(void) {
  /* return type mismatch */
  begin();
  wf_value a = arg(TY(WF_F32, 2, 3));
  wf_op *e = op1(WF_OP_EXP, 1, &a, TY(WF_F32, 2, 3));
  wf_op_append(g_f, WF_OP_RETURN, 1, &e->results[0], 0, NULL, next_loc());
  wf_type rt = TY(WF_F32, 3, 2);
  wf_func_set_result_types(g_f, 1, &rt);
  expect_errors("return type", 1, "t.wir:3:3: error: 'return' operand 0 has type f32[2, 3] but function @main returns f32[3, 2]");
  end();

  /* no return */
  begin();
  a = arg(TY(WF_F32, 2));
  op1(WF_OP_EXP, 1, &a, TY(WF_F32, 2));
  expect_errors("no return", 1, "function @main must end in 'return'");
  end();

  /* use before definition */
  begin();
  a = arg(TY(WF_F32, 2));
  wf_op *later = wf_op_new(g_f, WF_OP_EXP, 1, &a, 1, (wf_type[]){TY(WF_F32, 2)}, wf_loc_make("t.wir", 9, 3));
  wf_value_set_name(g_f, later->results[0], "late");
  wf_op *use = op1(WF_OP_NEG, 1, &later->results[0], TY(WF_F32, 2));
  wf_op_insert_after(g_f, use, later);
  finish(1, &use->results[0]);
  expect_errors("use before def", 1, "t.wir:2:3: error: 'neg' operand 0 (%late) is used before it is defined");
  end();

  /* wrong operand count */
  begin();
  a = arg(TY(WF_F32, 2));
  e = op1(WF_OP_ADD, 1, &a, TY(WF_F32, 2));
  finish(1, &e->results[0]);
  expect_errors("operand count", 1, "'add' takes 2 operands, got 1");
  end();
}

static void test_layouts(void) {
  begin();
  wf_module_add_region(g_m, "r0", 0, 0, 4, 4, WF_LOC_NONE);
  wf_value a = arg(TY(WF_F32, 2, 3));
  wf_type bad = TY(WF_F32, 2, 3);
  bad.layout.rank = 3;
  bad.layout.region = 0;
  wf_op *e = op1(WF_OP_EXP, 1, &a, bad);
  wf_op *n = op1(WF_OP_NEG, 1, &e->results[0], TY(WF_F32, 2, 3));
  finish(1, &n->results[0]);
  expect_errors("layout rank", 1, "t.wir:2:3: error: 'exp' result 0: layout has 3 dims but the tensor has rank 2");
  end();

  begin();
  wf_module_add_region(g_m, "r0", 0, 0, 4, 4, WF_LOC_NONE);
  a = arg(TY(WF_F32, 2, 3));
  wf_type two = TY(WF_F32, 2, 3);
  two.layout.rank = 2;
  two.layout.region = 0;
  two.layout.dims[0].split = WF_AXIS_X;
  two.layout.dims[1].split = WF_AXIS_X;
  e = op1(WF_OP_DIST_RELAYOUT, 1, &a, two);
  finish_plain(e->results[0]);
  expect_errors("split twice", 1, "layout splits dims 0 and 1 along the same mesh axis x");
  end();

  begin();
  a = arg(TY(WF_F32, 2, 3));
  wf_type noreg = TY(WF_F32, 2, 3);
  noreg.layout.rank = 2;
  noreg.layout.region = 3;
  e = op1(WF_OP_DIST_RELAYOUT, 1, &a, noreg);
  finish_plain(e->results[0]);
  expect_errors("bad region", 1, "layout names region #3, which does not exist");
  end();

  /* a good layout is accepted, and relayout may change it */
  begin();
  wf_module_add_region(g_m, "r0", 0, 0, 4, 4, WF_LOC_NONE);
  a = arg(TY(WF_F32, 1, 8, 8));
  wf_type good = TY(WF_F32, 1, 8, 8);
  good.layout.rank = 3;
  good.layout.region = 0;
  good.layout.dims[1].split = WF_AXIS_Y;
  good.layout.dims[2].split = WF_AXIS_X;
  e = op1(WF_OP_DIST_RELAYOUT, 1, &a, good);
  finish(1, &e->results[0]);
  expect_errors("good layout", 0, NULL);
  end();

  begin();
  wf_module_add_region(g_m, "r0", 0, 0, 0, 4, wf_loc_make("t.wir", 7, 3));
  finish(0, NULL);
  expect_errors("empty region", 1, "t.wir:7:3: error: region @r0 = rect(0, 0, 0, 4)");
  end();
}

int main(void) {
  test_valid();
  test_result_shape();
  test_attributes();
  test_structure();
  test_layouts();
  if (g_failures) fprintf(stderr, "test_verify: %d failure(s)\n", g_failures);
  else printf("test_verify: all passed\n");
  return g_failures != 0;
}
