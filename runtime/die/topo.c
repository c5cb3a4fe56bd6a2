/* The global mesh of dies: coordinates, wafers, directed links and routes (X-Y, or around
 * dead links). */
#include <stdlib.h>
#include <string.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"

void wf_die_system_init(wf_die_system *s, const wf_die_target *t, int wafers_w, int wafers_h) {
  s->t = *t;
  s->wafers_w = wafers_w;
  s->wafers_h = wafers_h;
  s->w = wafers_w * t->dies_w;
  s->h = wafers_h * t->dies_h;
  s->n = s->w * s->h;
  s->link_dead = NULL;
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

static int xy_dir(const wf_die_system *s, int cur, int b) {
  int x = wf_die_x(s, cur), y = wf_die_y(s, cur), bx = wf_die_x(s, b), by = wf_die_y(s, b);
  return x < bx ? WF_DIE_E : x > bx ? WF_DIE_W : y < by ? WF_DIE_S : WF_DIE_N;
}

static int xy_route(const wf_die_system *s, int a, int b, int *out, int cap, int *dead) {
  int n = 0;
  *dead = 0;
  for (int cur = a; cur != b; cur = neighbour(s, cur, xy_dir(s, cur, b))) {
    int l = cur * 4 + xy_dir(s, cur, b);
    if (s->link_dead && s->link_dead[l]) *dead = 1;
    if (n < cap) out[n] = l;
    n++;
  }
  return n;
}

/* A shortest path over healthy links: BFS from b backwards gives every die's hops to b, then
 * the walk from a takes, at each die, a link one hop closer, trying X-Y's direction first and
 * then E, W, N, S, so the same faults always give the same route. */
static int detour(const wf_die_system *s, int a, int b, int *out, int cap) {
  int *left = malloc(sizeof(int) * (size_t)s->n), *q = malloc(sizeof(int) * (size_t)s->n);
  WF_ASSERT(left && q);
  memset(left, -1, sizeof(int) * (size_t)s->n);
  int head = 0, tail = 0;
  q[tail++] = b, left[b] = 0;
  while (head < tail && left[a] < 0) {
    int v = q[head++];
    for (int dir = 0; dir < 4; dir++) {
      int u = neighbour(s, v, dir); /* u reaches v by the opposite direction: E<->W, N<->S */
      if (u >= 0 && left[u] < 0 && !s->link_dead[u * 4 + (dir ^ 1)]) left[u] = left[v] + 1, q[tail++] = u;
    }
  }
  int n = left[a];
  for (int cur = a, k = 0; n > 0 && cur != b; k++) {
    int pick = -1;
    for (int i = -1; i < 4 && pick < 0; i++) {
      int dir = i < 0 ? xy_dir(s, cur, b) : i, v = neighbour(s, cur, dir);
      if (v >= 0 && !s->link_dead[cur * 4 + dir] && left[v] == left[cur] - 1) pick = dir;
    }
    if (k < cap) out[k] = cur * 4 + pick;
    cur = neighbour(s, cur, pick);
  }
  free(left), free(q);
  return n;
}

int wf_die_route(const wf_die_system *s, int a, int b, int *out, int cap) {
  int dead, n = xy_route(s, a, b, out, cap, &dead);
  return dead ? detour(s, a, b, out, cap) : n;
}
