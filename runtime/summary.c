/* Utilization and busiest-link lines of the text summary (runtime/summary.h). */
#include "runtime/summary.h"

void wf_summary_print_usage(const wf_sim *s, FILE *out) {
  int w = wf_sim_mesh_w(s), h = wf_sim_mesh_h(s);
  int64_t total = wf_sim_cycles(s);
  int64_t compute = 0, comm = 0, stall = 0, idle = 0, overlap = 0, pes = 0;
  int64_t best = -1;
  int bx = 0, by = 0, bd = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      wf_sim_pe_stats st;
      if (wf_sim_pe_stats_at(s, x, y, &st) || !st.present) continue;
      pes++;
      compute += st.compute;
      comm += st.comm;
      stall += st.stall;
      idle += st.idle;
      overlap += st.overlap;
      /* first maximum in row-major, N E S W order: deterministic */
      for (int d = 0; d < WF_DIR_RAMP; d++) {
        int64_t n = wf_sim_link_wavelets(s, x, y, d);
        if (n > best) {
          best = n;
          bx = x;
          by = y;
          bd = d;
        }
      }
    }
  double cap = (double)pes * (double)total;
  if (cap <= 0) return;
  /* The four classes partition every PE-cycle (runtime.h), so they add up to 100%. */
  fprintf(out, "PEs:    %.1f%% busy (compute %.1f%%, fabric %.1f%%), %.1f%% stalled, %.1f%% idle\n",
          100.0 * (double)(compute + comm) / cap, 100.0 * (double)compute / cap,
          100.0 * (double)comm / cap, 100.0 * (double)stall / cap, 100.0 * (double)idle / cap);
  if (overlap)
    fprintf(out, "        async fabric overlapped compute in %.1f%% of PE-cycles\n",
            100.0 * (double)overlap / cap);
  if (best > 0)
    fprintf(out, "links:  busiest (%d,%d) %s, %lld wavelets (%.1f%% of cycles)\n", bx, by,
            wf_dir_names[bd], (long long)best, 100.0 * (double)best / (double)total);
  else fprintf(out, "links:  no wavelet crossed a link\n");
}
