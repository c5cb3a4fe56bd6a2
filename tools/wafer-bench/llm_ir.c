/* IR text of the layer wafer-bench llm simulates (BENCHMARKS.md, "Full-size estimates", "Simulated").
 *
 * Weights are function arguments, not constants: timing mode (cycles only) reads no data, so
 * the run leaves them unset and the plan carries no weights.bin (a full-size layer's would be
 * gigabytes of synthetic values that nothing reads). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "tools/wafer-bench/llm.h"

typedef struct buf {
  char *s;
  size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->n + (size_t)need + 1 > b->cap) {
    b->cap = (b->n + (size_t)need + 1) * 2;
    b->s = realloc(b->s, b->cap);
    WF_ASSERT(b->s);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)need;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Prefill: one layer in head-layout's packed form (what canonicalize, raise, cse, dce and
 * head-layout print for an exported LLaMA layer) on an S x S region, every dim sized so that
 * partition gives the full-size run's blocks: P = sb S rows, E = ke S, q's E'' = cq S, ... The
 * heads keep their packed head dim (a split head spans the same g columns), so S >= g. */
char *wf_llm_prefill_ir(const wf_llm_model *m, const wf_llm_shape *f, int S) {
  int64_t W = f->w;
  int64_t P = f->sb * S, E = cdiv(m->hidden, W) * S, Eq = cdiv(f->eq, W) * S, Ekv = cdiv(f->ekv, W) * S;
  int64_t F = cdiv(m->ffn, W) * S;
  int64_t heads = Eq / f->dp, group = m->heads / m->kv_heads;
  if (heads < 1) return NULL;
  int64_t kvh = f->kv_shared ? heads / group : 0;
  if (f->kv_shared && (kvh < 1 || heads % kvh || kvh * f->dp > Ekv)) return NULL;
  buf b = {0};
  put(&b, "module @llm_prefill_layer {\n");
  put(&b, "  func @main(%%x: f32[1, %lld, %lld], %%wn1: f32[%lld], %%wq: f32[%lld, %lld], "
          "%%wk: f32[%lld, %lld], %%wv: f32[%lld, %lld], %%cq: f32[%lld, %lld], %%sq: f32[%lld, %lld], "
          "%%ck: f32[%lld, %lld], %%sk: f32[%lld, %lld], %%wo: f32[%lld, %lld], %%wn2: f32[%lld], "
          "%%wg: f32[%lld, %lld], %%wu: f32[%lld, %lld], %%wd: f32[%lld, %lld]",
      (long long)P, (long long)E, (long long)E, (long long)E, (long long)Eq, (long long)E, (long long)Ekv,
      (long long)E, (long long)Ekv, (long long)P, (long long)Eq, (long long)P, (long long)Eq, (long long)P,
      (long long)Ekv, (long long)P, (long long)Ekv, (long long)Eq, (long long)E, (long long)E, (long long)E,
      (long long)F, (long long)E, (long long)F, (long long)F, (long long)E);
  if (m->qkv_bias)
    put(&b, ", %%bq: f32[%lld], %%bk: f32[%lld], %%bv: f32[%lld]", (long long)Eq, (long long)Ekv, (long long)Ekv);
  put(&b, ") -> f32[1, %lld, %lld] {\n", (long long)P, (long long)E);
  const char *q0 = "%q0", *k0 = "%k0", *v = "%v";
  put(&b, "    %%h = rmsnorm(%%x, %%wn1) {axis = -1, epsilon = 1e-05} : f32[1, %lld, %lld]\n", (long long)P,
      (long long)E);
  put(&b, "    %%q0 = matmul(%%h, %%wq) : f32[1, %lld, %lld]\n", (long long)P, (long long)Eq);
  put(&b, "    %%k0 = matmul(%%h, %%wk) : f32[1, %lld, %lld]\n", (long long)P, (long long)Ekv);
  put(&b, "    %%v = matmul(%%h, %%wv) : f32[1, %lld, %lld]\n", (long long)P, (long long)Ekv);
  if (m->qkv_bias) {
    put(&b, "    %%q0b = add(%%q0, %%bq) : f32[1, %lld, %lld]\n", (long long)P, (long long)Eq);
    put(&b, "    %%k0b = add(%%k0, %%bk) : f32[1, %lld, %lld]\n", (long long)P, (long long)Ekv);
    put(&b, "    %%vb = add(%%v, %%bv) : f32[1, %lld, %lld]\n", (long long)P, (long long)Ekv);
    q0 = "%q0b", k0 = "%k0b", v = "%vb";
  }
  put(&b, "    %%q = rotate_pairs(%s, %%cq, %%sq) : f32[1, %lld, %lld]\n", q0, (long long)P, (long long)Eq);
  put(&b, "    %%k = rotate_pairs(%s, %%ck, %%sk) : f32[1, %lld, %lld]\n", k0, (long long)P, (long long)Ekv);
  put(&b, "    %%att = attention(%%q, %%k, %s) {scale = 0.088, causal = true, heads = %lld, head_dim = %lld", v,
      (long long)heads, (long long)f->dp);
  if (kvh) put(&b, ", kv_heads = %lld", (long long)kvh);
  put(&b, "} : f32[1, %lld, %lld]\n", (long long)P, (long long)Eq);
  put(&b, "    %%o = matmul(%%att, %%wo) : f32[1, %lld, %lld]\n", (long long)P, (long long)E);
  put(&b, "    %%r1 = add(%%x, %%o) : f32[1, %lld, %lld]\n", (long long)P, (long long)E);
  put(&b, "    %%h2 = rmsnorm(%%r1, %%wn2) {axis = -1, epsilon = 1e-05} : f32[1, %lld, %lld]\n", (long long)P,
      (long long)E);
  put(&b, "    %%g = matmul(%%h2, %%wg) : f32[1, %lld, %lld]\n", (long long)P, (long long)F);
  put(&b, "    %%gs = silu(%%g) : f32[1, %lld, %lld]\n", (long long)P, (long long)F);
  put(&b, "    %%u = matmul(%%h2, %%wu) : f32[1, %lld, %lld]\n", (long long)P, (long long)F);
  put(&b, "    %%gu = mul(%%gs, %%u) : f32[1, %lld, %lld]\n", (long long)P, (long long)F);
  put(&b, "    %%d = matmul(%%gu, %%wd) : f32[1, %lld, %lld]\n", (long long)P, (long long)E);
  put(&b, "    %%r2 = add(%%r1, %%d) : f32[1, %lld, %lld]\n", (long long)P, (long long)E);
  put(&b, "    return %%r2\n  }\n}\n");
  return b.s;
}

/* The K-tree's levels for a GEMV reducing along y (ax 0) or x (1): wf_llm_decode_tune's, else 2. */
static int shape_k(const wf_llm_shape *s, int ax) { return s->gemv_k[ax] > 0 ? s->gemv_k[ax] : 2; }

/* Decode: the layer's ops with the blocks of the decode layout (BENCHMARKS.md, "Full-size estimates"), each
 * dist.gemv MeshGEMV with the K-tree in the shape the compiler picks for its axis (wf_llm_decode_tune). The dist.gemv lowering reduces along x, so every
 * GEMV is written with its K along x; on a square mesh a reduce along y has the same cycles.
 * Each op reads its own argument where the real layer would read the previous op's result in
 * the other axis' layout: timing mode moves no data and every op's cost depends only on its
 * blocks, so the ops run the same programs in the same order. decode_attention reads q, k, v
 * {B, 1, N_x} and caches of cap slots per row {B, C_y, Nk_x}; llm.c sets every row's count to
 * cap and the growing row to 0 (every row below it shifts: the most the append moves). */
char *wf_llm_decode_ir(const wf_llm_model *m, const wf_llm_shape *s) {
  int64_t W = s->w, H = s->h;
  int64_t E = cdiv(m->hidden, H) * W, Eq = cdiv(s->eq, W) * H, Ekv = cdiv(s->ekv, W) * H;
  int64_t F = cdiv(m->ffn, W) * H;
  /* in the sample's transposed form: K along x (blocks of E / W = the real ceil(E / H)), N along
   * y (blocks of N / H = the real ceil(N / W)); W = H */
  buf b = {0};
  put(&b, "module @llm_decode_layer {\n  region @mesh = rect(0, 0, %lld, %lld)\n", (long long)W, (long long)H);
  put(&b, "  func @main(%%x: f32[%lld]{E_x} @mesh, %%wn: f32[%lld]{E_x} @mesh", (long long)E, (long long)E);
  struct { const char *w; int64_t k, n; } g[] = {{"wq", E, Eq}, {"wk", E, Ekv}, {"wv", E, Ekv}, {"wo", Eq, E},
                                                  {"wg", E, F}, {"wu", E, F}, {"wd", F, E}};
  for (int i = 0; i < 7; i++)
    put(&b, ", %%%s: f32[%lld, %lld]{K_x, N_y} @mesh, %%%s_in: f32[%lld]{K_x} @mesh", g[i].w, (long long)g[i].k,
        (long long)g[i].n, g[i].w, (long long)g[i].k);
  int64_t nq = cdiv(s->eq, W) * W, nk = cdiv(s->ekv, W) * W, C = s->cap * H;
  put(&b, ", %%qa: f32[1, 1, %lld]{B, S, N_x} @mesh, %%ka: f32[1, 1, %lld]{B, S, N_x} @mesh, "
          "%%va: f32[1, 1, %lld]{B, S, N_x} @mesh, %%kc: f32[1, %lld, %lld]{B, C_y, N_x} @mesh, "
          "%%vc: f32[1, %lld, %lld]{B, C_y, N_x} @mesh",
      (long long)nq, (long long)nk, (long long)nk, (long long)C, (long long)nk, (long long)C, (long long)nk);
  put(&b, ", %%qr: f32[1, %lld]{B, N_x} @mesh, %%kr: f32[1, %lld]{B, N_x} @mesh", (long long)(cdiv(s->eq, W) * W),
      (long long)(cdiv(s->ekv, W) * W));
  put(&b, ", %%cq: f32[1, %lld]{B, N_x} @mesh, %%ck: f32[1, %lld]{B, N_x} @mesh", (long long)(cdiv(s->eq, W) * W),
      (long long)(cdiv(s->ekv, W) * W));
  put(&b, ") -> f32[%lld]{N_y} @mesh {\n", (long long)E);
  put(&b, "    %%h = rmsnorm(%%x, %%wn) {axis = -1, epsilon = 1e-05} : f32[%lld]{E_x} @mesh\n", (long long)E);
  for (int i = 0; i < 7; i++) {
    int ax = i == 3 || i == 6; /* o and down reduce along x in the real step, the others along y */
    put(&b, "    %%%s_out = dist.gemv(%%%s_in, %%%s) {allreduce = ktree, k = %d, groups = %d} : f32[%lld]{N_y} @mesh\n",
        g[i].w, g[i].w, g[i].w, shape_k(s, ax), s->gemv_groups[ax], (long long)g[i].n);
    if (i == 2) { /* RoPE on q and k (their real layout: a token row, the heads along x) */
      put(&b, "    %%qrot = rotate_pairs(%%qr, %%cq, %%cq) : f32[1, %lld]{B, N_x} @mesh\n",
          (long long)(cdiv(s->eq, W) * W));
      put(&b, "    %%krot = rotate_pairs(%%kr, %%ck, %%ck) : f32[1, %lld]{B, N_x} @mesh\n",
          (long long)(cdiv(s->ekv, W) * W));
    }
    if (i == 2) {
      put(&b, "    %%att = decode_attention(%%qa, %%ka, %%va, %%kc, %%vc) {scale = 0.088, heads = %lld, head_dim = %lld",
          (long long)m->heads, (long long)s->dp);
      if (s->kv_shared) put(&b, ", kv_heads = %lld", (long long)m->kv_heads);
      if (s->coloc_m)
        put(&b, ", kv_gather = [%lld, %lld, %lld, %lld], q_colocated = true", (long long)s->coloc_m,
            (long long)s->coloc_group, (long long)s->coloc_parts, (long long)s->coloc_sub);
      put(&b, "} : f32[1, 1, %lld]{B, S, N_x} @mesh\n", (long long)nq);
    }
    if (i == 3) put(&b, "    %%r1 = add(%%wo_out, %%wo_out) : f32[%lld]{N_y} @mesh\n", (long long)E);
    if (i == 3)
      put(&b, "    %%h2 = rmsnorm(%%x, %%wn) {axis = -1, epsilon = 1e-05} : f32[%lld]{E_x} @mesh\n", (long long)E);
    if (i == 5) {
      put(&b, "    %%gs = silu(%%wg_out) : f32[%lld]{N_y} @mesh\n", (long long)F);
      put(&b, "    %%gu = mul(%%gs, %%wu_out) : f32[%lld]{N_y} @mesh\n", (long long)F);
    }
  }
  put(&b, "    %%r2 = add(%%wd_out, %%r1) : f32[%lld]{N_y} @mesh\n", (long long)E);
  put(&b, "    return %%r2\n  }\n}\n");
  (void)m;
  return b.s;
}

/* The once-per-pass ops after the last layer, sampled like the layer: prefill's final norm and
 * LM head (all P rows, MeshGEMM) on S x S with the full-size blocks; decode's final norm and LM
 * head (MeshGEMV with the K-tree) at the full decode mesh. The embedding gather (one word per
 * cycle, a few dozen cycles) stays the cost model's. */
char *wf_llm_once_ir(const wf_llm_model *m, const wf_llm_shape *s, int S, int decode) {
  buf b = {0};
  if (!decode) {
    int64_t P = s->sb * S, E = cdiv(m->hidden, s->w) * S, V = cdiv(m->vocab, s->w) * S;
    put(&b, "module @llm_prefill_once {\n  func @main(%%x: f32[1, %lld, %lld], %%wn: f32[%lld], %%wlm: f32[%lld, %lld])"
            " -> f32[1, %lld, %lld] {\n", (long long)P, (long long)E, (long long)E, (long long)E, (long long)V,
        (long long)P, (long long)V);
    put(&b, "    %%h = rmsnorm(%%x, %%wn) {axis = -1, epsilon = 1e-05} : f32[1, %lld, %lld]\n", (long long)P,
        (long long)E);
    put(&b, "    %%logits = matmul(%%h, %%wlm) : f32[1, %lld, %lld]\n    return %%logits\n  }\n}\n", (long long)P,
        (long long)V);
    return b.s;
  }
  int64_t W = s->w, H = s->h, E = cdiv(m->hidden, H) * W, V = cdiv(m->vocab, W) * H;
  put(&b, "module @llm_decode_once {\n  region @mesh = rect(0, 0, %lld, %lld)\n", (long long)W, (long long)H);
  put(&b, "  func @main(%%x: f32[%lld]{E_x} @mesh, %%wn: f32[%lld]{E_x} @mesh, %%wlm: f32[%lld, %lld]{K_x, N_y} @mesh)"
          " -> f32[%lld]{N_y} @mesh {\n", (long long)E, (long long)E, (long long)E, (long long)V, (long long)V);
  put(&b, "    %%h = rmsnorm(%%x, %%wn) {axis = -1, epsilon = 1e-05} : f32[%lld]{E_x} @mesh\n", (long long)E);
  put(&b, "    %%logits = dist.gemv(%%h, %%wlm) {allreduce = ktree, k = %d, groups = %d} : f32[%lld]{N_y} @mesh\n",
      shape_k(s, 0), s->gemv_groups[0], (long long)V);
  put(&b, "    return %%logits\n  }\n}\n");
  return b.s;
}
