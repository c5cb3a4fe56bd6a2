/* The collective algorithms as lowering functions (Reduce paper §4-§7): the paper's trees
 * placed on a line (mirrored or split at the root), the model's choice, allreduce and the 2D
 * forms; the flooding broadcast along a line is lower_collective_bcast.c's. The trees come
 * from the cost-model library (collective_tree.c), so the lowered tree is the one the model
 * priced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

/* Tree of `algo` over m positions, root at position 0. */
static int side_tree(wf_coll_algo algo, int m, int64_t len, const wf_coll_params *p,
                     wf_reduce_tree *t) {
  switch (algo) {
  case WF_COLL_STAR: return wf_coll_tree_star(m, t);
  case WF_COLL_CHAIN: return wf_coll_tree_chain(m, t);
  case WF_COLL_TREE: return wf_coll_tree_binary(m, t);
  case WF_COLL_TWO_PHASE: return wf_coll_tree_two_phase(m, (int)wf_coll_two_phase_group(m), t);
  case WF_COLL_AUTOGEN: return wf_coll_autogen(m, len, p, t) < 0 ? -1 : 0;
  default: return -1;
  }
}

int wf_line_tree_build(wf_coll_algo algo, int n, int root, int64_t len, const wf_coll_params *p,
                       wf_line_tree *t) {
  t->n = n;
  t->by_shape = algo == WF_COLL_TREE || algo == WF_COLL_TWO_PHASE ? 1 : algo == WF_COLL_AUTOGEN ? 2 : 0;
  t->parent = malloc((size_t)(n > 0 ? n : 1) * sizeof *t->parent);
  WF_ASSERT(t->parent); /* out of host memory: exit 7, not "no route" */
  if (root < 0 || root >= n) return -1;
  t->parent[root] = -1;
  /* side 0: positions 0..root toward lower coordinates; side 1: root..n-1 */
  for (int side = 0; side < 2; side++) {
    int m = side == 0 ? root + 1 : n - root;
    if (m <= 1) continue;
    wf_reduce_tree st;
    memset(&st, 0, sizeof st);
    if (side_tree(algo, m, len, p, &st)) {
      wf_coll_tree_free(&st);
      return -1;
    }
    for (int i = 1; i < m; i++) {
      int q = st.parent[i];
      int ci = side == 0 ? root - i : root + i, cq = side == 0 ? root - q : root + q;
      t->parent[ci] = cq;
    }
    wf_coll_tree_free(&st);
  }
  return 0;
}

static wf_coll_params params(const wf_lower *L) { return wf_coll_params_from_target(L->t); }

/* Which algorithms this backend can lower, for the chooser. */
#define LOWERED_1D ((1u << WF_COLL_STAR) | (1u << WF_COLL_CHAIN) | (1u << WF_COLL_TREE) | \
                    (1u << WF_COLL_TWO_PHASE) | (1u << WF_COLL_AUTOGEN))

static int pick_from(const wf_lower *L, wf_coll_kind kind, int64_t w, int64_t h, int algo,
                     int64_t len, unsigned lowered, wf_loc loc, wf_coll_choice *c) {
  wf_coll_params p = params(L);
  wf_coll_query q = {kind, w, h, len, lowered, 0};
  int rc = algo < 0 ? wf_coll_choose(&q, &p, c) : wf_coll_predict(&q, (wf_coll_algo)algo, &p, c);
  if (rc == 0 && algo >= 0 && !(lowered >> algo & 1)) rc = -1;
  if (rc) {
    wf_error(loc, "collective algorithm '%s' cannot be lowered for a %s over %lldx%lld PEs "
                  "(lowered: star, chain, tree, two_phase, autogen; ring for a 1D allreduce of "
                  "sums; snake for a 2D reduce)",
             algo < 0 ? "auto" : wf_coll_algo_name((wf_coll_algo)algo),
             kind == WF_COLL_REDUCE ? "reduce" : kind == WF_COLL_ALLREDUCE ? "allreduce" : "broadcast",
             (long long)w, (long long)h);
    return WF_EXIT_UNSUPPORTED;
  }
  return 0;
}

static int pick(const wf_lower *L, wf_coll_kind kind, int64_t w, int64_t h, int algo, int64_t len,
                wf_loc loc, wf_coll_choice *c) {
  return pick_from(L, kind, w, h, algo, len, LOWERED_1D, loc, c);
}

static void fill(wf_coll_result *out, const wf_coll_choice *c, int root, int colors) {
  if (!out) return;
  out->algo = c->algo;
  out->root = root;
  out->colors = colors;
  out->predicted = c->predicted;
  out->lower_bound = c->lower_bound;
  snprintf(out->why, sizeof out->why, "%s", c->why);
}

/* *schedule (may be NULL): the lowered tree's schedule (wf_coll_tree_schedule), or -1 when
 * the reduce was relayed past the color budget instead. */
static int reduce_on(wf_lower *L, const wf_coll_line *ln, wf_coll_algo algo, int root, int sym,
                     int64_t len, wf_peop combine, wf_loc loc, int *colors, double *schedule) {
  wf_coll_params p = params(L);
  wf_line_tree t;
  memset(&t, 0, sizeof t);
  if (schedule) *schedule = -1;
  if (wf_line_tree_build(algo, ln->n, root, len, &p, &t)) {
    free(t.parent);
    wf_error(loc, "cannot build the %s tree over %d PEs", wf_coll_algo_name(algo), ln->n);
    return WF_EXIT_NOFIT;
  }
  int rc = wf_lower_tree_reduce(L, ln, &t, sym, len, combine, loc, colors);
  wf_reduce_tree rt = {t.n, t.parent, 0, 0, 0, 0};
  double s = rc ? -1 : wf_coll_tree_schedule(&rt, len, &p);
  free(t.parent);
  /* relayed past the budget: the chain's cycles replace the tree's in the prediction */
  if (!wf_coll_cache_relay_extra(L, wf_coll_reduce_at(algo, ln->n, len, root, &p)) && schedule)
    *schedule = s;
  return rc;
}

int wf_lower_coll_reduce(wf_lower *L, const wf_coll_line *ln, int algo, int root, int sym,
                         int64_t len, wf_peop combine, wf_loc loc, wf_coll_result *out) {
  if (algo == WF_COLL_SNAKE) algo = WF_COLL_CHAIN; /* a snake along one line is the chain */
  wf_coll_choice c;
  int rc = pick(L, WF_COLL_REDUCE, ln->n, 1, algo, len, loc, &c);
  if (rc) return rc;
  if (root < 0) root = ln->n - 1;
  int colors = 0;
  double sched = -1;
  rc = reduce_on(L, ln, c.algo, root, sym, len, combine, loc, &colors, &sched);
  fill(out, &c, root, colors);
  /* what the tree takes as lowered (docs/collectives-lowering.md, "Auto-Gen at mid P"):
   * equation (1) overlaps a PE's reads with its distance to the root, the schedule does not */
  if (out && sched > 0) {
    size_t u = strlen(out->why);
    snprintf(out->why + u, sizeof out->why - u, "; tree schedule %.0f", sched);
  }
  return rc;
}

int wf_lower_coll_allreduce(wf_lower *L, const wf_coll_line *ln, int algo, int sym, int64_t len,
                            wf_peop combine, wf_loc loc, wf_coll_result *out) {
  if (algo == WF_COLL_SNAKE) algo = WF_COLL_CHAIN; /* a snake along one line is the chain */
  wf_coll_choice c;
  unsigned lowered = LOWERED_1D | (combine == WF_PEOP_RECVADD ? 1u << WF_COLL_RING : 0);
  int rc = pick_from(L, WF_COLL_ALLREDUCE, ln->n, 1, algo, len, lowered, loc, &c);
  if (rc) return rc;
  if (c.algo == WF_COLL_RING) {
    rc = wf_lower_coll_ring(L, ln, sym, len, loc);
    fill(out, &c, 0, ln->n > 1 ? 2 : 0); /* its rotations and padding are in the prediction */
    if (out) out->lowered = out->predicted; /* wf_coll_ring_lowered follows the lowering */
    return rc;
  }
  int root = (int)c.root, colors = 0;
  if (root < 0 || root >= ln->n) root = 0;
  double sched = -1;
  wf_coll_cache_reserve(L, ln->n > 1); /* a color for the broadcast */
  rc = reduce_on(L, ln, c.algo, root, sym, len, combine, loc, &colors, &sched);
  wf_coll_cache_reserve(L, 0);
  if (!rc) rc = wf_lower_coll_bcast(L, ln, root, sym, len, loc);
  int resets = rc ? 0 : wf_coll_cache_reset_last(L, ln);
  fill(out, &c, root, colors + (ln->n > 1));
  if (out && sched > 0) {
    wf_coll_params p = params(L);
    out->lowered = sched + wf_coll_bcast_at(ln->n, len, root, &p) + resets;
  }
  return rc;
}

/* ---- 2D ------------------------------------------------------------------------------ */

static wf_coll_line row_line(const wf_lower *L) {
  wf_coll_line ln = {WF_AXIS_X, L->w, wf_guard0()};
  return ln;
}

static wf_coll_line col_line(const wf_lower *L, int x) {
  wf_coll_line ln = {WF_AXIS_Y, L->h, wf_guard0()};
  if (L->w > 1) wf_guard_add(&ln.fixed, wf_term(WF_TERM_X, 0), WF_CMP_EQ, wf_term_int(x));
  return ln;
}

static int xy_reduce_to(wf_lower *L, wf_coll_algo algo, int rx, int ry, int sym, int64_t len,
                        wf_peop combine, wf_loc loc, int *colors) {
  int ca = 0, cb = 0;
  wf_coll_line rl = row_line(L), cl = col_line(L, rx);
  int rc = rl.n > 1 ? reduce_on(L, &rl, algo, rx, sym, len, combine, loc, &ca, NULL) : 0;
  if (!rc && cl.n > 1) rc = reduce_on(L, &cl, algo, ry, sym, len, combine, loc, &cb, NULL);
  *colors = ca + cb;
  return rc;
}

int wf_lower_coll_reduce_xy(wf_lower *L, int algo, int sym, int64_t len, wf_peop combine,
                            wf_loc loc, wf_coll_result *out) {
  wf_coll_choice c;
  int rc = pick_from(L, WF_COLL_REDUCE, L->w, L->h, algo, len, LOWERED_1D | 1u << WF_COLL_SNAKE, loc, &c);
  if (rc) return rc;
  int colors = 0;
  if (c.algo == WF_COLL_SNAKE) {
    rc = wf_lower_coll_snake(L, sym, len, combine, loc);
    fill(out, &c, 0, 2);
    return rc;
  }
  rc = xy_reduce_to(L, c.algo, L->w - 1, L->h - 1, sym, len, combine, loc, &colors);
  fill(out, &c, 0, colors);
  return rc;
}

/* Past the budget: the 2D broadcast as a flooding broadcast along row ry, then one along
 * every column from row ry — two 1D patterns, each free to be serialized on a color of the
 * other axis. The PEs of row ry relay: they receive the row's message, then send it down
 * their column (a second pair of ramps, and the column starts only after the row's end). */
static int bcast_2d_relayed(wf_lower *L, int rx, int ry, int sym, int64_t len, wf_loc loc) {
  wf_coll_params p = params(L);
  double two = (L->w > 1 ? wf_coll_bcast_at(L->w, len, rx, &p) : 0) +
               (L->h > 1 ? wf_coll_bcast_at(L->h, len, ry, &p) : 0);
  double cyc = wf_coll_bcast2d(L->w, L->h, len, &p);
  wf_warning(loc, "target '%s' is out of colors: the 2D flooding broadcast from (%d, %d) is relayed "
                  "through the PEs of row %d (a row broadcast, then column broadcasts from that "
                  "row; %.0f cycles predicted instead of %.0f)",
             L->t->name, rx, ry, ry, two, cyc);
  wf_coll_cache_fallback(L, -1, 0, 1, "2D flooding broadcast", loc);
  wf_coll_cache_note(L, two - cyc, "2D broadcast relayed through row %d", ry);
  int rc = 0;
  if (L->w > 1) {
    wf_coll_line rl = {WF_AXIS_X, L->w, wf_guard0()};
    if (L->h > 1) wf_guard_add(&rl.fixed, wf_term(WF_TERM_Y, 0), WF_CMP_EQ, wf_term_int(ry));
    rc = wf_lower_coll_bcast(L, &rl, rx, sym, len, loc);
  }
  if (!rc && L->h > 1) {
    wf_coll_line cl = {WF_AXIS_Y, L->h, wf_guard0()};
    rc = wf_lower_coll_bcast(L, &cl, ry, sym, len, loc);
  }
  return rc;
}

/* The 2D flood's rules (Lemma 7.1): along row ry from the root, multicast into every
 * column, then along the columns. */
static int flood_rules(const wf_lower *L, int rx, int ry, wf_pe_route *r) {
  enum { N = 1u << WF_DIR_N, E = 1u << WF_DIR_E, S = 1u << WF_DIR_S, W = 1u << WF_DIR_W,
         R = 1u << WF_DIR_RAMP };
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  static const int rxs[5] = {WF_DIR_RAMP, WF_DIR_E, WF_DIR_W, WF_DIR_S, WF_DIR_N};
  const unsigned txs[5] = {E | W | N | S, W | N | S | R, E | N | S | R, N | R, S | R};
  for (int i = 0; i < 5; i++) {
    memset(&r[i], 0, sizeof r[i]);
    wf_pe_guard *g = &r[i].guard;
    *g = wf_guard0();
    if (i < 3) wf_guard_add(g, ty, WF_CMP_EQ, wf_term_int(ry));
    if (i == 0) wf_guard_add(g, tx, WF_CMP_EQ, wf_term_int(rx));
    if (i == 1) wf_guard_add(g, tx, WF_CMP_LT, wf_term_int(rx));
    if (i == 2) wf_guard_add(g, tx, WF_CMP_GT, wf_term_int(rx));
    if (i == 3) wf_guard_add(g, ty, WF_CMP_LT, wf_term_int(ry));
    if (i == 4) wf_guard_add(g, ty, WF_CMP_GT, wf_term_int(ry));
    r[i].rx = rxs[i];
    r[i].tx = txs[i];
  }
  (void)L;
  return 5;
}

/* Past the budget, right after the 2D reduce into (rx, ry): the flood on a color that reduce
 * used, when at no PE its rules need a port that color's rules already take (a reduce's
 * wavelets travel toward the root, the flood's away from it). The flood starts only once the
 * root holds the sum, so every PE is done with the reduce by the time it reaches it; its rules
 * go to every switch position the color uses, so they hold wherever a router was left. */
static int bcast_2d_merge(wf_lower *L, int rx, int ry, uint32_t reduce_colors, wf_loc loc,
                          unsigned *posm) {
  wf_pe_route r[5];
  int n = flood_rules(L, rx, ry, r);
  for (int col = 0; col < 32; col++) {
    if (!(reduce_colors >> col & 1) || !wf_coll_cache_ports_free(L, col, r, n)) continue;
    *posm = wf_coll_cache_positions(L, col);
    if (!wf_coll_cache_holdable(L, col, r, n, *posm)) continue; /* per-input rules somewhere */
    int lo = 0;
    while (!(*posm >> lo & 1)) lo++;
    wf_warning(loc, "target '%s' is out of colors: the 2D flooding broadcast from (%d, %d) is "
                    "serialized on color %d (switch positions 0x%x) with the 2D reduce into the "
                    "same root (at no router do the two take the same port; no swset)",
               L->t->name, rx, ry, col, *posm);
    wf_coll_cache_fallback(L, col, lo, 0, "2D flooding broadcast", loc);
    wf_coll_cache_note(L, 0, "2D broadcast on the reduce's c%d", col);
    wf_coll_key key = {WF_COLL_KEY_BCAST2D, WF_AXIS_X, L->w, L->h, wf_guard0(), NULL, 0};
    wf_coll_cache_add(L, &key, &col, 1, 1); /* later borrowers see its ports */
    return col;
  }
  return -1;
}

static int bcast_2d(wf_lower *L, int rx, int ry, int sym, int64_t len, uint32_t reduce_colors,
                    wf_loc loc) {
  if (L->w * L->h <= 1) return 0;
  unsigned posm = 1;
  int col;
  if (wf_lower_color_free(L)) {
    col = wf_lower_color_fresh(L, "2D flooding broadcast", loc);
  } else {
    col = bcast_2d_merge(L, rx, ry, reduce_colors, loc, &posm);
    if (col < 0) return bcast_2d_relayed(L, rx, ry, sym, len, loc);
  }
  if (col < 0) return WF_EXIT_NOFIT;
  wf_pe_route r[5];
  int n = flood_rules(L, rx, ry, r);
  for (int p = 0; p < WF_PE_MAX_POS; p++)
    for (int i = 0; i < n && (posm >> p & 1); i++)
      wf_pe_class_add_route_pos(L->cls, &r[i].guard, col, p, r[i].rx, r[i].tx);
  wf_pe_term tx = wf_term(WF_TERM_X, 0), ty = wf_term(WF_TERM_Y, 0);
  wf_emit(L, &r[0].guard, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  /* everyone but the root receives */
  wf_pe_guard a = wf_guard0(), b = wf_guard0();
  wf_guard_add(&a, ty, WF_CMP_NE, wf_term_int(ry));
  wf_guard_add(&b, ty, WF_CMP_EQ, wf_term_int(ry));
  wf_guard_add(&b, tx, WF_CMP_NE, wf_term_int(rx));
  wf_emit(L, &a, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  wf_emit(L, &b, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  return 0;
}

int wf_lower_coll_bcast_2d(wf_lower *L, int rx, int ry, int sym, int64_t len, wf_loc loc) {
  return bcast_2d(L, rx, ry, sym, len, 0, loc);
}

int wf_lower_coll_allreduce_xy(wf_lower *L, int algo, int sym, int64_t len, wf_peop combine,
                               wf_loc loc, wf_coll_result *out) {
  wf_coll_choice c;
  int rc;
  if (algo == WF_COLL_SNAKE) {
    /* the model prices no snake allreduce: the snake reduce plus the 2D broadcast */
    rc = pick_from(L, WF_COLL_REDUCE, L->w, L->h, algo, len, 1u << WF_COLL_SNAKE, loc, &c);
    if (rc) return rc;
    wf_coll_params p = params(L);
    c.predicted += wf_coll_bcast2d(L->w, L->h, len, &p);
    wf_coll_cache_take_touched(L);
    int stamp = wf_coll_cache_stamp(L);
    wf_coll_cache_reserve(L, 1); /* a color for the 2D broadcast */
    rc = wf_lower_coll_snake(L, sym, len, combine, loc);
    wf_coll_cache_reserve(L, 0);
    if (!rc) rc = bcast_2d(L, L->w - 1, L->h - 1, sym, len, wf_coll_cache_take_touched(L), loc);
    if (!rc) wf_coll_cache_done_since(L, stamp);
    fill(out, &c, 0, 3);
    return rc;
  }
  rc = pick(L, WF_COLL_ALLREDUCE, L->w, L->h, algo, len, loc, &c);
  if (rc) return rc;
  int colors = 0;
  wf_coll_cache_take_touched(L);
  int stamp = wf_coll_cache_stamp(L);
  wf_coll_cache_reserve(L, 1); /* a color for the 2D broadcast */
  rc = xy_reduce_to(L, c.algo, 0, 0, sym, len, combine, loc, &colors);
  wf_coll_cache_reserve(L, 0);
  if (!rc) rc = bcast_2d(L, 0, 0, sym, len, wf_coll_cache_take_touched(L), loc);
  if (!rc) wf_coll_cache_done_since(L, stamp); /* the broadcast followed every reduce wavelet */
  fill(out, &c, 0, colors + 1);
  return rc;
}
