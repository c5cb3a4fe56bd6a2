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
 * chain's and the star's programs then do not grow with the line, and an arbitrary
 * (Auto-Gen) tree costs a few lines per distinct run. Trees that repeat at one scale or
 * several (the binary tree, two-phase, MeshGEMV's K-tree: wf_line_tree.by_shape) are colored
 * by classes of slots instead, so a class has one color wherever it repeats, and written by
 * shape (wf_shapes): each distinct rule and step once per [x>=a, x<=b, x%M in lo..hi] of PEs
 * that share it. Two-phase and the K-tree then stay bounded, the binary tree grows as log^2
 * of the line (docs/collectives-lowering.md has the measured sizes). */
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
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

/* ---- coloring of slots --------------------------------------------------------------- */

typedef struct pairs { int *a, *b; int n, cap; } pairs;

static int pair_add(pairs *p, int a, int b) {
  if (a < 0 || b < 0 || a == b) return 0;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 256;
    int *na = realloc(p->a, (size_t)cap * sizeof *na), *nb = realloc(p->b, (size_t)cap * sizeof *nb);
    if (na) p->a = na;
    if (nb) p->b = nb;
    WF_ASSERT(na && nb); /* out of host memory: exit 7 */
    p->cap = cap;
  }
  p->a[p->n] = a;
  p->b[p->n] = b;
  p->n++;
  return 0;
}

/* slot id of (v, side), or -1 if v has no child on that side. */
static int slot_of(const coll_role *r, int v, int side) { return r[v].nk[side] ? 2 * v + side : -1; }

/* Slots in the order they are colored: by coordinate, or (by_class) by class — the side, the
 * children, the farthest child's distance D and the slot's coordinate modulo 2D (a binary
 * tree's level; a chain link's parity; every other group leader of two-phase), so that each
 * class can take one color wherever it repeats. */
typedef struct slot_key { int d, side, nk, res, v, slot; } slot_key;
static int slot_key_cmp(const void *va, const void *vb) {
  const slot_key *a = va, *b = vb;
  int x[5] = {a->d, a->side, a->nk, a->res, a->v}, y[5] = {b->d, b->side, b->nk, b->res, b->v};
  for (int i = 0; i < 5; i++)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}
static int same_slot_class(const slot_key *a, const slot_key *b) {
  return a->d == b->d && a->side == b->side && a->nk == b->nk && a->res == b->res;
}

/* Colors the slots greedily, in coordinate order (by_class 0) or by class, shortest slots
 * first (1) or longest first (2). A class takes the first color none of its members'
 * neighbours has, unless its members are neighbours themselves (then they go one by one) or,
 * when thrifty, that color would be a new one and every member fits an old one: a class of
 * one or two slots (thrifty 1) or any class (2) then goes member by member too (fewer colors,
 * a less regular program). Returns the colors used or -1. */
static int color_slots(const wf_line_tree *t, coll_role *r, int *slot_color, int by_class, int thrifty) {
  int n = t->n, ns = 2 * n, rc = -1, nkeys = 0;
  pairs pr = {0};
  int *deg = NULL, *adj = NULL, *fill = NULL, *cls = NULL;
  slot_key *key = NULL;
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
  deg = calloc((size_t)ns + 1, sizeof *deg), adj = malloc((size_t)(2 * pr.n + 1) * sizeof *adj);
  fill = calloc((size_t)ns, sizeof *fill), key = calloc((size_t)ns, sizeof *key);
  cls = malloc((size_t)ns * sizeof *cls);
  WF_ASSERT(deg && adj && fill && key && cls); /* out of host memory: exit 7 */
  for (int i = 0; i < pr.n; i++) deg[pr.a[i] + 1]++, deg[pr.b[i] + 1]++;
  for (int i = 0; i < ns; i++) deg[i + 1] += deg[i];
  for (int i = 0; i < pr.n; i++) {
    adj[deg[pr.a[i]] + fill[pr.a[i]]++] = pr.b[i];
    adj[deg[pr.b[i]] + fill[pr.b[i]]++] = pr.a[i];
  }
  for (int s = 0; s < ns; s++) slot_color[s] = cls[s] = -1;
  for (int v = 0; v < n; v++) { /* the farthest child's distance per slot */
    int p = t->parent[v];
    if (p >= 0 && abs(v - p) > key[2 * p + (v < p ? LO : HI)].d) key[2 * p + (v < p ? LO : HI)].d = abs(v - p);
  }
  for (int s = 0; s < ns; s++) {
    if (!r[s / 2].nk[s % 2]) continue;
    slot_key k = {by_class ? key[s].d : 0, s % 2, r[s / 2].nk[s % 2], 0, s / 2, s};
    if (by_class) k.res = k.v % (2 * k.d), k.d = by_class == 2 ? -k.d : k.d; /* longest first */
    else k.d = k.side = k.nk = 0, k.res = s; /* coordinate order, one slot per class */
    key[nkeys++] = k;
  }
  qsort(key, (size_t)nkeys, sizeof *key, slot_key_cmp);
  for (int i = 0, c = -1; i < nkeys; i++) {
    if (!i || !same_slot_class(&key[i], &key[i - 1])) c++;
    cls[key[i].slot] = c;
  }
  int used = 0;
  for (int i = 0; i < nkeys;) {
    int j = i + 1, inner = 0;
    while (j < nkeys && same_slot_class(&key[i], &key[j])) j++;
    uint64_t forbid = 0;
    for (int m = i; m < j; m++) {
      int s = key[m].slot;
      for (int k = deg[s]; k < deg[s + 1]; k++) {
        if (slot_color[adj[k]] >= 0) forbid |= 1ull << slot_color[adj[k]];
        inner |= cls[adj[k]] == cls[s];
      }
    }
    /* one color for the class only if it is not a new one that members one by one avoid */
    if ((thrifty > 1 || (thrifty && j - i <= 2)) && !inner && (forbid >> used & 1) == 0 && (forbid & ((1ull << used) - 1)) == (1ull << used) - 1) {
      int fits = 1;
      for (int m = i; m < j && fits; m++) {
        int s = key[m].slot;
        uint64_t f = 0;
        for (int k = deg[s]; k < deg[s + 1]; k++)
          if (slot_color[adj[k]] >= 0) f |= 1ull << slot_color[adj[k]];
        fits = (f & ((1ull << used) - 1)) != (1ull << used) - 1;
      }
      inner = fits;
    }
    for (int m = i; m < j; m++) {
      int s = key[m].slot;
      if (inner) { /* its members meet (or fit the colors there are): one by one */
        forbid = 0;
        for (int k = deg[s]; k < deg[s + 1]; k++)
          if (slot_color[adj[k]] >= 0) forbid |= 1ull << slot_color[adj[k]];
      }
      int c = 0;
      while (forbid >> c & 1) c++;
      if (c >= MAX_LCOLORS) {
        used = -1;
        goto done;
      }
      slot_color[s] = c;
      if (c + 1 > used) used = c + 1;
    }
    i = j;
  }
done:
  rc = used;
out:
  free(deg);
  free(adj);
  free(fill);
  free(key);
  free(cls);
  free(pr.a);
  free(pr.b);
  return rc;
}

/* ---- guards ---------------------------------------------------------------------------- */

wf_pe_guard wf_coll_ap_guard(const wf_coll_line *ln, int a, int b, int s, int with_fixed) {
  wf_pe_guard g = wf_guard0();
  if (a == b) {
    wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_EQ, wf_term_int(a));
  } else {
    if (a > 0) wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_GE, wf_term_int(a));
    if (b < ln->n - 1) wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_LE, wf_term_int(b));
    if (s > 1) wf_guard_add(&g, wf_coll_coord(ln, s), WF_CMP_EQ, wf_term_int(a % s));
  }
  for (int i = 0; with_fixed && i < ln->fixed.n; i++) wf_guard_add(&g, ln->fixed.c[i].a, ln->fixed.c[i].cmp, ln->fixed.c[i].b);
  return g;
}

/* ---- emission -------------------------------------------------------------------------- */

static int role_switches(const coll_role *r) {
  return !r->root && (r->pass[1 - r->out_side] >> r->co & 1);
}

/* What a role writes, as keys: a route rule (logical color, switch position past the base,
 * rx, tx) and a step of code (what, logical colors a and b, a count). A sink takes them: the
 * emitter under one guard (a group of PEs with the role) or the shape collector (one PE). */
enum { IT_COMBINE, IT_STREAM, IT_SEND, IT_SENDADV, IT_SWSET };
#define RULE_KEY(lc, pos, rx, tx) ((uint32_t)(lc) << 12 | (uint32_t)(pos) << 11 | (uint32_t)(rx) << 8 | (uint32_t)(tx))
#define ITEM_KEY(it, a, b, cnt) ((uint32_t)(it) << 26 | (uint32_t)(a) << 21 | (uint32_t)(b) << 16 | (uint32_t)(cnt))
typedef struct role_sink {
  void (*rule)(void *ctx, uint32_t key);
  void (*step)(void *ctx, uint32_t key);
  void *ctx;
  int pow2;  /* children read in counts of powers of two, largest first (13 = 8 + 4 + 1): a
                tree whose PEs read many different counts (Auto-Gen's) then has a few steps
                per color instead of one per count; loops and false guards cost no cycle */
} role_sink;

static void role_items(const wf_coll_line *ln, const coll_role *r, int routes, const role_sink *k) {
  unsigned R = 1u << WF_DIR_RAMP;
  int near = r->root ? -1 : r->out_side, far = near < 0 ? -1 : 1 - near;
  int needs_switch = role_switches(r);
  if (routes) {
    for (int side = 0; side < 2; side++)
      if (r->ci[side] >= 0) k->rule(k->ctx, RULE_KEY(r->ci[side], 0, wf_coll_dir(ln, side), R));
    for (int lc = 0; lc < MAX_LCOLORS; lc++)
      for (int from = 0; from < 2; from++) {
        if (!(r->pass[from] >> lc & 1)) continue;
        unsigned tx = 1u << wf_coll_dir(ln, 1 - from);
        if (!r->root && lc == r->co && from == far) continue; /* waits: position 1 below */
        k->rule(k->ctx, RULE_KEY(lc, 0, wf_coll_dir(ln, from), tx));
        if (!r->root && lc == r->co && needs_switch) k->rule(k->ctx, RULE_KEY(lc, 1, wf_coll_dir(ln, from), tx));
      }
    if (!r->root) {
      k->rule(k->ctx, RULE_KEY(r->co, 0, WF_DIR_RAMP, 1u << wf_coll_dir(ln, near)));
      if (needs_switch) k->rule(k->ctx, RULE_KEY(r->co, 1, wf_coll_dir(ln, far), 1u << wf_coll_dir(ln, near)));
    }
  }
  /* code: children nearest first, low side then high side; the last one streams on */
  int total = r->nk[LO] + r->nk[HI];
  for (int side = 0; side < 2; side++) {
    int nk = r->nk[side];
    if (!nk) continue;
    int last_here = side == HI || !r->nk[HI];
    int plain = last_here && !r->root ? nk - 1 : nk;
    if (!k->pow2 && plain) k->step(k->ctx, ITEM_KEY(IT_COMBINE, r->ci[side], 0, plain));
    for (int bit = 1 << 15; k->pow2 && bit; bit >>= 1)
      if (plain & bit) k->step(k->ctx, ITEM_KEY(IT_COMBINE, r->ci[side], 0, bit));
    if (plain < nk) k->step(k->ctx, ITEM_KEY(IT_STREAM, r->ci[side], r->co, 0));
  }
  if (r->root) return;
  if (!total) k->step(k->ctx, ITEM_KEY(needs_switch ? IT_SENDADV : IT_SEND, r->co, 0, 0));
  else if (needs_switch) k->step(k->ctx, ITEM_KEY(IT_SWSET, r->co, 0, 0));
}

/* The emitter. pb[lc]: the switch position the tree's rules for logical color lc start at
 * (0 unless the color was lent past the budget); "position 1" is pb + 1. */
typedef struct role_emit {
  wf_lower *L;
  const wf_pe_guard *g;
  const int *phys, *pb;
  int sym;
  int64_t len;
  wf_peop combine;
} role_emit;

static void emit_rule(void *ctx, uint32_t key) {
  const role_emit *e = ctx;
  int lc = key >> 12, pos = key >> 11 & 1, rx = key >> 8 & 7;
  wf_pe_class_add_route_pos(e->L->cls, e->g, e->phys[lc], e->pb[lc] + pos, rx, key & 0xff);
}

static void emit_step(void *ctx, uint32_t key) {
  const role_emit *e = ctx;
  wf_lower *L = e->L;
  int it = key >> 26, a = e->phys[key >> 21 & 31], b = e->phys[key >> 16 & 31], cnt = key & 0xffff;
  wf_pe_arg sl[2] = {wf_arg_sym(e->sym), wf_arg_int(e->len)};
  switch (it) {
  case IT_COMBINE: {
    wf_pe_arg rargs[3] = {wf_arg_int(a), sl[0], sl[1]};
    if (cnt > 2) {
      int var = wf_pe_class_find_var(L->cls, "ck", 1);
      WF_ASSERT(var >= 0); /* more loop variables than a PE class holds */
      wf_emit(L, e->g, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(var, 0)), wf_arg_int(0), wf_arg_int(cnt)});
      wf_emit(L, NULL, e->combine, rargs);
      wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    } else {
      for (int i = 0; i < cnt; i++) wf_emit(L, e->g, e->combine, rargs);
    }
    break;
  }
  case IT_STREAM:
    wf_emit(L, e->g, e->combine == WF_PEOP_RECVMAX ? WF_PEOP_MAXSEND : WF_PEOP_ADDSEND,
            (wf_pe_arg[]){wf_arg_int(a), wf_arg_int(b), sl[0], sl[1]});
    break;
  case IT_SEND:
  case IT_SENDADV:
    wf_emit(L, e->g, it == IT_SEND ? WF_PEOP_SEND : WF_PEOP_SENDADV, (wf_pe_arg[]){wf_arg_int(a), sl[0], sl[1]});
    break;
  default:
    wf_emit(L, e->g, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(a), wf_arg_int(e->pb[key >> 21 & 31] + 1)});
  }
}

static void emit_role(role_emit *e, const wf_coll_line *ln, const coll_role *r, const wf_pe_guard *g,
                      int routes) {
  e->g = g;
  role_sink k = {emit_rule, emit_step, e, 0};
  role_items(ln, r, routes, &k);
}

/* The collector: one PE's rules and steps. */
typedef struct role_collect { wf_shapes *s; int pe, err; } role_collect;
static void collect_rule(void *ctx, uint32_t key) {
  role_collect *c = ctx;
  c->err |= wf_shapes_rule(c->s, c->pe, key);
}
static void collect_step(void *ctx, uint32_t key) {
  role_collect *c = ctx;
  c->err |= wf_shapes_step(c->s, c->pe, key);
}
static void shaped_rule(void *ctx, const wf_pe_guard *g, uint32_t key) {
  role_emit *e = ctx;
  e->g = g;
  emit_rule(e, key);
}
static void shaped_step(void *ctx, const wf_pe_guard *g, uint32_t key) {
  role_emit *e = ctx;
  e->g = g;
  emit_step(e, key);
}

/* The planned shapes of the tree's roles (wf_shapes_plan done; *lines its line count), or
 * NULL when its PEs' step orders disagree or memory runs out. */
static wf_shapes *plan_shapes(const wf_coll_line *ln, const wf_line_tree *t, const coll_role *r,
                              int routes, wf_pe_class *sets, int *lines) {
  wf_shapes *s = wf_shapes_new(t->n);
  if (s && sets) wf_shapes_sets(s, sets);
  role_collect c = {s, 0, !s};
  role_sink k = {collect_rule, collect_step, &c, t->by_shape == 2};
  for (int v = 0; v < t->n && !c.err; v++) {
    c.pe = v;
    role_items(ln, &r[v], routes, &k);
    if (t->parent[v] >= 0) {
      wf_shapes_period(s, abs(v - t->parent[v]));
      wf_shapes_period(s, 2 * abs(v - t->parent[v]));
    }
  }
  if (c.err || (*lines = wf_shapes_plan(s)) < 0) {
    wf_shapes_free(s);
    return NULL;
  }
  return s;
}

/* Writes the tree by shapes; 0, or -1 (nothing written): the caller writes it by roles. */
static int emit_by_shape(role_emit *e, const wf_coll_line *ln, const wf_line_tree *t,
                         const coll_role *r, int routes) {
  int lines;
  wf_shapes *s = plan_shapes(ln, t, r, routes, e->L->cls, &lines);
  if (!s) return -1;
  wf_shapes_emit(s, ln, shaped_rule, shaped_step, e);
  wf_shapes_free(s);
  return 0;
}

/* The roles' colors from the slots' (r's tree fields set). */
static void set_colors(const wf_line_tree *t, coll_role *r, const int *slot_color) {
  for (int v = 0; v < t->n; v++) r[v].pass[LO] = r[v].pass[HI] = 0, r[v].co = -1;
  for (int v = 0; v < t->n; v++) {
    for (int s = 0; s < 2; s++) r[v].ci[s] = slot_color[2 * v + s];
    int p = t->parent[v];
    if (p < 0) continue;
    int s = v < p ? LO : HI, col = slot_color[2 * p + s];
    r[v].co = col;
    int lo = v < p ? v + 1 : p + 1, hi = v < p ? p - 1 : v - 1;
    for (int u = lo; u <= hi; u++) r[u].pass[s] |= 1u << col;
  }
}

/* A tree written by shapes is colored by class, four ways (classes shortest or longest
 * first; a class of one or two slots, or any class, member by member when that saves a
 * color). The fewest colors win, then the fewest program lines, but a way that splits any
 * class only when its program is no longer than the regular ways' (it is longer for the
 * binary tree, shorter for MeshGEMV's K-tree); when the winner needs more colors than are
 * free, the fewest colors of all. Returns
 * the colors (slot_color filled, *variant which way), -1 past MAX_LCOLORS, -2 out of memory. */
static int choose_coloring(wf_lower *L, const wf_coll_line *ln, const wf_line_tree *t, coll_role *r,
                           int *slot_color, int *variant) {
  enum { NV = 4 };
  int n = t->n, used[NV], lines[NV], best = -1, fewest = -1;
  int *cand = malloc((size_t)NV * 2 * n * sizeof *cand);
  WF_ASSERT(cand); /* out of host memory: exit 7 */
  for (int k = 0; k < NV; k++) {
    int *sc = cand + (size_t)k * 2 * n;
    lines[k] = -1;
    used[k] = color_slots(t, r, sc, k % 2 ? 2 : 1, k < 2 ? 1 : 2);
    if (used[k] < 0) continue;
    set_colors(t, r, sc);
    wf_shapes *s = plan_shapes(ln, t, r, 1, NULL, &lines[k]);
    if (!s) lines[k] = -1;
    wf_shapes_free(s);
    if (fewest < 0 || used[k] < used[fewest] ||
        (used[k] == used[fewest] && (unsigned)lines[k] < (unsigned)lines[fewest]))
      fewest = k;
  }
  int regular = -1; /* the fewest lines of the two regular ways */
  for (int k = 0; k < 2; k++)
    if (lines[k] >= 0 && (regular < 0 || lines[k] < regular)) regular = lines[k];
  for (int k = 0; k < NV; k++) {
    if (lines[k] < 0 || (k >= 2 && lines[k] > regular)) continue;
    if (best < 0 || used[k] < used[best] || (used[k] == used[best] && lines[k] < lines[best])) best = k;
  }
  if (best < 0 || used[best] > wf_lower_color_free(L)) best = fewest;
  if (best >= 0) memcpy(slot_color, cand + (size_t)best * 2 * n, (size_t)2 * n * sizeof *cand);
  free(cand);
  *variant = best;
  return best < 0 ? -1 : used[best];
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
  /* an allreduce's broadcast that will find no free color must still be able to borrow one
   * beside the serialized tree (the tree's own colors are not done until it has passed);
   * else relay, whose color the broadcast can take at the next position */
  if (ok && wf_coll_cache_reserved(L) > wf_lower_color_free(L) - fresh) {
    wf_coll_key bk = {WF_COLL_KEY_BCAST, ln->axis, ln->n, tree_root(t), ln->fixed, NULL, 0};
    ok = wf_coll_cache_can_borrow(L, &bk, 1);
  }
  if (ok) {
    char what[96];
    snprintf(what, sizeof what, "reduce tree along %s over %d PEs", ax, ln->n);
    wf_coll_cache_serialized(L, what, "tree", phys, pos, fresh, used, loc);
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
  WF_ASSERT(r && slot_color && grp); /* out of host memory: exit 7 */
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
  int used = -1, rc = 0, variant = 0;
  if (t->by_shape != 1) used = color_slots(t, r, slot_color, 0, 0);
  else if ((used = choose_coloring(L, ln, t, r, slot_color, &variant)) == -2) {
    wf_error(loc, "out of memory lowering a reduce over %d PEs", n);
    rc = WF_EXIT_NOFIT;
    goto out;
  }
  if (used < 0) {
    wf_error(loc, "reduce over %d PEs needs more than %d colors for its tree", n, MAX_LCOLORS);
    rc = WF_EXIT_NOFIT;
    goto out;
  }
  set_colors(t, r, slot_color);
  int phys[MAX_LCOLORS], pb[MAX_LCOLORS], routes = 1, n_cached = 0, clean = 1;
  for (int v = 0; v < n; v++) clean &= !role_switches(&r[v]);
  wf_coll_key key = {WF_COLL_KEY_TREE, ln->axis, n, -1, ln->fixed, t->parent, t->by_shape == 1 ? 1 + variant : 0};
  const int *cached = wf_coll_cache_find(L, &key, &n_cached);
  if (cached && n_cached == used) {
    memcpy(phys, cached, (size_t)used * sizeof *phys);
    routes = 0; /* an identical tree earlier: its colors and routes serve this phase too */
  } else {
    int fresh = wf_lower_color_free(L) - wf_coll_cache_reserved(L);
    if (fresh < 0) fresh = 0;
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
  role_emit em = {L, NULL, phys, pb, sym, len, combine};
  if (t->by_shape && !emit_by_shape(&em, ln, t, r, routes)) goto out;
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
      emit_role(&em, ln, &r[a], &g, routes);
      if (b2 < 0) break;
    }
  }
out:
  free(r);
  free(slot_color);
  free(grp);
  return rc;
}
