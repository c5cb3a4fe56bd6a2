/* wafer-bench llm's cost model: one layer of a LLaMA-shaped model, op by op, from the
 * compiler's own predictions evaluated on the full-size blocks without building a program —
 * MeshGEMM (wf_gemm_predict, gemm_cost*.c), MeshGEMV with the K-tree (wf_gemv_predict,
 * gemv_cost.c), packed attention (wf_attention_predict, attention_cost.c), the allreduces of
 * the norms as the collectives' model chooses them (wf_coll_choose), and local ops at the PE
 * instruction costs of docs/cycle-model.md. Decode attention follows the decode_attention
 * lowering's count (docs/generation.md), written out below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/ops/attention_cost.h"
#include "passes/head_layout.h"
#include "tools/wafer-bench/llm.h"
#include "waferc/collectives.h"
#include "waferc/diag.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void wf_llm_shape_init(const wf_llm_model *m, int w, int h, int64_t tokens, int64_t ctx, wf_llm_shape *s) {
  memset(s, 0, sizeof *s);
  s->w = w, s->h = h, s->tokens = tokens, s->ctx = ctx;
  int64_t d = m->hidden / m->heads, group = m->heads / m->kv_heads;
  wf_head_layout_width(m->heads, d, 1, w, &s->dp, &s->eq);
  /* head_layout.c: kv heads packed with their query heads when a column holds whole groups */
  int64_t per_col = s->eq / w / s->dp;
  s->kv_shared = group > 1 && m->heads >= w && per_col >= 1 && per_col % group == 0;
  s->ekv = s->kv_shared ? (int64_t)w * (per_col / group) * d : s->eq;
  s->sb = cdiv(tokens, h);
  s->cap = cdiv(ctx, h);
}

int wf_llm_shape_colocate(const wf_llm_model *m, wf_llm_shape *s) {
  int64_t gm, parts, sub, pb;
  if (s->kv_shared || m->heads / m->kv_heads < 2 ||
      !wf_head_layout_kv_cut(m->heads, m->kv_heads, s->dp, s->eq, 1, s->w, &gm, &parts, &sub, &pb))
    return 0;
  int64_t group = m->heads / m->kv_heads;
  s->coloc_m = gm, s->coloc_group = group, s->coloc_parts = parts, s->coloc_sub = sub;
  s->eq = s->w * group * sub, s->ekv = s->w * sub;
  return 1;
}

void wf_llm_decode_tune(const wf_llm_model *m, const wf_target *t, wf_llm_shape *s) {
  int W = s->w, H = s->h;
  int64_t ky = cdiv(m->hidden, H), cq = cdiv(s->eq, W), ckv = cdiv(s->ekv, W), cf = cdiv(m->ffn, W);
  int64_t cv = cdiv(m->vocab, W);
  wf_coll_params p = wf_coll_params_from_target(t);
  int64_t nl = m->layers, *lens = malloc((size_t)(5 * nl + 1) * sizeof *lens);
  WF_ASSERT(lens != NULL); /* out of host memory: exit 7, said (ir/diag.c); not left untuned */
  for (int64_t l = 0; l < nl; l++) /* along y: q, k, v, gate, up; along x: o, down */
    lens[5 * l] = cq, lens[5 * l + 1] = lens[5 * l + 2] = ckv, lens[5 * l + 3] = lens[5 * l + 4] = cf;
  lens[5 * nl] = cv;
  wf_gemv_ktree_tune(H, lens, (int)(5 * nl + 1), &p, &s->gemv_k[0], &s->gemv_groups[0]);
  for (int64_t l = 0; l < 2 * nl; l++) lens[l] = ky;
  wf_gemv_ktree_tune(W, lens, (int)(2 * nl), &p, &s->gemv_k[1], &s->gemv_groups[1]);
  free(lens);
}

static void add(wf_llm_op *ops, int *n, const char *name, const char *kind, int count, int64_t cycles) {
  ops[*n] = (wf_llm_op){name, kind, count, cycles};
  (*n)++;
}

/* A 1D allreduce of len words over P PEs: the collectives' model choice (a max cannot ring). */
static int64_t allreduce(const wf_target *t, int P, int64_t len, int is_max) {
  if (P <= 1) return 0;
  wf_coll_params p = wf_coll_params_from_target(t);
  wf_coll_query q = {WF_COLL_ALLREDUCE, P, 1, len, 0, 0};
  if (is_max) q.allowed = ~0u & ~(1u << WF_COLL_RING);
  wf_coll_choice c;
  if (wf_coll_choose(&q, &p, &c)) return -1;
  return (int64_t)(c.predicted + 0.5);
}

/* rmsnorm over a last axis split over P PEs into blocks of n (lower_norm.c): the local sum of
 * squares, its allreduce, the scale; m rows. `padded`: the axis does not divide. */
static int64_t rmsnorm(const wf_target *t, int P, int64_t m, int64_t n, int padded) {
  int64_t stat = m * n * (padded && m > 1 ? 2 : 1);
  int64_t ar = allreduce(t, P, m, 0);
  return stat + (ar < 0 ? 0 : ar) + m * n * 3 + m * (2 + t->div_cycles) + (padded ? m * n : 0);
}

static int64_t gemm(const wf_target *t, const wf_llm_shape *s, int64_t m, int64_t k, int64_t n) {
  return wf_gemm_predict(t, WF_GEMM_MESHGEMM, s->w, s->h, m, k, n);
}

static void sum(wf_llm_cost *c) {
  c->layer_cycles = c->model_cycles = 0;
  for (int i = 0; i < c->n_layer; i++) c->layer_cycles += c->layer[i].count * c->layer[i].cycles;
  for (int i = 0; i < c->n_model; i++) c->model_cycles += c->model[i].count * c->model[i].cycles;
}

static int check(const wf_llm_cost *c) {
  for (int i = 0; i < c->n_layer; i++)
    if (c->layer[i].cycles < 0) {
      fprintf(stderr, "wafer-bench llm: the cost model cannot predict %s (%s) on this mesh\n", c->layer[i].name,
              c->layer[i].kind);
      return -1;
    }
  for (int i = 0; i < c->n_model; i++)
    if (c->model[i].cycles < 0) {
      fprintf(stderr, "wafer-bench llm: the cost model cannot predict %s (%s) on this mesh\n", c->model[i].name,
              c->model[i].kind);
      return -1;
    }
  return 0;
}

/* Prefill: activations {L_y, E_x}, weights {K_y, N_x}, every matmul MeshGEMM; attention packed
 * by head-layout (docs/attention.md). */
int wf_llm_prefill_cost(const wf_llm_model *m, const wf_target *t, const wf_llm_shape *s, wf_llm_cost *c) {
  memset(c, 0, sizeof *c);
  int W = s->w;
  int64_t sb = s->sb, ke = cdiv(m->hidden, W), cq = cdiv(s->eq, W), ckv = cdiv(s->ekv, W);
  int64_t cf = cdiv(m->ffn, W), cv = cdiv(m->vocab, W);
  int pe = ke * W != m->hidden, ec = t->exp_cycles;
  wf_llm_op *L = c->layer;
  int *n = &c->n_layer;
  add(L, n, "input_norm", "rmsnorm", 1, rmsnorm(t, W, sb, ke, pe));
  add(L, n, "q_proj", "meshgemm", 1, gemm(t, s, sb, ke, cq));
  add(L, n, "kv_proj", "meshgemm", 2, gemm(t, s, sb, ke, ckv));
  if (m->qkv_bias) {
    add(L, n, "q_bias", "elementwise", 1, sb * cq);
    add(L, n, "kv_bias", "elementwise", 2, sb * ckv);
  }
  add(L, n, "rope_q", "rotate_pairs", 1, 4 * sb * cq);
  add(L, n, "rope_k", "rotate_pairs", 1, 4 * sb * ckv);
  wf_attn_shape at = {s->h, 1, sb, cq, ckv, s->dp, s->kv_shared, 1, sb * s->h, 0, 0, 0, NULL, 0};
  add(L, n, "attention", "attention", 1, wf_attention_predict(t, &at));
  add(L, n, "o_proj", "meshgemm", 1, gemm(t, s, sb, cq, ke));
  add(L, n, "residual", "elementwise", 2, sb * ke);
  add(L, n, "post_norm", "rmsnorm", 1, rmsnorm(t, W, sb, ke, pe));
  add(L, n, "gate_up_proj", "meshgemm", 2, gemm(t, s, sb, ke, cf));
  add(L, n, "silu", "elementwise", 1, sb * cf * ec);
  add(L, n, "mul", "elementwise", 1, sb * cf);
  add(L, n, "down_proj", "meshgemm", 1, gemm(t, s, sb, cf, ke));
  wf_llm_op *M = c->model;
  n = &c->n_model;
  add(M, n, "embedding", "gather", 1, sb * ke); /* lower_index.c: one word per cycle */
  add(M, n, "final_norm", "rmsnorm", 1, rmsnorm(t, W, sb, ke, pe));
  add(M, n, "lm_head", "meshgemm", 1, gemm(t, s, sb, ke, cv));
  sum(c);
  return check(c);
}

/* decode_attention on `rows` rows: the lowering's local count (wf_decode_attention_local, which
 * lower_decode_attention.c asserts it agrees with) plus its three allreduces along the column. */
static int64_t decode_attention(const wf_target *t, const wf_llm_shape *s, int rows, int64_t cb, int64_t ckb,
                                int64_t hd, int64_t cap) {
  int64_t loc = s->coloc_m ? wf_decode_attention_slots(t, rows, s->coloc_group, ckb, s->coloc_m, cb, ckb, cap)
                           : wf_decode_attention_local(t, rows, cb, ckb, hd, cap);
  if (loc < 0) return -1;
  int64_t nh = s->coloc_m ? s->coloc_group : cb >= hd ? cb / hd : 1;
  if (rows > 1) loc += allreduce(t, rows, nh, 1) + allreduce(t, rows, nh, 0) + allreduce(t, rows, cb, 0);
  return loc;
}

/* Decode: the token BE_yL^x (E along y, replicated along x); each GEMV MeshGEMV with the
 * K-tree allreduce (WaferLLM §6.2; its shape per axis wf_llm_decode_tune's, else K = 2) along
 * the axis its K is split on, alternating: q, k, v, gate, up and the head reduce along y, o and
 * down along x; the KV cache {C_y, Nk_x}. */
static int64_t gemv(const wf_target *t, const wf_llm_shape *s, int along_x, int64_t k, int64_t n) {
  int K = s->gemv_k[along_x] > 0 ? s->gemv_k[along_x] : 2, g = s->gemv_k[along_x] > 0 ? s->gemv_groups[along_x] : 0;
  return wf_gemv_predict(t, along_x ? s->w : s->h, k, n, "ktree", K, g, NULL);
}

int wf_llm_decode_cost(const wf_llm_model *m, const wf_target *t, const wf_llm_shape *s, wf_llm_cost *c) {
  memset(c, 0, sizeof *c);
  int W = s->w, H = s->h;
  int64_t ky = cdiv(m->hidden, H), cq = cdiv(s->eq, W), ckv = cdiv(s->ekv, W), cf = cdiv(m->ffn, W);
  int64_t cv = cdiv(m->vocab, W);
  int pe = ky * H != m->hidden;
  wf_llm_op *L = c->layer;
  int *n = &c->n_layer;
  add(L, n, "input_norm", "rmsnorm", 1, rmsnorm(t, H, 1, ky, pe));
  add(L, n, "q_proj", "meshgemv:ktree", 1, gemv(t, s, 0, ky, cq));
  add(L, n, "kv_proj", "meshgemv:ktree", 2, gemv(t, s, 0, ky, ckv));
  if (m->qkv_bias) {
    add(L, n, "q_bias", "elementwise", 1, cq);
    add(L, n, "kv_bias", "elementwise", 2, ckv);
  }
  add(L, n, "rope_q", "rotate_pairs", 1, 4 * cq);
  add(L, n, "rope_k", "rotate_pairs", 1, 4 * ckv);
  add(L, n, "decode_attention", "decode_attention", 1, decode_attention(t, s, H, cq, ckv, s->dp, s->cap));
  add(L, n, "o_proj", "meshgemv:ktree", 1, gemv(t, s, 1, cq, ky));
  add(L, n, "residual", "elementwise", 2, ky);
  add(L, n, "post_norm", "rmsnorm", 1, rmsnorm(t, H, 1, ky, pe));
  add(L, n, "gate_up_proj", "meshgemv:ktree", 2, gemv(t, s, 0, ky, cf));
  add(L, n, "silu", "elementwise", 1, cf * t->exp_cycles);
  add(L, n, "mul", "elementwise", 1, cf);
  add(L, n, "down_proj", "meshgemv:ktree", 1, gemv(t, s, 1, cf, ky));
  wf_llm_op *M = c->model;
  n = &c->n_model;
  add(M, n, "embedding", "gather", 1, ky);
  add(M, n, "final_norm", "rmsnorm", 1, rmsnorm(t, H, 1, ky, pe));
  add(M, n, "lm_head", "meshgemv:ktree", 1, gemv(t, s, 0, ky, cv));
  sum(c);
  return check(c);
}

int64_t wf_llm_weight_words(const wf_llm_model *m, const wf_llm_shape *s) {
  int64_t ky = cdiv(m->hidden, s->h), cq = cdiv(s->eq, s->w), ckv = cdiv(s->ekv, s->w), cf = cdiv(m->ffn, s->w);
  int64_t qy = cdiv(s->eq, s->h), fy = cdiv(m->ffn, s->h), kx = cdiv(m->hidden, s->w);
  return ky * cq + 2 * ky * ckv + qy * kx + 2 * ky * cf + fy * kx;
}
