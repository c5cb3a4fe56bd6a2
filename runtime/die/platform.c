/* The SimGrid platform of a die system, written as XML (SimGrid's C API loads platforms only
 * from files): one host per die and one per die's HBM, one link per direction between
 * neighbours but the dead ones (without latency: runtime/die/engine.c adds it), and an explicit
 * route (wf_die_route: X-Y, or around dead links) for every (src, dst) pair some flow uses.
 * Explicit routes keep SimGrid's routing out of the model: the routes are waferc's choice. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/die.h"
#include "waferc/diag.h"

int wf_die_platform_write(const wf_die_system *s, const wf_die_flows *sets, int nsets, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the SimGrid platform: %s (choose another --platform path)", strerror(errno));
    return WF_EXIT_IO;
  }
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
             "<!-- written by waferc from die target '%s': %dx%d wafers of %dx%d dies -->\n"
             "<platform version=\"4.1\">\n<zone id=\"system\" routing=\"Full\">\n",
          s->t.name, s->wafers_w, s->wafers_h, s->t.dies_w, s->t.dies_h);
  /* Host speed is the die's INT8 rate (the experts' precision); other work is scaled to it. */
  for (int d = 0; d < s->n; d++) {
    fprintf(f, "  <host id=\"d%d\" speed=\"%.17gf\"/>\n", d, s->t.int8_ops);
    fprintf(f, "  <host id=\"m%d\" speed=\"1f\"/>\n", d);
    fprintf(f, "  <link id=\"hbm%d\" bandwidth=\"%.17gBps\" latency=\"0s\"/>\n", d, s->t.hbm_bw);
  }
  for (int d = 0; d < s->n; d++)
    for (int dir = 0; dir < 4; dir++) {
      int l = wf_die_link(s, d, dir);
      if (l >= 0 && !(s->link_dead && s->link_dead[l]))
        /* No latency here: the engine applies it (engine.c says why). */
        fprintf(f, "  <link id=\"l%d\" bandwidth=\"%.17gBps\" latency=\"0s\"/>\n", l, wf_die_link_bw(s, l));
    }
  for (int d = 0; d < s->n; d++)
    fprintf(f, "  <route src=\"m%d\" dst=\"d%d\" symmetrical=\"NO\"><link_ctn id=\"hbm%d\"/></route>\n", d, d, d);
  size_t pairs = (size_t)s->n * (size_t)s->n;
  unsigned char *used = calloc(pairs, 1);
  int *route = malloc(sizeof(int) * (size_t)s->n);
  WF_ASSERT(used && route);
  int rc = 0;
  for (int k = 0; k < nsets; k++)
    for (size_t i = 0; i < sets[k].n; i++) used[(size_t)sets[k].v[i].src * s->n + sets[k].v[i].dst] = 1;
  for (size_t p = 0; p < pairs; p++) {
    if (!used[p]) continue;
    int a = (int)(p / s->n), b = (int)(p % s->n);
    int h = wf_die_route(s, a, b, route, s->n);
    if (h < 0) {
      wf_error_at(path, "no route from die %d to die %d avoids the dead links (a caller's bug: it placed them apart)", a, b);
      rc = WF_EXIT_INPUT;
      break;
    }
    fprintf(f, "  <route src=\"d%d\" dst=\"d%d\" symmetrical=\"NO\">", a, b);
    for (int i = 0; i < h; i++) fprintf(f, "<link_ctn id=\"l%d\"/>", route[i]);
    fprintf(f, "</route>\n");
  }
  free(used);
  free(route);
  fprintf(f, "</zone>\n</platform>\n");
  if (fclose(f) && !rc) {
    wf_error_at(path, "cannot write the SimGrid platform: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return rc;
}
