/* Programs by shape (see lower_collective.h): every distinct route rule and step of code of
 * a line's PEs, written once per shape of the PEs that have it.
 *
 * A shape is [x>=a, x<=b, x%M>=lo, x%M<=hi, x%s==lo%s]: the members a..b of a stretch of the
 * line over which the set repeats with period M, whose residues form a run of step s (1, or 2
 * for every other PE: the odd links of a chain between group leaders). For each set the
 * period with the fewest shapes wins, among 1..8 and the periods the caller names. Bounds the
 * residues already imply are left out, so a binary tree's level is one or two conditions.
 * With wf_shapes_sets, a feature that would need more than two shapes, and fewer lines as a
 * set of coordinates, is one line guarded by `[x in sK]` (an Auto-Gen tree's roles, which no
 * period describes). */
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_collective_shapes.h"
#include "waferc/diag.h"

typedef struct shape { int a, b, M, lo, hi, s; } shape; /* a, b: the first and last member */

typedef struct feature {
  uint32_t key;
  uint8_t *set;  /* n flags */
  shape *sh;     /* after plan */
  int n_sh;
  int as_set;    /* after plan: one `x in SET` guard instead of the shapes */
} feature;

typedef struct fset {
  feature *f;
  int n, cap;
} fset;

struct wf_shapes {
  int n;
  fset rules, steps;
  int *seq, n_seq, cap_seq; /* the PEs' steps (feature indices), PE by PE */
  int *start;               /* start[pe]: first of its steps in seq; n + 1 entries */
  int last_pe;
  int mods[64], n_mods;
  int *order;               /* the steps in emission order */
  wf_pe_class *sets;        /* when not NULL: a feature whose PEs need more than 2 shapes and
                               fewer lines as a set gets a .set in this class instead */
};

wf_shapes *wf_shapes_new(int n) {
  wf_shapes *s = calloc(1, sizeof *s);
  WF_ASSERT(s); /* out of host memory: exit 7 */
  s->n = n;
  s->start = calloc((size_t)n + 1, sizeof *s->start);
  WF_ASSERT(s->start); /* out of host memory: exit 7 */
  s->last_pe = -1;
  for (int M = 1; M <= 8 && M <= n; M++) s->mods[s->n_mods++] = M;
  return s;
}

static void fset_free(fset *fs) {
  for (int i = 0; i < fs->n; i++) {
    free(fs->f[i].set);
    free(fs->f[i].sh);
  }
  free(fs->f);
}

void wf_shapes_free(wf_shapes *s) {
  if (!s) return;
  fset_free(&s->rules);
  fset_free(&s->steps);
  free(s->seq);
  free(s->start);
  free(s->order);
  free(s);
}

void wf_shapes_period(wf_shapes *s, int M) {
  if (M < 1 || M > s->n) return;
  for (int i = 0; i < s->n_mods; i++)
    if (s->mods[i] == M) return;
  if (s->n_mods < (int)(sizeof s->mods / sizeof s->mods[0])) s->mods[s->n_mods++] = M;
}

void wf_shapes_sets(wf_shapes *s, wf_pe_class *cls) { s->sets = cls; }

/* index of `key` in fs (added, with an empty set, when new), or -1 out of memory */
static int fset_find(fset *fs, int n, uint32_t key) {
  for (int i = fs->n - 1; i >= 0; i--)
    if (fs->f[i].key == key) return i;
  if (fs->n == fs->cap) {
    int cap = fs->cap ? 2 * fs->cap : 32;
    feature *nf = realloc(fs->f, (size_t)cap * sizeof *nf);
    WF_ASSERT(nf); /* out of host memory: exit 7 */
    fs->f = nf;
    fs->cap = cap;
  }
  feature *f = &fs->f[fs->n];
  memset(f, 0, sizeof *f);
  f->key = key;
  if (!(f->set = calloc((size_t)n, 1))) return -1;
  return fs->n++;
}

int wf_shapes_rule(wf_shapes *s, int pe, uint32_t key) {
  int i = fset_find(&s->rules, s->n, key);
  if (i < 0) return -1;
  s->rules.f[i].set[pe] = 1;
  return 0;
}

int wf_shapes_step(wf_shapes *s, int pe, uint32_t key) {
  WF_ASSERT(pe >= s->last_pe && pe < s->n); /* PE by PE */
  while (s->last_pe < pe) s->start[++s->last_pe] = s->n_seq;
  int i = fset_find(&s->steps, s->n, key);
  if (i < 0) return -1;
  if (s->n_seq == s->cap_seq) {
    int cap = s->cap_seq ? 2 * s->cap_seq : 256;
    int *ns = realloc(s->seq, (size_t)cap * sizeof *ns);
    WF_ASSERT(ns); /* out of host memory: exit 7 */
    s->seq = ns;
    s->cap_seq = cap;
  }
  s->seq[s->n_seq++] = i;
  s->steps.f[i].set[pe] = 1;
  return 0;
}

/* ---- covers ----------------------------------------------------------------------------- */

static int on_run(const shape *sh, int x) {
  int r = x % sh->M;
  return r >= sh->lo && r <= sh->hi && (r - sh->lo) % sh->s == 0;
}

/* Covers the members of T (n flags) with disjoint shapes of modulus M: the line is cut into
 * stretches over which T repeats with period M, and the residues of a stretch into runs of
 * step 1 or 2. Writes them to out (when not NULL) and returns how many. mark: M zeroed bytes. */
static int cover(const uint8_t *T, int n, int M, uint8_t *mark, shape *out) {
  int count = 0, x = 0;
  while (x < n && !T[x]) x++;
  while (x < n) {
    int A = x, e = A;
    while (e < n && (e < A + M || T[e] == T[e - M])) e++;
    int B = e - 1;
    while (!T[B]) B--;
    int wend = A + M - 1 < B ? A + M - 1 : B;
    for (int u = A; u <= wend; u++) mark[u % M] = T[u];
    for (int r = 0; r < M; r++) {
      if (mark[r] != 1) continue;
      shape sh = {-1, -1, M, r, r, 1};
      for (int step = 1; step <= 2 && step < M; step++) {
        if (M % step) continue;
        int h = r;
        while (h + step < M && mark[h + step] == 1) h += step;
        if (h > sh.hi) sh.hi = h, sh.s = step;
      }
      for (int q = sh.lo; q <= sh.hi; q += sh.s) mark[q] = 2;
      if (out) {
        for (int u = A; u <= wend && sh.a < 0; u++)
          if (on_run(&sh, u)) sh.a = u;
        for (int u = B; u >= A && sh.b < 0; u--)
          if (on_run(&sh, u)) sh.b = u;
        out[count] = sh;
      }
      count++;
    }
    for (int u = A; u <= wend; u++) mark[u % M] = 0;
    x = e;
    while (x < n && !T[x]) x++;
  }
  return count;
}

static int plan_cover(wf_shapes *s, feature *f, uint8_t *mark) {
  int best = -1, bm = 1;
  for (int i = 0; i < s->n_mods; i++) {
    int c = cover(f->set, s->n, s->mods[i], mark, NULL);
    if (best < 0 || c < best) best = c, bm = s->mods[i];
  }
  if (!(f->sh = malloc((size_t)(best > 0 ? best : 1) * sizeof *f->sh))) return -1;
  f->n_sh = cover(f->set, s->n, bm, mark, f->sh);
  if (s->sets && f->n_sh > 2) { /* one guarded line and the set's (12 runs or more a line) */
    int runs = 0;
    for (int x = 0; x < s->n; x++) runs += f->set[x] && (!x || !f->set[x - 1]);
    if (2 + runs / 12 < f->n_sh) {
      f->as_set = 1;
      return 2 + runs / 12;
    }
  }
  return f->n_sh;
}

/* A topological order of the steps (the PEs' sequences as edges), first made first among
 * the ready ones; 0, or -1 when the sequences disagree (a cycle). */
static int order_steps(wf_shapes *s) {
  int d = s->steps.n, rc = -1;
  uint8_t *edge = calloc((size_t)d * (size_t)d + 1, 1);
  int *indeg = calloc((size_t)d + 1, sizeof *indeg);
  if (!edge || !indeg || !(s->order = malloc((size_t)(d + 1) * sizeof *s->order))) goto out;
  for (int v = 0; v < s->n; v++)
    for (int i = s->start[v] + 1; i < s->start[v + 1]; i++) {
      int a = s->seq[i - 1], b = s->seq[i];
      if (a == b) goto out; /* one step twice on a PE: its two places cannot be one line */
      if (!edge[a * d + b]) edge[a * d + b] = 1, indeg[b]++;
    }
  for (int k = 0; k < d; k++) {
    int pick = -1;
    for (int i = 0; i < d && pick < 0; i++)
      if (indeg[i] == 0) pick = i;
    if (pick < 0) goto out;
    s->order[k] = pick;
    indeg[pick] = -1;
    for (int i = 0; i < d; i++)
      if (edge[pick * d + i]) indeg[i]--;
  }
  rc = 0;
out:
  free(edge);
  free(indeg);
  return rc;
}

int wf_shapes_plan(wf_shapes *s) {
  while (s->last_pe < s->n - 1) s->start[++s->last_pe] = s->n_seq;
  s->start[s->n] = s->n_seq;
  if (order_steps(s)) return -1;
  uint8_t *mark = calloc((size_t)s->n + 1, 1);
  WF_ASSERT(mark); /* out of host memory: exit 7 */
  int total = 0;
  for (int k = 0; k < 2 && total >= 0; k++) {
    fset *fs = k ? &s->steps : &s->rules;
    for (int i = 0; i < fs->n && total >= 0; i++) {
      int c = plan_cover(s, &fs->f[i], mark);
      total = c < 0 ? -1 : total + c;
    }
  }
  free(mark);
  return total;
}

/* ---- emission --------------------------------------------------------------------------- */

static wf_pe_guard shape_guard(const wf_coll_line *ln, const shape *s, int with_fixed) {
  wf_pe_guard g = wf_guard0();
  if (s->a == s->b) {
    wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_EQ, wf_term_int(s->a));
  } else {
    /* a bound the residues already imply is left out */
    int r = s->b % s->M, next = r + s->s <= s->hi ? s->b + s->s : s->b - r + s->M + s->lo;
    if (s->a != s->lo) wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_GE, wf_term_int(s->a));
    if (next < ln->n) wf_guard_add(&g, wf_coll_coord(ln, 0), WF_CMP_LE, wf_term_int(s->b));
    if (s->M > 1 && s->lo == s->hi) {
      wf_guard_add(&g, wf_coll_coord(ln, s->M), WF_CMP_EQ, wf_term_int(s->lo));
    } else if (s->M > 1) {
      if (s->lo > 0) wf_guard_add(&g, wf_coll_coord(ln, s->M), WF_CMP_GE, wf_term_int(s->lo));
      if (s->hi < s->M - 1) wf_guard_add(&g, wf_coll_coord(ln, s->M), WF_CMP_LE, wf_term_int(s->hi));
      if (s->s > 1) wf_guard_add(&g, wf_coll_coord(ln, s->s), WF_CMP_EQ, wf_term_int(s->lo % s->s));
    }
  }
  for (int i = 0; with_fixed && i < ln->fixed.n; i++)
    wf_guard_add(&g, ln->fixed.c[i].a, ln->fixed.c[i].cmp, ln->fixed.c[i].b);
  return g;
}

/* The guards of f (fixed conditions too when with_fixed); *n gets how many. A set feature's
 * one guard names its set, added to the class. */
static void feature_guards(wf_shapes *s, const wf_coll_line *ln, const feature *f, int with_fixed,
                           wf_pe_guard *g, int *n) {
  if (!f->as_set) {
    for (int i = 0; i < f->n_sh; i++) g[i] = shape_guard(ln, &f->sh[i], with_fixed);
    *n = f->n_sh;
    return;
  }
  g[0] = wf_guard0();
  wf_guard_add_in(&g[0], wf_coll_coord(ln, 0), wf_pe_class_add_set(s->sets, f->set, s->n));
  for (int i = 0; with_fixed && i < ln->fixed.n; i++)
    wf_guard_add(&g[0], ln->fixed.c[i].a, ln->fixed.c[i].cmp, ln->fixed.c[i].b);
  *n = 1;
}

/* The guards must select exactly the set: checked on every coordinate of the line (its
 * fixed conditions aside), so a wrong shape is a compiler error, never a wrong program. */
static void check(wf_shapes *s, const wf_coll_line *ln, const feature *f, const wf_pe_guard *g, int ng) {
  for (int x = 0; x < ln->n; x++) {
    wf_pe_env e = wf_pe_env_at(s->sets, 0, 0, 0, 0);
    if (ln->axis == WF_AXIS_Y) e.y = x;
    else e.x = x;
    int hits = 0;
    for (int i = 0; i < ng; i++) hits += wf_guard_eval(&g[i], &e);
    WF_ASSERT(hits == f->set[x]);
  }
}

static void emit_feature(wf_shapes *s, const wf_coll_line *ln, const feature *f,
                         void (*fn)(void *ctx, const wf_pe_guard *g, uint32_t key), void *ctx) {
  int ng = f->as_set ? 1 : f->n_sh;
  wf_pe_guard *g = malloc((size_t)(ng > 0 ? ng : 1) * sizeof *g);
  WF_ASSERT(g != NULL);
  feature_guards(s, ln, f, 0, g, &ng);
  check(s, ln, f, g, ng);
  feature_guards(s, ln, f, 1, g, &ng);
  for (int i = 0; i < ng; i++) fn(ctx, &g[i], f->key);
  free(g);
}

void wf_shapes_emit(wf_shapes *s, const wf_coll_line *ln,
                    void (*rule)(void *ctx, const wf_pe_guard *g, uint32_t key),
                    void (*step)(void *ctx, const wf_pe_guard *g, uint32_t key), void *ctx) {
  WF_ASSERT(ln->n == s->n && s->order);
  for (int i = 0; i < s->rules.n; i++) emit_feature(s, ln, &s->rules.f[i], rule, ctx);
  for (int k = 0; k < s->steps.n; k++) emit_feature(s, ln, &s->steps.f[s->order[k]], step, ctx);
}
