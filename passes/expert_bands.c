/* expert-bands: expert parallelism for MoE blocks. The experts move off the whole mesh
 * onto bands of its rows, each band running its own experts while the others run theirs
 * (docs/moe-plans.md, "Experts on bands").
 *
 * An MoE block ends in a sum of terms, one per expert: y = t_0 + t_1 + ... with
 * t_e = mul(gate_e, expert_e(x)) in the dense style (partition_moe's combine gives every export
 * this shape), or expert e's outputs scattered into a [T, E] matrix of zeros in the sparse
 * style. The ops that only term e reaches, walking back from it to the values the terms share
 * (x, the router's gates) and to constants, are expert e's when they hold a matmul by a
 * weight and the term reaches the router (an op other terms reach too; when no term does, as
 * in a pipeline stage whose gates are an argument, every such term); other terms (a constant,
 * a shared expert) stay on the mesh and join the sum last.
 * With N >= 2 experts on an H >= 2-row mesh there are G bands: G = gcd(N, H) when it is 2 or
 * more, band g the region rect(0, g H/G, W, H/G) holding experts g N/G .. (g + 1) N/G - 1;
 * else G uneven bands (H = q G + r: the first r bands have q + 1 rows, the others q; N = a G + s:
 * the first s bands hold a + 1 experts, the others a), G the count whose most loaded band has
 * the fewest experts per row (bands(); option `rank` = k takes the (k+1)-th count in that
 * order instead, which waferc tries when a plan does not fit):
 *
 *   - every value expert e computes, and every constant only its band reads, moves to the
 *     band's region, laid out as before (a constant other bands or the mesh also read is
 *     copied);
 *   - each value the band reads from the mesh is relaid onto it: `dist.relayout` @mesh ->
 *     @band (the dispatch: the value's blocks gathered along the columns, each band PE keeping
 *     its rows);
 *   - the band sums its experts' terms, and its sum is relaid back onto @mesh (the combine:
 *     a sum along the columns), where the bands' sums are added in band order.
 *
 * The sum's order changes (bands, then experts within a band): equal to the interpreter's
 * within rounding. Every band's ops are lowered as on a W x h mesh, h its height
 * (backend/plan/emit.c), and a PE skips the ops of bands it is not on, so the bands run at once.
 * Bands of two heights are lowered alike (backend/collectives/lower_band.c writes the routes
 * of a height whose bands start off its multiples for their rows).
 *
 * A block whose dispatch and combine are capacity einsums (Switch, GShard: one product over
 * every (expert, slot) pair) is first split into one product per expert (split_einsums below),
 * which makes its combine such a sum.
 *
 * It runs after partition and moe-routes, before lower-gemm (which chooses each GEMM for its
 * band's size). It is not in the default pipeline: `waferc --expert-parallel` adds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "waferc/pass.h"
#include "ir/rules.h"

static const char *const stats[] = {"blocks", "experts", "bands"};

#define MAX_TERMS 256

typedef struct tree {
  wf_op *root;
  wf_value term[MAX_TERMS]; int n;
  int expert[MAX_TERMS]; /* term i is an expert's: it moves to a band (else it stays on the mesh) */
  wf_op *adds[MAX_TERMS]; int n_adds; /* the sum's add ops, root included */
} tree;

/* The terms of the sum rooted at op: operands of adds, descending into adds whose only use is
 * the sum; 0 when a term is not of the root's type (a broadcast) or there are too many. */
static int collect(const wf_func *f, wf_op *op, const wf_type *rt, tree *t) {
  if (t->n_adds == MAX_TERMS) return 0;
  t->adds[t->n_adds++] = op;
  for (int i = 0; i < 2; i++) {
    wf_value v = op->operands[i];
    wf_op *a = wf_def_of(f, v, WF_OP_ADD);
    if (a && wf_value_use_count(f, v) == 1 && wf_type_equal(wf_value_type(f, v), rt)) {
      if (!collect(f, a, rt, t)) return 0;
    } else {
      if (t->n == MAX_TERMS || !wf_type_equal(wf_value_type(f, v), rt)) return 0;
      t->term[t->n++] = v;
    }
  }
  return 1;
}

/* Band g of G on an n-row span (experts or rows): its first index and its count, the first
 * n mod G bands one more than the others. */
static int split_at(int g, int G, int n) { return g * (n / G) + (g < n % G ? g : n % G); }
static int split_len(int g, int G, int n) { return n / G + (g < n % G); }

/* The load of G bands for n experts on H rows: the most experts per row of any band (the
 * first bands both a row taller and an expert more), as the fraction e / h. A band's experts
 * take about experts / rows of the time one takes on the whole mesh, so that band ends the
 * run. */
static void load_of(int G, int n, int H, int *e, int *h) {
  *e = split_len(0, G, n), *h = split_len(0, G, H);
  for (int g = 1; g < G; g++)
    if ((int64_t)split_len(g, G, n) * *h > (int64_t)*e * split_len(g, G, H)) *e = split_len(g, G, n), *h = split_len(g, G, H);
}

/* Whether G bands come before G2 in the order counts are tried: the smaller load first, the
 * more bands among equal loads. */
static int before(int G, int G2, int n, int H) {
  int e, h, e2, h2;
  load_of(G, n, H, &e, &h);
  load_of(G2, n, H, &e2, &h2);
  int64_t a = (int64_t)e * h2, b = (int64_t)e2 * h;
  return a < b || (a == b && G > G2);
}

/* How many bands for n experts on H rows: the rank-th count (from 0) in the order `before`
 * gives, among 2 .. min(n, H); 1 (no bands) past the last. Rank 0 is the count whose most
 * loaded band has the fewest experts per row. Where gcd(n, H) >= 2 that is the gcd (equal
 * bands, every band at n / H, and no more bands can be); else uneven: 5 experts on 8 rows take
 * 3 bands (rows 3+3+2, experts 2+2+1: 2/3 per row) where 5 bands of 2+2+2+1+1 rows would put an
 * expert on one row. Later ranks are what waferc tries when a plan does not fit (a band's
 * colors and SRAM depend on its height and experts). */
static int bands(int n, int H, int rank) {
  int cand[64], nc = 0;
  for (int G = 2; G <= n && G <= H && nc < 64; G++) {
    int i = nc++;
    while (i > 0 && before(G, cand[i - 1], n, H)) cand[i] = cand[i - 1], i--;
    cand[i] = G;
  }
  return rank < nc ? cand[rank] : 1;
}

/* A band's region: found by its rect, else added as experts<g> (or a free name). */
static int band_region(wf_module *m, const wf_region *mesh, int g, int G, wf_loc loc) {
  int y = mesh->y + split_at(g, G, mesh->h), th = split_len(g, G, mesh->h);
  for (int r = 0; r < m->n_regions; r++) {
    const wf_region *q = &m->regions[r];
    if (q->x == mesh->x && q->y == y && q->w == mesh->w && q->h == th && !strncmp(wf_str(m, q->name), "experts", 7))
      return r;
  }
  char name[48];
  snprintf(name, sizeof name, "experts%d", g);
  for (int k = 1; wf_module_find_region(m, name) >= 0; k++) snprintf(name, sizeof name, "experts%d_%d", g, k);
  return wf_module_add_region(m, name, mesh->x, y, mesh->w, th, loc);
}

static wf_type on_region(const wf_type *t, int region) {
  wf_type r = *t;
  r.layout.region = region;
  return r;
}

typedef struct ctx {
  wf_module *m;
  wf_func *f;
  int *reach;     /* per value: how many terms reach its defining op */
  int *who;       /* per value: the last term that reached it */
  int *stamp;     /* per value: the walk that last visited it */
  wf_value *stack;
} ctx;

/* Walks back from term i's value to arguments and constants, each op once per walk_id.
 * count: marks every op reached (reach, who); else stops at the first op another term
 * reaches too and returns 1 (term i reaches the router). */
static int walk(ctx *c, int i, int walk_id, wf_value from, int count) {
  int sp = 0;
  c->stack[sp++] = from;
  while (sp) {
    wf_value v = c->stack[--sp];
    const wf_value_info *vi = &c->f->values[v];
    if (vi->kind != WF_VAL_RESULT || !vi->def) continue;
    wf_op *d = vi->def;
    wf_value key = d->results[0];
    if (c->stamp[key] == walk_id) continue;
    c->stamp[key] = walk_id;
    if (!count && c->reach[key] >= 2) return 1;
    if (count) {
      c->reach[key]++;
      c->who[key] = i;
    }
    for (int k = 0; k < d->n_operands; k++) c->stack[sp++] = d->operands[k];
  }
  return 0;
}

static int is_private(const ctx *c, const wf_op *op, int i) {
  return op->n_results > 0 && c->reach[op->results[0]] == 1 && c->who[op->results[0]] == i;
}

/* Whether a matmul with a constant operand (an expert's weight) is among term i's own ops. */
static int has_weight_gemm(const ctx *c, int i) {
  wf_func_foreach_op(c->f, op) {
    if (op->code != WF_OP_MATMUL || !is_private(c, op, i)) continue;
    for (int k = 0; k < op->n_operands; k++)
      if (c->f->values[op->operands[k]].kind == WF_VAL_GLOBAL && wf_value_type(c->f, op->operands[k])->rank >= 2)
        return 1;
  }
  return 0;
}

/* Whether every use of an expert's op's results stays within its term (or is the sum). */
static int closed(const ctx *c, const tree *t) {
  wf_func_foreach_op(c->f, u) {
    int sum = 0;
    for (int a = 0; a < t->n_adds; a++) sum |= u == t->adds[a];
    for (int k = 0; k < u->n_operands; k++) {
      const wf_value_info *vi = &c->f->values[u->operands[k]];
      if (vi->kind != WF_VAL_RESULT || !vi->def) continue;
      wf_value key = vi->def->results[0];
      if (c->reach[key] != 1) continue;
      int i = c->who[key];
      if (!t->expert[i] || is_private(c, u, i)) continue;
      if (sum && u->operands[k] == t->term[i]) continue;
      return 0;
    }
  }
  return 1;
}

/* Whether every use of global value gv is by an op of `band` (band_of: op -> band, -1 = mesh). */
static int global_only_in(const ctx *c, wf_value gv, const int *band_of_term, int band) {
  wf_func_foreach_op(c->f, u) {
    for (int k = 0; k < u->n_operands; k++) {
      if (u->operands[k] != gv) continue;
      if (u->n_results == 0 || c->reach[u->results[0]] != 1) return 0;
      if (band_of_term[c->who[u->results[0]]] != band) return 0;
    }
  }
  return 1;
}

/* The constant gv on the band's region: moved there when `share` (only the band reads it), else
 * a copy holding the same data as the original holds it (a splat stays one element, a file is
 * read when the copy is). */
static wf_value band_global(ctx *c, wf_value gv, int region, int share) {
  wf_module *m = c->m;
  int g = c->f->values[gv].index;
  if (share) {
    m->globals[g].type.layout.region = region;
    wf_value_get(c->f, gv)->type.layout.region = region;
    return gv;
  }
  wf_type t = on_region(&m->globals[g].type, region);
  char base[96], name[128];
  snprintf(base, sizeof base, "%s_%s", wf_str(m, m->globals[g].name), wf_str(m, m->regions[region].name));
  snprintf(name, sizeof name, "%s", base);
  for (int i = 1; wf_module_find_global(m, name) >= 0; i++) snprintf(name, sizeof name, "%s.%d", base, i);
  int ng = wf_module_add_global(m, name, t, m->globals[g].loc);
  const wf_global *src = &m->globals[g];
  m->globals[ng].kind = src->kind;
  m->globals[ng].data = src->data;
  m->globals[ng].path = src->path;
  m->globals[ng].offset = src->offset;
  return wf_func_global_value(c->f, ng);
}

/* Whether op is one of band g's (a private op of one of its terms). */
static int in_band(const ctx *c, const wf_op *op, const int *band_of_term, int g) {
  if (op->n_results == 0 || c->reach[op->results[0]] != 1) return 0;
  int i = c->who[op->results[0]];
  return i >= 0 && band_of_term[i] == g && is_private(c, op, i);
}

/* The order on the PEs: every dispatch first (the columns' gathers need every PE), then each
 * band's ops (a PE skips the other bands'), then the combines. A dispatch or combine between
 * two bands' ops would hold every band until the band before it ended. */
static void rewrite(ctx *c, tree *t, const wf_region *mesh, int mesh_region, int G, wf_pass_ctx *pctx) {
  wf_func *f = c->f;
  int n = 0;
  int band_of_term[MAX_TERMS], region[MAX_TERMS], ex[MAX_TERMS];
  for (int i = 0; i < t->n; i++)
    if (t->expert[i]) ex[n++] = i;
  for (int i = 0; i < t->n; i++) band_of_term[i] = -1;
  for (int g = 0; g < G; g++)
    for (int j = split_at(g, G, n); j < split_at(g, G, n) + split_len(g, G, n); j++) band_of_term[ex[j]] = g;
  wf_op *at = t->root;
  int n_ops = 0;
  wf_func_foreach_op(f, op) n_ops++;
  wf_op **list = malloc((size_t)(n_ops + 1) * sizeof *list);
  int *start = malloc((size_t)(G + 1) * sizeof *start);
  WF_ASSERT(list && start);
  /* each band's ops, in program order, moved before the root band by band */
  int nl = 0;
  for (int g = 0; g < G; g++) {
    region[g] = band_region(c->m, mesh, g, G, t->root->loc);
    start[g] = nl;
    wf_func_foreach_op(f, op) if (in_band(c, op, band_of_term, g)) list[nl++] = op;
  }
  start[G] = nl;
  for (int k = 0; k < nl; k++) {
    wf_op_unlink(f, list[k]);
    wf_op_insert_before(f, at, list[k]);
  }
  /* what each band reads from outside it: constants onto the band (moved or copied), values
   * relaid onto it, the relayouts of one value next to each other */
  typedef struct need { wf_value v; int g; wf_value nv; } need;
  int cap = 64, nn = 0;
  need *nd = malloc((size_t)cap * sizeof *nd);
  WF_ASSERT(nd);
  for (int g = 0; g < G; g++)
    for (int k = start[g]; k < start[g + 1]; k++) {
      wf_op *op = list[k];
      for (int a = 0; a < op->n_operands; a++) {
        wf_value v = op->operands[a];
        const wf_value_info *vi = &f->values[v];
        if (vi->kind == WF_VAL_RESULT && vi->def && in_band(c, vi->def, band_of_term, g)) continue;
        int j = 0;
        while (j < nn && !(nd[j].v == v && nd[j].g == g)) j++;
        if (j == nn) {
          if (nn == cap) {
            nd = realloc(nd, (size_t)(cap *= 2) * sizeof *nd);
            WF_ASSERT(nd);
          }
          nd[nn++] = (need){v, g, 0};
          if (vi->kind == WF_VAL_GLOBAL) nd[j].nv = band_global(c, v, region[g], global_only_in(c, v, band_of_term, g));
        }
      }
    }
  for (int j = 0; j < nn; j++) {
    if (nd[j].nv) continue;
    for (int k = j; k < nn; k++) { /* every band's relayout of this value, in band order */
      if (nd[k].v != nd[j].v || nd[k].nv) continue;
      wf_type bt = on_region(wf_value_type(f, nd[k].v), region[nd[k].g]);
      nd[k].nv = wf_op_insert_new(f, list[0], WF_OP_DIST_RELAYOUT, 1, &nd[k].v, bt, t->root->loc);
    }
  }
  for (int g = 0; g < G; g++)
    for (int k = start[g]; k < start[g + 1]; k++) {
      wf_op *op = list[k];
      for (int a = 0; a < op->n_operands; a++)
        for (int j = 0; j < nn; j++)
          if (nd[j].g == g && nd[j].v == op->operands[a]) {
            wf_op_set_operand(f, op, a, nd[j].nv);
            break;
          }
      for (int r = 0; r < op->n_results; r++) wf_value_get(f, op->results[r])->type.layout.region = region[g];
    }
  free(nd);
  free(list);
  free(start);
  /* each band's sum of its terms, then each relaid back onto the mesh, then their sum */
  wf_value part[MAX_TERMS] = {0}, sums[MAX_TERMS] = {0};
  for (int g = 0; g < G; g++) {
    wf_type rt = on_region(wf_value_type(f, t->root->results[0]), region[g]);
    int j0 = split_at(g, G, n);
    part[g] = t->term[ex[j0]];
    for (int j = j0 + 1; j < j0 + split_len(g, G, n); j++) {
      wf_value ab[2] = {part[g], t->term[ex[j]]};
      part[g] = wf_op_insert_new(f, at, WF_OP_ADD, 2, ab, rt, t->root->loc);
    }
  }
  wf_type mt = *wf_value_type(f, t->root->results[0]);
  for (int g = 0; g < G; g++) sums[g] = wf_op_insert_new(f, at, WF_OP_DIST_RELAYOUT, 1, &part[g], mt, t->root->loc);
  wf_value y = sums[0];
  for (int g = 1; g < G; g++) {
    wf_value ab[2] = {y, sums[g]};
    y = wf_op_insert_new(f, at, WF_OP_ADD, 2, ab, mt, t->root->loc);
  }
  for (int i = 0; i < t->n; i++) /* the terms that stay on the mesh (a shared expert, a constant) */
    if (!t->expert[i]) {
      wf_value ab[2] = {y, t->term[i]};
      y = wf_op_insert_new(f, at, WF_OP_ADD, 2, ab, mt, t->root->loc);
    }
  wf_value old = t->root->results[0];
  wf_value_replace_uses(f, old, y);
  if (f->values[old].name) wf_value_set_name(f, y, wf_str(c->m, f->values[old].name));
  for (int a = 0; a < t->n_adds; a++) wf_op_unlink(f, t->adds[a]);
  wf_pass_stat_add(pctx, "blocks", 1);
  wf_pass_stat_add(pctx, "experts", n);
  wf_pass_stat_add(pctx, "bands", G);
}

/* ---- the capacity einsums, split per expert ------------------------------------------------
 * A Switch / GShard block dispatches and combines by einsums over (expert, slot) pairs, which
 * torch exports as one matmul each:
 *
 *   dispatch  X_e = reshape(slice(reshape(matmul(P, x) -> [N, C, E]), e, axis 0) -> [C, E])
 *   combine   y   = matmul(A, reshape(concat(reshape(o_e -> [1, C, E]), axis 0) -> [N C, E]))
 *
 * (P [N C, T] and A [T, N C] the routing masks). Its sum over the experts is inside one
 * product, so no term is an expert's. Split per expert: X_e = matmul(slice(P, rows e C ..
 * e C + C), x) and y = sum_e matmul(slice(A, columns e C .. e C + C), o_e), which the bands
 * below take like any sum of terms. Only where N experts make bands (at this rank): on the
 * whole mesh N products of C-wide operands cost more than one. */

/* Whether v is an [N C, E] view of N blocks [C, E] stacked along axis 0 (concat of reshapes
 * inserting a leading 1); the blocks in o. */
static int stacked_rows(const wf_func *f, wf_value v, int64_t N_max, wf_value *o, int *n) {
  wf_op *rs = wf_def_of(f, v, WF_OP_RESHAPE);
  wf_op *cat = rs ? wf_def_of(f, rs->operands[0], WF_OP_CONCAT) : NULL;
  if (!cat || wf_op_int(f, cat, "axis", 0) != 0 || cat->n_operands < 2 || cat->n_operands > N_max) return 0;
  const wf_type *ct = wf_value_type(f, cat->results[0]);
  if (ct->rank != 3) return 0;
  for (int i = 0; i < cat->n_operands; i++) {
    wf_op *r = wf_def_of(f, cat->operands[i], WF_OP_RESHAPE);
    const wf_type *ot = r ? wf_value_type(f, r->operands[0]) : NULL;
    if (!ot || ot->rank != 2 || ot->dims[0] != ct->dims[1] || ot->dims[1] != ct->dims[2] ||
        wf_value_type(f, cat->operands[i])->dims[0] != 1)
      return 0;
    o[i] = r->operands[0];
  }
  *n = cat->n_operands;
  return 1;
}

/* A slice's type from its operand's with one dim cut to C: a dim of 1 is whole on every PE, as
 * partition lays it out (a capacity of 1 kept {M_y} rows of padding, which the one-row GEMM
 * after it read as its row on every PE: wrong results on the band's other rows). */
static void one_whole(wf_type *t) {
  for (int d = 0; d < t->rank && t->layout.rank == t->rank; d++)
    if (t->dims[d] == 1) t->layout.dims[d].split = WF_AXIS_NONE;
}

/* A matmul split from mm keeps mm's zero_k (partition_pad.c): the operands it marks still hold
 * the padding along K that the lowering must zero first. */
static void keep_zero_k(wf_func *f, const wf_op *mm, wf_value v) {
  int64_t z = wf_op_int(f, mm, "zero_k", 0);
  if (z) wf_op_set_int(f, wf_def_of(f, v, WF_OP_MATMUL), "zero_k", z);
}

/* The combine at mm split: 1, else 0. */
static int split_combine(wf_func *f, wf_op *mm, int H, int rank) {
  wf_value o[MAX_TERMS];
  int N;
  if (mm->code != WF_OP_MATMUL || !stacked_rows(f, mm->operands[1], MAX_TERMS, o, &N)) return 0;
  const wf_type *at = wf_value_type(f, mm->operands[0]), *yt = wf_value_type(f, mm->results[0]);
  int64_t C = wf_value_type(f, o[0])->dims[0];
  if (at->rank != 2 || yt->rank != 2 || at->dims[1] != N * C || yt->dtype != WF_F32 || bands(N, H, rank) < 2) return 0;
  wf_type st = *at;
  st.dims[1] = C;
  one_whole(&st);
  wf_value acc = 0;
  for (int e = 0; e < N; e++) {
    wf_value p[2] = {wf_op_insert_slice(f, mm, mm->operands[0], st, e * C, e * C + C, 1, 1, mm->loc), o[e]};
    wf_value t = wf_op_insert_new(f, mm, WF_OP_MATMUL, 2, p, *yt, mm->loc);
    keep_zero_k(f, mm, t);
    if (e) {
      wf_value a[2] = {acc, t};
      t = wf_op_insert_new(f, mm, WF_OP_ADD, 2, a, *yt, mm->loc);
    }
    acc = t;
  }
  wf_value_replace_named(f, mm->results[0], acc);
  wf_op_unlink(f, mm);
  wf_func_remove_dead_ops(f); /* the stack, when nothing else reads it */
  return 1;
}

/* The dispatch at rs (the [N C, E] -> [N, C, E] reshape of a matmul) split: 1, else 0. Every
 * use must be one expert's slice, read by one reshape dropping its axis. */
static int split_dispatch(wf_func *f, wf_op *rs, int H, int rank) {
  if (rs->code != WF_OP_RESHAPE) return 0;
  wf_op *mm = wf_def_of(f, rs->operands[0], WF_OP_MATMUL);
  const wf_type *t3 = wf_value_type(f, rs->results[0]);
  if (!mm || wf_value_use_count(f, mm->results[0]) != 1 || t3->rank != 3 || bands((int)t3->dims[0], H, rank) < 2)
    return 0;
  const wf_type *pt = wf_value_type(f, mm->operands[0]);
  int64_t C = t3->dims[1];
  if (pt->rank != 2 || pt->dims[0] != t3->dims[0] * C) return 0;
  int n = 0;
  wf_func_foreach_op(f, u) {
    for (int k = 0; k < u->n_operands; k++) {
      if (u->operands[k] != rs->results[0]) continue;
      int na, ns, nx, nt;
      const int64_t *ax = wf_rule_ints(f, u, "axes", &na), *st = wf_rule_ints(f, u, "starts", &ns);
      const int64_t *en = wf_rule_ints(f, u, "ends", &nx), *sp = wf_rule_ints(f, u, "steps", &nt);
      if (u->code != WF_OP_SLICE || !ax || !st || !en || na != 1 || ns != 1 || nx != 1 || ax[0] != 0 ||
          st[0] < 0 || en[0] != st[0] + 1 || (sp && sp[0] != 1) || wf_value_use_count(f, u->results[0]) != 1)
        return 0;
      n++;
    }
  }
  if (n < 2) return 0;
  /* every slice's one use a reshape to [C, E] */
  wf_func_foreach_op(f, u) {
    if (u->code != WF_OP_SLICE || u->operands[0] != rs->results[0]) continue;
    wf_func_foreach_op(f, r) {
      if (r->n_operands < 1 || r->operands[0] != u->results[0]) continue;
      const wf_type *rt = wf_value_type(f, r->results[0]);
      if (r->code != WF_OP_RESHAPE || rt->rank != 2 || rt->dims[0] != C || rt->dims[1] != t3->dims[2]) return 0;
    }
  }
  wf_type st = *pt;
  st.dims[0] = C;
  one_whole(&st);
  for (wf_op *u = f->first, *next; u; u = next) {
    next = u->next;
    if (u->code != WF_OP_SLICE || u->operands[0] != rs->results[0]) continue;
    int na;
    int64_t e = wf_rule_ints(f, u, "starts", &na)[0];
    wf_op *r = NULL;
    wf_func_foreach_op(f, q) if (q->n_operands >= 1 && q->operands[0] == u->results[0]) r = q;
    wf_value p[2] = {wf_op_insert_slice(f, r, mm->operands[0], st, e * C, e * C + C, 0, 1, r->loc), mm->operands[1]};
    wf_value x = wf_op_insert_new(f, r, WF_OP_MATMUL, 2, p, *wf_value_type(f, r->results[0]), r->loc);
    keep_zero_k(f, mm, x);
    wf_value_replace_named(f, r->results[0], x);
    if (next == r) next = r->next;
    wf_op_unlink(f, r);
    wf_op_unlink(f, u);
  }
  wf_op_unlink(f, rs);
  wf_op_unlink(f, mm);
  return 1;
}

static void split_einsums(wf_func *f, int H, int rank) {
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    if (split_dispatch(f, op, H, rank)) next = f->first;
  }
  for (wf_op *op = f->first, *next; op; op = next) {
    next = op->next;
    split_combine(f, op, H, rank);
  }
}

static void run_func(wf_module *m, wf_func *f, wf_pass_ctx *pctx) {
  int mesh_region = wf_module_find_region(m, "mesh");
  if (mesh_region < 0) return;
  wf_region mesh = m->regions[mesh_region];
  split_einsums(f, mesh.h, (int)wf_pass_opt_int(pctx, "rank"));
  /* the roots: adds whose result is not a term of a larger sum (collect's rule: an add's
   * operand of its type, used once, is part of it) */
  uint8_t *inner = calloc((size_t)f->n_values + 1, 1);
  int cap = 16, nr = 0;
  wf_op **roots = malloc((size_t)cap * sizeof *roots);
  WF_ASSERT(inner && roots);
  wf_func_foreach_op(f, u) {
    if (u->code != WF_OP_ADD) continue;
    for (int k = 0; k < u->n_operands; k++)
      if (wf_def_of(f, u->operands[k], WF_OP_ADD) && wf_value_use_count(f, u->operands[k]) == 1 &&
          wf_type_equal(wf_value_type(f, u->operands[k]), wf_value_type(f, u->results[0])))
        inner[u->operands[k]] = 1;
  }
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_ADD || op->n_results != 1 || inner[op->results[0]]) continue;
    const wf_type *rt = wf_value_type(f, op->results[0]);
    if (rt->layout.rank == 0 || rt->layout.region != mesh_region || rt->dtype != WF_F32) continue;
    if (nr == cap) {
      roots = realloc(roots, (size_t)(cap *= 2) * sizeof *roots);
      WF_ASSERT(roots);
    }
    roots[nr++] = op;
  }
  free(inner);
  size_t nv;
  ctx c = {m, f, NULL, NULL, NULL, NULL};
  for (int r = 0; r < nr; r++) {
    tree *t = calloc(1, sizeof *t);
    WF_ASSERT(t);
    t->root = roots[r];
    const wf_type *rt = wf_value_type(f, roots[r]->results[0]);
    int ok = collect(f, roots[r], rt, t) && t->n >= 2;
    if (ok) {
      nv = (size_t)f->n_values + 1;
      c.reach = calloc(nv, sizeof *c.reach);
      c.who = malloc(nv * sizeof *c.who);
      c.stamp = calloc(nv, sizeof *c.stamp);
      size_t pushes = 16;
      wf_func_foreach_op(f, op) pushes += (size_t)op->n_operands;
      c.stack = malloc(pushes * sizeof *c.stack);
      WF_ASSERT(c.reach && c.who && c.stamp && c.stack);
      for (size_t v = 0; v < nv; v++) c.who[v] = -1;
      for (int i = 0; i < t->n; i++) walk(&c, i, i + 1, t->term[i], 1);
      /* an expert's term: an op of its own that only the sum reads, and a GEMM with a weight
       * among the ops only it reaches */
      int n_ex = 0, routed = 0, routed_of[MAX_TERMS];
      for (int i = 0; i < t->n; i++) {
        const wf_value_info *vi = &f->values[t->term[i]];
        t->expert[i] = vi->kind == WF_VAL_RESULT && vi->def && wf_value_use_count(f, t->term[i]) == 1 &&
                       is_private(&c, vi->def, i) && has_weight_gemm(&c, i);
        routed += routed_of[i] = t->expert[i] && walk(&c, i, t->n + 1 + i, t->term[i], 0);
      }
      /* when no term reaches a router here (it ran in an earlier pipeline stage, its gates an
       * argument), every branch with a weight is an expert */
      for (int i = 0; i < t->n; i++) {
        if (routed) t->expert[i] = routed_of[i];
        n_ex += t->expert[i];
      }
      int G = n_ex >= 2 ? bands(n_ex, mesh.h, (int)wf_pass_opt_int(pctx, "rank")) : 0;
      if (G >= 2 && closed(&c, t)) rewrite(&c, t, &mesh, mesh_region, G, pctx);
      free(c.reach), free(c.who), free(c.stamp), free(c.stack);
    }
    free(t);
  }
  free(roots);
}

static int run(wf_module *m, wf_pass_ctx *ctx) {
  for (int i = 0; i < m->n_funcs; i++) run_func(m, m->funcs[i], ctx);
  return 0;
}

static const wf_pass_option opts[] = {
    {"rank", WF_OPT_INT, "0",
     "which band count: 0 the least loaded, k the (k+1)-th in that order (waferc tries the next when a plan does not fit)"},
};

const wf_pass_info wf_pass_expert_bands = {
    "expert-bands", "Place an MoE block's experts on bands of the mesh's rows, each band running its own",
    opts, 1, stats, 3, run,
};
