/* Ops on a band of the region's rows (passes/expert_bands.c): lowered as on a W x h mesh, the
 * code run only by the band's PEs, the routes repeated on every band of that height
 * (docs/moe-plans.md, "Experts on bands").
 *
 * A PE's program is one text for the whole region; its terms read the PE's position in the
 * region. The band's code is bracketed by a one-trip loop that the band's rows run and every
 * other PE skips at no cost; inside it the lowering's `y` means the row within the band and
 * `H` the band's height. The routes are configured once for all PEs, so a band's rules read
 * `y mod h` and hold on every band of height h: bands of one height share their colors, and
 * their experts run at once without crossing (a direction leaving a band is dropped at its
 * edge, as the loader drops those leaving the region). Uneven bands (heights h and h + 1) may
 * start off multiples of their height (rows 3+2 of 5: the band of 2 starts at row 3), where
 * y mod h is not the row within the band: such a height's routes stay in the band's own rows
 * while the function is lowered (every check made meanwhile reads them there), and
 * wf_lower_band_finish then writes each rule's rows as a set, `y in s<i>`, the rows of every
 * band of that height where its conditions on the row hold. The colors of the mesh and of each
 * band height are kept apart: a mesh color's routes span the columns, a band's stop at its
 * edges; only a collective along x on every row alike, whose routes are the same for both,
 * shares its color (collective_cache.c, `any_rows`). */
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_band.h"
#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

/* The color state of wf_lower that belongs to one kind of routes. */
typedef struct colors {
  int h;       /* band height; 0 = the mesh's */
  int aligned; /* every band of this height starts at a multiple of it: its routes read y mod h */
  int color[WF_COLOR_ROLES];
  wf_ring_ch ring_ch[WF_MAX_RING_CH];
  int n_ring_ch;
  int attn_grp[4];
  int dec_up[2], dec_up_set;
  int shift_col[2][2][2];
  unsigned shift_set;
  int attn_gather;
} colors;

/* Routes of a band op whose rows y mod h cannot name (a band of its height starts off a
 * multiple of h): kept in the band's own rows until the function is lowered, then written for
 * the rows of every band of that height (wf_lower_band_finish). */
typedef struct pending {
  int route0, route1; /* the op's routes, edges included */
  int h;
  wf_loc loc;
} pending;

#define MAX_KINDS 8
typedef struct wf_band_colors {
  colors kind[MAX_KINDS];
  int n;
  colors mesh;
  pending *pend;
  int n_pend, cap_pend;
} wf_band_colors;

/* The fields of wf_lower that `colors` keeps, copied one way or the other. */
#define COPY_STATE(dst, src)                                                  \
  do {                                                                        \
    memcpy((dst)->color, (src)->color, sizeof (dst)->color);                  \
    memcpy((dst)->ring_ch, (src)->ring_ch, sizeof (dst)->ring_ch);            \
    (dst)->n_ring_ch = (src)->n_ring_ch;                                      \
    memcpy((dst)->attn_grp, (src)->attn_grp, sizeof (dst)->attn_grp);         \
    memcpy((dst)->dec_up, (src)->dec_up, sizeof (dst)->dec_up);               \
    (dst)->dec_up_set = (src)->dec_up_set;                                    \
    memcpy((dst)->shift_col, (src)->shift_col, sizeof (dst)->shift_col);      \
    (dst)->shift_set = (src)->shift_set;                                      \
    (dst)->attn_gather = (src)->attn_gather;                                  \
  } while (0)

static void save(const wf_lower *L, colors *c) { COPY_STATE(c, L); }
static void load(wf_lower *L, const colors *c) { COPY_STATE(L, c); }

static void fresh(colors *c, int h) {
  memset(c, 0, sizeof *c); /* aligned: set by the caller */
  c->h = h;
  for (int i = 0; i < WF_COLOR_ROLES; i++) c->color[i] = -1;
}

int wf_lower_is_band(const wf_lower *L, int r) {
  if (L->region < 0 || r < 0) return 0;
  const wf_region *b = &L->m->regions[r], *g = &L->m->regions[L->region];
  return b->x == g->x && b->w == g->w && b->y >= g->y && b->y + b->h <= g->y + g->h && b->h < g->h;
}

int wf_lower_region_used(const wf_lower *L, int region) {
  for (uint32_t v = 1; v <= L->f->n_values; v++)
    if (L->f->values[v].type.layout.rank && L->f->values[v].type.layout.region == region) return 1;
  return 0;
}

/* Whether region r is a band of height h that values of the function live on. */
static int band_of_height(const wf_lower *L, int r, int h) {
  return wf_lower_is_band(L, r) && L->m->regions[r].h == h && wf_lower_region_used(L, r);
}

/* Whether every band of height h starts at a multiple of h in the region: then y mod h is the
 * row within its band on each of them (equal bands; uneven ones where the rows fall so). */
static int aligned(const wf_lower *L, int h) {
  for (int r = 0; r < L->m->n_regions; r++)
    if (band_of_height(L, r, h) && (L->m->regions[r].y - L->m->regions[L->region].y) % h) return 0;
  return 1;
}

int wf_lower_band_enter(wf_lower *L, int region, wf_loc loc) {
  const wf_region *b = &L->m->regions[region], *r = &L->m->regions[L->region];
  WF_ASSERT(L->band < 0 && wf_lower_is_band(L, region)); /* emit.c's check_layout refuses others */
  if (!L->band_colors) {
    L->band_colors = calloc(1, sizeof *L->band_colors);
    WF_ASSERT(L->band_colors);
  }
  wf_band_colors *bc = L->band_colors;
  save(L, &bc->mesh);
  int k = 0;
  while (k < bc->n && bc->kind[k].h != b->h) k++;
  if (k == bc->n) {
    if (bc->n == MAX_KINDS) {
      wf_error(loc, "more than %d band heights in one plan", MAX_KINDS);
      return WF_EXIT_UNSUPPORTED;
    }
    fresh(&bc->kind[bc->n], b->h);
    bc->kind[bc->n++].aligned = aligned(L, b->h);
  }
  load(L, &bc->kind[k]);
  /* the band's rows run the op once; the others skip it */
  int y0 = b->y - r->y;
  wf_pe_guard g = wf_guard0();
  wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_GE, wf_term_int(y0));
  wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_LT, wf_term_int(y0 + b->h));
  /* its variable is chosen when the op is lowered (wf_lower_band_leave): one it does not use */
  wf_emit(L, &g, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(wf_term_var(0, 0)), wf_arg_int(0), wf_arg_int(1)});
  L->band = region;
  L->band_y0 = y0;
  L->band_code0 = L->cls->n_code;
  L->band_route0 = L->cls->n_routes;
  L->band_task0 = L->cls->n_tasks;
  L->h = b->h;
  L->skew_in_ok = L->skew_out_ok = 0;
  wf_coll_cache_forget_last(L);
  return 0;
}

/* A term rewritten for a band of height h from row y0: `H` as h (a constant, evaluated as the
 * PE evaluates it); `y`, in an instruction (route = 0), as the row within the band (y - y0), in
 * a route (route = 1, configured once for every band) as y mod h, or left as the row within
 * the band (route = 2: wf_lower_band_finish writes it for the bands' rows). -1 when the term
 * cannot say it in the terms' form ((c y mod M) + k). */
static int band_term(wf_pe_term *t, int y0, int h, int route) {
  if (t->kind == WF_TERM_H) {
    wf_pe_env e = {0};
    e.h = h;
    *t = wf_term_int(wf_term_eval(t, &e));
  }
  if (t->kind != WF_TERM_Y || route == 2) return 0;
  int64_t c = t->mul > 1 || t->mul < 0 ? t->mul : 1, shift = route ? h : y0;
  if (t->mod) return (c * shift) % t->mod == 0 ? 0 : -1; /* c y mod M unchanged */
  if (!route) {
    t->k = (int32_t)(t->k - c * y0);
    return 0;
  }
  if (c < 1 || c * h > 65535) return -1;
  t->mod = (uint16_t)(c * h); /* c y mod c h = c (y mod h) */
  return 0;
}

static int guard_terms(wf_pe_guard *g, int y0, int h, int route) {
  for (int i = 0; i < g->n; i++)
    if (band_term(&g->c[i].a, y0, h, route) || band_term(&g->c[i].b, y0, h, route)) return -1;
  return 0;
}

int wf_lower_band_leave(wf_lower *L, wf_loc loc) {
  WF_ASSERT(L->band >= 0);
  wf_pe_class *c = L->cls;
  wf_band_colors *bc = L->band_colors;
  int h = L->h, y0 = L->band_y0, bad = 0, k = 0;
  while (k < bc->n && bc->kind[k].h != h) k++;
  int mode = bc->kind[k].aligned ? 1 : 2; /* routes: y mod h, or the band's rows (pending) */
  const char *what = "";
  for (int t = L->band_task0; t < c->n_tasks; t++) /* the main task (async streams) is every PE's */
    if (strcmp(c->tasks[t].name, "main")) bad = 1, what = "a task";
  for (int i = L->band_code0; i < c->n_code && !bad; i++) {
    wf_pe_instr *in = &c->code[i];
    if (guard_terms(&in->guard, y0, h, 0)) bad = 1, what = "an instruction's guard";
    const char *sig = wf_peops[in->op].sig;
    for (int a = 0; sig[a] && !bad; a++) {
      if (sig[a] != 'd' && sig[a] != 's' && sig[a] != 'n') continue;
      if (band_term(&in->args[a].term, y0, h, 0) || band_term(&in->args[a].term2, y0, h, 0))
        bad = 1, what = "an operand";
    }
  }
  /* routes: y mod h (or the band's rows, written for every band of its height at the end), and
   * what leaves the band dropped at its first and last rows (a later rule overrides an earlier
   * one where its guard holds) */
  int n_routes = c->n_routes;
  for (int r = L->band_route0; r < n_routes && !bad; r++) {
    wf_pe_route rt = c->routes[r];
    if (guard_terms(&rt.guard, y0, h, mode)) {
      bad = 1, what = "a route's guard";
      break;
    }
    c->routes[r].guard = rt.guard;
    unsigned out = (1u << WF_DIR_N) | (1u << WF_DIR_S);
    if (!(rt.tx & out)) continue;
    if (h == 1) {
      c->routes[r].tx &= ~out;
      continue;
    }
    for (int e = 0; e < 2; e++) {
      unsigned dir = 1u << (e ? WF_DIR_S : WF_DIR_N);
      if (!(rt.tx & dir)) continue;
      if (rt.guard.n == WF_PE_MAX_GUARD) {
        bad = 1, what = "a route's guard (no room for the band's edge)";
        break;
      }
      wf_pe_guard g = rt.guard;
      wf_pe_term row = wf_term(WF_TERM_Y, 0);
      if (mode == 1) row.mod = (uint16_t)h;
      wf_guard_add(&g, row, WF_CMP_EQ, wf_term_int(e ? h - 1 : 0));
      wf_pe_class_add_route_pos(c, &g, rt.color, rt.pos, rt.rx, rt.tx & ~dir);
      c->routes[c->n_routes - 1].line = rt.line;
    }
  }
  if (bad) {
    wf_error(loc, "the op on band @%s cannot be lowered to the band's rows: %s names the PE's row in a "
                  "form the band's offset cannot be written in (waferc tries other band counts, then the whole mesh)",
             wf_str(L->m, L->m->regions[L->band].name), what);
  }
  /* the one-trip loop's variable: one the op's code never names (a class holds 8) */
  unsigned used = 0;
  for (int i = L->band_code0; i < c->n_code; i++) used |= wf_lower_vars_named(&c->code[i]);
  int var = 0;
  while (var < c->n_vars && (used >> var & 1)) var++;
  if (var == c->n_vars && (var = wf_pe_class_find_var(c, "band", 1)) < 0) {
    if (!bad) wf_error(loc, "the op on band @%s uses every loop variable a PE class holds (8), and its band needs one "
                            "more (waferc tries other band counts, then the whole mesh)", wf_str(L->m, L->m->regions[L->band].name));
    bad = 1, var = 0;
  }
  c->code[L->band_code0 - 1].args[0].term = wf_term_var(var, 0);
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  if (mode == 2 && c->n_routes > L->band_route0) {
    if (bc->n_pend == bc->cap_pend) {
      bc->cap_pend = bc->cap_pend ? 2 * bc->cap_pend : 16;
      bc->pend = realloc(bc->pend, (size_t)bc->cap_pend * sizeof *bc->pend);
      WF_ASSERT(bc->pend);
    }
    bc->pend[bc->n_pend++] = (pending){L->band_route0, c->n_routes, h, loc};
  }
  save(L, &bc->kind[k]);
  load(L, &bc->mesh);
  L->h = L->m->regions[L->region].h;
  L->band = -1;
  L->skew_in_ok = L->skew_out_ok = 0;
  wf_coll_cache_forget_last(L);
  /* exit 4, as a band that does not fit its colors or SRAM: waferc --expert-parallel then tries
   * other band counts and the whole mesh (tools/waferc/main.c, compile_bands) */
  return bad ? WF_EXIT_NOFIT : 0;
}

int wf_lower_band_finish(wf_lower *L) {
  wf_band_colors *bc = L->band_colors;
  if (!bc || !bc->n_pend) return 0;
  wf_pe_class *c = L->cls;
  const wf_region *reg = &L->m->regions[L->region];
  uint8_t *rows = malloc((size_t)reg->h), *none = calloc((size_t)c->n_routes, 1);
  WF_ASSERT(rows && none);
  int rc = 0;
  for (int p = 0; p < bc->n_pend && !rc; p++) {
    const pending *pd = &bc->pend[p];
    for (int r = pd->route0; r < pd->route1; r++) {
      wf_pe_guard gx, gy;
      if (wf_guard_split(&c->routes[r].guard, &gx, &gy)) {
        wf_error(pd->loc, "the op on a band of %d rows cannot be lowered to the bands' rows: a route's guard ties "
                          "the row to the column (compile without --expert-parallel)", pd->h);
        rc = WF_EXIT_UNSUPPORTED;
        break;
      }
      if (!gy.n) continue; /* the same on every row */
      /* the rows of every band of this height where the rule's row conditions hold */
      memset(rows, 0, (size_t)reg->h);
      int n = 0;
      for (int b = 0; b < L->m->n_regions; b++) {
        if (!band_of_height(L, b, pd->h)) continue;
        int y0 = L->m->regions[b].y - reg->y;
        for (int j = 0; j < pd->h; j++) {
          wf_pe_env e = wf_pe_env_at(c, 0, j, reg->w, pd->h);
          if (wf_guard_eval(&gy, &e)) rows[y0 + j] = 1, n = y0 + j + 1;
        }
      }
      if (!n) { /* a rule no row of these bands holds (an edge's on a rule of the other edge) */
        none[r] = 1;
        continue;
      }
      wf_guard_add_in(&gx, wf_term(WF_TERM_Y, 0), wf_pe_class_add_set(c, rows, n));
      c->routes[r].guard = gx;
    }
  }
  int k = 0;
  for (int r = 0; r < c->n_routes; r++)
    if (!none[r]) c->routes[k++] = c->routes[r];
  c->n_routes = k;
  free(rows);
  free(none);
  return rc;
}

void wf_lower_band_free(wf_lower *L) {
  if (L->band_colors) free(L->band_colors->pend);
  free(L->band_colors);
  L->band_colors = NULL;
}
