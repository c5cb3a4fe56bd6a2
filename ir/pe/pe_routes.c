/* The hardware rule for routes: per color and switch position a WSE router has one rx set and
 * one tx set. A class whose rules give some PE, in one position of one color, rx ports with
 * different tx sets (`RAMP -> W` with `E -> RAMP`) describes a router no wafer can be
 * configured as. waferc checks it when it writes a plan (backend/plan/emit.c: exit 4, so no
 * lowering, the color-budget fallbacks of backend/collectives/collective_relay.c included,
 * writes a plan no wafer can hold) and waferrun when it loads one (runtime/plan_load.c: a
 * plan is input from elsewhere).
 *
 * What a PE's router holds is what wf_router_setup (runtime/sim_fabric.c) builds: for each (color,
 * position, rx) the last matching rule, its tx directions that leave the region dropped.
 * Only the rx ports a wavelet can arrive on count: the ramp, and the links from neighbours
 * inside the region (nothing crosses a region's edge, so a rule for a port facing outside
 * it configures nothing the hardware would need); a port whose tx set is empty (`none`, or
 * only directions leaving the region) is not in the rx set.
 *
 * Route guards cannot name loop variables, and their conditions nearly always compare a term
 * of x, or of y, with a constant. Then the rules holding on PE (x, y) are those whose x part
 * holds on x and y part on y, and the router depends only on the pair (column's rules and
 * edges, row's rules and edges): each distinct pair is checked once, as
 * backend/resources/route_check.c counts route codes, so a 750x994 region costs a few
 * columns and rows of guard evaluations, not 745,500 PEs'. A class with a condition tying x
 * to y is checked PE by PE, skipping a PE whose rules and edges equal its left neighbour's. */
#include "ir/pe/pe_routes.h"

#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"

typedef struct {
  int x, y, w, h; /* the region */
} rect;

typedef struct {
  const wf_pe_class *c;
  const rect *reg;
  const char *path;
  int nr, n_words;
  /* per (color, position, rx): tx set + 1 (0: no rule), and the rule that set it */
  uint8_t tx[32][WF_PE_MAX_POS][WF_DIR_COUNT];
  int rule[32][WF_PE_MAX_POS][WF_DIR_COUNT];
} chk;

/* The ports of region-relative PE (x, y) that face a neighbour inside the region, and the
 * ramp. */
static unsigned live_x(const chk *k, int x) {
  return (x > 0 ? 1u << WF_DIR_W : 0) | (x < k->reg->w - 1 ? 1u << WF_DIR_E : 0) | 1u << WF_DIR_RAMP;
}
static unsigned live_y(const chk *k, int y) {
  return (y > 0 ? 1u << WF_DIR_N : 0) | (y < k->reg->h - 1 ? 1u << WF_DIR_S : 0);
}

static void fmt_tx(unsigned tx, char *b, size_t cap) {
  b[0] = 0;
  if (!tx) {
    snprintf(b, cap, "none");
    return;
  }
  for (int d = 0; d < WF_DIR_COUNT; d++)
    if (tx & (1u << d)) {
      size_t l = strlen(b);
      snprintf(b + l, cap - l, "%s%s", l ? " " : "", wf_dir_names[d]);
    }
}

/* Checks the router of the PE at region-relative (x, y) whose rules are the set bits of `on`
 * and whose live ports are `live`. Returns 0, or -1 after reporting. */
static int check_pe(chk *k, const uint64_t *on, unsigned live, int x, int y) {
  const wf_pe_class *c = k->c;
  uint32_t used[32] = {0}; /* per color: positions with a rule */
  for (int w = 0; w < k->n_words; w++)
    for (uint64_t m = on[w]; m; m &= m - 1) {
      int r = w * 64 + __builtin_ctzll(m);
      const wf_pe_route *rt = &c->routes[r];
      if (!(used[rt->color] & (1u << rt->pos))) {
        used[rt->color] |= 1u << rt->pos;
        memset(k->tx[rt->color][rt->pos], 0, sizeof k->tx[0][0]);
      }
      k->tx[rt->color][rt->pos][rt->rx] = (uint8_t)((rt->tx & live) + 1); /* edges dropped */
      k->rule[rt->color][rt->pos][rt->rx] = r;
    }
  for (int col = 0; col < 32; col++)
    for (int pos = 0; used[col] && pos < WF_PE_MAX_POS; pos++) {
      if (!(used[col] & (1u << pos))) continue;
      const uint8_t *t = k->tx[col][pos];
      int first = -1, bad = 0;
      for (int d = 0; d < WF_DIR_COUNT; d++) {
        if (t[d] <= 1 || !(live & (1u << d))) continue; /* no rule, or `none`: not an rx port */
        if (first < 0) first = d;
        else if (t[d] != t[first]) bad = 1;
      }
      if (!bad) continue;
      char rules[512] = "";
      for (int d = 0; d < WF_DIR_COUNT; d++) {
        if (t[d] <= 1 || !(live & (1u << d))) continue;
        char txs[64];
        fmt_tx(t[d] - 1u, txs, sizeof txs);
        size_t l = strlen(rules);
        snprintf(rules + l, sizeof rules - l, "%s%s -> %s (line %d)", l ? ", " : "", wf_dir_names[d], txs,
                 c->routes[k->rule[col][pos][d]].line);
      }
      int line = c->routes[k->rule[col][pos][first]].line;
      wf_loc at = line ? wf_loc_make(k->path, (uint32_t)line, 1) : wf_loc_make(k->path, 0, 0);
      wf_error(
          at, "PE (%d,%d) of class '%s': color c%d, switch position p%d has per-input rules %s; a "
              "WSE router holds one rx set -> one tx set per color and position",
          k->reg->x + x, k->reg->y + y, c->name, col, pos, rules);
      return -1;
    }
  return 0;
}

/* The rule set of each coordinate v in [lo, lo+n) along one axis, with its live ports in the
 * last word: cls[i] = the first index with an equal set. Returns the masks. */
static uint64_t *coord_sets(const chk *k, const wf_pe_guard *part, int along_y, int lo, int n, int *cls) {
  int nw = k->n_words + 1;
  uint64_t *m = calloc((size_t)n * (size_t)nw + 1, sizeof *m);
  int *reps = malloc(((size_t)n + 1) * sizeof *reps), n_reps = 0;
  WF_ASSERT(m && reps);
  for (int i = 0; i < n; i++) {
    int v = lo + i;
    wf_pe_env e = wf_pe_env_at(k->c, along_y ? 0 : v, along_y ? v : 0, k->reg->w, k->reg->h);
    uint64_t *mi = &m[(size_t)i * nw];
    for (int r = 0; r < k->nr; r++)
      if (wf_guard_eval(&part[r], &e)) mi[r / 64] |= 1ull << (r % 64);
    mi[k->n_words] = along_y ? live_y(k, v) : live_x(k, v);
    cls[i] = i;
    for (int j = 0; j < n_reps; j++)
      if (!memcmp(&m[(size_t)reps[j] * nw], mi, (size_t)nw * 8)) {
        cls[i] = reps[j];
        break;
      }
    if (cls[i] == i) reps[n_reps++] = i;
  }
  free(reps);
  return m;
}

int wf_pe_check_routes(const wf_pe_class *c, int rx, int ry, int rw, int rh, int px, int py, int pw, int ph,
                       const char *path) {
  if (!c->n_routes) return 0;
  rect region = {rx, ry, rw, rh}, place = {px, py, pw, ph};
  const rect *reg = &region, *pl = &place;
  chk *k = calloc(1, sizeof *k);
  WF_ASSERT(k);
  k->c = c;
  k->reg = reg;
  k->path = path;
  k->nr = c->n_routes;
  k->n_words = (k->nr + 63) / 64;
  int nr = k->nr, nw = k->n_words, rc = 0, separable = 1;
  for (int r = 0; r < nr; r++) /* the parser keeps colors and positions in range */
    WF_ASSERT(c->routes[r].color >= 0 && c->routes[r].color < 32 && c->routes[r].pos >= 0 &&
              c->routes[r].pos < WF_PE_MAX_POS);
  wf_pe_guard *gx = malloc((size_t)nr * sizeof *gx), *gy = malloc((size_t)nr * sizeof *gy);
  uint64_t *on = calloc((size_t)nw + 1, sizeof *on), *prev = calloc((size_t)nw + 1, sizeof *prev);
  WF_ASSERT(gx && gy && on && prev);
  for (int r = 0; r < nr; r++) separable &= !wf_guard_split(&c->routes[r].guard, &gx[r], &gy[r]);
  int x0 = pl->x - reg->x, y0 = pl->y - reg->y;
  if (separable) {
    int *cx = malloc((size_t)pl->w * sizeof *cx), *cy = malloc((size_t)pl->h * sizeof *cy);
    WF_ASSERT(cx && cy);
    uint64_t *mx = coord_sets(k, gx, 0, x0, pl->w, cx), *my = coord_sets(k, gy, 1, y0, pl->h, cy);
    for (int j = 0; j < pl->h && !rc; j++) {
      if (cy[j] != j) continue; /* a row with the rules and edges of an earlier one */
      for (int i = 0; i < pl->w && !rc; i++) {
        if (cx[i] != i) continue;
        const uint64_t *a = &mx[(size_t)i * (nw + 1)], *b = &my[(size_t)j * (nw + 1)];
        for (int w = 0; w < nw; w++) on[w] = a[w] & b[w];
        rc = check_pe(k, on, (unsigned)(a[nw] | b[nw]), x0 + i, y0 + j);
      }
    }
    free(cx);
    free(cy);
    free(mx);
    free(my);
  } else {
    for (int y = y0; y < y0 + pl->h && !rc; y++)
      for (int x = x0; x < x0 + pl->w && !rc; x++) {
        wf_pe_env e = wf_pe_env_at(c, x, y, reg->w, reg->h);
        memset(on, 0, ((size_t)nw + 1) * sizeof *on);
        for (int r = 0; r < nr; r++)
          if (wf_guard_eval(&c->routes[r].guard, &e)) on[r / 64] |= 1ull << (r % 64);
        on[nw] = live_x(k, x) | live_y(k, y);
        if (x > x0 && !memcmp(on, prev, ((size_t)nw + 1) * sizeof *on)) continue;
        memcpy(prev, on, ((size_t)nw + 1) * sizeof *on);
        rc = check_pe(k, on, (unsigned)on[nw], x, y);
      }
  }
  free(gx);
  free(gy);
  free(on);
  free(prev);
  free(k);
  return rc;
}
