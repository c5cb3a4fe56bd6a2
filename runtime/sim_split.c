/* Where the threads' bands are cut (docs/cycle-model.md, "Threads"): the rows move between
 * bands as the work moves over the mesh, so that the bands stay even. A cycle costs its
 * slowest band, and a plan's active region wanders (a broadcast's front sweeps the mesh over
 * hundreds of cycles, and a band of equal rows may hold most of it), so every SPLIT_EVERY
 * cycles the bands count their awake PEs and routers holding wavelets per row (a PE 1, a
 * router 2: the router phase costs about twice the PE phase), and when cutting at the
 * quantiles of that count would lower the largest band's share by a tenth, the rows move.
 *
 * Which band steps a PE or router changes no result: the threads reproduce the one-thread
 * order for every split. Between two cycles a band's lists hold only its own PEs and routers
 * (active lists by key, the timer heap, the counts of sleepers), so moving rows is a filter of
 * each band's lists (a PE or router's row follows from its address: the slab is laid out row
 * by row, sim_layout.c) and a merge by key into the band that gains them. */
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_band.h"

/* Rows move when the largest band's share drops by this many percent (a move costs a pass
 * over the lists of the bands that change). */
enum { SPLIT_GAIN_PCT = 4 };

/* The row a slab address falls in, from the bucket table (a bucket that straddles two rows
 * counts for the first; it is only a count). */
static int row_of(const wf_threads *T, const void *p) {
  return T->bucket_row[(size_t)((const char *)p - T->row_addr[0]) >> T->bshift];
}

static int in_rows(const wf_threads *T, const void *p, int y0, int y1) {
  const char *a = p;
  return a >= T->row_addr[y0] && a < T->row_addr[y1];
}

void wf_split_init(wf_threads *T) {
  const wf_sim *s = T->s;
  int h = s->h;
  T->row_addr = calloc((size_t)h + 1, sizeof *T->row_addr);
  T->ny = calloc((size_t)T->nb + 1, sizeof *T->ny);
  T->work = calloc((size_t)h, sizeof *T->work);
  T->work_prev = calloc((size_t)h, sizeof *T->work_prev);
  WF_ASSERT(T->row_addr && T->ny && T->work && T->work_prev);
  T->row_addr[h] = (char *)s->slab + s->slab_bytes;
  for (int y = h - 1; y >= 0; y--) {
    T->row_addr[y] = T->row_addr[y + 1];
    for (int x = s->w - 1; x >= 0; x--)
      if (s->routers[(size_t)y * s->w + x]) T->row_addr[y] = (char *)s->routers[(size_t)y * s->w + x];
  }
  /* about 64 buckets per row */
  size_t bytes = s->slab_bytes ? s->slab_bytes : 1;
  T->bshift = 6;
  while ((bytes >> T->bshift) > (size_t)64 * (size_t)h) T->bshift++;
  size_t nbk = (bytes >> T->bshift) + 1;
  T->bucket_row = calloc(nbk, sizeof *T->bucket_row);
  WF_ASSERT(T->bucket_row != NULL);
  int y = 0;
  for (size_t i = 0; i < nbk; i++) {
    const char *a = T->row_addr[0] + (i << T->bshift);
    while (y + 1 < h && a >= T->row_addr[y + 1]) y++;
    T->bucket_row[i] = y;
  }
  for (int k = 0; k < T->nb; k++) {
    wf_band *b = T->b[k];
    b->hist = calloc((size_t)h, sizeof *b->hist);
    WF_ASSERT(b->hist != NULL);
  }
}

void wf_split_free(wf_threads *T) {
  free(T->row_addr);
  free(T->ny);
  free(T->work);
  free(T->work_prev);
  free(T->bucket_row);
  for (int k = 0; k < T->nb; k++) {
    wf_band *b = T->b[k];
    free(b->hist);
    free(b->mv_pe);
    free(b->mv_rt);
    free(b->mv_tm);
  }
}

/* A band's count per row of its awake PEs and of its routers holding wavelets. */
void wf_split_count(wf_threads *T, wf_band *b) {
  const wf_sim *bs = &b->sim;
  int64_t *H = b->hist;
  int y0 = bs->y0, y1 = bs->y1;
  for (int y = y0; y < y1; y++) H[y] = 0;
  for (int i = 0; i < bs->n_act_pe; i++) {
    int y = row_of(T, bs->act_pe[i]);
    H[y < y0 ? y0 : y >= y1 ? y1 - 1 : y] += 1;
  }
  for (int i = 0; i < bs->n_act_rt; i++) {
    int y = row_of(T, bs->act_rt[i]);
    H[y < y0 ? y0 : y >= y1 ? y1 - 1 : y] += 2;
  }
}

/* Where to cut, from the bands' counts: T->ny, and 1 if it pays to move rows. The count of
 * each row is carried forward along its trend since the last look (half a period: the middle
 * of the cycles until the next), since a front keeps its direction for a while. */
int wf_split_plan(wf_threads *T) {
  int nb = T->nb, h = T->s->h;
  int64_t *W = T->work, *P = T->work_prev, total = 0, cur = 0;
  for (int k = 0; k < nb; k++) {
    const wf_band *b = T->b[k];
    for (int y = b->sim.y0; y < b->sim.y1; y++) {
      int64_t now = b->hist[y], next = now + (now - P[y]) / 2;
      P[y] = now;
      W[y] = next > 0 ? next : 0;
    }
  }
  for (int k = 0; k < nb; k++) {
    int64_t load = 0;
    for (int y = T->b[k]->sim.y0; y < T->b[k]->sim.y1; y++) load += W[y];
    total += load;
    if (load > cur) cur = load;
  }
  if (total < 64 * (int64_t)nb) return 0; /* too little to matter */
  /* cut at the quantiles, each band keeping a row */
  T->ny[0] = 0;
  T->ny[nb] = h;
  int64_t run = 0, best = 0;
  int y = 0;
  for (int k = 1; k < nb; k++) {
    int64_t want = total * k / nb;
    while (y < h - (nb - k) && run + W[y] <= want) run += W[y++];
    /* the row that crosses the quantile goes where it leaves the smaller error */
    if (y < h - (nb - k) && want - run > run + W[y] - want) run += W[y++];
    while (y < T->ny[k - 1] + 1) run += W[y++]; /* at least a row each */
    T->ny[k] = y;
  }
  int same = 1;
  for (int k = 0; k < nb; k++) {
    int64_t load = 0;
    for (int r = T->ny[k]; r < T->ny[k + 1]; r++) load += W[r];
    if (load > best) best = load;
    if (T->ny[k] != T->b[k]->sim.y0) same = 0;
  }
  return !same && best * 100 < cur * (100 - SPLIT_GAIN_PCT);
}

static void **grow_ptrs(void **p, int *cap, int need) {
  if (need <= *cap) return p;
  while (*cap < need) *cap = *cap ? 2 * *cap : 256;
  p = realloc(p, (size_t)*cap * sizeof *p);
  WF_ASSERT(p != NULL);
  return p;
}

/* Adds to the band's sleeper counts (sign +1) or takes from them (-1) those of rows [y0, y1). */
static void count_sleepers(wf_threads *T, wf_sim *bs, int y0, int y1, int sign) {
  const wf_sim *s = T->s;
  for (int y = y0; y < y1; y++)
    for (int x = 0; x < s->w; x++) {
      const wf_pe *p = s->pes[(size_t)y * s->w + x];
      const wf_router *r = s->routers[(size_t)y * s->w + x];
      if (p && p->sleeping == WF_SLEEP_SOFT) bs->n_soft += sign;
      if (r && r->asleep) bs->n_rt_sleep += sign;
    }
}

/* Keeps in v[0..n) the PEs of rows [y0, y1), in order, and appends the others to *out; returns
 * how many stay (the active PEs' list and the timers' alike). */
static int leave_pes(const wf_threads *T, wf_pe **v, int n, int y0, int y1, wf_pe ***out, int *cap, int *n_out) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (in_rows(T, v[i], y0, y1)) {
      v[m++] = v[i];
    } else {
      *out = (wf_pe **)grow_ptrs((void **)*out, cap, *n_out + 1);
      (*out)[(*n_out)++] = v[i];
    }
  }
  return m;
}

/* Step 1 of a move, each band on its thread: what leaves its rows leaves its lists. */
void wf_split_leave(wf_threads *T, wf_band *b) {
  wf_sim *bs = &b->sim;
  int ny0 = T->ny[b->k], ny1 = T->ny[b->k + 1];
  WF_ASSERT(!bs->n_soft_woken && !bs->n_rt_now && !bs->n_rt_join);
  b->n_mv_pe = b->n_mv_rt = b->n_mv_tm = 0;
  bs->n_act_pe = leave_pes(T, bs->act_pe, bs->n_act_pe, ny0, ny1, &b->mv_pe, &b->cap_mv_pe, &b->n_mv_pe);
  int m = 0;
  for (int i = 0; i < bs->n_act_rt; i++) {
    wf_router *r = bs->act_rt[i];
    if (in_rows(T, r, ny0, ny1)) {
      bs->act_rt[m++] = r;
    } else {
      b->mv_rt = (wf_router **)grow_ptrs((void **)b->mv_rt, &b->cap_mv_rt, b->n_mv_rt + 1);
      b->mv_rt[b->n_mv_rt++] = r;
    }
  }
  bs->n_act_rt = m;
  /* the heap is rebuilt in wf_split_join */
  bs->n_timers = leave_pes(T, bs->timers, bs->n_timers, ny0, ny1, &b->mv_tm, &b->cap_mv_tm, &b->n_mv_tm);
  /* the rows it loses: their sleepers are counted by the band that gains them */
  int y0 = bs->y0, y1 = bs->y1;
  if (ny0 > y0) count_sleepers(T, bs, y0, ny0 < y1 ? ny0 : y1, -1);
  if (ny1 < y1) count_sleepers(T, bs, ny1 > y0 ? ny1 : y0, y1, -1);
}

static int pe_by_key(const void *a, const void *b) {
  int64_t x = (*(wf_pe *const *)a)->key, y = (*(wf_pe *const *)b)->key;
  return (x > y) - (x < y);
}

static int rt_by_key(const void *a, const void *b) {
  int64_t x = (*(wf_router *const *)a)->key, y = (*(wf_router *const *)b)->key;
  return (x > y) - (x < y);
}

static void timer_push(wf_sim *s, wf_pe *p) {
  int i = s->n_timers++;
  while (i > 0 && wf_sim_timer_before(p, s->timers[(i - 1) / 2])) {
    s->timers[i] = s->timers[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->timers[i] = p;
}

/* The arrays a band's lists live in hold every PE of its rows (and one more). */
static void reserve(wf_threads *T, wf_band *b, int rows) {
  wf_sim *bs = &b->sim;
  size_t need = (size_t)rows * (size_t)T->s->w + 1;
  if (need <= b->cap) return;
  b->cap = need;
#define GROW(a)                                      \
  do {                                               \
    bs->a = realloc(bs->a, need * sizeof *bs->a);    \
    WF_ASSERT(bs->a != NULL);                        \
  } while (0)
  GROW(act_pe);
  GROW(soft_woken);
  GROW(timers);
  GROW(slept);
  GROW(act_rt);
  GROW(rt_now);
  GROW(rt_join);
  GROW(emptied);
#undef GROW
}

/* arr[0..n0) is sorted by key; the newcomers arr[n0..n) are sorted (cmp) and merged in from the
 * end, through the scratch array tmp (PEs or routers alike: both have int64 keys). */
#define MERGE_BY_KEY(arr, n0, n, tmp, cmp)                                                    \
  do {                                                                                       \
    int m_ = (n) - (n0);                                                                     \
    if (!m_) break;                                                                          \
    qsort((arr) + (n0), (size_t)m_, sizeof *(arr), cmp);                                     \
    memcpy((tmp), (arr) + (n0), (size_t)m_ * sizeof *(tmp));                                 \
    int i_ = (n0) - 1, j_ = m_ - 1, k_ = (n0) + m_ - 1;                                      \
    while (j_ >= 0) {                                                                        \
      if (i_ >= 0 && (arr)[i_]->key > (tmp)[j_]->key) (arr)[k_--] = (arr)[i_--];             \
      else (arr)[k_--] = (tmp)[j_--];                                                        \
    }                                                                                        \
  } while (0)

/* Step 2, once every band has left: what enters its rows joins its lists, by key. */
void wf_split_join(wf_threads *T, wf_band *b) {
  wf_sim *bs = &b->sim;
  int ny0 = T->ny[b->k], ny1 = T->ny[b->k + 1], y0 = bs->y0, y1 = bs->y1;
  reserve(T, b, ny1 - ny0);
  /* PEs and routers coming in: appended, sorted by key, merged from the end */
  int n0 = bs->n_act_pe, r0 = bs->n_act_rt;
  for (int j = 0; j < T->nb; j++) {
    const wf_band *o = T->b[j];
    if (o == b) continue;
    for (int i = 0; i < o->n_mv_pe; i++)
      if (in_rows(T, o->mv_pe[i], ny0, ny1)) bs->act_pe[bs->n_act_pe++] = o->mv_pe[i];
    for (int i = 0; i < o->n_mv_rt; i++)
      if (in_rows(T, o->mv_rt[i], ny0, ny1)) bs->act_rt[bs->n_act_rt++] = o->mv_rt[i];
    for (int i = 0; i < o->n_mv_tm; i++)
      if (in_rows(T, o->mv_tm[i], ny0, ny1)) bs->timers[bs->n_timers++] = o->mv_tm[i];
  }
  MERGE_BY_KEY(bs->act_pe, n0, bs->n_act_pe, bs->soft_woken, pe_by_key);
  MERGE_BY_KEY(bs->act_rt, r0, bs->n_act_rt, bs->rt_join, rt_by_key);
  if (bs->n_timers) { /* the heap, rebuilt (its order is by busy_until, key) */
    int n = bs->n_timers;
    wf_pe **tmp = bs->soft_woken;
    memcpy(tmp, bs->timers, (size_t)n * sizeof *tmp);
    bs->n_timers = 0;
    for (int i = 0; i < n; i++) timer_push(bs, tmp[i]);
  }
  /* the rows it gains: their sleepers */
  if (ny0 < y0) count_sleepers(T, bs, ny0, ny1 < y0 ? ny1 : y0, +1);
  if (ny1 > y1) count_sleepers(T, bs, ny0 > y1 ? ny0 : y1, ny1, +1);
  bs->y0 = ny0;
  bs->y1 = ny1;
  /* the full buffers across its new edges that it pops */
  const wf_sim *s = T->s;
  int full = 0;
  for (int x = 0; x < s->w; x++) {
    const wf_router *r = ny0 > 0 ? s->routers[(size_t)ny0 * s->w + x] : NULL;
    for (int c = 0; r && c < r->nlc; c++) full += r->rc[c].in[WF_DIR_N].count >= s->depth;
    r = ny1 < s->h ? s->routers[(size_t)(ny1 - 1) * s->w + x] : NULL;
    for (int c = 0; r && c < r->nlc; c++) full += r->rc[c].in[WF_DIR_S].count >= s->depth;
  }
  b->n_full = full;
}
