/* waferc runtime — `waferrun --heatmap DIR`: PNG heatmaps of a finished simulation, each with
 * a title and a colour bar labelled with its minimum and maximum, and a CSV beside each.
 * Files (docs/report-format.md):
 *
 *   DIR/pe_busy.png, .csv    busy % per PE: (compute + communication cycles) / total cycles
 *   DIR/link_n.png, .csv     wavelets each router sent north (toward y-1); link_e, link_s,
 *   ...                      link_w likewise. Mesh-edge ports have no link: grey in the PNG.
 *
 * Every CSV is `x,y,value` with one row per PE that runs a program, in row-major order.
 *
 *   int rc = wf_heatmap_write(sim, plan, "heat");     // WF_EXIT_*; creates the directory
 */
#ifndef WAFERC_RUNTIME_HEATMAP_H
#define WAFERC_RUNTIME_HEATMAP_H

#include "runtime/runtime.h"

int wf_heatmap_write(const wf_sim *s, const wf_plan *p, const char *dir);

/* Exposed for tests: the pixel size of the image for a w x h mesh. */
void wf_heatmap_image_size(int w, int h, int *img_w, int *img_h);

#endif
