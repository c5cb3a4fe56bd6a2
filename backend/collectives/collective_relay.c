/* Relay reduce: past the color budget, a reduce along a line relayed through its PEs (see
 * lower_collective.h). Every hop ends at the next PE's ramp, so no router forwards anything
 * and the colors are free again at a PE as soon as that PE is done (they can be lent on).
 *
 * A WSE router holds one rx set -> one tx set per color and switch position
 * (docs/cycle-model.md, "The hardware rule"), so a PE cannot take the far side's wavelets
 * into its ramp and send its own toward the root on one color in one position. Two ways:
 *
 * - By parity, when two colors are free: the PE at distance d from the root receives on
 *   color d % 2 and streams its sums on (addsend / maxsend) on color (d - 1) % 2. At each
 *   router each color has one rx port; the cost is the streaming chain's (Lemma 5.2).
 * - Store-and-forward on one color: a PE between the leaf and the root receives its far
 *   neighbour's block into its own (recvadd / recvmax) at position p, swsets to p+1, sends,
 *   and swsets back to p (in order down the ramp behind its last wavelet, so the router
 *   returns to p only once the block has left). Its near neighbour's router, still at p,
 *   takes the block into its ramp. A leaf only sends (at p). A PE sends only once its whole
 *   block is in, so each hop costs B + 2 T_R + hop + 1 instead of the chain's 2 T_R + 2.
 *
 * The root receives the low side, then (swset) the high side at the next position: both
 * arrive on one color and one input queue, so the high side waits at the root's router until
 * the low side is in. Whatever tree was asked for, the relay is a chain per side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

static wf_pe_guard span(const wf_coll_line *ln, int a, int b) {
  wf_pe_term t = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  wf_pe_guard g = ln->fixed;
  if (a == b) {
    wf_guard_add(&g, t, WF_CMP_EQ, wf_term_int(a));
  } else {
    if (a > 0) wf_guard_add(&g, t, WF_CMP_GE, wf_term_int(a));
    if (b < ln->n - 1) wf_guard_add(&g, t, WF_CMP_LE, wf_term_int(b));
  }
  return g;
}

/* One side of m PEs beside the root. Store-and-forward: every hop is a message over 2 PEs
 * (B + 2 T_R + hop + 1: B - 1 after the first wavelet, both ramps, the link, the store); the
 * swset of a forwarding PE costs nothing on the path: it goes down the ramp in the store
 * cycle of the block's last word, before the block's first wavelet. By parity: the chain of
 * Lemma 5.2 over the side and the root (exact in the simulator). */
static double side_cycles(int m, int64_t len, int parity, const wf_coll_params *p) {
  if (m <= 0) return 0;
  if (parity) return wf_coll_chain(m + 1, len, p);
  return m * ((double)len + 2 * p->ramp + p->hop + 1);
}

double wf_relay_reduce_cycles(const wf_lower *L, int n, int root, int64_t len, int parity) {
  if (n <= 1) return 0;
  wf_coll_params p = wf_coll_params_from_target(L->t);
  /* With both sides the root reads the low one, swsets, and only then does the high side's
   * stream (held at its router) climb the ramp: its B words follow the swset down and the
   * first wavelet up. */
  double lo = side_cycles(root, len, parity, &p), hi = side_cycles(n - 1 - root, len, parity, &p);
  if (!lo || !hi) return lo + hi;
  double after = lo + 1 + 2 * p.ramp + (double)len;
  return after > hi ? after : hi;
}

/* g and the PEs of the line whose coordinate has parity `par`. */
static wf_pe_guard with_parity(wf_pe_guard g, const wf_coll_line *ln, int par) {
  wf_pe_term t = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  t.mod = 2;
  wf_guard_add(&g, t, WF_CMP_EQ, wf_term_int(par));
  return g;
}

int wf_lower_relay_reduce(wf_lower *L, const wf_coll_line *ln, int root, int sym, int64_t len,
                          wf_peop combine, const char *what, wf_loc loc) {
  int n = ln->n;
  if (n <= 1) return 0;
  WF_ASSERT(root >= 0 && root < n && ln->fixed.n + 3 <= WF_PE_MAX_GUARD);
  int two = root > 0 && root < n - 1; /* both sides: the root switches between them */
  int mid = root > 1 || root < n - 2;  /* a PE between a leaf and the root forwards */
  wf_coll_key key = {WF_COLL_KEY_RELAY, ln->axis, n, root, ln->fixed, NULL, 0};
  wf_coll_key pkey = key;
  pkey.coloring = 2; /* by parity, two colors */
  int nc = 0, col[2], pos = 0, routes = 0, par = 0;
  const int *cached = wf_coll_cache_find(L, &pkey, &nc);
  if (cached) par = 1;
  else cached = wf_coll_cache_find(L, &key, &nc);
  const char *ax = ln->axis == WF_AXIS_Y ? "y" : "x";
  if (cached) {
    col[0] = cached[0];
    col[1] = cached[par];
  } else {
    routes = 1;
    /* Two free colors (beyond those kept for an allreduce's broadcast): the PEs stream by
     * parity, the chain's cycles; else store-and-forward on one. */
    par = mid && wf_lower_color_free(L) - wf_coll_cache_reserved(L) >= 2;
    col[0] = wf_lower_color_try(L, par ? "relay reduce (through PEs, by parity)"
                                       : "relay reduce (store-and-forward through PEs)");
    col[1] = par ? wf_lower_color_try(L, "relay reduce (through PEs, by parity)") : col[0];
    char users[256] = "";
    if (col[0] < 0) {
      col[0] = col[1] = wf_coll_cache_borrow_color(L, &key, two || mid ? 2 : 1, 0, &pos);
      if (col[0] < 0) return wf_lower_color_exhausted(L, what, 1, loc);
      wf_coll_cache_users(L, col[0], users, sizeof users);
    }
    double cyc = wf_relay_reduce_cycles(L, n, root, len, par);
    if (par)
      wf_warning(loc, "target '%s' is out of colors: the %s is relayed through PEs along %s into "
                      "coordinate %d on colors %d and %d by parity (a chain: 2 ramps per hop, %.0f "
                      "cycles predicted)",
                 L->t->name, what, ax, root, col[0], col[1], cyc);
    else if (users[0])
      wf_warning(loc, "target '%s' is out of colors: the %s is relayed through PEs along %s into "
                      "coordinate %d on color %d at switch position %d, after the %s (store-and-forward: "
                      "B + 2 ramps per hop, %.0f cycles predicted)",
                 L->t->name, what, ax, root, col[0], pos, users, cyc);
    else
      wf_warning(loc, "target '%s' is out of colors: the %s is relayed through PEs along %s into "
                      "coordinate %d on color %d (store-and-forward: B + 2 ramps per hop, %.0f cycles predicted)",
                 L->t->name, what, ax, root, col[0], cyc);
    wf_coll_cache_fallback(L, col[0], pos, 1, what, loc);
    wf_coll_cache_add(L, par ? &pkey : &key, col, par ? 2 : 1, !two);
  }
  wf_coll_cache_set_relay(L, wf_relay_reduce_cycles(L, n, root, len, par));
  if (par) wf_coll_cache_note(L, 0, "relayed through PEs on c%d and c%d by parity", col[0], col[1]);
  else wf_coll_cache_note(L, 0, "relayed through PEs on c%d", col[0]);
  pos = wf_coll_cache_base(L, col[0]);
  int pos1 = wf_coll_cache_base(L, col[1]);
  wf_coll_cache_enter(L, ln);
  int lo = ln->axis == WF_AXIS_Y ? WF_DIR_N : WF_DIR_W, hi = ln->axis == WF_AXIS_Y ? WF_DIR_S : WF_DIR_E;
  unsigned R = 1u << WF_DIR_RAMP;
  wf_peop stream = combine == WF_PEOP_RECVMAX ? WF_PEOP_MAXSEND : WF_PEOP_ADDSEND;
  for (int side = 0; side < 2; side++) {
    int m = side == 0 ? root : n - 1 - root; /* PEs on this side */
    if (!m) continue;
    int leaf = side == 0 ? 0 : n - 1;
    int in = side == 0 ? lo : hi, out = side == 0 ? hi : lo; /* from the far side, toward the root */
    wf_pe_guard gl = span(ln, leaf, leaf);
    wf_pe_guard gm = side == 0 ? span(ln, 1, root - 1) : span(ln, root + 1, n - 2);
    /* By parity the PE at distance d from the root sends on col[(d - 1) % 2] and receives on
     * col[d % 2]: at every router each color has one rx port. */
    int lc = par ? col[(m - 1) % 2] : col[0], lp = par ? (lc == col[0] ? pos : pos1) : pos;
    if (routes) wf_pe_class_add_route_pos(L->cls, &gl, lc, lp, WF_DIR_RAMP, 1u << out);
    wf_emit(L, &gl, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(lc), wf_arg_sym(sym), wf_arg_int(len)});
    if (m <= 1) continue;
    if (par) {
      for (int k = 0; k < 2; k++) { /* the forwarding PEs with d % 2 == k, d = 1 .. m-1 */
        if ((k ? 1 : 2) > m - 1) continue;
        wf_pe_guard g = with_parity(gm, ln, (root + k) % 2);
        int cin = col[k], cout = col[1 - k];
        if (routes) {
          wf_pe_class_add_route_pos(L->cls, &g, cin, k ? pos1 : pos, in, R);
          wf_pe_class_add_route_pos(L->cls, &g, cout, k ? pos : pos1, WF_DIR_RAMP, 1u << out);
        }
        wf_emit(L, &g, stream,
                (wf_pe_arg[]){wf_arg_int(cin), wf_arg_int(cout), wf_arg_sym(sym), wf_arg_int(len)});
      }
      continue;
    }
    if (routes) {
      wf_pe_class_add_route_pos(L->cls, &gm, col[0], pos, in, R);
      wf_pe_class_add_route_pos(L->cls, &gm, col[0], pos + 1, WF_DIR_RAMP, 1u << out);
    }
    wf_emit(L, &gm, combine, (wf_pe_arg[]){wf_arg_int(col[0]), wf_arg_sym(sym), wf_arg_int(len)});
    wf_emit(L, &gm, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(col[0]), wf_arg_int(pos + 1)});
    wf_emit(L, &gm, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(col[0]), wf_arg_sym(sym), wf_arg_int(len)});
    wf_emit(L, &gm, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(col[0]), wf_arg_int(pos)});
  }
  wf_pe_guard gr = span(ln, root, root);
  if (routes) {
    if (root > 0) wf_pe_class_add_route_pos(L->cls, &gr, col[0], pos, lo, R);
    if (root < n - 1) wf_pe_class_add_route_pos(L->cls, &gr, col[0], pos + two, hi, R);
  }
  wf_pe_arg rargs[3] = {wf_arg_int(col[0]), wf_arg_sym(sym), wf_arg_int(len)};
  wf_emit(L, &gr, combine, rargs);
  if (two) {
    wf_emit(L, &gr, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(col[0]), wf_arg_int(pos + 1)});
    wf_emit(L, &gr, combine, rargs);
  }
  return 0;
}
