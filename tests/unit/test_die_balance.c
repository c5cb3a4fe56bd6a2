/* The balancers on a 4x4 system with one expert per die: one hot expert (on die 5, at (1,1)).
 * Alg. 1 copies it to the nearest cold dies first; greedy picks the coldest die regardless of
 * distance; both lower the peak; a second plan with the same loads moves nothing; the trace generator is deterministic per seed and its file form
 * reads back equal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "wf_test.h"

static double peak(const wf_moe_placement *p, const double *load) {
  double h[16], m = 0;
  wf_moe_device_heat(p, load, h);
  for (int d = 0; d < 16; d++) m = h[d] > m ? h[d] : m;
  return m;
}

int main(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/targets/dies/moe-b200.target", src ? src : "../..");
  wf_die_target t;
  CHECK(wf_die_target_load(path, &t) == 0);
  wf_die_system s;
  wf_die_system_init(&s, &t, 1, 1);
  double load[16];
  for (int e = 0; e < 16; e++) load[e] = 1;
  load[5] = 10;
  wf_moe_migration mig[64];

  wf_moe_placement topo, greedy;
  wf_moe_placement_init(&topo, 16, 16, 1);
  wf_moe_placement_init(&greedy, 16, 16, 1);
  CHECK(peak(&topo, load) == 10);
  /* Alg. 1 runs until no die is cold enough or no slot is left: expert 5 reaches all four
   * neighbours of die 5 (the nearest cold dies), and the peak falls to a fraction. */
  int nt = wf_moe_rebalance(&s, WF_BAL_TOPOLOGY, load, &topo, mig, 64);
  int near5 = 0, copies5 = 0;
  for (int k = 0; k < nt; k++)
    if (mig[k].expert == 5) {
      CHECK(mig[k].src == 5);
      copies5++;
      near5 += wf_die_hops(&s, 5, mig[k].dst) == 1;
    }
  CHECK(near5 == 4, "%d of die 5's 4 neighbours got a copy of expert 5", near5);
  CHECK(peak(&topo, load) < 2.5, "peak %g after %d copies", peak(&topo, load), nt);
  CHECK(wf_moe_rebalance(&s, WF_BAL_TOPOLOGY, load, &topo, mig, 64) == 0, "replanning the same loads moves nothing");

  /* Greedy: the coldest die first (ties: the lowest, die 0, two hops away), while the peak falls. */
  int ng = wf_moe_rebalance(&s, WF_BAL_GREEDY, load, &greedy, mig, 64), g5 = 0, to0 = 0;
  for (int k = 0; k < ng; k++)
    if (mig[k].expert == 5) g5++, to0 += mig[k].dst == 0;
  CHECK(to0 == 1 && g5 > 0, "greedy copies expert 5 to die 0");
  CHECK(peak(&greedy, load) < 10, "greedy lowers the peak");

  /* Fewer experts than dies: replicas split their expert's tokens. */
  wf_moe_placement rep;
  wf_moe_placement_init(&rep, 16, 8, 0);
  double l8[8] = {8, 8, 8, 8, 8, 8, 8, 8}, h[16];
  wf_moe_device_heat(&rep, l8, h);
  for (int d = 0; d < 16; d++) CHECK(h[d] == 4, "die %d heat %g", d, h[d]);
  double share[16], sum = 0;
  wf_moe_even_share(16, 8, share);
  for (int d = 0; d < 16; d++) sum += share[d];
  CHECK(fabs(sum - 1) < 1e-12);

  wf_moe_trace a, b, c;
  CHECK(wf_moe_trace_generate("mixed", 32, 20, 5000, 7, 1.0, &a) == 0);
  CHECK(wf_moe_trace_generate("mixed", 32, 20, 5000, 7, 1.0, &b) == 0);
  CHECK(!memcmp(a.load, b.load, sizeof(double) * 32 * 20), "same seed, same trace");
  CHECK(wf_moe_trace_generate("chat", 32, 20, 5000, 7, 1.0, &c) == -1, "unknown scenario");
  CHECK(wf_moe_trace_write("/tmp/wf_test_die_balance.trace", &a) == 0);
  wf_moe_trace_free(&b);
  CHECK(wf_moe_trace_read("/tmp/wf_test_die_balance.trace", &b) == 0);
  CHECK(b.iterations == 20 && b.experts == 32 && !memcmp(a.load, b.load, sizeof(double) * 32 * 20));
  remove("/tmp/wf_test_die_balance.trace");
  wf_moe_trace_free(&a);
  wf_moe_trace_free(&b);
  wf_moe_placement_free(&topo);
  wf_moe_placement_free(&greedy);
  wf_moe_placement_free(&rep);
  return wf_test_result("test_die_balance");
}
