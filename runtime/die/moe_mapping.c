/* Mappings of attention TP groups onto the die mesh and their Full Token Domains (MoEntwine
 * §IV): baseline (groups as blocks), ER-Mapping (FTDs as blocks, groups entwined across them)
 * and hierarchical ER (ER inside each wafer, the wafer as FTD). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "waferc/diag.h"

const char *wf_moe_mapping_name(wf_moe_mapping_kind k) {
  return k == WF_MOE_BASELINE ? "baseline" : k == WF_MOE_ER ? "er" : "her";
}

/* A cycle through a gw x gh grid with one-hop steps when a side is even (column 0 kept for
 * the way back); a line is folded (0, 2, 4, ..., 5, 3, 1) so no step is longer than two. */
static void cycle_order(int gw, int gh, int *ox, int *oy) {
  int n = 0;
  if (gw == 1 || gh == 1) {
    int len = gw * gh;
    for (int i = 0; i < len; i += 2) ox[n] = gw == 1 ? 0 : i, oy[n++] = gw == 1 ? i : 0;
    for (int i = (len - 1) | 1; i > 0; i -= 2)
      if (i < len) ox[n] = gw == 1 ? 0 : i, oy[n++] = gw == 1 ? i : 0;
    return;
  }
  if (gh % 2 == 0) {
    ox[n] = 0, oy[n++] = 0;
    for (int y = 0; y < gh; y++)
      for (int i = 1; i < gw; i++) ox[n] = y % 2 == 0 ? i : gw - i, oy[n++] = y;
    for (int y = gh - 1; y >= 1; y--) ox[n] = 0, oy[n++] = y;
    return;
  }
  if (gw % 2 == 0) {
    cycle_order(gh, gw, oy, ox); /* transposed */
    return;
  }
  for (int y = 0; y < gh; y++) /* both odd: a snake; its closing step is longer */
    for (int i = 0; i < gw; i++) ox[n] = y % 2 == 0 ? i : gw - 1 - i, oy[n++] = y;
}

/* The block bw x bh (bw * bh = area) that tiles a W x H mesh, preferring blocks that also
 * tile a wafer (ww x wh) so none straddles a border, then the squarest. 0, or -1 if none. */
static int pick_block(int area, int W, int H, int ww, int wh, int *bw, int *bh) {
  int best = INT_MAX;
  for (int a = 1; a <= area; a++) {
    if (area % a) continue;
    int b = area / a;
    if (W % a || H % b) continue;
    int straddles = (a <= ww && ww % a) || (b <= wh && wh % b) || (a > ww && a % ww) || (b > wh && b % wh);
    int score = straddles * 10000 + abs(a - b) * 2 + (a < b);
    if (score < best) best = score, *bw = a, *bh = b;
  }
  return best == INT_MAX ? -1 : 0;
}

int wf_moe_mapping_build(const wf_die_system *s, wf_moe_mapping_kind kind, int tp, wf_moe_mapping *m) {
  memset(m, 0, sizeof *m);
  int n = s->n, per_wafer = s->t.dies_w * s->t.dies_h;
  if (tp < 1 || n % tp || (kind == WF_MOE_HER && per_wafer % tp)) {
    wf_error_at("--tp", "TP=%d does not divide the %s (%d dies): choose a divisor", tp,
                kind == WF_MOE_HER ? "wafer" : "system", kind == WF_MOE_HER ? per_wafer : n);
    return WF_EXIT_UNSUPPORTED;
  }
  m->kind = kind, m->n = n, m->tp = tp, m->groups = n / tp;
  m->group_of = malloc(sizeof(int) * (size_t)n);
  m->ftd_of = malloc(sizeof(int) * (size_t)n);
  m->ring = malloc(sizeof(int) * (size_t)n);
  int *cx = malloc(sizeof(int) * (size_t)n), *cy = malloc(sizeof(int) * (size_t)n);
  WF_ASSERT(m->group_of && m->ftd_of && m->ring && cx && cy);
  int rc = 0;
  if (kind == WF_MOE_BASELINE) {
    int bw, bh;
    if (pick_block(tp, s->w, s->h, s->t.dies_w, s->t.dies_h, &bw, &bh)) goto no_tiling;
    m->blk_w = bw, m->blk_h = bh, m->nftd = tp;
    int nbx = s->w / bw;
    cycle_order(bw, bh, cx, cy);
    for (int d = 0; d < n; d++) {
      int x = wf_die_x(s, d), y = wf_die_y(s, d);
      m->group_of[d] = (y / bh) * nbx + x / bw;
      m->ftd_of[d] = (y % bh) * bw + x % bw;
    }
    for (int g = 0; g < m->groups; g++)
      for (int r = 0; r < tp; r++)
        m->ring[g * tp + r] = wf_die_id(s, (g % nbx) * bw + cx[r], (g / nbx) * bh + cy[r]);
  } else {
    /* ER on the whole system, HER on each wafer: an FTD block holds one die of each group. */
    int W = kind == WF_MOE_ER ? s->w : s->t.dies_w, H = kind == WF_MOE_ER ? s->h : s->t.dies_h;
    int G = W * H / tp, fw, fh;
    if (pick_block(G, W, H, kind == WF_MOE_ER ? s->t.dies_w : W, kind == WF_MOE_ER ? s->t.dies_h : H, &fw, &fh))
      goto no_tiling;
    m->blk_w = fw, m->blk_h = fh;
    int nbx = W / fw, nby = H / fh;
    cycle_order(nbx, nby, cx, cy);
    m->nftd = kind == WF_MOE_ER ? tp : s->wafers_w * s->wafers_h;
    for (int d = 0; d < n; d++) {
      int x = wf_die_x(s, d), y = wf_die_y(s, d), w = kind == WF_MOE_ER ? 0 : wf_die_wafer(s, d);
      int lx = x % W, ly = y % H;
      m->group_of[d] = w * G + (ly % fh) * fw + lx % fw;
      m->ftd_of[d] = kind == WF_MOE_ER ? (ly / fh) * nbx + lx / fw : w;
    }
    int wafers = kind == WF_MOE_ER ? 1 : s->wafers_w * s->wafers_h;
    for (int w = 0; w < wafers; w++) {
      int ox = (w % s->wafers_w) * s->t.dies_w, oy = (w / s->wafers_w) * s->t.dies_h;
      if (kind == WF_MOE_ER) ox = oy = 0;
      for (int g = 0; g < G; g++)
        for (int r = 0; r < tp; r++)
          m->ring[(w * G + g) * tp + r] = wf_die_id(s, ox + cx[r] * fw + g % fw, oy + cy[r] * fh + g / fw);
    }
  }
  goto done;
no_tiling:
  wf_error_at("--tp", "no rectangular tiling of the %dx%d-die %s by %s of %d dies: choose another --tp or --dies",
              kind == WF_MOE_HER ? s->t.dies_w : s->w, kind == WF_MOE_HER ? s->t.dies_h : s->h,
              kind == WF_MOE_HER ? "wafer" : "system", kind == WF_MOE_BASELINE ? "TP groups" : "FTDs",
              kind == WF_MOE_BASELINE ? tp : (kind == WF_MOE_ER ? n : s->t.dies_w * s->t.dies_h) / tp);
  wf_moe_mapping_free(m);
  rc = WF_EXIT_UNSUPPORTED;
done:
  free(cx);
  free(cy);
  return rc;
}

void wf_moe_mapping_free(wf_moe_mapping *m) {
  free(m->group_of);
  free(m->ftd_of);
  free(m->ring);
  memset(m, 0, sizeof *m);
}

double wf_moe_ftd_area(const wf_die_system *s, const wf_moe_mapping *m) {
  double total = 0;
  for (int f = 0; f < m->nftd; f++) {
    int x0 = INT_MAX, y0 = INT_MAX, x1 = -1, y1 = -1;
    for (int d = 0; d < m->n; d++)
      if (m->ftd_of[d] == f) {
        int x = wf_die_x(s, d), y = wf_die_y(s, d);
        if (x < x0) x0 = x;
        if (y < y0) y0 = y;
        if (x > x1) x1 = x;
        if (y > y1) y1 = y;
      }
    total += (double)(x1 - x0 + 1) * (y1 - y0 + 1);
  }
  return m->nftd ? total / m->nftd : 0;
}

int wf_moe_ftd_member(const wf_moe_mapping *m, int f, int g) {
  for (int d = 0; d < m->n; d++)
    if (m->ftd_of[d] == f && m->group_of[d] == g) return d;
  return -1;
}
