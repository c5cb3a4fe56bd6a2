/* Programs by shape (wf_shapes, backend/collectives/lower_collective_shapes.c): sets of PEs along a line
 * come back as guards that select exactly those PEs, a set that repeats (a binary tree's
 * level, every other PE between group leaders) as one guard, and steps in an order every
 * PE's own sequence agrees with; sequences that disagree are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"

#include "wf_test.h"

enum { MAXOUT = 4096 };
typedef struct out {
  wf_pe_guard g[MAXOUT];
  uint32_t key[MAXOUT];
  int is_step[MAXOUT];
  int n;
} out;

static void on_rule(void *ctx, const wf_pe_guard *g, uint32_t key) {
  out *o = ctx;
  if (o->n < MAXOUT) o->g[o->n] = *g, o->key[o->n] = key, o->is_step[o->n++] = 0;
}
static void on_step(void *ctx, const wf_pe_guard *g, uint32_t key) {
  out *o = ctx;
  if (o->n < MAXOUT) o->g[o->n] = *g, o->key[o->n] = key, o->is_step[o->n++] = 1;
}

/* PEs (x on the line, y = fixed_y) whose guards for rule `key` hold */
static int hits(const out *o, uint32_t key, int is_step, int x, int y) {
  wf_pe_env e = {0};
  e.x = x, e.y = y;
  int h = 0;
  for (int i = 0; i < o->n; i++)
    if (o->key[i] == key && o->is_step[i] == is_step) h += wf_guard_eval(&o->g[i], &e);
  return h;
}
static int lines_of(const out *o, uint32_t key) {
  int k = 0;
  for (int i = 0; i < o->n; i++) k += o->key[i] == key;
  return k;
}

static int level_rule(int x, int l) { return x % (2 << l) == (1 << l); }           /* a level's PEs */
static int passer_rule(int x, int l) { int r = x % (2 << l); return r >= 1 && r < (1 << l); }

int main(void) {
  /* A binary tree's levels over 256 PEs, on a row line with a fixed condition: each set is
   * one guard, and the guards select the set exactly (and only on the fixed row). */
  {
    int n = 256;
    wf_coll_line ln = {WF_AXIS_X, n, wf_guard0()};
    wf_guard_add(&ln.fixed, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int(3));
    wf_shapes *s = wf_shapes_new(n);
    CHECK(s != NULL);
    for (int l = 0; l < 7; l++) wf_shapes_period(s, 2 << l);
    for (int x = 0; x < n; x++)
      for (int l = 0; l < 7; l++) {
        if (level_rule(x, l)) CHECK(!wf_shapes_rule(s, x, 100 + l));
        if (passer_rule(x, l)) CHECK(!wf_shapes_rule(s, x, 200 + l));
      }
    int total = wf_shapes_plan(s);
    CHECK(total == 13, "binary levels: %d lines, want 13 (level 0 has no passers)", total);
    static out o;
    o.n = 0;
    wf_shapes_emit(s, &ln, on_rule, on_step, &o);
    CHECK(o.n == total);
    for (int l = 0; l < 7; l++) {
      CHECK(lines_of(&o, 100 + l) == 1 && lines_of(&o, 200 + l) == (l > 0), "level %d", l);
      for (int x = 0; x < n; x++) {
        CHECK(hits(&o, 100 + l, 0, x, 3) == level_rule(x, l), "level %d x %d", l, x);
        CHECK(hits(&o, 200 + l, 0, x, 3) == passer_rule(x, l), "passers %d x %d", l, x);
        CHECK(hits(&o, 100 + l, 0, x, 2) == 0, "another row");
      }
    }
    wf_shapes_free(s);
  }
  /* Every other PE between group leaders (groups of 10 from 4; the odd offsets of a group's
   * chain), over 200 PEs: one guard with a run of step 2. An irregular set: exact, and no
   * more lines than it has runs. */
  {
    int n = 200;
    wf_coll_line ln = {WF_AXIS_Y, n, wf_guard0()};
    wf_shapes *s = wf_shapes_new(n);
    wf_shapes_period(s, 10);
    wf_shapes_period(s, 20);
    srand(7);
    uint8_t odd[200], irr[200];
    int runs = 0;
    for (int y = 0; y < n; y++) {
      int off = (y - 4 + 20) % 10;
      odd[y] = y >= 4 && off % 2 == 1;
      irr[y] = rand() % 3 == 0;
      runs += irr[y] && (y == 0 || !irr[y - 1]);
      if (odd[y]) CHECK(!wf_shapes_rule(s, y, 1));
      if (irr[y]) CHECK(!wf_shapes_rule(s, y, 2));
    }
    CHECK(wf_shapes_plan(s) > 0);
    static out o;
    o.n = 0;
    wf_shapes_emit(s, &ln, on_rule, on_step, &o);
    CHECK(lines_of(&o, 1) == 1, "odd offsets: %d lines", lines_of(&o, 1));
    CHECK(lines_of(&o, 2) <= runs, "irregular: %d lines for %d runs", lines_of(&o, 2), runs);
    for (int y = 0; y < n; y++) {
      CHECK(hits(&o, 1, 0, 0, y) == odd[y], "odd y %d", y);
      CHECK(hits(&o, 2, 0, 0, y) == irr[y], "irregular y %d", y);
    }
    wf_shapes_free(s);
  }
  /* Steps: PE 0 does A then B, PE 1 B then C, PE 2 A then C: written A, B, C. PE 0 A then B
   * and PE 1 B then A cannot be one program: refused. */
  {
    wf_coll_line ln = {WF_AXIS_X, 3, wf_guard0()};
    wf_shapes *s = wf_shapes_new(3);
    CHECK(!wf_shapes_step(s, 0, 'A') && !wf_shapes_step(s, 0, 'B'));
    CHECK(!wf_shapes_step(s, 1, 'B') && !wf_shapes_step(s, 1, 'C'));
    CHECK(!wf_shapes_step(s, 2, 'A') && !wf_shapes_step(s, 2, 'C'));
    CHECK(wf_shapes_plan(s) == 3);
    static out o;
    o.n = 0;
    wf_shapes_emit(s, &ln, on_rule, on_step, &o);
    CHECK(o.n == 3 && o.key[0] == 'A' && o.key[1] == 'B' && o.key[2] == 'C');
    CHECK(hits(&o, 'B', 1, 0, 0) && hits(&o, 'B', 1, 1, 0) && !hits(&o, 'B', 1, 2, 0));
    wf_shapes_free(s);
    s = wf_shapes_new(2);
    CHECK(!wf_shapes_step(s, 0, 'A') && !wf_shapes_step(s, 0, 'B'));
    CHECK(!wf_shapes_step(s, 1, 'B') && !wf_shapes_step(s, 1, 'A'));
    CHECK(wf_shapes_plan(s) == -1, "orders that disagree are refused");
    wf_shapes_free(s);
  }
  return wf_test_result("test_shapes");
}
