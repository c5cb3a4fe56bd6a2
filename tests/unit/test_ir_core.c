/* Unit tests of the IR core: arena, interning, op list editing, uses, attributes, op table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"

#include "wf_test.h"

static void test_arena(void) {
  wf_arena *a = wf_arena_new();
  char *p = wf_arena_alloc(a, 10);
  CHECK(((uintptr_t)p & 15) == 0);
  CHECK(p[0] == 0 && p[9] == 0);
  void *big = wf_arena_alloc(a, 1 << 20); /* larger than a block */
  CHECK(big != NULL);
  memset(big, 7, 1 << 20);
  char *q = wf_arena_alloc(a, 32);
  CHECK(q != p);
  CHECK(wf_arena_bytes(a) >= (1u << 20) + 48);
  wf_arena_reset(a);
  CHECK(wf_arena_bytes(a) == 0);
  char *r = wf_arena_alloc(a, 16);
  CHECK(r[0] == 0);
  wf_arena_free(a);
}

static void test_intern(void) {
  wf_module *m = wf_module_new();
  uint32_t a = wf_intern(m, "alpha"), b = wf_intern(m, "beta");
  CHECK(a != 0 && b != 0 && a != b);
  CHECK(wf_intern(m, "alpha") == a);
  CHECK(strcmp(wf_str(m, b), "beta") == 0);
  CHECK(wf_intern(m, "") == 0 && strcmp(wf_str(m, 0), "") == 0);
  /* many strings force rehashing; ids stay stable */
  char buf[32];
  uint32_t ids[2000];
  for (int i = 0; i < 2000; i++) {
    snprintf(buf, sizeof buf, "s%d", i);
    ids[i] = wf_intern(m, buf);
  }
  for (int i = 0; i < 2000; i++) {
    snprintf(buf, sizeof buf, "s%d", i);
    CHECK(wf_intern(m, buf) == ids[i]);
  }
  CHECK(wf_intern(m, "alpha") == a);
  CHECK(wf_intern_n(m, "alphabet", 5) == a);
  wf_module_free(m);
}

static void test_ops(void) {
  wf_module *m = wf_module_new();
  wf_func *f = wf_func_new(m, "main", WF_LOC_NONE);
  wf_type t = wf_type_make(WF_F32, 2, (int64_t[]){2, 3});
  CHECK(wf_type_numel(&t) == 6 && wf_type_bytes(&t) == 24);
  wf_value x = wf_func_add_arg(f, t, "x");
  CHECK(x != WF_NO_VALUE && f->n_args == 1 && f->args[0] == x);
  int g = wf_module_add_global(m, "w", t, WF_LOC_NONE);
  wf_value w = wf_func_global_value(f, g);
  CHECK(wf_func_global_value(f, g) == w); /* one value per global */
  CHECK(wf_value_get(f, w)->kind == WF_VAL_GLOBAL);

  wf_op *add = wf_op_append(f, WF_OP_ADD, 2, (wf_value[]){x, w}, 1, &t, WF_LOC_NONE);
  wf_op *ex = wf_op_append(f, WF_OP_EXP, 1, &add->results[0], 1, &t, WF_LOC_NONE);
  wf_op *ret = wf_op_append(f, WF_OP_RETURN, 1, &ex->results[0], 0, NULL, WF_LOC_NONE);
  CHECK(f->first == add && f->last == ret && wf_func_return(f) == ret);
  CHECK(wf_value_get(f, add->results[0])->def == add);
  CHECK(wf_value_use_count(f, add->results[0]) == 1);

  /* insert a neg between add and exp, reroute exp through it */
  wf_op *neg = wf_op_new(f, WF_OP_NEG, 1, &add->results[0], 1, &t, add->loc);
  wf_op_insert_after(f, add, neg);
  wf_op_set_operand(f, ex, 0, neg->results[0]);
  CHECK(add->next == neg && neg->next == ex && ex->prev == neg);
  CHECK(wf_value_use_count(f, add->results[0]) == 1);

  wf_value_replace_uses(f, neg->results[0], add->results[0]);
  CHECK(wf_value_use_count(f, neg->results[0]) == 0);
  wf_op_unlink(f, neg);
  CHECK(add->next == ex && ex->prev == add);
  wf_op_unlink(f, add);
  CHECK(f->first == ex);
  wf_op_insert_before(f, f->first, add);
  CHECK(f->first == add && add->next == ex);
  int n = 0;
  wf_func_foreach_op(f, op) n++;
  CHECK(n == 3);

  /* attributes */
  wf_op_set_int(f, ex, "axis", -1);
  wf_op_set_str(f, ex, "mode", "fast");
  wf_op_set_int(f, ex, "axis", 2); /* replaces */
  wf_op_set_ints(f, ex, "perm", 3, (int64_t[]){1, 0, 2});
  CHECK(ex->n_attrs == 3);
  CHECK(wf_op_int(f, ex, "axis", 0) == 2);
  CHECK(strcmp(wf_op_str(f, ex, "mode", ""), "fast") == 0);
  CHECK(wf_op_attr(f, ex, "perm")->u.ints.n == 3 && wf_op_attr(f, ex, "perm")->u.ints.v[2] == 2);
  CHECK(wf_op_attr(f, ex, "missing") == NULL && wf_op_float(f, ex, "missing", 0.5) == 0.5);
  wf_module_free(m);
}

static void test_optable(void) {
  wf_opcode c;
  CHECK(wf_opcode_lookup("matmul", &c) == 0 && c == WF_OP_MATMUL);
  CHECK(wf_opcode_lookup("dist.relayout", &c) == 0 && c == WF_OP_DIST_RELAYOUT);
  CHECK(wf_opcode_lookup("nope", &c) != 0);
  CHECK(wf_opinfos[WF_OP_RETURN].flags & WF_OPF_TERMINATOR);
  CHECK(wf_opinfos[WF_OP_CONCAT].n_operands == -1);
  const wf_attr_spec *s = wf_op_attr_spec(WF_OP_GEMM, "alpha");
  CHECK(s && s->kind == WF_ATTR_FLOAT && !s->required && strcmp(s->dflt, "1.0") == 0);
  s = wf_op_attr_spec(WF_OP_TRANSPOSE, "perm");
  CHECK(s && s->kind == WF_ATTR_INTS && s->required);
  CHECK(wf_op_attr_spec(WF_OP_ADD, "axis") == NULL);
  wf_attr_spec specs[8];
  CHECK(wf_op_attr_specs(WF_OP_SLICE, specs, 8) == 4);
  /* every op name is unique and round-trips through lookup */
  for (int i = 0; i < WF_OP_COUNT; i++) CHECK(wf_opcode_lookup(wf_opinfos[i].name, &c) == 0 && (int)c == i);
  wf_dtype d;
  CHECK(wf_dtype_parse("bf16", &d) == 0 && d == WF_BF16 && wf_dtype_size(d) == 2);
  CHECK(wf_dtype_parse("f64", &d) != 0);
}

int main(void) {
  test_arena();
  test_intern();
  test_ops();
  test_optable();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_ir_core: all checks passed\n");
  return 0;
}
