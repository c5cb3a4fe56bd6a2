/* The flooding broadcast along a line (Reduce paper §4.1): the root sends once and every
 * router on the line passes the wavelets on away from the root and down its ramp. Past the
 * color budget it rides the color of the reduce that ended at the same root, or an earlier
 * collective's color at a free switch position (collective_cache.c). */
#include <stdio.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

/* The flood's rules from `root` on the line: at the root, below it, above it. */
static int flood_rules(const wf_coll_line *ln, int root, wf_pe_route *r) {
  int lo = ln->axis == WF_AXIS_Y ? WF_DIR_N : WF_DIR_W, hi = ln->axis == WF_AXIS_Y ? WF_DIR_S : WF_DIR_E;
  wf_pe_term xc = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  static const int cmp[3] = {WF_CMP_EQ, WF_CMP_LT, WF_CMP_GT};
  unsigned R = 1u << WF_DIR_RAMP;
  const int rx[3] = {WF_DIR_RAMP, hi, lo};
  const unsigned tx[3] = {(1u << lo) | (1u << hi), (1u << lo) | R, (1u << hi) | R};
  for (int i = 0; i < 3; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].guard = ln->fixed;
    wf_guard_add(&r[i].guard, xc, cmp[i], wf_term_int(root));
    r[i].rx = rx[i];
    r[i].tx = tx[i];
  }
  return 3;
}

/* Past the budget: the broadcast on the color of the tree that reduced into its root (see
 * wf_coll_cache_merge); its rules join the tree's at both of the tree's positions when the
 * tree switches, so they hold wherever a router was left. No swset, no cycles added. Only
 * where every router still holds one rx set -> one tx set per position: a reduce's routers
 * take wavelets from the far side (or the ramp) toward the root and the flood's from the
 * root's side away from it, so at a PE that has reduce rules in a position the two tx sets
 * differ, and the merge is refused (the broadcast is then serialized at a free position). */
static int bcast_merge(wf_lower *L, const wf_coll_line *ln, int root, const wf_coll_key *key, wf_loc loc,
                       int *both, int *routes) {
  int pos = 0, have = 0, col = wf_coll_cache_merge(L, key, &pos, both, &have);
  if (col < 0) return -1;
  wf_pe_route r[3];
  int n = flood_rules(ln, root, r);
  if (!have && !wf_coll_cache_holdable(L, col, r, n, (*both ? 3u : 1u) << pos)) {
    wf_coll_cache_unborrow(L);
    *both = 0;
    return -1;
  }
  *routes = !have;
  wf_coll_cache_note(L, 0, "broadcast on the reduce's c%d", col);
  if (have) return col; /* warned when first merged */
  const char *ax = key->axis == WF_AXIS_Y ? "y" : "x";
  wf_warning(loc, "target '%s' is out of colors: the flooding broadcast along %s is serialized on "
                  "color %d at switch position %d with the reduce along %s into the same root (its "
                  "wavelets travel toward the root, the broadcast's away: no port is shared, no swset)",
             L->t->name, ax, col, pos, ax);
  char what[96];
  snprintf(what, sizeof what, "flooding broadcast along %s", ax);
  wf_coll_cache_fallback(L, col, pos, 0, what, loc);
  return col;
}

int wf_lower_coll_bcast(wf_lower *L, const wf_coll_line *ln, int root, int sym, int64_t len,
                        wf_loc loc) {
  if (ln->n <= 1) return 0;
  wf_coll_key key = {1, ln->axis, ln->n, root, ln->fixed, NULL, 0};
  int nc = 0, col, both = 0;
  const int *cached = wf_coll_cache_find(L, &key, &nc);
  int routes = !cached;
  if (cached) {
    col = cached[0];
  } else {
    col = wf_lower_color_try(L, "flooding broadcast");
    /* past the budget: on the color of the tree that reduced into this root, else
     * serialized after an earlier collective of the other axis */
    if (col < 0) col = bcast_merge(L, ln, root, &key, loc, &both, &routes);
    if (col < 0) col = wf_coll_cache_borrow(L, &key, "flooding broadcast", loc);
    if (col < 0) col = wf_lower_color_fresh(L, "flooding broadcast", loc); /* the error */
    if (col < 0) return WF_EXIT_NOFIT;
    wf_coll_cache_add(L, &key, &col, 1, 1);
  }
  int pos = wf_coll_cache_base(L, col);
  wf_coll_cache_enter(L, ln);
  int lo = ln->axis == WF_AXIS_Y ? WF_DIR_N : WF_DIR_W, hi = ln->axis == WF_AXIS_Y ? WF_DIR_S : WF_DIR_E;
  wf_pe_term xc = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  wf_pe_guard at = ln->fixed, below = ln->fixed, above = ln->fixed;
  wf_guard_add(&at, xc, WF_CMP_EQ, wf_term_int(root));
  wf_guard_add(&below, xc, WF_CMP_LT, wf_term_int(root));
  wf_guard_add(&above, xc, WF_CMP_GT, wf_term_int(root));
  unsigned R = 1u << WF_DIR_RAMP;
  for (int p = pos; routes && p <= pos + both; p++) {
    wf_pe_class_add_route_pos(L->cls, &at, col, p, WF_DIR_RAMP, (1u << lo) | (1u << hi));
    wf_pe_class_add_route_pos(L->cls, &below, col, p, hi, (1u << lo) | R);
    wf_pe_class_add_route_pos(L->cls, &above, col, p, lo, (1u << hi) | R);
  }
  wf_emit(L, &at, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  if (root > 0) wf_emit(L, &below, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  if (root < ln->n - 1)
    wf_emit(L, &above, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(col), wf_arg_sym(sym), wf_arg_int(len)});
  return 0;
}
