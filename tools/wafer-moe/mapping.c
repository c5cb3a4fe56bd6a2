/* wafer-moe mapping: the attention allreduce and the MoE all-to-all of one layer under the
 * baseline mapping, ER-Mapping and hierarchical ER-Mapping (MoEntwine §IV, Fig. 8, Fig. 13),
 * each simulated on SimGrid, with MoEntwine's Eq. 1 beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/wafer-moe/moe.h"
#include "waferc/diag.h"

enum { AR, AR_NOAG, DISPATCH, COMBINE, DISPATCH_NOAG, COMBINE_NOAG, NSETS };
static const wf_moe_mapping_kind kinds[3] = {WF_MOE_BASELINE, WF_MOE_ER, WF_MOE_HER};

int moe_cmd_mapping(int argc, char **argv) {
  moe_opts o = {0};
  long tp = 0;
  double tokens = 256;
  int with_ag = 1;
  static const char *const known[] = {"--target", "--dies", "--wafers", "--model", "--heatmap", "--platform",
                                      "--tp", "--tokens", "--no-ag"};
  for (int i = 1; i < argc; i++) {
    int bad = 0, r = moe_common_opt(argc, argv, &i, &o);
    if (r < 0) return WF_EXIT_USAGE;
    if (r) continue;
    const char *v;
    if ((v = moe_opt_value(argc, argv, &i, "--tp", &bad))) {
      if (moe_parse_int("--tp", v, 1, 4096, &tp)) return WF_EXIT_USAGE;
    } else if ((v = moe_opt_value(argc, argv, &i, "--tokens", &bad))) {
      if (moe_parse_double("--tokens", v, 1, &tokens)) return WF_EXIT_USAGE;
    } else if (!strcmp(argv[i], "--no-ag")) {
      with_ag = 0;
    } else {
      if (!bad) moe_unknown_option("wafer-moe mapping", argv[i], known, 9);
      return WF_EXIT_USAGE;
    }
  }
  if (!tp) {
    wf_error_at("wafer-moe mapping", "--tp=N is required (the attention layers' TP degree, e.g. --tp=4)");
    return WF_EXIT_USAGE;
  }
  wf_die_system s;
  const wf_moe_model *md;
  int rc = moe_setup(&o, &s, &md);
  if (rc) return rc;

  wf_moe_mapping maps[3];
  wf_die_flows sets[3][NSETS];
  memset(sets, 0, sizeof sets);
  for (int k = 0; k < 3; k++) {
    if ((rc = wf_moe_mapping_build(&s, kinds[k], (int)tp, &maps[k]))) {
      for (int j = 0; j < k; j++) wf_moe_mapping_free(&maps[j]);
      return rc;
    }
    /* The attention output of a group: its tokens x hidden, FP16. */
    double ar_bytes = tokens * md->hidden * 2.0;
    wf_moe_allreduce_flows(&s, &maps[k], ar_bytes, with_ag, &sets[k][AR]);
    wf_moe_allreduce_flows(&s, &maps[k], ar_bytes, 0, &sets[k][AR_NOAG]);
    wf_moe_dispatch_flows(&s, &maps[k], md, tokens, NULL, with_ag, &sets[k][DISPATCH]);
    wf_moe_reverse(&sets[k][DISPATCH], &sets[k][COMBINE]);
    wf_moe_dispatch_flows(&s, &maps[k], md, tokens, NULL, 0, &sets[k][DISPATCH_NOAG]);
    wf_moe_reverse(&sets[k][DISPATCH_NOAG], &sets[k][COMBINE_NOAG]);
  }
  char *xml = moe_platform_path(&o);
  wf_die_engine *e = xml ? wf_die_engine_open(&s, &sets[0][0], 3 * NSETS, xml) : NULL;
  if (!e) {
    moe_platform_done(&o, xml);
    return WF_EXIT_IO;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "target", s.t.name);
  cJSON_AddStringToObject(root, "model", md->name);
  cJSON *dims = cJSON_AddArrayToObject(root, "dies");
  cJSON_AddItemToArray(dims, cJSON_CreateNumber(s.t.dies_w));
  cJSON_AddItemToArray(dims, cJSON_CreateNumber(s.t.dies_h));
  cJSON *wf = cJSON_AddArrayToObject(root, "wafers");
  cJSON_AddItemToArray(wf, cJSON_CreateNumber(s.wafers_w));
  cJSON_AddItemToArray(wf, cJSON_CreateNumber(s.wafers_h));
  cJSON_AddNumberToObject(root, "tp", (double)tp);
  cJSON_AddNumberToObject(root, "tp_groups", maps[0].groups);
  cJSON_AddNumberToObject(root, "tokens_per_group", tokens);
  cJSON_AddBoolToObject(root, "allreduce_keeps_all_gather", with_ag);
  double *loads = malloc(sizeof *loads * (size_t)s.n * 4);
  WF_ASSERT(loads != NULL);
  double a2a[3] = {0}, ar[3] = {0};
  for (int k = 0; k < 3 && !rc; k++) {
    const wf_moe_mapping *m = &maps[k];
    double t_ar = wf_die_engine_run(e, &sets[k][AR]);
    double t_ar_noag = wf_die_engine_run(e, &sets[k][AR_NOAG]);
    double t_disp = wf_die_engine_run(e, &sets[k][DISPATCH]);
    double t_comb = wf_die_engine_run(e, &sets[k][COMBINE]);
    double t_noag = wf_die_engine_run(e, &sets[k][DISPATCH_NOAG]) + wf_die_engine_run(e, &sets[k][COMBINE_NOAG]);
    a2a[k] = t_disp + t_comb;
    ar[k] = t_ar;
    cJSON *j = cJSON_AddObjectToObject(root, wf_moe_mapping_name(kinds[k]));
    cJSON_AddNumberToObject(j, "all_to_all_us", (t_disp + t_comb) * 1e6);
    cJSON_AddNumberToObject(j, "dispatch_us", t_disp * 1e6);
    cJSON_AddNumberToObject(j, "combine_us", t_comb * 1e6);
    cJSON_AddNumberToObject(j, "allreduce_us", t_ar * 1e6);
    cJSON_AddNumberToObject(j, "allreduce_without_ag_us", t_ar_noag * 1e6);
    /* Without the all-gather the dispatch fetches shards from every group member (HER keeps
     * no all-gather inside a wafer in either case). */
    cJSON_AddNumberToObject(j, "all_to_all_without_ag_us", t_noag * 1e6);
    cJSON_AddNumberToObject(j, "comm_us", (t_disp + t_comb + t_ar) * 1e6);
    cJSON_AddNumberToObject(j, "all_to_all_eq1_us",
                            (wf_die_flows_eq1(&s, &sets[k][DISPATCH]) + wf_die_flows_eq1(&s, &sets[k][COMBINE])) * 1e6);
    cJSON_AddNumberToObject(j, "allreduce_eq1_us", wf_die_flows_eq1(&s, &sets[k][AR]) * 1e6);
    cJSON_AddNumberToObject(j, "ftd_area", wf_moe_ftd_area(&s, m));
    cJSON_AddNumberToObject(j, "ftds", m->nftd);
    cJSON_AddNumberToObject(j, "avg_hops", wf_die_flows_mean_hops(&s, &sets[k][DISPATCH]));
    cJSON_AddNumberToObject(j, "allreduce_avg_hops", wf_die_flows_mean_hops(&s, &sets[k][AR]));
    cJSON *blk = cJSON_AddArrayToObject(j, m->kind == WF_MOE_BASELINE ? "tp_group_block" : "ftd_block");
    cJSON_AddItemToArray(blk, cJSON_CreateNumber(m->blk_w));
    cJSON_AddItemToArray(blk, cJSON_CreateNumber(m->blk_h));
    wf_die_flows_link_bytes(&s, &sets[k][DISPATCH], loads);
    double mx = 0, cross = 0;
    for (int l = 0; l < s.n * 4; l++) {
      if (loads[l] > mx) mx = loads[l];
      if (loads[l] > 0 && wf_die_link_crosses_wafer(&s, l)) cross += loads[l];
    }
    cJSON_AddNumberToObject(j, "dispatch_max_link_mb", mx / 1e6);
    cJSON_AddNumberToObject(j, "dispatch_cross_wafer_mb", cross / 1e6);
    if (o.heatmap) {
      char file[64], title[128];
      snprintf(file, sizeof file, "%s_dispatch", wf_moe_mapping_name(kinds[k]));
      snprintf(title, sizeof title, "%s dispatch, %s TP=%ld", wf_moe_mapping_name(kinds[k]), md->name, tp);
      rc = wf_die_heatmap_write(&s, loads, o.heatmap, file, title);
      wf_die_flows_link_bytes(&s, &sets[k][AR], loads);
      snprintf(file, sizeof file, "%s_allreduce", wf_moe_mapping_name(kinds[k]));
      snprintf(title, sizeof title, "%s allreduce, %s TP=%ld", wf_moe_mapping_name(kinds[k]), md->name, tp);
      if (!rc) rc = wf_die_heatmap_write(&s, loads, o.heatmap, file, title);
    }
  }
  cJSON *sp = cJSON_AddObjectToObject(root, "speedup_over_baseline");
  cJSON_AddNumberToObject(sp, "er_all_to_all", a2a[1] > 0 ? a2a[0] / a2a[1] : 0);
  cJSON_AddNumberToObject(sp, "her_all_to_all", a2a[2] > 0 ? a2a[0] / a2a[2] : 0);
  cJSON_AddNumberToObject(sp, "er_comm", a2a[1] + ar[1] > 0 ? (a2a[0] + ar[0]) / (a2a[1] + ar[1]) : 0);
  cJSON_AddNumberToObject(sp, "her_comm", a2a[2] + ar[2] > 0 ? (a2a[0] + ar[0]) / (a2a[2] + ar[2]) : 0);
  free(loads);
  for (int k = 0; k < 3; k++) {
    for (int j = 0; j < NSETS; j++) wf_die_flows_free(&sets[k][j]);
    wf_moe_mapping_free(&maps[k]);
  }
  return moe_finish(&o, e, xml, root, rc);
}
