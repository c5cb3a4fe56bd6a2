/* Route codes per PE (WaferLLM §3.1): a router tells apart at most R = 2^route_code_bits
 * routes. Every (color, switch position) a PE's router is configured for is one route
 * code; a class whose guards give some PE more than R of them cannot be loaded on the
 * target. Checked for every PE of the region.
 *
 * Route guards cannot name loop variables, and a condition of one almost always compares a
 * term of x, or of y, with a constant: then a rule holds on PE (x, y) exactly when its x part
 * holds on x and its y part on y. The check takes each column's set of rules whose x part
 * holds and each row's for the y part, and counts route codes once per distinct pair of
 * such sets instead of once per PE: the compile time of a 720x720 region no longer goes to
 * evaluating every rule on 518,400 PEs. A class with a condition that ties x to y is checked
 * PE by PE, as before. */
#include <stdlib.h>
#include <string.h>

#include "backend/resources/lower.h"
#include "waferc/diag.h"

/* Route codes of a PE whose rules are the set bits of `on` (n_words words). */
static int codes(const wf_pe_class *c, const uint64_t *on, int n_words, uint32_t *stamp, uint32_t gen) {
  int n = 0;
  for (int w = 0; w < n_words; w++)
    for (uint64_t m = on[w]; m; m &= m - 1) {
      const wf_pe_route *r = &c->routes[w * 64 + __builtin_ctzll(m)];
      uint32_t *s = &stamp[r->color * WF_PE_MAX_POS + r->pos];
      if (*s != gen) *s = gen, n++;
    }
  return n;
}

static int too_many(const wf_lower *L, int x, int y, int n, int limit, int bits) {
  wf_error(L->f->loc, "PE (%d, %d) of class '%s' needs %d route codes (color and switch "
                      "position pairs) but a '%s' router tells apart %d (route_code_bits = %d)",
           x, y, L->cls->name, n, L->t->name, limit, bits);
  return WF_EXIT_NOFIT;
}

/* Each coordinate's rule set (n coordinates), numbered: cls[v] = the first coordinate with
 * the same set (the sets are compared word by word). Returns the masks, or NULL. */
static uint64_t *coord_sets(const wf_pe_class *c, const wf_pe_guard *part, const uint8_t *valid, int n,
                            int along_y, int n_words, int w, int h, int *cls) {
  uint64_t *m = calloc((size_t)n * (size_t)n_words + 1, sizeof *m);
  WF_ASSERT(m); /* out of host memory: exit 7 */
  for (int v = 0; v < n; v++) {
    wf_pe_env e = wf_pe_env_at(c, along_y ? 0 : v, along_y ? v : 0, w, h);
    for (int r = 0; r < c->n_routes; r++)
      if (valid[r] && wf_guard_eval(&part[r], &e)) m[(size_t)v * n_words + r / 64] |= 1ull << (r % 64);
    cls[v] = v;
    for (int u = 0; u < v; u++) /* the sets a line holds are few: a linear search will do */
      if (cls[u] == u && !memcmp(&m[(size_t)u * n_words], &m[(size_t)v * n_words], (size_t)n_words * 8)) {
        cls[v] = u;
        break;
      }
  }
  return m;
}

int wf_lower_check_route_codes(const wf_lower *L) {
  const wf_pe_class *c = L->cls;
  int bits = L->t->route_code_bits;
  if (bits <= 0 || bits >= 16 || !c->n_routes) return 0;
  int limit = 1 << bits, nr = c->n_routes, n_words = (nr + 63) / 64, rc = 0, separable = 1;
  /* (color, pos) pairs: colors < 32, positions < WF_PE_MAX_POS */
  uint32_t stamp[32 * WF_PE_MAX_POS], gen = 0;
  memset(stamp, 0, sizeof stamp);
  wf_pe_guard *gx = malloc((size_t)nr * sizeof *gx), *gy = malloc((size_t)nr * sizeof *gy);
  uint8_t *valid = malloc((size_t)nr);
  int *cx = malloc((size_t)L->w * sizeof *cx), *cy = malloc((size_t)L->h * sizeof *cy);
  uint64_t *mx = NULL, *my = NULL, *on = malloc((size_t)n_words * sizeof *on);
  WF_ASSERT(gx && gy && valid && cx && cy && on);
  for (int r = 0; r < nr; r++) {
    const wf_pe_route *rt = &c->routes[r];
    valid[r] = rt->color >= 0 && rt->color < 32 && rt->pos >= 0 && rt->pos < WF_PE_MAX_POS;
    separable &= !wf_guard_split(&rt->guard, &gx[r], &gy[r]);
  }
  if (separable) {
    mx = coord_sets(c, gx, valid, L->w, 0, n_words, L->w, L->h, cx);
    my = coord_sets(c, gy, valid, L->h, 1, n_words, L->w, L->h, cy);
    WF_ASSERT(mx && my);
    for (int y = 0; y < L->h && !rc; y++) {
      if (cy[y] != y) continue; /* a row with the same rules as an earlier one */
      for (int x = 0; x < L->w && !rc; x++) {
        if (cx[x] != x) continue;
        for (int w = 0; w < n_words; w++) on[w] = mx[(size_t)x * n_words + w] & my[(size_t)y * n_words + w];
        int n = codes(c, on, n_words, stamp, ++gen);
        if (n > limit) rc = too_many(L, x, y, n, limit, bits);
      }
    }
  } else {
    for (int y = 0; y < L->h && !rc; y++)
      for (int x = 0; x < L->w && !rc; x++) {
        wf_pe_env e = wf_pe_env_at(c, x, y, L->w, L->h);
        memset(on, 0, (size_t)n_words * sizeof *on);
        for (int r = 0; r < nr; r++)
          if (valid[r] && wf_guard_eval(&c->routes[r].guard, &e)) on[r / 64] |= 1ull << (r % 64);
        int n = codes(c, on, n_words, stamp, ++gen);
        if (n > limit) rc = too_many(L, x, y, n, limit, bits);
      }
  }
  free(gx);
  free(gy);
  free(valid);
  free(cx);
  free(cy);
  free(mx);
  free(my);
  free(on);
  return rc;
}
