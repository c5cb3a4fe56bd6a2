/* Color reuse across phases for the collectives library (see lower_collective.h).
 *
 * Every collective adds routes to the class's routers; two collectives may share a color
 * only if they never disagree on a route. The simplest sound case, and the common one (a
 * softmax's and a norm's row allreduces, every layer's MeshGEMV), is a collective whose
 * routes are identical to an earlier one's: it reuses those colors and adds nothing. The
 * phases are ordered by the program (every PE finishes one before it starts the next), so
 * wavelets of the two never mix on a color; a tree that left routers at switch position 1
 * is reusable only after those routers were put back to 0.
 *
 * Past the budget, a collective is serialized onto colors earlier collectives hold
 * (wf_coll_cache_borrow_color) when the two never accept a wavelet on the same router port:
 * 1D lines of different axes (E/W vs N/S), or a relay reduce and the broadcast from its
 * root on the same line (at every PE the one receives from the side the other does not).
 * Their rules live at different switch positions, selected by one `swset` per PE at the
 * start of every phase that uses the shared color. The swset travels down the ramp after
 * the PE's own earlier wavelets, and a PE only reaches it once the earlier phase is over
 * there (it received the allreduce's broadcast, so every wavelet that had to pass it has);
 * a later phase's wavelets that reach a PE still in the earlier phase find no rule for
 * their port at the current position and wait. Only colors whose every user is done (a
 * broadcast, a relay, or a tree whose allreduce's broadcast followed; a plain reduce's
 * wavelets may still pass a PE that finished its part) are lent, so no swset strands a
 * wavelet. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

typedef struct cache_entry {
  wf_coll_key key;
  int colors[32];
  int base[32]; /* switch position this pattern's routes start at, per color */
  int n;
  int switches; /* the pattern leaves routers at switch position 1 */
  int width;    /* switch positions its rules take (from base) */
  int clean;    /* no router is left at position 1: reusable */
  int done;     /* its last use is over on every PE once the PE got past it (a broadcast,
                 * or a tree whose allreduce's broadcast followed): lendable */
  int stamp;    /* wf_coll_cache_stamp when last found or added */
  uint32_t merged; /* colors it shares at a reduce's own positions (wf_coll_cache_merge):
                    * no swset on entry, and never reused by find (see there) */
  int mode;        /* lowered on the region (0) or on a band of that height (lower_band.c) */
} cache_entry;

struct wf_coll_cache {
  cache_entry *e;
  int n, cap;
  int stamp;
  int reused, allocated;
  int last_tree; /* entry of the last tree reduce, -1 none */
  int enter;     /* entry last found or added (wf_coll_cache_enter), -1 none */
  int last;      /* the same, kept after wf_coll_cache_enter (wf_coll_cache_merge) */
  uint32_t pend;             /* colors borrowed for the next add ... */
  uint32_t pend_merged;      /* ... of those, shared at the lender's own positions (no swset) */
  int pend_base[32];         /* ... and the switch position each starts at */
  uint32_t shared;           /* colors serialized between patterns */
  uint32_t touched;          /* colors of the collectives found or added since the last take */
  double extra;              /* predicted cycles the fallbacks added, for the current op */
  char note[160];            /* what they were, for the op's explain */
  double relay_cycles;       /* the last tree reduce was relayed: its prediction, else -1 */
  int reserve;               /* free colors the next tree reduce leaves (its broadcast's) */
  wf_coll_fallback *fb;      /* every fallback, for the manifest */
  int n_fb, cap_fb;
};

static struct wf_coll_cache *cache(wf_lower *L) {
  if (!L->coll_cache) {
    L->coll_cache = calloc(1, sizeof *L->coll_cache);
    WF_ASSERT(L->coll_cache);
    L->coll_cache->last_tree = L->coll_cache->enter = L->coll_cache->last = -1;
    L->coll_cache->relay_cycles = -1;
  }
  return L->coll_cache;
}

/* The kind of rows a collective is lowered for: 0 the region's, else a band's height (a
 * band's routes read y mod h and stop at its edges, backend/collectives/lower_band.c). */
static int mode_of(const wf_lower *L) { return L->band >= 0 ? L->h : 0; }

/* A line along x on every row alike: its routes are the same lowered for the region or for a
 * band, so both may use one entry. */
static int any_rows(const wf_coll_key *k) {
  if (k->axis != WF_AXIS_X || k->kind == WF_COLL_KEY_SNAKE || k->kind == WF_COLL_KEY_BCAST2D) return 0;
  for (int i = 0; i < k->fixed.n; i++) {
    const wf_pe_cond *c = &k->fixed.c[i];
    if (c->a.kind == WF_TERM_Y || c->a.kind == WF_TERM_H || c->b.kind == WF_TERM_Y || c->b.kind == WF_TERM_H) return 0;
  }
  return 1;
}

static int same_mode(const wf_lower *L, const cache_entry *e) { return e->mode == mode_of(L) || any_rows(&e->key); }

void wf_coll_cache_forget_last(wf_lower *L) {
  if (L->coll_cache) L->coll_cache->last_tree = L->coll_cache->enter = L->coll_cache->last = -1;
}

static int same(const wf_coll_key *a, const wf_coll_key *b) {
  if (a->kind != b->kind || a->axis != b->axis || a->n != b->n || a->root != b->root ||
      a->coloring != b->coloring)
    return 0;
  if (a->fixed.n != b->fixed.n ||
      memcmp(a->fixed.c, b->fixed.c, (size_t)a->fixed.n * sizeof a->fixed.c[0]))
    return 0;
  if (!a->parent != !b->parent) return 0;
  return !a->parent || !memcmp(a->parent, b->parent, (size_t)a->n * sizeof *a->parent);
}

/* Kinds whose every wavelet has passed a PE's router once the PE finished its part: a
 * flooding broadcast (the PE received the whole message, and its router forwarded it as it
 * arrived), a relay (every hop ends at the next PE's ramp, nothing passes through). */
static int done_at_end(int kind) {
  return kind == WF_COLL_KEY_BCAST || kind == WF_COLL_KEY_RELAY || kind == WF_COLL_KEY_BCAST2D;
}

/* The router ports a pattern accepts wavelets from (RAMP aside), over all its PEs. */
static unsigned rx_ports(const wf_coll_key *k) {
  unsigned x = 1u << WF_DIR_E | 1u << WF_DIR_W, y = 1u << WF_DIR_N | 1u << WF_DIR_S;
  if (k->kind == WF_COLL_KEY_SNAKE || k->kind == WF_COLL_KEY_BCAST2D)
    return x | y;
  return k->axis == WF_AXIS_Y ? y : x;
}

static int same_line(const wf_coll_key *a, const wf_coll_key *b) {
  return a->axis == b->axis && a->n == b->n && a->root == b->root && a->fixed.n == b->fixed.n &&
         !memcmp(a->fixed.c, b->fixed.c, (size_t)a->fixed.n * sizeof a->fixed.c[0]);
}

/* Can pattern `k` take rules on a color `e` holds, at other switch positions? Only if no
 * router accepts a wavelet of both on one port (a wavelet of one arriving while the router
 * is still at the other's position must find no rule and wait). A relay reduce into r and
 * the flooding broadcast from r on the same line qualify: below r the relay receives from
 * the low side and the broadcast from the high side, above r the reverse, and the root
 * receives the broadcast from its own ramp. */
static int compatible(const wf_coll_key *e, const wf_coll_key *k) {
  if (!(rx_ports(e) & rx_ports(k))) return 1;
  int a = e->kind, b = k->kind;
  return ((a == WF_COLL_KEY_RELAY && b == WF_COLL_KEY_BCAST) ||
          (a == WF_COLL_KEY_BCAST && b == WF_COLL_KEY_RELAY)) &&
         same_line(e, k);
}

static int tree_root_of(const wf_coll_key *k);

/* `k` runs only on the roots of the reduce `e` (the column through the roots of every row's
 * tree, as an X-Y reduce does): nothing of `e` passes a root's router, and a root is done
 * with `e` once it holds the sum, so `e` need not be done everywhere to lend there. */
static int roots_only(const wf_coll_key *e, const wf_coll_key *k) {
  if ((e->kind != WF_COLL_KEY_TREE && e->kind != WF_COLL_KEY_RELAY) || e->fixed.n || k->fixed.n != 1 ||
      k->axis == e->axis)
    return 0;
  const wf_pe_cond *cd = &k->fixed.c[0];
  int term = e->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X;
  return cd->cmp == WF_CMP_EQ && cd->a.kind == term && !cd->a.mod && !cd->a.k && !cd->a.mul &&
         cd->b.kind == WF_TERM_INT && cd->b.k == tree_root_of(e);
}

static int uses(const cache_entry *e, int color) {
  for (int j = 0; j < e->n; j++)
    if (e->colors[j] == color) return j;
  return -1;
}

/* Every pattern on `color` has finished with its switches (nothing left mid-tree). */
static int settled(const struct wf_coll_cache *c, int color) {
  for (int i = 0; i < c->n; i++)
    if (uses(&c->e[i], color) >= 0 && !c->e[i].done) return 0;
  return 1;
}

static int entry_ready(const struct wf_coll_cache *c, const cache_entry *e) {
  if (!e->clean) return 0;
  for (int j = 0; j < e->n; j++)
    if ((c->shared >> e->colors[j] & 1) && !settled(c, e->colors[j])) return 0;
  return 1;
}

const int *wf_coll_cache_find(wf_lower *L, const wf_coll_key *k, int *n_colors) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return NULL;
  for (int i = 0; i < c->n; i++)
    if (!c->e[i].merged && same_mode(L, &c->e[i]) && entry_ready(c, &c->e[i]) && same(&c->e[i].key, k)) {
      c->enter = c->last = i;
      c->e[i].stamp = ++c->stamp;
      for (int j = 0; j < c->e[i].n; j++) c->touched |= 1u << c->e[i].colors[j];
      *n_colors = c->e[i].n;
      c->reused += c->e[i].n;
      c->e[i].clean = !c->e[i].switches; /* this use leaves its switches set again */
      c->e[i].done = done_at_end(k->kind); /* a tree: until its allreduce's broadcast */
      if (k->kind == WF_COLL_KEY_TREE || k->kind == WF_COLL_KEY_RELAY) c->last_tree = i;
      return c->e[i].colors;
    }
  return NULL;
}

void wf_coll_cache_add(wf_lower *L, const wf_coll_key *k, const int *colors, int n, int clean) {
  struct wf_coll_cache *c = cache(L);
  if (!c || n > 32) return; /* not cached: later phases allocate their own colors */
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    cache_entry *ne = realloc(c->e, (size_t)cap * sizeof *ne);
    WF_ASSERT(ne); /* out of host memory: exit 7, not a colour left unshared */
    c->e = ne;
    c->cap = cap;
  }
  cache_entry *e = &c->e[c->n];
  e->key = *k;
  e->mode = mode_of(L);
  e->key.parent = NULL;
  if (k->parent) {
    e->key.parent = malloc((size_t)k->n * sizeof *k->parent);
    if (!e->key.parent) return;
    memcpy(e->key.parent, k->parent, (size_t)k->n * sizeof *k->parent);
  }
  memcpy(e->colors, colors, (size_t)n * sizeof *colors);
  for (int i = 0; i < n; i++)
    e->base[i] = colors[i] >= 0 && colors[i] < 32 && (c->pend >> colors[i] & 1) ? c->pend_base[colors[i]] : 0;
  c->shared |= c->pend & ~c->pend_merged; /* every phase on them selects its position first */
  e->merged = c->pend_merged;
  c->pend = c->pend_merged = 0;
  for (int i = 0; i < n; i++) c->touched |= 1u << colors[i];
  e->stamp = ++c->stamp;
  c->enter = c->last = c->n;
  e->n = n;
  e->switches = !clean;
  e->clean = clean;
  /* a relay whose PEs between leaf and root forward takes 2 positions even when it leaves
   * no router switched (they swset back; collective_relay.c) */
  e->width = e->switches || (k->kind == WF_COLL_KEY_RELAY && (k->root > 1 || k->root < k->n - 2)) ? 2 : 1;
  e->done = done_at_end(k->kind);
  c->allocated += n;
  if (k->kind == WF_COLL_KEY_TREE || k->kind == WF_COLL_KEY_RELAY) c->last_tree = c->n;
  c->n++;
}

int wf_coll_cache_reset_last(wf_lower *L, const wf_coll_line *ln) {
  struct wf_coll_cache *c = cache(L);
  if (!c || c->last_tree < 0) return 0;
  cache_entry *e = &c->e[c->last_tree];
  e->done = 1; /* called once the broadcast reached the PE: every reduce wavelet passed */
  if (e->clean) return 0;
  /* Every router of the line back to position 0 on the tree's colors: one control write
   * per color, issued after the PE received the broadcast (every reduce wavelet is past). */
  for (int i = 0; i < e->n; i++)
    wf_emit(L, &ln->fixed, WF_PEOP_SWSET,
            (wf_pe_arg[]){wf_arg_int(e->colors[i]), wf_arg_int(e->base[i])});
  e->clean = 1;
  return e->n;
}

static const char *kind_text(const wf_coll_key *k) {
  static const char *const t[] = {"reduce tree", "flooding broadcast", "ring", "snake",
                                  "relay reduce", "snake relay", "2D flooding broadcast"};
  return k->kind >= 0 && k->kind < 7 ? t[k->kind] : "collective";
}

void wf_coll_cache_users(const wf_lower *L, int color, char *buf, size_t cap) {
  const struct wf_coll_cache *c = L->coll_cache;
  size_t u = 0;
  buf[0] = 0;
  for (int i = 0; c && i < c->n && u + 48 < cap; i++)
    if (uses(&c->e[i], color) >= 0)
      u += (size_t)snprintf(buf + u, cap - u, "%s%s along %s", u ? ", " : "", kind_text(&c->e[i].key),
                            rx_ports(&c->e[i].key) == 0xfu ? "the region"
                            : c->e[i].key.axis == WF_AXIS_Y ? "y" : "x");
}

/* The color `k` could take `need` switch positions on (the lowest free position wins), or -1. */
static int borrow_scan(wf_lower *L, struct wf_coll_cache *c, const wf_coll_key *k, int need, uint32_t avoid,
                       int *pos) {
  int best = -1, best_pos = 0;
  for (int col = 0; col < 32; col++) {
    if ((avoid >> col & 1) || (c->pend >> col & 1)) continue;
    int any = 0, ok = 1, next = 0;
    for (int i = 0; i < c->n && ok; i++) {
      const cache_entry *e = &c->e[i];
      int j = uses(e, col);
      if (j < 0) continue;
      any = 1;
      /* never across the region's rows and a band's: their rows run different ops */
      ok = e->mode == mode_of(L) && (e->done || roots_only(&e->key, k)) && compatible(&e->key, k);
      int top = e->base[j] + e->width;
      if (top > next) next = top;
    }
    for (int p = 0; p < WF_COLOR_ROLES; p++) ok &= L->color[p] != col;
    if (!any || !ok || next + need > L->t->switch_positions) continue;
    if (best < 0 || next < best_pos) best = col, best_pos = next;
  }
  *pos = best_pos;
  return best;
}

int wf_coll_cache_borrow_color(wf_lower *L, const wf_coll_key *k, int need, uint32_t avoid, int *pos) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return -1;
  int best = borrow_scan(L, c, k, need, avoid, pos);
  if (best < 0) return -1;
  c->pend |= 1u << best;
  c->pend_base[best] = *pos;
  return best;
}

int wf_coll_cache_can_borrow(wf_lower *L, const wf_coll_key *k, int need) {
  struct wf_coll_cache *c = cache(L);
  int pos;
  return c && borrow_scan(L, c, k, need, 0, &pos) >= 0;
}

void wf_coll_cache_unborrow(wf_lower *L) {
  if (L->coll_cache) L->coll_cache->pend = L->coll_cache->pend_merged = 0;
}

static int tree_root_of(const wf_coll_key *k) {
  if (k->kind == WF_COLL_KEY_RELAY) return k->root;
  for (int v = 0; k->parent && v < k->n; v++)
    if (k->parent[v] < 0) return v;
  return -1;
}

/* A merged broadcast is never found by wf_coll_cache_find: it is sound right after its
 * reduce, whose routers sit at the reduce's positions (the broadcast's rules are there too),
 * but a swset to select them at a later phase could pull a router out from under the
 * reduce's last pass-through wavelets. The same merge is made again instead, and its rules
 * are not written twice (*have_routes). */
int wf_coll_cache_merge(wf_lower *L, const wf_coll_key *k, int *pos, int *both, int *have_routes) {
  struct wf_coll_cache *c = cache(L);
  if (!c || k->kind != WF_COLL_KEY_BCAST) return -1;
  /* Only the collective lowered just before: its phase has just set every router of the
   * line to its own positions, where the broadcast's rules go. A tree further back may have
   * lent its color since, and a swset of the borrower left routers where the broadcast has
   * no rule (nothing would move them back: a merged broadcast selects no position). */
  if (c->last < 0) return -1;
  const cache_entry *e = &c->e[c->last];
  if (e->key.kind != WF_COLL_KEY_TREE && e->key.kind != WF_COLL_KEY_RELAY) return -1;
  wf_coll_key line = e->key;
  line.root = tree_root_of(&e->key);
  line.kind = k->kind;
  if (!e->key.fixed.n) line.fixed = k->fixed; /* a tree over every line covers k's */
  if (!same_line(&line, k)) return -1;
  int col = e->colors[0];
  *have_routes = 0;
  for (int j = 0; j < c->n; j++)
    *have_routes |= (c->e[j].merged >> col & 1) && c->e[j].base[0] == e->base[0] && same(&c->e[j].key, k);
  c->pend |= 1u << col;
  c->pend_merged |= 1u << col;
  c->pend_base[col] = e->base[0];
  *pos = e->base[0];
  *both = e->switches;
  return col;
}

void wf_coll_cache_fallback(wf_lower *L, int color, int pos, int relayed, const char *what, wf_loc loc) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return;
  if (c->n_fb == c->cap_fb) {
    int cap = c->cap_fb ? 2 * c->cap_fb : 8;
    wf_coll_fallback *nf = realloc(c->fb, (size_t)cap * sizeof *nf);
    WF_ASSERT(nf);
    c->fb = nf;
    c->cap_fb = cap;
  }
  wf_coll_fallback *f = &c->fb[c->n_fb++];
  memset(f, 0, sizeof *f);
  f->color = color;
  f->pos = pos;
  f->relayed = relayed;
  snprintf(f->what, sizeof f->what, "%s", what);
  if (loc.file) snprintf(f->loc, sizeof f->loc, "%s:%u:%u", loc.file, loc.line, loc.col);
}

int wf_coll_cache_n_fallbacks(const wf_lower *L) { return L->coll_cache ? L->coll_cache->n_fb : 0; }

const wf_coll_fallback *wf_coll_cache_get_fallback(const wf_lower *L, int i) {
  return L->coll_cache && i >= 0 && i < L->coll_cache->n_fb ? &L->coll_cache->fb[i] : NULL;
}

int wf_coll_cache_borrow(wf_lower *L, const wf_coll_key *k, const char *purpose, wf_loc loc) {
  int pos = 0, best = wf_coll_cache_borrow_color(L, k, 1, 0, &pos);
  if (best < 0) return -1;
  char users[256];
  wf_coll_cache_users(L, best, users, sizeof users);
  wf_warning(loc,
             "target '%s' is out of colors: the %s along %s is serialized on color %d at switch "
             "position %d after the %s (one swset per PE and phase; no relay)",
             L->t->name, purpose, k->axis == WF_AXIS_Y ? "y" : "x", best, pos, users);
  char what[96];
  snprintf(what, sizeof what, "%s along %s", purpose, k->axis == WF_AXIS_Y ? "y" : "x");
  wf_coll_cache_fallback(L, best, pos, 0, what, loc);
  wf_coll_cache_note(L, 0, "%s serialized on c%d p%d", what, best, pos);
  return best;
}

void wf_coll_cache_enter(wf_lower *L, const wf_coll_line *ln) {
  struct wf_coll_cache *c = L->coll_cache;
  if (!c || c->enter < 0) return;
  const cache_entry *e = &c->e[c->enter];
  for (int i = 0; i < e->n; i++)
    if ((c->shared >> e->colors[i] & 1) && !(e->merged >> e->colors[i] & 1)) {
      wf_emit(L, &ln->fixed, WF_PEOP_SWSET,
              (wf_pe_arg[]){wf_arg_int(e->colors[i]), wf_arg_int(e->base[i])});
      c->extra += 1; /* the swset takes the ramp for a cycle before the phase's first wavelet */
    }
  c->enter = -1;
}

int wf_coll_cache_base(const wf_lower *L, int color) {
  const struct wf_coll_cache *c = L->coll_cache;
  if (!c || c->enter < 0) return 0;
  int j = uses(&c->e[c->enter], color);
  return j < 0 ? 0 : c->e[c->enter].base[j];
}

int wf_coll_cache_shared(const wf_lower *L, int color) {
  return L->coll_cache && color >= 0 && color < 32 && (L->coll_cache->shared >> color & 1);
}

void wf_coll_cache_free(wf_lower *L) {
  struct wf_coll_cache *c = L->coll_cache;
  if (!c) return;
  for (int i = 0; i < c->n; i++) free(c->e[i].key.parent);
  free(c->e);
  free(c->fb);
  free(c);
  L->coll_cache = NULL;
}

void wf_coll_cache_stats(const wf_lower *L, int *reused, int *allocated) {
  *reused = L->coll_cache ? L->coll_cache->reused : 0;
  *allocated = L->coll_cache ? L->coll_cache->allocated : 0;
}

void wf_coll_cache_note(wf_lower *L, double cycles, const char *fmt, ...) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return;
  c->extra += cycles;
  size_t u = strlen(c->note);
  if (u + 8 >= sizeof c->note) return;
  if (u) u += (size_t)snprintf(c->note + u, sizeof c->note - u, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->note + u, sizeof c->note - u, fmt, ap);
  va_end(ap);
}

void wf_coll_cache_serialized(wf_lower *L, const char *what, const char *tag, const int *col,
                              const int *pos, int fresh, int n, wf_loc loc) {
  char users[256];
  for (int i = fresh; i < n; i++) {
    wf_coll_cache_users(L, col[i], users, sizeof users);
    wf_warning(loc, "target '%s' is out of colors: the %s (%d colors, %d free) is serialized on "
                    "color %d at switch position %d after the %s (one swset per PE and phase)",
               L->t->name, what, n, fresh, col[i], pos[i], users);
    wf_coll_cache_fallback(L, col[i], pos[i], 0, what, loc);
    wf_coll_cache_note(L, 0, "%s serialized on c%d p%d", tag, col[i], pos[i]);
  }
}

double wf_coll_cache_take_extra(wf_lower *L, char *note, size_t cap) {
  struct wf_coll_cache *c = L->coll_cache;
  if (cap) note[0] = 0;
  if (!c) return 0;
  double x = c->extra;
  if (cap) snprintf(note, cap, "%s", c->note);
  c->extra = 0;
  c->note[0] = 0;
  return x;
}

void wf_coll_cache_reserve(wf_lower *L, int n) {
  struct wf_coll_cache *c = cache(L);
  if (c) c->reserve = n;
}

int wf_coll_cache_reserved(const wf_lower *L) { return L->coll_cache ? L->coll_cache->reserve : 0; }

void wf_coll_cache_set_relay(wf_lower *L, double cycles) {
  struct wf_coll_cache *c = cache(L);
  if (c) c->relay_cycles = cycles;
}

int wf_coll_cache_relay_extra(wf_lower *L, double orig) {
  struct wf_coll_cache *c = L->coll_cache;
  if (!c || c->relay_cycles < 0) return 0;
  c->extra += c->relay_cycles - orig;
  c->relay_cycles = -1;
  return 1;
}

uint32_t wf_coll_cache_take_touched(wf_lower *L) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return 0;
  uint32_t t = c->touched;
  c->touched = 0;
  return t;
}

int wf_coll_cache_holdable(const wf_lower *L, int color, const wf_pe_route *rules, int n, unsigned posm) {
  const wf_pe_class *cls = L->cls;
  for (int y = 0; y < L->h; y++)
    for (int x = 0; x < L->w; x++) {
      wf_pe_env env = wf_pe_env_at(cls, x, y, L->w, L->h);
      /* the ports a wavelet can arrive on: the ramp and links from neighbours in the region */
      unsigned live = 1u << WF_DIR_RAMP | (x > 0 ? 1u << WF_DIR_W : 0) | (x < L->w - 1 ? 1u << WF_DIR_E : 0) |
                      (y > 0 ? 1u << WF_DIR_N : 0) | (y < L->h - 1 ? 1u << WF_DIR_S : 0);
      for (int p = 0; p < WF_PE_MAX_POS; p++) {
        if (!(posm >> p & 1)) continue;
        int tx[WF_DIR_COUNT]; /* per rx: tx set + 1, the last matching rule's (0: none) */
        memset(tx, 0, sizeof tx);
        for (int i = 0; i < cls->n_routes; i++) {
          const wf_pe_route *r = &cls->routes[i];
          if (r->color == color && r->pos == p && wf_guard_eval(&r->guard, &env)) tx[r->rx] = (int)(r->tx & live) + 1;
        }
        for (int i = 0; i < n; i++)
          if (wf_guard_eval(&rules[i].guard, &env)) tx[rules[i].rx] = (int)(rules[i].tx & live) + 1;
        int first = 0;
        for (int d = 0; d < WF_DIR_COUNT; d++) {
          if (tx[d] <= 1 || !(live >> d & 1)) continue; /* no rule, or nothing leaves: not rx */
          if (!first) first = tx[d];
          else if (tx[d] != first) return 0;
        }
      }
    }
  return 1;
}

int wf_coll_cache_ports_free(const wf_lower *L, int color, const wf_pe_route *rules, int n) {
  const wf_pe_class *cls = L->cls;
  for (int y = 0; y < L->h; y++)
    for (int x = 0; x < L->w; x++) {
      wf_pe_env env = wf_pe_env_at(cls, x, y, L->w, L->h);
      unsigned held = 0, want = 0;
      for (int i = 0; i < cls->n_routes; i++)
        if (cls->routes[i].color == color && wf_guard_eval(&cls->routes[i].guard, &env))
          held |= 1u << cls->routes[i].rx;
      for (int i = 0; i < n; i++)
        if (wf_guard_eval(&rules[i].guard, &env)) want |= 1u << rules[i].rx;
      if (held & want) return 0;
    }
  return 1;
}

unsigned wf_coll_cache_positions(const wf_lower *L, int color) {
  unsigned m = 0;
  for (int i = 0; i < L->cls->n_routes; i++)
    if (L->cls->routes[i].color == color) m |= 1u << L->cls->routes[i].pos;
  return m;
}

int wf_coll_cache_stamp(wf_lower *L) {
  struct wf_coll_cache *c = cache(L);
  return c ? c->stamp : 0;
}

void wf_coll_cache_done_since(wf_lower *L, int stamp) {
  struct wf_coll_cache *c = L->coll_cache;
  for (int i = 0; c && i < c->n; i++)
    if (c->e[i].stamp > stamp) c->e[i].done = 1;
}
