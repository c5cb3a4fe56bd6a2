/* wafer-moe balance: one MoE layer over an expert-load trace under ER-Mapping, with no
 * balancing, greedy (EPLB-like) and topology-aware (Alg. 1) invasive balancing, and the
 * non-invasive balancer (MoEntwine §V). Every iteration's all-to-all and expert compute are
 * simulated on SimGrid with that iteration's loads; so are the expert copies:
 *
 *   invasive      the copies (one expert per sparse layer each) run alone, between two
 *                 iterations: all of that time is on the critical path;
 *   non-invasive  each copy is split where its X-Y path crosses between FTDs: the pieces
 *                 inside an FTD ride the attention allreduce, the pieces between FTDs the
 *                 all-to-all (their cold links), a window of one layer at a time; what each
 *                 window adds to its phase's simulated time is on the critical path.
 *
 * wafer-moe trace writes a generated trace to a file (the format of --trace). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/wafer-moe/moe.h"
#include "waferc/diag.h"

typedef struct bal_cfg {
  int tp, slots, window, beta;
  double tokens, alpha;
  const char *trace, *gen;
  long iterations;
  long seed;
  double skew;
} bal_cfg;

static const char *const bal_names[4] = {"none", "greedy", "topology", "non_invasive"};

typedef struct acc { /* one balancer's totals over the trace */
  double ratio, ratio_steady, a2a, a2a_eq1, comp, layer, critical, migrated_bytes, mig_hops;
  int steady_n, migrations, triggers;
  int max_from_one; /* most copies leaving one die in one plan */
  double apply_delay; /* iterations from trigger to the new placement */
} acc;

/* The X-Y path src -> dst cut where it passes between FTDs: pieces inside an FTD (local)
 * and between FTDs (global), in order. Sub-paths of an X-Y route are X-Y routes, so each
 * piece is one flow of the platform's routes. */
static int split_path(const wf_die_system *s, const wf_moe_mapping *m, int src, int dst, int *from, int *to,
                      int *global) {
  int route[1024], h = wf_die_route(s, src, dst, route, 1024), n = 0, cur = src;
  for (int i = 0; i < h; i++) {
    int a = route[i] / 4, dir = route[i] % 4;
    int b = a + (dir == WF_DIE_E ? 1 : dir == WF_DIE_W ? -1 : dir == WF_DIE_S ? s->w : -s->w);
    int g = m->ftd_of[a] != m->ftd_of[b];
    if (n == 0 || global[n - 1] != g) {
      if (n) to[n - 1] = cur;
      from[n] = cur, global[n] = g, n++;
    }
    cur = b;
  }
  if (n) to[n - 1] = cur;
  return n;
}

/* The pieces of one kind (local or global) of every copy, scheduled into windows of one phase:
 * a window takes pieces whose routes share no link (a link carries one copy at a time, as the
 * paper's steps do), each moving what the window's length lets it. One representative window
 * is simulated with its pieces in the background of the phase; the phase's lengthening, times
 * the windows needed, is what the copies put on the critical path. */
typedef struct piece {
  int from, to;
} piece;

static double window_cost(const wf_die_system *s, wf_die_engine *e, const piece *pc, int np, double total,
                          const wf_die_flows *phase, double t_phase, double *windows) {
  *windows = 0;
  if (!np) return 0;
  unsigned char *used = calloc((size_t)s->n * 4, 1);
  int *route = malloc(sizeof(int) * (size_t)(s->w + s->h)), *taken = calloc((size_t)np, sizeof(int));
  WF_ASSERT(used && route && taken);
  double chunk = s->t.link_bw * t_phase;
  wf_die_flows first = {0};
  int in_first = 0;
  for (int i = 0; i < np; i++) {
    int h = wf_die_route(s, pc[i].from, pc[i].to, route, s->w + s->h), clash = 0;
    for (int k = 0; k < h; k++) clash |= used[route[k]];
    if (clash) continue;
    for (int k = 0; k < h; k++) used[route[k]] = 1;
    wf_die_flows_add(&first, pc[i].from, pc[i].to, chunk, 0);
    in_first++;
  }
  double bg = 0, with = wf_die_engine_run_with(e, phase, &first, &bg);
  double per = bg > t_phase ? chunk * t_phase / bg : chunk; /* what one window moves per piece */
  /* Windows: rounds of link-disjoint pieces (at least np / in_first), each round as many
   * windows as one piece's bytes need. */
  *windows = ceil((double)np / in_first) * ceil(total / per);
  wf_die_flows_free(&first);
  free(used), free(route), free(taken);
  /* Below a billionth of the phase is the solver's rounding, not a cost. */
  double d = with - t_phase;
  return d > 1e-9 * t_phase ? d : 0;
}

/* Non-invasive copies: local pieces ride the allreduce, global pieces the dispatch and the
 * combine (two windows a layer). Sets *critical (s) and returns the iterations until the new
 * placement is in place (each iteration has L windows of each phase). */
static int non_invasive_cost(const wf_die_system *s, const wf_moe_mapping *m, wf_die_engine *e,
                             const wf_moe_migration *mig, int nm, double total, const wf_die_flows *ar, double t_ar,
                             const wf_die_flows *disp, double t_disp, int L, double *critical) {
  piece *loc = malloc(sizeof *loc * (size_t)nm * 64), *glo = malloc(sizeof *glo * (size_t)nm * 64);
  WF_ASSERT(loc && glo);
  int nl = 0, ng = 0, from[64], to[64], glob[64];
  for (int k = 0; k < nm; k++) {
    int np = split_path(s, m, mig[k].src, mig[k].dst, from, to, glob);
    for (int q = 0; q < np; q++) {
      if (glob[q]) glo[ng++] = (piece){from[q], to[q]};
      else loc[nl++] = (piece){from[q], to[q]};
    }
  }
  double win_l, win_g;
  double d_l = window_cost(s, e, loc, nl, total, ar, t_ar, &win_l);
  double d_g = window_cost(s, e, glo, ng, total, disp, t_disp, &win_g);
  *critical = d_l * win_l + d_g * win_g;
  free(loc);
  free(glo);
  double iters = win_l / L > win_g / (2.0 * L) ? win_l / L : win_g / (2.0 * L);
  int delay = (int)ceil(iters);
  return delay < 1 ? 1 : delay;
}

static int parse_bal(int argc, char **argv, moe_opts *o, bal_cfg *c) {
  static const char *const known[] = {"--target", "--dies", "--wafers", "--model", "--heatmap", "--platform",
                                      "--tp", "--tokens", "--trace", "--gen", "--iterations", "--slots", "--alpha",
                                      "--beta", "--window", "--seed", "--skew"};
  for (int i = 1; i < argc; i++) {
    int bad = 0, r = moe_common_opt(argc, argv, &i, o);
    if (r < 0) return WF_EXIT_USAGE;
    if (r) continue;
    const char *v;
    long x;
    if ((v = moe_opt_value(argc, argv, &i, "--tp", &bad))) {
      if (moe_parse_int("--tp", v, 1, 4096, &x)) return WF_EXIT_USAGE;
      c->tp = (int)x;
    } else if ((v = moe_opt_value(argc, argv, &i, "--tokens", &bad))) {
      if (moe_parse_double("--tokens", v, 1, &c->tokens)) return WF_EXIT_USAGE;
    } else if ((v = moe_opt_value(argc, argv, &i, "--trace", &bad))) {
      c->trace = v;
    } else if ((v = moe_opt_value(argc, argv, &i, "--gen", &bad))) {
      if (strcmp(v, "math") && strcmp(v, "mixed")) {
        wf_error_at("--gen", "unknown scenario '%s' (math or mixed)", v);
        return WF_EXIT_USAGE;
      }
      c->gen = v;
    } else if ((v = moe_opt_value(argc, argv, &i, "--iterations", &bad))) {
      if (moe_parse_int("--iterations", v, 1, 100000, &c->iterations)) return WF_EXIT_USAGE;
    } else if ((v = moe_opt_value(argc, argv, &i, "--slots", &bad))) {
      if (moe_parse_int("--slots", v, 0, 64, &x)) return WF_EXIT_USAGE;
      c->slots = (int)x;
    } else if ((v = moe_opt_value(argc, argv, &i, "--alpha", &bad))) {
      if (moe_parse_double("--alpha", v, 0, &c->alpha)) return WF_EXIT_USAGE;
    } else if ((v = moe_opt_value(argc, argv, &i, "--beta", &bad))) {
      if (moe_parse_int("--beta", v, 0, 100000, &x)) return WF_EXIT_USAGE;
      c->beta = (int)x;
    } else if ((v = moe_opt_value(argc, argv, &i, "--window", &bad))) {
      if (moe_parse_int("--window", v, 1, 100000, &x)) return WF_EXIT_USAGE;
      c->window = (int)x;
    } else if ((v = moe_opt_value(argc, argv, &i, "--seed", &bad))) {
      if (moe_parse_int("--seed", v, 0, 1L << 30, &c->seed)) return WF_EXIT_USAGE;
    } else if ((v = moe_opt_value(argc, argv, &i, "--skew", &bad))) {
      if (moe_parse_double("--skew", v, 0, &c->skew)) return WF_EXIT_USAGE;
    } else {
      char sub[64];
      snprintf(sub, sizeof sub, "wafer-moe %s", argv[0]);
      if (!bad) moe_unknown_option(sub, argv[i], known, 17);
      return WF_EXIT_USAGE;
    }
  }
  return 0;
}

/* The trace: --trace FILE, or generated for `picks` routed token-expert pairs per iteration. */
static int get_trace(const bal_cfg *c, const wf_moe_model *md, double picks, wf_moe_trace *t) {
  if (c->trace && c->gen) {
    wf_error_at("wafer-moe", "give --trace=FILE or --gen=SCENARIO, not both");
    return WF_EXIT_USAGE;
  }
  if (c->trace) {
    int rc = wf_moe_trace_read(c->trace, t);
    if (rc) return rc;
    if (t->experts != md->experts) {
      wf_error_at(c->trace, "the trace has %d experts but %s has %d: record the trace for this model", t->experts,
                  md->name, md->experts);
      wf_moe_trace_free(t);
      return WF_EXIT_INPUT;
    }
    if (c->iterations && c->iterations < t->iterations) t->iterations = (int)c->iterations;
    return 0;
  }
  if (!c->gen) {
    wf_error_at("wafer-moe", "an expert-load trace is required: --trace=FILE or --gen=math|mixed");
    return WF_EXIT_USAGE;
  }
  if (!c->iterations) {
    wf_error_at("wafer-moe", "--iterations=I is required with --gen");
    return WF_EXIT_USAGE;
  }
  wf_moe_trace_generate(c->gen, md->experts, (int)c->iterations, picks, (unsigned)c->seed, c->skew, t);
  return 0;
}

int moe_cmd_balance(int argc, char **argv) {
  moe_opts o = {0};
  bal_cfg c = {.tp = 4, .slots = 2, .window = 10, .beta = 10, .tokens = 256, .alpha = 0.2, .skew = 1.0, .seed = 1};
  int rc = parse_bal(argc, argv, &o, &c);
  if (rc) return rc;
  wf_die_system s;
  const wf_moe_model *md;
  if ((rc = moe_setup(&o, &s, &md))) return rc;
  wf_moe_mapping map;
  if ((rc = wf_moe_mapping_build(&s, WF_MOE_ER, c.tp, &map))) return rc;
  int n = s.n, E = md->experts, L = md->sparse_layers;
  /* HBM: natives and shadow slots for every sparse layer. */
  int natives = E >= n ? (E + n - 1) / n : 1;
  double need = (double)(natives + c.slots) * md->expert_bytes * L;
  if (need > s.t.hbm_bytes) {
    wf_error_at("--slots", "%d native + %d shadow experts x %d layers need %.1f GB per die; %s has %.1f GB of HBM: "
                "use fewer --slots or more dies", natives, c.slots, L, need / 1e9, s.t.name, s.t.hbm_bytes / 1e9);
    wf_moe_mapping_free(&map);
    return WF_EXIT_NOFIT;
  }
  wf_moe_trace tr;
  double picks = c.tokens * map.groups * md->active;
  if ((rc = get_trace(&c, md, picks, &tr))) {
    wf_moe_mapping_free(&map);
    return rc;
  }
  int I = tr.iterations;

  /* The platform needs every pair a flow may use: the allreduce's, the FTDs' dispatch and
   * combine pairs, and every die pair (copies and their pieces may join any two dies). */
  wf_die_flows ar = {0}, pairs = {0};
  wf_moe_allreduce_flows(&s, &map, c.tokens * md->hidden * 2.0, 1, &ar);
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) wf_die_flows_add(&pairs, a, b, 1, 0);
  char *xml = moe_platform_path(&o);
  wf_die_flows sets[2] = {ar, pairs};
  wf_die_engine *e = xml ? wf_die_engine_open(&s, sets, 2, xml) : NULL;
  wf_die_flows_free(&pairs);
  if (!e) {
    moe_platform_done(&o, xml);
    return WF_EXIT_IO;
  }
  double t_ar = wf_die_engine_run(e, &ar);

  double *heat = malloc(sizeof(double) * (size_t)n), *share = malloc(sizeof(double) * (size_t)n),
         *ops = malloc(sizeof(double) * (size_t)n), *bytes = malloc(sizeof(double) * (size_t)n),
         *pred = malloc(sizeof(double) * (size_t)E);
  wf_moe_migration *mig = malloc(sizeof *mig * (size_t)(n * (c.slots + 1) + 1));
  WF_ASSERT(heat && share && ops && bytes && pred && mig);
  acc res[4];
  memset(res, 0, sizeof res);
  double *link_sum = calloc((size_t)n * 4, sizeof(double)), *loads = malloc(sizeof(double) * (size_t)n * 4);
  WF_ASSERT(link_sum && loads);
  for (int b = 0; b < 4; b++) {
    acc *r = &res[b];
    wf_moe_placement cur, next;
    wf_moe_placement_init(&cur, n, E, b == WF_BAL_NONE ? 0 : c.slots);
    memset(&next, 0, sizeof next);
    int last = -1000000, apply_at = -1, beta = b == WF_BAL_NON_INVASIVE ? 0 : c.beta;
    double exposed_next = 0; /* an invasive pause, charged to the next iteration */
    if (b == 3) memset(link_sum, 0, sizeof(double) * (size_t)n * 4);
    for (int it = 0; it < I; it++) {
      if (apply_at == it) {
        wf_moe_placement_free(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
        apply_at = -1;
      }
      const double *load = tr.load + (size_t)it * E;
      wf_moe_device_heat(&cur, load, heat);
      double sum = 0, mx = 0;
      for (int d = 0; d < n; d++) sum += heat[d], mx = heat[d] > mx ? heat[d] : mx;
      double ratio = sum > 0 ? mx / (sum / n) : 1;
      r->ratio += ratio;
      if (it >= I / 2) r->ratio_steady += ratio, r->steady_n++;
      for (int d = 0; d < n; d++) share[d] = sum > 0 ? heat[d] / sum : 1.0 / n;
      /* This iteration's all-to-all, scaled to its routed tokens. */
      wf_die_flows disp = {0}, comb = {0};
      double tokens_now = sum / (map.groups * md->active);
      wf_moe_dispatch_flows(&s, &map, md, tokens_now, share, 1, &disp);
      wf_moe_reverse(&disp, &comb);
      double t_disp = wf_die_engine_run(e, &disp), t_a2a = t_disp + wf_die_engine_run(e, &comb);
      if (b == 3) {
        wf_die_flows_link_bytes(&s, &disp, loads);
        for (int l = 0; l < n * 4; l++) link_sum[l] += loads[l];
      }
      /* Expert compute: INT8, two ops per weight per token; each expert with tokens reads its
       * weights once from HBM. */
      for (int d = 0; d < n; d++) ops[d] = bytes[d] = 0;
      for (int x = 0; x < E; x++)
        for (int k = 0; k < cur.nrep[x]; k++) {
          int d = cur.rep_of[(size_t)x * cur.max_rep + k];
          double tok = load[x] / cur.nrep[x];
          ops[d] += 2.0 * md->expert_bytes * tok;
          if (tok > 0) bytes[d] += md->expert_bytes;
        }
      double t_comp = wf_die_engine_compute(e, ops, bytes, s.t.int8_ops);
      double exposed = exposed_next;
      exposed_next = 0;

      /* Eq. 2 on the predicted loads (the window's mean), layers alike: sum over L layers of
       * the imbalance > L x alpha. */
      if (b != WF_BAL_NONE && apply_at < 0 && it - last >= beta) {
        int lo = it + 1 - c.window < 0 ? 0 : it + 1 - c.window;
        for (int x = 0; x < E; x++) {
          pred[x] = 0;
          for (int j = lo; j <= it; j++) pred[x] += tr.load[(size_t)j * E + x];
          pred[x] /= it + 1 - lo;
        }
        wf_moe_device_heat(&cur, pred, heat);
        double ps = 0, pm = 0;
        for (int d = 0; d < n; d++) ps += heat[d], pm = heat[d] > pm ? heat[d] : pm;
        double imb = ps > 0 ? (pm - ps / n) / (ps / n) : 0;
        if (L * imb > L * c.alpha) {
          r->triggers++;
          wf_moe_placement_copy(&next, &cur);
          int nm = wf_moe_rebalance(&s, (wf_moe_balancer)b, pred, &next, mig, n * (c.slots + 1));
          last = it;
          r->migrations += nm;
          wf_die_flows copies = {0};
          for (int k = 0; k < nm; k++) {
            int same = 0;
            for (int q = 0; q < nm; q++) same += mig[q].src == mig[k].src;
            if (same > r->max_from_one) r->max_from_one = same;
            wf_die_flows_add(&copies, mig[k].src, mig[k].dst, md->expert_bytes * L, 0);
            r->mig_hops += wf_die_hops(&s, mig[k].src, mig[k].dst);
          }
          r->migrated_bytes += md->expert_bytes * L * nm;
          if (!nm) {
            wf_moe_placement_free(&next);
          } else if (b != WF_BAL_NON_INVASIVE) {
            exposed_next = wf_die_engine_run(e, &copies); /* the pause before the next iteration */
            apply_at = it + 1;
            r->apply_delay += 1;
          } else {
            double d_crit = 0;
            int delay = non_invasive_cost(&s, &map, e, mig, nm, md->expert_bytes * L, &ar, t_ar, &disp, t_disp, L,
                                          &d_crit);
            r->critical += d_crit;
            exposed += d_crit; /* charged to this iteration */
            apply_at = it + delay;
            r->apply_delay += delay;
          }
          if (b != WF_BAL_NON_INVASIVE) r->critical += exposed_next;
          wf_die_flows_free(&copies);
        }
      }
      /* Per layer: what this iteration pays for copies is spread over its L layers. */
      r->a2a += t_a2a;
      r->a2a_eq1 += wf_die_flows_eq1(&s, &disp) + wf_die_flows_eq1(&s, &comb);
      r->comp += t_comp;
      r->layer += t_a2a + t_comp + exposed / L;
      wf_die_flows_free(&disp);
      wf_die_flows_free(&comb);
    }
    wf_moe_placement_free(&cur);
    wf_moe_placement_free(&next);
  }

  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "target", s.t.name);
  cJSON_AddStringToObject(root, "model", md->name);
  cJSON *dims = cJSON_AddArrayToObject(root, "dies");
  cJSON_AddItemToArray(dims, cJSON_CreateNumber(s.t.dies_w));
  cJSON_AddItemToArray(dims, cJSON_CreateNumber(s.t.dies_h));
  cJSON_AddNumberToObject(root, "dies_total", n);
  cJSON_AddStringToObject(root, "mapping", "er");
  cJSON_AddNumberToObject(root, "tp", c.tp);
  cJSON_AddStringToObject(root, "trace", c.trace ? c.trace : c.gen);
  cJSON_AddNumberToObject(root, "iterations", I);
  cJSON_AddNumberToObject(root, "shadow_slots", c.slots);
  cJSON_AddNumberToObject(root, "alpha", c.alpha);
  cJSON_AddNumberToObject(root, "beta_invasive", c.beta);
  cJSON_AddNumberToObject(root, "allreduce_us", t_ar * 1e6);
  for (int b = 0; b < 4; b++) {
    acc *r = &res[b];
    cJSON *j = cJSON_AddObjectToObject(root, bal_names[b]);
    cJSON_AddNumberToObject(j, "max_over_avg_load", r->ratio / I);
    cJSON_AddNumberToObject(j, "max_over_avg_load_second_half", r->steady_n ? r->ratio_steady / r->steady_n : 0);
    cJSON_AddNumberToObject(j, "critical_migration_us", r->critical * 1e6);
    cJSON_AddNumberToObject(j, "moe_latency_us", r->layer / I * 1e6);
    cJSON_AddNumberToObject(j, "all_to_all_us", r->a2a / I * 1e6);
    cJSON_AddNumberToObject(j, "all_to_all_eq1_us", r->a2a_eq1 / I * 1e6);
    cJSON_AddNumberToObject(j, "expert_compute_us", r->comp / I * 1e6);
    cJSON_AddNumberToObject(j, "triggers", r->triggers);
    cJSON_AddNumberToObject(j, "expert_copies", r->migrations);
    cJSON_AddNumberToObject(j, "migrated_gb", r->migrated_bytes / 1e9);
    cJSON_AddNumberToObject(j, "copy_avg_hops", r->migrations ? r->mig_hops / r->migrations : 0);
    cJSON_AddNumberToObject(j, "copies_from_one_die_max", r->max_from_one);
    cJSON_AddNumberToObject(j, "iterations_to_apply", r->triggers ? r->apply_delay / r->triggers : 0);
  }
  if (o.heatmap) {
    for (int l = 0; l < n * 4; l++) link_sum[l] /= I;
    rc = wf_die_heatmap_write(&s, link_sum, o.heatmap, "non_invasive_dispatch", "mean dispatch, non-invasive balancer");
    if (!rc) {
      wf_die_flows_link_bytes(&s, &ar, loads);
      rc = wf_die_heatmap_write(&s, loads, o.heatmap, "er_allreduce", "ER attention allreduce");
    }
  }
  free(heat), free(share), free(ops), free(bytes), free(pred), free(mig), free(link_sum), free(loads);
  wf_die_flows_free(&ar);
  wf_moe_trace_free(&tr);
  wf_moe_mapping_free(&map);
  return moe_finish(&o, e, xml, root, rc);
}

int moe_cmd_trace(int argc, char **argv) {
  const char *out = NULL;
  int k = 1;
  char **rest = malloc(sizeof(char *) * (size_t)(argc + 1));
  WF_ASSERT(rest != NULL);
  rest[0] = argv[0];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
    else if (!strncmp(argv[i], "-o=", 3)) out = argv[i] + 3;
    else rest[k++] = argv[i];
  }
  moe_opts o = {0};
  bal_cfg c = {.tp = 4, .tokens = 256, .skew = 1.0, .seed = 1};
  int rc = parse_bal(k, rest, &o, &c);
  free(rest);
  if (rc) return rc;
  if (!out) {
    wf_error_at("wafer-moe trace", "-o FILE is required");
    return WF_EXIT_USAGE;
  }
  if (!o.model) {
    wf_error_at("wafer-moe trace", "--model=NAME is required (its experts and top-k size the trace)");
    return WF_EXIT_USAGE;
  }
  const wf_moe_model *md = wf_moe_model_find(o.model);
  if (!md) {
    wf_error_at("--model", "unknown model '%s' (deepseek-v3, qwen3, deepseek-v2, dbrx, mixtral-8x22b)", o.model);
    return WF_EXIT_USAGE;
  }
  /* --tokens per TP group, times the groups of a 4x4 system unless --dies says otherwise. */
  int groups = 16 / c.tp;
  if (o.dies) {
    int w, h;
    if (sscanf(o.dies, "%dx%d", &w, &h) != 2 || w < 1 || h < 1 || (w * h) % c.tp) {
      wf_error_at("--dies", "bad value '%s' for the trace: WxH with TP dividing W*H", o.dies);
      return WF_EXIT_USAGE;
    }
    groups = w * h / c.tp;
  }
  wf_moe_trace t;
  if ((rc = get_trace(&c, md, c.tokens * groups * md->active, &t))) return rc;
  rc = wf_moe_trace_write(out, &t);
  wf_moe_trace_free(&t);
  return rc;
}
