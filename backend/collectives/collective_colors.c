/* The color budget as the collectives see it (declared in lower_collective.h): a fresh color
 * no op of the class uses yet, how many are left, and the "no free color" error that names
 * every color in use and the collectives holding it (collective_cache.c). */
#include <stdio.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

int wf_lower_color_fresh(wf_lower *L, const char *purpose, wf_loc loc) {
  int c = wf_lower_color_try(L, purpose);
  if (c >= 0) return c;
  wf_lower_color_exhausted(L, purpose, 1, loc);
  return -1;
}

static int color_taken(const wf_lower *L, int c) {
  if (L->t->reserved_colors >> c & 1) return 1;
  for (int p = 0; p < WF_COLOR_ROLES; p++)
    if (L->color[p] == c) return 1;
  for (int i = 0; i < L->cls->n_colors; i++)
    if (L->cls->colors[i].color == c) return 1;
  return 0;
}

int wf_lower_color_free(const wf_lower *L) {
  int n = 0;
  for (int c = 0; c < L->t->colors && c < 32; c++) n += !color_taken(L, c);
  return n;
}

int wf_lower_color_exhausted(wf_lower *L, const char *what, int needed, wf_loc loc) {
  char used[512] = "";
  size_t u = 0;
  for (int i = 0; i < L->cls->n_colors && u + 64 < sizeof used; i++) {
    char users[200];
    wf_coll_cache_users(L, L->cls->colors[i].color, users, sizeof users);
    u += (size_t)snprintf(used + u, sizeof used - u, "%sc%d (%s)", u ? ", " : "", L->cls->colors[i].color,
                          users[0] ? users : L->cls->colors[i].purpose);
  }
  int usable = 0;
  for (int c = 0; c < L->t->colors && c < 32; c++) usable += !(L->t->reserved_colors >> c & 1);
  wf_error(loc, "target '%s' has no free color left for the %s (it needs %d; %d usable colors, "
                "%d in use, none can be shared at a free switch position nor relayed on): %s",
           L->t->name, what, needed, usable, L->cls->n_colors, used[0] ? used : "none");
  return WF_EXIT_NOFIT;
}

int wf_lower_color_try(wf_lower *L, const char *purpose) {
  for (int c = 0; c < L->t->colors && c < 32; c++) {
    if (color_taken(L, c)) continue;
    wf_pe_class_add_color(L->cls, c, purpose);
    return c;
  }
  return -1;
}
