/* One transformer layer as WATOS's operator units (Fig. 10): LayerNorm, QKV, FlashAttention,
 * projection, LayerNorm, FFN up (and gate), activation, FFN down; MoE layers put their experts
 * in the FFN ops. Per op and die: FLOPs, DRAM traffic of the dataflow with the least external
 * memory access (OS, WS or IS, Fig. 14), the checkpoint the backward needs, and the TP
 * collective after it. Activations are fp16 (mixed precision, §V-A). */
#include <math.h>

#include "runtime/die/train.h"

const char *const wf_train_op_names[WF_OP_N] = {"ln1", "qkv", "flash_attn", "proj", "ln2", "ffn_up", "act", "ffn_down"};
const char *const wf_train_tp_names[WF_TP_N] = {"HK", "SK", "B"};
const char *const wf_train_df_names[3] = {"OS", "WS", "IS"};
const wf_train_cfg WF_TRAIN_CFG_DEFAULT = {.seq = 4096, .micro_batch = 1, .micro_batches = 32, .efficiency = 0.8};

void wf_train_work_init(wf_train_work *w, const wf_train_model *m, const wf_train_cfg *c) {
  w->m = m;
  w->c = c ? *c : WF_TRAIN_CFG_DEFAULT;
  w->optable = NULL;
  w->tokens = (double)w->c.seq * w->c.micro_batch;
  double T = w->tokens * w->c.micro_batches;
  /* 6 FLOPs per active parameter per token, plus causal attention's 6 x 2 s h per token. */
  w->model_flops = 6.0 * wf_train_model_active_params(m) * T + 6.0 * m->layers * T * w->c.seq * m->hidden;
}

/* External memory access of an M x K by K x N GEMM (fp16 operands, fp32 partial sums) with
 * `sram` bytes on the die, for each dataflow; the least is taken. */
double wf_train_gemm_ema(double M, double K, double N, double sram, int *dataflow) {
  double buf = sram / 2; /* double buffering */
  double nw = fmax(1, floor(buf / (4 * K))), mi = fmax(1, floor(buf / (4 * K)));
  double tile = fmax(1, floor(sqrt(buf / 8)));
  double ema[3];
  ema[WF_DF_OS] = 2 * M * N + 2 * M * K * ceil(N / tile) + 2 * K * N * ceil(M / tile);
  ema[WF_DF_WS] = 2 * K * N + 2 * M * K * ceil(N / nw) + 2 * M * N;
  ema[WF_DF_IS] = 2 * M * K + 2 * K * N * ceil(M / mi) + 2 * M * N;
  int best = 0;
  for (int i = 1; i < 3; i++)
    if (ema[i] < ema[best]) best = i;
  if (dataflow) *dataflow = best;
  return ema[best];
}

static void gemm(wf_train_op *o, double M, double K, double N, double sram) {
  o->flops_f = 2 * M * K * N;
  o->flops_b = 2 * o->flops_f; /* dX and dW */
  o->ema_f = wf_train_gemm_ema(M, K, N, sram, &o->dataflow);
  o->ema_b = wf_train_gemm_ema(M, N, K, sram, NULL) + wf_train_gemm_ema(K, M, N, sram, NULL);
  o->gm = M, o->gk = K, o->gn = N;
}

void wf_train_head_op(const wf_train_work *w, int tp, int st, wf_train_op *o) {
  const wf_train_model *m = w->m;
  double emb = (double)m->vocab * m->hidden, div = st == WF_TP_B ? 1 : tp, M = w->tokens / (st == WF_TP_B ? tp : 1);
  *o = (wf_train_op){0};
  o->flops_f = 2 * M * m->hidden * m->vocab / div;
  o->flops_b = 2 * o->flops_f;
  o->ema_f = 2 * emb / div, o->ema_b = 4 * emb / div;
  o->gm = M, o->gk = m->hidden, o->gn = m->vocab / div;
}

static void eltwise(wf_train_op *o, double elems, double flops_per) {
  o->flops_f = elems * flops_per;
  o->flops_b = 2 * o->flops_f;
  o->ema_f = 4 * elems; /* read and write, fp16 */
  o->ema_b = 6 * elems;
}

void wf_train_layer_ops(const wf_train_work *w, const wf_die_target *t, int layer, int tp, int st,
                        wf_train_op ops[WF_OP_N]) {
  const wf_train_model *m = w->m;
  double T = w->tokens, h = m->hidden, hd = h / m->heads, qkv = h + 2.0 * m->kv_heads * hd;
  double sram = (double)t->core_w * t->core_h * t->core_sram;
  int moe = wf_train_layer_is_moe(m, layer);
  double mats = m->gated ? 2 : 1; /* matrices in ffn_up */
  /* HK and SK split weights over tp; B splits the tokens and keeps whole weights on each die. */
  double Tw = st == WF_TP_B ? T / tp : T, div = st == WF_TP_B ? 1 : tp;
  double rep = st == WF_TP_HK ? 1 : tp; /* how the replicated (h-wide) activations divide */
  for (int k = 0; k < WF_OP_N; k++) ops[k] = (wf_train_op){0};
  eltwise(&ops[WF_OP_LN1], Tw * h / rep, 8);
  ops[WF_OP_LN1].ckpt = 2 * Tw * h / rep;
  gemm(&ops[WF_OP_QKV], Tw, h, qkv / div, sram);
  ops[WF_OP_QKV].ckpt = 2 * Tw * h / rep;
  /* FlashAttention (causal): 4 s^2 h per sequence forward, halved by the mask; the backward
   * recomputes the scores (2.5x). It keeps only Q, K, V, O and the row statistics. */
  wf_train_op *fa = &ops[WF_OP_FLASH];
  double heads = m->heads / div;
  fa->flops_f = 0.5 * 4.0 * (Tw * w->c.seq) * h / div;
  fa->flops_b = 2.5 * fa->flops_f;
  fa->ema_f = 2 * Tw * (qkv / div + h / div);
  fa->ema_b = 2 * fa->ema_f;
  fa->ckpt = 2 * Tw * qkv / div + 4 * Tw * heads;
  gemm(&ops[WF_OP_PROJ], Tw, h / div, h, sram);
  ops[WF_OP_PROJ].ckpt = 2 * Tw * h / div;
  eltwise(&ops[WF_OP_LN2], Tw * h / rep, 8);
  ops[WF_OP_LN2].ckpt = 2 * Tw * h / rep;
  if (moe) {
    /* Experts split over the TP group (expert parallel); tokens arrive replicated after the
     * attention's reduction, so each die runs its experts on their share of the top-k picks. */
    double ex = m->experts + m->shared_experts, picks = Tw * (m->topk + m->shared_experts) / div;
    double f = m->expert_ffn;
    gemm(&ops[WF_OP_UP], picks, h, mats * f, sram);
    /* The picks spread over the die's experts: each expert's GEMM has its share of the rows
     * (the FLOPs and the traffic are those of the whole op). */
    double local = ex / div > 1 ? ex / div : 1;
    /* Every local expert's weights are read once per micro-batch. */
    double wbytes = 2 * (ex / div) * mats * h * f;
    ops[WF_OP_UP].ema_f = fmax(ops[WF_OP_UP].ema_f, wbytes);
    ops[WF_OP_UP].ema_b = fmax(ops[WF_OP_UP].ema_b, 2 * wbytes);
    ops[WF_OP_UP].ckpt = 2 * Tw * h / rep;
    eltwise(&ops[WF_OP_ACT], picks * mats * f, 4);
    ops[WF_OP_ACT].ckpt = 2 * picks * mats * f;
    gemm(&ops[WF_OP_DOWN], picks, f, h, sram);
    ops[WF_OP_DOWN].ema_f = fmax(ops[WF_OP_DOWN].ema_f, wbytes / mats);
    ops[WF_OP_DOWN].ema_b = fmax(ops[WF_OP_DOWN].ema_b, 2 * wbytes / mats);
    ops[WF_OP_DOWN].ckpt = 2 * picks * f;
    ops[WF_OP_UP].gm = ops[WF_OP_DOWN].gm = picks / local;
  } else {
    gemm(&ops[WF_OP_UP], Tw, h, mats * m->ffn / div, sram);
    ops[WF_OP_UP].ckpt = 2 * Tw * h / rep;
    eltwise(&ops[WF_OP_ACT], Tw * mats * m->ffn / div, 4);
    ops[WF_OP_ACT].ckpt = 2 * Tw * mats * m->ffn / div;
    gemm(&ops[WF_OP_DOWN], Tw, m->ffn / div, h, sram);
    ops[WF_OP_DOWN].ckpt = 2 * Tw * m->ffn / div;
  }
  if (st != WF_TP_B && tp > 1) {
    /* Megatron's f and g: an allreduce (SK: all-gather + reduce-scatter, the same bytes) of
     * the layer's activation after proj and ffn_down forward, before qkv and ffn_up backward. */
    double act = 2 * T * h;
    ops[WF_OP_PROJ].comm_f = ops[WF_OP_DOWN].comm_f = act;
    ops[WF_OP_QKV].comm_b = ops[WF_OP_UP].comm_b = act;
  }
}
