/* Ring allreduce along a line (Reduce paper §6.2, the distance-2 mapping of Figure 7b).
 *
 * The ring visits the even coordinates upward, then the odd ones downward (0 2 4 .. 5 3 1),
 * so every ring link is one or two hops and the whole ring uses both directions of the
 * line's links once. Ring position q sends to q-1 (position 0 to P-1) and receives from q+1.
 * A PE between the two ends of a 2-hop link forwards it. A WSE router holds one rx set -> one
 * tx set per color, so two messages on one color may not meet at a PE (one's forward is the
 * other's send or receive, or both would share a link or a queue): each message spans an
 * interval of one to three PEs, every PE is in at most three, and the messages are colored
 * first-fit in order of their lower end — optimal for intervals, three colors for P > 2
 * (two for P = 2), where a ring whose rules only split westward and eastward took two.
 *
 * The vector of len words is cut into P chunks of c = ceil(len/P) words. The PE at ring
 * position q first copies it rotated left by q chunks into a scratch buffer, so its slot j
 * holds chunk (q + j) mod P. Then every round is the same code on every PE:
 *   reduce-scatter, round r in [0, P-1): receive-add slot r+1, send slot r (both async),
 *     wait — slot r+1 of q and slot r of q+1 hold the same chunk, so after P-1 rounds slot
 *     P-1 holds a fully reduced chunk;
 *   allgather, round r in [0, P-1): receive slot r, send slot r-1 (slot P-1 at r = 0), wait;
 * and the buffer is rotated back. Each phase's rounds are one loop (the slots are terms of
 * the round), each parity's rotations one loop over its PEs, and the routes are written per
 * progression of PEs with the same rules, so the program does not grow with the line.
 * Sums only (no async receive-max). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

static int ring_x(int P, int q) {
  int evens = (P + 1) / 2;
  return q < evens ? 2 * q : 2 * (P - 1 - q) + 1;
}

/* Copies the rotation: slot j of tmp <- chunk (q + j) mod P of sym (back = 0), or back. The
 * PEs at coordinate step*v + first hold ring position q = qs*v + q0 (evens: 2v, q = v; odds:
 * 2v + 1, q = P-1-v), so one loop over v does them all: its copies are guarded by the
 * coordinate and take q's offsets and counts as terms of v. With split = q c (capped at len):
 * tmp[0, len - split) <- sym[split, len) while q c < len, and tmp[(P-q) c, +split) <-
 * sym[0, split) for q > 0. */
static void rotate(wf_lower *L, const wf_coll_line *ln, int v, int first, int n, int qs, int q0, int sym, int tmp,
                   int64_t len, int64_t c, int P, int back) {
  if (n <= 0) return;
  wf_pe_term coord = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0), one = wf_term_affine(v, 2, first);
  wf_pe_term qc = wf_term_affine(v, qs * c, q0 * c); /* q c */
  wf_emit(L, &ln->fixed, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(v, 0)), wf_arg_int(0), wf_arg_int(n)});
  for (int part = 0; part < 3; part++) {
    wf_pe_guard g = wf_guard0();
    wf_guard_add(&g, coord, WF_CMP_EQ, one);
    wf_pe_arg t = wf_arg_sym(tmp), u = wf_arg_sym(sym), cnt;
    if (part == 0) { /* q c < len: the chunks from q on */
      wf_guard_add(&g, qc, WF_CMP_LT, wf_term_int((int32_t)len));
      u.term = qc;
      cnt = wf_arg_term(wf_term_affine(v, -qs * c, len - q0 * c));
    } else { /* the chunks before q, whole (q c < len) or up to len */
      wf_guard_add(&g, qc, part == 1 ? WF_CMP_LT : WF_CMP_GE, wf_term_int((int32_t)len));
      wf_guard_add(&g, wf_term_affine(v, qs, q0), WF_CMP_GT, wf_term_int(0));
      t.term = wf_term_affine(v, -qs * c, (P - q0) * c);
      cnt = part == 1 ? wf_arg_term(qc) : wf_arg_int(len);
    }
    wf_emit(L, &g, WF_PEOP_COPY, back ? (wf_pe_arg[]){u, t, cnt} : (wf_pe_arg[]){t, u, cnt});
  }
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
}

/* Both parities' rotations (loops over v: evens 2v, odds 2v + 1). */
static void rotate_all(wf_lower *L, const wf_coll_line *ln, int v, int sym, int tmp, int64_t len, int64_t c, int P,
                       int back) {
  rotate(L, ln, v, 0, (P + 1) / 2, 1, 0, sym, tmp, len, c, P, back);
  rotate(L, ln, v, 1, P / 2, -1, P - 1, sym, tmp, len, c, P, back);
}

/* Groups the line's coordinates 0..P-1 by kind[] into arithmetic progressions of equal kind
 * (wf_coll_ap_guard, with the line's fixed conditions if with_fixed): gs[i] and gk[i] for i <
 * the count returned. Regular patterns (the ring's interior evens and odds) make a few groups
 * whatever P. */
static int ap_groups(const wf_coll_line *ln, int P, const int *kind, int with_fixed, int *seen, wf_pe_guard *gs,
                     int *gk) {
  int ng = 0;
  memset(seen, 0, (size_t)P * sizeof *seen);
  for (int a = 0; a < P; a++) {
    if (seen[a]) continue;
    int b2 = a + 1;
    while (b2 < P && (seen[b2] || kind[b2] != kind[a])) b2++;
    int s = b2 < P ? b2 - a : 1, b = a;
    if (b2 < P) while (b + s < P && kind[b + s] == kind[a] && !seen[b + s]) b += s;
    for (int u = a; u <= b; u += s) seen[u] = 1;
    gs[ng] = wf_coll_ap_guard(ln, a, b, b > a ? s : 1, with_fixed);
    gk[ng++] = kind[a];
  }
  return ng;
}

/* One route rule of a PE on the ring: color, switch position, rx port, tx ports. */
typedef struct ring_rule {
  int col, pos, rx;
  unsigned tx;
} ring_rule;
enum { RING_MAX_RULES = 6 };

static void add_rule(ring_rule *r, int *n, int col, int pos, int rx, unsigned tx) {
  for (int i = 0; i < *n; i++)
    if (r[i].col == col && r[i].pos == pos && r[i].rx == rx) { /* a later rule overrides */
      r[i].tx = tx;
      return;
    }
  WF_ASSERT(*n < RING_MAX_RULES);
  r[(*n)++] = (ring_rule){col, pos, rx, tx};
  for (int i = *n - 1; i > 0; i--) { /* sorted by (col, pos, rx): equal sets compare equal */
    ring_rule a = r[i - 1], b = r[i];
    if (a.col < b.col || (a.col == b.col && (a.pos < b.pos || (a.pos == b.pos && a.rx < b.rx)))) break;
    r[i - 1] = b, r[i] = a;
  }
}

static const char *const ring_purpose[3] = {"ring allreduce (links, first color)",
                                            "ring allreduce (links, second color)",
                                            "ring allreduce (links, third color)"};

/* Past the budget (fewer free colors than the ring's): the ring keeps its routes on colors lent by
 * earlier collectives of the other axis (serialized; *west / *east set, returns 1), or the
 * allreduce is relayed through the PEs: a relay reduce into the middle of the line, then the
 * flooding broadcast back (each serialized or relayed in turn). Returns 0 when relayed (the
 * allreduce is lowered), -WF_EXIT_* on failure (reported). */
static int ring_fallback(wf_lower *L, const wf_coll_line *ln, const wf_coll_key *key, int fresh,
                         int sym, int64_t len, wf_loc loc, int nk, int *cols) {
  int P = ln->n, pos[3] = {0, 0, 0}, col[3] = {-1, -1, -1}, ok = 1;
  const char *ax = ln->axis == WF_AXIS_Y ? "y" : "x";
  char what[96];
  snprintf(what, sizeof what, "ring allreduce along %s over %d PEs", ax, P);
  for (int i = fresh; i < nk && ok; i++) {
    col[i] = wf_coll_cache_borrow_color(L, key, 1, 0, &pos[i]);
    ok = col[i] >= 0;
  }
  if (ok) {
    wf_coll_cache_serialized(L, what, "ring", col, pos, fresh, nk, loc);
    for (int i = 0; i < fresh; i++) col[i] = wf_lower_color_fresh(L, ring_purpose[i], loc);
    for (int i = 0; i < nk; i++) cols[i] = col[i];
    return 1;
  }
  wf_coll_cache_unborrow(L);
  /* relay: reduce into the middle, broadcast back; the prediction replaces the ring's */
  int root = (P - 1) / 2;
  wf_coll_params p = wf_coll_params_from_target(L->t);
  double ring = wf_coll_ring_lowered(P, len, &p);
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
  if ((int64_t)P * c > INT32_MAX / 2 || c > WF_PE_MAX_SCALE) {
    wf_error(loc, "ring allreduce of %lld words is too large", (long long)len);
    return WF_EXIT_NOFIT;
  }
  wf_coll_key key = {WF_COLL_KEY_RING, ln->axis, P, 0, ln->fixed, NULL, 0};
  int nk = P > 2 ? 3 : 2, nc = 0, cols[3] = {-1, -1, -1}, base[3]; /* set below */
  const int *cached = wf_coll_cache_find(L, &key, &nc);
  if (cached) {
    WF_ASSERT(nc == nk);
    for (int i = 0; i < nk; i++) cols[i] = cached[i];
  } else {
    int fresh = wf_lower_color_free(L);
    if (fresh < nk) {
      int rc = ring_fallback(L, ln, &key, fresh, sym, len, loc, nk, cols);
      if (rc <= 0) return -rc;
    } else {
      for (int i = 0; i < nk; i++) cols[i] = wf_lower_color_fresh(L, ring_purpose[i], loc);
    }
    wf_coll_cache_add(L, &key, cols, nk, 1);
  }
  for (int i = 0; i < nk; i++) base[i] = wf_coll_cache_base(L, cols[i]);
  wf_coll_cache_enter(L, ln);
  int lo = ln->axis == WF_AXIS_Y ? WF_DIR_N : WF_DIR_W, hi = ln->axis == WF_AXIS_Y ? WF_DIR_S : WF_DIR_E;
  unsigned R = 1u << WF_DIR_RAMP;
  int *q_of = calloc((size_t)P, sizeof *q_of), *mc = calloc((size_t)P, sizeof *mc);
  WF_ASSERT(q_of && mc); /* out of host memory: exit 7 */
  for (int q = 0; q < P; q++) q_of[ring_x(P, q)] = q;
  /* mc[x]: the color index of x's message (to its ring predecessor), first-fit by lower end */
  for (int lo_end = 0; lo_end < P; lo_end++)
    for (int x = 0; x < P; x++) {
      int to = ring_x(P, (q_of[x] + P - 1) % P), a = x < to ? x : to, b = x < to ? to : x;
      if (a != lo_end) continue;
      unsigned busy = 0;
      for (int u = 0; u < P; u++) { /* colored messages meeting [a, b] */
        int tu = ring_x(P, (q_of[u] + P - 1) % P), au = u < tu ? u : tu, bu = u < tu ? tu : u;
        int done = au < a || (au == a && u < x);
        if (done && au <= b && a <= bu) busy |= 1u << mc[u];
      }
      mc[x] = 0;
      while (busy >> mc[x] & 1) mc[x]++;
      WF_ASSERT(mc[x] < nk);
    }
  /* Routes: each message from x to its successor's coordinate, forwarded in between;
   * collected per PE, then written once per progression of PEs with the same rules. */
  ring_rule(*rules)[RING_MAX_RULES] = calloc((size_t)P, sizeof *rules);
  int *nr = calloc((size_t)P, sizeof *nr), *kind = malloc((size_t)P * sizeof *kind);
  int *seen = calloc((size_t)P, sizeof *seen), *gk = malloc((size_t)P * sizeof *gk);
  wf_pe_guard *gs = malloc((size_t)P * sizeof *gs);
  WF_ASSERT(rules && nr && kind && seen && gk && gs); /* out of host memory: exit 7 */
  for (int x = 0; x < P && !cached; x++) {
    int q = q_of[x], to = ring_x(P, (q + P - 1) % P);
    int col = cols[mc[x]], tx = to < x ? lo : hi, rxd = to < x ? hi : lo;
    int pos = base[mc[x]];
    add_rule(rules[x], &nr[x], col, pos, WF_DIR_RAMP, 1u << tx);
    int step = to < x ? -1 : 1;
    for (int u = x + step; u != to; u += step) add_rule(rules[u], &nr[u], col, pos, rxd, 1u << tx);
    add_rule(rules[to], &nr[to], col, pos, rxd, R);
  }
  if (!cached) {
    for (int x = 0; x < P; x++) { /* kind: the first PE with the same rules */
      kind[x] = x;
      for (int u = 0; u < x; u++)
        if (nr[u] == nr[x] && !memcmp(rules[u], rules[x], (size_t)nr[x] * sizeof rules[x][0])) {
          kind[x] = u;
          break;
        }
    }
    int ngr = ap_groups(ln, P, kind, 1, seen, gs, gk); /* route guards: with the line's own */
    for (int i = 0; i < ngr; i++)
      for (int k = 0; k < nr[gk[i]]; k++) {
        const ring_rule *r = &rules[gk[i]][k];
        wf_pe_class_add_route_pos(L->cls, &gs[i], r->col, r->pos, r->rx, r->tx);
      }
  }
  free(rules), free(nr);
  int tmp = wf_lower_temp(L, "$ring", (int64_t)P * c * 4);
  int done = wf_lower_done_task(L);
  if ((int64_t)P * c > len) { /* the last chunk's padding adds zeros */
    wf_pe_arg pad = wf_arg_sym(tmp);
    pad.off = (int32_t)len;
    wf_emit(L, &ln->fixed, WF_PEOP_ZERO, (wf_pe_arg[]){pad, wf_arg_int((int64_t)P * c - len)});
  }
  int v = wf_lower_var(L, "rg");
  rotate_all(L, ln, v, sym, tmp, len, c, P, 0);
  /* Kinds of PE by (send color, receive color), written as arithmetic progressions. */
  for (int x = 0; x < P; x++) {
    int from = ring_x(P, (q_of[x] + 1) % P);
    kind[x] = mc[x] * 3 + mc[from]; /* (send color, receive color) */
  }
  int ng = ap_groups(ln, P, kind, 0, seen, gs, gk); /* inside loops guarded by it */
  /* Rounds: reduce-scatter r in [0, P-1) receives-adds slot r+1 and sends slot r; allgather
   * r = 0 receives slot 0 and sends slot P-1, r in [1, P-1) slot r and r-1. Each part is one
   * loop over r (the slots are terms of it), guarded by the line's fixed conditions. */
  for (int part = 0; part < 3; part++) {
    int lo = part == 2 ? 1 : 0, hi = part == 1 ? 1 : P - 1;
    if (lo >= hi) continue;
    wf_emit(L, &ln->fixed, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(v, 0)), wf_arg_int(lo), wf_arg_int(hi)});
    wf_pe_arg rs = wf_arg_sym(tmp), ss = wf_arg_sym(tmp);
    rs.term = wf_term_affine(v, c, part == 0 ? c : 0);
    if (part == 1) ss.off = (int32_t)((int64_t)(P - 1) * c);
    else ss.term = wf_term_affine(v, c, part == 0 ? 0 : -c);
    for (int i = 0; i < ng; i++) {
      int cs = cols[gk[i] / 3], cr = cols[gk[i] % 3];
      wf_emit(L, &gs[i], part == 0 ? WF_PEOP_ARECVADD : WF_PEOP_ARECV,
              (wf_pe_arg[]){wf_arg_int(cr), rs, wf_arg_int(c), wf_arg_int(done)});
      wf_emit(L, &gs[i], WF_PEOP_ASEND, (wf_pe_arg[]){wf_arg_int(cs), ss, wf_arg_int(c), wf_arg_int(done)});
    }
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  rotate_all(L, ln, v, sym, tmp, len, c, P, 1);
  free(kind), free(seen), free(gs), free(gk);
  free(q_of), free(mc);
  return WF_EXIT_OK;
}
