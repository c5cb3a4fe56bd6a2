/* Routes around dead links (wf_die_route on a system with link_dead): X-Y hop by hop when no
 * link is dead; on a 4x4 mesh with random dead links (both directions, or one), a route of the
 * shortest length an independent Floyd-Warshall finds, over healthy links only, joining a to b,
 * X-Y still whenever X-Y's own links are alive, the same on every call; -1 exactly when no
 * healthy path exists; the SimGrid platform writer writes those routes, leaves dead links out
 * and refuses a pair no healthy path joins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"
#include "wf_test.h"

enum { W = 4, H = 4, N = W * H, FAR = 1 << 20 };

/* The X-Y route written out independently: x first, then y. */
static int xy(int a, int b, int *out) {
  int n = 0, x = a % W, y = a / W, bx = b % W, by = b / W;
  for (; x != bx; x += x < bx ? 1 : -1) out[n++] = (y * W + x) * 4 + (x < bx ? WF_DIE_E : WF_DIE_W);
  for (; y != by; y += y < by ? 1 : -1) out[n++] = (y * W + x) * 4 + (y < by ? WF_DIE_S : WF_DIE_N);
  return n;
}

/* The die a link leads to, or -1 off the mesh. */
static int head(int link) {
  int d = link / 4, x = d % W, y = d / W;
  switch (link % 4) {
    case WF_DIE_E: x++; break;
    case WF_DIE_W: x--; break;
    case WF_DIE_N: y--; break;
    default: y++; break;
  }
  return x < 0 || y < 0 || x >= W || y >= H ? -1 : y * W + x;
}

static void floyd(const unsigned char *dead, int dist[N][N]) {
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++) dist[a][b] = a == b ? 0 : FAR;
  for (int l = 0; l < N * 4; l++)
    if (head(l) >= 0 && !dead[l]) dist[l / 4][head(l)] = 1;
  for (int k = 0; k < N; k++)
    for (int a = 0; a < N; a++)
      for (int b = 0; b < N; b++)
        if (dist[a][k] + dist[k][b] < dist[a][b]) dist[a][b] = dist[a][k] + dist[k][b];
}

static char msgs[1024];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)user;
  snprintf(msgs, sizeof msgs, "%s", msg);
}

int main(void) {
  wf_die_target t = {.name = "faults", .dies_w = W, .dies_h = H, .wafers_w = 1, .wafers_h = 1, .int8_ops = 1e15,
                     .hbm_bw = 1e12, .link_bw = 1e12, .link_latency = 1e-7, .border_bw = 1e12, .border_latency = 1e-7};
  wf_die_system s;
  wf_die_system_init(&s, &t, 1, 1);
  CHECK(s.link_dead == NULL, "a new system has no dead links");
  static unsigned char dead[N * 4];
  int r[N], x[N];

  /* (a) No dead links, with and without the flags: X-Y hop by hop. */
  for (int pass = 0; pass < 2; pass++) {
    s.link_dead = pass ? dead : NULL;
    for (int a = 0; a < N; a++)
      for (int b = 0; b < N; b++) {
        int h = wf_die_route(&s, a, b, r, N), hx = xy(a, b, x);
        CHECK(h == hx && !memcmp(r, x, sizeof(int) * (size_t)hx), "%d -> %d: not X-Y", a, b);
      }
  }

  /* (b), (c) Random dead links, many seeds. */
  s.link_dead = dead;
  unsigned st = 12345;
  int detours = 0, cut = 0, kept_xy = 0;
  for (int seed = 0; seed < 400; seed++) {
    memset(dead, 0, sizeof dead);
    int rate = 5 + seed % 30; /* percent */
    for (int l = 0; l < N * 4; l++) {
      st = st * 1664525u + 1013904223u;
      if (head(l) < 0 || (int)((st >> 8) % 100) >= rate) continue;
      dead[l] = 1;
      if (seed % 4) dead[head(l) * 4 + ((l % 4) ^ 1)] = 1; /* both directions, mostly */
    }
    static int dist[N][N];
    floyd(dead, dist);
    for (int a = 0; a < N; a++)
      for (int b = 0; b < N; b++) {
        int h = wf_die_route(&s, a, b, r, N), hx = xy(a, b, x), xy_alive = 1;
        for (int k = 0; k < hx; k++) xy_alive &= !dead[x[k]];
        if (dist[a][b] >= FAR) {
          CHECK(h == -1, "seed %d: %d -> %d has no healthy path, got %d hops", seed, a, b, h);
          cut++;
          continue;
        }
        CHECK(h == dist[a][b], "seed %d: %d -> %d: %d hops, shortest %d", seed, a, b, h, dist[a][b]);
        int cur = a, ok = 1;
        for (int k = 0; k < h && k < N; k++) {
          if (r[k] / 4 != cur || dead[r[k]] || head(r[k]) < 0) ok = 0;
          cur = head(r[k]);
        }
        CHECK(ok && cur == b, "seed %d: %d -> %d: the route is not a healthy path to b", seed, a, b);
        if (xy_alive) {
          CHECK(h == hx && !memcmp(r, x, sizeof(int) * (size_t)hx), "seed %d: %d -> %d: X-Y is alive", seed, a, b);
          kept_xy++;
        } else {
          detours++;
        }
        int again[N];
        CHECK(wf_die_route(&s, a, b, again, N) == h && !memcmp(again, r, sizeof(int) * (size_t)h), "deterministic");
      }
  }
  CHECK(detours > 1000 && cut > 100 && kept_xy > 1000, "the seeds exercise every case: %d detours, %d cut, %d X-Y",
        detours, cut, kept_xy);

  /* The platform writer: a detour's links, no dead link; a cut pair is an error. */
  memset(dead, 0, sizeof dead);
  dead[0 * 4 + WF_DIE_E] = dead[1 * 4 + WF_DIE_W] = 1; /* 0 <-> 1 */
  wf_die_flows f = {0};
  wf_die_flows_add(&f, 0, 1, 1e6, 0);
  char path[] = "/tmp/wf_test_die_faults.xml";
  CHECK(wf_die_platform_write(&s, &f, 1, path) == 0);
  FILE *in = fopen(path, "r");
  static char xml[1 << 16];
  size_t len = in ? fread(xml, 1, sizeof xml - 1, in) : 0;
  xml[len] = 0;
  if (in) fclose(in);
  /* 0 -> 1 without 0's E link: down, across, up (X-Y's direction first where it can). */
  CHECK(strstr(xml, "<route src=\"d0\" dst=\"d1\" symmetrical=\"NO\"><link_ctn id=\"l3\"/><link_ctn id=\"l16\"/>"
                    "<link_ctn id=\"l22\"/></route>") != NULL, "got:\n%s", xml);
  CHECK(!strstr(xml, "<link id=\"l0\"") && !strstr(xml, "<link id=\"l5\"") && strstr(xml, "<link id=\"l3\""),
        "dead links are left out of the platform");
  dead[0 * 4 + WF_DIE_S] = dead[4 * 4 + WF_DIE_N] = 1; /* die 0 is cut off */
  wf_diag_set_sink(sink, NULL);
  CHECK(wf_die_platform_write(&s, &f, 1, path) == WF_EXIT_INPUT, "a cut pair is an error");
  wf_diag_set_sink(NULL, NULL);
  CHECK(strstr(msgs, "no route from die 0 to die 1 avoids the dead links") != NULL, "got: %s", msgs);
  remove(path);
  wf_die_flows_free(&f);
  return wf_test_result("test_die_faults");
}
