/* waferc runtime — `waferrun --heatmap DIR`: PNG heatmaps of a finished simulation, each with
 * two title lines (what it shows; the plan, its GEMM lowering, target and mesh), mesh
 * coordinates on both axes, a colour bar with the scale's bottom and top, a key line with the
 * values' range, and a CSV beside each. Files (docs/report-format.md):
 *
 *   DIR/pe_busy.png, .csv    busy % per PE: (compute + communication cycles) / total cycles;
 *                            the CSV adds each PE's cycle classes
 *   DIR/link_n.png, .csv     link use north (toward y-1): wavelets per cycle, 0..1 (a link
 *   ...                      carries one per direction per cycle); link_e, link_s, link_w
 *                            likewise. Mesh-edge ports have no link: grey in the PNG.
 *
 * Every map is coloured on one fixed scale, 0-100% by default (of cycles, or of a link's
 * capacity), so images of different runs compare directly; --heatmap-scale=LO:HI narrows it,
 * `auto` spans each map's own range. Every CSV is `x,y,value,...` with one row per PE that
 * runs a program, in row-major order; value is what the image colours.
 *
 *   wf_heatmap_opts o = WF_HEATMAP_OPTS_DEFAULT;
 *   wf_heatmap_parse_scale("0:50", &o);                  // 0, or -1 if malformed
 *   int rc = wf_heatmap_write(sim, plan, "heat", &o);    // WF_EXIT_*; creates the directory
 */
#ifndef WAFERC_RUNTIME_HEATMAP_H
#define WAFERC_RUNTIME_HEATMAP_H

#include "runtime/runtime.h"

typedef struct wf_heatmap_opts {
  int auto_scale;   /* 1: each map's colours span its own minimum..maximum */
  double lo, hi;    /* else the fixed scale in percent (link maps: of 1 wavelet per cycle) */
} wf_heatmap_opts;
#define WF_HEATMAP_OPTS_DEFAULT ((wf_heatmap_opts){.auto_scale = 0, .lo = 0.0, .hi = 100.0})

/* Parses --heatmap-scale's value: "LO:HI" with 0 <= LO < HI <= 100, or "auto". */
int wf_heatmap_parse_scale(const char *text, wf_heatmap_opts *o);

/* o = NULL: the defaults. */
int wf_heatmap_write(const wf_sim *s, const wf_plan *p, const char *dir, const wf_heatmap_opts *o);

/* DIR/<file>.png and .csv of a count per PE (v [w*h], row-major; waferrun --generate's KV
 * cache occupancy), on the fixed scale 0..hi of `unit`s. */
int wf_heatmap_write_counts(const char *dir, const char *file, const char *title, const char *subtitle,
                            const char *unit, int w, int h, const double *v, double hi);

/* Exposed for tests: the pixel size of the image for a w x h mesh. */
void wf_heatmap_image_size(int w, int h, int *img_w, int *img_h);

#endif
