/* The fabric: routers, their per-color switch positions, links and ramps
 * (docs/cycle-model.md, "Fabric"). A router visits each of its input buffers once per cycle;
 * a ready wavelet at a buffer's head moves when its color's current switch position accepts
 * its rx port, every tx port is free this cycle and every destination buffer has room.
 * Otherwise it waits where it is (backpressure). */
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

static const int dir_dx[WF_DIR_COUNT] = {0, 1, 0, -1, 0};
static const int dir_dy[WF_DIR_COUNT] = {-1, 0, 1, 0, 0};
static const int dir_opp[WF_DIR_COUNT] = {WF_DIR_S, WF_DIR_W, WF_DIR_N, WF_DIR_E, WF_DIR_RAMP};

void wf_router_push(wf_sim *s, wf_router *r, int lc, int rx, wf_wv w) {
  wf_fifo *f = &r->rc[lc].in[rx];
  int was_empty = !f->count;
  wf_fifo_push(s, f, w);
  int i = lc * WF_DIR_COUNT + rx;
  r->ne[i >> 6] |= 1ull << (i & 63);
  r->buffered++;
  /* A sleeper's step changes only if a buffer gains a head; behind a head, nothing. */
  if (!r->active) wf_sim_wake_router(s, r);
  else if (r->asleep && was_empty) wf_sim_wake_sleeper(s, r);
}

static void popped(wf_router *r, int lc, int rx) {
  r->buffered--;
  if (!r->rc[lc].in[rx].count) {
    int i = lc * WF_DIR_COUNT + rx;
    r->ne[i >> 6] &= ~(1ull << (i & 63));
  }
}

/* Resolves the class's .route rules for this PE into per-position tx tables. Later matching
 * rules override earlier ones; directions that leave the PE's region are dropped (the edge
 * roles of one rule). Returns 0, or -1 after reporting a position beyond the target's. */
int wf_router_setup(wf_sim *s, wf_pe *p, wf_router *r) {
  const wf_cls_info *ci = &s->ci[p->cls_i];
  const wf_plan_region *reg = &s->plan->regions[s->plan->places[0].region];
  for (int k = 0; k < s->plan->n_places; k++) {
    const wf_plan_place *pl = &s->plan->places[k];
    if (p->x >= pl->x && p->x < pl->x + pl->w && p->y >= pl->y && p->y < pl->y + pl->h)
      reg = &s->plan->regions[pl->region];
  }
  r->nlc = ci->nlc;
  WF_ASSERT(r->rc != NULL); /* in the slab, zeroed (sim_layout.c) */
  for (int c = 0; c < ci->nlc; c++) {
    wf_rcolor *rc = &r->rc[c];
    rc->color = ci->lcol[c];
    rc->npos = 1;
    memset(rc->tx, WF_RX_NONE, sizeof rc->tx);
    for (int i = 0; i < p->cls->n_colors; i++)
      if (p->cls->colors[i].color == rc->color) rc->ring = (uint8_t)p->cls->colors[i].ring;
  }
  for (int k = 0; k < p->cls->n_routes; k++) {
    const wf_pe_route *rt = &p->cls->routes[k];
    if (!wf_guard_eval(&rt->guard, &p->env)) continue;
    unsigned tx = rt->tx;
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      int nx = p->x + dir_dx[d], ny = p->y + dir_dy[d];
      if (nx < reg->x || ny < reg->y || nx >= reg->x + reg->w || ny >= reg->y + reg->h)
        tx &= ~(1u << d);
    }
    wf_rcolor *rc = &r->rc[ci->lidx[rt->color]];
    rc->tx[rt->pos][rt->rx] = (uint8_t)tx;
    rc->accept |= (uint8_t)(1u << rt->rx);
    if (rt->pos + 1 > rc->npos) rc->npos = (uint8_t)(rt->pos + 1);
  }
  r->port_now = -1;
  return 0;
}

static wf_router *neighbour(wf_sim *s, const wf_router *r, int d) {
  int nx = r->x + dir_dx[d], ny = r->y + dir_dy[d];
  if (nx < 0 || ny < 0 || nx >= s->w || ny >= s->h) return NULL;
  return s->routers[(size_t)ny * s->w + nx];
}

static void advance(wf_rcolor *rc) {
  if (rc->pos + 1 < rc->npos) rc->pos++;
  else if (rc->ring) rc->pos = 0;
}

/* The destination buffer for color `col` behind out port d, or NULL after reporting. */
static wf_fifo *dest(wf_sim *s, wf_router *r, int d, int col, wf_pe **pe_out, int *li_out) {
  wf_pe *pe = s->pes[(size_t)r->y * s->w + r->x];
  if (d == WF_DIR_RAMP) {
    *pe_out = pe;
    return &pe->q[s->ci[pe->cls_i].lidx[col]];
  }
  wf_router *nb = neighbour(s, r, d);
  if (!nb) {
    wf_sim_rt_error(s, pe, NULL, "router: color c%d forwards %s, where no PE runs a program", col,
                    wf_dir_names[d]);
    return NULL;
  }
  wf_pe *npe = s->pes[(size_t)nb->y * s->w + nb->x];
  int li = s->ci[npe->cls_i].lidx[col];
  if (li < 0) {
    wf_sim_rt_error(s, pe, NULL,
                    "router: color c%d forwards %s to PE (%d,%d), whose class '%s' does not use it",
                    col, wf_dir_names[d], nb->x, nb->y, npe->cls->name);
    return NULL;
  }
  *pe_out = NULL;
  *li_out = li;
  return &nb->rc[li].in[dir_opp[d]];
}

void wf_router_link(wf_sim *s, wf_router *r) {
  wf_pe *pe = s->pes[(size_t)r->y * s->w + r->x];
  for (int d = 0; d < WF_DIR_RAMP; d++) r->nb[d] = neighbour(s, r, d);
  for (int c = 0; c < r->nlc; c++) {
    wf_rcolor *rc = &r->rc[c];
    int col = rc->color;
    rc->out[WF_DIR_RAMP] = &pe->q[c];
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      wf_router *nb = neighbour(s, r, d);
      if (!nb) continue;
      wf_pe *npe = s->pes[(size_t)nb->y * s->w + nb->x];
      int li = s->ci[npe->cls_i].lidx[col];
      if (li < 0) continue;
      rc->out[d] = &nb->rc[li].in[dir_opp[d]];
      rc->out_li[d] = (int8_t)li;
    }
  }
}

/* A slot of the RAMP buffer was freed: the PE may be asleep waiting to send into it. */
static void ramp_freed(wf_sim *s, wf_router *r) {
  if (r->pe_wait && r->pe->sleeping == WF_SLEEP_SOFT) wf_sim_wake_pe(s, r->pe);
}

/* What forward() found (ORed over a step: 0 means the step would repeat identically). */
enum { FW_STUCK = 0, FW_MOVED = 1, FW_OTHER = 2 };

/* Tries to move the head of buffer (c, rx): FW_MOVED if something moved (or a switch write
 * took effect), FW_STUCK if its ready head waits only for full destinations (stalls counted
 * into inc too) or for the switch, FW_OTHER if it is not ready or on an error. */
static int forward(wf_sim *s, wf_router *r, int c, int rx, uint8_t *inc) {
  wf_rcolor *rc = &r->rc[c];
  wf_fifo *f = &rc->in[rx];
  wf_wv *w = wf_fifo_head(f);
  int res = FW_STUCK;
  /* Switch writes from the PE take effect at once and use no port. */
  while (w && w->kind == WF_WV_SWSET && rx == WF_DIR_RAMP && w->ready <= s->now) {
    rc->pos = w->arg < rc->npos ? w->arg : (uint8_t)(rc->npos - 1);
    wf_fifo_pop(s, f);
    popped(r, c, rx);
    ramp_freed(s, r);
    s->progress = 1;
    res = FW_MOVED;
    w = wf_fifo_head(f);
  }
  if (!w) return res;
  if (w->ready > s->now) return res | FW_OTHER;
  uint8_t tx = rc->tx[rc->pos][rx];
  if (tx == WF_RX_NONE) {
    if (!(rc->accept >> rx & 1)) {
      wf_sim_rt_error(s, s->pes[(size_t)r->y * s->w + r->x], NULL,
                      "router: a wavelet on color c%d arrived from %s, which has no route", rc->color,
                      wf_dir_names[rx]);
      return FW_OTHER;
    }
    return res; /* another position accepts it: wait for the switch */
  }
  wf_fifo *dst[WF_DIR_COUNT] = {0};
  int dli[WF_DIR_COUNT] = {0};
  wf_pe *pe = NULL;
  int ok = 1;
  for (int d = 0; d < WF_DIR_COUNT; d++) {
    if (!(tx >> d & 1)) continue;
    if (rc->out[d]) {
      dst[d] = rc->out[d];
      dli[d] = rc->out_li[d];
      if (d == WF_DIR_RAMP) pe = r->pe;
    } else {
      wf_pe *dp = NULL;
      dst[d] = dest(s, r, d, rc->color, &dp, &dli[d]);
      if (!dst[d]) return FW_OTHER;
      if (dp) pe = dp;
    }
    if (r->port_now == s->now && (r->port_mask >> d & 1)) {
      r->out_stall[d]++;
      res |= FW_OTHER; /* a port taken this cycle: something moved */
      ok = 0;
    } else if (dst[d]->count >= s->depth) {
      r->out_stall[d]++;
      inc[d]++;
      dst[d]->full_seen = 1; /* its next pop wakes r if r sleeps by then */
      ok = 0;
    }
  }
  if (!ok) return res; /* backpressure: multicast moves only when every tx port can take it */
  wf_wv v = wf_fifo_pop(s, f);
  popped(r, c, rx);
  if (rx == WF_DIR_RAMP) ramp_freed(s, r);
  else if (s->band && wf_band_edge(s, r, rx)) wf_band_drained(s, f, r->nb[rx], r);
  else wf_sim_drained(s, f, r->nb[rx]);
  int adv_own = v.kind == WF_WV_DATA && v.adv && rx == WF_DIR_RAMP;
  v.adv = 0;
  if (r->port_now != s->now) {
    r->port_now = s->now;
    r->port_mask = 0;
  }
  r->port_mask |= tx;
  for (int d = 0; d < WF_DIR_COUNT; d++) {
    if (!(tx >> d & 1)) continue;
    r->out_count[d]++;
    if (d == WF_DIR_RAMP) {
      v.ready = s->now + s->T_R;
      wf_fifo_push(s, dst[d], v);
      if (pe != r->pe || r->pe_wait) wf_sim_wake_pe(s, pe);
    } else {
      v.ready = s->now + s->hop;
      if (s->band && wf_band_edge(s, r, d)) wf_band_push(s, r, r->nb[d], dli[d], dir_opp[d], v);
      else wf_router_push(s, r->nb[d], dli[d], dir_opp[d], v);
    }
  }
  /* Switch changes apply after the wavelet that causes them has passed. */
  if (v.kind == WF_WV_CTL || adv_own) advance(rc);
  else if (v.kind == WF_WV_TEARDOWN) rc->pos = 0;
  s->progress = 1;
  return FW_MOVED;
}

/* Software prefetch for a router the cycle loop will step soon (the list is in wake
 * order, scattered over the mesh, so the hardware cannot guess it), in three stages so
 * that each reads only lines an earlier stage fetched: FAR, the router's hot lines (its
 * first three, sim_sched.h); MID, the colors' state behind each non-empty buffer (its
 * switch table, the buffer, its destinations); NEAR, the head wavelet of every non-empty
 * buffer and the destination buffers and routers its current switch position sends to.
 * Hints only: nothing is simulated here. */
void wf_router_prefetch(const wf_sim *s, const wf_router *r, int stage) {
  (void)s;
  if (stage == WF_PF_FAR) {
    const char *b = (const char *)r;
    __builtin_prefetch(b);
    __builtin_prefetch(b + 64);
    __builtin_prefetch(b + 128);
    return;
  }
  for (int wd = 0; wd < 3; wd++) {
    uint64_t bits = r->ne[wd];
    while (bits) {
      int i = wd * 64 + __builtin_ctzll(bits);
      bits &= bits - 1;
      const wf_rcolor *rc = &r->rc[i / WF_DIR_COUNT];
      const wf_fifo *f = &rc->in[i % WF_DIR_COUNT];
      if (stage == WF_PF_MID) {
        __builtin_prefetch(rc);
        __builtin_prefetch(f);
        __builtin_prefetch(&rc->out[0]);
        __builtin_prefetch(&rc->out[WF_DIR_COUNT - 1]);
        continue;
      }
      __builtin_prefetch(&f->buf[f->head]);
      uint8_t tx = rc->tx[rc->pos][i % WF_DIR_COUNT];
      if (tx == WF_RX_NONE) continue;
      for (int d = 0; d < WF_DIR_COUNT; d++)
        if ((tx >> d & 1) && rc->out[d]) {
          __builtin_prefetch(rc->out[d]);
          if (d != WF_DIR_RAMP && r->nb[d]) __builtin_prefetch(r->nb[d], 1);
        }
    }
  }
}

/* Visits the non-empty input buffers once, in round-robin order from r->rr (the bit masks
 * are snapshotted first, so a wavelet arriving this cycle waits for the next). Returns 1
 * when nothing moved and nothing can change before an event: the cycle loop then lets r
 * sleep (sim.c). */
int wf_router_step(wf_sim *s, wf_router *r) {
  int n = WF_DIR_COUNT * r->nlc;
  if (!n) return 0;
  int start = r->rr, res = FW_STUCK;
  uint8_t inc[WF_DIR_COUNT] = {0};
  r->rr = (int16_t)(r->rr + 1 == n ? 0 : r->rr + 1);
  uint64_t m[3] = {r->ne[0], r->ne[1], r->ne[2]};
  for (int pass = 0; pass < 2 && !s->failed; pass++)
    for (int wd = 0; wd < 3; wd++) {
      uint64_t bits = m[wd];
      while (bits && !s->failed) {
        int i = wd * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        if ((pass == 0) != (i >= start)) continue;
        res |= forward(s, r, i / WF_DIR_COUNT, i % WF_DIR_COUNT, inc);
      }
    }
  if (res != FW_STUCK || s->failed) return 0;
  memcpy(r->sl_inc, inc, sizeof inc);
  return 1;
}
