/* The collective cost model (include/waferc/collectives.h) against values computed by hand
 * from the Reduce paper's lemmas, and the paper's claims about Auto-Gen and the lower bound
 * (§5.5-5.7) on a sweep. T_R = 2 and one cycle per hop throughout (k = 2T_R + 1 = 5). */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "waferc/collectives.h"
#include "wf_test.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static wf_coll_params P0;

static void hand_values(void) {
  /* §4.1 / Lemma 4.1: B + P + 2T_R. */
  CHECK(NEAR(wf_coll_message(4, 10, &P0), 18));
  CHECK(NEAR(wf_coll_bcast(4, 10, &P0), 18));
  /* §5.1: the pipelined star B(P-1) + 2T_R + 1, and Lemma 5.1's max form. */
  CHECK(NEAR(wf_coll_star(4, 10, &P0), 35));
  CHECK(NEAR(wf_coll_star_lemma51(4, 10, &P0), 35));             /* max(30, 20 + 3) + 5 */
  CHECK(NEAR(wf_coll_star(8, 1, &P0), 12));                      /* 7 + 5 */
  CHECK(NEAR(wf_coll_star_lemma51(8, 1, &P0), 16));              /* max(7, 4 + 7) + 5 */
  /* Lemma 5.2: B + (2T_R + 2)(P - 1). */
  CHECK(NEAR(wf_coll_chain(8, 16, &P0), 58));
  CHECK(NEAR(wf_coll_chain(1, 16, &P0), 0));
  /* Lemma 5.3: max(B log P, BP log P / (2(P-1)) + P - 1) + (2T_R+1) log P. */
  CHECK(NEAR(wf_coll_tree(8, 16, &P0), 63));                     /* max(48, 34.43) + 15 */
  CHECK(NEAR(wf_coll_tree(8, 1, &P0), 3.0 * 8 / 14 + 7 + 15));
  CHECK(NEAR(wf_coll_tree(16, 64, &P0), 276));
  /* Lemma 5.4 at P = S^2 = 16, B = 64: max(128, 128 - 32 + 16) + 6*5 = 158, and the
   * proof's terms with N = L = P - 1: max(128, 24*64/15 + 15) + 30 = 158. */
  CHECK(NEAR(wf_coll_two_phase_lemma54(16, 64, &P0), 158));
  CHECK(NEAR(wf_coll_two_phase(16, 64, 4, &P0), 158));
  /* Two-phase, P = 10, S = 3: groups [0] [1..3] [4..6] [7..9]; 6 hops inside groups, leaders
   * 0 <- 1 <- 4 <- 7 are 7 hops; depth 2 + 3; leader 1 hears from 2 and 4: C = 2B. */
  wf_coll_terms tp = wf_coll_terms_two_phase(10, 8, 3);
  CHECK(NEAR(tp.E, 13 * 8) && NEAR(tp.D, 5) && NEAR(tp.C, 16), "E=%g D=%g C=%g", tp.E, tp.D, tp.C);
  CHECK(NEAR(wf_coll_two_phase(10, 8, 3, &P0), 104.0 / 9 + 9 + 25));
  /* Lemma 6.1: 2(P-1)B/P + 4P - 6 + 2(P-1)(2T_R+1). */
  CHECK(NEAR(wf_coll_ring(4, 8, &P0), 12 + 10 + 30));
  /* The lowered ring (distance-2 ring 0 2 3 1, links of 2, 1, 2, 1 hops): 6 rounds of
   * c = 2 words + 2T_R, and 6 consecutive links hold at most 2+1+2+1+2+1 = 9 hops; then the
   * local work, two rotations of B words and the zeroed padding P c - B. */
  CHECK(NEAR(wf_coll_ring_lowered(4, 8, &P0), 6 * (2 + 4) + 9 + 16 + 0));
  /* P = 3 (ring 0 2 1: links 2, 1, 1): 4 rounds, 4 consecutive links hold 2+1+1+2 = 6 hops;
   * P = 2: 2 rounds over the 1-hop links; P = 1: nothing. */
  CHECK(NEAR(wf_coll_ring_lowered(3, 7, &P0), 4 * (3 + 4) + 6 + 14 + 2));
  CHECK(NEAR(wf_coll_ring_lowered(2, 5, &P0), 2 * (3 + 4) + 2 + 10 + 1));
  CHECK(NEAR(wf_coll_ring_lowered(1, 5, &P0), 0));
  /* Lemma 5.5 by hand for P = 3: E*(3,1,1) = 3, E*(3,1,2) = 2, so
   * T* >= min(1.5 B + 2 + 5, B + 2 + 10). */
  CHECK(NEAR(wf_coll_lower_bound(3, 1, &P0), 8.5));
  CHECK(NEAR(wf_coll_lower_bound(3, 16, &P0), 28));
  CHECK(NEAR(wf_coll_lower_bound(2, 7, &P0), 13)); /* = the chain: nothing beats one message */
  /* Auto-Gen over 3 PEs: the star tree (D=1, C=2, 3 hops) for a scalar, the chain for long
   * vectors. */
  CHECK(NEAR(wf_coll_autogen(3, 1, &P0, NULL), 8.5));
  CHECK(NEAR(wf_coll_autogen(3, 64, &P0, NULL), 76));
  /* §7: Lemma 7.1, Lemma 7.2, snake = chain over w*h, X-Y = rows then the column. */
  CHECK(NEAR(wf_coll_bcast2d(4, 3, 10, &P0), 20));
  CHECK(NEAR(wf_coll_lower_bound_2d(4, 3, 16, &P0), 21));
  CHECK(NEAR(wf_coll_snake(4, 3, 16, &P0), 82));
  CHECK(NEAR(wf_coll_xy_reduce(WF_COLL_CHAIN, 4, 3, 16, &P0), 34 + 28));
  /* Reduce-then-broadcast over 5 PEs, B = 10: the end root costs 34 + 19; the middle root
   * halves depth and distance: max(2*10, 40/4 + 2) + 2*5 = 30, broadcast 10 + 2 + 5. */
  int64_t root = -1;
  CHECK(NEAR(wf_coll_allreduce_rb(WF_COLL_CHAIN, 5, 10, &P0, &root), 47));
  CHECK(root == 2, "root %lld", (long long)root);
  /* Another T_R scales only the depth term. */
  wf_coll_params p7 = {7, 1};
  CHECK(NEAR(wf_coll_chain(8, 16, &p7), 16 + 16 * 7));
  /* Names round-trip. */
  for (int a = 0; a < WF_COLL_N_ALGOS; a++)
    CHECK(wf_coll_algo_parse(wf_coll_algo_name((wf_coll_algo)a)) == a);
  CHECK(wf_coll_algo_parse("two-phase") == WF_COLL_TWO_PHASE);
  CHECK(wf_coll_algo_parse("bogus") == -1);
}

/* The closed forms agree with the same patterns built as trees and measured. */
static void trees_match_closed_forms(void) {
  for (int P = 2; P <= 40; P++) {
    wf_reduce_tree t;
    int64_t B = 1 + P % 7 * 9;
    CHECK(wf_coll_tree_chain(P, &t) == 0);
    wf_coll_terms a = wf_coll_tree_terms(&t, B), b = wf_coll_terms_chain(P, B);
    CHECK(NEAR(wf_coll_model(&a, &P0), wf_coll_model(&b, &P0)), "chain P=%d", P);
    wf_coll_tree_free(&t);
    CHECK(wf_coll_tree_binary(P, &t) == 0);
    a = wf_coll_tree_terms(&t, B), b = wf_coll_terms_tree(P, B);
    CHECK(NEAR(a.E, b.E) && NEAR(a.D, b.D) && NEAR(a.C, b.C), "tree P=%d: E %g/%g D %g/%g C %g/%g",
          P, a.E, b.E, a.D, b.D, a.C, b.C);
    wf_coll_tree_free(&t);
    for (int S = 1; S <= P; S++) {
      CHECK(wf_coll_tree_two_phase(P, S, &t) == 0);
      a = wf_coll_tree_terms(&t, B), b = wf_coll_terms_two_phase(P, B, S);
      CHECK(NEAR(a.E, b.E) && NEAR(a.D, b.D) && NEAR(a.C, b.C),
            "two-phase P=%d S=%d: E %g/%g D %g/%g C %g/%g", P, S, a.E, b.E, a.D, b.D, a.C, b.C);
      wf_coll_tree_free(&t);
    }
    CHECK(wf_coll_tree_star(P, &t) == 0);
    a = wf_coll_tree_terms(&t, B), b = wf_coll_terms_star(P, B);
    CHECK(NEAR(wf_coll_model(&a, &P0), wf_coll_model(&b, &P0)), "star P=%d", P);
    wf_coll_tree_free(&t);
  }
  /* Lemma 5.3 is the binary tree's count when P is a power of two. */
  for (int P = 2; P <= 1024; P *= 2)
    for (int64_t B = 1; B <= 4096; B *= 8) {
      double lg = log2(P), b = (double)B;
      double lemma = fmax(b * lg, b * P / (2.0 * (P - 1)) * lg + P - 1) + 5 * lg;
      CHECK(NEAR(wf_coll_tree(P, B, &P0), lemma), "P=%d B=%lld", P, (long long)B);
    }
  /* Lemma 5.4's printed form differs from the proof's terms by less than 2B/P + 1. */
  for (int s = 2; s <= 16; s++)
    for (int64_t B = 1; B <= 4096; B *= 4) {
      int P = s * s;
      double d = wf_coll_two_phase(P, B, s, &P0) - wf_coll_two_phase_lemma54(P, B, &P0);
      CHECK(fabs(d) <= 2.0 * B / P + 1 + 1e-9, "P=%d B=%lld diff %g", P, (long long)B, d);
    }
}

/* A returned Auto-Gen tree: a pre-order tree (children right of their parent, no crossing
 * edges) whose measured cost is the predicted cost. */
static void check_autogen_tree(int P, int64_t B, double predicted, const wf_reduce_tree *t) {
  CHECK(t->n == P && t->parent[0] == -1);
  for (int i = 1; i < P; i++) {
    CHECK(t->parent[i] >= 0 && t->parent[i] < i, "P=%d B=%lld: parent[%d]=%d", P, (long long)B,
          i, t->parent[i]);
    for (int j = i + 1; j < P; j++) {
      int a = t->parent[i], b = t->parent[j];
      CHECK(!(a < b && b < i && i < j), "P=%d: edges %d->%d and %d->%d cross", P, i, a, j, b);
    }
  }
  wf_coll_terms tt = wf_coll_tree_terms(t, B);
  CHECK(fabs(wf_coll_model(&tt, &P0) - predicted) < 1e-6, "P=%d B=%lld: tree %g vs dp %g", P,
        (long long)B, wf_coll_model(&tt, &P0), predicted);
}

static void autogen_sweep(void) {
  for (int P = 2; P <= 64; P++)
    for (int64_t B = 1; B <= 4096; B *= 2) {
      wf_reduce_tree t;
      double ag = wf_coll_autogen(P, B, &P0, &t);
      double fixed[4] = {wf_coll_chain(P, B, &P0), wf_coll_tree(P, B, &P0),
                         wf_coll_two_phase(P, B, 0, &P0), wf_coll_star_lemma51(P, B, &P0)};
      for (int i = 0; i < 4; i++)
        CHECK(ag <= fixed[i] + 1e-9, "P=%d B=%lld: autogen %g > fixed #%d %g", P, (long long)B,
              ag, i, fixed[i]);
      double lb = wf_coll_lower_bound(P, B, &P0);
      CHECK(lb > 0 && ag >= lb - 1e-9, "P=%d B=%lld: autogen %g < lower bound %g", P,
            (long long)B, ag, lb);
      if (P % 9 == 1 || P <= 6) check_autogen_tree(P, B, ag, &t);
      wf_coll_tree_free(&t);
    }
}

/* The paper (§1.3, Figure 1): Auto-Gen is at most 1.4x the lower bound at P = 512. */
static void autogen_at_512(void) {
  double worst = 0;
  clock_t t0 = clock();
  for (int64_t B = 1; B <= 4096; B *= 2) {
    double ag = wf_coll_autogen(512, B, &P0, NULL), lb = wf_coll_lower_bound(512, B, &P0);
    CHECK(ag >= lb - 1e-9);
    double r = ag / lb;
    if (r > worst) worst = r;
    CHECK(r <= 1.4, "P=512 B=%lld: autogen %.1f / lower bound %.1f = %.3f", (long long)B, ag, lb,
          r);
  }
  printf("autogen/lower bound at P=512, B=1..4096: worst %.3f (%.1f s)\n", worst,
         (double)(clock() - t0) / CLOCKS_PER_SEC);
}

/* §5.4/§5.7: two-phase beats the chain at large P and small B; the chain wins for long
 * vectors on few PEs. */
static void two_phase_vs_chain(void) {
  for (int64_t B = 1; B <= 256; B *= 2)
    CHECK(wf_coll_two_phase(512, B, 0, &P0) < wf_coll_chain(512, B, &P0), "B=%lld", (long long)B);
  CHECK(wf_coll_chain(512, 256, &P0) / wf_coll_two_phase(512, 256, 0, &P0) > 2);
  CHECK(wf_coll_chain(4, 4096, &P0) < wf_coll_two_phase(4, 4096, 0, &P0));
}

static void chooser(void) {
  wf_coll_choice c, o;
  /* A pair of PEs: chain, tree, two-phase and autogen all predict B + 6; the tie goes to
   * the lowest enum value. */
  wf_coll_query q = {WF_COLL_REDUCE, 2, 1, 32, 0, 0};
  q.allowed = (1u << WF_COLL_CHAIN) | (1u << WF_COLL_TREE) | (1u << WF_COLL_TWO_PHASE) |
              (1u << WF_COLL_AUTOGEN);
  CHECK(wf_coll_choose(&q, &P0, &c) == 0 && c.algo == WF_COLL_CHAIN && NEAR(c.predicted, 38),
        "%s %g", wf_coll_algo_name(c.algo), c.predicted);
  q.allowed = 1u << WF_COLL_RING; /* no reduce is a ring */
  CHECK(wf_coll_choose(&q, &P0, &c) == -1);
  /* The choice is the minimum over every algorithm, and it is stable. */
  for (int64_t B = 1; B <= 4096; B *= 4) {
    wf_coll_query r = {WF_COLL_REDUCE, 256, 1, B, 0, 0};
    CHECK(wf_coll_choose(&r, &P0, &c) == 0);
    for (int a = 0; a < WF_COLL_N_ALGOS; a++)
      if (wf_coll_predict(&r, (wf_coll_algo)a, &P0, &o) == 0)
        CHECK(c.predicted <= o.predicted, "B=%lld: chose %s %g, %s is %g", (long long)B,
              wf_coll_algo_name(c.algo), c.predicted, wf_coll_algo_name(o.algo), o.predicted);
    CHECK(c.lower_bound > 0 && c.why[0]);
  }
  /* Scalars go to the star (§5.7), long vectors on few PEs to the chain or an equal tree. */
  wf_coll_query s = {WF_COLL_REDUCE, 64, 1, 1, 0, 0};
  CHECK(wf_coll_choose(&s, &P0, &c) == 0 && c.algo == WF_COLL_STAR);
  wf_coll_query l = {WF_COLL_REDUCE, 4, 1, 4096, 0, 0};
  CHECK(wf_coll_choose(&l, &P0, &c) == 0 && NEAR(c.predicted, wf_coll_chain(4, 4096, &P0)));
  /* 2D: snake for long vectors on a small grid (§7.6), X-Y on a large one. */
  wf_coll_query g = {WF_COLL_REDUCE, 4, 4, 65536, 0, 0};
  CHECK(wf_coll_choose(&g, &P0, &c) == 0 && c.algo == WF_COLL_SNAKE, "%s", c.why);
  wf_coll_query G = {WF_COLL_REDUCE, 128, 128, 256, 0, 0};
  CHECK(wf_coll_choose(&G, &P0, &c) == 0 && c.algo != WF_COLL_SNAKE, "%s", c.why);
  CHECK(c.predicted >= wf_coll_lower_bound_2d(128, 128, 256, &P0));
  /* Allreduce: ring only where the model says so; broadcast is the flood. */
  wf_coll_query a = {WF_COLL_ALLREDUCE, 512, 1, 256, 0, 0};
  CHECK(wf_coll_choose(&a, &P0, &c) == 0 && c.algo != WF_COLL_RING, "%s", c.why);
  wf_coll_query b = {WF_COLL_BROADCAST, 16, 16, 100, 0, 0};
  CHECK(wf_coll_choose(&b, &P0, &c) == 0 && c.algo == WF_COLL_FLOOD &&
        NEAR(c.predicted, wf_coll_bcast2d(16, 16, 100, &P0)));
}

/* wf_coll_tree_schedule: the lowered stream schedule, against closed forms derived from the
 * cycle model independently (docs/cycle-model.md's table) and a tree worked by hand. */
static void schedules(void) {
  for (int P = 2; P <= 40; P += 3) {
    wf_reduce_tree t;
    int64_t B = 1 + P % 7 * 9;
    CHECK(wf_coll_tree_chain(P, &t) == 0);
    /* the chain is exactly Lemma 5.2: B + (2T_R + 2)(P - 1) */
    CHECK(NEAR(wf_coll_tree_schedule(&t, B, &P0), B + 6.0 * (P - 1)), "chain P=%d", P);
    wf_coll_tree_free(&t);
    CHECK(wf_coll_tree_star(P, &t) == 0);
    /* the star: the root's pipeline of B(P-1) starts after the nearest leaf's message,
     * 2T_R + 1 hop, and its last word is stored a cycle later: B(P-1) + 2T_R + 2 */
    CHECK(NEAR(wf_coll_tree_schedule(&t, B, &P0), B * (P - 1.0) + 6), "star P=%d", P);
    wf_coll_tree_free(&t);
  }
  /* 0 <- 1 <- {2, 3}: PE 1 reads leaf 2 (arrives at 2T_R + 1 = 5) for B cycles, then streams
   * leaf 3 from 5 + B; its stream reaches the root 1 + 2T_R + 1 = 6 later, which reads it
   * for B and stores 1 cycle later: 2B + 12. Equation (1) overlaps PE 1's 2B of reads with
   * the distance: max(2B, 4B/3 + 3) + 2*5 = 2B + 10 for B >= 5. */
  int par[4] = {-1, 0, 1, 1};
  wf_reduce_tree t = {4, par, 0, 0, 0, 0};
  CHECK(wf_coll_tree_measure(&t) == 0);
  CHECK(NEAR(wf_coll_tree_schedule(&t, 20, &P0), 52));
  wf_coll_terms tt = wf_coll_tree_terms(&t, 20);
  CHECK(NEAR(wf_coll_model(&tt, &P0), 50));
  /* both sides of an inner root: the lower side is read first (nearest first), the higher
   * side's last child streams: 2 <- {1 <- 0, 3}: 1 streams leaf 0 from 5, reaching 2 at
   * 5 + 6 = 11; 2 reads it for B, then leaf 3 (arrived at 5): 11 + 2B + 1 */
  int par2[4] = {1, 2, -1, 2};
  wf_reduce_tree t2 = {4, par2, 0, 0, 0, 0};
  CHECK(NEAR(wf_coll_tree_schedule(&t2, 8, &P0), 11 + 16 + 1));
  wf_reduce_tree one = {1, par, 0, 0, 0, 0};
  CHECK(NEAR(wf_coll_tree_schedule(&one, 8, &P0), 0));
}

int main(void) {
  P0 = wf_coll_params_default();
  hand_values();
  trees_match_closed_forms();
  autogen_sweep();
  two_phase_vs_chain();
  chooser();
  autogen_at_512();
  schedules();
  return wf_test_result("test_collective_cost");
}
