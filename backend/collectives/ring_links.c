/* The links of a ring line on colors a WSE router can hold.
 *
 * A router holds one rx set -> one tx set per color and switch position
 * (docs/cycle-model.md). On a ring line every PE sends one message to its successor and
 * receives one, and forwards the messages that pass over it; on one color these would be a
 * PE's `RAMP -> W`, `E -> RAMP` and `W -> E` together, which no router holds. Two messages on
 * one color must not meet at a PE at all: where one is sent, received or forwarded the other
 * would need a second tx set, or share a link or the PE's queue. Each message spans the
 * interval of PEs between its two ends, so coloring them is coloring an interval graph:
 * first fit in order of the lower end uses as many colors as the most intervals over one PE.
 * That is 3 for Cannon's ring (the one-hop links and the wrap-around across the line) and for
 * MeshGEMM's INTERLEAVE ring (every PE sends, receives and forwards one two-hop link), 2 for
 * a line of one-hop links in one direction, and 2 for any ring of two PEs.
 *
 * The PEs are grouped by their rules (a few groups: the ends, and the interior by position
 * modulo the coloring's period), each group a coordinate set (`[x in sN]`), so the program
 * stays bounded while the sets' members grow with the line. The lowering emits its async
 * streams on the palette's first color; wf_emit splits each into one per color, guarded by
 * the set of PEs that send (or receive) on it. */
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/ring_line.h"
#include "waferc/diag.h"

typedef struct link_rule {
  int k, rx;   /* palette index, rx port */
  unsigned tx;
} link_rule;

static void add_rule(link_rule *r, int *n, int k, int rx, unsigned tx) {
  WF_ASSERT(*n < 2 * WF_RING_MAX_COLORS);
  r[(*n)++] = (link_rule){k, rx, tx};
  for (int i = *n - 1; i > 0; i--) { /* sorted: equal rule sets compare equal */
    link_rule a = r[i - 1], b = r[i];
    if (a.k < b.k || (a.k == b.k && a.rx <= b.rx)) break;
    r[i - 1] = b, r[i] = a;
  }
}

/* The class set of the PEs with member[i] (-2: all of them, -1: none). */
static int set_of(wf_pe_class *c, const uint8_t *member, int len) {
  int n = 0;
  for (int i = 0; i < len; i++) n += member[i] != 0;
  if (n == 0) return -1;
  if (n == len) return -2;
  return wf_pe_class_add_set(c, member, len);
}

/* mc[i]: the palette index of PE i's message (-1: none), first fit by lower end (then
 * sender), which is optimal for intervals. Returns the colors used. */
static int color_links(int len, const int *dest, int *mc) {
  int n = 0;
  for (int i = 0; i < len; i++) mc[i] = -1;
  for (int a = 0; a < len; a++)
    for (int i = 0; i < len; i++) {
      int d = dest[i];
      if (d < 0 || d == i || (i < d ? i : d) != a) continue;
      int b = i < d ? d : i;
      unsigned busy = 0;
      for (int u = 0; u < len; u++) {
        int du = dest[u];
        if (mc[u] < 0) continue;
        int au = u < du ? u : du, bu = u < du ? du : u;
        if (au <= b && a <= bu) busy |= 1u << mc[u];
      }
      int k = 0;
      while (busy >> k & 1) k++;
      mc[i] = k;
      if (k + 1 > n) n = k + 1;
    }
  return n;
}

int wf_ring_link_colors(int len, const int *dest) {
  int *mc = malloc((size_t)len * sizeof *mc + 1);
  WF_ASSERT(mc);
  int n = color_links(len, dest, mc);
  free(mc);
  return n;
}

/* The routes of the line's links (mc: their colors) at switch position `pos`, each link from
 * PE i to dest[i] or, reversed, from dest[i] to i: per PE its send, its receive and what it
 * forwards, PEs with the same rules sharing them under one coordinate set. */
static void link_routes(wf_lower *L, wf_pe_term coord, int lo, int hi, int len, const int *dest, const int *mc,
                        const int *pal, int pos, int reversed) {
  int *nr = calloc((size_t)len, sizeof *nr);
  link_rule(*rules)[2 * WF_RING_MAX_COLORS] = calloc((size_t)len, sizeof *rules);
  uint8_t *member = malloc((size_t)len), *seen = calloc((size_t)len, 1);
  WF_ASSERT(nr && rules && member && seen);
  for (int i = 0; i < len; i++) {
    if (mc[i] < 0) continue;
    int from = reversed ? dest[i] : i, to = reversed ? i : dest[i];
    int tx = to < from ? lo : hi, rxd = to < from ? hi : lo, step = to < from ? -1 : 1;
    add_rule(rules[from], &nr[from], mc[i], WF_DIR_RAMP, 1u << tx);
    for (int u = from + step; u != to; u += step) add_rule(rules[u], &nr[u], mc[i], rxd, 1u << tx);
    add_rule(rules[to], &nr[to], mc[i], rxd, 1u << WF_DIR_RAMP);
  }
  for (int i = 0; i < len; i++) {
    if (seen[i] || !nr[i]) continue;
    for (int u = 0; u < len; u++) {
      member[u] = nr[u] == nr[i] && !memcmp(rules[u], rules[i], (size_t)nr[i] * sizeof rules[i][0]);
      seen[u] |= member[u];
    }
    int set = set_of(L->cls, member, len);
    wf_pe_guard g = wf_guard0();
    if (set >= 0) wf_guard_add_in(&g, coord, set);
    for (int r = 0; r < nr[i]; r++)
      wf_pe_class_add_route_pos(L->cls, &g, pal[rules[i][r].k], pos, rules[i][r].rx, rules[i][r].tx);
  }
  free(nr), free(rules), free(member), free(seen);
}

int wf_ring_links(wf_lower *L, wf_pe_term coord, int lo, int hi, int len, const int *dest, const int *pal,
                  int n_pal) {
  WF_ASSERT(L->n_ring_ch < WF_MAX_RING_CH && n_pal <= WF_RING_MAX_COLORS && len >= 1);
  int *mc = malloc((size_t)len * sizeof *mc);
  uint8_t *member = malloc((size_t)len);
  WF_ASSERT(mc && member);
  wf_ring_ch ch;
  memset(&ch, 0, sizeof ch);
  ch.coord = coord;
  ch.n = color_links(len, dest, mc);
  WF_ASSERT(ch.n <= n_pal); /* the caller sized the palette with wf_ring_link_colors */
  link_routes(L, coord, lo, hi, len, dest, mc, pal, 0, 0);
  for (int k = 0; k < ch.n; k++) {
    ch.col[k] = pal[k];
    for (int u = 0; u < len; u++) member[u] = mc[u] == k;
    ch.send_set[k] = set_of(L->cls, member, len);
    for (int u = 0; u < len; u++) member[u] = 0;
    for (int u = 0; u < len; u++)
      if (mc[u] == k) member[dest[u]] = 1;
    ch.recv_set[k] = set_of(L->cls, member, len);
  }
  if (ch.n) L->ring_ch[L->n_ring_ch++] = ch;
  free(mc), free(member);
  return ch.n;
}

int wf_ring_links_reversed(wf_lower *L, const wf_ring_line *line, const int *dest, int first) {
  const wf_ring_ch *ch = NULL;
  for (int i = 0; i < L->n_ring_ch && !ch; i++)
    if (L->ring_ch[i].col[0] == first) ch = &L->ring_ch[i];
  if (!ch) return -1; /* an op before ran out of colors for the line's further ones */
  int *mc = malloc((size_t)line->len * sizeof *mc);
  WF_ASSERT(mc);
  WF_ASSERT(color_links(line->len, dest, mc) == ch->n); /* the forward links' colors */
  link_routes(L, line->coord, line->lo, line->hi, line->len, dest, mc, ch->col, 1, 1);
  free(mc);
  return 0;
}

/* The further colors of a ring purpose (x; the y ones follow each). */
static int extra_purpose(int purpose, int k) {
  int axis = purpose & 1, base = purpose - axis; /* the enum pairs x, y */
  if (k == 0) return purpose;
  if (base == WF_COLOR_MESH_RING_X) return (k == 1 ? WF_COLOR_MESH_RING_X2 : WF_COLOR_MESH_RING_X3) + axis;
  if (base == WF_COLOR_CANNON_RING_X) return (k == 1 ? WF_COLOR_CANNON_RING_X2 : WF_COLOR_CANNON_RING_X3) + axis;
  if (base == WF_COLOR_ATTN_RING_X) return (k == 1 ? WF_COLOR_ATTN_RING_X2 : WF_COLOR_ATTN_RING_X3) + axis;
  WF_ASSERT(base == WF_COLOR_MESH_HOP_X_LO && k == 1);
  return WF_COLOR_MESH_HOP_X_LO2 + axis;
}

int wf_ring_dest_links(wf_lower *L, int purpose, const wf_ring_line *line, const int *dest, wf_loc loc) {
  int n = wf_ring_link_colors(line->len, dest), pal[WF_RING_MAX_COLORS];
  WF_ASSERT(n <= WF_RING_MAX_COLORS);
  for (int k = 0; k < n; k++) {
    pal[k] = wf_lower_color(L, extra_purpose(purpose, k), loc);
    if (pal[k] < 0) return -1;
  }
  wf_ring_links(L, line->coord, line->lo, line->hi, line->len, dest, pal, n);
  return 0;
}

/* INTERLEAVE: even positions pass data right by two, odd positions left by two, the ends turn
 * around, so every neighbour of the ring is at most two hops away. */
void wf_interleave(int index, int n, int *send_index, int *recv_index) {
  int s, r;
  if (n <= 1) {
    *send_index = *recv_index = 0;
    return;
  }
  if (index % 2 == 0) {
    r = index - 2 < 0 ? 0 : index - 2;
    s = index + 2 > n - 1 ? n - 1 : index + 2;
  } else {
    r = index + 2 > n - 1 ? n - 1 : index + 2;
    s = index - 2 < 0 ? 0 : index - 2;
  }
  if (index == 0) r = 1;
  if (index == n - 1) {
    if (n % 2 == 0) r = n - 2;
    else s = n - 2;
  }
  *send_index = s;
  *recv_index = r;
}

int wf_interleave_order(int n, int *order, int *pos) {
  if (n < 1) return -1;
  int x = 0;
  for (int k = 0; k < n; k++) {
    int s, r;
    order[k] = x;
    if (pos) pos[x] = k;
    wf_interleave(x, n, &s, &r);
    x = s;
  }
  return 0;
}
