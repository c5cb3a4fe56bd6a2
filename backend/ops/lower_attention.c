/* Packed attention (passes/head_layout.c) and rotate_pairs on {B, S_y, E_x}.
 *
 * attention(q, k, v) {heads, head_dim = hd}: q, k, v and the result are [B, S, N] blocks
 * [B][Sb][cb] on a W x H region, N = W cb, head h on columns [h hd, (h+1) hd). head-layout
 * chose N so that a PE's columns are either nh = cb / hd whole heads (slots of ds = hd) or the
 * g-th part of one head spread over g = hd / cb columns (one slot of ds = cb).
 *
 * K and V blocks travel on the column's INTERLEAVE ring (WaferLLM §5.4's dist-GEMM-T): in round
 * r of H every row computes with the block it holds while it passes that block one ring
 * position on and takes the next, asynchronously, into the other half of a double buffer. No
 * block is transposed over the fabric: each PE transposes its own K block per slot once,
 * before the rounds, and sends it so; the score block of a slot is
 *   s = (scale q_slot) · k_slotᵀ          [Sb x Tb]
 * and, for a head spanning g columns, the sum of the g partial products inside the group (a
 * chain east and a flood back west on the group's columns only: wf_lower_attn_group_sum below).
 *
 * The softmax is online (FlashAttention's recurrence), one K/V block per round, so SRAM holds
 * one Sb x Tb score block per slot, never Sb x T:
 *   m' = max(m, rowmax s); p = exp(s - m'); l = l e^(m - m') + rowsum p;
 *   acc = acc e^(m - m') + p v_slot;  m = m'              ... out = acc / l at the end.
 * Causal masking is computed from coordinates: a row skips the rounds whose block lies after
 * all its queries (wf_attention_ring_live), and adds the block-diagonal mask (a constant every
 * PE holds) in round 0, which holds its own block. Every row's round 0 is unmasked in some key,
 * so m is finite from then on and a skipped block changes nothing. Without a causal mask, the
 * padding keys past T (S not divisible by H) are masked by a key bias that travels with its
 * block (docs/attention.md). */
#include <math.h>
#include <stdlib.h>

#include "backend/collectives/lower_collective.h"
#include "backend/collectives/ring_line.h"
#include "backend/ops/attention_cost.h"
#include "backend/resources/lower.h"
#include "ir/rules.h"
#include "waferc/diag.h"

#define NEG_BIG (-1e30f)

static void bin(wf_lower *L, const wf_pe_guard *g, wf_peop op, wf_pe_arg d, wf_pe_arg a, wf_pe_arg b, int64_t m,
                int64_t n, int mode) {
  wf_emit(L, g, op, (wf_pe_arg[]){d, a, b, wf_arg_int(m), wf_arg_int(n), wf_arg_int(mode)});
}

static void copy2d(wf_lower *L, const wf_pe_guard *g, wf_pe_arg d, wf_pe_arg s, int64_t rows, int64_t cols,
                   int64_t dstride, int64_t sstride) {
  wf_emit(L, g, WF_PEOP_COPY2D,
          (wf_pe_arg[]){d, s, wf_arg_int(rows), wf_arg_int(cols), wf_arg_int(dstride), wf_arg_int(sstride)});
}

/* ---- the sum inside each group of g columns ------------------------------------------------ *
 * Groups are the runs of g columns x = i g .. i g + g - 1 (the last one cut at the mesh edge).
 * The partials flow east along the group, each PE adding its own (a chain: `send`, `addsend`,
 * `recvadd`), on two colors that alternate with the PE's place p = x mod g (a router holds one
 * rule per color, and a PE in the middle both receives and sends); the group's last PE then
 * floods the sum back west on a third color, which stops at the group's first PE. Per round it
 * moves len words over g - 1 links twice, where the whole row's allreduce of every group's
 * slot moved ceil(W/g) len words over W - 1. */
typedef wf_attn_group grp;

/* The PEs at place p of their group (x mod g == p), the mesh's last column apart (`edge`
 * selects it alone; it ends its group wherever it falls). */
static wf_pe_guard at_place(const grp *G, int p, int edge) {
  wf_pe_guard gd = wf_guard0();
  wf_pe_term tx = wf_term(WF_TERM_X, 0);
  if (edge) {
    wf_gadd(&gd, tx, WF_CMP_EQ, wf_term(WF_TERM_INT, G->w - 1));
    return gd;
  }
  if (G->g < G->w) wf_gadd_mod(&gd, tx, G->g, p);
  else wf_gadd(&gd, tx, WF_CMP_EQ, wf_term(WF_TERM_INT, p)); /* one group: the whole row */
  wf_gadd(&gd, tx, WF_CMP_LT, wf_term(WF_TERM_INT, G->w - 1));
  return gd;
}

int wf_lower_attn_group_init(wf_lower *L, grp *G, int g, wf_loc loc) {
  G->g = g, G->w = L->w;
  if (L->attn_grp[0] == g) { /* an earlier attention's: same groups, same routes */
    G->c[0] = L->attn_grp[1], G->c[1] = L->attn_grp[2], G->cw = L->attn_grp[3];
    return 0;
  }
  G->c[0] = wf_lower_color_fresh(L, "attention head-group chain east (even places)", loc);
  G->c[1] = wf_lower_color_fresh(L, "attention head-group chain east (odd places)", loc);
  G->cw = wf_lower_color_fresh(L, "attention head-group sum back west", loc);
  if (G->c[0] < 0 || G->c[1] < 0 || G->cw < 0) return WF_EXIT_NOFIT;
  if (!L->attn_grp[0]) L->attn_grp[0] = g, L->attn_grp[1] = G->c[0], L->attn_grp[2] = G->c[1], L->attn_grp[3] = G->cw;
  for (int edge = 0; edge < 2; edge++)
    for (int p = 0; p < g; p++) {
      if (edge && p != (G->w - 1) % g) continue;
      wf_pe_guard gd = at_place(G, p, edge);
      int first = p == 0, last = p == g - 1 || edge;
      if (!first) wf_pe_class_add_route(L->cls, &gd, G->c[(p - 1) % 2], WF_DIR_W, 1u << WF_DIR_RAMP);
      if (!last) wf_pe_class_add_route(L->cls, &gd, G->c[p % 2], WF_DIR_RAMP, 1u << WF_DIR_E);
      if (first && last) continue;
      if (last) wf_pe_class_add_route(L->cls, &gd, G->cw, WF_DIR_RAMP, 1u << WF_DIR_W);
      else if (first) wf_pe_class_add_route(L->cls, &gd, G->cw, WF_DIR_E, 1u << WF_DIR_RAMP);
      else wf_pe_class_add_route(L->cls, &gd, G->cw, WF_DIR_E, 1u << WF_DIR_W | 1u << WF_DIR_RAMP);
    }
  return 0;
}

/* sym[0..len) = its sum over the PE's group; returns the predicted cycles. */
int64_t wf_lower_attn_group_sum(wf_lower *L, const grp *G, int sym, int64_t len) {
  for (int edge = 0; edge < 2; edge++)
    for (int p = 0; p < G->g; p++) {
      if (edge && p != (G->w - 1) % G->g) continue;
      wf_pe_guard gd = at_place(G, p, edge);
      int first = p == 0, last = p == G->g - 1 || edge;
      wf_pe_arg n = wf_arg_int(len), a = wf_arg_sym(sym);
      if (first && last) continue;
      if (first) wf_emit(L, &gd, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(G->c[0]), a, n});
      else if (!last)
        wf_emit(L, &gd, WF_PEOP_ADDSEND,
                (wf_pe_arg[]){wf_arg_int(G->c[(p - 1) % 2]), wf_arg_int(G->c[p % 2]), a, n});
      else wf_emit(L, &gd, WF_PEOP_RECVADD, (wf_pe_arg[]){wf_arg_int(G->c[(p - 1) % 2]), a, n});
      if (last) wf_emit(L, &gd, WF_PEOP_SEND, (wf_pe_arg[]){wf_arg_int(G->cw), a, n});
      else wf_emit(L, &gd, WF_PEOP_RECV, (wf_pe_arg[]){wf_arg_int(G->cw), a, n});
    }
  return wf_attention_group_sum_cost(L->t, G->g, len);
}

int wf_lower_attn_slots(const wf_lower *L, const wf_op *op, const char *who, int64_t heads, int64_t hd, int64_t kvh,
                        int64_t cb, int64_t ckb, wf_attn_slots *s) {
  wf_attn_gather ga;
  if (wf_attn_colocated(L->f, op, hd, &ga) > 0) { /* head-layout{gqa=colocate} */
    if (ckb != ga.sub || cb != ga.group * ga.sub || ga.m > L->w) {
      wf_error(op->loc, "%s: q_colocated with kv_gather [%lld, %lld, %lld, %lld] does not fit %lld-column blocks of q "
                        "and %lld of k on this mesh (run head-layout with this mesh)", who, (long long)ga.m,
               (long long)ga.group, (long long)ga.parts, (long long)ga.sub, (long long)cb, (long long)ckb);
      return WF_EXIT_UNSUPPORTED;
    }
    /* each of the column's group query-head pieces reads its one kv piece; a head's dot
     * product is summed over the kv head's m columns */
    s->nh = ga.group, s->ds = ga.sub, s->g = ga.m, s->nkv = 1;
    return 0;
  }
  if (cb >= hd && cb % hd == 0) s->nh = cb / hd, s->ds = hd, s->g = 1;
  else if (cb < hd && hd % cb == 0) s->nh = 1, s->ds = cb, s->g = hd / cb;
  else {
    wf_error(op->loc, "%s: heads of %lld columns do not fall on the %lld-column blocks of this mesh "
                      "(the model was packed for another mesh width: run head-layout with this mesh)",
             who, (long long)hd, (long long)cb);
    return WF_EXIT_UNSUPPORTED;
  }
  s->nkv = s->nh;
  if (kvh > 0) {
    s->nkv = s->g == 1 && ckb % hd == 0 ? ckb / hd : 0;
    if (!s->nkv || s->nh % s->nkv || heads / kvh != s->nh / s->nkv) {
      wf_error(op->loc, "%s: %lld kv heads over %lld-column blocks do not line up with %lld query heads "
                        "per column (run head-layout with this mesh)", who, (long long)kvh, (long long)ckb,
               (long long)s->nh);
      return WF_EXIT_UNSUPPORTED;
    }
  } else if (ckb != cb) {
    wf_error(op->loc, "%s: k has %lld columns per PE, q %lld", who, (long long)ckb, (long long)cb);
    return WF_EXIT_UNSUPPORTED;
  }
  return 0;
}

/* The q/k/v and result layouts this lowering reads: {B, S_y or whole, N_x or whole}. */
static int check_layout(wf_lower *L, const wf_op *op, wf_value v) {
  const wf_type *t = wf_value_type(L->f, v);
  if (t->rank == 3 && t->layout.dims[0].split == WF_AXIS_NONE && t->layout.dims[1].split != WF_AXIS_X &&
      t->layout.dims[2].split != WF_AXIS_Y)
    return 0;
  wf_error(op->loc, "attention: its operands and result must be laid out {B, S_y, E_x} (partition's rule)");
  return WF_EXIT_UNSUPPORTED;
}

/* The PE's own buffer half (round r reads r % 2 of them): `off` words into kv plus
 * (stride r) mod 2 stride; a single round's PEs have one half and no term. */
static wf_pe_arg half(int kv, int64_t off, wf_pe_term tr, int64_t stride, int split) {
  wf_pe_arg a = wf_arg_at(kv, off);
  if (split) {
    WF_ASSERT(2 * stride <= 65535);
    a.term = wf_term_scaled(tr, (int)stride, 0);
    a.term.mod = (uint16_t)(2 * stride);
  }
  return a;
}

/* One slot's round, the parts that only live rounds run (`lg`; NULL: every PE): the scores,
 * or the online-softmax step and p v. */
static void slot_scores(wf_lower *L, const wf_pe_guard *lg, int sc, wf_pe_arg qs, wf_pe_arg kc, int64_t sb, int64_t ds,
                        int64_t tb) {
  wf_emit(L, lg, WF_PEOP_MATMUL,
          (wf_pe_arg[]){wf_arg_sym(sc), qs, kc, wf_arg_int(sb), wf_arg_int(ds), wf_arg_int(tb)});
}

typedef struct soft_syms { int sc, mx, corr, rs; } soft_syms;

static void slot_softmax(wf_lower *L, const wf_pe_guard *lg, const soft_syms *t, wf_pe_arg m, wf_pe_arg l,
                         wf_pe_arg a, wf_pe_arg vc, int64_t sb, int64_t ds, int64_t tb) {
  int sc = t->sc, mx = t->mx, corr = t->corr, rs = t->rs;
  wf_emit(L, lg, WF_PEOP_RMAX, (wf_pe_arg[]){wf_arg_sym(mx), wf_arg_sym(sc), wf_arg_int(sb), wf_arg_int(tb)});
  bin(L, lg, WF_PEOP_MAX, wf_arg_sym(mx), wf_arg_sym(mx), m, 1, sb, WF_BMODE_IJ);
  bin(L, lg, WF_PEOP_SUB, wf_arg_sym(corr), m, wf_arg_sym(mx), 1, sb, WF_BMODE_IJ);
  wf_emit(L, lg, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(corr), wf_arg_sym(corr), wf_arg_int(sb)});
  wf_emit(L, lg, WF_PEOP_COPY, (wf_pe_arg[]){m, wf_arg_sym(mx), wf_arg_int(sb)});
  bin(L, lg, WF_PEOP_SUB, wf_arg_sym(sc), wf_arg_sym(sc), wf_arg_sym(mx), sb, tb, WF_BMODE_I);
  wf_emit(L, lg, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sc), wf_arg_int(sb * tb)});
  wf_emit(L, lg, WF_PEOP_RSUM, (wf_pe_arg[]){wf_arg_sym(rs), wf_arg_sym(sc), wf_arg_int(sb), wf_arg_int(tb)});
  bin(L, lg, WF_PEOP_MUL, l, l, wf_arg_sym(corr), 1, sb, WF_BMODE_IJ);
  bin(L, lg, WF_PEOP_ADD, l, l, wf_arg_sym(rs), 1, sb, WF_BMODE_IJ);
  bin(L, lg, WF_PEOP_MUL, a, a, wf_arg_sym(corr), sb, ds, WF_BMODE_I);
  wf_emit(L, lg, WF_PEOP_MATMUL,
          (wf_pe_arg[]){a, wf_arg_sym(sc), vc, wf_arg_int(sb), wf_arg_int(tb), wf_arg_int(ds)});
}

/* The column's INTERLEAVE ring (the MeshGEMM ring along y where the mesh gives MeshGEMM that
 * ring, H a multiple of W; attention's own colors otherwise), routes once per class. Returns
 * its first color, or -1 after reporting that the target has none left. */
static int ring_color(wf_lower *L, wf_loc loc) {
  int purpose = L->h % L->w == 0 ? WF_COLOR_MESH_RING_Y : WF_COLOR_ATTN_RING_Y;
  if (L->color[purpose] < 0) {
    wf_ring_line ly = {wf_term(WF_TERM_Y, 0), WF_DIR_N, WF_DIR_S, L->h};
    int *dest = malloc((size_t)L->h * sizeof *dest), s, rc;
    WF_ASSERT(dest);
    for (int y = 0; y < L->h; y++) wf_interleave(y, L->h, &dest[y], &s);
    rc = wf_ring_dest_links(L, purpose, &ly, dest, loc);
    free(dest);
    if (rc) return -1;
  }
  return L->color[purpose];
}

/* ---- the gathered kv heads (attention {kv_gather}) ----------------------------------------- *
 * The m columns x = i m .. i m + m - 1 hold kv head i cut into pieces of sub columns, member
 * c = x mod m holding piece c. Each member transposes its K piece ([B Tb][sub] -> [sub][B Tb])
 * into slot c of an m-slot buffer, its V piece behind it (pw words), and passes pieces around
 * the group's ring (one-hop links east, the last member back to the first: ring_links.c colors
 * them), m - 1 steps: in step t it sends the piece of member c - t and takes member c - t - 1's
 * into its slot. Slot (c - j) mod m is slot c - j on the members c >= j and c - j + m on the
 * others, so each stream is written twice, under the two guards, with offsets that are terms of
 * x. Then the PE's query part p = x mod parts takes pieces p m/parts .. into the ring buffer's
 * K and V slot (kv: kᵀ [B][ds][Tb], V at `voff` [B][Tb][ds]). Columns past the last whole group
 * (phantom heads) gather nothing; their buffer is zero, so their keys and values are. */
static wf_pe_arg at_x(int sym, int64_t off, int64_t scale, int64_t mod) {
  wf_pe_arg a = wf_arg_at(sym, off);
  if (mod > 1) {
    WF_ASSERT(scale <= 65535 && mod <= 65535);
    a.term = wf_term_scaled(wf_term(WF_TERM_X, 0), (int)scale, 0);
    a.term.mod = (uint16_t)mod;
  }
  return a;
}

static int gather_kv(wf_lower *L, const wf_op *op, const wf_attn_gather *ga, int sk, int sv, int kv, int64_t nbatch,
                     int64_t tb, int64_t ds, int64_t voff) {
  int64_t m = ga->m, sub = ga->sub, per = m / ga->parts, rows = nbatch * tb, pw = 2 * sub * rows;
  if (m * pw > 32767) {
    wf_error(op->loc, "attention: the gathered kv pieces (%lld words) are too large for a PE", (long long)(m * pw));
    return WF_EXIT_NOFIT;
  }
  int gb = wf_lower_temp(L, "$att_gather", m * pw * 4);
  int whole = L->w / (int)m * (int)m; /* columns in whole groups */
  if (whole < L->w) wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(gb), wf_arg_int(m * pw)});
  wf_emit(L, NULL, WF_PEOP_TRANSPOSE,
          (wf_pe_arg[]){at_x(gb, 0, pw, m * pw), wf_arg_sym(sk), wf_arg_int(rows), wf_arg_int(sub)});
  wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){at_x(gb, sub * rows, pw, m * pw), wf_arg_sym(sv), wf_arg_int(sub * rows)});
  if (m > 1) {
    if (L->attn_gather && L->attn_gather != m) {
      wf_error(op->loc, "attention: kv heads gathered over %lld columns here and %d in an earlier attention: one "
                        "class holds one gather ring (head-layout{gqa=replicate} avoids it)", (long long)m, L->attn_gather);
      return WF_EXIT_UNSUPPORTED;
    }
    if (L->color[WF_COLOR_ATTN_RING_X] < 0) {
      int *dest = malloc((size_t)L->w * sizeof *dest);
      WF_ASSERT(dest);
      for (int x = 0; x < L->w; x++) dest[x] = x >= whole ? -1 : x % m == m - 1 ? x - (int)m + 1 : x + 1;
      wf_ring_line lx = {wf_term(WF_TERM_X, 0), WF_DIR_W, WF_DIR_E, L->w};
      int rc = wf_ring_dest_links(L, WF_COLOR_ATTN_RING_X, &lx, dest, op->loc);
      free(dest);
      if (rc) return WF_EXIT_NOFIT;
    }
    L->attn_gather = (int)m;
    int col = L->color[WF_COLOR_ATTN_RING_X], done = wf_lower_done_task(L);
    wf_pe_term tx = wf_term(WF_TERM_X, 0), tc = wf_gterm(tx, (int)m, 0); /* the member's place c */
    wf_pe_guard in = wf_guard0();
    wf_gadd(&in, tx, WF_CMP_LT, wf_term_int(whole));
    for (int64_t t = 0; t + 1 < m; t++)
      for (int dir = 0; dir < 3; dir++) { /* take slot (c - t - 1) mod m, pass slot (c - t) mod m, wait */
        if (dir == 2) {
          wf_emit(L, &in, WF_PEOP_WAIT, NULL);
          continue;
        }
        int64_t j = dir ? t : t + 1;
        for (int wrap = 0; wrap < 2 && (j || !wrap); wrap++) {
          wf_pe_guard g = in;
          if (j) wf_gadd(&g, tc, wrap ? WF_CMP_LT : WF_CMP_GE, wf_term_int((int32_t)j));
          wf_emit(L, &g, dir ? WF_PEOP_ASEND : WF_PEOP_ARECV,
                  (wf_pe_arg[]){wf_arg_int(col), at_x(gb, pw * ((wrap ? m : 0) - j), pw, m * pw), wf_arg_int(pw),
                                wf_arg_int(done)});
        }
      }
  }
  for (int64_t b = 0; b < nbatch; b++)
    for (int64_t j = 0; j < per && j * sub < ds; j++) {
      int64_t w = ds - j * sub < sub ? ds - j * sub : sub;
      copy2d(L, NULL, wf_arg_at(kv, b * ds * tb + j * sub * tb), at_x(gb, j * pw + b * tb, per * pw, m * pw), w, tb, tb, rows);
      copy2d(L, NULL, wf_arg_at(kv, voff + b * tb * ds + j * sub), at_x(gb, j * pw + sub * rows + b * tb * sub, per * pw, m * pw),
             tb, w, ds, sub);
    }
  return 0;
}

int wf_lower_attention(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  int64_t heads = wf_op_int(L->f, op, "heads", 0), hd = wf_op_int(L->f, op, "head_dim", 0);
  if (heads <= 0) {
    wf_error(op->loc, "attention over [B, H, S, D] has no mesh lowering: head-layout packs it first");
    return WF_EXIT_UNSUPPORTED;
  }
  for (int i = 0; i < 3; i++)
    if (check_layout(L, op, op->operands[i])) return WF_EXIT_UNSUPPORTED;
  if (check_layout(L, op, op->results[0])) return WF_EXIT_UNSUPPORTED;
  const wf_type *qt = wf_value_type(L->f, op->operands[0]), *kt = wf_value_type(L->f, op->operands[1]);
  int causal = wf_op_int(L->f, op, "causal", 0) != 0;
  if (qt->dims[1] != kt->dims[1]) {
    wf_error(op->loc, "attention on the mesh needs as many keys as queries (prefill), got S = %lld, T = %lld",
             (long long)qt->dims[1], (long long)kt->dims[1]);
    return WF_EXIT_UNSUPPORTED;
  }
  int64_t bq[WF_MAX_RANK];
  wf_lower_block_dims(L, qt, bq);
  int64_t nbatch = bq[0], sb = bq[1], cb = bq[2], tb = sb, len = qt->dims[1];
  int rows = qt->layout.dims[1].split == WF_AXIS_Y ? L->h : 1;
  int64_t bk[WF_MAX_RANK];
  wf_lower_block_dims(L, kt, bk);
  int64_t ckb = bk[2];
  wf_attn_slots hs;
  wf_attn_gather ga;
  int coloc = wf_attn_colocated(L->f, op, hd, &ga) > 0;
  int gat = !coloc && wf_attn_gather_of(L->f, op, hd, &ga) > 0;
  if (wf_lower_attn_slots(L, op, "attention", heads, hd, wf_op_int(L->f, op, "kv_heads", 0), cb, gat ? cb : ckb, &hs))
    return WF_EXIT_UNSUPPORTED;
  if (gat) { /* every PE's query heads read one kv head, gathered from its m columns */
    int64_t per = ga.m / ga.parts;
    if (ckb != ga.sub || ga.parts != hs.g || ga.sub * per < hs.ds || (ga.parts == 1 && ga.group % hs.nh) ||
        (ga.parts > 1 && ga.group * ga.parts != ga.m) || ga.m > L->w || (int64_t)L->w * ga.sub > 65535) {
      wf_error(op->loc, "attention: kv_gather [%lld, %lld, %lld, %lld] does not fit %lld-column blocks of q and "
                        "%lld of k on this mesh (run head-layout with this mesh)", (long long)ga.m, (long long)ga.group,
               (long long)ga.parts, (long long)ga.sub, (long long)cb, (long long)ckb);
      return WF_EXIT_UNSUPPORTED;
    }
    hs.nkv = 1;
  }
  int64_t nh = hs.nh, ds = hs.ds, g = hs.g, nkv = hs.nkv;
  int64_t share = nh / nkv;
  float scale = (float)wf_op_float(L->f, op, "scale", 1.0);
  int sq = wf_lower_sym(L, op->operands[0]), sk = wf_lower_sym(L, op->operands[1]);
  int sv = wf_lower_sym(L, op->operands[2]), so = wf_lower_sym(L, op->results[0]);
  int split = rows > 1;
  /* The K and V blocks travel together, one stream per round: [kᵀ per slot | key bias | v per
   * slot], the bias (0 or -big per key) only where padding keys exist without a causal mask. */
  int64_t blk = nbatch * sb * cb, slots = nbatch * nh, kblk = nbatch * tb * nkv * ds;
  int64_t nbias = !causal && (int64_t)rows * tb > len ? tb : 0, kvw = 2 * kblk + nbias;
  int qr = wf_lower_temp(L, "$att_q", blk * 4), acc = wf_lower_temp(L, "$att_acc", blk * 4);
  int kv = wf_lower_temp(L, "$att_kv", (split ? 2 : 1) * kvw * 4);
  int ks = wf_lower_temp(L, "$att_ks", tb * ds * 4);
  int sc = wf_lower_temp(L, "$att_s", sb * tb * 4);
  int sm = wf_lower_temp(L, "$att_m", slots * sb * 4), sl = wf_lower_temp(L, "$att_l", slots * sb * 4);
  int mx = wf_lower_temp(L, "$att_mx", sb * 4), corr = wf_lower_temp(L, "$att_corr", sb * 4);
  int rs = wf_lower_temp(L, "$att_rs", sb * 4);
  int kscale = wf_lower_scalar(L, scale), kneg = wf_lower_scalar(L, NEG_BIG);

  /* Prologue: q's slots side by side, scaled; acc = 0, l = 0, m = -big. */
  for (int64_t b = 0; b < nbatch; b++)
    for (int64_t k = 0; k < nh; k++)
      copy2d(L, NULL, wf_arg_at(qr, (b * nh + k) * sb * ds), wf_arg_at(sq, b * sb * cb + k * ds), sb, ds, ds, cb);
  bin(L, NULL, WF_PEOP_MUL, wf_arg_at(qr, 0), wf_arg_at(qr, 0), wf_arg_at(kscale, 0), 1, blk, WF_BMODE_I);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(acc), wf_arg_int(blk)});
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sl), wf_arg_int(slots * sb)});
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sm), wf_arg_int(slots * sb)});
  bin(L, NULL, WF_PEOP_ADD, wf_arg_at(sm, 0), wf_arg_at(sm, 0), wf_arg_at(kneg, 0), 1, slots * sb, WF_BMODE_I);
  /* Every PE lays its own K block out as kᵀ per slot ([b][slot][ds][Tb]) and its V block as
   * contiguous slots ([b][slot][Tb][ds]) once, in the first half of the ring buffer, so the
   * blocks it passes on are the matmuls' operands as they arrive: no copy or transpose per
   * round. */
  if (gat) {
    int rc = gather_kv(L, op, &ga, sk, sv, kv, nbatch, tb, ds, kblk + nbias);
    if (rc) return rc;
  } else
    for (int64_t b = 0; b < nbatch; b++)
      for (int64_t k = 0; k < nkv; k++) {
        int64_t slot = b * nkv + k;
        copy2d(L, NULL, wf_arg_at(ks, 0), wf_arg_at(sk, b * tb * ckb + k * ds), tb, ds, ds, ckb);
        wf_emit(L, NULL, WF_PEOP_TRANSPOSE,
                (wf_pe_arg[]){wf_arg_at(kv, slot * ds * tb), wf_arg_sym(ks), wf_arg_int(tb), wf_arg_int(ds)});
        copy2d(L, NULL, wf_arg_at(kv, kblk + nbias + slot * tb * ds), wf_arg_at(sv, b * tb * ckb + k * ds), tb, ds, ds, ckb);
      }
  /* The key bias of each block: 0, and -big past T in the blocks that hold padding keys (the
   * rows J whose keys run past T), set by the row that owns the block. */
  wf_pe_term ty = wf_term(WF_TERM_Y, 0);
  if (nbias) {
    wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_at(kv, kblk), wf_arg_int(nbias)});
    for (int j = 0; j < rows; j++) {
      int64_t real = len - (int64_t)j * tb; /* keys of block j before the padding */
      if (real >= tb) continue;
      float *pm = malloc((size_t)tb * sizeof *pm);
      WF_ASSERT(pm);
      for (int64_t c = 0; c < tb; c++) pm[c] = c < real ? 0.0f : NEG_BIG;
      int pad = wf_lower_const_block(L, pm, tb);
      free(pm);
      wf_pe_guard rj = wf_guard0();
      wf_gadd(&rj, ty, WF_CMP_EQ, wf_term_int(j));
      wf_emit(L, &rj, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_at(kv, kblk), wf_arg_sym(pad), wf_arg_int(tb)});
    }
  }

  /* The causal mask's diagonal block (key lj after query li), which round 0 adds. */
  int diag = -1;
  if (causal) {
    float *m = malloc((size_t)(sb * tb) * sizeof *m);
    WF_ASSERT(m);
    for (int64_t i = 0; i < sb; i++)
      for (int64_t j = 0; j < tb; j++) m[i * tb + j] = j > i ? NEG_BIG : 0.0f;
    diag = wf_lower_const_block(L, m, sb * tb);
    free(m);
  }

  grp G;
  int rc = g > 1 ? wf_lower_attn_group_init(L, &G, (int)g, op->loc) : 0;
  if (rc) return rc;
  int ring = -1, done = -1;
  if (split) {
    if ((ring = ring_color(L, op->loc)) < 0) return WF_EXIT_NOFIT;
    done = wf_lower_done_task(L);
  }
  /* the allgather GEMM's round variable: a class holds 8 names, and no other op's loop is open */
  int rv = wf_lower_var(L, "j");
  wf_pe_term tr = wf_term_var(rv, 0);
  /* Round r holds the block that started r ring positions back, block
   * j = order[(pos(y) - r) mod H] (wf_interleave_order). Keys after all of a row's queries
   * (j > y) are skipped: on the INTERLEAVE ring j <= y exactly when r <= y for even y and
   * (-r) mod H <= y for odd y (wf_attention_ring_live); j == y exactly in round 0. */
  wf_pe_guard live[2];
  int nlive = 1;
  const wf_pe_guard *lgs[2] = {NULL, NULL};
  if (causal && split) {
    for (int p = 0; p < 2; p++) {
      live[p] = wf_guard0();
      wf_gadd_mod(&live[p], ty, 2, p);
      wf_pe_term lhs = p ? wf_term_scaled(tr, -1, 0) : tr;
      if (p) lhs.mod = (uint16_t)rows;
      wf_gadd(&live[p], lhs, WF_CMP_LE, ty);
      lgs[p] = &live[p];
    }
    nlive = 2;
  }
  wf_pe_guard first = wf_guard0();
  wf_gadd(&first, tr, WF_CMP_EQ, wf_term_int(0));
  wf_emit(L, NULL, WF_PEOP_LOOP, (wf_pe_arg[]){wf_arg_term(tr), wf_arg_int(0), wf_arg_int(rows)});
  if (split) /* pass this round's blocks on and take the next round's, behind the work */
    for (int p = 0; p < 2; p++) {
      wf_pe_guard gp = wf_guard0();
      wf_gadd(&gp, wf_gterm(tr, 2, 0), WF_CMP_EQ, wf_term_int(p));
      wf_gadd(&gp, tr, WF_CMP_LT, wf_term_int(rows - 1));
      wf_emit(L, &gp, WF_PEOP_ARECV,
              (wf_pe_arg[]){wf_arg_int(ring), wf_arg_at(kv, (1 - p) * kvw), wf_arg_int(kvw), wf_arg_int(done)});
      wf_emit(L, &gp, WF_PEOP_ASEND,
              (wf_pe_arg[]){wf_arg_int(ring), wf_arg_at(kv, p * kvw), wf_arg_int(kvw), wf_arg_int(done)});
    }
  soft_syms ss = {sc, mx, corr, rs};
  for (int64_t b = 0; b < nbatch; b++)
    for (int64_t k = 0; k < nh; k++) {
      int64_t slot = b * nh + k, kvs = b * nkv + k / share;
      wf_pe_arg qs = wf_arg_at(qr, slot * sb * ds), m = wf_arg_at(sm, slot * sb), l = wf_arg_at(sl, slot * sb), a = wf_arg_at(acc, slot * sb * ds);
      wf_pe_arg kc = half(kv, kvs * ds * tb, tr, kvw, split);
      wf_pe_arg vc = half(kv, kblk + nbias + kvs * tb * ds, tr, kvw, split);
      wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(sb * tb)});
      for (int p = 0; p < nlive; p++) slot_scores(L, lgs[p], sc, qs, kc, sb, ds, tb);
      if (g > 1) wf_lower_attn_group_sum(L, &G, sc, sb * tb); /* the g partial products of a head */
      if (causal) bin(L, split ? &first : NULL, WF_PEOP_ADD, wf_arg_sym(sc), wf_arg_sym(sc), wf_arg_sym(diag), sb, tb,
                      WF_BMODE_IJ);
      if (nbias)
        bin(L, NULL, WF_PEOP_ADD, wf_arg_sym(sc), wf_arg_sym(sc), half(kv, kblk, tr, kvw, split), sb, tb, WF_BMODE_J);
      for (int p = 0; p < nlive; p++) slot_softmax(L, lgs[p], &ss, m, l, a, vc, sb, ds, tb);
    }
  if (split) wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
  wf_emit(L, NULL, WF_PEOP_ENDLOOP, NULL);
  for (int64_t b = 0; b < nbatch; b++)
    for (int64_t k = 0; k < nh; k++) {
      int64_t slot = b * nh + k;
      bin(L, NULL, WF_PEOP_DIV, wf_arg_at(acc, slot * sb * ds), wf_arg_at(acc, slot * sb * ds), wf_arg_at(sl, slot * sb), sb, ds,
          WF_BMODE_I);
      copy2d(L, NULL, wf_arg_at(so, b * sb * cb + k * ds), wf_arg_at(acc, slot * sb * ds), sb, ds, cb, ds);
    }
  /* rows start when the op before left them (row_skew.h), and give their ends to the next */
  wf_row_skew skew = wf_lower_row_skew(L);
  wf_attn_shape sh = {rows, nbatch, sb, cb, ckb, hd, wf_op_int(L->f, op, "kv_heads", 0) > 0, causal, len,
                      gat || coloc ? ga.m : 0, gat || coloc ? ga.parts : 0, gat && L->w % ga.m != 0,
                      rows == L->h ? &skew : NULL, coloc ? ga.group : 0};
  out->predicted = wf_attention_predict(L->t, &sh);
  WF_ASSERT(out->predicted >= 0);
  L->skew_out_ok = skew.have_end;
  snprintf(out->text, sizeof out->text, "heads-%s%s%s-online", g > 1 ? "split" : "whole",
           gat ? "-kvgather" : coloc ? "-colocated" : "",
           split ? "-interleave-ring" : "");
  out->lowering = out->text;
  return 0;
}

/* rotate_pairs: the PE's columns hold whole pairs (head-layout keeps blocks even), so the
 * rotation is local: y = x c + swap(x) s, swap exchanging the members of each pair. */
int wf_lower_rotate_pairs(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  const wf_type *t = wf_value_type(L->f, op->operands[0]);
  int64_t b[WF_MAX_RANK];
  wf_lower_block_dims(L, t, b);
  int64_t inner = b[t->rank - 2] * b[t->rank - 1], outer = 1;
  for (int d = 0; d + 2 < t->rank; d++) outer *= b[d];
  if (b[t->rank - 1] % 2 || t->layout.dims[t->rank - 1].split == WF_AXIS_Y) {
    wf_error(op->loc, "rotate_pairs: a PE block of %lld columns splits a pair (head-layout keeps them even)",
             (long long)b[t->rank - 1]);
    return WF_EXIT_UNSUPPORTED;
  }
  int sx = wf_lower_sym(L, op->operands[0]), sc = wf_lower_sym(L, op->operands[1]);
  int ss = wf_lower_sym(L, op->operands[2]), sy = wf_lower_sym(L, op->results[0]);
  int sw = wf_lower_temp(L, "$rot_swap", inner * 4);
  for (int64_t o = 0; o < outer; o++) {
    int64_t base = o * inner;
    copy2d(L, NULL, wf_arg_at(sw, 1), wf_arg_at(sx, base), inner / 2, 1, 2, 2);
    copy2d(L, NULL, wf_arg_at(sw, 0), wf_arg_at(sx, base + 1), inner / 2, 1, 2, 2);
    bin(L, NULL, WF_PEOP_MUL, wf_arg_at(sw, 0), wf_arg_at(sw, 0), wf_arg_sym(ss), b[t->rank - 2], b[t->rank - 1], WF_BMODE_IJ);
    bin(L, NULL, WF_PEOP_MUL, wf_arg_at(sy, base), wf_arg_at(sx, base), wf_arg_sym(sc), b[t->rank - 2], b[t->rank - 1],
        WF_BMODE_IJ);
    bin(L, NULL, WF_PEOP_ADD, wf_arg_at(sy, base), wf_arg_at(sy, base), wf_arg_at(sw, 0), b[t->rank - 2], b[t->rank - 1], WF_BMODE_IJ);
  }
  out->lowering = "local";
  out->predicted = outer * 4 * inner; /* two half-length copies, two multiplies, one add */
  return 0;
}
