/* waferc backend — the links of a ring along one line of the mesh (a row or a column), on
 * colors a WSE router can hold (ring_links.c): MeshGEMM's and Cannon's rings, attention's K/V
 * ring and its kv-head gather ring. A lowering emits its async streams on the palette's first
 * color; wf_emit splits each into one stream per color.
 *
 *   wf_ring_line ly = {wf_term(WF_TERM_Y, 0), WF_DIR_N, WF_DIR_S, L->h};
 *   if (wf_ring_dest_links(L, WF_COLOR_MESH_RING_Y, &ly, dest, loc)) return WF_EXIT_NOFIT;
 */
#ifndef WAFERC_BACKEND_COLLECTIVES_RING_LINE_H
#define WAFERC_BACKEND_COLLECTIVES_RING_LINE_H

#include "backend/resources/lower.h"

/* One line of the ring (a row for A, a column for B). `coord` is the PE's position along
 * the line (x or y), `lo` / `hi` the ports toward lower / higher coordinates, `len` the
 * line's length (known at compile time). */
typedef struct wf_ring_line {
  wf_pe_term coord;
  int lo, hi;
  int len;
} wf_ring_line;

/* The colors a line's links need when links that meet at a PE differ (PE i sends to dest[i],
 * -1: none); and the links' routes on palette `pal` (at least that many colors), the line
 * registered so that wf_emit splits the streams on pal[0] by color. Returns the colors used. */
int wf_ring_link_colors(int len, const int *dest);
int wf_ring_links(wf_lower *L, wf_pe_term coord, int lo, int hi, int len, const int *dest, const int *pal,
                  int n_pal);
/* The line's links (PE i sends to dest[i]) on the colors of `purpose` (a ring color, x or y)
 * and its further ones, allocated as the line needs them. Returns 0, or -1 after reporting
 * that the target has no color left. */
int wf_ring_dest_links(wf_lower *L, int purpose, const wf_ring_line *line, const int *dest, wf_loc loc);

/* Switch position 1 of the line's colors (forward links at position 0, wf_ring_links with
 * first = its palette's first color; -1 when the line has none: an op before ran out of
 * colors, its error reported, with the line's first color taken): every link reversed, PE dest[i] sending to PE i on the
 * color of i's link, so that a line can shift backward on the same colors. A line turns its
 * routers to it by a `ctl` on each forward link (every router of a link, and only those, is
 * on it) and back by a `teardown` on each reversed one behind its last block: each wavelet
 * follows the link's earlier ones, so no router turns while a block still has to pass it. */
int wf_ring_links_reversed(wf_lower *L, const wf_ring_line *line, const int *dest, int first);

/* ---- INTERLEAVE (WaferLLM Alg. 1) ---- */

/* The physical positions PE `index` of a line of n sends to and receives from in the
 * two-hop ring (even positions pass data right, odd ones left). n = 1: itself. */
void wf_interleave(int index, int n, int *send_index, int *recv_index);
/* order[k] = physical position of logical ring position k (order[0] = 0, order[k+1] =
 * send(order[k])); pos (optional) receives the inverse. Returns 0, -1 if n < 1. */
int wf_interleave_order(int n, int *order, int *pos);

#endif
