/* Color reuse across phases for the collectives library (see lower_collective.h).
 *
 * Every collective adds routes to the class's routers; two collectives may share a color
 * only if they never disagree on a route. The simplest sound case, and the common one (a
 * softmax's and a norm's row allreduces, every layer's MeshGEMV), is a collective whose
 * routes are identical to an earlier one's: it reuses those colors and adds nothing. The
 * phases are ordered by the program (every PE finishes one before it starts the next), so
 * wavelets of the two never mix on a color; a tree that left routers at switch position 1
 * is reusable only after those routers were put back to 0. */
#include <stdlib.h>
#include <string.h>

#include "backend/lower_collective.h"
#include "waferc/diag.h"

typedef struct cache_entry {
  wf_coll_key key;
  int colors[32];
  int n;
  int switches; /* the pattern leaves routers at switch position 1 */
  int clean;    /* no router is left at position 1: reusable */
} cache_entry;

struct wf_coll_cache {
  cache_entry *e;
  int n, cap;
  int reused, allocated;
  int last_tree; /* entry of the last tree reduce, -1 none */
};

static struct wf_coll_cache *cache(wf_lower *L) {
  if (!L->coll_cache) {
    L->coll_cache = calloc(1, sizeof *L->coll_cache);
    if (L->coll_cache) L->coll_cache->last_tree = -1;
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

const int *wf_coll_cache_find(wf_lower *L, const wf_coll_key *k, int *n_colors) {
  struct wf_coll_cache *c = cache(L);
  if (!c) return NULL;
  for (int i = 0; i < c->n; i++)
    if (c->e[i].clean && same(&c->e[i].key, k)) {
      *n_colors = c->e[i].n;
      c->reused += c->e[i].n;
      c->e[i].clean = !c->e[i].switches; /* this use leaves its switches set again */
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
  e->n = n;
  e->switches = !clean;
  e->clean = clean;
  c->allocated += n;
  if (k->kind == 0) c->last_tree = c->n;
  c->n++;
}

void wf_coll_cache_reset_last(wf_lower *L, const wf_coll_line *ln) {
  struct wf_coll_cache *c = cache(L);
  if (!c || c->last_tree < 0) return;
  cache_entry *e = &c->e[c->last_tree];
  if (e->clean) return;
  /* Every router of the line back to position 0 on the tree's colors: one control write
   * per color, issued after the PE received the broadcast (every reduce wavelet is past). */
  for (int i = 0; i < e->n; i++)
    wf_emit(L, &ln->fixed, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(e->colors[i]), wf_arg_int(0)});
  e->clean = 1;
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
