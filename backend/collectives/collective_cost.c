/* The Reduce paper's cost model (§3, equation 1) and the closed forms of its collectives
 * (§4-§7) along one line: broadcast, star, chain, tree, two-phase, ring. Trees, Auto-Gen and
 * the Lemma 5.5 bound are in collective_tree.c (built on this model), the collectives
 * composed from these (an inner root, reduce-then-broadcast, 2D) in collective_compose.c, the
 * chooser in collective_choose.c. */
#include <math.h>
#include <string.h>

#include "ir/support/intmath.h"
#include "waferc/collectives.h"

wf_coll_params wf_coll_params_default(void) {
  wf_coll_params p = {2.0, 1.0};
  return p;
}

wf_coll_params wf_coll_params_from_target(const wf_target *t) {
  wf_coll_params p = {(double)t->ramp_cycles, (double)(t->hop_cycles > 0 ? t->hop_cycles : 1)};
  return p;
}

double wf_coll_model(const wf_coll_terms *t, const wf_coll_params *p) {
  double k = 2 * p->ramp + 1, L = t->L * p->hop;
  if (t->pipelined) return (t->C > L ? t->C : L) + k * t->D;
  double flow = (t->N > 0 ? t->E / t->N : 0) + L;
  return (t->C > flow ? t->C : flow) + k * t->D;
}

/* ---- terms, counted as the lemmas' proofs count them ---- */

static const wf_coll_terms zero_terms = {0, 0, 0, 0, 0, 0};

wf_coll_terms wf_coll_terms_bcast(int64_t P, int64_t B) {
  wf_coll_terms t = zero_terms;
  if (P <= 1) return t;
  t.C = (double)B;
  t.E = (double)B * (double)(P - 1);
  t.N = t.L = (double)(P - 1);
  t.D = 1;
  return t;
}

wf_coll_terms wf_coll_terms_star(int64_t P, int64_t B) {
  wf_coll_terms t = zero_terms;
  if (P <= 1) return t;
  t.C = (double)B * (double)(P - 1);
  t.E = (double)B * (double)P * (double)(P - 1) / 2;
  t.N = t.L = (double)(P - 1);
  t.D = 1;
  return t;
}

wf_coll_terms wf_coll_terms_chain(int64_t P, int64_t B) {
  wf_coll_terms t = zero_terms;
  if (P <= 1) return t;
  t.C = (double)B;
  t.E = (double)B * (double)(P - 1);
  t.N = t.L = t.D = (double)(P - 1);
  return t;
}

static int popcount(uint64_t x) {
  int n = 0;
  while (x) { n += (int)(x & 1); x >>= 1; }
  return n;
}

/* Position x sends to x with its lowest set bit cleared (round r = its lowest bit): the
 * root hears from every power of two below P, the depth is the most set bits of any
 * position, the energy the sum of lowest bits. For P a power of two: Lemma 5.3. */
wf_coll_terms wf_coll_terms_tree(int64_t P, int64_t B) {
  wf_coll_terms t = zero_terms;
  if (P <= 1) return t;
  uint64_t last = (uint64_t)P - 1;
  int rounds = wf_bitlen(last);
  int depth = popcount(last) > rounds - 1 ? popcount(last) : rounds - 1;
  /* Sum of lowest set bits over 1..P-1: 2^j is the lowest bit of floor((m + 2^j) / 2^(j+1))
   * numbers in 1..m. */
  double hops = 0;
  for (int j = 0; j < rounds; j++) {
    uint64_t bit = (uint64_t)1 << j;
    hops += (double)bit * (double)((last + bit) >> (j + 1));
  }
  t.C = (double)B * rounds;
  t.E = (double)B * hops;
  t.N = t.L = (double)(P - 1);
  t.D = depth;
  return t;
}

int64_t wf_coll_two_phase_group(int64_t P) {
  int64_t s = (int64_t)llround(sqrt((double)P));
  return s < 1 ? 1 : s;
}

/* Groups of S from the far end; the root's group keeps the remainder r = P - S(G-1).
 * Phase 1 costs P - G hops, phase 2 (leaders 0, r, r+S, ...) P - S hops. */
wf_coll_terms wf_coll_terms_two_phase(int64_t P, int64_t B, int64_t S) {
  if (S <= 0) S = wf_coll_two_phase_group(P);
  if (P <= 1) return zero_terms;
  int64_t G = (P + S - 1) / S;
  if (G <= 1 || S <= 1) return wf_coll_terms_chain(P, B);
  int64_t r = P - S * (G - 1);
  wf_coll_terms t = zero_terms;
  int two = r >= 2 || G >= 3; /* some leader hears from its group and from the next leader */
  t.C = (double)B * (two ? 2 : 1);
  t.E = (double)B * (double)((P - G) + (P - S));
  t.N = t.L = (double)(P - 1);
  t.D = (double)((S - 1) + (G - 1));
  return t;
}

wf_coll_terms wf_coll_terms_ring(int64_t P, int64_t B) {
  wf_coll_terms t = zero_terms;
  if (P <= 1) return t;
  double per = (double)B / (double)P, links = 2.0 * (double)(P - 1);
  t.C = links * per;
  t.E = links * links * per;
  t.N = links;
  t.L = 2.0 * (double)(2 * P - 3);
  t.D = links;
  return t;
}

/* ---- closed forms ---- */

double wf_coll_message(int64_t P, int64_t B, const wf_coll_params *p) {
  return P <= 1 ? 0 : (double)B + (double)(P - 1) * p->hop + 1 + 2 * p->ramp;
}

double wf_coll_bcast(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_bcast(P, B);
  return wf_coll_model(&t, p);
}

double wf_coll_star(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_star(P, B);
  t.pipelined = 1;
  return wf_coll_model(&t, p);
}

double wf_coll_star_lemma51(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_star(P, B);
  return wf_coll_model(&t, p);
}

double wf_coll_chain(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_chain(P, B);
  return wf_coll_model(&t, p);
}

double wf_coll_tree(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_tree(P, B);
  return wf_coll_model(&t, p);
}

double wf_coll_two_phase(int64_t P, int64_t B, int64_t S, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_two_phase(P, B, S);
  return wf_coll_model(&t, p);
}

double wf_coll_two_phase_lemma54(int64_t P, int64_t B, const wf_coll_params *p) {
  if (P <= 1) return 0;
  double s = sqrt((double)P), b = (double)B;
  double flow = 2 * b - 2 * b / s + (double)P * p->hop;
  return (2 * b > flow ? 2 * b : flow) + (2 * s - 2) * (2 * p->ramp + 1);
}

double wf_coll_ring(int64_t P, int64_t B, const wf_coll_params *p) {
  wf_coll_terms t = wf_coll_terms_ring(P, B);
  return wf_coll_model(&t, p);
}

double wf_coll_ring_lowered(int64_t P, int64_t B, const wf_coll_params *p) {
  if (P <= 1) return 0;
  double rounds = 2.0 * (double)(P - 1), c = (double)((B + P - 1) / P);
  /* Ring links from position q+1 to q: 2 hops between evens and between odds, 1 hop at the
   * top (top odd to top even) and at the bottom (x = 0 to x = 1). 2(P-1) consecutive links
   * are every link once plus all but two adjacent ones; the cheapest adjacent pair is
   * 1 + 2 hops when P >= 4 (the 1-hop links are apart), 1 + 1 for P <= 3. */
  double ring_hops = 2.0 * (double)(P - 1), skip = P >= 4 ? 3 : 2;
  /* the local work: two rotations of the B words and the zeroed padding of the last chunk */
  double local = 2.0 * (double)B + ((double)P * c - (double)B);
  return rounds * (c + 2 * p->ramp) + (2 * ring_hops - skip) * p->hop + local;
}
