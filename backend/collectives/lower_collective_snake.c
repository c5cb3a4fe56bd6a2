/* Snake reduce over the whole w x h region (Reduce paper §7.3): the chain reduce laid along
 * a boustrophedon path, so the root receives the vector once (T = T_CHAIN(w h, B)).
 *
 * The path ends at (w-1, h-1), the PE the host reads a replicated result from: row y runs
 * east when h-1-y is even, west otherwise, and each row's last PE sends south into the next
 * row's first. Path position k sends on color k % 2 and receives on color (k-1) % 2, so no
 * router sees two streams on one color; every PE but the first streams its predecessor's
 * partial sums through `addsend`, the root `recvadd`s. PEs of a row with equal roles are
 * one guard (x % 2 picks the color), so the program grows with the rows, not the PEs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

typedef struct snake_role {
  int in_dir, out_dir; /* WF_DIR_*, -1 = none */
  int in_col, out_col; /* 0 / 1: logical colors */
} snake_role;

static int east_row(int h, int y) { return (h - 1 - y) % 2 == 0; }

static snake_role role_at(int w, int h, int x, int y) {
  snake_role r = {-1, -1, 0, 0};
  int east = east_row(h, y);
  int k = y * w + (east ? x : w - 1 - x);
  int first = east ? x == 0 : x == w - 1, last = east ? x == w - 1 : x == 0;
  if (k > 0) {
    r.in_dir = first ? WF_DIR_N : east ? WF_DIR_W : WF_DIR_E;
    r.in_col = (k - 1) % 2;
  }
  if (k < w * h - 1) {
    r.out_dir = last ? WF_DIR_S : east ? WF_DIR_E : WF_DIR_W;
    r.out_col = k % 2;
  }
  return r;
}

static int snake_fallback(wf_lower *L, int sym, int64_t len, wf_peop combine, wf_loc loc);
static int snake_emit(wf_lower *L, const int *col, int routes, int sym, int64_t len, wf_peop combine,
                      wf_loc loc);

int wf_lower_coll_snake(wf_lower *L, int sym, int64_t len, wf_peop combine, wf_loc loc) {
  int w = L->w, h = L->h;
  if (w * h <= 1) return 0;
  int col[2];
  wf_coll_key key = {WF_COLL_KEY_SNAKE, WF_AXIS_X, w, h, wf_guard0(), NULL, 0};
  int nc = 0;
  const int *cached = wf_coll_cache_find(L, &key, &nc);
  if (!cached && wf_lower_color_free(L) - wf_coll_cache_reserved(L) < 2) return snake_fallback(L, sym, len, combine, loc);
  if (cached) {
    col[0] = cached[0];
    col[1] = cached[nc > 1];
  } else {
    for (int i = 0; i < 2; i++)
      if ((col[i] = wf_lower_color_fresh(L, "snake reduce", loc)) < 0) return WF_EXIT_NOFIT;
    wf_coll_cache_add(L, &key, col, 2, 1);
  }
  return snake_emit(L, col, !cached, sym, len, combine, loc);
}

/* Too few colors for the snake's two: the X-Y reduce relayed through the PEs, every row
 * into x = w-1, then column w-1 into y = h-1, each a relay reduce on one color (a free one,
 * else one lent). The snake cannot run on one color alone: a PE receiving from its
 * predecessor and sending to its successor on it would need two rules on different ports of
 * one switch position, which no WSE router holds (docs/cycle-model.md, "The hardware rule"). */
static int snake_fallback(wf_lower *L, int sym, int64_t len, wf_peop combine, wf_loc loc) {
  int w = L->w, h = L->h;
  wf_coll_params p = wf_coll_params_from_target(L->t);
  /* fewer than two colors are free: both relays go store-and-forward on one */
  double xy = wf_relay_reduce_cycles(L, w, w - 1, len, 0) + wf_relay_reduce_cycles(L, h, h - 1, len, 0);
  double snake = wf_coll_snake(w, h, len, &p);
  wf_warning(loc, "target '%s' is out of colors: the snake reduce over %dx%d PEs is relayed through "
                  "PEs along every row into x=%d, then along that column (%.0f cycles predicted "
                  "instead of %.0f)", L->t->name, w, h, w - 1, xy, snake);
  wf_coll_cache_fallback(L, -1, 0, 1, "snake reduce", loc);
  wf_coll_cache_note(L, xy - snake, "snake relayed as rows then a column");
  int rc = 0;
  if (w > 1) {
    wf_coll_line rl = {WF_AXIS_X, w, wf_guard0()};
    rc = wf_lower_relay_reduce(L, &rl, w - 1, sym, len, combine, "snake reduce (rows)", loc);
  }
  if (!rc && h > 1) {
    wf_coll_line cl = {WF_AXIS_Y, h, wf_guard0()};
    if (w > 1) wf_guard_add(&cl.fixed, wf_term(WF_TERM_X, 0), WF_CMP_EQ, wf_term_int(w - 1));
    rc = wf_lower_relay_reduce(L, &cl, h - 1, sym, len, combine, "snake reduce (column)", loc);
  }
  wf_coll_cache_set_relay(L, -1); /* accounted for above */
  return rc;
}

static int snake_emit(wf_lower *L, const int *col, int routes, int sym, int64_t len, wf_peop combine,
                      wf_loc loc) {
  int w = L->w, h = L->h;
  wf_peop stream = combine == WF_PEOP_RECVMAX ? WF_PEOP_MAXSEND : WF_PEOP_ADDSEND;
  snake_role *r = malloc((size_t)w * sizeof *r);
  char *done = malloc((size_t)w);
  WF_ASSERT(r && done); /* out of host memory: exit 7 */
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) r[x] = role_at(w, h, x, y), done[x] = 0;
    for (int a = 0; a < w; a++) {
      if (done[a]) continue;
      /* a run a, a+2, ... of equal roles (a lone PE when none follows) */
      int b = a;
      while (b + 2 < w && !done[b + 2] && !memcmp(&r[b + 2], &r[a], sizeof r[a])) b += 2;
      for (int u = a; u <= b; u += 2) done[u] = 1;
      wf_pe_guard g = wf_guard0();
      if (h > 1) wf_guard_add(&g, ty, WF_CMP_EQ, wf_term_int(y));
      if (a == b) {
        wf_guard_add(&g, tx, WF_CMP_EQ, wf_term_int(a));
      } else {
        wf_pe_term m = tx;
        m.mod = 2;
        if (a > 1) wf_guard_add(&g, tx, WF_CMP_GE, wf_term_int(a));
        if (b < w - 2) wf_guard_add(&g, tx, WF_CMP_LE, wf_term_int(b));
        wf_guard_add(&g, m, WF_CMP_EQ, wf_term_int(a % 2));
      }
      const snake_role *s = &r[a];
      if (routes) {
        if (s->in_dir >= 0) wf_pe_class_add_route(L->cls, &g, col[s->in_col], s->in_dir, 1u << WF_DIR_RAMP);
        if (s->out_dir >= 0) wf_pe_class_add_route(L->cls, &g, col[s->out_col], WF_DIR_RAMP, 1u << s->out_dir);
      }
      if (s->in_dir < 0)
        wf_emit(L, &g, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col[s->out_col]), wf_arg_sym(sym), wf_arg_int(len)});
      else if (s->out_dir < 0)
        wf_emit(L, &g, combine, (wf_pe_arg[]){wf_arg_int(col[s->in_col]), wf_arg_sym(sym), wf_arg_int(len)});
      else
        wf_emit(L, &g, stream,
                (wf_pe_arg[]){wf_arg_int(col[s->in_col]), wf_arg_int(col[s->out_col]), wf_arg_sym(sym),
                              wf_arg_int(len)});
    }
  }
  free(r);
  free(done);
  return 0;
}
