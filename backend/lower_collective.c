/* The generic line-tree reduce (see lower_collective.h) and the flooding broadcasts.
 *
 * Why the scheme is correct for any tree: a PE v reads its children side by side, nearest
 * first. A farther child's message passes the nearer child's router, whose color for that
 * direction stays at switch position 0 (accepting only its own RAMP) until its own last
 * wavelet has gone (sendadv, or swset after an addsend); so the messages reach v in the
 * order v reads them. Colors: every "slot" (a PE and the side its children sit on) gets one
 * color, different from (a) the other slot of the same PE, (b) the slot the PE itself sends
 * into, and (c) every slot whose messages pass this PE entering from that side: then no
 * router ever has to tell two streams apart on one color and port (Reduce §8.2's rule).
 *
 * Roles repeat along a line (a chain alternates two roles), so PEs with equal roles are
 * grouped and each group written as arithmetic progressions: [x>=a, x<=b, x%s==a%s]. The
 * chain's and the star's programs then do not grow with the line; the binary tree's and
 * two-phase's do (their greedy slot colors are not periodic, so roles that differ in a color
 * do not merge), and an arbitrary (Auto-Gen) tree costs a few lines per distinct run
 * (docs/collectives-lowering.md has the measured sizes). */
#include <stdlib.h>
#include <string.h>

#include "backend/lower_collective.h"
#include "waferc/diag.h"

enum { LO = 0, HI = 1, MAX_LCOLORS = 32 };

typedef struct coll_role {
  int root;          /* 1 = the tree's root */
  int out_side;      /* side the parent lies on (LO/HI) */
  int co;            /* logical color of the message to the parent, -1 at the root */
  int ci[2];         /* logical color of the children on each side, -1 = none */
  int nk[2];         /* children on each side */
  uint32_t pass[2];  /* logical colors passing through, by the side they arrive from */
} coll_role;

int wf_lower_color_fresh(wf_lower *L, const char *purpose, wf_loc loc) {
  int c = wf_lower_color_try(L, purpose);
  if (c >= 0) return c;
  wf_lower_color_exhausted(L, purpose, 1, loc);
  return -1;
}

static int color_taken(const wf_lower *L, int c) {
  if (L->t->reserved_colors >> c & 1) return 1;
  for (int p = 0; p < WF_COLOR_ROLES; p++)
    if (L->color[p] == c) return 1;
  for (int i = 0; i < L->cls->n_colors; i++)
    if (L->cls->colors[i].color == c) return 1;
  return 0;
}

int wf_lower_color_free(const wf_lower *L) {
  int n = 0;
  for (int c = 0; c < L->t->colors && c < 32; c++) n += !color_taken(L, c);
  return n;
}

int wf_lower_color_exhausted(wf_lower *L, const char *what, int needed, wf_loc loc) {
  char used[512] = "";
  size_t u = 0;
  for (int i = 0; i < L->cls->n_colors && u + 64 < sizeof used; i++) {
    char users[200];
    wf_coll_cache_users(L, L->cls->colors[i].color, users, sizeof users);
    u += (size_t)snprintf(used + u, sizeof used - u, "%sc%d (%s)", u ? ", " : "", L->cls->colors[i].color,
                          users[0] ? users : L->cls->colors[i].purpose);
  }
  int usable = 0;
  for (int c = 0; c < L->t->colors && c < 32; c++) usable += !(L->t->reserved_colors >> c & 1);
  wf_error(loc, "target '%s' has no free color left for the %s (it needs %d; %d usable colors, "
                "%d in use, none can be shared at a free switch position nor relayed on): %s",
           L->t->name, what, needed, usable, L->cls->n_colors, used[0] ? used : "none");
  return WF_EXIT_NOFIT;
}

int wf_lower_color_try(wf_lower *L, const char *purpose) {
  for (int c = 0; c < L->t->colors && c < 32; c++) {
    if (color_taken(L, c)) continue;
    wf_pe_class_add_color(L->cls, c, purpose);
    return c;
  }
  return -1;
}

/* ---- coloring of slots --------------------------------------------------------------- */

typedef struct pairs { int *a, *b; int n, cap; } pairs;

static int pair_add(pairs *p, int a, int b) {
  if (a < 0 || b < 0 || a == b) return 0;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 256;
    int *na = realloc(p->a, (size_t)cap * sizeof *na), *nb = realloc(p->b, (size_t)cap * sizeof *nb);
    if (na) p->a = na;
    if (nb) p->b = nb;
    if (!na || !nb) return -1;
    p->cap = cap;
  }
  p->a[p->n] = a;
  p->b[p->n] = b;
  p->n++;
  return 0;
}

/* slot id of (v, side), or -1 if v has no child on that side. */
static int slot_of(const coll_role *r, int v, int side) { return r[v].nk[side] ? 2 * v + side : -1; }

/* Greedy coloring of the slots in coordinate order; returns the colors used or -1. */
static int color_slots(const wf_line_tree *t, coll_role *r, int *slot_color) {
  int n = t->n, ns = 2 * n, rc = -1;
  pairs pr = {0};
  for (int v = 0; v < n; v++) {
    if (pair_add(&pr, slot_of(r, v, LO), slot_of(r, v, HI))) goto out;
    int p = t->parent[v];
    if (p < 0) continue;
    int s = v < p ? LO : HI, y = 2 * p + s;
    for (int side = 0; side < 2; side++)
      if (pair_add(&pr, slot_of(r, v, side), y)) goto out;
    /* The message passes every PE strictly between v and p, entering from v's side. */
    int lo = v < p ? v + 1 : p + 1, hi = v < p ? p - 1 : v - 1;
    for (int u = lo; u <= hi; u++)
      if (pair_add(&pr, slot_of(r, u, s), y)) goto out;
  }
  int *deg = calloc((size_t)ns + 1, sizeof *deg), *adj = malloc((size_t)(2 * pr.n + 1) * sizeof *adj);
  if (!deg || !adj) {
    free(deg);
    free(adj);
    goto out;
  }
  for (int i = 0; i < pr.n; i++) deg[pr.a[i] + 1]++, deg[pr.b[i] + 1]++;
  for (int i = 0; i < ns; i++) deg[i + 1] += deg[i];
  int *fill = calloc((size_t)ns, sizeof *fill);
  if (!fill) {
    free(deg);
    free(adj);
    goto out;
  }
  for (int i = 0; i < pr.n; i++) {
    adj[deg[pr.a[i]] + fill[pr.a[i]]++] = pr.b[i];
    adj[deg[pr.b[i]] + fill[pr.b[i]]++] = pr.a[i];
  }
  int used = 0;
  for (int s = 0; s < ns; s++) slot_color[s] = -1;
  for (int s = 0; s < ns; s++) {
    if (!r[s / 2].nk[s % 2]) continue;
    uint64_t forbid = 0;
    for (int k = deg[s]; k < deg[s + 1]; k++)
      if (slot_color[adj[k]] >= 0) forbid |= 1ull << slot_color[adj[k]];
    int c = 0;
    while (forbid >> c & 1) c++;
    if (c >= MAX_LCOLORS) {
      used = -1;
      break;
    }
    slot_color[s] = c;
    if (c + 1 > used) used = c + 1;
  }
  free(deg);
  free(adj);
  free(fill);
  rc = used;
out:
  free(pr.a);
  free(pr.b);
  return rc;
}

/* ---- guards ---------------------------------------------------------------------------- */

static wf_pe_term coord(const wf_coll_line *ln, int mod) {
  wf_pe_term t = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  t.mod = (uint16_t)mod;
  return t;
}

wf_pe_guard wf_coll_ap_guard(const wf_coll_line *ln, int a, int b, int s, int with_fixed) {
  wf_pe_guard g = wf_guard0();
  if (a == b) {
    wf_guard_add(&g, coord(ln, 0), WF_CMP_EQ, wf_term_int(a));
  } else {
    if (a > 0) wf_guard_add(&g, coord(ln, 0), WF_CMP_GE, wf_term_int(a));
    if (b < ln->n - 1) wf_guard_add(&g, coord(ln, 0), WF_CMP_LE, wf_term_int(b));
    if (s > 1) wf_guard_add(&g, coord(ln, s), WF_CMP_EQ, wf_term_int(a % s));
  }
  for (int i = 0; with_fixed && i < ln->fixed.n; i++) wf_guard_add(&g, ln->fixed.c[i].a, ln->fixed.c[i].cmp, ln->fixed.c[i].b);
  return g;
}

static int dir_of(const wf_coll_line *ln, int side) {
  if (ln->axis == WF_AXIS_Y) return side == LO ? WF_DIR_N : WF_DIR_S;
  return side == LO ? WF_DIR_W : WF_DIR_E;
}

/* ---- emission -------------------------------------------------------------------------- */

static int role_switches(const coll_role *r) {
  return !r->root && (r->pass[1 - r->out_side] >> r->co & 1);
}

/* pb[lc]: the switch position the tree's rules for logical color lc start at (0 unless the
 * color was lent past the budget); "position 1" below is pb + 1. */
static void emit_role(wf_lower *L, const wf_coll_line *ln, const coll_role *r, const wf_pe_guard *g,
                      const int *phys, const int *pb, int sym, int64_t len, wf_peop combine,
                      int routes) {
  wf_pe_class *c = L->cls;
  unsigned R = 1u << WF_DIR_RAMP;
  int near = r->root ? -1 : r->out_side, far = near < 0 ? -1 : 1 - near;
  int needs_switch = role_switches(r);
  if (routes) {
  for (int side = 0; side < 2; side++)
    if (r->ci[side] >= 0)
      wf_pe_class_add_route_pos(c, g, phys[r->ci[side]], pb[r->ci[side]], dir_of(ln, side), R);
  for (int lc = 0; lc < MAX_LCOLORS; lc++)
    for (int from = 0; from < 2; from++) {
      if (!(r->pass[from] >> lc & 1)) continue;
      unsigned tx = 1u << dir_of(ln, 1 - from);
      if (!r->root && lc == r->co && from == far) continue; /* waits: position 1 below */
      wf_pe_class_add_route_pos(c, g, phys[lc], pb[lc], dir_of(ln, from), tx);
      if (!r->root && lc == r->co && needs_switch)
        wf_pe_class_add_route_pos(c, g, phys[lc], pb[lc] + 1, dir_of(ln, from), tx);
    }
  if (!r->root) {
    wf_pe_class_add_route_pos(c, g, phys[r->co], pb[r->co], WF_DIR_RAMP, 1u << dir_of(ln, near));
    if (needs_switch)
      wf_pe_class_add_route_pos(c, g, phys[r->co], pb[r->co] + 1, dir_of(ln, far), 1u << dir_of(ln, near));
  }
  }
  /* code: children nearest first, low side then high side; the last one streams on */
  int total = r->nk[LO] + r->nk[HI];
  wf_peop stream = combine == WF_PEOP_RECVMAX ? WF_PEOP_MAXSEND : WF_PEOP_ADDSEND;
  for (int side = 0; side < 2; side++) {
    int k = r->nk[side];
    if (!k) continue;
    int last_here = side == HI || !r->nk[HI];
    int plain = last_here && !r->root ? k - 1 : k;
    wf_pe_arg rargs[3] = {wf_arg_int(phys[r->ci[side]]), wf_arg_sym(sym), wf_arg_int(len)};
    if (plain > 2) {
      int var = wf_pe_class_find_var(c, "ck", 1);
      WF_ASSERT(var >= 0); /* more loop variables than a PE class holds */
      wf_emit(L, g, WF_PEOP_LOOP,
              (wf_pe_arg[]){wf_arg_term(wf_term_var(var, 0)), wf_arg_int(0), wf_arg_int(plain)});
      wf_emit(L, NULL, combine, rargs);
      wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    } else {
      for (int i = 0; i < plain; i++) wf_emit(L, g, combine, rargs);
    }
    if (plain < k)
      wf_emit(L, g, stream,
              (wf_pe_arg[]){wf_arg_int(phys[r->ci[side]]), wf_arg_int(phys[r->co]), wf_arg_sym(sym),
                            wf_arg_int(len)});
  }
  if (r->root) return;
  if (!total)
    wf_emit(L, g, needs_switch ? WF_PEOP_SENDADV : WF_PEOP_SEND,
            (wf_pe_arg[]){wf_arg_int(phys[r->co]), wf_arg_sym(sym), wf_arg_int(len)});
  else if (needs_switch)
    wf_emit(L, g, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(phys[r->co]), wf_arg_int(pb[r->co] + 1)});
}

static int tree_root(const wf_line_tree *t) {
  for (int v = 0; v < t->n; v++)
    if (t->parent[v] < 0) return v;
  return t->n - 1;
}

/* Past the budget (fewer than `used` free colors): the tree keeps its shape when the colors
 * it lacks can be lent by earlier collectives (serialized: phys[] filled, returns 1, the
 * caller adds the entry and emits); otherwise the reduce is relayed through the PEs on one
 * color (returns 0) or nothing fits (returns -WF_EXIT_NOFIT, reported). */
static int tree_fallback(wf_lower *L, const wf_coll_line *ln, const wf_line_tree *t, int used,
                         int fresh, int clean, const wf_coll_key *key, int *phys, int sym,
                         int64_t len, wf_peop combine, wf_loc loc) {
  const char *ax = ln->axis == WF_AXIS_Y ? "y" : "x";
  uint32_t lent = 0;
  int pos[MAX_LCOLORS], ok = 1;
  for (int i = fresh; i < used && ok; i++) {
    phys[i] = wf_coll_cache_borrow_color(L, key, clean ? 1 : 2, lent, &pos[i]);
    ok = phys[i] >= 0;
    if (ok) lent |= 1u << phys[i];
  }
  if (ok) {
    char users[256], what[96];
    snprintf(what, sizeof what, "reduce tree along %s over %d PEs", ax, ln->n);
    for (int i = fresh; i < used; i++) {
      wf_coll_cache_users(L, phys[i], users, sizeof users);
      wf_warning(loc, "target '%s' is out of colors: the %s (%d colors, %d free) is serialized on "
                      "color %d at switch position %d after the %s (one swset per PE and phase)",
                 L->t->name, what, used, fresh, phys[i], pos[i], users);
      wf_coll_cache_fallback(L, phys[i], pos[i], 0, what, loc);
      wf_coll_cache_note(L, 0, "tree serialized on c%d p%d", phys[i], pos[i]);
    }
    for (int i = 0; i < fresh; i++) phys[i] = wf_lower_color_fresh(L, "reduce tree", loc);
    return 1;
  }
  wf_coll_cache_unborrow(L);
  char what[96];
  snprintf(what, sizeof what, "reduce tree along %s over %d PEs (%d colors, %d free)", ax, ln->n,
           used, fresh);
  int rc = wf_lower_relay_reduce(L, ln, tree_root(t), sym, len, combine, what, loc);
  return rc ? -rc : 0;
}

int wf_lower_tree_reduce(wf_lower *L, const wf_coll_line *ln, const wf_line_tree *t, int sym,
                         int64_t len, wf_peop combine, wf_loc loc, int *colors_out) {
  int n = t->n;
  WF_ASSERT(n == ln->n && ln->fixed.n <= 1);
  if (colors_out) *colors_out = 0;
  if (n <= 1) return 0;
  coll_role *r = calloc((size_t)n, sizeof *r);
  int *slot_color = malloc((size_t)2 * n * sizeof *slot_color);
  int *grp = malloc((size_t)n * sizeof *grp);
  if (!r || !slot_color || !grp) {
    free(r);
    free(slot_color);
    free(grp);
    wf_error(loc, "out of memory lowering a reduce over %d PEs", n);
    return WF_EXIT_NOFIT;
  }
  for (int v = 0; v < n; v++) {
    int p = t->parent[v];
    r[v].root = p < 0;
    r[v].co = -1;
    if (p >= 0) {
      WF_ASSERT(p < n && p != v);
      r[p].nk[v < p ? LO : HI]++;
      r[v].out_side = p < v ? LO : HI;
    }
  }
  int used = color_slots(t, r, slot_color), rc = 0;
  if (used < 0) {
    wf_error(loc, "reduce over %d PEs needs more than %d colors for its tree", n, MAX_LCOLORS);
    rc = WF_EXIT_NOFIT;
    goto out;
  }
  for (int v = 0; v < n; v++) {
    for (int s = 0; s < 2; s++) r[v].ci[s] = slot_color[2 * v + s];
    int p = t->parent[v];
    if (p < 0) continue;
    int s = v < p ? LO : HI, col = slot_color[2 * p + s];
    r[v].co = col;
    int lo = v < p ? v + 1 : p + 1, hi = v < p ? p - 1 : v - 1;
    for (int u = lo; u <= hi; u++) r[u].pass[s == LO ? LO : HI] |= 1u << col;
  }
  int phys[MAX_LCOLORS], pb[MAX_LCOLORS], routes = 1, n_cached = 0, clean = 1;
  for (int v = 0; v < n; v++) clean &= !role_switches(&r[v]);
  wf_coll_key key = {WF_COLL_KEY_TREE, ln->axis, n, -1, ln->fixed, t->parent};
  const int *cached = wf_coll_cache_find(L, &key, &n_cached);
  if (cached && n_cached == used) {
    memcpy(phys, cached, (size_t)used * sizeof *phys);
    routes = 0; /* an identical tree earlier: its colors and routes serve this phase too */
  } else {
    int fresh = wf_lower_color_free(L);
    if (fresh < used) { /* past the budget: serialize onto lent colors, else relay */
      rc = tree_fallback(L, ln, t, used, fresh, clean, &key, phys, sym, len, combine, loc);
      if (rc <= 0) {
        if (colors_out && !rc) *colors_out = 1;
        rc = -rc;
        goto out;
      }
      rc = 0;
    } else {
      for (int i = 0; i < used; i++) phys[i] = wf_lower_color_fresh(L, "reduce tree", loc);
    }
    wf_coll_cache_add(L, &key, phys, used, clean);
  }
  for (int i = 0; i < used; i++) pb[i] = wf_coll_cache_base(L, phys[i]);
  wf_coll_cache_enter(L, ln); /* a color lent to a later phase: select its position again */
  if (colors_out) *colors_out = used;
  /* Group equal roles, then write each group as arithmetic progressions. */
  for (int v = 0; v < n; v++) grp[v] = -1;
  for (int v = 0; v < n; v++) {
    if (grp[v] != -1) continue;
    for (int u = v; u < n; u++)
      if (grp[u] == -1 && !memcmp(&r[u], &r[v], sizeof r[v])) grp[u] = v;
    for (;;) {
      int a = -1, b2 = -1;
      for (int u = v; u < n; u++)
        if (grp[u] == v) {
          if (a < 0) a = u;
          else if (b2 < 0) b2 = u;
        }
      if (a < 0) break;
      int s = b2 < 0 ? 1 : b2 - a, b = a;
      while (b + s < n && grp[b + s] == v) b += s;
      if (b2 < 0) b = a;
      for (int u = a; u <= b; u += s) grp[u] = -2; /* emitted */
      wf_pe_guard g = wf_coll_ap_guard(ln, a, b, b > a ? s : 1, 1);
      emit_role(L, ln, &r[a], &g, phys, pb, sym, len, combine, routes);
      if (b2 < 0) break;
    }
  }
out:
  free(r);
  free(slot_color);
  free(grp);
  return rc;
}
