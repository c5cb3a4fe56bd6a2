/* WATOS's schedulers on the die-level model: stage costs (the TP engine), the recomputation
 * profile, GCMR (Alg. 2), Mem_pair, the location-aware placement minimising GlobalCost (Eq. 2),
 * Alg. 3's DRAM allocation, the plan evaluator, and Alg. 1's early-pruning central scheduler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"

const wf_train_search_opts WF_TRAIN_SEARCH_DEFAULT = {
    .recompute = 1, .gcmr = 1, .memsched = 1, .ga = 1, .ga_steps = 200, .ga_pop = 24, .ga_elite = 0.25,
    .gamma_w = 1.0, .seed = 1};

enum { QC = 16 };   /* memory quanta per die's checkpoint capacity in GCMR's DP */
enum { QR = 2048 }; /* most saving levels in a stage's recomputation knapsack */

/* A TP group's ring: bidirectional when the shape closes a cycle (2 x k, or two dies), else
 * a line, whose wrap-around halves the bandwidth. */
static double ring_bw(const wf_die_target *t, int sw, int sh) {
  int tp = sw * sh;
  if (tp == 2 || (sw >= 2 && sh >= 2 && tp % 2 == 0)) return 2 * t->link_bw;
  return t->link_bw;
}

int wf_train_stages(const wf_die_target *t, const wf_train_work *w, int tp, int pp, int st, wf_train_plan *p) {
  const wf_train_model *m = w->m;
  if (pp < 1 || pp > m->layers || pp > WF_MAX_STAGES) return -1;
  p->tp = tp, p->pp = pp, p->strategy = st, p->micro_batches = w->c.micro_batches;
  double bw = ring_bw(t, p->shape_w, p->shape_h);
  double alpha = 2.0 * (tp - 1) * t->link_latency, div = st == WF_TP_B ? 1 : tp;
  p->comm_ar_s = wf_train_eq1(alpha, bw, tp, 2 * w->tokens * m->hidden);
  p->act_bytes = 2 * w->tokens * m->hidden;
  int base = m->layers / pp, extra = m->layers % pp, l0 = 0;
  double maxp = 0;
  for (int s = 0; s < pp; s++) {
    wf_train_stage *S = &p->st[s];
    memset(S, 0, sizeof *S);
    /* Extra layers go to the middle stages: stage 0 holds the most micro-batches, the last the head. */
    S->layers = base + (s >= 1 && s <= extra ? 1 : 0);
    if (pp == 1) S->layers = m->layers;
    S->layer0 = l0;
    l0 += S->layers;
    S->inflight = pp - s < w->c.micro_batches ? pp - s : w->c.micro_batches;
    double params = 0;
    for (int l = S->layer0; l < S->layer0 + S->layers; l++) {
      wf_train_op ops[WF_OP_N];
      int kind = wf_train_layer_is_moe(m, l);
      wf_train_layer_ops(w, t, l, tp, st, ops);
      params += wf_train_layer_params(m, l);
      int first = S->kind_layers[kind]++ == 0;
      for (int k = 0; k < WF_OP_N; k++) {
        double tf = wf_train_op_time(t, w, &ops[k], 0, NULL), tb = wf_train_op_time(t, w, &ops[k], 1, NULL);
        double cf = ops[k].comm_f > 0 ? wf_train_eq1(alpha, bw, tp, ops[k].comm_f) : 0;
        double cb = ops[k].comm_b > 0 ? wf_train_eq1(alpha, bw, tp, ops[k].comm_b) : 0;
        S->F += tf + cf;
        S->B += tb + cb;
        S->ckpt_full += ops[k].ckpt;
        if (first) {
          S->r_time[kind][k] = tf + cf; /* recomputing an op redoes its collective too */
          S->r_ckpt[kind][k] = ops[k].ckpt;
        }
      }
    }
    double emb = (double)m->vocab * m->hidden;
    if (s == 0) params += emb;
    if (s == pp - 1) {
      params += emb;
      wf_train_op head;
      wf_train_head_op(w, tp, st, &head);
      S->F += wf_train_op_time(t, w, &head, 0, NULL);
      S->B += wf_train_op_time(t, w, &head, 1, NULL);
    }
    S->modelp = 16 * params / div; /* fp16 weights + grads, fp32 master + Adam m, v */
    S->cap = t->hbm_bytes - S->modelp;
    if (S->modelp > maxp) maxp = S->modelp;
  }
  /* The optimizer reads and writes every die's modelP once; strategy B also allreduces its
   * replicated gradients (fp16) across the group. */
  p->opt_s = 2 * maxp / t->hbm_bw;
  if (st == WF_TP_B && tp > 1) p->opt_s += wf_train_eq1(alpha, bw, tp, maxp / 8);
  return 0;
}

/* ---- recomputation: a bounded knapsack per stage ------------------------------------------- */

/* best[x] = least recomputation seconds per micro-batch saving >= x levels of `unit` bytes per
 * in-flight micro-batch; choice bits rebuild the counts. */
typedef struct knap {
  double unit;
  double best[QR + 1];
  int levels;            /* QR or fewer */
  int n;                 /* binary-split items */
  int kind[64], op[64], mult[64];
  unsigned char take[64][QR + 1];
} knap;

static void knap_build(const wf_train_stage *S, knap *K) {
  double total = 0;
  for (int c = 0; c < 2; c++)
    for (int k = 1; k < WF_OP_N; k++) total += S->kind_layers[c] * S->r_ckpt[c][k];
  /* Exact when the checkpoints share a unit small enough (their gcd); else QR levels, rounded
   * down per item (a conservative saving). */
  double g = 0;
  for (int c = 0; c < 2; c++)
    for (int k = 1; k < WF_OP_N; k++) {
      double v = S->r_ckpt[c][k];
      if (v <= 0 || !S->kind_layers[c]) continue;
      if (g == 0) g = v;
      for (int it = 0; it < 64 && v > g * 1e-9; it++) {
        double r = fmod(g, v);
        g = v, v = r;
      }
    }
  K->unit = total > 0 ? (g > 0 && total / g <= QR + 1e-6 ? g : total / QR) : 1;
  K->n = 0;
  for (int c = 0; c < 2; c++)
    for (int k = 1; k < WF_OP_N; k++) /* the layer input (ln1's) is always kept */
      for (int cnt = S->kind_layers[c], m = 1; cnt > 0 && S->r_ckpt[c][k] > 0; m *= 2) {
        int take = m < cnt ? m : cnt;
        WF_ASSERT(K->n < 64);
        K->kind[K->n] = c, K->op[K->n] = k, K->mult[K->n++] = take;
        cnt -= take;
      }
  for (int x = 0; x <= QR; x++) K->best[x] = x ? INFINITY : 0;
  K->levels = (int)ceil(total / K->unit - 1e-9);
  if (K->levels > QR) K->levels = QR;
  memset(K->take, 0, sizeof K->take);
  /* 0/1 knapsack over the split items; a level counts down (floor: conservative). */
  static double nb[QR + 1];
  for (int i = 0; i < K->n; i++) {
    int save = (int)floor(K->mult[i] * S->r_ckpt[K->kind[i]][K->op[i]] / K->unit + 1e-9);
    double cost = K->mult[i] * S->r_time[K->kind[i]][K->op[i]];
    for (int x = 0; x <= K->levels; x++) {
      nb[x] = K->best[x];
      int from = x - save < 0 ? 0 : x - save;
      if (K->best[from] + cost < nb[x]) nb[x] = K->best[from] + cost, K->take[i][x] = 1;
    }
    memcpy(K->best, nb, sizeof(double) * (K->levels + 1));
  }
}

static void knap_counts(const wf_train_stage *S, const knap *K, int x, int counts[2][WF_OP_N]) {
  memset(counts, 0, sizeof(int) * 2 * WF_OP_N);
  for (int i = K->n - 1; i >= 0 && x > 0; i--)
    if (K->take[i][x]) {
      counts[K->kind[i]][K->op[i]] += K->mult[i];
      int save = (int)floor(K->mult[i] * S->r_ckpt[K->kind[i]][K->op[i]] / K->unit + 1e-9);
      x = x - save < 0 ? 0 : x - save;
    }
}

static int knap_level(const wf_train_stage *S, const knap *K, double budget) {
  double need = S->ckpt_full - budget / S->inflight; /* per micro-batch bytes to drop */
  if (need <= 0) return 0;
  int x = (int)ceil(need / K->unit - 1e-9);
  return x > K->levels ? -1 : x;
}

double wf_train_recomp_profile(const wf_train_stage *S, double budget, int counts[2][WF_OP_N]) {
  static knap K;
  knap_build(S, &K);
  int x = knap_level(S, &K, budget);
  if (x < 0 || isinf(K.best[x])) return INFINITY;
  if (counts) knap_counts(S, &K, x, counts);
  return K.best[x];
}

/* ---- GCMR ----------------------------------------------------------------------------------- */

double wf_train_gcmr_dp(int pp, int quanta, const double *q, int total, int *take) {
  /* T[s][m]: the least max stage time of stages s.. with m quanta among them; from the last
   * stage back (Alg. 2 lines 2-5), then forward to read the choices (lines 6-7). Ties on the
   * max go to the least sum, so no stage recomputes more than the slowest one needs. */
  size_t W = (size_t)total + 1;
  double *T = calloc((size_t)(pp + 1) * W, sizeof *T), *U = calloc((size_t)(pp + 1) * W, sizeof *U);
  int *arg = malloc(sizeof *arg * (size_t)pp * W);
  WF_ASSERT(T && U && arg);
  for (size_t m = 0; m < W; m++) T[(size_t)pp * W + m] = 0, U[(size_t)pp * W + m] = 0;
  for (int s = pp - 1; s >= 0; s--)
    for (int m = 0; m <= total; m++) {
      double best = INFINITY, bsum = INFINITY;
      int bk = 0;
      for (int k = 0; k <= quanta && k <= m; k++) {
        double qk = q[(size_t)s * (quanta + 1) + k];
        double v = fmax(T[(size_t)(s + 1) * W + (m - k)], qk), u = U[(size_t)(s + 1) * W + (m - k)] + qk;
        if (v < best * (1 - 1e-12) || (v <= best * (1 + 1e-12) && u < bsum)) best = v, bsum = u, bk = k;
      }
      T[(size_t)s * W + m] = best, U[(size_t)s * W + m] = bsum, arg[(size_t)s * W + m] = bk;
    }
  double r = T[0 * W + (size_t)total];
  int m = total;
  for (int s = 0; s < pp; s++) take[s] = arg[(size_t)s * W + m], m -= take[s];
  free(T), free(U), free(arg);
  return r;
}

int wf_train_mem_pair(int pp, const double *overflow, const double *spare, wf_train_alloc *out, int cap) {
  int S[WF_MAX_STAGES], H[WF_MAX_STAGES], ns = 0, nh = 0, n = 0;
  double left[WF_MAX_STAGES];
  for (int s = 0; s < pp; s++) {
    if (overflow[s] > 0) S[ns++] = s;
    if (spare[s] > 0) H[nh++] = s;
    left[s] = spare[s];
  }
  /* DescendSort: Senders by memory pressure, Helpers by free memory. */
  for (int i = 1; i < ns; i++)
    for (int j = i; j > 0 && overflow[S[j]] > overflow[S[j - 1]]; j--) { int x = S[j]; S[j] = S[j - 1]; S[j - 1] = x; }
  for (int i = 1; i < nh; i++)
    for (int j = i; j > 0 && spare[H[j]] > spare[H[j - 1]]; j--) { int x = H[j]; H[j] = H[j - 1]; H[j - 1] = x; }
  int h = 0;
  for (int i = 0; i < ns; i++) {
    double need = overflow[S[i]];
    while (need > 1e-6 && h < nh) {
      double b = fmin(need, left[H[h]]);
      if (b > 0 && n < cap) out[n++] = (wf_train_alloc){S[i], H[h], b};
      need -= b, left[H[h]] -= b;
      if (left[H[h]] <= 1e-6) h++;
      else if (i + 1 < ns) break; /* pop the next pair */
    }
  }
  return n;
}

int wf_train_gcmr(wf_train_plan *p, int pooled) {
  int pp = p->pp;
  double qb = 1e300;
  for (int s = 0; s < pp; s++)
    if (p->st[s].cap > 0) qb = fmin(qb, p->st[s].cap / QC);
  if (qb >= 1e300) return -1; /* no die holds its modelP */
  int cap[WF_MAX_STAGES], total = 0, quanta = 0;
  for (int s = 0; s < pp; s++) {
    if (p->st[s].cap < 0) return -1;
    cap[s] = (int)floor(p->st[s].cap / qb);
    total += cap[s];
  }
  /* A stage may hold up to all it needs, or 3x its own share when pooled. */
  for (int s = 0; s < pp; s++) {
    int need = (int)ceil(p->st[s].ckpt_full * p->st[s].inflight / qb);
    int lim = pooled ? 3 * QC : cap[s];
    int k = need < lim ? need : lim;
    if (k > quanta) quanta = k;
  }
  double *q = malloc(sizeof *q * (size_t)pp * (quanta + 1));
  WF_ASSERT(q != NULL);
  static knap K;
  for (int s = 0; s < pp; s++) {
    wf_train_stage *S = &p->st[s];
    knap_build(S, &K);
    for (int k = 0; k <= quanta; k++) {
      int x = knap_level(S, &K, k * qb);
      double r = x < 0 ? INFINITY : K.best[x];
      if (!p->recompute && x > 0) r = INFINITY;
      if (!pooled && k > cap[s]) r = INFINITY;
      q[(size_t)s * (quanta + 1) + k] = S->F + S->B + r;
    }
  }
  int take[WF_MAX_STAGES];
  double best = wf_train_gcmr_dp(pp, quanta, q, total, take);
  free(q);
  if (isinf(best)) return -1;
  double overflow[WF_MAX_STAGES], spare[WF_MAX_STAGES];
  for (int s = 0; s < pp; s++) {
    wf_train_stage *S = &p->st[s];
    knap_build(S, &K);
    int x = knap_level(S, &K, take[s] * qb);
    knap_counts(S, &K, x < 0 ? 0 : x, S->recomp);
    double kept = 0;
    for (int c = 0; c < 2; c++)
      for (int k = 0; k < WF_OP_N; k++) kept += (S->kind_layers[c] - S->recomp[c][k]) * S->r_ckpt[c][k];
    S->mem = kept * S->inflight;
    overflow[s] = fmax(0, S->mem - S->cap);
    spare[s] = fmax(0, S->cap - S->mem);
  }
  p->nalloc = wf_train_mem_pair(pp, overflow, spare, p->alloc, WF_MAX_PAIRS);
  return 0;
}

/* ---- placement ------------------------------------------------------------------------------ */

int wf_train_tile(const wf_die_system *s, const wf_train_faults *f, int sw, int sh, int *sx, int *sy, int cap) {
  int n = 0, cols = s->w / sw, rows = s->h / sh;
  for (int r = 0; r < rows; r++)
    for (int i = 0; i < cols; i++) {
      int c = r % 2 ? cols - 1 - i : i; /* serpentine order */
      int ok = 1;
      for (int y = 0; y < sh && f; y++)
        for (int x = 0; x < sw; x++)
          if (f->die_dead[wf_die_id(s, c * sw + x, r * sh + y)]) ok = 0;
      if (ok && n < cap) sx[n] = c * sw, sy[n++] = r * sh;
    }
  return n;
}

int wf_train_stage_die(const wf_die_system *s, const wf_train_plan *p, int stage, int r) {
  int sl = p->slot[stage];
  return wf_die_id(s, p->slot_x[sl] + r % p->shape_w, p->slot_y[sl] + r / p->shape_w);
}

/* The dies of a stage in ring order: a cycle round the shape when it has one (2 x k). */
int wf_train_ring_of(const wf_die_system *s, const wf_train_plan *p, int stage, int *ring) {
  int sw = p->shape_w, sh = p->shape_h, n = 0, sl = p->slot[stage];
  int x0 = p->slot_x[sl], y0 = p->slot_y[sl];
  if (sw >= 2 && sh >= 2 && sh % 2 == 0) {
    for (int y = 0; y < sh; y++) ring[n++] = wf_die_id(s, x0, y0 + y);
    for (int y = sh - 1; y >= 0; y--)
      for (int i = 1; i < sw; i++) ring[n++] = wf_die_id(s, x0 + (y % 2 == (sh - 1) % 2 ? i : sw - i), y0 + y);
  } else if (sw >= 2 && sh >= 2) {
    for (int x = 0; x < sw; x++) ring[n++] = wf_die_id(s, x0 + x, y0);
    for (int x = sw - 1; x >= 0; x--)
      for (int j = 1; j < sh; j++) ring[n++] = wf_die_id(s, x0 + x, y0 + (x % 2 == (sw - 1) % 2 ? j : sh - j));
  } else {
    for (int k = 0; k < sw * sh; k++) ring[n++] = wf_die_id(s, x0 + k % sw, y0 + k / sw);
  }
  return n;
}

static int center(const wf_die_system *s, const wf_train_plan *p, int stage) {
  int sl = p->slot[stage];
  return wf_die_id(s, p->slot_x[sl] + (p->shape_w - 1) / 2, p->slot_y[sl] + (p->shape_h - 1) / 2);
}

static const wf_train_faults *g_faults; /* the search's faults: routes avoid its dead links */

/* Routes over the healthy links (wf_die_route), cached per mesh and faults: placement evaluates
 * the same pairs many times. rc_at[a * n + b] is the route's offset in rc_pool, -1 until asked;
 * rc_w = 0 forgets them all. */
static int rc_w, rc_h, *rc_at, *rc_len, *rc_pool;
static size_t rc_used, rc_cap;

/* Returns the hops, or -1 when no healthy path joins a to b; *links stays valid until the next
 * call. */
static int route(const wf_die_system *s, int a, int b, const int **links) {
  if (rc_w != s->w || rc_h != s->h || !rc_at) {
    free(rc_at), free(rc_len), free(rc_pool);
    rc_at = malloc(sizeof(int) * (size_t)s->n * s->n);
    rc_len = malloc(sizeof(int) * (size_t)s->n * s->n);
    WF_ASSERT(rc_at && rc_len);
    for (int i = 0; i < s->n * s->n; i++) rc_at[i] = -1;
    rc_pool = NULL, rc_used = rc_cap = 0;
    rc_w = s->w, rc_h = s->h;
  }
  size_t k = (size_t)a * s->n + b;
  if (rc_at[k] < 0) {
    if (rc_used + (size_t)s->n > rc_cap) {
      rc_cap = 2 * (rc_cap + (size_t)s->n);
      rc_pool = realloc(rc_pool, sizeof(int) * rc_cap);
      WF_ASSERT(rc_pool != NULL);
    }
    wf_die_system f = *s;
    f.link_dead = g_faults ? g_faults->link_dead : NULL;
    rc_len[k] = wf_die_route(&f, a, b, rc_pool + rc_used, s->n);
    rc_at[k] = (int)rc_used;
    if (rc_len[k] > 0) rc_used += (size_t)rc_len[k];
  }
  *links = rc_pool + rc_at[k];
  return rc_len[k];
}

int wf_train_route_hops(const wf_die_system *s, int a, int b) {
  const int *rl;
  return route(s, a, b, &rl);
}

/* Eq. 1 for stage st's TP ring as its steps' routes run (round the search's dead links, or on
 * healthy ones, X-Y): each step waits for the longest route between ring neighbours, and a
 * link that k steps' routes cross gives each of them 1/k of its bandwidth. */
static double ring_eq1(const wf_die_system *s, const wf_train_plan *p, int st, int faulty) {
  int ring[64], n = wf_train_ring_of(s, p, st, ring), xy[WF_MAX_DIES];
  static unsigned char cnt[WF_MAX_DIES * 4];
  memset(cnt, 0, (size_t)s->n * 4);
  wf_die_system healthy = *s;
  healthy.link_dead = NULL;
  int hmax = 1, lmax = 1;
  for (int i = 0; n > 1 && i < n; i++) {
    const int *links = xy;
    int h = faulty ? route(s, ring[i], ring[(i + 1) % n], &links)
                   : wf_die_route(&healthy, ring[i], ring[(i + 1) % n], xy, WF_MAX_DIES);
    if (h < 0) return INFINITY;
    if (h > hmax) hmax = h;
    for (int k = 0; k < h; k++)
      if (++cnt[links[k]] > lmax) lmax = cnt[links[k]];
  }
  double alpha = 2.0 * (p->tp - 1) * s->t.link_latency * hmax;
  return wf_train_eq1(alpha, ring_bw(&s->t, p->shape_w, p->shape_h) / lmax, p->tp, p->act_bytes);
}

/* What dead links add to one of stage st's TP allreduces (0 without faults): its ring with the
 * detours against the same ring on healthy links. SimGrid's evaluation sees the detours by
 * itself (train_sim.c). */
static double ring_detour_s(const wf_die_system *s, const wf_train_plan *p, int st) {
  if (p->tp < 2 || p->strategy == WF_TP_B || !g_faults || !g_faults->any) return 0;
  return fmax(0, ring_eq1(s, p, st, 1) - ring_eq1(s, p, st, 0));
}

/* The links of the pipeline's routes (between consecutive stage centres). */
static void pipeline_links(const wf_die_system *s, const wf_train_plan *p, unsigned char *used) {
  const int *r;
  memset(used, 0, (size_t)s->n * 4);
  for (int i = 0; i + 1 < p->pp; i++) {
    int h = route(s, center(s, p, i), center(s, p, i + 1), &r);
    for (int k = 0; k < h; k++) used[r[k]] = 1;
  }
}

/* Eq. 2's second term per byte for a Sender and Helper: distance x (1 + gamma), gamma the links
 * its route shares with the pipeline's; infinite when no healthy path joins them. */
static double pair_cost(const wf_die_system *s, const wf_train_plan *p, const unsigned char *used, int a, int b,
                        double gamma_w) {
  const int *r;
  int ca = center(s, p, a), cb = center(s, p, b);
  int h = route(s, ca, cb, &r), gamma = 0;
  for (int k = 0; k < h; k++) gamma += used[r[k]];
  return h < 0 ? INFINITY : h * (1 + gamma_w * gamma);
}

double wf_train_global_cost(const wf_die_system *s, const wf_train_plan *p, const wf_train_work *w, double gamma_w) {
  (void)w;
  static unsigned char used[WF_MAX_DIES * 4];
  if (p->nalloc) pipeline_links(s, p, used);
  double cost = 0;
  const int *r;
  for (int i = 0; i + 1 < p->pp; i++) {
    int h = route(s, center(s, p, i), center(s, p, i + 1), &r);
    cost += h < 0 ? INFINITY : h * p->act_bytes; /* stages cut apart: no placement at all */
  }
  for (int i = 0; i < p->nalloc; i++) {
    const wf_train_alloc *A = &p->alloc[i];
    cost += pair_cost(s, p, used, A->sender, A->helper, gamma_w) * A->bytes / p->st[A->sender].inflight;
  }
  return cost;
}

void wf_train_place_serpentine(wf_train_plan *p) {
  for (int i = 0; i < p->pp; i++) p->slot[i] = i;
}

static void place_exhaustive(const wf_die_system *s, wf_train_plan *p, const wf_train_work *w, double g, int k,
                             unsigned used, double *best, int *best_slot) {
  if (k == p->pp) {
    double c = wf_train_global_cost(s, p, w, g);
    if (c < *best - 1e-9) *best = c, memcpy(best_slot, p->slot, sizeof(int) * p->pp);
    return;
  }
  for (int sl = 0; sl < p->slots; sl++)
    if (!(used & (1u << sl))) {
      p->slot[k] = sl;
      place_exhaustive(s, p, w, g, k + 1, used | (1u << sl), best, best_slot);
    }
}

void wf_train_place_opt(const wf_die_system *s, wf_train_plan *p, const wf_train_work *w, double gamma_w) {
  int best_slot[WF_MAX_STAGES];
  memcpy(best_slot, p->slot, sizeof(int) * p->pp); /* kept when every placement cuts stages apart */
  double best;
  double perms = 1;
  for (int i = 0; i < p->pp; i++) perms *= p->slots - i;
  if (p->slots <= 16 && perms <= 720) {
    best = INFINITY;
    place_exhaustive(s, p, w, gamma_w, 0, 0, &best, best_slot);
    memcpy(p->slot, best_slot, sizeof(int) * p->pp);
    return;
  }
  /* Local search from the serpentine: swap two stages, or move one to a free slot, while
   * GlobalCost falls. */
  wf_train_place_serpentine(p);
  best = wf_train_global_cost(s, p, w, gamma_w);
  for (int improved = 1, rounds = 0; improved && rounds < 50; rounds++) {
    improved = 0;
    for (int i = 0; i < p->pp; i++)
      for (int sl = 0; sl < p->slots; sl++) {
        int j = -1;
        for (int k = 0; k < p->pp; k++)
          if (p->slot[k] == sl) j = k;
        if (j == i) continue;
        int old = p->slot[i];
        p->slot[i] = sl;
        if (j >= 0) p->slot[j] = old;
        double c = wf_train_global_cost(s, p, w, gamma_w);
        if (c < best - 1e-9) best = c, improved = 1;
        else {
          p->slot[i] = old;
          if (j >= 0) p->slot[j] = sl;
        }
      }
  }
}

/* ---- Alg. 3 --------------------------------------------------------------------------------- */

int wf_train_alloc3(int pp, const double *overflow, const double *spare, const double *cost, wf_train_alloc *out,
                    int cap) {
  double left[WF_MAX_STAGES];
  int n = 0;
  for (int h = 0; h < pp; h++) left[h] = spare[h];
  for (int s = 0; s < pp; s++) {
    if (overflow[s] <= 0) continue;
    /* Q: the Helpers by GlobalCost from this Sender, cheapest first (line 2). */
    int Q[WF_MAX_STAGES], nq = 0;
    for (int h = 0; h < pp; h++)
      if (h != s && left[h] > 0) Q[nq++] = h;
    for (int i = 1; i < nq; i++)
      for (int j = i; j > 0 && cost[s * pp + Q[j]] < cost[s * pp + Q[j - 1]]; j--) { int x = Q[j]; Q[j] = Q[j - 1]; Q[j - 1] = x; }
    double need = overflow[s];
    for (int i = 0; i < nq && need > 1e-6; i++) {
      double b = fmin(need, left[Q[i]]);
      if (n < cap) out[n++] = (wf_train_alloc){s, Q[i], b};
      left[Q[i]] -= b, need -= b;
    }
    if (need > 1e-6) return -1; /* the wafer's DRAM is full */
  }
  return n;
}

void wf_train_memsched(const wf_die_system *s, wf_train_plan *p, const wf_train_work *w, double gamma_w) {
  /* Place for the Mem_pairs, then let Alg. 3 re-choose the Helpers over that placement. With
   * no Sender the serpentine already chains the stages by single hops. */
  if (!p->nalloc) return;
  wf_train_place_opt(s, p, w, gamma_w);
  int pp = p->pp;
  double overflow[WF_MAX_STAGES], spare[WF_MAX_STAGES], *cost = malloc(sizeof(double) * pp * pp);
  WF_ASSERT(cost != NULL);
  for (int i = 0; i < pp; i++) {
    overflow[i] = fmax(0, p->st[i].mem - p->st[i].cap);
    spare[i] = fmax(0, p->st[i].cap - p->st[i].mem);
  }
  static unsigned char used[WF_MAX_DIES * 4];
  pipeline_links(s, p, used);
  for (int a = 0; a < pp; a++)
    for (int b = 0; b < pp; b++) cost[a * pp + b] = pair_cost(s, p, used, a, b, gamma_w);
  wf_train_alloc out[WF_MAX_PAIRS];
  int n = wf_train_alloc3(pp, overflow, spare, cost, out, WF_MAX_PAIRS);
  if (n >= 0) memcpy(p->alloc, out, sizeof(wf_train_alloc) * n), p->nalloc = n;
  free(cost);
  wf_train_place_opt(s, p, w, gamma_w);
}

/* ---- the plan evaluator --------------------------------------------------------------------- */

int wf_train_evaluate(const wf_die_system *s, const wf_train_work *w, wf_train_plan *p) {
  const wf_die_target *t = &s->t;
  int pp = p->pp, ok = 1;
  const int *rl;
  /* Every pair the plan uses (rings, hand-offs, Mem_pairs) needs a healthy path: it has one
   * when all the plan's dies reach the first and the first reaches them. */
  for (int i = 0, d0 = wf_train_stage_die(s, p, 0, 0); i < pp; i++)
    for (int r = 0; r < p->tp; r++) {
      int d = wf_train_stage_die(s, p, i, r);
      if (route(s, d0, d, &rl) < 0 || route(s, d, d0, &rl) < 0) ok = 0;
    }
  double out[WF_MAX_STAGES] = {0}, in[WF_MAX_STAGES] = {0};
  for (int i = 0; i < p->nalloc; i++) out[p->alloc[i].sender] += p->alloc[i].bytes, in[p->alloc[i].helper] += p->alloc[i].bytes;
  /* Link loads per micro-batch of the pipeline and offload flows, for the PP engine's penalty
   * on occupied links. */
  static double load[WF_MAX_DIES * 4];
  memset(load, 0, sizeof(double) * (size_t)s->n * 4);
  for (int i = 0; i + 1 < pp; i++)
    for (int r = 0; r < p->tp; r++) {
      int h = route(s, wf_train_stage_die(s, p, i, r), wf_train_stage_die(s, p, i + 1, r), &rl);
      for (int k = 0; k < h; k++) load[rl[k]] += p->act_bytes / p->tp;
    }
  for (int i = 0; i < p->nalloc; i++) {
    const wf_train_alloc *A = &p->alloc[i];
    for (int r = 0; r < p->tp; r++) {
      int h = route(s, wf_train_stage_die(s, p, A->sender, r), wf_train_stage_die(s, p, A->helper, r), &rl);
      for (int k = 0; k < h; k++) load[rl[k]] += A->bytes / p->st[A->sender].inflight / p->tp;
    }
  }
  double f[WF_MAX_STAGES], b[WF_MAX_STAGES], x[WF_MAX_STAGES];
  for (int i = 0; i < pp; i++) p->st[i].help_s = 0;
  p->t_max = 0;
  for (int i = 0; i < pp; i++) {
    wf_train_stage *S = &p->st[i];
    double kept = 0;
    S->recomp_s = 0;
    for (int c = 0; c < 2; c++)
      for (int k = 0; k < WF_OP_N; k++) {
        if (S->recomp[c][k] < 0 || S->recomp[c][k] > S->kind_layers[c] || (k == WF_OP_LN1 && S->recomp[c][k])) ok = 0;
        kept += (S->kind_layers[c] - S->recomp[c][k]) * S->r_ckpt[c][k];
        S->recomp_s += S->recomp[c][k] * S->r_time[c][k];
      }
    S->mem = kept * S->inflight;
    if (S->recomp_s > 0 && !p->recompute) ok = 0;
    double offl = fmin(out[i], S->mem);
    if (S->modelp + (S->mem - offl) + in[i] > t->hbm_bytes * (1 + 1e-9)) ok = 0;
    /* Offloaded checkpoints leave in the forward and come back in the backward, overlapped
     * with compute; the transfer takes the most loaded link of its routes. */
    S->off_s = 0;
    for (int a = 0; a < p->nalloc; a++) {
      const wf_train_alloc *A = &p->alloc[a];
      if (A->sender != i) continue;
      double worst = 0, lat = 0;
      for (int r = 0; r < p->tp; r++) {
        int da = wf_train_stage_die(s, p, i, r), db = wf_train_stage_die(s, p, A->helper, r);
        int h = route(s, da, db, &rl);
        for (int k = 0; k < h; k++) worst = fmax(worst, load[rl[k]]);
        lat = fmax(lat, h * t->link_latency);
      }
      S->off_s += lat + worst / t->link_bw;
      p->st[A->helper].help_s += 2 * A->bytes / S->inflight / p->tp / t->hbm_bw; /* write + read */
    }
  }
  for (int i = 0; i < pp; i++) {
    wf_train_stage *S = &p->st[i];
    double worst = 0, lat = 0;
    if (i + 1 < pp)
      for (int r = 0; r < p->tp; r++) {
        int da = wf_train_stage_die(s, p, i, r), db = wf_train_stage_die(s, p, i + 1, r);
        int h = route(s, da, db, &rl);
        for (int k = 0; k < h; k++) worst = fmax(worst, load[rl[k]]);
        lat = fmax(lat, h * t->link_latency);
      }
    S->xfer = i + 1 < pp ? lat + worst / t->link_bw : 0;
    /* two TP allreduces per layer forward, two backward (Megatron's f and g) */
    double detour = 2 * (S->kind_layers[0] + S->kind_layers[1]) * ring_detour_s(s, p, i);
    f[i] = fmax(S->F + detour, S->off_s) + S->help_s / 2;
    b[i] = fmax(S->B + detour, S->off_s) + S->help_s / 2 + S->recomp_s;
    x[i] = S->xfer;
    if (f[i] + b[i] > p->t_max) p->t_max = f[i] + b[i];
  }
  p->global_cost = wf_train_global_cost(s, p, w, 1.0);
  p->iter_s = wf_train_1f1b(pp, w->c.micro_batches, f, b, x) + p->opt_s;
  p->feasible = ok;
  return ok ? 0 : -1;
}

/* ---- Alg. 1 --------------------------------------------------------------------------------- */

/* Megatron-like full recomputation: the same number of whole layers on every stage, enough for
 * the fullest stage (naive recomputation, Fig. 8 (a)). */
static int naive_recompute(wf_train_plan *p) {
  int kmax = 0;
  for (int s = 0; s < p->pp; s++) {
    wf_train_stage *S = &p->st[s];
    int L = S->kind_layers[0] + S->kind_layers[1], k = 0;
    double per_layer = L ? S->ckpt_full / L : 0, kept_in = 0;
    for (int c = 0; c < 2; c++) kept_in += S->kind_layers[c] * S->r_ckpt[c][WF_OP_LN1];
    kept_in = L ? kept_in / L : 0;
    while (k <= L && S->inflight * ((L - k) * per_layer + k * kept_in) > S->cap) k++;
    if (k > L) return -1;
    if (k > kmax) kmax = k;
  }
  for (int s = 0; s < p->pp; s++) {
    wf_train_stage *S = &p->st[s];
    memset(S->recomp, 0, sizeof S->recomp);
    int left = kmax;
    for (int c = 0; c < 2; c++) {
      int k = left < S->kind_layers[c] ? left : S->kind_layers[c];
      for (int o = 1; o < WF_OP_N; o++) S->recomp[c][o] = k;
      left -= k;
    }
  }
  p->nalloc = 0;
  return kmax && !p->recompute ? -1 : 0;
}

/* One candidate through the downstream schedulers the options switch on. */
static int schedule(const wf_die_system *s, const wf_train_work *w, const wf_train_search_opts *o, wf_train_plan *p) {
  if (o->naive_recompute || !o->gcmr) {
    if (naive_recompute(p)) return -1;
  } else if (wf_train_gcmr(p, 1)) {
    return -1;
  }
  wf_train_place_serpentine(p);
  if (o->memsched && !o->serpentine) wf_train_memsched(s, p, w, o->gamma_w);
  return wf_train_evaluate(s, w, p);
}

int wf_train_search(const wf_die_system *s, const wf_train_work *w, const wf_train_search_opts *o, wf_train_plan *best) {
  wf_train_set_faults(o->faults);
  const wf_die_target *t = &s->t;
  double modelp = 16 * wf_train_model_params(w->m);
  int healthy = s->n;
  if (o->faults)
    for (int d = 0; d < s->n; d++) healthy -= o->faults->die_dead[d];
  best->feasible = 0;
  best->iter_s = INFINITY;
  if (modelp / healthy > t->hbm_bytes) return WF_EXIT_NOFIT; /* Alg. 1 lines 1-2 */
  static wf_train_plan p;
  for (int tp = 1; tp <= 16 && tp <= healthy; tp++) {
    if (tp > 1 && tp % 2) continue; /* even TP groups for the 2D mesh's rings (Alg. 1 line 4) */
    if (o->fixed_tp && tp != o->fixed_tp) continue;
    for (int sw = 1; sw <= tp; sw++) {
      if (tp % sw || sw > s->w || tp / sw > s->h) continue;
      memset(&p, 0, sizeof p);
      p.shape_w = sw, p.shape_h = tp / sw;
      p.slots = wf_train_tile(s, o->faults, sw, tp / sw, p.slot_x, p.slot_y, WF_MAX_STAGES * 4);
      for (int pp = 1; pp <= p.slots && pp <= WF_MAX_STAGES; pp++) {
        if (o->fixed_pp && pp != o->fixed_pp) continue;
        if (modelp / ((double)tp * pp) > t->hbm_bytes) continue; /* modelP cannot fit */
        for (int st = 0; st < WF_TP_N; st++) {
          if ((tp == 1 || o->hk_only) && st) continue;
          if (wf_train_stages(t, w, tp, pp, st, &p)) continue;
          p.recompute = o->recompute;
          /* Early pruning: the slowest stage runs n forwards and backwards at least. */
          double lb = 0;
          for (int i = 0; i < pp; i++) lb = fmax(lb, p.st[i].F + p.st[i].B);
          if (lb * w->c.micro_batches >= best->iter_s) continue;
          if (schedule(s, w, o, &p)) continue;
          if (p.iter_s < best->iter_s) *best = p;
        }
      }
    }
  }
  if (!best->feasible) return WF_EXIT_NOFIT;
  if (o->ga) wf_train_ga(s, w, o, best);
  return 0;
}

void wf_train_set_faults(const wf_train_faults *f) {
  g_faults = f;
  rc_w = 0; /* the cached routes were for the previous faults */
}
