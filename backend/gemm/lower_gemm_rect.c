/* MeshGEMM and Cannon on a W x H region with W != H: the lcm virtual grid (WaferLLM §5.4,
 * docs/gemm.md "Non-square regions").
 *
 * With L = lcm(W, H), the algorithm runs on an L x L grid of virtual PEs: PE (x, y) stands
 * for the v_x x v_y virtual PEs J = v_x x + t, I = v_y y + r (v_x = L/W, v_y = L/H). Each
 * virtual PE holds one tile of A (mt x kt), of B (kt x nt) and of C (mt x nt): the tiles are
 * the strided sub-blocks of the PE's blocks, gathered once with copy2d. The virtual grid is
 * square, so the square algorithm runs on it unchanged: alignment, then L compute-shift
 * steps; what changes is how one virtual shift is carried out. Along an axis with v virtual
 * positions per PE, position c = v*coord + i (tile i of the PE) passes its tile to the ring
 * successor of c; a successor on the same PE is a local copy, one on a neighbour a message:
 *
 *   cannon   c -> c-1 (0 -> L-1): tile 0 leaves toward lower coordinates (the plain ring's
 *            one color, the wrap-around included), the others move down one tile locally —
 *            in the alignment and the steps by renaming slots, not copying (rotate_steps,
 *            rotate_align_line): only the tile that leaves the PE moves
 *   meshgemm INTERLEAVE over the L positions: even c -> c+2, odd c -> c-2, turning at the
 *            ends. With v = 1 that is the square ring's two-hop routes; with v >= 2 at most
 *            one tile leaves east (the even one of i in {v-2, v-1}) and one west (the odd one
 *            of {0, 1}), each one hop, on two colors; the ends turn around locally — in
 *            the steps by renaming slots along a PE's chains (mesh_step); the alignment
 *            copies
 *
 * Tiles are stored axis-major so that one step's traffic is contiguous: A (moving along x)
 * as [t][r], B (along y) as [r][t]; all v_y A tiles of a tile column leave in one message.
 * The alignment shifts each virtual row by its own count, so it moves one row of tiles at a
 * time; its guards name the virtual row, `v_y*y + r` (the scaled term, pe-programs.md). A
 * weight the host wrote aligned (gemm_preskew.c) is only gathered: it does not shift.
 *
 * K must be cut in L equal tiles on both operands: A's block has ceil(K/W) = v_x kt columns
 * and B's ceil(K/H) = v_y kt rows only when W ceil(K/W) = H ceil(K/H) is a multiple of L
 * (wf_gemm_rect_k_fits). Otherwise, when both operands are graph inputs or constants used
 * only here, their K is padded to L ceil(K/L) (wf_gemm_rect_k_pad, which wf_lower_block and
 * the manifest's padded_shape follow: the host scatters them with that padding); an operand
 * another op computes keeps partition's blocks, and the operands whose cuts still miss L
 * tiles are re-cut over the fabric before the alignment (wf_relayout_gemm_k, one broadcast
 * round per PE along the operand's K axis, into scratch). On a 1-wide region one operand holds the whole K and is cut like the
 * other, so every K fits. M and N need not divide: ragged tiles are zero padded locally, and
 * only C's real rows and columns are copied back. */
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/lower_gemm.h"
#include "ir/support/intmath.h"
#include "backend/collectives/lower_relayout.h"
#include "waferc/diag.h"

enum { ACT_LOCAL, ACT_SEND, ACT_RECV };
#define MAX_ACTS 64
#define MAX_V WF_GEMM_RECT_MAX_V /* virtual positions per PE along an axis */

typedef struct act {
  wf_pe_guard g;
  int kind;      /* ACT_* */
  int ch;        /* SEND / RECV: channel 0 (toward higher coordinates, or the only one) or 1 */
  int from, to;  /* tile indices along the axis (LOCAL: both; SEND: from; RECV: to) */
} act;

typedef struct rect_axis {
  int v;             /* virtual positions per PE along the axis */
  int len;           /* PEs along the axis */
  int vo;            /* tiles per PE along the other axis (rows of tiles that travel together) */
  int64_t tile;      /* words per tile */
  wf_pe_term coord;  /* x or y */
  int col[2];        /* colors of the channels, -1 = none */
  int buf[2];        /* double buffers */
  int done;          /* the task async streams activate when they end */
  act acts[MAX_ACTS];
  int n_acts;
} rect_axis;

/* A guard under construction over the axis coordinate; with one PE along the axis the
 * coordinate is 0 and every condition is decided here. */
typedef struct gb {
  wf_pe_guard g;
  int dead;
} gb;

static void gb_cmp(gb *b, const rect_axis *ax, wf_cmp cmp, int v) {
  if (ax->len == 1) {
    int ok = cmp == WF_CMP_EQ ? 0 == v : cmp == WF_CMP_LT ? 0 < v : cmp == WF_CMP_GE ? 0 >= v : 0;
    if (!ok) b->dead = 1;
    return;
  }
  wf_gadd(&b->g, ax->coord, cmp, wf_term_int(v));
}

/* Virtual position v*coord + i has parity p: decided statically when v is even. */
static void gb_parity(gb *b, const rect_axis *ax, int i, int p) {
  if (ax->v % 2 == 0 || ax->len == 1) { /* v*coord is even: the parity is i's */
    if (i % 2 != p) b->dead = 1;
    return;
  }
  wf_gadd_mod(&b->g, ax->coord, 2, ((p - i) % 2 + 2) % 2); /* v odd: parity of coord + i */
}

static void add(rect_axis *ax, const gb *b, int kind, int ch, int from, int to) {
  if (b->dead) return;
  WF_ASSERT(ax->n_acts < MAX_ACTS);
  ax->acts[ax->n_acts++] = (act){b->g, kind, ch, from, to};
}

/* The actions of one virtual shift along the axis: Cannon's ring. */
static void plain_acts(rect_axis *ax) {
  gb all = {wf_guard0(), 0};
  for (int i = 1; i < ax->v; i++) add(ax, &all, ACT_LOCAL, 0, i, i - 1);
  if (ax->len == 1) {
    add(ax, &all, ACT_LOCAL, 0, 0, ax->v - 1);
    return;
  }
  add(ax, &all, ACT_RECV, 0, -1, ax->v - 1);
  add(ax, &all, ACT_SEND, 0, 0, -1);
}

/* MeshGEMM's INTERLEAVE ring over L = v * len positions. */
static void interleave_acts(rect_axis *ax) {
  int v = ax->v, n = ax->len, L = v * n;
  if (v == 1) { /* the square ring: one color, two-hop routes */
    gb all = {wf_guard0(), 0};
    add(ax, &all, ACT_RECV, 0, -1, 0);
    add(ax, &all, ACT_SEND, 0, 0, -1);
    return;
  }
  /* receives first: from the west into the even tile of {0, 1}, from the east into the odd
   * tile of {v-2, v-1} */
  for (int i = 0; i < 2; i++) {
    gb b = {wf_guard0(), 0};
    gb_parity(&b, ax, i, 0);
    gb_cmp(&b, ax, WF_CMP_GE, 1);
    add(ax, &b, ACT_RECV, 0, -1, i);
  }
  for (int i = v - 2; i < v; i++) {
    gb b = {wf_guard0(), 0};
    gb_parity(&b, ax, i, 1);
    gb_cmp(&b, ax, WF_CMP_LT, n - 1);
    add(ax, &b, ACT_RECV, 1, -1, i);
  }
  for (int i = 0; i < v; i++) {
    /* even c = v*coord + i: to c + 2, or the turn at the top */
    gb e = {wf_guard0(), 0};
    gb_parity(&e, ax, i, 0);
    if (i + 2 < v) {
      add(ax, &e, ACT_LOCAL, 0, i, i + 2);
    } else {
      gb s = e;
      gb_cmp(&s, ax, WF_CMP_LT, n - 1);
      add(ax, &s, ACT_SEND, 0, i, -1);
      /* on the last PE an even position is L-2 (L even: to L-1) or L-1 (L odd: to L-2) */
      if ((L - v + i) % 2 == 0) {
        gb t = {wf_guard0(), 0};
        gb_cmp(&t, ax, WF_CMP_EQ, n - 1);
        add(ax, &t, ACT_LOCAL, 0, i, L % 2 == 0 ? i + 1 : i - 1);
      }
    }
    /* odd c: to c - 2, or 1 -> 0 at the bottom */
    gb o = {wf_guard0(), 0};
    gb_parity(&o, ax, i, 1);
    if (i >= 2) {
      add(ax, &o, ACT_LOCAL, 0, i, i - 2);
    } else {
      gb s = o;
      gb_cmp(&s, ax, WF_CMP_GE, 1);
      add(ax, &s, ACT_SEND, 1, i, -1);
      if (i == 1) {
        gb t = {wf_guard0(), 0};
        gb_cmp(&t, ax, WF_CMP_EQ, 0);
        add(ax, &t, ACT_LOCAL, 0, 1, 0);
      }
    }
  }
}

/* A guard no PE satisfies because a condition compares a constant with `c*base % M + k`
 * where M divides c (the virtual row `2*y` is always even): its code is left out. */
static int never(const wf_pe_guard *g) {
  for (int i = 0; i < g->n; i++) {
    const wf_pe_cond *c = &g->c[i];
    const wf_pe_term *t = &c->a;
    if (c->cmp != WF_CMP_EQ || c->b.kind != WF_TERM_INT || t->kind == WF_TERM_INT || !t->mod ||
        t->mul < 2 || t->mul % t->mod)
      continue;
    if (t->k != c->b.k) return 1;
  }
  return 0;
}

/* Emits one virtual shift along the axis, from buffer `q` into the other: of the one row of
 * tiles o (alignment), or with `all` of every row at once (a step: the vo tiles of one tile
 * index are contiguous, so each action moves them in one piece). `outer` adds conditions to
 * every instruction (the step's parity). */
static void emit_shift(wf_lower *L, const rect_axis *ax, const wf_pe_guard *outer, int q, int o, int all) {
  int64_t words = all ? ax->vo * ax->tile : ax->tile;
  int src = ax->buf[q], dst = ax->buf[1 - q];
  for (int pass = 0; pass < 3; pass++) /* receives, then sends, then local copies */
    for (int k = 0; k < ax->n_acts; k++) {
      const act *a = &ax->acts[k];
      int kind = pass == 0 ? ACT_RECV : pass == 1 ? ACT_SEND : ACT_LOCAL;
      if (a->kind != kind) continue;
      wf_pe_guard g = a->g;
      if (outer)
        for (int i = 0; i < outer->n; i++) wf_guard_add(&g, outer->c[i].a, (wf_cmp)outer->c[i].cmp, outer->c[i].b);
      int64_t fo = ((int64_t)a->from * ax->vo + (all ? 0 : o)) * ax->tile;
      int64_t to = ((int64_t)a->to * ax->vo + (all ? 0 : o)) * ax->tile;
      if (kind == ACT_RECV)
        wf_emit(L, &g, WF_PEOP_ARECV,
                (wf_pe_arg[]){wf_arg_int(ax->col[a->ch]), wf_arg_at(dst, to), wf_arg_int(words), wf_arg_int(ax->done)});
      else if (kind == ACT_SEND)
        wf_emit(L, &g, WF_PEOP_ASEND,
                (wf_pe_arg[]){wf_arg_int(ax->col[a->ch]), wf_arg_at(src, fo), wf_arg_int(words), wf_arg_int(ax->done)});
      else
        wf_emit(L, &g, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_at(dst, to), wf_arg_at(src, fo), wf_arg_int(words)});
    }
}

/* Tile slots per row of Cannon's rotating buffer: v, plus one for the tile arriving while
 * the PE still multiplies the one leaving (a 1-PE axis only rotates). */
static int slots(const rect_axis *ax) { return wf_gemm_rect_cannon_slots(ax->v, ax->len); }

typedef struct rect_mm {
  int gc, direct, vx, vy;
  int64_t mt, kt, nt, n, zc;
  const struct mesh_maps *maps; /* MeshGEMM's renaming steps (mesh_step) */
  int iv;                       /* a loop variable for one-iteration `if` loops */
} rect_mm;

/* Step j of a rotation period: the axis's tile at position i is in slot (j + i) mod slots;
 * position 0 leaves from slot j, the arriving tile lands in slot j + v, the one slot no
 * position uses. `g` guards the shift (NULL: always; shift = 0: the last step). */
static void rotate_step(wf_lower *L, const rect_axis *ax, const rect_axis *ay, const rect_mm *mm, int j,
                        int shift, const wf_pe_guard *g) {
  const rect_axis *axes[2] = {ax, ay};
  for (int d = 0; d < 2 && shift; d++) {
    const rect_axis *a = axes[d];
    if (a->len == 1) continue;
    int S = slots(a);
    int64_t group = a->vo * a->tile;
    wf_emit(L, g, WF_PEOP_ARECV,
            (wf_pe_arg[]){wf_arg_int(a->col[0]), wf_arg_at(a->buf[0], (j + a->v) % S * group), wf_arg_int(group),
                          wf_arg_int(a->done)});
    wf_emit(L, g, WF_PEOP_ASEND,
            (wf_pe_arg[]){wf_arg_int(a->col[0]), wf_arg_at(a->buf[0], j % S * group), wf_arg_int(group),
                          wf_arg_int(a->done)});
  }
  for (int r = 0; r < mm->vy; r++)
    for (int t = 0; t < mm->vx; t++) {
      int64_t sa = (j + t) % slots(ax), sb = (j + r) % slots(ay);
      wf_emit(L, NULL, WF_PEOP_MATMUL,
              (wf_pe_arg[]){wf_arg_at(mm->gc, mm->direct ? r * mm->mt * mm->n : ((int64_t)r * mm->vx + t) * mm->zc),
                            wf_arg_at(ax->buf[0], (sa * mm->vy + r) * ax->tile), wf_arg_at(ay->buf[0], (sb * mm->vx + t) * ay->tile),
                            wf_arg_int(mm->mt), wf_arg_int(mm->kt), wf_arg_int(mm->nt)});
    }
  wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
}

/* MeshGEMM's steps without local copies. Along an axis with v >= 2, a PE's positions
 * c = v*coord + i of one parity form a chain: the even ones move up one index per step (the
 * top one leaves east, one arrives from the west at the bottom), the odd ones down (the
 * bottom one leaves west, one arrives from the east at the top). A chain is a window as in
 * rotate_step: listed in the order its tiles flow, plus a free slot, flow index k is in slot
 * list[(k - j) mod (n + 1)] in step j; the tile leaving from index n - 1 and the one arriving
 * at index 0 only rename. On the first and last PE of the line the two chains join into one
 * (the line's turn-arounds: odd bottom -> even bottom, even top -> odd top), a U of v tiles;
 * on a 1-PE axis both turns close it into a cycle of v tiles with no free slot. Slot maps so
 * differ per role (first, last, middle, and with v odd the coordinate's parity): the
 * multiplies are written once per role pair. When that passes WF_GEMM_RECT_MAX_UNROLL, the
 * ends keep the middle's two chains and copy the one turning tile per row instead
 * (wf_gemm_rect_meshgemm_period says which). v = 1: one tile, double buffered in slots 0
 * and 1, the square ring's routes making the turns. */
typedef struct win {
  int n, closed;      /* tiles; a closed cycle has no free slot and no traffic */
  int in, out;        /* colors of the arrival at index 0 and the departure from n - 1, -1: none */
  int list[MAX_V + 1]; /* slots in flow order, then the free one */
} win;

typedef struct chmap {
  gb g;          /* the PEs using this slot map */
  int nw, turns; /* windows; turns: the ends copy their turning tile (two-chain ends) */
  win w[2];
} chmap;

static int pmod(int a, int m) { return (a % m + m) % m; }

static int win_slot(const win *w, int k, int j) { return w->list[pmod(k - j, w->closed ? w->n : w->n + 1)]; }
static int win_dep(const win *w, int j) { return win_slot(w, w->n - 1, j); }
static int win_arr(const win *w, int j) { return w->list[pmod(-1 - j, w->n + 1)]; }

/* The even (up) and odd (down) tiles of a PE whose coordinate has parity p. */
static void chains_of(const rect_axis *a, int p, int *e, int *ne, int *o, int *no) {
  *ne = *no = 0;
  for (int i = 0; i < a->v; i++) {
    if (((a->v % 2 ? p : 0) + i) % 2) o[(*no)++] = i;
    else e[(*ne)++] = i;
  }
}

static chmap map_of(const rect_axis *a, gb g, int p, int kind) { /* kind: 0 middle, 1 first, 2 last, 3 cycle */
  chmap m;
  memset(&m, 0, sizeof m);
  m.g = g;
  int e[MAX_V], o[MAX_V], ne, no;
  chains_of(a, p, e, &ne, o, &no);
  if (a->v == 1) { /* the one tile */
    m.nw = 1;
    m.w[0] = (win){1, 0, a->col[0], a->col[0], {0, 1}};
    return m;
  }
  if (kind == 0) {
    m.nw = 2;
    m.w[0] = (win){ne, 0, a->col[0], a->col[0], {0}};
    m.w[1] = (win){no, 0, a->col[1], a->col[1], {0}};
    for (int k = 0; k < ne; k++) m.w[0].list[k] = e[k];
    for (int k = 0; k < no; k++) m.w[1].list[k] = o[no - 1 - k];
    m.w[0].list[ne] = a->v;
    m.w[1].list[no] = a->v + 1;
    return m;
  }
  /* the U (or the cycle): first PE odd top .. odd bottom, even bottom .. even top; the last
   * PE the other way round */
  m.nw = 1;
  win *w = &m.w[0];
  w->n = a->v;
  w->closed = kind == 3;
  w->in = kind == 1 ? a->col[1] : kind == 2 ? a->col[0] : -1;
  w->out = kind == 1 ? a->col[0] : kind == 2 ? a->col[1] : -1;
  int k = 0;
  if (kind == 2)
    for (int i = 0; i < ne; i++) w->list[k++] = e[i];
  for (int i = no - 1; i >= 0; i--) w->list[k++] = o[i];
  if (kind != 2)
    for (int i = 0; i < ne; i++) w->list[k++] = e[i];
  w->list[k] = a->v;
  return m;
}

/* The slot maps of an axis: with `turns`, the middle's per parity (the ends copy); else
 * one per role. */
static int axis_maps(const rect_axis *a, int turns, chmap *out) {
  int n = a->len, k = 0;
  gb all = {wf_guard0(), 0};
  if (a->v == 1) {
    out[k++] = map_of(a, all, 0, 0);
    return k;
  }
  if (n == 1) {
    out[k++] = map_of(a, all, 0, 3);
    return k;
  }
  int np = a->v % 2 ? 2 : 1;
  if (turns) {
    for (int p = 0; p < np; p++) {
      gb g = all;
      if (np == 2) wf_gadd(&g.g, wf_gterm(a->coord, 2, 0), WF_CMP_EQ, wf_term_int(p));
      out[k] = map_of(a, g, p, 0);
      out[k++].turns = 1;
    }
    return k;
  }
  gb first = all, last = all;
  gb_cmp(&first, a, WF_CMP_EQ, 0);
  gb_cmp(&last, a, WF_CMP_EQ, n - 1);
  out[k++] = map_of(a, first, 0, 1);
  out[k++] = map_of(a, last, np == 2 ? (n - 1) % 2 : 0, 2);
  for (int p = 0; p < np; p++) {
    int any = 0; /* a middle coordinate of parity p */
    for (int c = 1; c < n - 1; c++) any |= np == 1 || c % 2 == p;
    if (!any) continue;
    gb g = all;
    gb_cmp(&g, a, WF_CMP_GE, 1);
    gb_cmp(&g, a, WF_CMP_LT, n - 1);
    if (np == 2) wf_gadd(&g.g, wf_gterm(a->coord, 2, 0), WF_CMP_EQ, wf_term_int(p));
    out[k++] = map_of(a, g, p, 0);
  }
  return k;
}

static void emit_if(wf_lower *L, const gb *b, wf_peop op, wf_pe_arg *args) {
  if (!b->dead) wf_emit(L, &b->g, op, args);
}

static gb with(gb b, const wf_pe_guard *g) {
  if (g)
    for (int i = 0; i < g->n; i++) wf_guard_add(&b.g, g->c[i].a, (wf_cmp)g->c[i].cmp, g->c[i].b);
  return b;
}

/* The transfers of step j along the axis (guarded by `g` too). */
static void mesh_shift(wf_lower *L, const rect_axis *a, const chmap *maps, int nm, int j, const wf_pe_guard *g) {
  int64_t group = a->vo * a->tile;
  for (int i = 0; i < nm; i++) {
    const chmap *m = &maps[i];
    gb base = with(m->g, g);
    for (int q = 0; q < m->nw; q++) {
      const win *w = &m->w[q];
      if (w->closed) continue;
      /* two-chain ends: the up chain has no arrival on the first PE and no departure on
       * the last, the down chain the other way round */
      gb gin = base, gout = base;
      if (m->turns) {
        gb_cmp(&gin, a, q ? WF_CMP_LT : WF_CMP_GE, q ? a->len - 1 : 1);
        gb_cmp(&gout, a, q ? WF_CMP_GE : WF_CMP_LT, q ? 1 : a->len - 1);
      }
      if (w->in >= 0)
        emit_if(L, &gin, WF_PEOP_ARECV,
                (wf_pe_arg[]){wf_arg_int(w->in), wf_arg_at(a->buf[0], win_arr(w, j) * group), wf_arg_int(group),
                              wf_arg_int(a->done)});
      if (w->out >= 0)
        emit_if(L, &gout, WF_PEOP_ASEND,
                (wf_pe_arg[]){wf_arg_int(w->out), wf_arg_at(a->buf[0], win_dep(w, j) * group), wf_arg_int(group),
                              wf_arg_int(a->done)});
    }
    if (m->turns) {
      gb first = base, last = base;
      gb_cmp(&first, a, WF_CMP_EQ, 0);
      gb_cmp(&last, a, WF_CMP_EQ, a->len - 1);
      emit_if(L, &first, WF_PEOP_COPY,
              (wf_pe_arg[]){wf_arg_at(a->buf[0], win_arr(&m->w[0], j) * group), wf_arg_at(a->buf[0], win_dep(&m->w[1], j) * group),
                            wf_arg_int(group)});
      emit_if(L, &last, WF_PEOP_COPY,
              (wf_pe_arg[]){wf_arg_at(a->buf[0], win_arr(&m->w[1], j) * group), wf_arg_at(a->buf[0], win_dep(&m->w[0], j) * group),
                            wf_arg_int(group)});
    }
  }
}

/* The slot of tile i in step j under map m. */
static int map_slot(const chmap *m, int i, int j) {
  for (int q = 0; q < m->nw; q++)
    for (int k = 0; k < m->w[q].n; k++)
      if (m->w[q].list[k] == i) return win_slot(&m->w[q], k, j);
  WF_ASSERT(0);
  return 0;
}

/* The axes' slot maps (axis_maps). */
typedef struct mesh_maps {
  chmap x[4], y[4];
  int nx, ny;
} mesh_maps;

static void mesh_step(wf_lower *L, const rect_axis *ax, const rect_axis *ay, const rect_mm *mm, int j, int shift,
                      const wf_pe_guard *g) {
  const mesh_maps *mp = mm->maps;
  /* A PE runs at most 4 async streams and an issue past that waits: a middle PE's 4 streams
   * of one axis go first, the other axis's after half of the multiplies. */
  int half = (mm->vx * mm->vy + 1) / 2;
  for (int part = 0; part < 2; part++) {
    if (shift) mesh_shift(L, part ? ay : ax, part ? mp->y : mp->x, part ? mp->ny : mp->nx, j, g);
    for (int ix = 0; ix < mp->nx; ix++) {
      const chmap *cx = &mp->x[ix];
      if (cx->g.dead) continue;
      /* a guard holds 4 conditions: the x role's is the `if` of a one-iteration loop */
      if (cx->g.g.n)
        wf_emit(L, &cx->g.g, WF_PEOP_LOOP,
                (wf_pe_arg[]){wf_arg_term(wf_term_var(mm->iv, 0)), wf_arg_int(0), wf_arg_int(1)});
      for (int iy = 0; iy < mp->ny; iy++) {
        const chmap *cy = &mp->y[iy];
        gb b = cy->g;
        if (b.dead) continue;
        for (int r = 0; r < mm->vy; r++)
          for (int t = 0; t < mm->vx; t++) {
            if ((r * mm->vx + t < half) == part) continue;
            int64_t sa = map_slot(cx, t, j), sb = map_slot(cy, r, j);
            wf_emit(L, b.g.n ? &b.g : NULL, WF_PEOP_MATMUL,
                    (wf_pe_arg[]){wf_arg_at(mm->gc, mm->direct ? r * mm->mt * mm->n : ((int64_t)r * mm->vx + t) * mm->zc),
                                  wf_arg_at(ax->buf[0], (sa * mm->vy + r) * ax->tile),
                                  wf_arg_at(ay->buf[0], (sb * mm->vx + t) * ay->tile), wf_arg_int(mm->mt),
                                  wf_arg_int(mm->kt), wf_arg_int(mm->nt)});
          }
      }
      if (cx->g.g.n) wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    }
  }
  wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
}

typedef void step_fn(wf_lower *L, const rect_axis *ax, const rect_axis *ay, const rect_mm *mm, int j, int shift,
                     const wf_pe_guard *g);

/* The L steps without local copies (Cannon: rotate_step, MeshGEMM: mesh_step): a tile that
 * stays on the PE keeps its slot and the step renames the slots instead. Slot offsets are
 * constants, so the steps are unrolled over the period of the renaming inside a loop over
 * periods; the remaining steps follow, and the very last step does not shift. */
static void rotate_steps(wf_lower *L, step_fn *step, const rect_axis *ax, const rect_axis *ay, const rect_mm *mm,
                         int steps, int period, wf_pe_term tq) {
  int full = steps / period, rest = steps % period;
  if (full) {
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tq), wf_arg_int(0), wf_arg_int(full)});
    wf_pe_guard notlast = wf_guard0();
    wf_gadd(&notlast, tq, WF_CMP_LT, wf_term_int(full - 1));
    for (int j = 0; j < period; j++)
      step(L, ax, ay, mm, j, !(rest == 0 && j == period - 1 && full == 1),
           rest == 0 && j == period - 1 ? &notlast : NULL);
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  for (int j = 0; j < rest; j++) step(L, ax, ay, mm, j, j < rest - 1, NULL);
}

/* Cannon's alignment when the steps rename slots: no local copies there either. Line o of
 * the axis (virtual index I = vo*other + o) shifts I times, in iterations u < I. Its tiles
 * were gathered into the window at offset -I mod S (gather_line), so before the shift of
 * iteration u the leaving tile is in slot (u - I) mod S, the arriving one lands in the free
 * slot v further on, and after the I shifts tile i is in slot i, where the steps start. A
 * guard term has one base, so `(u - I) mod S == e` is written `u % S == (vo*other) % S + k`
 * for the two k that (o + e) mod S can wrap to (the other one can never hold). A 1-PE axis
 * rotates by renaming only: nothing to do here. */
static void rotate_align_line(wf_lower *L, const rect_axis *a, const rect_axis *other, int o, wf_pe_term tu) {
  if (a->len == 1) return;
  int S = slots(a);
  wf_pe_term I = wf_term_scaled(other->coord, a->vo, o), base = wf_term_scaled(other->coord, a->vo, 0);
  for (int e = 0; e < S; e++)
    for (int w = 0; w < 2; w++) {
      wf_pe_guard g = wf_guard0();
      wf_gadd(&g, tu, WF_CMP_LT, I);
      wf_gadd(&g, wf_gterm(tu, S, 0), WF_CMP_EQ, wf_gterm(base, S, (o + e) % S - w * S));
      wf_emit(L, &g, WF_PEOP_ARECV,
              (wf_pe_arg[]){wf_arg_int(a->col[0]), wf_arg_at(a->buf[0], (((e + a->v) % S) * a->vo + o) * a->tile),
                            wf_arg_int(a->tile), wf_arg_int(a->done)});
      wf_emit(L, &g, WF_PEOP_ASEND,
              (wf_pe_arg[]){wf_arg_int(a->col[0]), wf_arg_at(a->buf[0], ((int64_t)e * a->vo + o) * a->tile),
                            wf_arg_int(a->tile), wf_arg_int(a->done)});
    }
}

/* The slot tile i of line o starts in (rotate_align_line): (i - I) mod S, I = vo*other + o,
 * for the PEs whose I mod S is e. */
static int rotate_slot(const rect_axis *a, int i, int e) { return ((i - e) % slots(a) + slots(a)) % slots(a); }

/* Routes of the axis's channels and their colors (once per class): the square rings' links
 * (v = 1, or Cannon), or with v >= 2 MeshGEMM's two channels of one-hop links, up (east or
 * south) on the ring's colors and down on the hop colors, each line's links by parity
 * (ring_links.c). Returns 0, or -1 after reporting the target has no color left. */
static int axis_routes(wf_lower *L, const rect_axis *ax, int meshgemm, int purpose, int d, wf_loc loc) {
  wf_ring_line line = {ax->coord, d ? WF_DIR_N : WF_DIR_W, d ? WF_DIR_S : WF_DIR_E, ax->len};
  if (!meshgemm) return wf_ring_line_colors(L, &wf_ring_plain, purpose, &line, loc);
  if (ax->v == 1) return wf_ring_line_colors(L, &wf_ring_interleave, purpose, &line, loc);
  int *up = malloc((size_t)ax->len * sizeof *up), *down = malloc((size_t)ax->len * sizeof *down), rc;
  WF_ASSERT(up && down);
  for (int i = 0; i < ax->len; i++) {
    up[i] = i + 1 < ax->len ? i + 1 : -1;
    down[i] = i > 0 ? i - 1 : -1;
  }
  rc = wf_ring_dest_links(L, purpose, &line, up, loc) ||
       wf_ring_dest_links(L, WF_COLOR_MESH_HOP_X_LO + d, &line, down, loc);
  free(up), free(down);
  return rc ? -1 : 0;
}

/* Rows (or columns) of tile i of size sz that lie in a block of `len`: sz, fewer for the
 * last, <= 0 past the end. */
static int64_t clip(int64_t len, int i, int64_t sz) { return len - i * sz < sz ? len - i * sz : sz; }

typedef struct rect_gather {
  int sa, sb, rename; /* the operands' symbols; rename: Cannon's window placement */
  int preskew;        /* WF_PRESKEW_A / _B: the host wrote that operand aligned */
  int64_t m, n, ka, kb, mt, kt, nt;
} rect_gather;

/* Gathers line o of one operand: A's row of tiles o (d = 0) or B's column o (d = 1). Renaming
 * Cannon puts line I's tile i into slot (i - I) mod S (rotate_align_line): one guarded copy
 * per value of I mod S; a pre-skewed operand's tiles are aligned already and go to slot i,
 * where the steps start. `extra` guards every copy too (NULL: none). */
static void gather_line(wf_lower *L, const rect_axis *ax, const rect_axis *ay, const rect_gather *gt, int d, int o,
                        const wf_pe_guard *extra) {
  const rect_axis *a = d ? ay : ax, *other = d ? ax : ay;
  int rename = gt->rename && !(gt->preskew >> d & 1), S = rename ? slots(a) : 1;
  for (int i = 0; i < a->v; i++) {
    int r = d ? i : o, t = d ? o : i;
    int64_t rows = d ? clip(gt->kb, r, gt->kt) : clip(gt->m, r, gt->mt);
    int64_t cols = d ? clip(gt->n, t, gt->nt) : clip(gt->ka, t, gt->kt);
    if (rows <= 0 || cols <= 0) continue;
    for (int e = 0; e < S; e++) {
      wf_pe_guard g = extra ? *extra : wf_guard0();
      if (rename) wf_gadd_mod(&g, wf_term_scaled(other->coord, a->vo, o), S, e);
      if (never(&g)) continue;
      int64_t slot = rename ? rotate_slot(a, i, e) : i;
      wf_pe_arg dst = wf_arg_at(a->buf[0], (slot * a->vo + o) * a->tile);
      wf_pe_arg src = d ? wf_arg_at(gt->sb, r * gt->kt * gt->n + t * gt->nt) : wf_arg_at(gt->sa, r * gt->mt * gt->ka + t * gt->kt);
      wf_emit(L, g.n ? &g : NULL, WF_PEOP_COPY2D,
              (wf_pe_arg[]){dst, src, wf_arg_int(rows), wf_arg_int(cols), wf_arg_int(d ? gt->nt : gt->kt),
                            wf_arg_int(d ? gt->n : gt->ka)});
    }
  }
}

/* The alignment round (u, o) of each zeroing of C's tiles: the PE zeroes tile k while the
 * streams of round (ustep * (1 + k / no), k % no) move (round u = 0 gathers the lines); -1:
 * after the alignment (not enough rounds). */
static int zero_round(int k, int no, int ustep, int iters, int *o) {
  int u = ustep * (1 + k / no);
  *o = k % no;
  return u < iters ? u : -1;
}

/* What alignment round (u, o) does besides its shifts, while the PE waits for them: in
 * u = 0 the gathers of line o + 1, and the zeroing of C's tiles zero_round gives it. */
static void round_extras(wf_lower *L, const rect_axis *ax, const rect_axis *ay, const rect_gather *gt, int o, int no,
                         wf_pe_term tu, int ustep, int iters, int gc, int64_t zc, int nz) {
  wf_pe_guard u0 = wf_guard0();
  wf_gadd(&u0, tu, WF_CMP_EQ, wf_term_int(0));
  for (int d = 0; d < 2; d++)
    if (o + 1 < (d ? ay : ax)->vo) gather_line(L, ax, ay, gt, d, o + 1, &u0);
  for (int k = 0; k < nz; k++) {
    int ko, ur = zero_round(k, no, ustep, iters, &ko);
    if (ur < 0 || ko != o) continue;
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, tu, WF_CMP_EQ, wf_term_int(ur));
    wf_emit(L, &g, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(gc, k * zc), wf_arg_int(zc)});
  }
}

/* The zeroings no round took. */
static void late_zero(wf_lower *L, int no, int ustep, int iters, int gc, int64_t zc, int nz) {
  for (int k = 0; k < nz; k++) {
    int ko;
    if (zero_round(k, no, ustep, iters, &ko) < 0) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(gc, k * zc), wf_arg_int(zc)});
  }
}


/* wf_gemm_rect_k_fits and wf_gemm_rect_k_pad (the K cuts the blocks follow) are in
 * gemm_kcut.c: the chooser asks the same question before an algorithm is set. */

int wf_lower_gemm_rect(wf_lower *L, const wf_op *op, wf_lowered_op *out, wf_gemm_algo algo, int preskew) {
  wf_value va = op->operands[0], vb = op->operands[1], vc = op->results[0];
  int W = L->w, H = L->h, Lc = (int)wf_lcm(W, H), vx = Lc / W, vy = Lc / H;
  int meshgemm = algo == WF_GEMM_MESHGEMM;
  const char *name = wf_gemm_algo_names[algo];
  int64_t m, ka, kb, n, r_, c_;
  wf_lower_block(L, va, &m, &ka);
  wf_lower_block(L, vb, &kb, &n);
  wf_lower_block(L, vc, &r_, &c_);
  WF_ASSERT(r_ == m && c_ == n);
  if (vx > MAX_V || vy > MAX_V) {
    /* the program is unrolled over a PE's virtual positions: keep it small */
    wf_error(op->loc, "dist.gemm{algo=%s} on a %dx%d region: %d virtual positions per PE along %s "
             "(lcm(W, H) / %s; at most %d)", name, W, H, vx > vy ? vx : vy, vx > vy ? "x" : "y",
             vx > vy ? "W" : "H", MAX_V);
    return WF_EXIT_UNSUPPORTED;
  }
  /* The blocks wf_lower_block gives: K padded to L tiles (wf_gemm_rect_k_pad) when the
   * host-written operands allow it, else partition's ceil(K/W) and ceil(K/H): then the
   * operands whose cuts miss L tiles are re-cut to K' = L ceil(K/L) over the fabric first,
   * into scratch (wf_relayout_gemm_k; the chooser adds the same prediction). */
  int ksa = -1, ksb = -1;
  int64_t kcycles = 0;
  if (W > 1 && H > 1 && (ka * W != kb * H || (ka * W) % Lc)) {
    int rc = wf_relayout_gemm_k(L, op, Lc, &ka, &kb, &ksa, &ksb, &kcycles);
    if (rc) return rc;
  }
  /* K tiles: A's block is v_x tiles, B's v_y. On a 1-wide region one operand's block is the
   * whole K (its K is not split): it is cut like the other's, its last tiles zero-filled. */
  int64_t kt = W == 1 ? kb : ka / vx, mt = (m + vy - 1) / vy, nt = (n + vx - 1) / vx;
  int64_t za = mt * kt, zb = kt * nt, zc = mt * nt;
  if ((int64_t)vx * vy * (za > zb ? (za > zc ? za : zc) : (zb > zc ? zb : zc)) > INT32_MAX) {
    wf_error(op->loc, "dist.gemm{algo=%s}: a tile buffer is past the PE's addressing", name);
    return WF_EXIT_NOFIT;
  }
  /* a pre-skewed weight's K is never re-cut (wf_gemm_preskewable) */
  WF_ASSERT(!((preskew & WF_PRESKEW_A) && ksa >= 0) && !((preskew & WF_PRESKEW_B) && ksb >= 0));
  int sa = ksa >= 0 ? ksa : wf_lower_sym(L, va), sb = ksb >= 0 ? ksb : wf_lower_sym(L, vb), sc = wf_lower_sym(L, vc);
  out->lowering = meshgemm ? "meshgemm-interleave-lcm" : "cannon-ring-lcm";
  /* the K re-cut is setup, the loop's (wf_gemm_phase); its transfers sync the rows, so a
   * re-cut GEMM starts them together */
  wf_row_skew rs = wf_lower_row_skew(L);
  if (kcycles) rs.start = NULL;
  out->predicted = wf_gemm_shift_sched(L->t, meshgemm, W, H, m, ka, kb, n, preskew, 2, NULL, out->phase_predicted, &rs) +
                   kcycles;
  L->skew_out_ok = rs.have_end;
  out->has_phases = L->gemm_phases;

  rect_axis ax = (rect_axis){.v = vx, .len = W, .vo = vy, .tile = za, .coord = wf_term(WF_TERM_X, 0), .col = {-1, -1}};
  rect_axis ay = (rect_axis){.v = vy, .len = H, .vo = vx, .tile = zb, .coord = wf_term(WF_TERM_Y, 0), .col = {-1, -1}};
  rect_axis *axes[2] = {&ax, &ay};
  for (int d = 0; d < 2; d++) {
    rect_axis *a = axes[d];
    if (meshgemm) interleave_acts(a);
    else plain_acts(a);
    if (a->len == 1) continue;
    int purpose = (meshgemm ? WF_COLOR_MESH_RING_X : WF_COLOR_CANNON_RING_X) + d;
    /* the routes come with the colors, once per class */
    if (L->color[purpose] < 0 && axis_routes(L, a, meshgemm, purpose, d, op->loc)) return WF_EXIT_NOFIT;
    a->col[0] = L->color[purpose];
    if (meshgemm && a->v > 1) a->col[1] = L->color[WF_COLOR_MESH_HOP_X_LO + d];
  }
  ax.done = ay.done = wf_lower_done_task(L);
  /* Cannon's steps rename instead of copying when the unrolled period is small: buffer 0
   * then holds one more tile slot per row for the tile in flight (rotate_steps). */
  int period = meshgemm ? 0 : wf_gemm_rect_cannon_period(W, H);
  /* MeshGEMM's steps rename along its chains (mesh_step): two free slots per row; its
   * alignment still copies, in buffers 0 and 1 */
  int mturns = 0, mperiod = meshgemm ? wf_gemm_rect_meshgemm_period(W, H, &mturns) : 0;
  mesh_maps maps;
  if (mperiod) {
    maps.nx = axis_maps(&ax, mturns, maps.x);
    maps.ny = axis_maps(&ay, mturns, maps.y);
  }
  /* The buffers (gemm_cost_rect.c, which the chooser's SRAM check reads too): buffer 0's
   * slots per row; buffer 1 unless the renaming steps and alignment use one buffer; C's tiles
   * unless C accumulates in place (its tiles are its block's row bands: v_x = 1, no ragged
   * rows), copied back at the end. */
  wf_gemm_bufs bf;
  wf_gemm_rect_buffers(meshgemm, W, H, m, ka, kb, n, &bf);
  int sx = bf.sx, sy = bf.sy;
  ax.buf[0] = wf_lower_temp(L, "$gemm_a0", bf.a0 * 4);
  ay.buf[0] = wf_lower_temp(L, "$gemm_b0", bf.b0 * 4);
  if (!period) {
    ax.buf[1] = wf_lower_temp(L, "$gemm_a1", bf.a1 * 4);
    ay.buf[1] = wf_lower_temp(L, "$gemm_b1", bf.b1 * 4);
  }
  int direct = bf.c == 0;
  WF_ASSERT(direct == (vx == 1 && m == vy * mt));
  int gc = direct ? sc : wf_lower_temp(L, "$gemm_c", bf.c * 4);

  /* Gather the tiles. Ragged tiles (M or N not cut evenly) get zero rows / columns: they
   * only reach C's padding, which is not copied back. Renaming Cannon gathers line I's tile
   * i into slot (i - I) mod S (rotate_align_line): one guarded copy per value of I mod S. */
  if (m < vy * mt || ka < vx * kt)
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(ax.buf[0]), wf_arg_int((period ? sx : vx) * vy * za)});
  if (n < vx * nt || kb < vy * kt)
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(ay.buf[0]), wf_arg_int((period ? sy : vy) * vx * zb)});
  /* Line 0 of each operand now; line o + 1 in alignment round (0, o), while the PE waits
   * for that round's streams (the lines are disjoint). C's tiles are zeroed in later rounds
   * (zero_round). */
  rect_gather gt = {sa, sb, period > 0, preskew, m, n, ka, kb, mt, kt, nt};
  gather_line(L, &ax, &ay, &gt, 0, 0, NULL);
  gather_line(L, &ax, &ay, &gt, 1, 0, NULL);

  /* Alignment: virtual row I = v_y y + r of A shifts by its ring's count for I, virtual
   * column J = v_x x + t of B by its count for J; one row of tiles at a time (a color carries
   * one stream at a time), both operands' row o together, then a join. */
  int u = wf_lower_var(L, "u"), iv = wf_lower_var(L, "i");
  wf_pe_term tu = wf_term_var(u, 0);
  int no = vx > vy ? vx : vy;
  /* The alignment's rounds also carry later lines' gathers and C's zeroing, and run even
   * when both operands are pre-skewed: then nothing shifts in them, and they are setup (the
   * loop's phase), so a pre-skewed pair's alignment is 0 here as on a square region. */
  if (preskew != (WF_PRESKEW_A | WF_PRESKEW_B)) wf_gemm_phase(L, WF_GEMM_PHASE_ALIGN);
  if (period) { /* Cannon renaming: the line of virtual index I shifts I times */
    wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tu), wf_arg_int(0), wf_arg_int(Lc)});
    for (int o = 0; o < no; o++) {
      for (int d = 0; d < 2; d++)
        if (o < axes[d]->vo && !(preskew >> d & 1)) rotate_align_line(L, axes[d], axes[1 - d], o, tu);
      round_extras(L, &ax, &ay, &gt, o, no, tu, 1, Lc, gc, zc, vx * vy);
      wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    }
    wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
    late_zero(L, no, 1, Lc, gc, zc, vx * vy);
  } else {
  const wf_ring *ring = meshgemm ? &wf_ring_interleave : &wf_ring_plain;
  wf_ring_align al[2][MAX_V];
  int iters = 0;
  for (int d = 0; d < 2; d++)
    for (int o = 0; o < axes[d]->vo; o++) {
      wf_pe_term other = wf_term_scaled(axes[1 - d]->coord, axes[d]->vo, o);
      ring->align(&al[d][o], other, Lc, tu);
      iters = al[d][o].iters;
    }
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tu), wf_arg_int(0), wf_arg_int(iters)});
  for (int o = 0; o < no; o++) {
    for (int d = 0; d < 2; d++) {
      if (o >= axes[d]->vo || preskew >> d & 1) continue; /* pre-skewed: aligned already */
      const wf_ring_align *ra = &al[d][o];
      for (int q = 0; q < 2; q++)
        for (int i = 0; i < (q ? ra->n1 : ra->n0); i++) {
          if (never(q ? &ra->from1[i] : &ra->from0[i])) continue;
          /* a one-iteration loop is the `if` of the row's guard; the tile guards go inside */
          wf_emit(L, q ? &ra->from1[i] : &ra->from0[i], WF_PEOP_LOOP,
                  (wf_pe_arg[]){wf_arg_term(wf_term_var(iv, 0)), wf_arg_int(0), wf_arg_int(1)});
          emit_shift(L, axes[d], NULL, q, o, 0);
          wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
        }
    }
    /* INTERLEAVE's alignment shifts in even iterations only */
    round_extras(L, &ax, &ay, &gt, o, no, tu, meshgemm ? 2 : 1, iters, gc, zc, vx * vy);
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
  }
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  late_zero(L, no, meshgemm ? 2 : 1, iters, gc, zc, vx * vy);
  /* Rows that shifted an odd number of times sit in buffer 1. */
  for (int d = 0; d < 2; d++) {
    rect_axis *a = axes[d];
    for (int o = 0; o < a->vo && !(preskew >> d & 1); o++)
      for (int i = 0; i < al[d][o].nf; i++)
        if (!never(&al[d][o].fixup[i]))
          wf_emit(L, &al[d][o].fixup[i], WF_PEOP_COPY2D,
                (wf_pe_arg[]){wf_arg_at(a->buf[0], o * a->tile), wf_arg_at(a->buf[1], o * a->tile), wf_arg_int(a->v),
                              wf_arg_int(a->tile), wf_arg_int(a->vo * a->tile), wf_arg_int(a->vo * a->tile)});
  }
  }

  int sv = wf_lower_var(L, "s");
  wf_pe_term ts = wf_term_var(sv, 0);
  wf_gemm_phase(L, WF_GEMM_PHASE_LOOP);
  rect_mm mm = {gc, direct, vx, vy, mt, kt, nt, n, zc, mperiod ? &maps : NULL, iv};
  if (period) {
    rotate_steps(L, rotate_step, &ax, &ay, &mm, Lc, period, ts);
  } else if (mperiod) {
    rotate_steps(L, mesh_step, &ax, &ay, &mm, Lc, mperiod, ts);
  } else {
  /* L steps: multiply the v_x v_y tile pairs of buffers s % 2 while the next tiles move
   * into the other pair; the last step does not shift. */
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(ts), wf_arg_int(0), wf_arg_int(Lc)});
  for (int p = 0; p < 2; p++) {
    wf_pe_guard g = wf_guard0();
    wf_gadd(&g, wf_gterm(ts, 2, 0), WF_CMP_EQ, wf_term_int(p));
    wf_pe_guard gs = g;
    wf_gadd(&gs, ts, WF_CMP_LT, wf_term_int(Lc - 1));
    emit_shift(L, &ax, &gs, p, 0, 1);
    emit_shift(L, &ay, &gs, p, 0, 1);
    for (int r = 0; r < vy; r++)
      for (int t = 0; t < vx; t++)
        wf_emit(L, &g, WF_PEOP_MATMUL,
                (wf_pe_arg[]){wf_arg_at(gc, direct ? r * mt * n : ((int64_t)r * vx + t) * zc),
                              wf_arg_at(ax.buf[p], ((int64_t)t * vy + r) * za), wf_arg_at(ay.buf[p], ((int64_t)r * vx + t) * zb),
                              wf_arg_int(mt), wf_arg_int(kt), wf_arg_int(nt)});
  }
  wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  }
  wf_gemm_phase(L, WF_GEMM_PHASE_DRAIN); /* C's tiles back into its block */
  if (!direct)
    for (int r = 0; r < vy; r++)
      for (int t = 0; t < vx; t++) {
        int64_t rows = clip(m, r, mt), cols = clip(n, t, nt);
        if (rows > 0 && cols > 0)
          wf_emit(L, NULL, WF_PEOP_COPY2D,
                  (wf_pe_arg[]){wf_arg_at(sc, r * mt * n + t * nt), wf_arg_at(gc, ((int64_t)r * vx + t) * zc), wf_arg_int(rows),
                                wf_arg_int(cols), wf_arg_int(n), wf_arg_int(nt)});
      }
  return 0;
}
