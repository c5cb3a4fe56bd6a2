/* The die-level engine on MoEntwine's Fig. 8 example (4x4 dies, TP=4, four groups): the FTD
 * geometry of the baseline and ER mappings (areas 9 and 4, mean hops 8/3 and 4/3), the rings
 * (baseline one-hop, ER two-hop), the cold links ER leaves (inter-FTD links in the dispatch,
 * spare intra-FTD bandwidth in the allreduce), and SimGrid's times against hand-worked values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "waferc/diag.h"
#include "wf_test.h"

static char msgs[4096];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  size_t n = strlen(msgs);
  snprintf(msgs + n, sizeof msgs - n, "%s:%u: %s\n", loc.file ? loc.file : "-", loc.line, msg);
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

int main(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/targets/dies/moe-b200.target", src ? src : "../..");
  wf_die_target t;
  CHECK(wf_die_target_load(path, &t) == 0, "loading %s", path);
  CHECK(t.dies_w == 4 && t.dies_h == 4 && t.link_bw == 4e12, "moe-b200: 4x4 dies, 4 TB/s per direction");
  /* Every preset loads; a file missing keys is an error naming them. */
  static const char *const presets[] = {"moe-b200", "moe-b200-6x6", "moe-b200-8x8", "moe-b200-4w",
                                        "watos-config1", "watos-config2", "watos-config3", "watos-config4"};
  for (int i = 0; i < 8; i++) {
    char p2[1100];
    wf_die_target u;
    snprintf(p2, sizeof p2, "%s/targets/dies/%s.target", src ? src : "../..", presets[i]);
    CHECK(wf_die_target_load(p2, &u) == 0 && !strcmp(u.name, presets[i]), "preset %s", presets[i]);
  }
  FILE *bad = fopen("/tmp/wf_test_die_bad.target", "w");
  if (bad) {
    fputs("name = x\ndies = 4x4\nlink_bw = -1\n", bad);
    fclose(bad);
    wf_die_target u;
    wf_diag_set_sink(sink, NULL);
    CHECK(wf_die_target_load("/tmp/wf_test_die_bad.target", &u) == 1, "a bad die target is exit 1");
    wf_diag_set_sink(NULL, NULL);
    CHECK(strstr(msgs, ":3: bad value '-1' for 'link_bw'") != NULL, "got: %s", msgs);
    CHECK(strstr(msgs, "missing die target keys: description, wafers") != NULL, "got: %s", msgs);
    remove("/tmp/wf_test_die_bad.target");
  }
  wf_die_system s;
  wf_die_system_init(&s, &t, 1, 1);
  const wf_moe_model *md = wf_moe_model_find("deepseek-v3");
  CHECK(md && md->experts == 256 && md->active == 8, "Table I: DeepSeek-V3 8 of 256");

  wf_moe_mapping base, er;
  CHECK(wf_moe_mapping_build(&s, WF_MOE_BASELINE, 4, &base) == 0);
  CHECK(wf_moe_mapping_build(&s, WF_MOE_ER, 4, &er) == 0);
  CHECK(base.groups == 4 && er.groups == 4);
  /* Fig. 8(b): the FTD {D11^1, D13^2, D31^3, D33^4} spans 3x3; Fig. 8(c): 2x2. */
  CHECK(wf_moe_ftd_area(&s, &base) == 9, "baseline FTD area %g", wf_moe_ftd_area(&s, &base));
  CHECK(wf_moe_ftd_area(&s, &er) == 4, "ER FTD area %g", wf_moe_ftd_area(&s, &er));
  int f0 = base.ftd_of[wf_die_id(&s, 0, 0)];
  CHECK(base.ftd_of[wf_die_id(&s, 2, 0)] == f0 && base.ftd_of[wf_die_id(&s, 0, 2)] == f0 &&
        base.ftd_of[wf_die_id(&s, 2, 2)] == f0, "baseline FTD of (0,0) is {(0,0),(2,0),(0,2),(2,2)}");
  CHECK(er.ftd_of[wf_die_id(&s, 1, 1)] == er.ftd_of[wf_die_id(&s, 0, 0)], "ER FTD of (0,0) is its 2x2 block");
  /* Every FTD holds one die of each group. */
  for (int f = 0; f < 4; f++)
    for (int g = 0; g < 4; g++) {
      CHECK(wf_moe_ftd_member(&base, f, g) >= 0, "baseline FTD %d lacks group %d", f, g);
      CHECK(wf_moe_ftd_member(&er, f, g) >= 0, "ER FTD %d lacks group %d", f, g);
    }
  /* Rings: baseline groups are 2x2 blocks (one-hop ring); ER groups step two hops. */
  for (int g = 0; g < 4; g++)
    for (int r = 0; r < 4; r++) {
      int a = base.ring[g * 4 + r], b = base.ring[g * 4 + (r + 1) % 4];
      CHECK(wf_die_hops(&s, a, b) == 1, "baseline ring step %d->%d", a, b);
      a = er.ring[g * 4 + r], b = er.ring[g * 4 + (r + 1) % 4];
      CHECK(wf_die_hops(&s, a, b) == 2, "ER ring step %d->%d is two hops", a, b);
      CHECK(er.group_of[a] == g && base.group_of[base.ring[g * 4 + r]] == g);
    }

  wf_die_flows bd = {0}, ed = {0}, ba = {0}, ea = {0};
  wf_moe_dispatch_flows(&s, &base, md, 256, NULL, 1, &bd);
  wf_moe_dispatch_flows(&s, &er, md, 256, NULL, 1, &ed);
  CHECK(near(wf_die_flows_mean_hops(&s, &bd), 8.0 / 3, 1e-12), "baseline hops %g (paper: 2.7)",
        wf_die_flows_mean_hops(&s, &bd));
  CHECK(near(wf_die_flows_mean_hops(&s, &ed), 4.0 / 3, 1e-12), "ER hops %g", wf_die_flows_mean_hops(&s, &ed));
  /* Each die fetches share x top-k x tokens from each of the other three groups. */
  CHECK(bd.n == 16 * 3 && ed.n == 16 * 3, "%zu and %zu dispatch flows", bd.n, ed.n);
  double per = 256.0 * 8 / 16 * md->hidden * 2;
  CHECK(near(bd.v[0].bytes, per, 1e-12), "flow bytes %g, expected %g", bd.v[0].bytes, per);

  /* ER's dispatch stays inside the FTDs: every inter-FTD link is cold. */
  double *loads = malloc(sizeof(double) * 64);
  wf_die_flows_link_bytes(&s, &ed, loads);
  int cold_inter = 0, inter = 0;
  for (int d = 0; d < 16; d++)
    for (int k = 0; k < 4; k++) {
      int l = wf_die_link(&s, d, k);
      if (l < 0) continue;
      int nb = d + (k == WF_DIE_E ? 1 : k == WF_DIE_W ? -1 : k == WF_DIE_S ? 4 : -4);
      if (er.ftd_of[d] != er.ftd_of[nb]) inter++, cold_inter += loads[l] == 0;
    }
  CHECK(inter == 16 && cold_inter == 16, "%d of %d inter-FTD links cold in ER's dispatch", cold_inter, inter);

  wf_moe_allreduce_flows(&s, &base, 256.0 * md->hidden * 2, 1, &ba);
  wf_moe_allreduce_flows(&s, &er, 256.0 * md->hidden * 2, 1, &ea);
  CHECK(ba.steps == 6 && ea.steps == 6, "ring allreduce of 4: 3 + 3 steps");

  /* SimGrid: the two mappings' dispatch, a lone flow, a flow on a cold link, the rings. */
  wf_die_flows one = {0}, bg = {0}, pair01 = {0};
  wf_die_flows_add(&one, 0, 2, 4e6, 0);
  wf_die_flows_add(&pair01, 0, 1, 1, 0);
  wf_die_flows_add(&bg, wf_die_id(&s, 1, 0), wf_die_id(&s, 2, 0), 40e6, 0);
  wf_die_flows sets[7] = {bd, ed, ba, ea, one, bg, pair01};
  wf_die_engine *e = wf_die_engine_open(&s, sets, 7, "/tmp/wf_test_die_platform.xml");
  CHECK(e != NULL);
  if (e) {
    double tb = wf_die_engine_run(e, &bd), te = wf_die_engine_run(e, &ed);
    CHECK(tb > 1.9 * te, "Fig. 8: ER's dispatch %g us vs baseline %g us: expected about 2x lower", te * 1e6, tb * 1e6);
    /* Lower bound: a die receives 3 flows over at most 2 links. */
    CHECK(te >= per / t.link_bw, "ER dispatch %g s below one flow's transfer time", te);
    /* A lone flow is cut-through in the flow model: bytes / bw + sum of latencies. */
    double t1 = wf_die_engine_run(e, &one);
    CHECK(near(t1, 4e6 / t.link_bw + 2 * t.link_latency, 1e-6), "lone two-hop flow %g s", t1);
    /* A flow on a cold link costs the phase nothing: ER's dispatch with a copy between FTDs. */
    double bgt = 0, tw = wf_die_engine_run_with(e, &ed, &bg, &bgt);
    CHECK(near(tw, te, 1e-9), "dispatch with an inter-FTD copy: %g s vs %g s", tw, te);
    CHECK(near(bgt, 40e6 / t.link_bw + t.link_latency, 1e-6), "the copy alone on its link: %g s", bgt);
    double tab = wf_die_engine_run(e, &ba), tae = wf_die_engine_run(e, &ea);
    /* ER's rings share each inter-FTD link two ways and use each intra-FTD link one way: a
     * copy inside an FTD takes the spare half and costs the allreduce nothing (§V-A). */
    wf_die_flows local = {0};
    wf_die_flows_add(&local, wf_die_id(&s, 0, 0), wf_die_id(&s, 1, 0), 40e6, 0);
    double lt = 0, taw = wf_die_engine_run_with(e, &ea, &local, &lt);
    CHECK(near(taw, tae, 1e-9), "ER allreduce with an intra-FTD copy: %g s vs %g s", taw, tae);
    CHECK(lt > 40e6 / t.link_bw, "the copy shares its link while the rings run: %g s", lt);
    wf_die_flows_free(&local);
    CHECK(tae > 1.5 * tab, "ER's two-hop rings cost more allreduce: %g vs %g us", tae * 1e6, tab * 1e6);
  }
  wf_die_engine_close(e);
  wf_die_flows_free(&one);
  wf_die_flows_free(&bg);
  wf_die_flows_free(&pair01);
  free(loads);
  wf_die_flows_free(&bd), wf_die_flows_free(&ed), wf_die_flows_free(&ba), wf_die_flows_free(&ea);
  wf_moe_mapping_free(&base);
  wf_moe_mapping_free(&er);
  remove("/tmp/wf_test_die_platform.xml");
  return wf_test_result("test_die_mapping");
}
