/* decode_attention (passes/decode_step.c): one decode step's attention over a KV cache held on
 * the mesh (docs/generation.md).
 *
 * Layouts (partition's rule): q, k, v and the result [1, 1, N] are {B, 1, N_x}, so every row
 * of PEs holds the token's columns; the caches [1, C, Nk] are {B, C_y, Nk_x}: each row holds
 * `cap` = C / H slots of its columns, the prefill's k/v blocks where they were computed. Head
 * slots per PE as in the prefill's attention (lower_attention.c): nh whole heads of ds = hd
 * columns, or one part (ds = cb) of a head spread over g columns; or, q colocated with the kv
 * pieces (head-layout{gqa=colocate}), the group query heads' pieces of ds = sub columns, all
 * reading the PE's one kv piece, summed over the kv head's m columns: the cache holds each kv
 * head once, cut over m columns.
 *
 * The host sets two terms per step (runtime: wf_sim_set_step): R, the row whose cache grows, and
 * C, the tokens the PE's row holds after the append. The step:
 *   append   shift policy: the rows below R each hand their slot 0 (K and V) to the row above,
 *            all at once (async send and receive, one hop each), and put what arrives from below
 *            (the bottom row: the new token) in that slot; row R stores what arrives (or, when R
 *            is the bottom row, the new token) in its new slot C - 1. The concat policy is R =
 *            H - 1 always: no row hands anything up. Every row holds the same count ±1 under
 *            shift (the host picks R as the bottom-most of the least filled rows).
 *   scores   per head slot: the row's C keys (a strided copy of the slot's columns), s = K q
 *            (q scaled once), summed over the head's g columns when it spans several; the
 *            C..cap tail of s is masked to -big (data-independent: C is a term).
 *   softmax  over the column: the max of each head's scores allreduced along y, exp, the sums
 *            allreduced along y.
 *   ·V       each row's p · V over its C keys, allreduced along y, divided by the sum: every
 *            row ends with the result (the {B, 1, N_x} layout). */
#include "backend/collectives/lower_collective.h"
#include "backend/ops/attention_cost.h"
#include "backend/resources/lower.h"
#include "waferc/diag.h"

#define NEG_BIG (-1e30f)

/* sym + scale * C + k (a slot chosen by the row's count). */
static wf_pe_arg at_c(int sym, int64_t off, int scale, int64_t k) {
  wf_pe_arg a = wf_arg_at(sym, off);
  a.term = (wf_pe_term){WF_TERM_C, 0, 0, (int32_t)k, scale == 1 ? 0 : scale};
  return a;
}

static wf_pe_arg int_c(int scale, int64_t k) {
  return wf_arg_term((wf_pe_term){WF_TERM_C, 0, 0, (int32_t)k, scale == 1 ? 0 : scale});
}

static void bin(wf_lower *L, const wf_pe_guard *g, wf_peop op, wf_pe_arg d, wf_pe_arg a, wf_pe_arg b, wf_pe_arg m,
                wf_pe_arg n, int mode) {
  wf_emit(L, g, op, (wf_pe_arg[]){d, a, b, m, n, wf_arg_int(mode)});
}

static void copy2d(wf_lower *L, const wf_pe_guard *g, wf_pe_arg d, wf_pe_arg s, wf_pe_arg rows, int64_t cols,
                   int64_t dstride, int64_t sstride) {
  wf_emit(L, g, WF_PEOP_COPY2D,
          (wf_pe_arg[]){d, s, rows, wf_arg_int(cols), wf_arg_int(dstride), wf_arg_int(sstride)});
}

static void copy(wf_lower *L, const wf_pe_guard *g, wf_pe_arg d, wf_pe_arg s, int64_t n) {
  wf_emit(L, g, WF_PEOP_COPY, (wf_pe_arg[]){d, s, wf_arg_int(n)});
}

static int check(wf_lower *L, const wf_op *op) {
  for (int i = 0; i < 6; i++) {
    wf_value v = i < 5 ? op->operands[i] : op->results[0];
    const wf_type *t = wf_value_type(L->f, v);
    int cache = i == 3 || i == 4;
    if (t->rank != 3 || t->layout.rank != 3 || t->layout.dims[0].split != WF_AXIS_NONE ||
        t->layout.dims[2].split == WF_AXIS_Y || (!cache && t->layout.dims[1].split != WF_AXIS_NONE) ||
        (cache && t->layout.dims[1].split == WF_AXIS_X) || t->dims[0] != 1) {
      wf_error(op->loc, "decode_attention: the token must be laid out {B, 1, N_x} and the caches {B, C_y, N_x} "
                        "(partition's rule), batch 1");
      return WF_EXIT_UNSUPPORTED;
    }
  }
  return 0;
}

int wf_lower_decode_attention(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  if (check(L, op)) return WF_EXIT_UNSUPPORTED;
  wf_func *f = L->f;
  int64_t heads = wf_op_int(f, op, "heads", 0), hd = wf_op_int(f, op, "head_dim", 0);
  int64_t kvh = wf_op_int(f, op, "kv_heads", 0);
  const wf_type *qt = wf_value_type(f, op->operands[0]), *ct = wf_value_type(f, op->operands[3]);
  int64_t bq[WF_MAX_RANK], bc[WF_MAX_RANK];
  wf_lower_block_dims(L, qt, bq);
  wf_lower_block_dims(L, ct, bc);
  int64_t cb = bq[2], cap = bc[1], ckb = bc[2];
  int rows = ct->layout.dims[1].split == WF_AXIS_Y ? L->h : 1;
  wf_attn_slots hs;
  if (wf_lower_attn_slots(L, op, "decode_attention", heads, hd, kvh, cb, ckb, &hs)) return WF_EXIT_UNSUPPORTED;
  int coloc = wf_op_int(f, op, "q_colocated", 0) != 0;
  int64_t nh = hs.nh, ds = hs.ds, g = hs.g, nkv = hs.nkv;
  int64_t share = nh / nkv;
  float scale = (float)wf_op_float(f, op, "scale", 1.0);
  int sq = wf_lower_sym(L, op->operands[0]), sk = wf_lower_sym(L, op->operands[1]);
  int sv = wf_lower_sym(L, op->operands[2]), skc = wf_lower_sym(L, op->operands[3]);
  int svc = wf_lower_sym(L, op->operands[4]), so = wf_lower_sym(L, op->results[0]);
  int qs = wf_lower_temp(L, "$dec_q", cb * 4), sc = wf_lower_temp(L, "$dec_s", nh * cap * 4);
  int kt = wf_lower_temp(L, "$dec_kt", cap * ds * 4), acc = wf_lower_temp(L, "$dec_acc", cb * 4);
  int smax = wf_lower_temp(L, "$dec_max", nh * 4), ssum = wf_lower_temp(L, "$dec_sum", nh * 4);
  int kscale = wf_lower_scalar(L, scale), kneg = wf_lower_scalar(L, NEG_BIG);
  int64_t fm = L->t->fmac_per_cycle > 0 ? L->t->fmac_per_cycle : 1, ec = L->t->exp_cycles, dc = L->t->div_cycles;
  wf_pe_term ty = wf_term(WF_TERM_Y, 0), tr = wf_term(WF_TERM_R, 0), tlast = wf_term(WF_TERM_INT, L->h - 1);
  int64_t pred = 0;

  /* ---- append ---- */
  int64_t kw = ckb; /* words of one token's K (or V) on a PE */
  if (rows > 1) {
    /* A router holds one rx -> tx rule per color: a row sends up on the color of its parity
     * and takes its lower neighbour's on the other. */
    int *up = L->dec_up, first = !L->dec_up_set;
    if (first) {
      up[0] = wf_lower_color_fresh(L, "decode KV cache shift up (even rows send)", op->loc);
      up[1] = wf_lower_color_fresh(L, "decode KV cache shift up (odd rows send)", op->loc);
      if (up[0] < 0 || up[1] < 0) return WF_EXIT_NOFIT;
      L->dec_up_set = 1;
    }
    for (int p = 0; p < 2 && first; p++) {
      wf_pe_guard par = wf_guard0();
      wf_gadd_mod(&par, ty, 2, p);
      wf_pe_class_add_route(L->cls, &par, up[p], WF_DIR_RAMP, 1u << WF_DIR_N);
      wf_pe_class_add_route(L->cls, &par, up[1 - p], WF_DIR_S, 1u << WF_DIR_RAMP);
    }
    int outb = wf_lower_temp(L, "$dec_up_out", 2 * kw * 4), inb = wf_lower_temp(L, "$dec_up_in", 2 * kw * 4);
    int done = wf_lower_done_task(L);
    wf_pe_guard send = wf_guard0(), recv = wf_guard0();
    wf_gadd(&send, ty, WF_CMP_GT, tr);   /* rows below R hand one token up */
    wf_gadd(&recv, ty, WF_CMP_GE, tr);   /* ... and rows R .. H-2 take one from below */
    wf_gadd(&recv, ty, WF_CMP_LT, tlast);
    copy(L, &send, wf_arg_at(outb, 0), wf_arg_at(skc, 0), kw);
    copy(L, &send, wf_arg_at(outb, kw), wf_arg_at(svc, 0), kw);
    for (int p = 0; p < 2; p++) {
      wf_pe_guard rp = recv, sp = send;
      wf_gadd_mod(&rp, ty, 2, p);
      wf_gadd_mod(&sp, ty, 2, p);
      wf_emit(L, &rp, WF_PEOP_ARECV,
              (wf_pe_arg[]){wf_arg_int(up[1 - p]), wf_arg_sym(inb), wf_arg_int(2 * kw), wf_arg_int(done)});
      wf_emit(L, &sp, WF_PEOP_ASEND,
              (wf_pe_arg[]){wf_arg_int(up[p]), wf_arg_sym(outb), wf_arg_int(2 * kw), wf_arg_int(done)});
    }
    wf_emit(L, NULL, WF_PEOP_WAIT, NULL);
    wf_pe_guard mid = send, at_r = wf_guard0();
    wf_gadd(&mid, ty, WF_CMP_LT, tlast); /* R < y < H-1: what came from below into slot 0 */
    copy(L, &mid, wf_arg_at(skc, 0), wf_arg_at(inb, 0), kw);
    copy(L, &mid, wf_arg_at(svc, 0), wf_arg_at(inb, kw), kw);
    wf_gadd(&at_r, ty, WF_CMP_EQ, tr); /* row R, not the bottom: into its new slot C - 1 */
    wf_gadd(&at_r, ty, WF_CMP_LT, tlast);
    wf_emit(L, &at_r, WF_PEOP_COPY, (wf_pe_arg[]){at_c(skc, 0, (int)kw, -kw), wf_arg_at(inb, 0), wf_arg_int(kw)});
    wf_emit(L, &at_r, WF_PEOP_COPY, (wf_pe_arg[]){at_c(svc, 0, (int)kw, -kw), wf_arg_at(inb, kw), wf_arg_int(kw)});
    wf_pe_guard bot = wf_guard0(); /* the bottom row below R: the new token into slot 0 */
    wf_gadd(&bot, ty, WF_CMP_EQ, tlast);
    wf_gadd(&bot, ty, WF_CMP_GT, tr);
    copy(L, &bot, wf_arg_at(skc, 0), wf_arg_at(sk, 0), kw);
    copy(L, &bot, wf_arg_at(svc, 0), wf_arg_at(sv, 0), kw);
    pred += 2 * kw + 2 * kw + L->t->hop_cycles + 2 * L->t->ramp_cycles + 2 * kw;
  }
  wf_pe_guard newslot = wf_guard0(); /* R is the bottom row (always under concat) */
  wf_gadd(&newslot, ty, WF_CMP_EQ, tr);
  wf_gadd(&newslot, ty, WF_CMP_EQ, tlast);
  wf_emit(L, &newslot, WF_PEOP_COPY, (wf_pe_arg[]){at_c(skc, 0, (int)kw, -kw), wf_arg_at(sk, 0), wf_arg_int(kw)});
  wf_emit(L, &newslot, WF_PEOP_COPY, (wf_pe_arg[]){at_c(svc, 0, (int)kw, -kw), wf_arg_at(sv, 0), wf_arg_int(kw)});
  pred += 2 * kw;

  /* ---- scores: s[k][0..cap) = K_slot q_k for the row's C keys, -big past them ---- */
  bin(L, NULL, WF_PEOP_MUL, wf_arg_at(qs, 0), wf_arg_at(sq, 0), wf_arg_at(kscale, 0), wf_arg_int(1), wf_arg_int(cb), WF_BMODE_I);
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_int(nh * cap)});
  pred += 2 * cb + nh * cap;
  for (int64_t k = 0; k < nh; k++) {
    copy2d(L, NULL, wf_arg_at(kt, 0), wf_arg_at(skc, (k / share) * ds), int_c(1, 0), ds, ds, ckb);
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_at(sc, k * cap), wf_arg_sym(kt), wf_arg_at(qs, k * ds), int_c(1, 0), wf_arg_int(ds), wf_arg_int(1)});
    pred += cap * ds + (cap * ds + fm - 1) / fm;
  }
  if (g > 1) {
    wf_attn_group G;
    int rc = wf_lower_attn_group_init(L, &G, (int)g, op->loc);
    if (rc) return rc;
    pred += wf_lower_attn_group_sum(L, &G, sc, nh * cap);
  }
  for (int64_t k = 0; k < nh; k++) /* the tail past C: -big (a row holding nothing: all of it) */
    bin(L, NULL, WF_PEOP_ADD, at_c(sc, k * cap, 1, 0), at_c(sc, k * cap, 1, 0), wf_arg_at(kneg, 0), wf_arg_int(1),
        int_c(-1, cap), WF_BMODE_I);
  pred += nh * cap;

  /* ---- softmax over the column ---- */
  int64_t cyc = 0;
  wf_emit(L, NULL, WF_PEOP_RMAX, (wf_pe_arg[]){wf_arg_sym(smax), wf_arg_sym(sc), wf_arg_int(nh), wf_arg_int(cap)});
  int rc = rows > 1 ? wf_lower_allreduce(L, smax, nh, WF_AXIS_Y, 1, op->loc, &cyc, NULL) : 0;
  if (rc) return rc;
  bin(L, NULL, WF_PEOP_SUB, wf_arg_sym(sc), wf_arg_sym(sc), wf_arg_sym(smax), wf_arg_int(nh), wf_arg_int(cap), WF_BMODE_I);
  wf_emit(L, NULL, WF_PEOP_EXP, (wf_pe_arg[]){wf_arg_sym(sc), wf_arg_sym(sc), wf_arg_int(nh * cap)});
  wf_emit(L, NULL, WF_PEOP_RSUM, (wf_pe_arg[]){wf_arg_sym(ssum), wf_arg_sym(sc), wf_arg_int(nh), wf_arg_int(cap)});
  if (rows > 1 && (rc = wf_lower_allreduce(L, ssum, nh, WF_AXIS_Y, 0, op->loc, &cyc, NULL)) != 0) return rc;
  pred += nh * cap * (2 + ec) + 2 * nh * cap;

  /* ---- p V over the row's keys, summed along the column ---- */
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(acc), wf_arg_int(cb)});
  for (int64_t k = 0; k < nh; k++) {
    copy2d(L, NULL, wf_arg_at(kt, 0), wf_arg_at(svc, (k / share) * ds), int_c(1, 0), ds, ds, ckb);
    wf_emit(L, NULL, WF_PEOP_MATMUL,
            (wf_pe_arg[]){wf_arg_at(acc, k * ds), wf_arg_at(sc, k * cap), wf_arg_sym(kt), wf_arg_int(1), int_c(1, 0), wf_arg_int(ds)});
    pred += cap * ds + (cap * ds + fm - 1) / fm;
  }
  if (rows > 1 && (rc = wf_lower_allreduce(L, acc, cb, WF_AXIS_Y, 0, op->loc, &cyc, NULL)) != 0) return rc;
  for (int64_t k = 0; k < nh; k++)
    bin(L, NULL, WF_PEOP_DIV, wf_arg_at(so, k * ds), wf_arg_at(acc, k * ds), wf_arg_at(ssum, k), wf_arg_int(1), wf_arg_int(ds),
        WF_BMODE_I);
  pred += cb * (dc + 1) + cyc;
  out->predicted = pred;
  WF_ASSERT(pred - cyc == wf_decode_attention_slots(L->t, rows, nh, ds, g, cb, ckb, cap)); /* attention_cost.c */
  snprintf(out->text, sizeof out->text, "decode-heads-%s%s%s", g > 1 ? "split" : "whole", coloc ? "-colocated" : "",
           rows > 1 ? "-cache-y" : "");
  out->lowering = out->text;
  return 0;
}
