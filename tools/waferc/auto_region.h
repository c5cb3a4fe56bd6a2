/* waferc's retries of a compile that does not fit (auto_region.c). */
#ifndef WAFERC_TOOLS_AUTO_REGION_H
#define WAFERC_TOOLS_AUTO_REGION_H

#include "waferc/target.h"

/* auto_region.c: compiles with `try`; when it fails for lack of SRAM, retries on the
 * smallest larger meshes within the program rectangle, with a note naming the one used. */
int wf_waferc_auto_region(wf_target *t, int (*try_compile)(void *), void *user);
/* The smallest mesh up the diagonal from the current one (the aspect kept) that the plan fits,
 * by a doubling then halving search, silent and writing nothing the caller keeps: 1 and the mesh
 * when one fits. */
int wf_waferc_smallest_fit(wf_target *t, int (*try_compile)(void *), void *user, int *w, int *h);
/* Compiles with `first`; when that plan does not fit (exit 4), with `second`, and keeps the
 * one that fits: the other attempt's diagnostics are dropped, and `why` (unless NULL) noted
 * when `second` is kept. */
int wf_waferc_fallback(int (*first)(void *), int (*second)(void *), void *user, const char *why);
/* Compiles with `first` and then `second`, each attempt's diagnostics held back; pick(user, rc1,
 * rc2) says which to keep (1: the second); the kept attempt's diagnostics are shown and its exit
 * code returned. */
int wf_waferc_pick(int (*first)(void *), int (*second)(void *), int (*pick)(void *, int, int), void *user);

#endif
