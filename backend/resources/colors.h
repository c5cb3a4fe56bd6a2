/* waferc backend — interference-aware color allocation.
 *
 * A color request is one route: the routers it passes (with the direction it enters and the
 * directions it leaves by) and the phases [t0, t1) it is live. Two requests interfere when
 * they are live at the same time and pass a common router: they need different colors.
 * Colors are reused between requests that do not interfere, so a program with many
 * phases fits the target's budget (24 on the WSE minus the reserved ones). Past the budget
 * a request gets color -1 and the result says what would make it fit — which routers it
 * shares with the cheapest color's users (relay around them, paying beta per relay) and
 * the phase after which that color is free (serialize); the lowering picks the policy.
 *
 *   wf_color_req r[2] = {{"row0", hops0, 3, 0, 2}, {"row1", hops1, 3, 0, 2}};
 *   wf_color_result res;
 *   wf_color_alloc(r, 2, t->colors, t->reserved_colors, &res);   // res.color[i]
 *   wf_color_result_free(&res);
 */
#ifndef WAFERC_BACKEND_COLORS_H
#define WAFERC_BACKEND_COLORS_H

#include <stdint.h>

#include "ir/pe/pe_program.h" /* WF_DIR_*: the one set of router port names */

typedef struct wf_route_hop {
  int x, y;     /* router */
  uint8_t in;   /* the one port the wavelets enter by (a WF_DIR_* index) */
  uint8_t out;  /* ports they leave by: bit 1u << WF_DIR_* each (several = multicast) */
} wf_route_hop;

typedef struct wf_color_req {
  const char *name;         /* for reports */
  const wf_route_hop *hops; /* every router the route passes, the source and sinks too */
  int n_hops;
  int t0, t1;               /* live over phases t0 <= t < t1 */
} wf_color_req;

typedef struct wf_color_fail {
  int req;              /* index of the request that got no color */
  int best_color;       /* the color whose users share the fewest routers with it */
  int shared_pes;       /* routers shared with that color's interfering users */
  int serialize_after;  /* the phase from which that color is free on its routers */
} wf_color_fail;

typedef struct wf_color_result {
  int *color;           /* per request: color id, or -1 past the budget */
  int used;             /* distinct colors used */
  int max_per_pe;       /* most distinct colors configured at one router (route codes, R) */
  int n_failed;
  wf_color_fail *fails; /* n_failed entries, in request order */
} wf_color_result;

/* Colors 0..n_colors-1 minus the bits of `reserved`. Deterministic: requests are colored
 * by descending interference degree, then index, each taking the lowest free color.
 * Returns 0 if every request got a color, 1 if some did not (see fails), -1 on bad input
 * or no memory. */
int wf_color_alloc(const wf_color_req *reqs, int n, int n_colors, uint32_t reserved,
                   wf_color_result *out);
void wf_color_result_free(wf_color_result *r);
/* Do two requests interfere (overlapping phases and a common router)? */
int wf_color_interfere(const wf_color_req *a, const wf_color_req *b);

#endif
