/* wafer-dse: WATOS's training-strategy and wafer-architecture co-exploration on the die-level
 * model (runtime/die/train.h). For every model and candidate wafer it searches TP x PP (Alg. 1),
 * recomputation (GCMR), placement (Eq. 2), DRAM allocation (Alg. 3) and the GA, simulates the
 * chosen plan's 1F1B iteration on SimGrid, and prints one JSON object (docs/dse.md).
 *
 *   wafer-dse --models=llama2-30b,gpt-175b --wafers=config1,config3 [--recompute=on|off]
 *             [--faults=links:0.2,dies:0.2] [--seed=S]
 *
 * SimGrid holds one platform per process, so each wafer is explored in a child process that
 * hands its JSON back through a pipe. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ir/support/cliopt.h"
#include "runtime/die/train.h"
#include "runtime/heatmap.h"
#include "waferc/diag.h"
#include "waferc/version.h"

enum { MAX_LIST = 16 };

typedef struct opts {
  const char *models[MAX_LIST], *wafers[MAX_LIST];
  char wafer_names[MAX_LIST][64];
  int nmodels, nwafers;
  int recompute;
  double fault_links, fault_dies;
  unsigned seed;
  wf_train_cfg cfg;
  int ga_steps;
  double elite;
  int simulate;
  int enumerate;
  const char *heatmap;
  const char *op_costs;      /* "roofline", "sim" (the committed table) or a table's path */
  char list_buf[2][4096];
} opts;

/* The per-operator table (--op-costs), NULL for the roofline; every wf_train_work gets it. */
static wf_train_optable g_table;
static const wf_train_optable *g_optable;
#define DSE_DEFAULT_TABLE "dojo-gemm" /* targets/dies/dojo-gemm.csv */

static void work_init(wf_train_work *w, const char *model, const wf_train_cfg *c) {
  wf_train_work_init(w, wf_train_model_find(model), c);
  w->optable = g_optable;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: wafer-dse [--models=M1,M2,...] [--wafers=W1,W2,...] [--recompute=on|off]\n"
          "                 [--faults=links:R,dies:R] [--seed=S] [--seq=N] [--micro-batch=N]\n"
          "                 [--micro-batches=N] [--ga-steps=N] [--elite=W] [--no-sim] [--heatmap DIR]\n"
          "                 [--op-costs=sim|roofline|FILE]\n"
          "       wafer-dse --enumerate\n"
          "models: llama2-30b, llama3-70b, gpt-175b, gshard-137b, deepseek-v3 (default: the first four)\n"
          "wafers: config1..config4 (WATOS Table II, targets/dies/watos-configN.target; the default),\n"
          "        any die target name or path with core_array, core_sram and core_clock,\n"
          "        or an enumerated candidate enum-cC-kK (wafer-dse --enumerate)\n"
          "--op-costs: where a GEMM operator's compute time comes from: sim (the default) the table\n"
          "        simulated by waferc on the Dojo-like core target (targets/dies/dojo-gemm.csv, written by\n"
          "        tools/wafer-dse/gen_optable.py; ops outside it keep the roofline), roofline FLOPs / (peak x\n"
          "        0.8) for every op, or FILE another table; op_cost_source in each plan says which per op\n"
          "Prints one JSON object: ranking, best, ablation, baselines, faults (with --faults), search_s.\n"
          "Iteration times come from the die-level model: 1F1B on SimGrid (iteration_s) and the\n"
          "alpha-beta evaluator (iteration_ab_s); search_s is host time. docs/dse.md.\n"
          "exit codes: 0 ok, 1 bad die target file or table, 2 usage, 4 no model fits any wafer given,\n"
          "            6 I/O (a table that cannot be read).\n");
}

static int split_list(const char *opt, const char *v, char *buf, size_t cap, const char **out, int *n) {
  if (strlen(v) >= cap) {
    wf_error_at(opt, "list too long");
    return -1;
  }
  strcpy(buf, v);
  *n = 0;
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    if (*n == MAX_LIST) {
      wf_error_at(opt, "at most %d names", MAX_LIST);
      return -1;
    }
    out[(*n)++] = tok;
  }
  if (!*n) {
    wf_error_at(opt, "empty list");
    return -1;
  }
  return 0;
}

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out) {
  return wf_cli_long(opt, v, lo, hi, out);
}

static int parse_rate(const char *opt, const char *v, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || errno || !(x >= 0 && x < 1)) {
    wf_error_at(opt, "bad rate '%s': expected a number in [0, 1)", v);
    return -1;
  }
  *out = x;
  return (int)(end - v);
}

static int parse_faults(const char *v, opts *o) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char *colon = strchr(tok, ':');
    if (!colon) goto bad;
    *colon = 0;
    double *dst = !strcmp(tok, "links") ? &o->fault_links : !strcmp(tok, "dies") ? &o->fault_dies : NULL;
    if (!dst) goto bad;
    int used = parse_rate("--faults", colon + 1, dst);
    if (used < 0) return -1;
    if (colon[1 + used]) goto bad;
  }
  return 0;
bad:
  wf_error_at("--faults", "bad value '%s': expected links:R,dies:R with rates in [0, 1)", v);
  return -1;
}

static const char *opt_value(int argc, char **argv, int *i, const char *name, int *bad) {
  return wf_cli_value("wafer-dse", argc, argv, i, name, bad);
}

static int parse(int argc, char **argv, opts *o) {
  static const char *const known[] = {"--models", "--wafers", "--recompute", "--faults", "--seed", "--seq",
                                      "--micro-batch", "--micro-batches", "--ga-steps", "--elite", "--no-sim",
                                      "--heatmap", "--enumerate", "--op-costs", "--help", "--version"};
  memset(o, 0, sizeof *o);
  o->recompute = 1, o->seed = 1, o->cfg = WF_TRAIN_CFG_DEFAULT, o->ga_steps = WF_TRAIN_SEARCH_DEFAULT.ga_steps;
  o->elite = WF_TRAIN_SEARCH_DEFAULT.ga_elite, o->simulate = 1, o->op_costs = "sim";
  const char *models = "llama2-30b,llama3-70b,gpt-175b,gshard-137b", *wafers = "config1,config2,config3,config4";
  for (int i = 1; i < argc; i++) {
    int bad = 0;
    const char *v;
    long x;
    if ((v = opt_value(argc, argv, &i, "--models", &bad))) models = v;
    else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--wafers", &bad))) wafers = v;
    else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--recompute", &bad))) {
      if (!strcmp(v, "on")) o->recompute = 1;
      else if (!strcmp(v, "off")) o->recompute = 0;
      else {
        wf_error_at("--recompute", "bad value '%s': expected on or off", v);
        return WF_EXIT_USAGE;
      }
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--faults", &bad))) {
      if (parse_faults(v, o)) return WF_EXIT_USAGE;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--seed", &bad))) {
      if (parse_long("--seed", v, 0, 4294967295L, &x)) return WF_EXIT_USAGE;
      o->seed = (unsigned)x;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--seq", &bad))) {
      if (parse_long("--seq", v, 128, 1 << 20, &x)) return WF_EXIT_USAGE;
      o->cfg.seq = (int)x;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--micro-batches", &bad))) {
      if (parse_long("--micro-batches", v, 1, 4096, &x)) return WF_EXIT_USAGE;
      o->cfg.micro_batches = (int)x;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--micro-batch", &bad))) {
      if (parse_long("--micro-batch", v, 1, 1024, &x)) return WF_EXIT_USAGE;
      o->cfg.micro_batch = (int)x;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--ga-steps", &bad))) {
      if (parse_long("--ga-steps", v, 0, 100000, &x)) return WF_EXIT_USAGE;
      o->ga_steps = (int)x;
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--elite", &bad))) {
      if (parse_rate("--elite", v, &o->elite) < 0 || v[strspn(v, "0123456789.")]) {
        wf_error_at("--elite", "bad value '%s': expected a share in [0, 1)", v);
        return WF_EXIT_USAGE;
      }
    } else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--heatmap", &bad))) o->heatmap = v;
    else if (bad) return WF_EXIT_USAGE;
    else if ((v = opt_value(argc, argv, &i, "--op-costs", &bad))) {
      if (!*v) {
        wf_error_at("--op-costs", "empty value: expected sim, roofline or a table file");
        return WF_EXIT_USAGE;
      }
      o->op_costs = v;
    } else if (bad) return WF_EXIT_USAGE;
    else if (!strcmp(argv[i], "--no-sim")) o->simulate = 0;
    else if (!strcmp(argv[i], "--enumerate")) o->enumerate = 1;
    else {
      char word[128];
      snprintf(word, sizeof word, "%s", argv[i]);
      char *eq = strchr(word, '=');
      if (eq) *eq = 0;
      const char *near = wf_closest_name(word, known, (int)(sizeof known / sizeof *known));
      if (near) wf_error_at("wafer-dse", "unknown option '%s'; did you mean '%s'?", word, near);
      else wf_error_at("wafer-dse", "unknown option '%s' (wafer-dse --help lists them)", word);
      return WF_EXIT_USAGE;
    }
  }
  if (split_list("--models", models, o->list_buf[0], sizeof o->list_buf[0], o->models, &o->nmodels) ||
      split_list("--wafers", wafers, o->list_buf[1], sizeof o->list_buf[1], o->wafers, &o->nwafers))
    return WF_EXIT_USAGE;
  int count;
  const wf_train_model *all = wf_train_models(&count);
  for (int i = 0; i < o->nmodels; i++)
    if (!wf_train_model_find(o->models[i])) {
      const char *names[16];
      for (int k = 0; k < count; k++) names[k] = all[k].name;
      const char *near = wf_closest_name(o->models[i], names, count);
      wf_error_at("--models", "unknown model '%s'%s%s%s (llama2-30b, llama3-70b, gpt-175b, gshard-137b, deepseek-v3)",
                  o->models[i], near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
      return WF_EXIT_USAGE;
    }
  return 0;
}

/* configN is WATOS Table II's Config N, targets/dies/watos-configN.target. */
static int load_wafer(const char *name, wf_die_target *t) {
  char buf[128];
  if (!strncmp(name, "config", 6) && name[6] >= '1' && name[6] <= '4' && !name[7]) {
    snprintf(buf, sizeof buf, "watos-%s", name);
    name = buf;
  }
  if (!strncmp(name, "enum-", 5)) { /* a candidate of the enumerator (--enumerate lists them) */
    wf_die_target c[64];
    int n = wf_train_enumerate(&WF_TRAIN_TEMPLATE_DEFAULT, c, 64);
    for (int i = 0; i < n; i++)
      if (!strcmp(c[i].name, name)) {
        *t = c[i];
        return 0;
      }
    wf_error_at("--wafers", "no enumerated candidate '%s' (wafer-dse --enumerate lists them)", name);
    return WF_EXIT_USAGE;
  }
  int rc = wf_die_target_load(name, t);
  if (rc) return rc;
  if (!t->core_w || !t->core_sram) {
    wf_error_at(name, "die target '%s' has no core array (core_array, core_sram, core_clock): wafer-dse needs the "
                "die's SRAM for the dataflows (docs/dse.md)", t->name);
    return WF_EXIT_INPUT;
  }
  if (t->dies_w * t->dies_h * t->wafers_w * t->wafers_h > WF_MAX_DIES) {
    wf_error_at(name, "%dx%d dies is over the %d dies wafer-dse explores", t->dies_w, t->dies_h, WF_MAX_DIES);
    return WF_EXIT_INPUT;
  }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(int done, int total, const char *what) {
  if (!isatty(2)) return;
  int bar = total ? 30 * done / total : 30;
  fprintf(stderr, "\r[%.*s%*s] %d/%d %-40s", bar, "##############################", 30 - bar, "", done, total, what);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* Per operator of the plan, where its compute time came from: "sim" (the table), "roofline",
 * or "sim+roofline" when some of its GEMMs (forward, backward, a stage's layers) fell outside
 * the table. The same lookups wf_train_stages made, asked again. */
static cJSON *op_sources(const wf_die_system *s, const wf_train_work *w, const wf_train_plan *p) {
  int src[WF_OP_N] = {0}, head = 0;
  for (int st = 0; st < p->pp; st++)
    for (int l = p->st[st].layer0; l < p->st[st].layer0 + p->st[st].layers; l++) {
      wf_train_op ops[WF_OP_N];
      wf_train_layer_ops(w, &s->t, l, p->tp, p->strategy, ops);
      for (int k = 0; k < WF_OP_N; k++) wf_train_op_time(&s->t, w, &ops[k], 0, &src[k]), wf_train_op_time(&s->t, w, &ops[k], 1, &src[k]);
    }
  wf_train_op h;
  wf_train_head_op(w, p->tp, p->strategy, &h);
  wf_train_op_time(&s->t, w, &h, 0, &head), wf_train_op_time(&s->t, w, &h, 1, &head);
  cJSON *o = cJSON_CreateObject();
  for (int k = 0; k < WF_OP_N; k++) cJSON_AddStringToObject(o, wf_train_op_names[k], wf_train_cost_names[src[k]]);
  cJSON_AddStringToObject(o, "head", wf_train_cost_names[head]);
  return o;
}

static cJSON *plan_json(const wf_die_system *s, const wf_train_work *w, const wf_train_plan *p) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "tp", p->tp);
  cJSON_AddNumberToObject(o, "pp", p->pp);
  cJSON_AddStringToObject(o, "tp_split", wf_train_tp_names[p->strategy]);
  char shape[32];
  snprintf(shape, sizeof shape, "%dx%d", p->shape_w, p->shape_h);
  cJSON_AddStringToObject(o, "tp_shape", shape);
  cJSON *pl = cJSON_AddArrayToObject(o, "placement");
  for (int i = 0; i < p->pp; i++) {
    int d = wf_train_stage_die(s, p, i, 0);
    cJSON *xy = cJSON_CreateArray();
    cJSON_AddItemToArray(xy, cJSON_CreateNumber(wf_die_x(s, d)));
    cJSON_AddItemToArray(xy, cJSON_CreateNumber(wf_die_y(s, d)));
    cJSON_AddItemToArray(pl, xy);
  }
  int layers = 0, rec = 0;
  double rs = 0, fb = 0;
  cJSON *rl = cJSON_CreateArray();
  for (int i = 0; i < p->pp; i++) {
    const wf_train_stage *S = &p->st[i];
    int n = 0;
    for (int c = 0; c < 2; c++)
      for (int k = 0; k < WF_OP_N; k++) n += S->recomp[c][k], layers += S->kind_layers[c];
    rec += n;
    rs += S->recomp_s, fb += S->F + S->B;
    cJSON_AddItemToArray(rl, cJSON_CreateNumber(n));
  }
  cJSON_AddBoolToObject(o, "recomputation", rec > 0);
  cJSON_AddItemToObject(o, "recomputed_op_layers", rl);
  cJSON_AddNumberToObject(o, "recompute_time_share", fb > 0 ? rs / (fb + rs) : 0);
  cJSON *pairs = cJSON_AddArrayToObject(o, "mem_pairs");
  for (int i = 0; i < p->nalloc; i++) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "sender", p->alloc[i].sender);
    cJSON_AddNumberToObject(a, "helper", p->alloc[i].helper);
    cJSON_AddNumberToObject(a, "gb_per_die", p->alloc[i].bytes / 1e9);
    cJSON_AddItemToArray(pairs, a);
  }
  cJSON_AddNumberToObject(o, "global_cost", p->global_cost);
  cJSON_AddNumberToObject(o, "iteration_ab_s", p->iter_s);
  double it = p->sim_s > 0 ? p->sim_s : p->iter_s;
  cJSON_AddNumberToObject(o, "iteration_s", it);
  cJSON_AddStringToObject(o, "iteration_source", p->sim_s > 0 ? "simgrid-1f1b" : "alpha-beta-1f1b");
  cJSON_AddNumberToObject(o, "throughput_tflops", w->model_flops / it / 1e12);
  cJSON_AddItemToObject(o, "op_cost_source", op_sources(s, w, p));
  return o;
}

static void faults_make(const wf_die_system *s, const opts *o, wf_train_faults *f) {
  memset(f, 0, sizeof *f);
  unsigned st = o->seed * 747796405u + 2891336453u;
  for (int d = 0; d < s->n; d++) {
    st = st * 1664525u + 1013904223u;
    if ((st >> 8) / 16777216.0 < o->fault_dies) f->die_dead[d] = 1, f->any = 1;
  }
  for (int d = 0; d < s->n; d++)
    for (int dir = 0; dir < 4; dir += 2) { /* E and N: each undirected link once */
      int l = wf_die_link(s, d, dir == 0 ? WF_DIE_E : WF_DIE_N);
      if (l < 0) continue;
      st = st * 1664525u + 1013904223u;
      if ((st >> 8) / 16777216.0 < o->fault_links) {
        f->link_dead[l] = 1, f->any = 1;
        int x = wf_die_x(s, d), y = wf_die_y(s, d);
        int back = dir == 0 ? wf_die_link(s, wf_die_id(s, x + 1, y), WF_DIE_W) : wf_die_link(s, wf_die_id(s, x, y - 1), WF_DIE_S);
        if (back >= 0) f->link_dead[back] = 1;
      }
    }
}

/* The non-robust scheduler: it keeps its healthy-wafer TP and split, and only drops the slots
 * with a dead die (serpentine placement, naive recomputation, no rebalancing, dead links ignored
 * when planning); the plan is then evaluated on the faulty wafer. 1 when p is feasible there. */
static int non_robust(const wf_die_system *s, const wf_train_work *w, const wf_train_plan *healthy,
                      const wf_train_faults *f, const wf_train_search_opts *base, wf_train_plan *p) {
  wf_train_search_opts o = *base;
  o.fixed_tp = healthy->tp, o.hk_only = healthy->strategy == WF_TP_HK;
  o.gcmr = o.memsched = o.ga = 0, o.naive_recompute = o.serpentine = 1;
  wf_train_faults dies_only = *f;
  memset(dies_only.link_dead, 0, sizeof dies_only.link_dead);
  o.faults = &dies_only;
  if (wf_train_search(s, w, &o, p)) return 0;
  wf_train_set_faults(f); /* what the links really are */
  wf_train_evaluate(s, w, p);
  wf_train_set_faults(NULL);
  return p->feasible;
}

static cJSON *add_time(cJSON *o, const char *key, double secs, double flops) {
  cJSON *x = cJSON_AddObjectToObject(o, key);
  if (isfinite(secs)) {
    cJSON_AddNumberToObject(x, "iteration_s", secs);
    cJSON_AddNumberToObject(x, "throughput_tflops", flops / secs / 1e12);
  } else {
    cJSON_AddNullToObject(x, "iteration_s");
    cJSON_AddStringToObject(x, "note", "does not fit");
  }
  return x;
}

static int write_heatmaps(const opts *o, const wf_die_system *s, const char *model, const char *wafer,
                          const double *busy, const double *dram, const double *links) {
  if (mkdir(o->heatmap, 0777) && errno != EEXIST) {
    wf_error_at(o->heatmap, "cannot create the heatmap directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  char file[200], title[200];
  double pct[WF_MAX_DIES];
  snprintf(file, sizeof file, "%s_%s_compute", model, wafer);
  snprintf(title, sizeof title, "%s on %s: compute busy %%", model, wafer);
  for (int d = 0; d < s->n; d++) pct[d] = 100 * busy[d];
  int rc = wf_heatmap_write_counts(o->heatmap, file, title, "SimGrid 1F1B", "%", s->w, s->h, pct, 100);
  snprintf(file, sizeof file, "%s_%s_dram", model, wafer);
  snprintf(title, sizeof title, "%s on %s: DRAM occupancy %%", model, wafer);
  for (int d = 0; d < s->n; d++) pct[d] = 100 * dram[d];
  if (!rc) rc = wf_heatmap_write_counts(o->heatmap, file, title, "modelP + checkpoints", "%", s->w, s->h, pct, 100);
  snprintf(file, sizeof file, "%s_%s_d2d", model, wafer);
  snprintf(title, sizeof title, "%s on %s: D2D bytes per iteration", model, wafer);
  if (!rc) rc = wf_die_heatmap_write(s, links, o->heatmap, file, title);
  return rc;
}

static void platform_path(char *xml, size_t cap) {
  const char *tmp = getenv("TMPDIR");
  snprintf(xml, cap, "%s/wafer-dse.%d.xml", tmp && *tmp ? tmp : "/tmp", (int)getpid());
}

/* Runs work(arg) in a child process, which hands its JSON back through a pipe: SimGrid holds
 * one platform per process, so each platform gets a process of its own. NULL after reporting
 * (`what` names the wafer), *rc the exit code. */
static cJSON *in_child(cJSON *(*work)(void *), void *arg, const char *what, int *rc) {
  int fd[2];
  if (pipe(fd)) {
    wf_error_at("wafer-dse", "pipe: %s", strerror(errno));
    return *rc = WF_EXIT_IO, NULL;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    wf_error_at("wafer-dse", "fork: %s", strerror(errno));
    return *rc = WF_EXIT_IO, NULL;
  }
  if (pid == 0) {
    close(fd[0]);
    cJSON *j = work(arg);
    if (!j) _exit(WF_EXIT_IO);
    char *text = cJSON_PrintUnformatted(j);
    if (!text) _exit(WF_EXIT_NOMEM); /* out of host memory in the child */
    size_t len = strlen(text), off = 0;
    while (off < len) {
      ssize_t k = write(fd[1], text + off, len - off);
      if (k <= 0) _exit(WF_EXIT_IO);
      off += (size_t)k;
    }
    _exit(0);
  }
  close(fd[1]);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (ssize_t k; buf && (k = read(fd[0], buf + len, cap - len - 1)) > 0;) {
    len += (size_t)k;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!buf || !WIFEXITED(status) || WEXITSTATUS(status)) {
    wf_error_at(what, "exploring this wafer failed (exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(buf);
    return *rc = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : WF_EXIT_IO, NULL;
  }
  buf[len] = 0;
  cJSON *j = cJSON_Parse(buf);
  free(buf);
  WF_ASSERT(j != NULL);
  return j;
}

enum { F_ROBUST, F_NON_ROBUST, F_N };

/* The faulty wafer's plans on a platform of its own, whose routes avoid its dead links (a
 * child's work: the healthy plans' platform is another). */
typedef struct fault_job {
  const opts *o;
  const wf_die_system *s; /* with the dead links */
  const wf_die_flows *pairs;
  wf_train_plan (*plans)[F_N];
  int (*ok)[F_N];
} fault_job;

static cJSON *simulate_faulty(void *arg) {
  const fault_job *j = arg;
  char xml[4096];
  platform_path(xml, sizeof xml);
  wf_die_engine *e = wf_die_engine_open(j->s, j->pairs, 1, xml);
  cJSON *out = e ? cJSON_CreateObject() : NULL;
  for (int mi = 0; e && mi < j->o->nmodels; mi++) {
    wf_train_work w;
    work_init(&w, j->o->models[mi], &j->o->cfg);
    cJSON *a = cJSON_AddArrayToObject(out, j->o->models[mi]);
    for (int k = 0; k < F_N; k++)
      cJSON_AddItemToArray(a, j->ok[mi][k] ? cJSON_CreateNumber(wf_train_simulate(e, j->s, &w, &j->plans[mi][k], NULL, NULL, NULL))
                                            : cJSON_CreateNull());
  }
  wf_die_engine_close(e);
  unlink(xml);
  return out;
}

/* One wafer, every model: the child process's work. First every search (host time), then one
 * SimGrid platform for all the plans found, then their simulations; with faults, the faulty
 * wafer's plans first, on a platform of their own in a child. */
enum { P_BEST, P_MEGATRON, P_R, P_M, P_GA, P_N };
static cJSON *explore_wafer(const opts *o, const wf_die_target *t, const char *wname, double *ga_s, int *ga_runs) {
  wf_die_system s;
  wf_die_system_init(&s, t, t->wafers_w, t->wafers_h);
  cJSON *out = cJSON_CreateObject();
  wf_train_faults faults;
  faults_make(&s, o, &faults);
  wf_train_plan(*plans)[P_N] = calloc((size_t)o->nmodels, sizeof *plans);
  int(*ok)[P_N] = calloc((size_t)o->nmodels, sizeof *ok);
  wf_train_plan(*fplans)[F_N] = calloc((size_t)o->nmodels, sizeof *fplans);
  int(*fok)[F_N] = calloc((size_t)o->nmodels, sizeof *fok);
  WF_ASSERT(fplans && fok);
  wf_die_system fs = s; /* the faulty wafer */
  fs.link_dead = faults.link_dead;
  wf_die_flows fpairs = {0};
  double *secs = calloc((size_t)o->nmodels, sizeof *secs), *gas = calloc((size_t)o->nmodels, sizeof *gas);
  WF_ASSERT(plans && ok && secs && gas);
  wf_die_flows pairs = {0};
  for (int mi = 0; mi < o->nmodels; mi++) {
    wf_train_work w;
    work_init(&w, o->models[mi], &o->cfg);
    wf_train_search_opts so = WF_TRAIN_SEARCH_DEFAULT;
    so.recompute = o->recompute, so.seed = o->seed, so.ga_steps = o->ga_steps, so.ga_elite = o->elite;
    /* Alg. 1 and the downstream schedulers, then the GA from their plan: the best plan. */
    wf_train_search_opts nm = so;
    nm.ga = 0;
    double t0 = now();
    ok[mi][P_BEST] = !wf_train_search(&s, &w, &nm, &plans[mi][P_BEST]);
    double tg = now();
    if (ok[mi][P_BEST]) wf_train_ga(&s, &w, &so, &plans[mi][P_BEST]);
    gas[mi] = now() - tg;
    secs[mi] = now() - t0;
    *ga_s += secs[mi], (*ga_runs)++;
    /* The ablation at the baseline's parallelism (WATOS §V-D: TP=8, PP=7 on Config 3):
     * baseline (Megatron-like: serpentine, naive recomputation), +R (GCMR with Mem_pair),
     * +M (location-aware placement and Alg. 3), +GA. */
    ok[mi][P_MEGATRON] = isfinite(wf_train_megatron(&s, &w, &plans[mi][P_MEGATRON]));
    if (ok[mi][P_MEGATRON]) {
      wf_train_search_opts r = nm;
      r.fixed_tp = plans[mi][P_MEGATRON].tp, r.fixed_pp = plans[mi][P_MEGATRON].pp, r.hk_only = 1;
      r.memsched = 0, r.serpentine = 1;
      ok[mi][P_R] = !wf_train_search(&s, &w, &r, &plans[mi][P_R]);
      r.memsched = 1, r.serpentine = 0;
      ok[mi][P_M] = !wf_train_search(&s, &w, &r, &plans[mi][P_M]);
      plans[mi][P_GA] = plans[mi][P_M];
      if ((ok[mi][P_GA] = ok[mi][P_M])) wf_train_ga(&s, &w, &so, &plans[mi][P_GA]);
    }
    for (int k = 0; k < P_N; k++)
      if (ok[mi][k]) wf_train_sim_flows(&s, &plans[mi][k], &pairs);
    if (faults.any && ok[mi][P_BEST]) {
      /* The robust scheduler re-runs the whole search knowing the faults. */
      wf_train_search_opts r = so;
      r.faults = &faults;
      fok[mi][F_ROBUST] = !wf_train_search(&s, &w, &r, &fplans[mi][F_ROBUST]);
      wf_train_set_faults(NULL);
      fok[mi][F_NON_ROBUST] = non_robust(&s, &w, &plans[mi][P_BEST], &faults, &r, &fplans[mi][F_NON_ROBUST]);
      for (int k = 0; k < F_N; k++)
        if (fok[mi][k]) wf_train_sim_flows(&fs, &fplans[mi][k], &fpairs);
    }
  }
  cJSON *fsim = NULL;
  if (o->simulate && fpairs.n) {
    int rc;
    if (!(fsim = in_child(simulate_faulty, &(fault_job){o, &fs, &fpairs, fplans, fok}, wname, &rc))) return NULL;
  }
  wf_die_flows_free(&fpairs);
  wf_die_engine *e = NULL;
  char xml[4096] = "";
  if (o->simulate && pairs.n) {
    platform_path(xml, sizeof xml);
    e = wf_die_engine_open(&s, &pairs, 1, xml);
    if (!e) return NULL;
  }
  wf_die_flows_free(&pairs);
  static double busy[WF_MAX_DIES], dram[WF_MAX_DIES], links[WF_MAX_DIES * 4];
  for (int mi = 0; mi < o->nmodels; mi++) {
    wf_train_work w;
    work_init(&w, o->models[mi], &o->cfg);
    cJSON *m = cJSON_AddObjectToObject(out, o->models[mi]);
    cJSON_AddNumberToObject(m, "search_s", secs[mi]);
    cJSON_AddNumberToObject(m, "ga_s", gas[mi]);
    double it[P_N];
    for (int k = 0; k < P_N; k++) {
      wf_train_plan *p = &plans[mi][k];
      it[k] = !ok[mi][k] ? INFINITY : e ? wf_train_simulate(e, &s, &w, p, k == P_BEST ? busy : NULL,
                                                            k == P_BEST ? dram : NULL, k == P_BEST ? links : NULL)
                                        : p->iter_s;
      if (k == P_BEST && e && o->heatmap && ok[mi][k] && write_heatmaps(o, &s, o->models[mi], wname, busy, dram, links)) {
        cJSON_Delete(out);
        return NULL;
      }
    }
    if (ok[mi][P_BEST]) cJSON_AddItemToObject(m, "best", plan_json(&s, &w, &plans[mi][P_BEST]));
    else cJSON_AddNullToObject(m, "best");
    cJSON *ab = cJSON_AddObjectToObject(m, "ablation");
    add_time(ab, "baseline", it[P_MEGATRON], w.model_flops);
    add_time(ab, "+R", it[P_R], w.model_flops);
    add_time(ab, "+M", it[P_M], w.model_flops);
    add_time(ab, "+GA", it[P_GA], w.model_flops);
    add_time(ab, "alg1_free", it[P_BEST], w.model_flops); /* Alg. 1 free to pick TP and PP */
    cJSON *bl = cJSON_AddObjectToObject(m, "baselines");
    add_time(bl, "megatron", it[P_MEGATRON], w.model_flops);
    if (ok[mi][P_MEGATRON]) {
      cJSON *mg = cJSON_GetObjectItem(bl, "megatron");
      cJSON_AddNumberToObject(mg, "tp", plans[mi][P_MEGATRON].tp);
      cJSON_AddNumberToObject(mg, "pp", plans[mi][P_MEGATRON].pp);
    }
    add_time(bl, "cerebras", wf_train_cerebras(&s, &w, NULL), w.model_flops);
    add_time(bl, "analytic", wf_train_analytic(&s, &w, o->recompute), w.model_flops);
    if (faults.any && ok[mi][P_BEST]) {
      cJSON *f = cJSON_AddObjectToObject(m, "faults");
      int dead = 0, cut = 0;
      for (int d = 0; d < s.n; d++) dead += faults.die_dead[d];
      for (int l = 0; l < s.n * 4; l++) cut += faults.link_dead[l];
      cJSON_AddNumberToObject(f, "dead_dies", dead);
      cJSON_AddNumberToObject(f, "dead_links", cut / 2);
      /* SimGrid's times on the faulty wafer's platform, or alpha-beta's under --no-sim. */
      cJSON *sim = fsim ? cJSON_GetObjectItem(fsim, o->models[mi]) : NULL;
      static const char *const key[F_N] = {"robust", "non_robust"};
      double t[F_N];
      for (int k = 0; k < F_N; k++) {
        double ab = fok[mi][k] ? fplans[mi][k].iter_s : INFINITY;
        t[k] = sim && fok[mi][k] ? cJSON_GetArrayItem(sim, k)->valuedouble : ab;
        cJSON *x = add_time(f, key[k], t[k], w.model_flops);
        if (isfinite(ab)) cJSON_AddNumberToObject(x, "iteration_ab_s", ab);
      }
      if (isfinite(t[F_ROBUST]) && isfinite(t[F_NON_ROBUST])) cJSON_AddNumberToObject(f, "gain", t[F_NON_ROBUST] / t[F_ROBUST]);
      cJSON_AddStringToObject(f, "iteration_source", sim ? "simgrid-1f1b" : "alpha-beta-1f1b");
    }
  }
  wf_die_engine_close(e);
  if (*xml) unlink(xml);
  cJSON_Delete(fsim);
  free(plans), free(ok), free(secs), free(gas), free(fplans), free(fok);
  return out;
}

typedef struct wafer_job {
  const opts *o;
  const wf_die_target *t;
  const char *name;
} wafer_job;

static cJSON *explore_job(void *arg) {
  const wafer_job *j = arg;
  double gs = 0;
  int gr = 0;
  cJSON *out = explore_wafer(j->o, j->t, j->name, &gs, &gr);
  if (out) cJSON_AddNumberToObject(out, "_search_host_s", gs);
  return out;
}

static double it_of(cJSON *model_on_wafer) {
  cJSON *b = cJSON_GetObjectItem(model_on_wafer, "best");
  cJSON *it = b ? cJSON_GetObjectItem(b, "iteration_s") : NULL;
  return it && cJSON_IsNumber(it) ? it->valuedouble : INFINITY;
}

static double analytic_of(cJSON *model_on_wafer) {
  cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(model_on_wafer, "baselines"), "analytic");
  cJSON *it = b ? cJSON_GetObjectItem(b, "iteration_s") : NULL;
  return it && cJSON_IsNumber(it) ? it->valuedouble : INFINITY;
}

static void rank_by(cJSON *parent, const char *key, cJSON **per, int nw, const opts *o, const char *model,
                    double (*get)(cJSON *)) {
  int idx[MAX_LIST];
  double v[MAX_LIST];
  for (int i = 0; i < nw; i++) idx[i] = i, v[i] = get(cJSON_GetObjectItem(per[i], model));
  for (int i = 1; i < nw; i++)
    for (int j = i; j > 0 && v[idx[j]] < v[idx[j - 1]]; j--) { int x = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = x; }
  cJSON *arr = cJSON_AddArrayToObject(parent, key);
  for (int i = 0; i < nw; i++)
    if (isfinite(v[idx[i]])) cJSON_AddItemToArray(arr, cJSON_CreateString(o->wafer_names[idx[i]]));
  (void)model;
}

static int enumerate(void) {
  wf_die_target c[64];
  int n = wf_train_enumerate(&WF_TRAIN_TEMPLATE_DEFAULT, c, 64);
  cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "candidates");
  for (int i = 0; i < n; i++) {
    cJSON *x = cJSON_CreateObject();
    char dies[32];
    snprintf(dies, sizeof dies, "%dx%d", c[i].dies_w, c[i].dies_h);
    cJSON_AddStringToObject(x, "name", c[i].name);
    cJSON_AddStringToObject(x, "dies", dies);
    cJSON_AddNumberToObject(x, "tflops_per_die", c[i].fp16_flops / 1e12);
    cJSON_AddNumberToObject(x, "dram_gb_per_die", c[i].hbm_bytes / 1e9);
    cJSON_AddNumberToObject(x, "dram_tbps", c[i].hbm_bw / 1e12);
    cJSON_AddNumberToObject(x, "d2d_tbps_per_direction", c[i].link_bw / 1e12);
    cJSON_AddStringToObject(x, "description", c[i].description);
    cJSON_AddItemToArray(arr, x);
  }
  char *text = cJSON_Print(root);
  WF_ASSERT(text != NULL); /* it fails only when an allocation does: out of host memory, exit 7 */
  printf("%s\n", text);
  free(text);
  cJSON_Delete(root);
  return 0;
}

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-dse"); /* names it in messages without a place (out of host memory) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--version")) {
      printf("wafer-dse (waferc) %s\n", WF_VERSION_STRING);
      return 0;
    }
  }
  static opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  if (o.enumerate) return enumerate();
  if (strcmp(o.op_costs, "roofline")) {
    const char *name = !strcmp(o.op_costs, "sim") ? DSE_DEFAULT_TABLE : o.op_costs;
    if ((rc = wf_train_optable_load(name, &g_table))) return rc;
    g_optable = &g_table;
  }
  static wf_die_target targets[MAX_LIST];
  for (int i = 0; i < o.nwafers; i++) {
    if ((rc = load_wafer(o.wafers[i], &targets[i]))) return rc;
    snprintf(o.wafer_names[i], sizeof o.wafer_names[i], "%s", o.wafers[i]);
  }
  double t0 = now(), ga_s = 0, ga_only = 0;
  int ga_runs = 0;
  cJSON *per[MAX_LIST] = {0};
  for (int i = 0; i < o.nwafers; i++) {
    progress(i, o.nwafers, o.wafer_names[i]);
    per[i] = in_child(explore_job, &(wafer_job){&o, &targets[i], o.wafer_names[i]}, o.wafer_names[i], &rc);
    if (!per[i]) return rc;
    cJSON *gs = cJSON_GetObjectItem(per[i], "_search_host_s");
    if (gs) ga_s += gs->valuedouble;
    for (int mi = 0; mi < o.nmodels; mi++) {
      cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(per[i], o.models[mi]), "ga_s");
      if (g && cJSON_GetObjectItem(cJSON_GetObjectItem(per[i], o.models[mi]), "best") &&
          !cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(per[i], o.models[mi]), "best")))
        ga_only += g->valuedouble, ga_runs++;
    }
  }
  progress(o.nwafers, o.nwafers, "done");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "tool", "wafer-dse");
  cJSON_AddStringToObject(root, "version", WF_VERSION_STRING);
  cJSON_AddBoolToObject(root, "recompute", o.recompute);
  cJSON_AddNumberToObject(root, "seed", o.seed);
  cJSON *wl = cJSON_CreateObject();
  cJSON_AddNumberToObject(wl, "seq", o.cfg.seq);
  cJSON_AddNumberToObject(wl, "micro_batch", o.cfg.micro_batch);
  cJSON_AddNumberToObject(wl, "micro_batches", o.cfg.micro_batches);
  cJSON_AddNumberToObject(wl, "efficiency", o.cfg.efficiency);
  cJSON_AddItemToObject(root, "workload", wl);
  cJSON *oc = cJSON_AddObjectToObject(root, "op_costs");
  cJSON_AddStringToObject(oc, "source", g_optable ? "sim" : "roofline");
  if (g_optable) {
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", g_optable->mesh_w, g_optable->mesh_h);
    cJSON_AddStringToObject(oc, "table", g_optable->path);
    cJSON_AddStringToObject(oc, "table_mesh", mesh);
  }
  cJSON_AddNumberToObject(oc, "roofline_efficiency", o.cfg.efficiency);
  cJSON *ranking = cJSON_AddObjectToObject(root, "ranking"), *aranking = cJSON_AddObjectToObject(root, "analytic_ranking");
  cJSON *best = cJSON_AddObjectToObject(root, "best"), *abl = cJSON_AddObjectToObject(root, "ablation");
  cJSON *bas = cJSON_AddObjectToObject(root, "baselines"), *flt = o.fault_dies > 0 || o.fault_links > 0 ? cJSON_AddObjectToObject(root, "faults") : NULL;
  int any = 0;
  for (int mi = 0; mi < o.nmodels; mi++) {
    const char *m = o.models[mi];
    rank_by(ranking, m, per, o.nwafers, &o, m, it_of);
    rank_by(aranking, m, per, o.nwafers, &o, m, analytic_of);
    cJSON *bm = cJSON_AddObjectToObject(best, m), *bb = cJSON_AddObjectToObject(bas, m);
    cJSON *fm = flt ? cJSON_AddObjectToObject(flt, m) : NULL;
    int top = -1;
    double topv = INFINITY;
    for (int i = 0; i < o.nwafers; i++) {
      cJSON *mw = cJSON_GetObjectItem(per[i], m);
      double v = it_of(mw);
      if (v < topv) topv = v, top = i;
      cJSON *b = cJSON_GetObjectItem(mw, "best");
      cJSON_AddItemToObject(bm, o.wafer_names[i], b ? cJSON_Duplicate(b, 1) : cJSON_CreateNull());
      cJSON_AddItemToObject(bb, o.wafer_names[i], cJSON_Duplicate(cJSON_GetObjectItem(mw, "baselines"), 1));
      if (fm && cJSON_GetObjectItem(mw, "faults"))
        cJSON_AddItemToObject(fm, o.wafer_names[i], cJSON_Duplicate(cJSON_GetObjectItem(mw, "faults"), 1));
    }
    if (top >= 0) {
      any = 1;
      /* The ablation on the wafer this model trains fastest on (WATOS used Config 3). */
      cJSON *a = cJSON_Duplicate(cJSON_GetObjectItem(cJSON_GetObjectItem(per[top], m), "ablation"), 1);
      cJSON_AddStringToObject(a, "wafer", o.wafer_names[top]);
      cJSON_AddItemToObject(abl, m, a);
    } else {
      cJSON_AddItemToObject(abl, m, cJSON_CreateNull());
    }
  }
  cJSON_AddNumberToObject(root, "search_s", now() - t0);
  cJSON_AddNumberToObject(root, "schedulers_s", ga_s);
  cJSON_AddNumberToObject(root, "ga_steps", o.ga_steps);
  if (ga_runs && o.ga_steps)
    cJSON_AddNumberToObject(root, "ga_s_per_100_steps", ga_only / ga_runs / o.ga_steps * 100);
  char *text = cJSON_Print(root);
  WF_ASSERT(text != NULL); /* it fails only when an allocation does: out of host memory, exit 7 */
  printf("%s\n", text);
  free(text);
  cJSON_Delete(root);
  for (int i = 0; i < o.nwafers; i++) cJSON_Delete(per[i]);
  if (!any) {
    wf_error_at("wafer-dse", "no model fits any wafer given");
    return WF_EXIT_NOFIT;
  }
  return 0;
}
