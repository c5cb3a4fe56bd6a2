/* The training workloads of WATOS §V-A: dense Llama2-30B, Llama3-70B, GPT-175B and MoE
 * GShard-137B, DeepSeek-V3. Shapes are the published architectures; where WATOS names a model
 * whose shape it does not give, the `source` string says what we took. */
#include <string.h>

#include "runtime/die/train.h"

static const wf_train_model models[] = {
    /* name, layers, hidden, heads, kv, ffn, vocab, gated, experts, topk, effn, shared, every, dense_first */
    {"llama2-30b", 60, 6656, 52, 52, 17920, 32000, 1, 0, 0, 0, 0, 1, 0,
     "LLaMA-33B shape (60 x 6656, 52 heads, SwiGLU 17920): WATOS's 'Llama2-30B'"},
    {"llama3-70b", 80, 8192, 64, 8, 28672, 128256, 1, 0, 0, 0, 0, 1, 0, "Llama 3 70B (GQA, 8 KV heads)"},
    {"gpt-175b", 96, 12288, 96, 96, 49152, 50257, 0, 0, 0, 0, 0, 1, 0, "GPT-3 175B"},
    {"gshard-137b", 36, 4096, 32, 32, 14336, 32000, 0, 64, 2, 14336, 0, 2, 0,
     "GShard-style MoE, our reading: 36 layers, every 2nd of 64 experts top-2 (~140B parameters)"},
    {"deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 1, 256, 8, 2048, 1, 1, 3,
     "DeepSeek-V3: 3 dense then 58 MoE layers, 256+1 experts top-8; MLA taken as MHA of 7168"},
};

const wf_train_model *wf_train_models(int *count) {
  *count = (int)(sizeof models / sizeof models[0]);
  return models;
}

const wf_train_model *wf_train_model_find(const char *name) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
    if (!strcmp(models[i].name, name)) return &models[i];
  return NULL;
}

static int is_moe(const wf_train_model *m, int layer) {
  return m->experts > 0 && layer >= m->dense_first && (layer - m->dense_first) % m->moe_every == m->moe_every - 1;
}

static double attn_params(const wf_train_model *m) {
  double h = m->hidden, hd = h / m->heads;
  return h * (h + 2.0 * m->kv_heads * hd) + h * h;
}

double wf_train_layer_params(const wf_train_model *m, int layer) {
  double h = m->hidden, mats = m->gated ? 3 : 2;
  if (is_moe(m, layer))
    return attn_params(m) + (double)(m->experts + m->shared_experts) * mats * h * m->expert_ffn + h * m->experts;
  return attn_params(m) + mats * h * m->ffn;
}

double wf_train_model_params(const wf_train_model *m) {
  double p = 2.0 * m->vocab * m->hidden;
  for (int l = 0; l < m->layers; l++) p += wf_train_layer_params(m, l);
  return p;
}

double wf_train_model_active_params(const wf_train_model *m) {
  double p = 2.0 * m->vocab * m->hidden, h = m->hidden, mats = m->gated ? 3 : 2;
  for (int l = 0; l < m->layers; l++)
    p += is_moe(m, l) ? attn_params(m) + (double)(m->topk + m->shared_experts) * mats * h * m->expert_ffn
                      : wf_train_layer_params(m, l);
  return p;
}

int wf_train_layer_is_moe(const wf_train_model *m, int layer) { return is_moe(m, layer); }
