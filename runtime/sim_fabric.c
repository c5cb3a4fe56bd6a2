/* The fabric: routers, their per-color switch positions, links and ramps
 * (docs/cycle-model.md, "Fabric"). A router visits each of its input buffers once per cycle;
 * a ready wavelet at a buffer's head moves when its color's current switch position accepts
 * its rx port, every tx port is free this cycle and every destination buffer has room.
 * Otherwise it waits where it is (backpressure). */
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

static const int dir_opp[WF_DIR_COUNT] = {WF_DIR_S, WF_DIR_W, WF_DIR_N, WF_DIR_E, WF_DIR_RAMP};

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
  WF_ASSERT(r->rc == wf_router_colors(r) && p->q == wf_pe_queues(p));
  for (int c = 0; c < ci->nlc; c++) {
    wf_rcolor *rc = &r->rc[c];
    rc->npos = 1;
    memset(rc->tx, WF_RX_NONE, sizeof rc->tx);
    memset(rc->out_li, -1, sizeof rc->out_li);
    for (int i = 0; i < p->cls->n_colors; i++)
      if (p->cls->colors[i].color == ci->lcol[c]) rc->ring = (uint8_t)p->cls->colors[i].ring;
  }
  for (int k = 0; k < p->cls->n_routes; k++) {
    const wf_pe_route *rt = &p->cls->routes[k];
    if (!wf_guard_eval(&rt->guard, &p->env)) continue;
    unsigned tx = rt->tx;
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      int nx = p->x + wf_dir_dx[d], ny = p->y + wf_dir_dy[d];
      if (nx < reg->x || ny < reg->y || nx >= reg->x + reg->w || ny >= reg->y + reg->h)
        tx &= ~(1u << d);
    }
    wf_rcolor *rc = &r->rc[ci->lidx[rt->color]];
    rc->tx[rt->pos][rt->rx] = (uint8_t)tx;
    if (rt->pos + 1 > rc->npos) rc->npos = (uint8_t)(rt->pos + 1);
  }
  r->port_now = -1;
  return 0;
}

static wf_router *neighbour(wf_sim *s, const wf_router *r, int d) {
  int nx = r->x + wf_dir_dx[d], ny = r->y + wf_dir_dy[d];
  if (nx < 0 || ny < 0 || nx >= s->w || ny >= s->h) return NULL;
  return s->routers[(size_t)ny * s->w + nx];
}

static void advance(wf_rcolor *rc) {
  if (rc->pos + 1 < rc->npos) rc->pos++;
  else if (rc->ring) rc->pos = 0;
}

/* Reports that color `col` of router r forwards through port d, where no buffer takes it
 * (wf_router_out found none): no neighbour, or one whose class does not use the color. */
static void no_dest(wf_sim *s, wf_router *r, int d, int col) {
  wf_pe *pe = s->pes[(size_t)r->y * s->w + r->x];
  wf_router *nb = neighbour(s, r, d);
  if (!nb) {
    wf_sim_rt_error(s, pe, NULL, "router: color c%d forwards %s, where no PE runs a program", col,
                    wf_dir_names[d]);
    return;
  }
  wf_pe *npe = s->pes[(size_t)nb->y * s->w + nb->x];
  wf_sim_rt_error(s, pe, NULL,
                  "router: color c%d forwards %s to PE (%d,%d), whose class '%s' does not use it",
                  col, wf_dir_names[d], nb->x, nb->y, npe->cls->name);
}

/* 1 if some switch position of rc accepts rx (a wavelet from elsewhere has no route). */
static int accepted(const wf_rcolor *rc, int rx) {
  for (int k = 0; k < WF_PE_MAX_POS; k++)
    if (rc->tx[k][rx] != WF_RX_NONE) return 1;
  return 0;
}

void wf_router_link(wf_sim *s, wf_router *r) {
  for (int d = 0; d < WF_DIR_RAMP; d++) r->nb[d] = neighbour(s, r, d);
  for (int c = 0; c < r->nlc; c++) {
    int col = wf_router_color(s, r, c);
    for (int d = 0; d < WF_DIR_RAMP; d++) {
      wf_router *nb = r->nb[d];
      if (!nb) continue;
      wf_pe *npe = s->pes[(size_t)nb->y * s->w + nb->x];
      r->rc[c].out_li[d] = s->ci[npe->cls_i].lidx[col];
    }
  }
}

/* A slot of the RAMP buffer was freed: the PE may be asleep waiting to send into it. */
static void ramp_freed(wf_sim *s, wf_router *r) {
  if (r->pe_wait && r->pe->sleeping == WF_SLEEP_SOFT) wf_sim_wake_pe(s, r->pe);
}

/* What forward() found (ORed over a step: 0 means the step would repeat identically). */
enum { FW_STUCK = 0, FW_MOVED = 1, FW_OTHER = 2 };

/* Switch writes at the head of the RAMP buffer (c) take effect at once and use no port:
 * applies the ready ones and returns the head behind them (NULL: the buffer emptied). */
static wf_wv *switch_writes(wf_sim *s, wf_router *r, int c, wf_wv *w) {
  wf_rcolor *rc = &r->rc[c];
  wf_fifo *f = &rc->in[WF_DIR_RAMP];
  while (w && w->kind == WF_WV_SWSET && w->ready <= s->now) {
    rc->pos = w->arg < rc->npos ? w->arg : (uint8_t)(rc->npos - 1);
    wf_fifo_pop(s, f);
    popped(r, c, WF_DIR_RAMP);
    ramp_freed(s, r);
    s->progress = 1;
    w = wf_fifo_head(f);
  }
  return w;
}

/* The head that cannot move has a tx port taken this cycle or a full destination behind
 * one: counts the stalls (into inc too for a full one) and returns FW_OTHER if a port was
 * taken, FW_STUCK otherwise; -1 if it can move. A port without a buffer behind it (no
 * neighbour, or one whose class lacks the color) is reported: FW_OTHER. */
static inline int tx_blocked(wf_sim *s, wf_router *r, int c, unsigned tx, uint8_t *inc) {
  unsigned busy = r->port_now == s->now ? r->port_mask : 0;
  int res = -1;
  for (unsigned b = tx; b; b &= b - 1) {
    int d = __builtin_ctz(b);
    wf_fifo *o = wf_router_out(r, c, d);
    if (!o) {
      no_dest(s, r, d, wf_router_color(s, r, c));
      return FW_OTHER;
    }
    if (busy >> d & 1) {
      r->out_stall[d]++;
      res = FW_OTHER; /* a port taken this cycle: something moved */
    } else if (o->count >= s->depth) {
      r->out_stall[d]++;
      inc[d]++;
      o->full_seen = 1; /* its next pop wakes r if r sleeps by then */
      if (res < 0) res = FW_STUCK;
    }
  }
  return res;
}

/* Tries to move the head of buffer (c, rx): FW_MOVED if something moved (or a switch write
 * took effect), FW_STUCK if its ready head waits only for full destinations (stalls counted
 * into inc too) or for the switch, FW_OTHER if it is not ready or on an error. */
static inline __attribute__((always_inline)) int forward(wf_sim *s, wf_router *r, int c, int rx,
                                                         uint8_t *inc) {
  wf_rcolor *rc = &r->rc[c];
  wf_fifo *f = &rc->in[rx];
  wf_wv *w = wf_fifo_head(f);
  int res = FW_STUCK;
  if (rx == WF_DIR_RAMP && w && w->kind == WF_WV_SWSET && w->ready <= s->now) {
    w = switch_writes(s, r, c, w);
    res = FW_MOVED;
  }
  if (!w) return res;
  if (w->ready > s->now) return res | FW_OTHER;
  unsigned tx = rc->tx[rc->pos][rx];
  if (tx == WF_RX_NONE) {
    if (!accepted(rc, rx)) {
      wf_sim_rt_error(s, s->pes[(size_t)r->y * s->w + r->x], NULL,
                      "router: a wavelet on color c%d arrived from %s, which has no route",
                      wf_router_color(s, r, c), wf_dir_names[rx]);
      return FW_OTHER;
    }
    return res; /* another position accepts it: wait for the switch */
  }
  int blocked = tx_blocked(s, r, c, tx, inc);
  if (blocked >= 0) return res | blocked; /* backpressure: multicast moves only when every tx
                                             port can take it */
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
  r->port_mask |= (uint8_t)tx;
  for (unsigned b = tx; b; b &= b - 1) {
    int d = __builtin_ctz(b);
    r->out_count[d]++;
    if (d == WF_DIR_RAMP) {
      v.ready = s->now + s->T_R;
      wf_fifo_push(s, wf_router_out(r, c, d), v);
      if (r->pe_wait) wf_sim_wake_pe(s, r->pe);
    } else {
      v.ready = s->now + s->hop;
      int li = rc->out_li[d], opp = dir_opp[d];
      if (s->band && wf_band_edge(s, r, d)) wf_band_push(s, r, r->nb[d], li, opp, v);
      else
        wf_router_push_at(s, r->nb[d], &wf_router_colors(r->nb[d])[li].in[opp],
                          li * WF_DIR_COUNT + opp, v);
    }
  }
  /* Switch changes apply after the wavelet that causes them has passed. */
  if (v.kind == WF_WV_CTL || adv_own) advance(rc);
  else if (v.kind == WF_WV_TEARDOWN) rc->pos = 0;
  s->progress = 1;
  return FW_MOVED;
}

/* Input buffer i's local color (i / WF_DIR_COUNT) without a division. */
static const uint8_t lc_of[3 * 64] = {
#define LC5(k) k, k, k, k, k
#define LC25(k) LC5(k), LC5(k + 1), LC5(k + 2), LC5(k + 3), LC5(k + 4)
    LC25(0), LC25(5), LC25(10), LC25(15), LC25(20), LC25(25), LC25(30), LC5(35), LC5(36),
    LC5(37), 38, 38,
#undef LC25
#undef LC5
};

/* Software prefetch for a router the cycle loop will step soon (the list is in wake
 * order, scattered over the mesh, so the hardware cannot guess it), in three stages so
 * that each reads only lines an earlier stage fetched: FAR (sim_sched.h), the router's hot
 * lines; MID, the state of each color holding a non-empty buffer (its switch table, its
 * buffers' headers, its destinations); NEAR, the head wavelet of every non-empty buffer and
 * the destination buffers and routers its current switch position sends to. Hints only:
 * nothing is simulated here. */
void wf_router_prefetch_mid(const wf_router *r) {
  int words = (WF_DIR_COUNT * r->nlc + 63) >> 6;
  for (int wd = 0; wd < words; wd++) {
    uint64_t bits = r->ne[wd];
    while (bits) {
      int c = lc_of[wd * 64 + __builtin_ctzll(bits)];
      const char *a = (const char *)&r->rc[c];
      __builtin_prefetch(a);
      __builtin_prefetch(a + 64);
      int next = WF_DIR_COUNT * (c + 1) - 64 * wd; /* the color's other buffers: done */
      bits = next >= 64 ? 0 : bits & (~0ull << next);
    }
  }
}

void wf_router_prefetch_near(const wf_router *r) {
  int words = (WF_DIR_COUNT * r->nlc + 63) >> 6;
  for (int wd = 0; wd < words; wd++) {
    uint64_t bits = r->ne[wd];
    while (bits) {
      int i = wd * 64 + __builtin_ctzll(bits);
      bits &= bits - 1;
      int c = lc_of[i], rx = i - WF_DIR_COUNT * c;
      const wf_rcolor *rc = &r->rc[c];
      const wf_fifo *f = &rc->in[rx];
      __builtin_prefetch(&f->buf[f->head]);
      unsigned tx = rc->tx[rc->pos][rx];
      if (tx == WF_RX_NONE) continue;
      for (; tx; tx &= tx - 1) {
        int d = __builtin_ctz(tx);
        const wf_fifo *o = wf_router_out(r, c, d);
        if (o) __builtin_prefetch(o);
        if (o && d != WF_DIR_RAMP) __builtin_prefetch(r->nb[d], 1);
      }
    }
  }
}

/* The bits of word wd (bits 64 wd .. 64 wd + 63) at or above `start`. */
static inline uint64_t from_start(int wd, int start) {
  int k = start - 64 * wd;
  return k <= 0 ? ~0ull : k >= 64 ? 0 : ~0ull << k;
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
  if (n <= 64) { /* up to 12 colors: one word */
    uint64_t m = r->ne[0], hi = ~0ull << start;
    for (uint64_t bits = m & hi, pass = 0; pass < 2; bits = m & ~hi, pass++)
      for (; bits; bits &= bits - 1) {
        if (s->failed) return 0;
        int i = __builtin_ctzll(bits), c = lc_of[i];
        res |= forward(s, r, c, i - WF_DIR_COUNT * c, inc);
      }
  } else {
    int words = n <= 128 ? 2 : 3;
    uint64_t m[3] = {r->ne[0], r->ne[1], r->ne[2]};
    for (int pass = 0; pass < 2; pass++)
      for (int wd = 0; wd < words; wd++) {
        uint64_t hi = from_start(wd, start), bits = m[wd] & (pass ? ~hi : hi);
        for (; bits; bits &= bits - 1) {
          if (s->failed) return 0;
          int i = wd * 64 + __builtin_ctzll(bits), c = lc_of[i];
          res |= forward(s, r, c, i - WF_DIR_COUNT * c, inc);
        }
      }
  }
  if (res != FW_STUCK || s->failed) return 0;
  memcpy(r->sl_inc, inc, sizeof inc);
  return 1;
}
