/* Interference-aware color allocation (see colors.h): greedy coloring of the interference
 * graph of the routes, reusing colors across routes that are disjoint in routers or in time. */
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "backend/resources/colors.h"

/* Routers of a request as sorted, deduplicated keys, so intersections are merges. */
typedef struct pe_set { uint64_t *k; int n; } pe_set;

static uint64_t key(int x, int y) { return ((uint64_t)(uint32_t)y << 32) | (uint32_t)x; }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int make_set(const wf_color_req *r, pe_set *s) {
  s->n = 0;
  s->k = malloc((size_t)(r->n_hops > 0 ? r->n_hops : 1) * sizeof *s->k);
  WF_ASSERT(s->k); /* out of host memory: exit 7 */
  for (int i = 0; i < r->n_hops; i++) s->k[i] = key(r->hops[i].x, r->hops[i].y);
  qsort(s->k, (size_t)r->n_hops, sizeof *s->k, cmp_u64);
  for (int i = 0; i < r->n_hops; i++)
    if (s->n == 0 || s->k[s->n - 1] != s->k[i]) s->k[s->n++] = s->k[i];
  return 0;
}

static int shared(const pe_set *a, const pe_set *b) {
  int i = 0, j = 0, n = 0;
  while (i < a->n && j < b->n) {
    if (a->k[i] < b->k[j]) i++;
    else if (a->k[i] > b->k[j]) j++;
    else n++, i++, j++;
  }
  return n;
}

static int overlap_time(const wf_color_req *a, const wf_color_req *b) {
  return a->t0 < b->t1 && b->t0 < a->t1;
}

int wf_color_interfere(const wf_color_req *a, const wf_color_req *b) {
  if (!overlap_time(a, b)) return 0;
  pe_set x, y;
  if (make_set(a, &x)) return 1;
  if (make_set(b, &y)) { free(x.k); return 1; }
  int r = shared(&x, &y) > 0;
  free(x.k);
  free(y.k);
  return r;
}

void wf_color_result_free(wf_color_result *r) {
  free(r->color);
  free(r->fails);
  memset(r, 0, sizeof *r);
}

typedef struct order_item { int req, degree; } order_item;

static int cmp_order(const void *a, const void *b) {
  const order_item *x = a, *y = b;
  if (x->degree != y->degree) return y->degree - x->degree;
  return x->req - y->req;
}

/* Distinct colors per router over the colored requests. */
static int max_colors_per_pe(const pe_set *sets, const int *color, int n) {
  size_t total = 0;
  for (int i = 0; i < n; i++)
    if (color[i] >= 0) total += (size_t)sets[i].n;
  if (!total) return 0;
  uint64_t *pairs = malloc(total * sizeof *pairs), *keys = malloc(total * sizeof *keys);
  int best = 0;
  WF_ASSERT(pairs && keys); /* out of host memory: exit 7 */
  /* Sort (router, color) as one 64-bit key: router index by rank, color in the low bits. */
  size_t m = 0;
  for (int i = 0; i < n; i++)
    if (color[i] >= 0)
      for (int j = 0; j < sets[i].n; j++) keys[m++] = sets[i].k[j];
  qsort(keys, m, sizeof *keys, cmp_u64);
  size_t p = 0;
  for (int i = 0; i < n; i++)
    if (color[i] >= 0)
      for (int j = 0; j < sets[i].n; j++) {
        uint64_t *at = bsearch(&sets[i].k[j], keys, m, sizeof *keys, cmp_u64);
        /* Back to the first equal key so every router has one rank. */
        while (at > keys && at[-1] == *at) at--;
        pairs[p++] = ((uint64_t)(at - keys) << 8) | (uint64_t)color[i];
      }
  qsort(pairs, p, sizeof *pairs, cmp_u64);
  int run = 0;
  for (size_t i = 0; i < p; i++) {
    if (i > 0 && pairs[i] == pairs[i - 1]) continue;
    if (i > 0 && (pairs[i] >> 8) == (pairs[i - 1] >> 8)) run++;
    else run = 1;
    if (run > best) best = run;
  }
  free(pairs);
  free(keys);
  return best;
}

int wf_color_alloc(const wf_color_req *reqs, int n, int n_colors, uint32_t reserved,
                   wf_color_result *out) {
  memset(out, 0, sizeof *out);
  if (n < 0 || n_colors < 0 || n_colors > 32) return -1;
  for (int i = 0; i < n; i++)
    if (reqs[i].n_hops < 0 || (reqs[i].n_hops && !reqs[i].hops) || reqs[i].t0 > reqs[i].t1)
      return -1;
  int rc = -1;
  pe_set *sets = calloc((size_t)(n ? n : 1), sizeof *sets);
  char *adj = calloc((size_t)n * (size_t)n + 1, 1);
  int *sh = calloc((size_t)n * (size_t)n + 1, sizeof *sh);
  order_item *ord = malloc((size_t)(n ? n : 1) * sizeof *ord);
  out->color = malloc((size_t)(n ? n : 1) * sizeof *out->color);
  out->fails = malloc((size_t)(n ? n : 1) * sizeof *out->fails);
  WF_ASSERT(sets && adj && sh && ord && out->color && out->fails); /* out of host memory: exit 7 */
  for (int i = 0; i < n; i++)
    if (make_set(&reqs[i], &sets[i])) goto done;
  for (int i = 0; i < n; i++) {
    ord[i] = (order_item){i, 0};
    out->color[i] = -1;
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!overlap_time(&reqs[i], &reqs[j])) continue;
      int s = shared(&sets[i], &sets[j]);
      if (!s) continue;
      adj[(size_t)i * n + j] = adj[(size_t)j * n + i] = 1;
      sh[(size_t)i * n + j] = sh[(size_t)j * n + i] = s;
      ord[i].degree++;
      ord[j].degree++;
    }
  qsort(ord, (size_t)n, sizeof *ord, cmp_order);
  uint32_t used = 0;
  for (int o = 0; o < n; o++) {
    int r = ord[o].req;
    uint32_t taken = reserved;
    for (int j = 0; j < n; j++)
      if (adj[(size_t)r * n + j] && out->color[j] >= 0) taken |= 1u << out->color[j];
    for (int c = 0; c < n_colors; c++)
      if (!(taken & (1u << c))) {
        out->color[r] = c;
        used |= 1u << c;
        break;
      }
  }
  /* What would make each failed request fit, against the final coloring. */
  for (int r = 0; r < n; r++) {
    if (out->color[r] >= 0) continue;
    wf_color_fail f = {r, -1, 0, 0};
    for (int c = 0; c < n_colors; c++) {
      if (reserved & (1u << c)) continue;
      int pes = 0, after = reqs[r].t0;
      for (int j = 0; j < n; j++)
        if (adj[(size_t)r * n + j] && out->color[j] == c) {
          pes += sh[(size_t)r * n + j];
          if (reqs[j].t1 > after) after = reqs[j].t1;
        }
      if (f.best_color < 0 || pes < f.shared_pes) {
        f.best_color = c;
        f.shared_pes = pes;
        f.serialize_after = after;
      }
    }
    out->fails[out->n_failed++] = f;
  }
  for (int c = 0; c < 32; c++) out->used += (used >> c) & 1;
  out->max_per_pe = max_colors_per_pe(sets, out->color, n);
  rc = out->n_failed ? 1 : 0;
done:
  if (sets)
    for (int i = 0; i < n; i++) free(sets[i].k);
  free(sets);
  free(adj);
  free(sh);
  free(ord);
  if (rc < 0) wf_color_result_free(out);
  return rc;
}
