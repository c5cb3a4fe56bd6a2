/* The global mesh of dies: coordinates, wafers, directed links and X-Y routes. */
#include <stdlib.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"

void wf_die_system_init(wf_die_system *s, const wf_die_target *t, int wafers_w, int wafers_h) {
  s->t = *t;
  s->wafers_w = wafers_w;
  s->wafers_h = wafers_h;
  s->w = wafers_w * t->dies_w;
  s->h = wafers_h * t->dies_h;
  s->n = s->w * s->h;
}

int wf_die_wafer(const wf_die_system *s, int d) {
  return (wf_die_y(s, d) / s->t.dies_h) * s->wafers_w + wf_die_x(s, d) / s->t.dies_w;
}

int wf_die_hops(const wf_die_system *s, int a, int b) {
  return abs(wf_die_x(s, a) - wf_die_x(s, b)) + abs(wf_die_y(s, a) - wf_die_y(s, b));
}

static int neighbour(const wf_die_system *s, int d, int dir) {
  int x = wf_die_x(s, d), y = wf_die_y(s, d);
  switch (dir) {
    case WF_DIE_E: x++; break;
    case WF_DIE_W: x--; break;
    case WF_DIE_N: y--; break;
    default: y++; break;
  }
  if (x < 0 || y < 0 || x >= s->w || y >= s->h) return -1;
  return wf_die_id(s, x, y);
}

int wf_die_link(const wf_die_system *s, int d, int dir) { return neighbour(s, d, dir) < 0 ? -1 : d * 4 + dir; }

int wf_die_link_crosses_wafer(const wf_die_system *s, int link) {
  int a = link / 4, b = neighbour(s, a, link % 4);
  WF_ASSERT(b >= 0);
  return wf_die_wafer(s, a) != wf_die_wafer(s, b);
}

/* A border's bandwidth is the target's figure for the whole border, so each of the die links
 * that cross it gets an equal share: dies_h links cross a vertical border, dies_w a
 * horizontal one. */
double wf_die_link_bw(const wf_die_system *s, int link) {
  if (!wf_die_link_crosses_wafer(s, link)) return s->t.link_bw;
  int dir = link % 4;
  int share = (dir == WF_DIE_E || dir == WF_DIE_W) ? s->t.dies_h : s->t.dies_w;
  return s->t.border_bw / share;
}

double wf_die_link_latency(const wf_die_system *s, int link) {
  return wf_die_link_crosses_wafer(s, link) ? s->t.border_latency : s->t.link_latency;
}

int wf_die_route(const wf_die_system *s, int a, int b, int *out, int cap) {
  int n = 0, cur = a;
  int bx = wf_die_x(s, b), by = wf_die_y(s, b);
  while (cur != b) {
    int x = wf_die_x(s, cur), y = wf_die_y(s, cur);
    int dir = x < bx ? WF_DIE_E : x > bx ? WF_DIE_W : y < by ? WF_DIE_S : WF_DIE_N;
    if (n < cap) out[n] = cur * 4 + dir;
    n++;
    cur = neighbour(s, cur, dir);
  }
  return n;
}
