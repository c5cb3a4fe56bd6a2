/* Ring allreduce along a line (Reduce paper §6.2, the distance-2 mapping of Figure 7b).
 *
 * The ring visits the even coordinates upward, then the odd ones downward (0 2 4 .. 5 3 1),
 * so every ring link is one or two hops and the whole ring uses both directions of the
 * line's links once. Ring position q sends to q-1 (position 0 to P-1) and receives from q+1.
 * Westward messages (evens to the even below, the top odd to the top even when P is even)
 * use one color, eastward ones (odds to the odd above, 0 to 1, the top odd to the top even
 * when P is odd) another; a PE between the two ends of a 2-hop link forwards it.
 *
 * The vector of len words is cut into P chunks of c = ceil(len/P) words. The PE at ring
 * position q first copies it rotated left by q chunks into a scratch buffer, so its slot j
 * holds chunk (q + j) mod P. Then every round is the same code on every PE:
 *   reduce-scatter, round r in [0, P-1): receive-add slot r+1, send slot r (both async),
 *     wait — slot r+1 of q and slot r of q+1 hold the same chunk, so after P-1 rounds slot
 *     P-1 holds a fully reduced chunk;
 *   allgather, round r in [0, P-1): receive slot r, send slot r-1 (slot P-1 at r = 0), wait;
 * and the buffer is rotated back. The rounds are unrolled (offsets are constants), and the
 * rotations are one guarded pair of copies per PE, so the program grows linearly with the
 * line: a baseline, not a pattern for thousands of PEs. Sums only (no async receive-max). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/lower_collective.h"
#include "backend/lower_gemm.h"
#include "waferc/diag.h"

static int ring_x(int P, int q) {
  int evens = (P + 1) / 2;
  return q < evens ? 2 * q : 2 * (P - 1 - q) + 1;
}

static wf_pe_guard at(const wf_coll_line *ln, int x) {
  wf_pe_guard g = ln->fixed;
  wf_guard_add(&g, wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0), WF_CMP_EQ,
               wf_term_int(x));
  return g;
}

/* Copies the rotation: dst slots j <- src chunks (q + j) mod P (dir 0), or back (dir 1). */
static void rotate(wf_lower *L, const wf_pe_guard *g, int sym, int tmp, int64_t len, int64_t c,
                   int P, int q, int back) {
  int64_t split = (int64_t)q * c; /* chunk q starts here in the vector */
  if (split > len) split = len;
  int64_t hi = len - split;       /* words of chunks q..P-1 */
  int64_t lo_at = (int64_t)(P - q) * c;
  wf_pe_arg a, b;
  if (hi > 0) {
    a = wf_arg_sym(tmp);
    b = wf_arg_sym(sym);
    b.off = (int32_t)split;
    wf_emit(L, g, WF_PEOP_COPY, back ? (wf_pe_arg[]){b, a, wf_arg_int(hi)} : (wf_pe_arg[]){a, b, wf_arg_int(hi)});
  }
  if (split > 0 && q > 0) {
    a = wf_arg_sym(tmp);
    a.off = (int32_t)lo_at;
    b = wf_arg_sym(sym);
    wf_emit(L, g, WF_PEOP_COPY, back ? (wf_pe_arg[]){b, a, wf_arg_int(split)} : (wf_pe_arg[]){a, b, wf_arg_int(split)});
  }
}

int64_t wf_ring_local_cycles(int P, int64_t len) {
  if (P <= 1) return 0;
  int64_t c = (len + P - 1) / P;
  return 2 * len + ((int64_t)P * c - len);
}

/* Past the budget (fewer than 2 free colors): the ring keeps its routes on colors lent by
 * earlier collectives of the other axis (serialized; *west / *east set, returns 1), or the
 * allreduce is relayed through the PEs: a relay reduce into the middle of the line, then the
 * flooding broadcast back (each serialized or relayed in turn). Returns 0 when relayed (the
 * allreduce is lowered), -WF_EXIT_* on failure (reported). */
static int ring_fallback(wf_lower *L, const wf_coll_line *ln, const wf_coll_key *key, int fresh,
                         int sym, int64_t len, wf_loc loc, int *west, int *east) {
  int P = ln->n, pos[2] = {0, 0}, col[2] = {-1, -1}, ok = 1;
  const char *ax = ln->axis == WF_AXIS_Y ? "y" : "x";
  char what[96];
  snprintf(what, sizeof what, "ring allreduce along %s over %d PEs", ax, P);
  for (int i = fresh; i < 2 && ok; i++) {
    col[i] = wf_coll_cache_borrow_color(L, key, 1, 0, &pos[i]);
    ok = col[i] >= 0;
  }
  if (ok) {
    char users[256];
    for (int i = fresh; i < 2; i++) {
      wf_coll_cache_users(L, col[i], users, sizeof users);
      wf_warning(loc, "target '%s' is out of colors: the %s (2 colors, %d free) is serialized on "
                      "color %d at switch position %d after the %s (one swset per PE and phase)",
                 L->t->name, what, fresh, col[i], pos[i], users);
      wf_coll_cache_fallback(L, col[i], pos[i], 0, what, loc);
      wf_coll_cache_note(L, 0, "ring serialized on c%d p%d", col[i], pos[i]);
    }
    if (fresh) col[0] = wf_lower_color_fresh(L, "ring allreduce (toward lower coordinates)", loc);
    *west = col[0];
    *east = col[1];
    return 1;
  }
  wf_coll_cache_unborrow(L);
  /* relay: reduce into the middle, broadcast back; the prediction replaces the ring's */
  int root = (P - 1) / 2;
  wf_coll_params p = wf_coll_params_from_target(L->t);
  double ring = wf_coll_ring_lowered(P, len, &p) + (double)wf_ring_local_cycles(P, len);
  int rc = wf_lower_relay_reduce(L, ln, root, sym, len, WF_PEOP_RECVADD, what, loc);
  wf_coll_cache_relay_extra(L, ring - wf_coll_bcast_at(P, len, root, &p));
  if (!rc) rc = wf_lower_coll_bcast(L, ln, root, sym, len, loc);
  if (!rc) wf_coll_cache_reset_last(L, ln);
  return rc ? -rc : 0;
}

int wf_lower_coll_ring(wf_lower *L, const wf_coll_line *ln, int sym, int64_t len, wf_loc loc) {
  int P = ln->n;
  if (P <= 1) return 0;
  if (ln->fixed.n + 1 > WF_PE_MAX_GUARD) {
    wf_error(loc, "ring allreduce: too many guard conditions on the line");
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t c = (len + P - 1) / P;
  if ((int64_t)P * c > INT32_MAX / 2) {
    wf_error(loc, "ring allreduce of %lld words is too large", (long long)len);
    return WF_EXIT_NOFIT;
  }
  wf_coll_key key = {WF_COLL_KEY_RING, ln->axis, P, 0, ln->fixed, NULL};
  int nc = 0, west = -1, east = -1; /* set by every path below that goes on */
  const int *cached = wf_coll_cache_find(L, &key, &nc);
  if (cached) {
    west = cached[0];
    east = cached[1];
  } else {
    int fresh = wf_lower_color_free(L);
    if (fresh < 2) {
      int rc = ring_fallback(L, ln, &key, fresh, sym, len, loc, &west, &east);
      if (rc <= 0) return -rc;
    } else {
      west = wf_lower_color_fresh(L, "ring allreduce (toward lower coordinates)", loc);
      east = wf_lower_color_fresh(L, "ring allreduce (toward higher coordinates)", loc);
    }
    wf_coll_cache_add(L, &key, (int[]){west, east}, 2, 1);
  }
  int pw = wf_coll_cache_base(L, west), pe = wf_coll_cache_base(L, east);
  wf_coll_cache_enter(L, ln);
  int lo = ln->axis == WF_AXIS_Y ? WF_DIR_N : WF_DIR_W, hi = ln->axis == WF_AXIS_Y ? WF_DIR_S : WF_DIR_E;
  unsigned R = 1u << WF_DIR_RAMP;
  int *q_of = calloc((size_t)P, sizeof *q_of);
  if (!q_of) {
    wf_error(loc, "out of memory lowering a ring allreduce");
    return WF_EXIT_NOFIT;
  }
  for (int q = 0; q < P; q++) q_of[ring_x(P, q)] = q;
  /* Routes: each message from x to its successor's coordinate, forwarded in between. */
  for (int x = 0; x < P && !cached; x++) {
    int q = q_of[x], to = ring_x(P, (q + P - 1) % P);
    int col = to < x ? west : east, tx = to < x ? lo : hi, rxd = to < x ? hi : lo;
    wf_pe_guard g = at(ln, x);
    int pos = to < x ? pw : pe;
    wf_pe_class_add_route_pos(L->cls, &g, col, pos, WF_DIR_RAMP, 1u << tx);
    int step = to < x ? -1 : 1;
    for (int u = x + step; u != to; u += step) {
      wf_pe_guard gu = at(ln, u);
      wf_pe_class_add_route_pos(L->cls, &gu, col, pos, rxd, 1u << tx);
    }
    wf_pe_guard gt = at(ln, to);
    wf_pe_class_add_route_pos(L->cls, &gt, col, pos, rxd, R);
  }
  int tmp = wf_lower_temp(L, "$ring", (int64_t)P * c * 4);
  int done = wf_lower_done_task(L);
  if ((int64_t)P * c > len) { /* the last chunk's padding adds zeros */
    wf_pe_arg pad = wf_arg_sym(tmp);
    pad.off = (int32_t)len;
    wf_emit(L, &ln->fixed, WF_PEOP_ZERO, (wf_pe_arg[]){pad, wf_arg_int((int64_t)P * c - len)});
  }
  for (int x = 0; x < P; x++) {
    wf_pe_guard g = at(ln, x);
    rotate(L, &g, sym, tmp, len, c, P, q_of[x], 0);
  }
  /* Kinds of PE by (send color, receive color), written as arithmetic progressions. */
  int *kind = malloc((size_t)P * sizeof *kind), *seen = calloc((size_t)P, sizeof *seen);
  wf_pe_guard *gs = malloc((size_t)P * sizeof *gs);
  int *gk = malloc((size_t)P * sizeof *gk), ng = 0;
  if (!kind || !seen || !gs || !gk) {
    free(kind), free(seen), free(gs), free(gk), free(q_of);
    wf_error(loc, "out of memory lowering a ring allreduce");
    return WF_EXIT_NOFIT;
  }
  for (int x = 0; x < P; x++) {
    int q = q_of[x], to = ring_x(P, (q + P - 1) % P), from = ring_x(P, (q + 1) % P);
    kind[x] = (to < x) * 2 + (from > x); /* bit 1: sends west; bit 0: receives the west color */
  }
  wf_pe_term coord = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  for (int a = 0; a < P; a++) {
    if (seen[a]) continue;
    int b2 = a + 1;
    while (b2 < P && (seen[b2] || kind[b2] != kind[a])) b2++;
    int s = b2 < P ? b2 - a : 1, b = a;
    if (b2 < P) while (b + s < P && kind[b + s] == kind[a] && !seen[b + s]) b += s;
    for (int u = a; u <= b; u += s) seen[u] = 1;
    wf_pe_guard g = ln->fixed;
    if (a == b) {
      wf_guard_add(&g, coord, WF_CMP_EQ, wf_term_int(a));
    } else {
      if (a > 0) wf_guard_add(&g, coord, WF_CMP_GE, wf_term_int(a));
      if (b < P - 1) wf_guard_add(&g, coord, WF_CMP_LE, wf_term_int(b));
      if (s > 1) {
        wf_pe_term m = coord;
        m.mod = (uint16_t)s;
        wf_guard_add(&g, m, WF_CMP_EQ, wf_term_int(a % s));
      }
    }
    gs[ng] = g;
    gk[ng++] = kind[a];
  }
  for (int phase = 0; phase < 2; phase++)
    for (int r = 0; r < P - 1; r++) {
      int recv_slot = phase == 0 ? r + 1 : r;
      int send_slot = phase == 0 ? r : (r == 0 ? P - 1 : r - 1);
      wf_pe_arg rs = wf_arg_sym(tmp), ss = wf_arg_sym(tmp);
      rs.off = (int32_t)(recv_slot * c);
      ss.off = (int32_t)(send_slot * c);
      for (int i = 0; i < ng; i++) {
        int cs = gk[i] & 2 ? west : east, cr = gk[i] & 1 ? west : east;
        wf_emit(L, &gs[i], phase == 0 ? WF_PEOP_ARECVADD : WF_PEOP_ARECV,
                (wf_pe_arg[]){wf_arg_int(cr), rs, wf_arg_int(c), wf_arg_int(done)});
        wf_emit(L, &gs[i], WF_PEOP_ASEND, (wf_pe_arg[]){wf_arg_int(cs), ss, wf_arg_int(c), wf_arg_int(done)});
      }
      wf_emit(L, &ln->fixed, WF_PEOP_WAIT, NULL);
    }
  for (int x = 0; x < P; x++) {
    wf_pe_guard g = at(ln, x);
    rotate(L, &g, sym, tmp, len, c, P, q_of[x], 1);
  }
  free(kind), free(seen), free(gs), free(gk);
  free(q_of);
  return WF_EXIT_OK;
}
