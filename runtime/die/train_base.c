/* Baselines in the same evaluator (WATOS §V-C):
 * - Megatron-like on the wafer: TP = 8 and PP = the dies over 8 (the ablation's baseline, TP=8,
 *   PP=7 on 56 dies), every TP shape tried (1x8, 2x4, 4x2, 8x1) in serpentine placement, naive
 *   recomputation (the same number of whole layers on every stage); the best shape is kept.
 * - Cerebras-like weight streaming: every die runs its share of the batch through every layer;
 *   the layer's weights are gathered from the wafer's DRAM to every die (forward and backward)
 *   and its gradients reduce-scattered back; activations stay local, whole layers recomputed
 *   when they do not fit.
 * - The first-order analytic model of Fig. 15's footnote. */
#include <math.h>
#include <string.h>

#include "runtime/die/train.h"

double wf_train_megatron(const wf_die_system *s, const wf_train_work *w, wf_train_plan *best) {
  wf_train_search_opts o = WF_TRAIN_SEARCH_DEFAULT;
  o.fixed_tp = 8 <= s->n ? 8 : 2;
  o.gcmr = o.memsched = o.ga = 0;
  o.naive_recompute = o.serpentine = o.hk_only = 1;
  best->iter_s = INFINITY;
  best->feasible = 0;
  /* The most stages the wafer holds first: Megatron fills the dies. */
  for (int pp = s->n / o.fixed_tp; pp >= 1; pp--) {
    o.fixed_pp = pp;
    if (!wf_train_search(s, w, &o, best)) return best->iter_s;
  }
  return INFINITY;
}

double wf_train_cerebras(const wf_die_system *s, const wf_train_work *w, int *recompute_layers) {
  const wf_die_target *t = &s->t;
  const wf_train_model *m = w->m;
  int N = s->n;
  double tokens = w->tokens * w->c.micro_batches / N; /* per die */
  double modelp = 16 * wf_train_model_params(m) / N;
  wf_train_work one = *w;
  one.tokens = tokens;
  double ckpt_layer = 0, in_layer = 0, total = 0;
  wf_train_op ops[WF_OP_N];
  for (int l = 0; l < m->layers; l++) {
    wf_train_layer_ops(&one, t, l, 1, WF_TP_HK, ops);
    double ck = 0;
    for (int k = 0; k < WF_OP_N; k++) ck += ops[k].ckpt;
    ckpt_layer = fmax(ckpt_layer, ck);
    in_layer = fmax(in_layer, ops[WF_OP_LN1].ckpt);
  }
  /* Whole layers recomputed (storing their inputs) until the activations fit beside modelP. */
  int k = 0;
  while (k <= m->layers && modelp + (m->layers - k) * ckpt_layer + k * in_layer > t->hbm_bytes) k++;
  if (k > m->layers) return INFINITY;
  if (recompute_layers) *recompute_layers = k;
  /* The ring over all dies in serpentine order: bidirectional, one link's latency a step. */
  double alpha = (N - 1) * t->link_latency, bw = 2 * t->link_bw;
  for (int l = 0; l < m->layers; l++) {
    wf_train_layer_ops(&one, t, l, 1, WF_TP_HK, ops);
    double f = 0, b = 0;
    for (int i = 0; i < WF_OP_N; i++) f += wf_train_op_time(t, &one, &ops[i], 0, NULL), b += wf_train_op_time(t, &one, &ops[i], 1, NULL);
    double wbytes = 2 * wf_train_layer_params(m, l);
    double ag = alpha + (N - 1.0) / N * wbytes / bw;
    double rs = ag;
    double rec = l < k ? f : 0;
    /* Streaming overlaps a layer's transfer with its compute. */
    total += fmax(f, ag) + fmax(b + rec, ag + rs);
  }
  double emb = (double)m->vocab * m->hidden;
  wf_train_op head;
  wf_train_head_op(&one, 1, WF_TP_HK, &head);
  total += fmax(wf_train_op_compute_s(t, &one, &head, 0, NULL) + wf_train_op_compute_s(t, &one, &head, 1, NULL),
                3 * (alpha + 2 * emb / bw));
  return total + 2 * modelp / t->hbm_bw;
}

double wf_train_analytic(const wf_die_system *s, const wf_train_work *w, int recompute) {
  const wf_die_target *t = &s->t;
  const wf_train_model *m = w->m;
  double N = s->n, n = w->c.micro_batches;
  double P = N * t->fp16_flops * w->c.efficiency, bw_dram = N * t->hbm_bw;
  /* Mesh links, both directions. */
  double links = 2.0 * ((s->w - 1) * s->h + (s->h - 1) * s->w), bw_d2d = links * t->link_bw;
  wf_train_op ops[WF_OP_N];
  double ckpt = 0, access = 0, flops_fwd = 0;
  for (int l = 0; l < m->layers; l++) {
    wf_train_layer_ops(w, t, l, 1, WF_TP_HK, ops);
    for (int k = 0; k < WF_OP_N; k++) {
      ckpt += ops[k].ckpt;
      access += (ops[k].ema_f + ops[k].ema_b) * n;
      flops_fwd += ops[k].flops_f * n;
    }
  }
  double mem_req = 16 * wf_train_model_params(m) + ckpt * n, dram = N * t->hbm_bytes;
  double eta = flops_fwd / (ckpt * n); /* compute per byte of checkpoint */
  double c_recomp = fmax(0, mem_req - dram) * eta;
  if (c_recomp > 0 && !recompute) return INFINITY;
  if (c_recomp > flops_fwd) return INFINITY;
  double c_comm = 4.0 * m->layers * n * 2 * w->tokens * m->hidden * 2; /* TP allreduces, fwd and bwd */
  return fmax((w->model_flops + c_recomp) / P, access / bw_dram) + c_comm / bw_d2d;
}
