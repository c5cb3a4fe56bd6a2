/* Unit tests of the IR text form: the DSL parser (frontend/dsl) and the printer (ir/print.c).
 * Checks what the parser builds through the ir.h API, that diagnostics are located, and that
 * parse(print(m)) prints identically for modules using every piece of syntax. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"
#include "waferc/tensor.h"

#include "wf_test.h"

/* ---- captured diagnostics ----------------------------------------------------------- */

static char g_diags[8192];

static void capture(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)user;
  size_t n = strlen(g_diags);
  snprintf(g_diags + n, sizeof g_diags - n, "%s:%u:%u: %s: %s\n", loc.file ? loc.file : "?",
           loc.line, loc.col, sev == WF_SEV_ERROR ? "error" : sev == WF_SEV_NOTE ? "note" : "warning",
           msg);
}

static wf_module *parse_quiet(const char *text) {
  g_diags[0] = '\0';
  wf_diag_set_sink(capture, NULL);
  wf_module *m = wf_parse_string(text, "t.wir");
  wf_diag_set_sink(NULL, NULL);
  return m;
}

static void expect_error(const char *text, const char *diag) {
  wf_module *m = parse_quiet(text);
  CHECK(m == NULL, "parse succeeded, expected '%s'", diag);
  CHECK(strstr(g_diags, diag) != NULL, "expected diagnostic '%s', got:\n%s", diag, g_diags);
  wf_module_free(m);
}

/* ---- round trip --------------------------------------------------------------------- */

static char *print_with(const wf_module *m, int64_t elide, int locs) {
  wf_print_opts o = WF_PRINT_OPTS_DEFAULT;
  o.elide_elements_above = elide;
  o.print_locations = locs;
  return wf_print_module_str(m, &o);
}

/* parse -> print -> parse -> print must give the same text twice; returns the first text. */
static char *roundtrip(const char *text, int locs) {
  wf_module *m = parse_quiet(text);
  CHECK(m != NULL, "parse failed:\n%s\ninput:\n%s", g_diags, text);
  if (!m) return NULL;
  char *a = print_with(m, -1, locs);
  wf_module *m2 = parse_quiet(a);
  CHECK(m2 != NULL, "printed text does not parse:\n%s\ntext:\n%s", g_diags, a);
  if (m2) {
    char *b = print_with(m2, -1, locs);
    CHECK(strcmp(a, b) == 0, "round trip differs:\n--- first\n%s--- second\n%s", a, b);
    free(b);
    wf_module_free(m2);
  }
  wf_module_free(m);
  return a;
}

static const char *k_mlp =
    "// A two-layer MLP on a 4x4 region.\n"
    "module @mlp attributes {target = \"test4x4\"} {\n"
    "  region @r0 = rect(0, 0, 4, 4)   // x, y, width, height\n"
    "  const @w1 : f32[64, 128] = file<\"mlp_w1.npy\">\n"
    "  const @w2 : f32[128, 16] = file<\"weights.bin\", offset = 4096>\n"
    "  const @b1 : f32[4] = dense<[0.1, 0.2, 0.3, 0.4]>\n"
    "  const @s  : f32[4] = dense<0.5>\n"
    "  const @w3 : f32[4096, 4096] = dense<elided>\n"
    "  func @main(%x: f32[8, 64]) -> f32[8, 64]{B, E_x} @r0 {\n"
    "    %0 = matmul(%x, @w1) : f32[8, 128]\n"
    "    %h = gelu(%0) {approximate = tanh} : f32[8, 128]\n"
    "    %a, %b = split(%h) {axis = 1, sizes = [64, 64]} : f32[8, 64], f32[8, 64]\n"
    "    %7 = softmax(%a) {axis = -1} : f32[8, 64]{B, E_x} @r0\n"
    "    return %7\n"
    "  }\n"
    "}\n";

static void test_structure(void) {
  wf_module *m = parse_quiet(k_mlp);
  CHECK(m != NULL, "%s", g_diags);
  if (!m) return;
  CHECK(strcmp(wf_str(m, m->name), "mlp") == 0, "module name");
  CHECK(m->attrs.n == 1 && m->attrs.v[0].kind == WF_ATTR_STR &&
            strcmp(wf_str(m, m->attrs.v[0].u.s), "test4x4") == 0,
        "module attribute");
  CHECK(m->n_regions == 1 && m->regions[0].w == 4 && m->regions[0].h == 4 && m->regions[0].x == 0,
        "region");
  CHECK(m->n_globals == 5, "globals: %d", m->n_globals);
  if (m->n_globals == 5) {
    wf_global *g = m->globals;
    CHECK(g[0].kind == WF_DATA_FILE && g[0].offset == -1 && !g[0].data &&
              strcmp(wf_str(m, g[0].path), "mlp_w1.npy") == 0,
          "npy file const, not loaded at parse time");
    CHECK(g[1].kind == WF_DATA_FILE && g[1].offset == 4096, "raw file offset");
    CHECK(g[2].kind == WF_DATA_INLINE && g[2].data && ((float *)g[2].data)[1] == 0.2f &&
              ((float *)g[2].data)[3] == 0.4f,
          "inline data");
    CHECK(g[3].kind == WF_DATA_SPLAT && g[3].data && ((float *)g[3].data)[0] == 0.5f, "splat");
    CHECK(g[4].kind == WF_DATA_ELIDED && !g[4].data, "elided");
    CHECK(g[2].loc.line == 6 && g[2].loc.col == 9, "const loc %u:%u", g[2].loc.line, g[2].loc.col);
  }
  CHECK(m->n_funcs == 1, "one function");
  wf_func *f = m->funcs[0];
  CHECK(f->n_args == 1 && strcmp(wf_str(m, f->values[f->args[0]].name), "x") == 0, "arg %%x");
  CHECK(f->n_results == 1 && f->result_types[0].layout.rank == 2 &&
            f->result_types[0].layout.region == 0,
        "result type with layout");
  wf_op *ops[8];
  int n = 0;
  wf_func_foreach_op(f, op) if (n < 8) ops[n++] = op;
  CHECK(n == 5, "5 ops, got %d", n);
  if (n != 5) goto out;
  CHECK(ops[0]->code == WF_OP_MATMUL && ops[0]->n_operands == 2, "matmul");
  CHECK(f->values[ops[0]->operands[1]].kind == WF_VAL_GLOBAL &&
            f->values[ops[0]->operands[1]].index == 0,
        "@w1 operand is global 0");
  CHECK(f->values[ops[0]->results[0]].name == 0, "%%0 is anonymous");
  CHECK(ops[0]->loc.line == 10 && ops[0]->loc.col == 5, "op loc = first token");
  CHECK(ops[1]->code == WF_OP_GELU && ops[1]->operands[0] == ops[0]->results[0], "gelu(%%0)");
  const wf_attr *ap = wf_op_attr(f, ops[1], "approximate");
  CHECK(ap && ap->kind == WF_ATTR_IDENT && strcmp(wf_str(m, ap->u.s), "tanh") == 0, "ident attr");
  CHECK(ops[2]->n_results == 2 && strcmp(wf_str(m, f->values[ops[2]->results[1]].name), "b") == 0,
        "two results");
  const wf_attr *sz = wf_op_attr(f, ops[2], "sizes");
  CHECK(sz && sz->kind == WF_ATTR_INTS && sz->u.ints.n == 2 && sz->u.ints.v[1] == 64, "ints attr");
  CHECK(ops[2]->attrs[0].kind == WF_ATTR_INT && ops[2]->attrs[0].u.i == 1, "attr order kept");
  wf_type *t = wf_value_type(f, ops[3]->results[0]);
  CHECK(t->layout.rank == 2 && t->layout.region == 0 && t->layout.dims[1].split == WF_AXIS_X &&
            strcmp(wf_str(m, t->layout.dims[1].label), "E") == 0 && t->layout.dims[0].split == 0,
        "layout {B, E_x} @r0");
  CHECK(wf_op_int(f, ops[3], "axis", 0) == -1, "negative int attr");
  CHECK(ops[4]->code == WF_OP_RETURN && ops[4]->operands[0] == ops[3]->results[0], "return");
out:
  wf_module_free(m);
}

static void test_layouts_and_coercion(void) {
  const char *text =
      "module {\n"
      "  region @r = rect(1, 2, 3, 4)\n"
      "  func @f(%x: f32[2, 4, 8]{B, E_y, L^x} @r, %y: f32[4]) -> (f32[4], f32[4]) {\n"
      "    %n = layernorm(%y, %y, %y) {axis = 0, epsilon = 1} : f32[4]\n"
      "    %g = gemm(%y, %y) {alpha = 2, trans_b = true} : f32[4]\n"
      "    return %n, %g\n"
      "  }\n"
      "}\n";
  wf_module *m = parse_quiet(text);
  CHECK(m != NULL, "%s", g_diags);
  if (!m) return;
  wf_func *f = m->funcs[0];
  wf_type *t = wf_value_type(f, f->args[0]);
  CHECK(t->layout.rank == 3 && t->layout.dims[2].repl == WF_AXIS_X && t->layout.dims[2].split == 0 &&
            t->layout.dims[1].split == WF_AXIS_Y && t->layout.region == 0,
        "layout {B, E_y, L^x}");
  const wf_attr *eps = wf_op_attr(f, f->first, "epsilon");
  CHECK(eps && eps->kind == WF_ATTR_FLOAT && eps->u.f == 1.0, "float attr written as int");
  const wf_attr *alpha = wf_op_attr(f, f->first->next, "alpha");
  CHECK(alpha && alpha->kind == WF_ATTR_FLOAT, "alpha coerced to float");
  const wf_attr *tb = wf_op_attr(f, f->first->next, "trans_b");
  CHECK(tb && tb->kind == WF_ATTR_BOOL && tb->u.i == 1, "bool attr");
  CHECK(f->n_results == 2, "two function results");
  char *s = wf_print_module_str(m, NULL);
  CHECK(strstr(s, "epsilon = 1.0") && strstr(s, "-> (f32[4], f32[4]) {") &&
            strstr(s, "%x: f32[2, 4, 8]{B, E_y, L^x} @r"),
        "printed:\n%s", s);
  free(s);
  wf_module_free(m);
}

/* Each text goes through parse/print twice and must print identically. */
static const char *k_roundtrip[] = {
    "module {\n}\n",
    "module @m attributes {a = 1, b = -2.5, c = true, d = \"s \\\"q\\\" \\\\ \\n\", e = word, "
    "f = [], g = [1, 2, 3], h = [0.5, 1, -3.25e-07], i = inf, j = -inf, k = false} {\n}\n",
    // every dtype's inline data, splats and specials
    "module {\n"
    "  const @a : f32[6] = dense<[1, -0.0, 1e-05, 3.4028235e38, inf, -inf]>\n"
    "  const @b : f16[4] = dense<[0.1, 1.0, -2.5, 65504.0]>\n"
    "  const @c : bf16[3] = dense<[0.1, 3.0e10, -1]>\n"
    "  const @d : i32[3] = dense<[2147483647, -2147483648, 0]>\n"
    "  const @e : i64[2] = dense<[9223372036854775807, -9223372036854775808]>\n"
    "  const @f : bool[3] = dense<[true, false, 1]>\n"
    "  const @g : f32[] = dense<2.0>\n"
    "  const @h : f32[0] = dense<[]>\n"
    "  const @i : i64[2, 2] = dense<7>\n"
    "  const @j : f32[2] = dense<[nan, 0.3]>\n"
    "}\n",
    // functions with 0, 1, many results; ops with 0 results are not in the table, so the
    // zero-result function just returns
    "module {\n"
    "  region @r0 = rect(0, 0, 8, 8)\n"
    "  region @r1 = rect(8, 0, 8, 8)\n"
    "  const @w : f32[4, 4]{E_y, F_x} @r1 = dense<0.25>\n"
    "  func @none() {\n    return\n  }\n"
    "  func @one(%0: f32[4, 4]) -> f32[4, 4] {\n    return %0\n  }\n"
    "  func @many(%in.put: f32[4, 4]{A, B^y} @r0, %3: i32[]) -> (f32[4, 4], i32[], f32[4, 4]) {\n"
    "    %q, %5 = split(%in.put) {axis = 0, sizes = [2, 2]} : f32[2, 4], f32[2, 4]\n"
    "    %c = concat(%q, %5) {axis = 0} : f32[4, 4]{A_x, B} @r0\n"
    "    %d = dist.relayout(%c) : f32[4, 4]{A, B_y} @r1\n"
    "    %e = matmul(%d, @w) : f32[4, 4]\n"
    "    return %e, %3, %in.put\n"
    "  }\n"
    "}\n",
    // comments everywhere, odd spacing, a layout split across a comment
    "module// c\n{//c\nfunc@f(%x:f32[2]{ // c\n E_x }) -> f32[2] // c\n { %y=exp(%x)//c\n:f32[2]\n"
    "return %y // c\n}}",
    // bare words that are keywords elsewhere
    "module {\n  func @f(%x: f32[2, 2]{file, loc}) -> f32[2, 2]{file, loc} {\n"
    "    %0 = cast(%x) {to = f32, module = region} : f32[2, 2]{file, loc}\n    return %0\n  }\n}\n",
};

static void test_roundtrips(void) {
  for (size_t i = 0; i < sizeof k_roundtrip / sizeof k_roundtrip[0]; i++) {
    free(roundtrip(k_roundtrip[i], 0));
    free(roundtrip(k_roundtrip[i], 1));
  }
  free(roundtrip(k_mlp, 1));
}

static void test_canonical_printing(void) {
  char *s = roundtrip(k_mlp, 0);
  if (!s) return;
  /* Expected text written by hand from docs/ir-text-format.md's printing rules. */
  const char *want =
      "module @mlp attributes {target = \"test4x4\"} {\n"
      "  region @r0 = rect(0, 0, 4, 4)\n"
      "\n"
      "  const @w1 : f32[64, 128] = file<\"mlp_w1.npy\">\n"
      "  const @w2 : f32[128, 16] = file<\"weights.bin\", offset = 4096>\n"
      "  const @b1 : f32[4] = dense<[0.1, 0.2, 0.3, 0.4]>\n"
      "  const @s : f32[4] = dense<0.5>\n"
      "  const @w3 : f32[4096, 4096] = dense<elided>\n"
      "\n"
      "  func @main(%x: f32[8, 64]) -> f32[8, 64]{B, E_x} @r0 {\n"
      "    %0 = matmul(%x, @w1) : f32[8, 128]\n"
      "    %h = gelu(%0) {approximate = tanh} : f32[8, 128]\n"
      "    %a, %b = split(%h) {axis = 1, sizes = [64, 64]} : f32[8, 64], f32[8, 64]\n"
      "    %1 = softmax(%a) {axis = -1} : f32[8, 64]{B, E_x} @r0\n"
      "    return %1\n"
      "  }\n"
      "}\n";
  CHECK(strcmp(s, want) == 0, "canonical form:\n%s\nwanted:\n%s", s, want);
  free(s);

  s = roundtrip("module {\n  const @a : f32[3] = dense<[1, 0.1, 1e-5]>\n"
                "  const @b : f16[1] = dense<[0.1]>\n}\n", 0);
  CHECK(s && strstr(s, "dense<[1.0, 0.1, 1e-05]>") && strstr(s, "f16[1] = dense<[0.1]>"),
        "floats always carry '.' or an exponent, shortest form:\n%s", s ? s : "");
  free(s);

  wf_module *m = parse_quiet(k_mlp);
  if (m) {
    s = print_with(m, 3, 1);
    CHECK(strstr(s, "@b1 : f32[4] = dense<elided>") && strstr(s, "@s : f32[4] = dense<0.5>"),
          "elision above 3 elements (splats kept):\n%s", s);
    CHECK(strstr(s, "%0 = matmul(%x, @w1) : f32[8, 128] loc(\"t.wir\":10:5)"),
          "locations printed on request:\n%s", s);
    wf_module *m2 = parse_quiet(s);
    CHECK(m2 && m2->funcs[0]->first->loc.line == 10 && m2->funcs[0]->first->loc.col == 5 &&
              strcmp(m2->funcs[0]->first->loc.file, "t.wir") == 0,
          "loc(...) becomes the op's location");
    free(s);
    s = print_with(m, 4, 0);
    CHECK(strstr(s, "dense<[0.1, 0.2, 0.3, 0.4]>") && !strstr(s, "loc("), "4 elements not elided");
    free(s);
    wf_module_free(m2);
    wf_module_free(m);
  }
}

/* IR built through the API with names the text form cannot hold must still print text
 * that parses back. */
static void test_printer_sanitizes_names(void) {
  wf_module *m = wf_module_new();
  wf_type t = wf_type_make(WF_F32, 1, (int64_t[]){4});
  int g = wf_module_add_global(m, "onnx::MatMul_7", t, WF_LOC_NONE);
  m->globals[g].kind = WF_DATA_SPLAT;
  m->globals[g].data = wf_arena_alloc(m->arena, 4);
  wf_func *f = wf_func_new(m, "main", WF_LOC_NONE);
  wf_value x = wf_func_add_arg(f, t, "/h.0/in");
  wf_value w = wf_func_global_value(f, g);
  wf_op *a = wf_op_append(f, WF_OP_ADD, 2, (wf_value[]){x, w}, 1, &t, WF_LOC_NONE);
  wf_value_set_name(f, a->results[0], "h");
  wf_op *b = wf_op_append(f, WF_OP_EXP, 1, &a->results[0], 1, &t, WF_LOC_NONE);
  wf_value_set_name(f, b->results[0], "h"); /* duplicate */
  wf_op *c = wf_op_append(f, WF_OP_EXP, 1, &b->results[0], 1, &t, WF_LOC_NONE);
  wf_value_set_name(f, c->results[0], "12"); /* all digits: renumbered */
  wf_op_set_ident(f, c, "note", "true");    /* would read back as a bool: quoted */
  wf_op_append(f, WF_OP_RETURN, 1, &c->results[0], 0, NULL, WF_LOC_NONE);
  wf_func_set_result_types(f, 1, &t);
  char *s = wf_print_module_str(m, NULL);
  CHECK(strstr(s, "@onnx__MatMul_7") && strstr(s, "%_h.0_in") && strstr(s, "%h.1 = exp(%h)") &&
            strstr(s, "%0 = exp(%h.1) {note = \"true\"}"),
        "sanitized names:\n%s", s);
  /* wf_value_names (the plan writer's names) says what the dump says. */
  wf_value_names *names = wf_value_names_new(f);
  const char *nx = wf_value_names_get(names, x), *nw = wf_value_names_get(names, w);
  const char *na = wf_value_names_get(names, a->results[0]), *nb = wf_value_names_get(names, b->results[0]);
  const char *nc = wf_value_names_get(names, c->results[0]);
  CHECK(nx && !strcmp(nx, "%_h.0_in") && nw && !strcmp(nw, "@onnx__MatMul_7") && na && !strcmp(na, "%h") &&
            nb && !strcmp(nb, "%h.1") && nc && !strcmp(nc, "%0"),
        "value names: %s %s %s %s %s", nx, nw, na, nb, nc);
  CHECK(wf_value_names_get(names, WF_NO_VALUE) == NULL && wf_value_names_get(names, f->n_values) == NULL,
        "no name outside the table");
  wf_value_names_free(names);
  wf_module *m2 = parse_quiet(s);
  CHECK(m2 != NULL, "sanitized print parses:\n%s\n%s", g_diags, s);
  if (m2) {
    char *s2 = wf_print_module_str(m2, NULL);
    CHECK(strcmp(s, s2) == 0, "stable:\n%s\n%s", s, s2);
    free(s2);
  }
  wf_module_free(m2);
  free(s);
  wf_module_free(m);
}

static void test_errors(void) {
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %0 = frob(%x) : f32[4]\n"
               "    return %0\n  }\n}\n",
               "t.wir:3:10: error: unknown op 'frob'");
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %0 = exp(%y) : f32[4]\n"
               "    %1 = exp(%0) : f32[4]\n    return %1\n  }\n}\n",
               "t.wir:3:14: error: use of undefined value '%y'");
  /* the undefined value is reported once, not again for every later use */
  CHECK(strstr(g_diags, "'%0'") == NULL, "no cascade:\n%s", g_diags);
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %x = exp(%x) : f32[4]\n"
               "    return %x\n  }\n}\n",
               "t.wir:3:5: error: redefinition of value '%x'");
  CHECK(strstr(g_diags, "t.wir:2:11: note: previous definition"), "note:\n%s", g_diags);
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %0 = exp(%1) : f32[4]\n"
               "    %1 = exp(%x) : f32[4]\n    return %1\n  }\n}\n",
               "t.wir:3:14: error: use of undefined value '%1'");
  expect_error("module {\n  func @f(%x: f32[4]) {\n    %a, %b = exp(%x) : f32[4]\n    return\n  }\n}\n",
               "t.wir:3:14: error: op 'exp' has 2 results but 1 result type");
  expect_error("module {\n  func @f(%x: f33[4]) {\n    return\n  }\n}\n",
               "t.wir:2:15: error: unknown element type 'f33'");
  expect_error("module attributes {a = \"abc\n}\n", "t.wir:1:24: error: unterminated string");
  expect_error("module {\n  func @f() {\n    return\n  }\n",
               "t.wir:5:1: error: expected 'region', 'const', 'func' or '}', got end of file");
  expect_error("module {\n  region @a = rect(0, 0, 1, 1)\n  const @a : f32[] = dense<1.0>\n}\n",
               "t.wir:3:9: error: redefinition of symbol '@a'");
  expect_error("module {\n  func @f(%x: f32[4]{E_x} @r9) {\n    return\n  }\n}\n",
               "t.wir:2:27: error: unknown region '@r9'");
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %0 = add(%x, @w) : f32[4]\n"
               "    return %0\n  }\n}\n",
               "t.wir:3:18: error: unknown global constant '@w'");
  expect_error("module {\n  func @f(%x: f32[4]) -> f32[4] {\n    %0 = exp(%x) = f32[4]\n"
               "    return %0\n  }\n}\n",
               "t.wir:3:18: error: expected ");
  CHECK(strstr(g_diags, "got '='") && !strstr(g_diags, "result type"), "one syntax error:\n%s",
        g_diags);
  expect_error("module { const @a : i64[] = dense<99999999999999999999> }",
               "t.wir:1:35: error: integer out of range");
  expect_error("module { const @a : i32[] = dense<4294967296> }", "integer out of range for i32");
  expect_error("module { const @a : f32[2] = dense<[1.0]> }",
               "dense<...> has 1 element but the type has 2");
  expect_error("module { const @a : f32[] = dense<1e999> }", "float literal out of range");
  expect_error("module { const @a : f16[] = dense<1e6> }", "value out of range for f16");
  expect_error("module { func @f(%x: f32[4]{E_x^y}) { return } }", "cannot be split and replicated");
  expect_error("module { func @f(%x: f32[4]{E, F}) { return } }",
               "layout has 2 entries but the type has rank 1");
  expect_error("module { func @f(%x: f32[4]{E F}) { return } }", "malformed layout");
  expect_error("module { func @f() { %0 = exp() {a = 1, a = 2} : f32[] return } }",
               "duplicate attribute 'a'");
  expect_error("module { func @f() { return %0 return } }", "expected");
  expect_error("module { func @f() { return } func @f() { return } }",
               "redefinition of symbol '@f'");
  expect_error("module { const @a : f32[] = dense<1.0> \x01 }", "unexpected byte 0x01");
  expect_error("module { const @a : f32[] = dense<1.0> \"a\\q\" }", "unknown escape sequence");
  expect_error("", "t.wir:1:1: error: expected 'module', got end of file");
  expect_error("module { func @f(%x: f32[1,2,3,4,5,6,7,8,9]) { return } }", "at most 8");
  expect_error("module { region @r = rect(0, 0, 0, 4) }", "region width and height must be positive");
}

/* Arbitrary bytes must give an error, never a crash (the fuzz target does this at scale). */
static void test_robustness(void) {
  size_t n = strlen(k_mlp);
  for (size_t cut = 0; cut < n; cut += 7) {
    char *t = strndup(k_mlp, cut);
    wf_module_free(parse_quiet(t));
    free(t);
  }
  unsigned seed = 12345;
  char buf[600];
  for (int iter = 0; iter < 300; iter++) {
    memcpy(buf, k_mlp, 599);
    buf[599] = '\0';
    for (int k = 0; k < 4; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % 599;
      seed = seed * 1103515245u + 12345u;
      buf[pos] = (char)(1 + (seed >> 16) % 255);
    }
    wf_module_free(parse_quiet(buf));
  }
  /* deep nesting and a very long line */
  size_t big = 200000;
  char *deep = malloc(big + 64);
  strcpy(deep, "module attributes {a = ");
  size_t k = strlen(deep);
  while (k < big) deep[k++] = '[';
  deep[k] = '\0';
  expect_error(deep, "expected");
  strcpy(deep, "module attributes {a = \"");
  k = strlen(deep);
  while (k < big) deep[k++] = 'x';
  strcpy(deep + k, "\"} {\n}\n");
  wf_module *m = parse_quiet(deep);
  CHECK(m && strlen(wf_str(m, m->attrs.v[0].u.s)) == big - 24, "long string attribute");
  wf_module_free(m);
  free(deep);
}

int main(void) {
  test_structure();
  test_layouts_and_coercion();
  test_roundtrips();
  test_canonical_printing();
  test_printer_sanitizes_names();
  test_errors();
  test_robustness();
  if (g_failures) {
    fprintf(stderr, "test_dsl: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_dsl: all checks passed\n");
  return 0;
}
