/* PE-program terms (docs/pe-programs.md, "Parameters, terms and guards"): the scaled term
 * `c*base[%M][+-k]` — value ((c * base) mod M) + k — parses, evaluates per PE, prints back
 * to the same text (parse -> write -> parse is a fixed point), and malformed scales are
 * rejected with a located error. Unscaled terms print exactly as before. A buffer operand's
 * offset may be a term too (`$a+4*u+1`: a slot picked by a loop variable or coordinate), or
 * two terms and a constant (`$a+4*u+-7*x+9`: a slot moving with both). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/pe/pe_program.h"

#include "wf_test.h"

static const char *const program =
    ".format 2\n"
    ".class main\n"
    ".sym $a 0 64\n"
    ".code\n"
    "loop u 0 12\n"
    "  [u>=3*y+1, 3*y%4==2] zero $a 1\n"
    "  [2*x%2==0, x%2==1, 5*u-3>x] zero $a 2*x+1\n"
    "  [y<=W-1] zero $a 1*x\n"
    "  copy $a+4*u+1 $a+x 2\n"
    "  copy $a+8 $a 2\n"
    "  zero $a+-4*u+48 -2*u+30\n"
    "  copy $a+4*u-7*x+9 $a+x-1+2*u 1\n"
    "endloop\n";

/* Text of class c as the writer prints it (static buffer). */
static const char *written(const wf_pe_class *c) {
  static char buf[4096];
  FILE *f = tmpfile();
  if (!f) return "";
  wf_pe_class_write(c, f);
  long n = ftell(f);
  rewind(f);
  size_t got = fread(buf, 1, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

static void test_eval(void) {
  wf_pe_class *c = wf_pe_class_parse_string(program, "t.wpe");
  CHECK(c != NULL);
  if (!c) return;
  const wf_pe_instr *g0 = &c->code[1], *g1 = &c->code[2], *g2 = &c->code[3];
  CHECK(g0->guard.n == 2 && g0->guard.c[0].b.mul == 3 && g0->guard.c[0].b.k == 1);
  CHECK(g0->guard.c[1].a.mul == 3 && g0->guard.c[1].a.mod == 4);
  CHECK(g2->args[1].term.mul == 0, "1*x is the unscaled x");
  for (int y = 0; y < 6; y++)
    for (int u = 0; u < 12; u++) {
      wf_pe_env e = wf_pe_env_at(NULL, 0, y, 4, 6);
      e.vars[0] = u;
      int want = u >= 3 * y + 1 && (3 * y) % 4 == 2;
      CHECK(wf_guard_eval(&g0->guard, &e) == want, "y=%d u=%d", y, u);
    }
  for (int x = 0; x < 5; x++)
    for (int u = 0; u < 4; u++) {
      wf_pe_env e = wf_pe_env_at(NULL, x, 0, 5, 1);
      e.vars[0] = u;
      int want = x % 2 == 1 && 5 * u - 3 > x; /* 2*x%2 is always 0 */
      CHECK(wf_guard_eval(&g1->guard, &e) == want, "x=%d u=%d", x, u);
      CHECK(wf_term_eval(&g1->args[1].term, &e) == 2 * x + 1);
    }
  /* buffer offsets: a term (evaluated per PE and iteration), a constant, or none */
  const wf_pe_instr *cp = &c->code[4], *cc = &c->code[5];
  for (int x = 0; x < 3; x++)
    for (int u = 0; u < 12; u++) {
      wf_pe_env e = wf_pe_env_at(NULL, x, 0, 3, 1);
      e.vars[0] = u;
      CHECK(wf_pe_arg_off(&cp->args[0], &e) == 4 * u + 1, "x=%d u=%d", x, u);
      CHECK(wf_pe_arg_off(&cp->args[1], &e) == x);
      CHECK(wf_pe_arg_off(&cc->args[0], &e) == 8 && wf_pe_arg_off(&cc->args[1], &e) == 0);
    }
  CHECK(cc->args[0].off == 8 && cc->args[0].term.kind == WF_TERM_INT, "a constant stays in off");
  /* a negative scale counts down: what is left after slot u */
  const wf_pe_instr *zn = &c->code[6];
  CHECK(zn->args[1].term.mul == -2 && zn->args[1].term.k == 30);
  for (int u = 0; u < 12; u++) {
    wf_pe_env e = wf_pe_env_at(NULL, 0, 0, 1, 1);
    e.vars[0] = u;
    CHECK(wf_term_eval(&zn->args[1].term, &e) == 30 - 2 * u, "u=%d", u);
    CHECK(wf_pe_arg_off(&zn->args[0], &e) == 48 - 4 * u, "u=%d", u);
  }
  /* two variable terms and a constant, in either order; the constants are summed */
  const wf_pe_instr *c2 = &c->code[7];
  CHECK(c2->args[0].term2.kind == WF_TERM_X && c2->args[0].term2.mul == -7 && c2->args[0].term2.k == 0);
  CHECK(c2->args[1].term.kind == WF_TERM_X && c2->args[1].term2.kind == WF_TERM_VAR);
  for (int x = 0; x < 3; x++)
    for (int u = 0; u < 12; u++) {
      wf_pe_env e = wf_pe_env_at(NULL, x, 0, 3, 1);
      e.vars[0] = u;
      CHECK(wf_pe_arg_off(&c2->args[0], &e) == 4 * u - 7 * x + 9, "x=%d u=%d", x, u);
      CHECK(wf_pe_arg_off(&c2->args[1], &e) == x - 1 + 2 * u, "x=%d u=%d", x, u);
    }
  /* Built in memory: wf_term_scaled is the constructor the lowerings use. */
  wf_pe_term t = wf_term_scaled(wf_term(WF_TERM_Y, 0), 3, 2);
  wf_pe_env e = wf_pe_env_at(NULL, 0, 5, 1, 6);
  CHECK(wf_term_eval(&t, &e) == 17);
  t.mod = 4;
  CHECK(wf_term_eval(&t, &e) == 15 % 4 + 2);
  t = wf_term_scaled(wf_term(WF_TERM_Y, 0), -3, 20);
  CHECK(wf_term_eval(&t, &e) == 5 && t.mul == -3);
  wf_pe_class_free(c);
}

static void test_round_trip(void) {
  wf_pe_class *c = wf_pe_class_parse_string(program, "t.wpe");
  CHECK(c != NULL);
  if (!c) return;
  char first[4096];
  snprintf(first, sizeof first, "%s", written(c));
  CHECK(strstr(first, "[u>=3*y+1, 3*y%4==2]") != NULL, "%s", first);
  CHECK(strstr(first, "[2*x%2==0, x%2==1, 5*u-3>x]") != NULL, "%s", first);
  CHECK(strstr(first, "zero $a 2*x+1") != NULL, "%s", first);
  CHECK(strstr(first, "[y<=W-1] zero $a x") != NULL, "unscaled terms print as before: %s", first);
  CHECK(strstr(first, "copy $a+4*u+1 $a+x 2") != NULL, "%s", first);
  CHECK(strstr(first, "copy $a+8 $a 2") != NULL, "%s", first);
  CHECK(strstr(first, "zero $a+-4*u+48 -2*u+30") != NULL, "%s", first);
  CHECK(strstr(first, "copy $a+4*u+9+-7*x $a+x-1+2*u 1") != NULL, "%s", first);
  wf_pe_class *d = wf_pe_class_parse_string(first, "again.wpe");
  CHECK(d != NULL);
  if (d) {
    CHECK(strcmp(first, written(d)) == 0, "written text is not a fixed point");
    wf_pe_class_free(d);
  }
  wf_pe_class_free(c);
}

/* Each of bad[] after the header `head` must be refused by the parser. */
static void expect_rejected(const char *head, const char *const *bad, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", head, bad[i]);
    fprintf(stderr, "(expected error follows)\n");
    wf_pe_class *c = wf_pe_class_parse_string(text, "bad.wpe");
    CHECK(c == NULL, "accepted: %s", bad[i]);
    if (c) wf_pe_class_free(c);
  }
}

static void test_rejects(void) {
  static const char *const bad[] = {"[2*3==x] zero $a 1\n", "[0*x==0] zero $a 1\n",
                                    "[70000*x==0] zero $a 1\n", "[3*==0] zero $a 1\n",
                                    "[x*3==0] zero $a 1\n", "zero $a 2*-x\n",
                                    "copy $a+-3 $a 1\n", "copy $a+q $a 1\n", "copy $a+4*z $a 1\n",
                                    "zero $a -70000*x\n", "zero $a -0*x\n",
                                    "copy $a+x+y+u $a 1\n", "copy $a+x++1 $a 1\n",
                                    "copy $a+x+ $a 1\n", "copy $a+2-5 $a 1\n"};
  expect_rejected(".format 2\n.class main\n.sym $a 0 64\n.code\n", bad, sizeof bad / sizeof *bad);
}

/* Coordinate sets: `.set NAME RUN...` (a second line of the same name adds members) and the
 * guard condition `x in NAME`; the writer wraps a long set and its text is a fixed point; a
 * set built in memory shares an equal one. */
static void test_sets(void) {
  static const char *const text = ".format 2\n.class main\n.sym $a 0 64\n"
                                  ".set odd 1 3 5-7\n.set odd 11\n.set none\n"
                                  ".color c0 t\n[x in odd] .route c0 RAMP -> E\n"
                                  ".code\n[x in odd, y==0] zero $a 1\n[y in none] zero $a 2\n";
  wf_pe_class *c = wf_pe_class_parse_string(text, "s.wpe");
  CHECK(c != NULL);
  if (!c) return;
  CHECK(c->n_sets == 2 && c->sets[0].n == 12 && c->sets[1].n == 0);
  for (int x = 0; x < 14; x++)
    for (int y = 0; y < 2; y++) {
      wf_pe_env e = wf_pe_env_at(c, x, y, 14, 2);
      int odd = x == 1 || x == 3 || (x >= 5 && x <= 7) || x == 11;
      CHECK(wf_guard_eval(&c->code[0].guard, &e) == (odd && y == 0), "x=%d y=%d", x, y);
      CHECK(wf_guard_eval(&c->routes[0].guard, &e) == odd, "x=%d", x);
      CHECK(!wf_guard_eval(&c->code[1].guard, &e));
    }
  wf_pe_env bare = wf_pe_env_at(NULL, 1, 0, 14, 2);
  CHECK(!wf_guard_eval(&c->code[0].guard, &bare), "no sets: no member");
  /* a long set (every other coordinate up to 400) wraps and reads back the same */
  uint8_t m[400] = {0};
  for (int v = 0; v < 400; v += 2) m[v] = 1;
  int k = wf_pe_class_add_set(c, m, 400);
  CHECK(k == 2 && wf_pe_class_add_set(c, m, 400) == 2, "an equal set is shared");
  wf_pe_guard g = wf_guard0();
  wf_guard_add_in(&g, wf_term(WF_TERM_X, 0), k);
  wf_pe_instr in = {0};
  in.op = WF_PEOP_ZERO;
  in.guard = g;
  in.args[0] = (wf_pe_arg){0};
  in.args[1].term = wf_term_int(3);
  wf_pe_class_add_instr(c, &in);
  char first[8192];
  snprintf(first, sizeof first, "%s", written(c));
  CHECK(strstr(first, ".set odd 1 3 5-7 11\n") != NULL, "%s", first);
  CHECK(strstr(first, "[x in s2] zero $a 3") != NULL, "%s", first);
  const char *line = strstr(first, ".set s2");
  int lines = 0;
  for (const char *p = line; p && !strncmp(p, ".set s2", 7); p = strchr(p, '\n') + 1) {
    CHECK(strchr(p, '\n') - p <= 104, "a .set line is wrapped");
    lines++;
  }
  CHECK(lines > 1, "%d line(s)", lines);
  wf_pe_class *d = wf_pe_class_parse_string(first, "again.wpe");
  CHECK(d != NULL);
  if (d) {
    CHECK(strcmp(first, written(d)) == 0, "written text is not a fixed point");
    for (int x = 0; x < 402; x++) {
      wf_pe_env e = wf_pe_env_at(d, x, 0, 402, 1);
      CHECK(wf_guard_eval(&d->code[2].guard, &e) == (x < 400 && x % 2 == 0), "x=%d", x);
    }
    wf_pe_class_free(d);
  }
  wf_pe_class_free(c);
  static const char *const bad[] = {
      ".set a 3 1\n",          /* runs out of order */
      ".set a 1-3 2\n",        /* overlapping */
      ".set a 5-2\n",          /* backwards */
      ".set a 70000\n",        /* too large */
      ".set a -1\n",           /* negative */
      ".set A 1\n",            /* name */
      ".set a 1\n.code\n[x in b] zero $a 1\n", /* undeclared */
      ".code\n[x in] zero $a 1\n"};
  expect_rejected(".format 2\n.class main\n.sym $a 0 64\n", bad, sizeof bad / sizeof *bad);
  wf_pe_class *v1 = wf_pe_class_parse_string(".format 1\n.class main\n.set a 1\n", "v1.wpe");
  CHECK(v1 == NULL, "a set needs format 2");
  if (v1) wf_pe_class_free(v1);
}

int main(void) {
  test_eval();
  test_round_trip();
  test_rejects();
  test_sets();
  return wf_test_result("test_pe_term");
}
