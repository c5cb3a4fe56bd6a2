/* WATOS's hardware template (§II-A, Fig. 3) and its enumerator: a compute die (one of two core
 * arrays of Dojo-style cores, §V-A) with k DRAM chiplets around it is one site; the wafer holds
 * as many sites as its area allows, on a 2D mesh; each DRAM chiplet takes edge I/O that D2D
 * links no longer get (Fig. 4's trade-off). The chiplet's area, capacity, bandwidth and I/O are
 * template parameters, not published figures: docs/dse.md says how they were chosen. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/die/train.h"

const wf_train_template WF_TRAIN_TEMPLATE_DEFAULT = {
    .wafer_mm2 = 40000,                    /* WATOS §III-B: about 40,000 mm2 on a 12-inch wafer */
    .die_mm2 = {21.92 * 22.81, 25.5 * 25.2}, /* WATOS §V-A */
    .die_cores = {16, 18},                 /* 16x16 and 18x18 core arrays */
    .core_flops = 2.04e12,                 /* FP16 per core, §V-A */
    .hbm_mm2 = 14, .hbm_gb = 16, .hbm_bw = 0.4e12, /* template parameters */
    .edge_bw = 24e12, .hbm_io_bw = 1.5e12, /* bidirectional edge I/O, both template parameters */
};

int wf_train_enumerate(const wf_train_template *tp, wf_die_target *out, int cap) {
  int n = 0;
  for (int d = 0; d < 2; d++)
    for (int k = 1; k <= 8; k++) {
      double site = tp->die_mm2[d] + k * tp->hbm_mm2;
      int count = (int)floor(tp->wafer_mm2 / site);
      double d2d = tp->edge_bw - k * tp->hbm_io_bw;
      if (count < 4 || d2d <= 0) continue;
      /* The mesh: the largest W x H <= count with W and H within 2 of each other. */
      int bw = 0, bh = 0;
      for (int h = 1; h * h <= count * 2; h++)
        for (int w = h; w <= h + 2; w++)
          if (w * h <= count && w * h > bw * bh) bw = w, bh = h;
      if (n >= cap) return n;
      wf_die_target *t = &out[n++];
      memset(t, 0, sizeof *t);
      int c = tp->die_cores[d];
      snprintf(t->name, sizeof t->name, "enum-c%d-k%d", c, k);
      t->dies_w = bw, t->dies_h = bh, t->wafers_w = t->wafers_h = 1;
      t->fp16_flops = t->int8_ops = c * c * tp->core_flops;
      t->hbm_bytes = k * tp->hbm_gb * 1e9;
      t->hbm_bw = k * tp->hbm_bw;
      t->link_bw = d2d / 8; /* four sides, two directions */
      t->link_latency = 100e-9;
      t->border_bw = t->link_bw;
      t->border_latency = 500e-9;
      t->core_w = t->core_h = c;
      t->core_sram = 1310720;
      t->core_clock = 2e9;
      snprintf(t->description, sizeof t->description,
               "enumerated: %dx%d dies of %dx%d cores, %d DRAM chiplets (%.0f GB, %.1f TB/s), %.0f mm2 used", bw, bh,
               c, c, k, t->hbm_bytes / 1e9, t->hbm_bw / 1e12, bw * bh * site);
    }
  return n;
}
