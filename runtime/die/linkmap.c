/* Link heatmaps of a die system: per direction, the bytes each die sends on that link, drawn
 * by the runtime's heatmap writer (runtime/heatmap.c), and one CSV of every directed link.
 * A die on the mesh's edge has no link that way: its cell shows 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/fsutil.h"
#include "runtime/die/die.h"
#include "runtime/heatmap.h"
#include "waferc/diag.h"

int wf_die_heatmap_write(const wf_die_system *s, const double *loads, const char *dir, const char *file,
                         const char *title) {
  if (wf_mkdir_p(dir)) return WF_EXIT_IO;
  static const char *const names[4] = {"e", "w", "n", "s"};
  static const char *const words[4] = {"east", "west", "north", "south"};
  double hi = 0;
  for (int i = 0; i < s->n * 4; i++)
    if (loads[i] / 1e6 > hi) hi = loads[i] / 1e6;
  double *v = malloc(sizeof *v * (size_t)s->n);
  WF_ASSERT(v != NULL);
  char sub[160];
  snprintf(sub, sizeof sub, "%s: %dx%d wafers of %dx%d dies", s->t.name, s->wafers_w, s->wafers_h, s->t.dies_w,
           s->t.dies_h);
  for (int dirn = 0; dirn < 4; dirn++) {
    for (int d = 0; d < s->n; d++) v[d] = loads[d * 4 + dirn] / 1e6;
    char fname[256], t[256];
    snprintf(fname, sizeof fname, "%s_link_%s", file, names[dirn]);
    snprintf(t, sizeof t, "%s: MB sent %s", title, words[dirn]);
    /* One scale (the busiest link of all four maps) so the directions compare. */
    int rc = wf_heatmap_write_counts(dir, fname, t, sub, "MB", s->w, s->h, v, hi);
    if (rc) {
      free(v);
      return rc;
    }
  }
  free(v);
  char name[256];
  snprintf(name, sizeof name, "%s_links.csv", file);
  char *path = wf_path_join(dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the link CSV: %s", strerror(errno));
    free(path);
    return WF_EXIT_IO;
  }
  fprintf(f, "from_x,from_y,to_x,to_y,bytes,crosses_wafer\n");
  static const int dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, -1, 1};
  for (int d = 0; d < s->n; d++)
    for (int k = 0; k < 4; k++) {
      int l = wf_die_link(s, d, k);
      if (l < 0) continue;
      int x = wf_die_x(s, d), y = wf_die_y(s, d);
      fprintf(f, "%d,%d,%d,%d,%.0f,%d\n", x, y, x + dx[k], y + dy[k], loads[l], wf_die_link_crosses_wafer(s, l));
    }
  int bad = fclose(f);
  if (bad) wf_error_at(path, "cannot write the link CSV: %s", strerror(errno));
  free(path);
  return bad ? WF_EXIT_IO : 0;
}
