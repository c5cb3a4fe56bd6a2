/* waferrun — what the host loops that run several plans share (generate.c, pipeline.c):
 * each plan's kernels, loaded once, and the wavelet-hops a run moved. */
#include "run_io.h"

#include "runtime/jit.h"
#include "waferc/diag.h"

wf_jit *wf_run_load_jit(const wf_plan *p, int no_jit, int *rejected) {
  if (no_jit) return NULL;
  char why[512];
  int bad = 0;
  wf_jit *j = wf_jit_load_ex(p, why, sizeof why, &bad);
  if (bad) {
    wf_error(WF_LOC_NONE, "refusing the kernels of %s: %s", p->dir, why);
    *rejected = 1;
  } else if (!j && why[0])
    wf_warning(WF_LOC_NONE, "JIT unavailable for %s (%s); interpreting compute instructions", p->dir, why);
  return j;
}

int64_t wf_run_link_words(const wf_sim *s) {
  int64_t w = 0;
  for (int y = 0; y < wf_sim_mesh_h(s); y++)
    for (int x = 0; x < wf_sim_mesh_w(s); x++)
      for (int dir = 0; dir < 4; dir++) w += wf_sim_link_wavelets(s, x, y, dir);
  return w;
}
