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
 * Past the budget, a flooding broadcast is serialized onto a color an earlier collective
 * of the other axis holds (wf_coll_cache_borrow): the two never share an rx port (E/W vs
 * N/S), and their RAMP rules live at different switch positions, selected by one `swset`
 * per PE at the start of every phase that uses the shared color. The swset travels down
 * the ramp after the PE's own earlier wavelets, and a PE only reaches it once the earlier
 * phase is over there (it received the allreduce's broadcast, so every wavelet that had to
 * pass it has); a later phase's wavelets that reach a PE still in the earlier phase find
 * no rule for their port at the current position and wait. Only colors whose every user
 * is done (a broadcast, or a tree whose allreduce's broadcast followed; a plain reduce's
 * wavelets may still pass a PE that finished its part) are lent, so no swset strands a
 * wavelet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/lower_collective.h"
#include "waferc/diag.h"

typedef struct cache_entry {
  wf_coll_key key;
  int colors[32];
  int base[32]; /* switch position this pattern's routes start at, per color */
  int n;
  int switches; /* the pattern leaves routers at switch position 1 */
  int clean;    /* no router is left at position 1: reusable */
  int done;     /* its last use is over on every PE once the PE got past it (a broadcast,
                 * or a tree whose allreduce's broadcast followed): lendable */
} cache_entry;

struct wf_coll_cache {
  cache_entry *e;
  int n, cap;
  int reused, allocated;
  int last_tree; /* entry of the last tree reduce, -1 none */
  int enter;     /* entry last found or added (wf_coll_cache_enter), -1 none */
  int pend_color, pend_base; /* a borrowed color for the next add */
  uint32_t shared;           /* colors serialized between patterns */
};

static struct wf_coll_cache *cache(wf_lower *L) {
  if (!L->coll_cache) {
    L->coll_cache = calloc(1, sizeof *L->coll_cache);
    if (L->coll_cache) {
      L->coll_cache->last_tree = L->coll_cache->enter = L->coll_cache->pend_color = -1;
    }
  }
  return L->coll_cache;
}

static int same(const wf_coll_key *a, const wf_coll_key *b) {
  if (a->kind != b->kind || a->axis != b->axis || a->n != b->n || a->root != b->root) return 0;
  if (a->fixed.n != b->fixed.n ||
      memcmp(a->fixed.c, b->fixed.c, (size_t)a->fixed.n * sizeof a->fixed.c[0]))
    return 0;
  if (!a->parent != !b->parent) return 0;
  return !a->parent || !memcmp(a->parent, b->parent, (size_t)a->n * sizeof *a->parent);
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
    if (entry_ready(c, &c->e[i]) && same(&c->e[i].key, k)) {
      c->enter = i;
      *n_colors = c->e[i].n;
      c->reused += c->e[i].n;
      c->e[i].clean = !c->e[i].switches; /* this use leaves its switches set again */
      c->e[i].done = k->kind == 1; /* a tree: until its allreduce's broadcast */
      if (k->kind == 0) c->last_tree = i;
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
    if (!ne) return;
    c->e = ne;
    c->cap = cap;
  }
  cache_entry *e = &c->e[c->n];
  e->key = *k;
  e->key.parent = NULL;
  if (k->parent) {
    e->key.parent = malloc((size_t)k->n * sizeof *k->parent);
    if (!e->key.parent) return;
    memcpy(e->key.parent, k->parent, (size_t)k->n * sizeof *k->parent);
  }
  memcpy(e->colors, colors, (size_t)n * sizeof *colors);
  for (int i = 0; i < n; i++) e->base[i] = colors[i] == c->pend_color ? c->pend_base : 0;
  c->pend_color = -1;
  c->enter = c->n;
  e->n = n;
  e->switches = !clean;
  e->clean = clean;
  e->done = k->kind == 1;
  c->allocated += n;
  if (k->kind == 0) c->last_tree = c->n;
  c->n++;
}

void wf_coll_cache_reset_last(wf_lower *L, const wf_coll_line *ln) {
  struct wf_coll_cache *c = cache(L);
  if (!c || c->last_tree < 0) return;
  cache_entry *e = &c->e[c->last_tree];
  e->done = 1; /* called once the broadcast reached the PE: every reduce wavelet passed */
  if (e->clean) return;
  /* Every router of the line back to position 0 on the tree's colors: one control write
   * per color, issued after the PE received the broadcast (every reduce wavelet is past). */
  for (int i = 0; i < e->n; i++)
    wf_emit(L, &ln->fixed, WF_PEOP_SWSET,
            (wf_pe_arg[]){wf_arg_int(e->colors[i]), wf_arg_int(e->base[i])});
  e->clean = 1;
}

static const char *kind_text(const wf_coll_key *k) {
  static const char *const t[] = {"reduce tree", "flooding broadcast", "ring", "snake"};
  return k->kind >= 0 && k->kind < 4 ? t[k->kind] : "collective";
}

int wf_coll_cache_borrow(wf_lower *L, const wf_coll_key *k, const char *purpose, wf_loc loc) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return -1;
  int best = -1, best_pos = 0;
  for (int col = 0; col < 32; col++) {
    int any = 0, ok = 1, next = 0;
    for (int i = 0; i < c->n && ok; i++) {
      const cache_entry *e = &c->e[i];
      int j = uses(e, col);
      if (j < 0) continue;
      any = 1;
      /* only 1D lines of the other axis: their rx ports never meet ours */
      ok = e->done && e->key.kind <= 1 && e->key.axis != k->axis;
      int top = e->base[j] + (e->switches ? 2 : 1);
      if (top > next) next = top;
    }
    for (int p = 0; p < WF_COLOR_ROLES; p++) ok &= L->color[p] != col;
    if (!any || !ok || next >= L->t->switch_positions) continue;
    if (best < 0 || next < best_pos) best = col, best_pos = next;
  }
  if (best < 0) return -1;
  char users[256] = "";
  size_t u = 0;
  for (int i = 0; i < c->n && u + 48 < sizeof users; i++)
    if (uses(&c->e[i], best) >= 0)
      u += (size_t)snprintf(users + u, sizeof users - u, "%s%s along %s", u ? ", " : "",
                            kind_text(&c->e[i].key), c->e[i].key.axis == WF_AXIS_Y ? "y" : "x");
  wf_warning(loc,
             "target '%s' is out of colors: the %s along %s is serialized on color %d after "
             "the %s (switch position %d, one swset per PE and phase; no relay)",
             L->t->name, purpose, k->axis == WF_AXIS_Y ? "y" : "x", best, users, best_pos);
  c->shared |= 1u << best;
  c->pend_color = best;
  c->pend_base = best_pos;
  return best;
}

void wf_coll_cache_enter(wf_lower *L, const wf_coll_line *ln) {
  struct wf_coll_cache *c = L->coll_cache;
  if (!c || c->enter < 0) return;
  const cache_entry *e = &c->e[c->enter];
  for (int i = 0; i < e->n; i++)
    if (c->shared >> e->colors[i] & 1)
      wf_emit(L, &ln->fixed, WF_PEOP_SWSET,
              (wf_pe_arg[]){wf_arg_int(e->colors[i]), wf_arg_int(e->base[i])});
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
  free(c);
  L->coll_cache = NULL;
}

void wf_coll_cache_stats(const wf_lower *L, int *reused, int *allocated) {
  *reused = L->coll_cache ? L->coll_cache->reused : 0;
  *allocated = L->coll_cache ? L->coll_cache->allocated : 0;
}
