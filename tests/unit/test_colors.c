/* Color allocation (backend/resources/colors.c): disjoint routes share a color, overlapping ones do
 * not, phases free colors, the budget and reserved colors hold, failures say what to do. */
#include <stdlib.h>
#include <string.h>

#include "backend/resources/colors.h"
#include "wf_test.h"

/* A route along row y from x0 to x1 (eastward), live over [t0, t1). */
static wf_color_req row_route(const char *name, wf_route_hop *buf, int y, int x0, int x1, int t0,
                              int t1) {
  int n = 0;
  for (int x = x0; x <= x1; x++, n++)
    buf[n] = (wf_route_hop){x, y, (uint8_t)(x == x0 ? WF_DIR_RAMP : WF_DIR_W),
                            (uint8_t)(x == x1 ? 1u << WF_DIR_RAMP : (1u << WF_DIR_E) | (1u << WF_DIR_RAMP))};
  return (wf_color_req){name, buf, n, t0, t1};
}

int main(void) {
  wf_route_hop h[8][16];
  wf_color_result r;
  /* Two rows: disjoint routers, same phase -> one color. */
  wf_color_req a[2] = {row_route("r0", h[0], 0, 0, 7, 0, 1), row_route("r1", h[1], 1, 0, 7, 0, 1)};
  CHECK(wf_color_alloc(a, 2, 24, 0, &r) == 0);
  CHECK(r.color[0] == r.color[1] && r.used == 1 && r.max_per_pe == 1);
  wf_color_result_free(&r);
  /* Same row, overlapping routers and phases -> two colors; the second at a different
   * phase -> one color again. */
  wf_color_req b[3] = {row_route("a", h[0], 0, 0, 4, 0, 2), row_route("b", h[1], 0, 3, 7, 1, 3),
                       row_route("c", h[2], 0, 0, 7, 3, 4)};
  CHECK(wf_color_interfere(&b[0], &b[1]) && !wf_color_interfere(&b[0], &b[2]));
  CHECK(wf_color_alloc(b, 3, 24, 0, &r) == 0);
  CHECK(r.color[0] != r.color[1] && r.used == 2, "%d %d %d", r.color[0], r.color[1], r.color[2]);
  CHECK(r.color[2] == r.color[0] || r.color[2] == r.color[1]);
  CHECK(r.max_per_pe == 2);
  wf_color_result_free(&r);
  /* Reserved colors are never handed out: with 0..2 reserved the first color is 3. */
  CHECK(wf_color_alloc(b, 3, 24, 0x7u, &r) == 0);
  for (int i = 0; i < 3; i++) CHECK(r.color[i] >= 3 && r.color[i] < 24);
  wf_color_result_free(&r);
  /* Budget: eight routes over the same routers at once, 6 colors, 1 of them reserved:
   * five get colors, three fail and say which color and phase would free them. */
  wf_color_req c[8];
  for (int i = 0; i < 8; i++) c[i] = row_route("x", h[i], 0, 0, 5 + i % 3, i, 8);
  CHECK(wf_color_alloc(c, 8, 6, 1u << 5, &r) == 1);
  int colored = 0;
  for (int i = 0; i < 8; i++) {
    if (r.color[i] >= 0) colored++;
    CHECK(r.color[i] != 5 && r.color[i] < 6);
    for (int j = 0; j < i; j++)
      if (r.color[i] >= 0) CHECK(r.color[i] != r.color[j], "%d and %d share %d", i, j, r.color[i]);
  }
  CHECK(colored == 5 && r.n_failed == 3 && r.used == 5);
  for (int f = 0; f < r.n_failed; f++) {
    CHECK(r.fails[f].best_color >= 0 && r.fails[f].best_color < 5);
    CHECK(r.fails[f].shared_pes >= 6 && r.fails[f].serialize_after == 8);
  }
  /* Deterministic: the same input gives the same colors. */
  wf_color_result r2;
  CHECK(wf_color_alloc(c, 8, 6, 1u << 5, &r2) == 1);
  CHECK(!memcmp(r.color, r2.color, 8 * sizeof *r.color));
  wf_color_result_free(&r);
  wf_color_result_free(&r2);
  /* Bad input. */
  wf_color_req bad = {"bad", h[0], 2, 3, 1};
  CHECK(wf_color_alloc(&bad, 1, 24, 0, &r) == -1);
  return wf_test_result("test_colors");
}
