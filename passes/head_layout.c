/* head-layout — lays attention's heads out on the mesh's columns so that no head reshape or
 * transpose moves data (WaferLLM §4.1: activations are {B, L_y, E_x}, E = H·D along x).
 *
 * The exporter writes, per head-split projection,
 *   p = matmul(x, W) [+ b] [-> split]        [B, S, H·D]
 *   q = transpose(reshape(p)) {0, 2, 1, 3}  [B, H, S, D]      [-> rope(q, cos, sin)]
 * and after attention transpose + reshape back to [B, S, H·D] into matmul(·, Wo). Every one of
 * those is a relabelling of the columns of p, so the pass rewrites the chain into
 *   p'' = matmul(x, W'') [+ b'']  ->  [rotate_pairs(p'', c'', s'')]  ->  attention {heads, head_dim}
 *       ->  matmul(·, Wo'')
 * on [B, S, E''] tensors that partition lays out like any activation ({B, S_y, E''_x}): the
 * head structure lives in the weights, permuted and padded at compile time. E'' is chosen so
 * that partition's column blocks (E'' / W per PE) fall on heads:
 *   H >= W   every column holds c = ceil(H / W) whole heads: E'' = W c D (phantom heads of
 *            zeros past H when W does not divide H);
 *   H <  W   every head spans g = floor(W / H) columns of b = ceil(D / g) (even under RoPE):
 *            head_dim Dp = g b, E'' = W b (columns past H g hold zeros).
 * Padding columns are zero in W'' and b'', so q, k and v are zero there and add nothing to any
 * dot product; the rows of Wo'' that meet them are zero too.
 *
 * RoPE: a rotate-half head pairs d with d + D/2. Permuting q's and k's columns by the same
 * permutation leaves q·kᵀ unchanged, so W'' puts d at 2d and d + D/2 at 2d + 1: partners are
 * neighbours, on one PE, and the rotation is local (rotate_pairs with tables c'', s'' that carry
 * the angles and signs). The interleaved form already pairs neighbours.
 * GQA / MQA: query head h reads kv head h / (Hq / Hkv). When a column holds whole groups of
 * query heads, their kv heads are packed on it as they are (attention {kv_heads}); otherwise
 * (gqa=replicate) Wk'' and Wv'' replicate a kv head's columns onto each of its query heads'
 * columns, so k and v arrive where q is with no traffic and more projection FLOPs, or
 * (gqa=gather) the kv head is cut over those columns and gathered inside the attention
 * (attention {kv_gather}); gqa=auto predicts both (docs/attention.md).
 * GPT-2's fused QKV (matmul + bias, then split along the last axis) is cut at compile time, and
 * Hugging Face's Conv1D (reshape to [B S, E], Gemm, reshape back) becomes a rank-3 matmul + bias.
 *
 * An attention whose chain is anything else is reported with the reason (exit 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/ops/attention_cost.h"
#include "ir/rules.h"
#include "passes/head_layout.h"
#include "passes/head_view.h"
#include "passes/partition.h"
#include "waferc/diag.h"
#include "waferc/pass.h"
#include "waferc/tensor.h"

static const wf_pass_option hl_opts[] = {
    {"mesh", WF_OPT_STRING, "", "WxH the heads are laid out for (default: the target's mesh)"},
    {"gqa", WF_OPT_STRING, "auto",
     "kv heads whose query heads span columns: replicate (Wk, Wv columns copied), gather (computed once, "
     "gathered inside attention), colocate (computed once, with each query head's pieces packed on the kv "
     "piece's columns: nothing moves) or auto (the cost model's choice of replicate and gather)"},
};
static const char *const hl_stats[] = {"attention-packed", "rope-packed", "gqa-replicated", "gqa-shared",
                                       "conv1d-folded", "gqa-gathered", "attention-unpacked", "gqa-colocated"};

enum { ROPE_NONE, ROPE_HALF, ROPE_INTERLEAVED };

/* A projection: matmul(x, W) [+ b]. */
typedef struct hl_proj {
  wf_value x;
  int w, b;    /* globals: W [E_in, Nw] ([Nw, E_in] when wt); b with Nw elements, or -1 */
  int wt;      /* W is stored transposed (a Gemm with trans_b) */
  wf_loc loc;
} hl_proj;

/* One operand of attention: its projection, the columns it reads, heads, head dim, rotation. */
typedef struct hl_side {
  hl_proj p;
  wf_head_view hv; /* its heads, head dim and the columns they read */
  int rope, cos_g, sin_g;
} hl_side;

typedef struct hl {
  wf_module *m;
  wf_func *f;
  int w, h;
  const char *why; /* the first reason a chain did not match */
  const wf_target *t;
  const char *gqa; /* replicate, gather or auto */
} hl;

static wf_op *def(const hl *c, wf_value v, wf_opcode code) {
  const wf_value_info *vi = wf_value_get(c->f, v);
  return vi->kind == WF_VAL_RESULT && vi->def && vi->def->code == code ? vi->def : NULL;
}

static int global_of(const hl *c, wf_value v) {
  const wf_value_info *vi = wf_value_get(c->f, v);
  if (vi->kind != WF_VAL_GLOBAL || vi->index < 0) return -1;
  const wf_global *g = &c->m->globals[vi->index];
  return g->type.dtype == WF_F32 && g->kind != WF_DATA_ELIDED ? vi->index : -1;
}

/* A RoPE table: a constant, or a reshape of one (raise-rope drops leading 1s so): the data in
 * row-major order is the same. */
static int table_of(const hl *c, wf_value v) {
  wf_op *rs = def(c, v, WF_OP_RESHAPE);
  return global_of(c, rs ? rs->operands[0] : v);
}

static int fail(hl *c, const char *why) {
  if (!c->why) c->why = why;
  return 0;
}

static int last_dim_is(const wf_type *t, int64_t n) { return t->rank >= 1 && t->dims[t->rank - 1] == n; }

/* alpha = 1, beta = 1 (or no C), A not transposed. */
static int plain_gemm(const hl *c, const wf_op *gm) {
  return wf_op_float(c->f, gm, "alpha", 1.0) == 1.0 &&
         (gm->n_operands < 3 || wf_op_float(c->f, gm, "beta", 1.0) == 1.0) && !wf_op_int(c->f, gm, "trans_a", 0);
}

/* Hugging Face's Conv1D as exported: reshape(gemm(reshape(x [B, S, E] -> [B S, E]), W, b)),
 * alpha = beta = 1, trans_a = 0. */
static int match_gemm(hl *c, wf_op *gm, int64_t n, hl_proj *p) {
  if (!plain_gemm(c, gm)) return fail(c, "a Gemm projection with alpha, beta != 1 or trans_a");
  wf_op *in = def(c, gm->operands[0], WF_OP_RESHAPE);
  p->w = global_of(c, gm->operands[1]);
  p->wt = wf_op_int(c->f, gm, "trans_b", 0) != 0;
  p->b = gm->n_operands > 2 ? global_of(c, gm->operands[2]) : -1;
  p->loc = gm->loc;
  if (!in || wf_value_type(c->f, in->operands[0])->rank != 3 || p->w < 0 ||
      c->m->globals[p->w].type.rank != 2 || c->m->globals[p->w].type.dims[p->wt ? 0 : 1] != n ||
      (gm->n_operands > 2 && (p->b < 0 || wf_type_numel(&c->m->globals[p->b].type) != n)))
    return fail(c, "a Gemm projection whose input is not a flattened [B, S, E] or whose weight or bias is not a constant");
  p->x = in->operands[0];
  return 1;
}

/* v = matmul(x, W) [+ b], or a Conv1D's reshape(gemm(reshape(x), W, b)). */
static int match_proj(hl *c, wf_value v, hl_proj *p) {
  p->b = -1;
  wf_op *op;
  const wf_type *vt = wf_value_type(c->f, v);
  int64_t n = vt->dims[vt->rank - 1];
  p->wt = 0;
  wf_op *rs = def(c, v, WF_OP_RESHAPE), *gm = rs ? def(c, rs->operands[0], WF_OP_GEMM) : NULL;
  if (gm) return match_gemm(c, gm, n, p);
  if ((op = def(c, v, WF_OP_ADD)) != NULL) {
    for (int i = 0; i < 2; i++) {
      int g = global_of(c, op->operands[i]);
      if (g < 0 || wf_type_numel(&c->m->globals[g].type) != n || !def(c, op->operands[1 - i], WF_OP_MATMUL)) continue;
      p->b = g;
      v = op->operands[1 - i];
      break;
    }
    if (p->b < 0) return fail(c, "q, k or v is a sum that is not matmul + constant bias");
  }
  if (!(op = def(c, v, WF_OP_MATMUL)))
    return fail(c, "q, k or v is not computed by a matmul with a constant weight (x W [+ b])");
  p->x = op->operands[0];
  p->w = global_of(c, op->operands[1]);
  p->loc = op->loc;
  const wf_type *xt = wf_value_type(c->f, p->x);
  if (p->w < 0 || c->m->globals[p->w].type.rank != 2 || !last_dim_is(&c->m->globals[p->w].type, n) || xt->rank != 3)
    return fail(c, "a q, k or v projection whose weight is not a constant [E, N] or whose input is not [B, S, E]");
  return 1;
}

/* v4 [B, H, S, D] = a head view of a projection, with at most one rope on the way
 * (passes/head_view.c); s->hv.col says which projection column each (head, dim) reads. */
static int match_side(hl *c, wf_value v4, hl_side *s) {
  const char *why = NULL;
  if (!wf_head_view_match(c->m, c->f, v4, &s->hv, &why)) return fail(c, why);
  s->rope = ROPE_NONE;
  wf_op *op = s->hv.rope;
  if (op) {
    s->rope = wf_op_int(c->f, op, "interleaved", 0) ? ROPE_INTERLEAVED : ROPE_HALF;
    s->cos_g = table_of(c, op->operands[1]);
    s->sin_g = table_of(c, op->operands[2]);
    if (s->cos_g < 0 || s->sin_g < 0) return fail(c, "RoPE whose cos/sin tables are not constants");
  }
  if (!match_proj(c, s->hv.p, &s->p)) return 0;
  if (s->hv.transposed) { /* the projection of x itself: its input before the transpose */
    op = def(c, s->p.x, WF_OP_TRANSPOSE);
    if (!op) return fail(c, "a projection of a transposed input that is not matmul(transpose(x), W)");
    s->p.x = op->operands[0];
  }
  return 1;
}

/* ---- the column map ------------------------------------------------------------------------ */

typedef struct hl_map {
  int64_t heads, d, dp, n; /* real heads, head dim, packed head dim, packed width E'' */
  int rope;
  /* K and V gathered (attention {kv_gather}): kv head i cut over gm columns of gsub each, in
   * gparts parts of gpb in-head columns (a query head's parts), each part over gm / gparts
   * columns; 0 = not gathered */
  int64_t gm, gparts, gsub, gpb;
  /* q colocated with the gathered kv pieces (attention {q_colocated}): a column holds the gq
   * query heads of its kv head, gsub in-head columns each, the piece's; 0 = not */
  int64_t gq;
} hl_map;

void wf_head_layout_width(int64_t heads, int64_t d, int rope, int w, int64_t *dp, int64_t *n) {
  *dp = d;
  if (heads >= w) {
    int64_t per = (heads + w - 1) / w;
    *n = (int64_t)w * per * d;
  } else {
    int64_t g = w / heads, b = (d + g - 1) / g;
    if (rope && b % 2) b++;
    *dp = g * b;
    *n = (int64_t)w * b;
  }
}

int wf_head_layout_kv_cut(int64_t heads, int64_t kv_heads, int64_t dp, int64_t n, int rope, int w, int64_t *m,
                          int64_t *parts, int64_t *sub, int64_t *pb) {
  int64_t group = kv_heads > 0 ? heads / kv_heads : 0;
  if (group < 1 || dp < 1 || w < 1) return 0;
  if (heads >= w) { /* c whole heads per column: the group's m = group / c columns */
    int64_t per_col = n / w / dp;
    if (per_col < 1 || group % per_col) return 0;
    *m = group / per_col, *parts = 1, *pb = dp;
  } else { /* a head over g columns: m = group g columns, g parts */
    *parts = w / heads, *m = group * *parts, *pb = dp / *parts;
  }
  int64_t per = *m / *parts;
  *sub = (*pb + per - 1) / per;
  if (rope && *sub % 2) ++*sub; /* RoPE's pairs stay on one PE */
  return *m >= 2 && kv_heads * *m <= w;
}

static hl_map make_map(int64_t heads, int64_t d, int rope, int w) {
  hl_map mp = {heads, d, d, 0, rope, 0, 0, 0, 0, 0};
  wf_head_layout_width(heads, d, rope != ROPE_NONE, w, &mp.dp, &mp.n);
  return mp;
}

/* The original head and in-head index of packed column j, or -1 for padding. `rot`: q and k
 * of a rotate-half RoPE, whose pairs (i, i + D/2) sit at (2i, 2i + 1). */
static int64_t src_of(const hl_map *mp, int64_t j, int rot, int64_t *head) {
  int64_t h = j / mp->dp, r = j % mp->dp;
  if (mp->gm) { /* the gathered form: column x = j / gsub holds piece x % gm of kv head x / gm */
    int64_t gq = mp->gq ? mp->gq : 1, x = j / (gq * mp->gsub), qi = j % (gq * mp->gsub) / mp->gsub;
    int64_t rl = j % mp->gsub, c = x % mp->gm, per = mp->gm / mp->gparts;
    if ((c % per) * mp->gsub + rl >= mp->gpb) return -1;
    /* colocated q: that piece of the kv head's gq query heads, one after another */
    h = (x / mp->gm) * gq + qi, r = (c / per) * mp->gpb + (c % per) * mp->gsub + rl;
  }
  if (h >= mp->heads || r >= mp->d) return -1;
  *head = h;
  if (rot && mp->rope == ROPE_HALF) return r % 2 ? mp->d / 2 + r / 2 : r / 2;
  return r;
}

static int new_global(hl *c, const char *base, const char *tag, int rank, const int64_t *dims, float *data) {
  char name[256];
  snprintf(name, sizeof name, "%s.%s", base, tag);
  return wf_module_add_data_global(c->m, name, wf_type_make(WF_F32, rank, dims), data);
}

/* W'' and b'' of one side: packed column j takes column off + kv_head(h) D + src of W. */
static void pack_side(hl *c, const hl_side *s, const hl_map *mp, int rot, int64_t group, int *wg, int *bg) {
  wf_tensor *w = wf_global_tensor(c->m, s->p.w);
  wf_tensor *b = s->p.b >= 0 ? wf_global_tensor(c->m, s->p.b) : NULL;
  int64_t ein = w->dims[s->p.wt ? 1 : 0], nw = w->dims[s->p.wt ? 0 : 1];
  float *nwd = calloc((size_t)(ein * mp->n), sizeof(float)), *nb = calloc((size_t)mp->n, sizeof(float));
  WF_ASSERT(nwd && nb);
  for (int64_t j = 0; j < mp->n; j++) {
    int64_t h, r = src_of(mp, j, rot, &h);
    if (r < 0) continue;
    int64_t col = s->hv.col[(h / group) * s->hv.d + r];
    for (int64_t e = 0; e < ein; e++)
      nwd[e * mp->n + j] = (float)wf_tensor_get(w, s->p.wt ? col * ein + e : e * nw + col);
    if (b) nb[j] = (float)wf_tensor_get(b, col);
  }
  const char *base = wf_str(c->m, c->m->globals[s->p.w].name);
  int64_t dims[2] = {ein, mp->n};
  *wg = new_global(c, base, "heads", 2, dims, nwd);
  *bg = b ? new_global(c, wf_str(c->m, c->m->globals[s->p.b].name), "heads", 1, &mp->n, nb) : -1;
  free(nwd);
  free(nb);
  wf_tensor_free(w);
  if (b) wf_tensor_free(b);
}

/* c'' and s'' [S, E'']: out[2i] = x[2i] c[2i] + x[2i+1] s[2i], out[2i+1] = x[2i+1] c[2i+1] + x[2i] s[2i+1]. */
static void pack_rope(hl *c, const hl_side *s, const hl_map *mp, int *cg, int *sg) {
  wf_tensor *ct = wf_global_tensor(c->m, s->cos_g), *st = wf_global_tensor(c->m, s->sin_g);
  int64_t d = s->hv.d, len = wf_tensor_numel(ct) / d;
  float *cd = calloc((size_t)(len * mp->n), sizeof(float)), *sd = calloc((size_t)(len * mp->n), sizeof(float));
  WF_ASSERT(cd && sd);
  for (int64_t j = 0; j < mp->n; j++) {
    int64_t h, r = src_of(mp, j, 0, &h);
    if (r < 0) continue;
    int64_t k = r / 2, i0 = mp->rope == ROPE_HALF ? k : 2 * k, i1 = mp->rope == ROPE_HALF ? k + d / 2 : 2 * k;
    for (int64_t p = 0; p < len; p++) {
      if (r % 2 == 0) {
        cd[p * mp->n + j] = (float)wf_tensor_get(ct, p * d + i0);
        sd[p * mp->n + j] = (float)-wf_tensor_get(st, p * d + i0);
      } else {
        cd[p * mp->n + j] = (float)wf_tensor_get(ct, p * d + i1);
        sd[p * mp->n + j] = (float)wf_tensor_get(st, p * d + i1);
      }
    }
  }
  int64_t dims[2] = {len, mp->n};
  *cg = new_global(c, wf_str(c->m, c->m->globals[s->cos_g].name), "heads", 2, dims, cd);
  *sg = new_global(c, wf_str(c->m, c->m->globals[s->sin_g].name), "heads", 2, dims, sd);
  free(cd);
  free(sd);
  wf_tensor_free(ct);
  wf_tensor_free(st);
}

static wf_value insert(hl *c, wf_op *before, wf_opcode code, int n, const wf_value *ops, wf_type t, wf_loc loc) {
  return wf_op_insert_new(c->f, before, code, n, ops, t, loc);
}

static void name_like(hl *c, wf_value v, wf_value like, const char *suffix) {
  const char *n = wf_str(c->m, wf_value_get(c->f, like)->name);
  char buf[256];
  if (!*n) return;
  snprintf(buf, sizeof buf, "%s%s", n, suffix);
  wf_value_set_name(c->f, v, buf);
}

/* The packed operand of one side, built before `at`. */
static wf_value build_side(hl *c, wf_op *at, const hl_side *s, const hl_map *mp, int rot, int64_t group,
                           wf_value orig, wf_pass_ctx *ctx) {
  int wg, bg;
  pack_side(c, s, mp, rot, group, &wg, &bg);
  const wf_type *xt = wf_value_type(c->f, s->p.x);
  int64_t dims[3] = {xt->dims[0], xt->dims[1], mp->n};
  wf_type t = wf_type_make(WF_F32, 3, dims);
  wf_value ops[3] = {s->p.x, wf_func_global_value(c->f, wg)};
  wf_value v = insert(c, at, WF_OP_MATMUL, 2, ops, t, s->p.loc);
  name_like(c, v, orig, ".proj");
  if (bg >= 0) {
    ops[0] = v, ops[1] = wf_func_global_value(c->f, bg);
    v = insert(c, at, WF_OP_ADD, 2, ops, t, s->p.loc);
    name_like(c, v, orig, ".bias");
  }
  if (rot && s->rope != ROPE_NONE) {
    int cg, sg;
    pack_rope(c, s, mp, &cg, &sg);
    ops[0] = v, ops[1] = wf_func_global_value(c->f, cg), ops[2] = wf_func_global_value(c->f, sg);
    v = insert(c, at, WF_OP_ROTATE_PAIRS, 3, ops, t, at->loc);
    wf_pass_stat_add(ctx, "rope-packed", 1);
  }
  wf_value_get(c->f, v)->name = 0; /* the last of them takes the ".heads" name */
  name_like(c, v, orig, ".heads");
  return v;
}

/* The uses of v: how many, and the first up to cap of them. */
static int uses_of(const hl *c, wf_value v, wf_op **out, int cap) {
  int n = 0;
  wf_func_foreach_op(c->f, op) {
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] == v) {
        if (n < cap) out[n] = op;
        n++;
        break;
      }
  }
  return n;
}

#define HL_MAX_OUT 8

/* A projection of the attention's merged result: matmul(merged, W) or gemm(merged, W, b) (HF's
 * Conv1D, torch's nn.MultiheadAttention), whose result reaches `result` [B, S, Eo] through
 * views that keep its order (the reshape back from [B·S, Eo], or [S, B, Eo] transposed with
 * B = 1); the rewrite replaces `result`, inserting before `at`. */
typedef struct hl_out {
  int w, wt, b;
  wf_op *at;
  wf_value result;
} hl_out;

typedef struct hl_dims {
  int64_t b, s, last;
} hl_dims;

/* v [.., last] whose every use is a projection reading it as its first operand. */
static int feeds_projections(wf_func *f, wf_value v, const void *arg) {
  const hl_dims *hd = arg;
  const wf_type *t = wf_value_type(f, v);
  if (t->dims[t->rank - 1] != hd->last || !wf_value_use_count(f, v)) return 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) if (op->operands[i] == v) {
      if (i != 0 || (op->code != WF_OP_MATMUL && op->code != WF_OP_GEMM)) return 0;
    }
  return 1;
}

/* v is [B, S, Eo]. */
static int bse(wf_func *f, wf_value v, const void *arg) {
  const hl_dims *hd = arg;
  const wf_type *t = wf_value_type(f, v);
  return t->rank == 3 && t->dims[0] == hd->b && t->dims[1] == hd->s && t->dims[2] == hd->last;
}

/* smajor: the projection's rows are (s, b), not (b, s) (nn.MultiheadAttention on [S, B, E]). */
static int match_out(hl *c, wf_op *u, int64_t nb, int64_t ns, int smajor, hl_out *o) {
  o->wt = 0, o->b = -1;
  if (u->code == WF_OP_GEMM && !plain_gemm(c, u)) return 0;
  o->w = global_of(c, u->operands[1]);
  if (o->w < 0 || c->m->globals[o->w].type.rank != 2) return 0;
  o->wt = u->code == WF_OP_GEMM && wf_op_int(c->f, u, "trans_b", 0) != 0;
  int64_t eo = c->m->globals[o->w].type.dims[o->wt ? 0 : 1];
  if (u->code == WF_OP_GEMM && u->n_operands > 2) {
    o->b = global_of(c, u->operands[2]);
    if (o->b < 0 || wf_type_numel(&c->m->globals[o->b].type) != eo) return 0;
  }
  static const int order[2][3] = {{0, 1, 2}, {1, 0, 2}};
  hl_dims hd = {nb, ns, eo};
  int64_t rows[3] = {smajor ? ns : nb, smajor ? nb : ns, eo};
  wf_type as = wf_type_make(wf_value_type(c->f, u->results[0])->dtype, 3, rows);
  o->result = wf_head_view_follow(c->f, u->results[0], &as, order[smajor], bse, &hd);
  if (!o->result) return 0;
  o->at = wf_value_get(c->f, o->result)->def;
  return 1;
}

/* Predicted cycles of the K and V projections ([B, S, E] x [E, n] on the mesh, n = ckb columns
 * per PE: the lower of the dist.gemm algorithms, a bias, K's rotation) and of the attention
 * that reads them, for the choice between replicated and gathered kv heads. */
static int64_t kv_cost(const hl *c, const hl_side *q, const hl_side *k, const wf_op *att, int64_t cb, int64_t hd,
                       int64_t ckb, int64_t gm, int64_t gparts) {
  const wf_type *xt = wf_value_type(c->f, q->p.x);
  int64_t nb = xt->dims[0], s = xt->dims[1], ke = (xt->dims[2] + c->w - 1) / c->w;
  int rows = s > 1 && c->h > 1 ? c->h : 1;
  int64_t sb = (s + rows - 1) / rows;
  wf_gemm_algo a = wf_gemm_auto(c->t, c->w, c->h, sb, ke, ckb);
  int64_t g = wf_gemm_predict(c->t, a, c->w, c->h, sb, ke, ckb);
  if (g < 0) return -1;
  int64_t proj = nb * (g + (k->p.b >= 0 ? sb * ckb : 0)), rot = k->rope != ROPE_NONE ? 4 * nb * sb * ckb : 0;
  wf_attn_shape as = {rows, nb, sb, cb, ckb, hd, 0, wf_op_int(c->f, att, "causal", 0) != 0, s, gm, gparts,
                      gm && c->w % gm != 0, NULL, 0};
  int64_t at = wf_attention_predict(c->t, &as);
  return at < 0 ? -1 : 2 * proj + rot + at;
}

/* The gathered kv map (src_of's gm case) when the geometry allows it and gqa= asks for it or
 * (auto) the cost model predicts it cheaper than replicating. Whole heads per column (H >= W,
 * c per column): the kv head's query heads fill m = group / c columns, which must be whole;
 * a head over g columns (H < W): m = group g columns, g parts. */
static int gather_map(hl *c, const hl_side *q, const hl_map *mp, const hl_side *k, const wf_op *att, hl_map *kvm) {
  if (!strcmp(c->gqa, "replicate")) return 0;
  int64_t gm, parts, pb, sub;
  if (!wf_head_layout_kv_cut(q->hv.heads, k->hv.heads, mp->dp, mp->n, mp->rope != ROPE_NONE, c->w, &gm, &parts, &sub,
                             &pb))
    return 0;
  if (!strcmp(c->gqa, "auto")) {
    int64_t cb = mp->n / c->w;
    int64_t rep = kv_cost(c, q, k, att, cb, mp->dp, cb, 0, 0), gat = kv_cost(c, q, k, att, cb, mp->dp, sub, gm, parts);
    if (gat < 0 || (rep >= 0 && gat >= rep)) return 0;
  }
  *kvm = *mp;
  kvm->heads = k->hv.heads, kvm->n = c->w * sub;
  kvm->gm = gm, kvm->gparts = parts, kvm->gsub = sub, kvm->gpb = pb;
  return 1;
}

static int pack_matched(hl *c, wf_op *att, wf_pass_ctx *ctx, hl_side q, hl_side k, hl_side v) {
  if (v.rope != ROPE_NONE) return fail(c, "RoPE applied to v");
  if (q.rope != k.rope) return fail(c, "RoPE on only one of q and k, or in two forms");
  if (v.hv.d != q.hv.d) return fail(c, "a value head dim different from the query head dim");
  if (k.hv.heads != v.hv.heads || q.hv.heads % k.hv.heads) return fail(c, "query heads not a multiple of key/value heads");
  /* The result: [B, H, S, D] back to [B, S, H·D] through views (transpose and reshape, or
   * the Gemm's [B·S, H·D]), then only projections with constant weights. */
  const wf_type *xt = wf_value_type(c->f, q.p.x);
  static const int merge[4] = {0, 2, 1, 3}; /* rows (b, s) */
  hl_dims hd = {xt->dims[0], xt->dims[1], q.hv.heads * q.hv.d};
  if (k.hv.folded != q.hv.folded || v.hv.folded != q.hv.folded) return fail(c, "q, k and v fold the batch differently");
  wf_type at = *wf_value_type(c->f, att->results[0]); /* [B, H, S, D]: unfolded when [1, B·H, S, D] */
  if (q.hv.folded > 1) at.dims[0] = q.hv.folded, at.dims[1] /= q.hv.folded;
  static const int merge_s[4] = {2, 0, 1, 3}; /* rows (s, b): a projection over [S, B, E] */
  wf_value merged = wf_head_view_follow(c->f, att->results[0], &at, merge, feeds_projections, &hd);
  int smajor = !merged && hd.b > 1;
  if (smajor) merged = wf_head_view_follow(c->f, att->results[0], &at, merge_s, feeds_projections, &hd);
  if (!merged) return fail(c, "the attention's result does not reach projections as [B, S, H·D] through views");
  wf_op *u[HL_MAX_OUT];
  int n_out = uses_of(c, merged, u, HL_MAX_OUT);
  if (n_out < 1 || n_out > HL_MAX_OUT) return fail(c, "the attention's result feeds no projection");
  hl_out outs[HL_MAX_OUT];
  for (int i = 0; i < n_out; i++)
    if (!match_out(c, u[i], hd.b, hd.s, smajor, &outs[i]))
      return fail(c, "the attention's result feeds something else than a projection with a constant weight back "
                      "to [B, S, E]");

  hl_map mp = make_map(q.hv.heads, q.hv.d, q.rope, c->w);
  int64_t group = q.hv.heads / k.hv.heads;
  /* GQA / MQA with whole heads per column: when a column's c query heads are whole groups of
   * `group` (group divides c), the kv heads they read sit on that column too, in order, so K
   * and V are packed with their own heads (c / group per column) and nothing is replicated.
   * Otherwise (a kv head's query heads span columns) each query head's columns get a copy. */
  hl_map kvm = mp;
  int64_t per_col = mp.n / c->w / mp.dp; /* query heads per column, when whole */
  int shared = group > 1 && q.hv.heads >= c->w && per_col >= 1 && per_col % group == 0;
  if (shared) kvm.heads = k.hv.heads, kvm.n = c->w * (per_col / group) * mp.d;
  /* Otherwise a kv head's query heads span columns: replicate its Wk, Wv columns onto each of
   * them, or compute it once, cut over those columns, and gather it inside the attention. */
  int gathered = group > 1 && !shared && gather_map(c, &q, &mp, &k, att, &kvm);
  /* colocate: q (and so the result and Wo's rows) packed by the kv pieces, group per column */
  int coloc = gathered && !strcmp(c->gqa, "colocate");
  if (coloc) mp = kvm, mp.heads = q.hv.heads, mp.gq = group, mp.n = kvm.n * group;
  wf_value qn = build_side(c, att, &q, &mp, 1, 1, att->operands[0], ctx);
  wf_value kn = build_side(c, att, &k, &kvm, 1, shared || gathered ? 1 : group, att->operands[1], ctx);
  wf_value vn = build_side(c, att, &v, &kvm, 0, shared || gathered ? 1 : group, att->operands[2], ctx);
  const wf_type *qt = wf_value_type(c->f, qn);
  wf_value ops[3] = {qn, kn, vn};
  wf_value an = insert(c, att, WF_OP_ATTENTION, 3, ops, *qt, att->loc);
  wf_op *aop = wf_value_get(c->f, an)->def;
  wf_op_set_float(c->f, aop, "scale", wf_op_float(c->f, att, "scale", 1.0));
  if (wf_op_int(c->f, att, "causal", 0))
    wf_op_set_attr(c->f, aop, (wf_attr){wf_intern(c->m, "causal"), WF_ATTR_BOOL, {.i = 1}});
  wf_op_set_int(c->f, aop, "heads", mp.heads);
  wf_op_set_int(c->f, aop, "head_dim", mp.dp);
  if (shared) {
    wf_op_set_int(c->f, aop, "kv_heads", k.hv.heads);
    wf_pass_stat_add(ctx, "gqa-shared", 1);
  }
  if (gathered) {
    int64_t g4[4] = {kvm.gm, group, kvm.gparts, kvm.gsub};
    wf_op_set_ints(c->f, aop, "kv_gather", 4, g4);
    if (coloc) wf_op_set_attr(c->f, aop, (wf_attr){wf_intern(c->m, "q_colocated"), WF_ATTR_BOOL, {.i = 1}});
    wf_pass_stat_add(ctx, coloc ? "gqa-colocated" : "gqa-gathered", 1);
  }
  name_like(c, an, att->results[0], ".heads");
  /* Wo'': row j of the packed result takes row h D + r of Wo (v's columns are not permuted). */
  for (int i = 0; i < n_out; i++) {
    const hl_out *o = &outs[i];
    wf_tensor *w = wf_global_tensor(c->m, o->w);
    int64_t eo = w->dims[o->wt ? 0 : 1], ein = w->dims[o->wt ? 1 : 0];
    float *nd = calloc((size_t)(mp.n * eo), sizeof(float));
    WF_ASSERT(nd);
    for (int64_t j = 0; j < mp.n; j++) {
      int64_t h, r = src_of(&mp, j, 0, &h);
      if (r < 0) continue;
      int64_t row = h * q.hv.d + r;
      for (int64_t e = 0; e < eo; e++) nd[j * eo + e] = (float)wf_tensor_get(w, o->wt ? e * ein + row : row * eo + e);
    }
    int64_t dims[2] = {mp.n, eo};
    int ng = new_global(c, wf_str(c->m, c->m->globals[o->w].name), "heads", 2, dims, nd);
    free(nd);
    wf_tensor_free(w);
    ops[0] = an, ops[1] = wf_func_global_value(c->f, ng);
    const wf_type *rt = wf_value_type(c->f, o->result);
    wf_value nv = insert(c, o->at, WF_OP_MATMUL, 2, ops, *rt, o->at->loc);
    if (o->b >= 0) {
      ops[0] = nv, ops[1] = wf_func_global_value(c->f, o->b);
      nv = insert(c, o->at, WF_OP_ADD, 2, ops, *rt, o->at->loc);
    }
    wf_value_replace_uses(c->f, o->result, nv);
    uint32_t nm = wf_value_get(c->f, o->result)->name;
    if (nm) {
      wf_value_get(c->f, o->result)->name = 0;
      wf_value_get(c->f, nv)->name = nm;
    }
  }
  wf_pass_stat_add(ctx, "attention-packed", 1);
  if (group > 1 && !shared && !gathered) wf_pass_stat_add(ctx, "gqa-replicated", 1);
  return 1;
}

/* K and V repeated for the query heads of a group (GQA / MQA written as repeat_interleave, or
 * expand + reshape before or after the head transpose) read the columns of their kv heads once. */
static void dedup_kv(hl_side *q, hl_side *k, hl_side *v) {
  if (k->hv.heads != q->hv.heads || v->hv.heads != q->hv.heads) return;
  int64_t nk = wf_head_view_repeat(&k->hv), nv = wf_head_view_repeat(&v->hv), n = nk;
  while (n > 1 && (nv % n || nk % n)) n--;
  wf_head_view_dedup(&k->hv, n);
  wf_head_view_dedup(&v->hv, n);
}

static int pack_one(hl *c, wf_op *att, wf_pass_ctx *ctx) {
  if (att->n_operands != 3) return fail(c, "an attention with an explicit mask tensor (only causal masks are raised)");
  hl_side q = {0}, k = {0}, v = {0};
  int ok = match_side(c, att->operands[0], &q) && match_side(c, att->operands[1], &k) &&
           match_side(c, att->operands[2], &v);
  if (ok) {
    dedup_kv(&q, &k, &v);
    ok = pack_matched(c, att, ctx, q, k, v);
  }
  wf_head_view_free(&q.hv);
  wf_head_view_free(&k.hv);
  wf_head_view_free(&v.hv);
  return ok;
}

/* An attention head-layout cannot pack, written back as the chain it computes, for partition and
 * lower-gemm to compile as they compile any batched matmul (the heads stay an axis of the
 * tensors, laid out as partition chooses; the key transpose moves data):
 *   s = matmul(q, transpose(k)) * scale [+ causal] [+ mask];  y = matmul(softmax(s), v)
 * The causal mask is a constant [S, T] (-1e30 where key j > i + T - S, bottom-right aligned); a
 * bool mask operand is where(mask, s, -inf), an f32 one added. Only what the chain can say
 * without repeating heads: every query head has its own kv head, f32 (why: the reason it
 * cannot, for the error). */
/* k^T without a transpose when k is one (raise writes k = transpose(k^T), reshaped to rank 4 from
 * a rank-3 chain): the value k^T, or WF_NO_VALUE. */
static wf_value untransposed(const hl *c, wf_value k) {
  wf_op *rs = def(c, k, WF_OP_RESHAPE);
  wf_op *tr = def(c, rs ? rs->operands[0] : k, WF_OP_TRANSPOSE);
  if (!tr || !wf_perm_swaps_last_two(c->f, tr, wf_value_type(c->f, tr->operands[0])->rank)) return WF_NO_VALUE;
  const wf_type *src = wf_value_type(c->f, tr->operands[0]), *kt = wf_value_type(c->f, k);
  /* a reshape only adds leading 1s here: the last two axes must be the same */
  if (rs && (src->rank < 2 || src->dims[src->rank - 1] != kt->dims[2] || src->dims[src->rank - 2] != kt->dims[3]))
    return WF_NO_VALUE;
  return tr->operands[0];
}

static int expand_chain(hl *c, wf_op *att, const char **why) {
  const wf_type *qt = wf_value_type(c->f, att->operands[0]), *kt = wf_value_type(c->f, att->operands[1]),
                *vt = wf_value_type(c->f, att->operands[2]);
  if (qt->rank != 4 || kt->rank != 4 || vt->rank != 4 || qt->dtype != WF_F32)
    return *why = "it is not f32 over [B, H, S, D]", 0;
  if (kt->dims[1] != qt->dims[1]) return *why = "its query heads share kv heads (the chain would repeat them)", 0;
  wf_dtype mdt = att->n_operands > 3 ? wf_value_type(c->f, att->operands[3])->dtype : WF_F32;
  if (mdt != WF_F32 && mdt != WF_BOOL) return *why = "its mask is neither additive (f32) nor bool", 0;
  int64_t b = qt->dims[0], h = qt->dims[1], s = qt->dims[2], t = kt->dims[2], d = qt->dims[3];
  wf_loc loc = att->loc;
  wf_value ops[2] = {att->operands[1]};
  wf_type ktt = wf_type_make(WF_F32, 4, (int64_t[]){b, h, d, t});
  wf_value ktr = untransposed(c, att->operands[1]);
  if (ktr == WF_NO_VALUE) {
    ktr = insert(c, att, WF_OP_TRANSPOSE, 1, ops, ktt, loc);
    wf_op_set_ints(c->f, wf_value_get(c->f, ktr)->def, "perm", 4, (int64_t[]){0, 1, 3, 2});
  } else if (wf_value_type(c->f, ktr)->rank != 4) {
    ops[0] = ktr;
    ktr = insert(c, att, WF_OP_RESHAPE, 1, ops, ktt, loc);
  }
  wf_type st = wf_type_make(WF_F32, 4, (int64_t[]){b, h, s, t});
  ops[0] = att->operands[0], ops[1] = ktr;
  wf_value sc = insert(c, att, WF_OP_MATMUL, 2, ops, st, loc);
  const char *base = wf_str(c->m, wf_value_get(c->f, att->results[0])->name);
  if (!*base) base = "attention";
  double scale = wf_op_float(c->f, att, "scale", 1.0);
  if (scale != 1.0) {
    float k = (float)scale;
    ops[0] = sc, ops[1] = wf_func_global_value(c->f, new_global(c, base, "scale", 1, (int64_t[]){1}, &k));
    sc = insert(c, att, WF_OP_MUL, 2, ops, st, loc);
  }
  if (wf_op_int(c->f, att, "causal", 0)) {
    float *m = malloc((size_t)(s * t) * sizeof *m);
    WF_ASSERT(m);
    for (int64_t i = 0; i < s; i++)
      for (int64_t j = 0; j < t; j++) m[i * t + j] = j > i + t - s ? -1e30f : 0.0f;
    ops[0] = sc, ops[1] = wf_func_global_value(c->f, new_global(c, base, "causal", 2, (int64_t[]){s, t}, m));
    free(m);
    sc = insert(c, att, WF_OP_ADD, 2, ops, st, loc);
  }
  if (att->n_operands > 3 && mdt == WF_F32) {
    ops[0] = sc, ops[1] = att->operands[3];
    sc = insert(c, att, WF_OP_ADD, 2, ops, st, loc);
  } else if (att->n_operands > 3) { /* bool: keep where true, -inf elsewhere */
    float ninf = -INFINITY;
    wf_value w3[3] = {att->operands[3], sc, wf_func_global_value(c->f, new_global(c, base, "masked", 1, (int64_t[]){1}, &ninf))};
    sc = insert(c, att, WF_OP_WHERE, 3, w3, st, loc);
  }
  ops[0] = sc;
  wf_value p = insert(c, att, WF_OP_SOFTMAX, 1, ops, st, loc);
  wf_op_set_int(c->f, wf_value_get(c->f, p)->def, "axis", -1);
  ops[0] = p, ops[1] = att->operands[2];
  wf_value y = insert(c, att, WF_OP_MATMUL, 2, ops, *wf_value_type(c->f, att->results[0]), loc);
  wf_value_replace_uses(c->f, att->results[0], y);
  wf_value_get(c->f, y)->name = wf_value_get(c->f, att->results[0])->name; /* an output keeps its name */
  wf_value_get(c->f, att->results[0])->name = 0;
  return 1;
}

/* Hugging Face's Conv1D over [B, S, E] is exported as reshape -> gemm -> reshape back; as a
 * rank-3 matmul (+ bias) it keeps the activation layout {B, S_y, E_x} instead of flattening
 * B·S into the split rows, which no reshape of a partitioned value can do in place. */
static int fold_conv1d(hl *c, wf_op *gm) {
  wf_op *in = def(c, gm->operands[0], WF_OP_RESHAPE), *back[1] = {NULL};
  if (!in || !plain_gemm(c, gm) || wf_value_type(c->f, in->operands[0])->rank != 3) return 0;
  if (uses_of(c, gm->results[0], back, 1) != 1 || back[0]->code != WF_OP_RESHAPE) return 0;
  const wf_type *xt = wf_value_type(c->f, in->operands[0]), *rt = wf_value_type(c->f, back[0]->results[0]);
  if (rt->rank != 3 || rt->dims[0] != xt->dims[0] || rt->dims[1] != xt->dims[1]) return 0;
  int w = global_of(c, gm->operands[1]), b = gm->n_operands > 2 ? global_of(c, gm->operands[2]) : -1;
  if (w < 0 || c->m->globals[w].type.rank != 2 || (gm->n_operands > 2 && (b < 0 || wf_type_numel(&c->m->globals[b].type) != rt->dims[2])))
    return 0;
  wf_value wv = gm->operands[1];
  if (wf_op_int(c->f, gm, "trans_b", 0)) {
    wf_tensor *t = wf_global_tensor(c->m, w);
    int64_t n = t->dims[0], k = t->dims[1], dims[2] = {k, n};
    float *d = malloc((size_t)(n * k) * sizeof *d);
    WF_ASSERT(d);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < k; j++) d[j * n + i] = (float)wf_tensor_get(t, i * k + j);
    wv = wf_func_global_value(c->f, new_global(c, wf_str(c->m, c->m->globals[w].name), "t", 2, dims, d));
    free(d);
    wf_tensor_free(t);
  }
  wf_value ops[2] = {in->operands[0], wv};
  wf_value v = insert(c, back[0], WF_OP_MATMUL, 2, ops, *rt, gm->loc);
  if (b >= 0) {
    ops[0] = v, ops[1] = gm->operands[2];
    v = insert(c, back[0], WF_OP_ADD, 2, ops, *rt, gm->loc);
  }
  wf_value_replace_uses(c->f, back[0]->results[0], v);
  uint32_t nm = wf_value_get(c->f, back[0]->results[0])->name;
  wf_value_get(c->f, back[0]->results[0])->name = 0;
  wf_value_get(c->f, v)->name = nm;
  return 1;
}

static int run(wf_module *m, wf_pass_ctx *ctx) {
  int w, h;
  int rc = wf_pass_mesh(ctx, "head-layout", &w, &h);
  if (rc) return rc;
  const char *gqa = wf_pass_opt_str(ctx, "gqa");
  if (strcmp(gqa, "auto") && strcmp(gqa, "replicate") && strcmp(gqa, "gather") && strcmp(gqa, "colocate")) {
    wf_error(WF_LOC_NONE, "head-layout: gqa=%s is not one of auto, replicate, gather, colocate", gqa);
    return WF_EXIT_USAGE;
  }
  int bad = 0, changed = 0;
  for (int fi = 0; fi < m->n_funcs; fi++) {
    hl c = {m, m->funcs[fi], w, h, NULL, wf_pass_target(ctx), wf_pass_opt_str(ctx, "gqa")};
    for (wf_op *op = c.f->first; op; op = op->next)
      if (op->code == WF_OP_GEMM && fold_conv1d(&c, op)) {
        changed = 1;
        wf_pass_stat_add(ctx, "conv1d-folded", 1);
      }
    if (changed) wf_func_remove_dead_ops(c.f);
    for (wf_op *op = c.f->first; op; op = op->next) {
      if (op->code != WF_OP_ATTENTION || wf_op_int(c.f, op, "heads", 0) > 0) continue;
      c.why = NULL;
      if (pack_one(&c, op, ctx)) {
        changed = 1;
        continue;
      }
      const char *why_not = NULL;
      if (expand_chain(&c, op, &why_not)) {
        wf_warning(op->loc, "head-layout: this attention's heads cannot be laid out on the mesh columns: %s; "
                            "it is compiled as its matmul/softmax chain instead, heads unpacked (docs/attention.md)", c.why);
        wf_pass_stat_add(ctx, "attention-unpacked", 1);
        changed = 1;
        continue;
      }
      wf_error(op->loc, "head-layout: this attention's heads cannot be laid out on the mesh columns: %s, and "
                        "it cannot be compiled as its chain: %s "
                        "(waferc --interpret runs it; docs/attention.md lists the chains it packs)", c.why, why_not);
      bad++;
    }
    if (changed) wf_func_remove_dead_ops(c.f);
  }
  if (changed) wf_pass_set_changed(ctx);
  return bad ? WF_EXIT_UNSUPPORTED : 0;
}

const wf_pass_info wf_pass_head_layout = {
    "head-layout",
    "Pack attention heads into the columns of [B, S, E''] (weights permuted and padded at compile time)",
    hl_opts, 2, hl_stats, 8, run};
