/* Training co-exploration (runtime/die/train*.c), each algorithm alone on hand-checkable
 * cases: the models' parameter counts, the dataflow choice, Eq. 1, the 1F1B schedule against
 * its closed form and a hand-worked case, the recomputation knapsack and GCMR's DP against
 * brute force, Alg. 3 against exhaustive allocation, placement against every permutation, the
 * GA reaching the optimum of a space small enough to enumerate, and SimGrid's 1F1B against the
 * closed form on a contention-free pipeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"
#include "wf_test.h"

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

static unsigned rs = 12345;
static unsigned rnd(void) { return rs = rs * 1103515245u + 12345u, (rs >> 8) & 0xffffff; }

/* ---- GCMR's DP against every take vector ---- */
static double brute_dp(int pp, int quanta, const double *q, int total, int s, int left) {
  if (s == pp) return 0;
  double best = INFINITY;
  for (int k = 0; k <= quanta && k <= left; k++) {
    double v = fmax(q[s * (quanta + 1) + k], brute_dp(pp, quanta, q, total, s + 1, left - k));
    if (v < best) best = v;
  }
  return best;
}

/* ---- a hand-built plan: pp stages of one kind, tp 1, on a w x 1 mesh ---- */
static void toy_plan(wf_train_plan *p, int pp, int slots, int layers) {
  memset(p, 0, sizeof *p);
  p->tp = 1, p->pp = pp, p->shape_w = p->shape_h = 1, p->slots = slots, p->recompute = 1, p->feasible = 1;
  p->micro_batches = 4, p->act_bytes = 1e6;
  for (int i = 0; i < slots; i++) p->slot_x[i] = i, p->slot_y[i] = 0, p->slot[i] = i;
  for (int s = 0; s < pp; s++) {
    wf_train_stage *S = &p->st[s];
    S->layers = S->kind_layers[0] = layers;
    S->inflight = pp - s;
    S->F = 1.0, S->B = 2.0;
    S->modelp = 10;
    for (int k = 0; k < WF_OP_N; k++) {
      S->r_ckpt[0][k] = k == 0 ? 1 : (k % 3) + 1; /* ln1 1, then 2 3 1 2 3 1 2 */
      S->r_time[0][k] = 0.01 * (k + 1) + 0.003 * s;
      S->ckpt_full += layers * S->r_ckpt[0][k];
    }
    S->cap = 40 - S->modelp; /* the die holds 40 bytes */
  }
}

int main(void) {
  const char *src = getenv("WAFERC_SOURCE_DIR");
  char path[1024];

  /* Presets: Table II's four wafers with their core arrays. */
  static const int dies[4] = {64, 56, 56, 48};
  static const double dram[4] = {48e9, 64e9, 70e9, 96e9};
  wf_die_target cfg[4];
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/targets/dies/watos-config%d.target", src ? src : "../..", i + 1);
    CHECK(wf_die_target_load(path, &cfg[i]) == 0, "loading %s", path);
    CHECK(cfg[i].dies_w * cfg[i].dies_h == dies[i] && cfg[i].hbm_bytes == dram[i], "config%d: dies and DRAM", i + 1);
    CHECK(cfg[i].core_w >= 16 && cfg[i].core_sram == 1310720 && cfg[i].core_clock == 2e9, "config%d: core array", i + 1);
  }
  /* The enumerator: every candidate within the wafer's area, and one more site would not be. */
  wf_die_target cand[64];
  const wf_train_template *T = &WF_TRAIN_TEMPLATE_DEFAULT;
  int nc = wf_train_enumerate(T, cand, 64);
  CHECK(nc >= 8, "the enumerator gives %d candidates", nc);
  for (int i = 0; i < nc; i++) {
    int c = cand[i].core_w, d = c == T->die_cores[0] ? 0 : 1;
    int k = (int)lround(cand[i].hbm_bytes / 1e9 / T->hbm_gb);
    double site = T->die_mm2[d] + k * T->hbm_mm2;
    int n = cand[i].dies_w * cand[i].dies_h;
    CHECK(n * site <= T->wafer_mm2, "%s: %d sites of %.1f mm2 fit", cand[i].name, n, site);
    CHECK(abs(cand[i].dies_w - cand[i].dies_h) <= 2, "%s: a squarish mesh", cand[i].name);
    CHECK(cand[i].link_bw > 0 && cand[i].hbm_bw == k * T->hbm_bw, "%s: bandwidths", cand[i].name);
  }
  for (int i = 1; i < nc; i++)
    if (cand[i].core_w == cand[i - 1].core_w)
      CHECK(cand[i].link_bw < cand[i - 1].link_bw && cand[i].hbm_bytes > cand[i - 1].hbm_bytes,
            "more DRAM chiplets take D2D bandwidth (%s)", cand[i].name);

  /* Models: published parameter counts. */
  CHECK(near(wf_train_model_params(wf_train_model_find("llama3-70b")), 70.6e9, 0.02), "llama3-70b: %.4g",
        wf_train_model_params(wf_train_model_find("llama3-70b")));
  CHECK(near(wf_train_model_params(wf_train_model_find("gpt-175b")), 175e9, 0.02), "gpt-175b: %.4g",
        wf_train_model_params(wf_train_model_find("gpt-175b")));
  CHECK(near(wf_train_model_params(wf_train_model_find("deepseek-v3")), 671e9, 0.03), "deepseek-v3: %.4g",
        wf_train_model_params(wf_train_model_find("deepseek-v3")));
  CHECK(near(wf_train_model_params(wf_train_model_find("llama2-30b")), 32.5e9, 0.03), "llama2-30b");
  CHECK(near(wf_train_model_params(wf_train_model_find("gshard-137b")), 137e9, 0.05), "gshard-137b: %.4g",
        wf_train_model_params(wf_train_model_find("gshard-137b")));
  CHECK(wf_train_model_active_params(wf_train_model_find("deepseek-v3")) < 60e9, "deepseek-v3 activates a few experts");
  CHECK(!wf_train_model_find("llama-7b"), "unknown model");

  /* Ops: FlashAttention keeps no s x s scores, so checkpoints grow linearly with the sequence;
   * TP divides the split activations; modelP is 16 B a parameter. */
  wf_train_work w1, w2;
  wf_train_cfg c1 = WF_TRAIN_CFG_DEFAULT, c2 = c1;
  c2.seq *= 2;
  wf_train_work_init(&w1, wf_train_model_find("gpt-175b"), &c1);
  wf_train_work_init(&w2, wf_train_model_find("gpt-175b"), &c2);
  wf_train_op o1[WF_OP_N], o2[WF_OP_N], o4[WF_OP_N];
  wf_train_layer_ops(&w1, &cfg[2], 0, 1, WF_TP_HK, o1);
  wf_train_layer_ops(&w2, &cfg[2], 0, 1, WF_TP_HK, o2);
  wf_train_layer_ops(&w1, &cfg[2], 0, 4, WF_TP_HK, o4);
  CHECK(near(o2[WF_OP_FLASH].ckpt, 2 * o1[WF_OP_FLASH].ckpt, 1e-12), "flash checkpoint linear in s");
  CHECK(near(o2[WF_OP_FLASH].flops_f, 4 * o1[WF_OP_FLASH].flops_f, 1e-12), "flash FLOPs quadratic in s");
  CHECK(near(o4[WF_OP_QKV].flops_f, o1[WF_OP_QKV].flops_f / 4, 1e-12) && o4[WF_OP_LN1].ckpt == o1[WF_OP_LN1].ckpt &&
        near(o4[WF_OP_ACT].ckpt, o1[WF_OP_ACT].ckpt / 4, 1e-12) && o4[WF_OP_PROJ].comm_f == 2 * w1.tokens * 12288,
        "TP=4 along H and K");
  double h = 12288, T1 = w1.tokens;
  CHECK(near(o1[WF_OP_QKV].flops_f, 2 * T1 * h * 3 * h, 1e-12), "qkv FLOPs 2 T h 3h");
  /* The dataflow with the least external memory access. */
  for (int i = 0; i < 50; i++) {
    double M = 64 + rnd() % 8192, K = 64 + rnd() % 8192, N = 64 + rnd() % 8192, sram = 1e6 + rnd() * 8.0;
    int df;
    double e = wf_train_gemm_ema(M, K, N, sram, &df);
    CHECK(e >= 2 * (M * K + K * N + M * N) - 1e-6, "EMA at least one pass of each operand");
    (void)df;
  }
  int df;
  wf_train_gemm_ema(8, 8192, 8192, 64e6, &df);
  CHECK(df == WF_DF_IS, "a few rows: input-stationary (got %s)", wf_train_df_names[df]);
  wf_train_gemm_ema(65536, 256, 256, 64e6, &df);
  CHECK(df == WF_DF_WS, "a small weight: weight-stationary (got %s)", wf_train_df_names[df]);

  /* Eq. 1. */
  CHECK(near(wf_train_eq1(1e-6, 1e9, 4, 1e6), 1e-6 + 1.5e-3, 1e-12), "Eq. 1");
  CHECK(wf_train_eq1(1e-6, 1e9, 1, 1e6) == 0, "no collective at TP 1");

  /* 1F1B: the closed form with equal stages and free transfers, and a hand-worked case. */
  for (int pp = 1; pp <= 6; pp++)
    for (int n = 1; n <= 9; n++) {
      double f[8], b[8], x[8];
      for (int i = 0; i < pp; i++) f[i] = 1.5, b[i] = 2.5, x[i] = 0;
      CHECK(near(wf_train_1f1b(pp, n, f, b, x), (n + pp - 1) * 4.0, 1e-12), "1F1B p=%d n=%d", pp, n);
    }
  {
    double f[2] = {1, 1}, b[2] = {2, 2}, x[2] = {0.5, 0};
    CHECK(near(wf_train_1f1b(2, 2, f, b, x), 10.0, 1e-12), "1F1B p=2 n=2 with 0.5 s hand-offs: %g",
          wf_train_1f1b(2, 2, f, b, x));
  }

  /* GCMR's DP against brute force on 3 and 4 stages. */
  for (int trial = 0; trial < 60; trial++) {
    int pp = 3 + trial % 2, quanta = 2 + rnd() % 5, total = rnd() % (pp * quanta + 1);
    double q[4 * 8];
    for (int s = 0; s < pp; s++) {
      double v = 5 + rnd() % 50;
      int inf_below = rnd() % 3;
      for (int k = 0; k <= quanta; k++) {
        q[s * (quanta + 1) + k] = k < inf_below ? INFINITY : v;
        v -= rnd() % 7;
        if (v < 1) v = 1;
      }
    }
    int take[4];
    double dp = wf_train_gcmr_dp(pp, quanta, q, total, take);
    double bf = brute_dp(pp, quanta, q, total, 0, total);
    CHECK(dp == bf || (isinf(dp) && isinf(bf)), "GCMR DP %g = brute force %g (trial %d)", dp, bf, trial);
    if (isfinite(dp)) {
      int sum = 0;
      double mx = 0;
      for (int s = 0; s < pp; s++) sum += take[s], mx = fmax(mx, q[s * (quanta + 1) + take[s]]);
      CHECK(sum <= total && mx == dp, "the DP's choices give its value");
    }
  }

  /* The recomputation knapsack against every count vector (one kind, 2 layers, 7 ops). */
  {
    wf_train_plan *p = calloc(1, sizeof *p);
    toy_plan(p, 1, 1, 2);
    wf_train_stage *S = &p->st[0];
    S->inflight = 2;
    for (double budget = 20; budget <= 60; budget += 4) {
      int counts[2][WF_OP_N];
      double kt = wf_train_recomp_profile(S, budget, counts);
      double best = INFINITY;
      int c[WF_OP_N] = {0};
      for (int code = 0; code < 2187; code++) { /* 3^7: 0..2 layers for ops 1..7 */
        int x = code;
        double kept = S->kind_layers[0] * S->r_ckpt[0][0], t = 0;
        for (int k = 1; k < WF_OP_N; k++) {
          c[k] = x % 3, x /= 3;
          kept += (2 - c[k]) * S->r_ckpt[0][k];
          t += c[k] * S->r_time[0][k];
        }
        if (kept * S->inflight <= budget + 1e-9 && t < best) best = t;
      }
      CHECK(near(kt, best, 1e-9) || (isinf(kt) && isinf(best)), "knapsack %g = brute force %g at budget %g", kt, best,
            budget);
    }
    free(p);
  }

  /* Alg. 3: one Sender takes the cheapest Helpers first, as the exhaustive optimum; two
   * Senders always fit within the Helpers' room. */
  {
    double over[4] = {7, 0, 0, 0}, spare[4] = {0, 3, 4, 5};
    double cost[16] = {0, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    wf_train_alloc a[8];
    int n = wf_train_alloc3(4, over, spare, cost, a, 8);
    double got = 0, best = INFINITY;
    for (int i = 0; i < n; i++) got += a[i].bytes * cost[a[i].sender * 4 + a[i].helper];
    for (int x1 = 0; x1 <= 3; x1++) /* exhaustive in whole bytes */
      for (int x2 = 0; x2 <= 4; x2++) {
        int x3 = 7 - x1 - x2;
        if (x3 < 0 || x3 > 5) continue;
        best = fmin(best, 3.0 * x1 + 1.0 * x2 + 2.0 * x3);
      }
    CHECK(n >= 1 && near(got, best, 1e-12), "Alg. 3 %g = exhaustive %g", got, best);
    double over2[4] = {4, 3, 0, 0}, spare2[4] = {0, 0, 4, 3};
    double cost2[16] = {0, 0, 1, 2, 0, 0, 2, 1};
    n = wf_train_alloc3(4, over2, spare2, cost2, a, 8);
    double left[4] = {0, 0, 4, 3}, sent[4] = {0};
    for (int i = 0; i < n; i++) sent[a[i].sender] += a[i].bytes, left[a[i].helper] -= a[i].bytes;
    CHECK(near(sent[0], 4, 1e-12) && near(sent[1], 3, 1e-12) && left[2] >= -1e-12 && left[3] >= -1e-12,
          "two Senders placed within the Helpers");
    got = 0;
    for (int i = 0; i < n; i++) got += a[i].bytes * cost2[a[i].sender * 4 + a[i].helper];
    CHECK(near(got, 7, 1e-12), "each Sender on its nearest Helper (cost 7, got %g)", got);
    double tight[4] = {0, 0, 1, 1};
    CHECK(wf_train_alloc3(4, over2, tight, cost2, a, 8) < 0, "overflow beyond the wafer's DRAM is refused");
  }

  /* Mem_pair: Senders and Helpers paired by pressure and room. */
  {
    double over[4] = {5, 2, 0, 0}, spare[4] = {0, 0, 3, 6};
    wf_train_alloc a[8];
    int n = wf_train_mem_pair(4, over, spare, a, 8);
    CHECK(n >= 2 && a[0].sender == 0 && a[0].helper == 3 && near(a[0].bytes, 5, 1e-12), "largest Sender to roomiest Helper");
  }

  /* Placement: the exhaustive search is no worse than any permutation; GlobalCost by hand. */
  wf_die_target small = cfg[2];
  small.dies_w = 4, small.dies_h = 1;
  wf_die_system sys;
  wf_die_system_init(&sys, &small, 1, 1);
  wf_train_cfg tc = WF_TRAIN_CFG_DEFAULT;
  tc.micro_batches = 4;
  wf_train_work tw;
  wf_train_work_init(&tw, wf_train_model_find("llama2-30b"), &tc);
  {
    wf_train_plan *p = calloc(1, sizeof *p);
    toy_plan(p, 3, 4, 1);
    CHECK(near(wf_train_global_cost(&sys, p, &tw, 1), 2 * 1e6, 1e-12), "GlobalCost of a chain of neighbours");
    p->nalloc = 1, p->alloc[0] = (wf_train_alloc){0, 2, 3e6};
    /* pair 0 -> 2: two hops, both on the pipeline's links: (1 + 2) x 2 hops x 1e6 per micro-batch */
    CHECK(near(wf_train_global_cost(&sys, p, &tw, 1), 2e6 + 2 * 1e6 * 3, 1e-12), "GlobalCost with gamma = 2: %g",
          wf_train_global_cost(&sys, p, &tw, 1));
    wf_train_place_opt(&sys, p, &tw, 1);
    double got = wf_train_global_cost(&sys, p, &tw, 1), best = INFINITY;
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        for (int c = 0; c < 4; c++) {
          if (a == b || b == c || a == c) continue;
          wf_train_plan q = *p;
          q.slot[0] = a, q.slot[1] = b, q.slot[2] = c;
          best = fmin(best, wf_train_global_cost(&sys, &q, &tw, 1));
        }
    CHECK(near(got, best, 1e-12), "placement %g = best permutation %g", got, best);
    free(p);
  }

  /* The GA reaches the optimum of a space small enough to enumerate: 2 stages of one layer
   * (2^7 recomputation choices each) in 4 slots on 4 dies with tight DRAM. */
  {
    wf_train_plan *p = calloc(1, sizeof *p), *q = calloc(1, sizeof *q);
    small.hbm_bytes = 40;
    small.link_bw = 1e6; /* transfers matter, so placement does */
    wf_die_system_init(&sys, &small, 1, 1);
    toy_plan(p, 2, 4, 1);
    for (int s = 0; s < 2; s++) p->st[s].cap = 10, p->st[s].modelp = 30;
    double best = INFINITY;
    for (int a = 0; a < 128; a++)
      for (int b = 0; b < 128; b++)
        for (int s0 = 0; s0 < 4; s0++)
          for (int s1 = 0; s1 < 4; s1++) {
            if (s0 == s1) continue;
            *q = *p;
            for (int k = 1; k < WF_OP_N; k++) q->st[0].recomp[0][k] = a >> (k - 1) & 1, q->st[1].recomp[0][k] = b >> (k - 1) & 1;
            q->slot[0] = s0, q->slot[1] = s1;
            if (!wf_train_evaluate(&sys, &tw, q) && q->iter_s < best) best = q->iter_s;
          }
    CHECK(isfinite(best), "some plan fits");
    /* seed: everything recomputed, the stages far apart */
    for (int s = 0; s < 2; s++)
      for (int k = 1; k < WF_OP_N; k++) p->st[s].recomp[0][k] = 1;
    p->slot[0] = 0, p->slot[1] = 3;
    wf_train_search_opts o = WF_TRAIN_SEARCH_DEFAULT;
    o.ga_steps = 300, o.ga_pop = 24, o.seed = 7;
    wf_train_ga(&sys, &tw, &o, p);
    CHECK(p->feasible && near(p->iter_s, best, 1e-9), "GA %g = brute force %g", p->iter_s, best);
    free(p), free(q);
  }

  /* Alg. 1 end to end on Config 3: a plan that fits, and the ablation never falls. */
  wf_die_system c3;
  wf_die_system_init(&c3, &cfg[2], 1, 1);
  wf_train_work w;
  wf_train_cfg wc = WF_TRAIN_CFG_DEFAULT;
  wc.micro_batch = 2;
  wf_train_work_init(&w, wf_train_model_find("gpt-175b"), &wc);
  wf_train_plan *base = calloc(1, sizeof *base), *r = calloc(1, sizeof *r), *m = calloc(1, sizeof *m),
                *g = calloc(1, sizeof *g);
  double tb = wf_train_megatron(&c3, &w, base);
  wf_train_search_opts so = WF_TRAIN_SEARCH_DEFAULT;
  so.ga = 0, so.memsched = 0, so.serpentine = 1;
  CHECK(!wf_train_search(&c3, &w, &so, r), "+R fits");
  so.memsched = 1, so.serpentine = 0;
  CHECK(!wf_train_search(&c3, &w, &so, m), "+M fits");
  *g = *m;
  so.ga = 1;
  wf_train_ga(&c3, &w, &so, g);
  CHECK(base->tp == 8 && isfinite(tb), "Megatron-like: TP 8 (pp %d)", base->pp);
  CHECK(r->iter_s <= tb && m->iter_s <= r->iter_s * (1 + 1e-9) && g->iter_s <= m->iter_s, "ablation %g >= %g >= %g >= %g",
        tb, r->iter_s, m->iter_s, g->iter_s);
  for (int s = 0; s < m->pp; s++)
    CHECK(m->st[s].modelp <= cfg[2].hbm_bytes, "stage %d's modelP fits its dies", s);
  /* An impossible wafer: modelP over the whole wafer's DRAM. */
  wf_die_target tiny = cfg[2];
  tiny.hbm_bytes = 1e9;
  wf_die_system ts;
  wf_die_system_init(&ts, &tiny, 1, 1);
  CHECK(wf_train_search(&ts, &w, &WF_TRAIN_SEARCH_DEFAULT, g) == WF_EXIT_NOFIT, "pruned: modelP cannot fit");

  /* SimGrid's 1F1B against the closed form: tp 1, equal stages, negligible hand-offs. */
  {
    wf_train_plan *p = calloc(1, sizeof *p);
    toy_plan(p, 3, 4, 1);
    p->act_bytes = 1;
    p->opt_s = 0.25;
    wf_die_target t4 = cfg[2];
    t4.dies_w = 4, t4.dies_h = 1, t4.link_latency = 0;
    wf_die_system s4;
    wf_die_system_init(&s4, &t4, 1, 1);
    wf_die_flows f = {0};
    wf_train_sim_flows(&s4, p, &f);
    wf_die_engine *e = wf_die_engine_open(&s4, &f, 1, "/tmp/wf_test_die_train.xml");
    CHECK(e != NULL, "engine");
    double busy[4];
    double secs = wf_train_simulate(e, &s4, &tw, p, busy, NULL, NULL);
    CHECK(near(secs, (4 + 3 - 1) * 3.0 + 0.25, 1e-6), "SimGrid 1F1B %g = (n + p - 1)(F + B) + opt", secs);
    CHECK(near(busy[0], 4 * 3.0 / secs, 1e-6) && busy[3] == 0, "die busy shares");
    /* 2 TB hand-offs on 2 TB/s links: 1 s each, as the event schedule's transfers. */
    p->act_bytes = 2e12;
    secs = wf_train_simulate(e, &s4, &tw, p, NULL, NULL, NULL);
    double f3[3] = {1, 1, 1}, b3[3] = {2, 2, 2}, x3[3] = {1, 1, 0};
    double want = wf_train_1f1b(3, 4, f3, b3, x3) + 0.25;
    CHECK(near(secs, want, 1e-6), "SimGrid 1F1B with 1 s hand-offs %g = event schedule %g", secs, want);
    wf_die_engine_close(e);
    wf_die_flows_free(&f);
    free(p);
    remove("/tmp/wf_test_die_train.xml");
  }
  free(base), free(r), free(m), free(g);
  return wf_test_result("test_die_train");
}
