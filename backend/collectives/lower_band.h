/* waferc backend — ops on a band of the region's rows (passes/expert_bands.c;
 * backend/collectives/lower_band.c, docs/moe-plans.md "Experts on bands"). */
#ifndef WAFERC_BACKEND_LOWER_BAND_H
#define WAFERC_BACKEND_LOWER_BAND_H

#include "backend/resources/lower.h"

/* An op whose values live on a band of the region's rows (expert-bands) is
 * lowered as on a W x h mesh inside `[y >= y0, y < y0 + h] loop band 0 1` ... `endloop`, which
 * the PEs of other rows skip at no cost, its colors its own (a band's routes repeat on every
 * band of its height). wf_lower_band_leave rewrites what the op emitted to the band's rows:
 * instructions' y as y - y0 and H as h, routes' y as y mod h (when every band of that height
 * starts at a multiple of h; else wf_lower_band_finish writes them), H as h, with the
 * directions that leave the band dropped at its edges. Both return 0 or WF_EXIT_UNSUPPORTED (reported). */
int wf_lower_band_enter(wf_lower *L, int region, wf_loc loc);
int wf_lower_band_leave(wf_lower *L, wf_loc loc);
/* After the function's ops: the routes of bands whose rows y mod h cannot name (bands of one
 * height starting off multiples of it, uneven bands) are written for the rows of every band of
 * their height, as `y in SET`. 0 or WF_EXIT_UNSUPPORTED (reported). */
int wf_lower_band_finish(wf_lower *L);
void wf_lower_band_free(wf_lower *L);
/* Whether region r is a band of whole rows of the lowered region. */
int wf_lower_is_band(const wf_lower *L, int r);
/* Whether a value of the function lives on the region. */
int wf_lower_region_used(const wf_lower *L, int region);

#endif
