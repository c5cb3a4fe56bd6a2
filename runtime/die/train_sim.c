/* A plan's 1F1B iteration on the SimGrid platform of runtime/die (engine.c, platform.c): one
 * actor per die of every stage runs its stage's 1F1B order; forwards hand each rank's shard of
 * the activation to the same rank of the next stage, backwards hand the gradient back, and a
 * Sender's ranks write their offloaded checkpoints to their Helpers' dies in the forward and
 * read them back in the backward, all as flows on the D2D links, sharing them (max-min). An
 * op's compute and DRAM time comes from the per-operator roofline (train_ops.c) and runs on the
 * die's host; the TP collectives inside a stage are first simulated alone, every TP group's
 * ring at once, and that contended time replaces Eq. 1's in the stage's compute. */
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "runtime/die/train.h"
#include "waferc/diag.h"

typedef struct sim {
  const wf_die_system *s;
  const wf_train_plan *p;
  double f[WF_MAX_STAGES], b[WF_MAX_STAGES]; /* compute s per micro-batch */
  double *busy;
  double speed;
} sim;

typedef struct rank { sim *S; int stage, r; } rank;
typedef struct fetch { double bytes; char mb[64]; } fetch;

static sg_mailbox_t box(const char *fmt, int a, int b, int c, int d) {
  char name[64];
  snprintf(name, sizeof name, fmt, a, b, c, d);
  return sg_mailbox_by_name(name);
}

static sg_host_t host_of(int d) {
  char name[32];
  snprintf(name, sizeof name, "d%d", d);
  return sg_host_by_name(name);
}

static int op_at(int pp, int n, int s, int k, int *bwd) { /* as train_eval.c */
  int w = pp - s - 1 < n ? pp - s - 1 : n;
  if (k < w) return *bwd = 0, k;
  int j = k - w;
  if (j < 2 * (n - w)) return *bwd = j % 2, j % 2 ? j / 2 : w + j / 2;
  return *bwd = 1, n - w + (j - 2 * (n - w));
}

static void fetcher(int argc, char **argv) {
  fetch *f = sg_actor_self_get_data();
  sg_mailbox_put(sg_mailbox_by_name(f->mb), f, (long)(f->bytes + 0.5));
  free(f);
}

static void sink(int argc, char **argv) {
  int *count = sg_actor_self_get_data();
  void *data;
  for (int i = 0; i < count[0]; i++) sg_mailbox_get(box("O:%d", count[1], 0, 0, 0));
  (void)data;
}

typedef struct pending { sg_comm_t *v; int n, cap; } pending;
static void push(pending *q, sg_comm_t c) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 16;
    q->v = realloc(q->v, sizeof *q->v * (size_t)q->cap);
    WF_ASSERT(q->v != NULL);
  }
  q->v[q->n++] = c;
}

static void stage_rank(int argc, char **argv) {
  rank *R = sg_actor_self_get_data();
  sim *S = R->S;
  const wf_train_plan *p = S->p;
  int s = R->stage, r = R->r, pp = p->pp, n = p->micro_batches;
  int me = wf_train_stage_die(S->s, p, s, r);
  double shard = p->act_bytes / p->tp;
  pending q = {0};
  void *data;
  /* Every incoming hand-off is posted up front, so a transfer starts when its sender sends
   * (into the receiving die's memory), not when the receiver gets round to it. */
  sg_comm_t *fin = calloc((size_t)n, sizeof *fin), *bin = calloc((size_t)n, sizeof *bin);
  WF_ASSERT(fin && bin);
  for (int i = 0; i < n; i++) {
    if (s > 0) fin[i] = sg_mailbox_get_async(box("F:%d:%d:%d", s, r, i, 0), &data);
    if (s + 1 < pp) bin[i] = sg_mailbox_get_async(box("B:%d:%d:%d", s, r, i, 0), &data);
  }
  for (int k = 0; k < 2 * n; k++) {
    int bwd, i = op_at(pp, n, s, k, &bwd);
    double t0 = simgrid_get_clock();
    if (!bwd) {
      if (s > 0) sg_comm_wait(fin[i]);
      pending off = {0};
      for (int a = 0; a < p->nalloc; a++)
        if (p->alloc[a].sender == s) {
          int hd = wf_train_stage_die(S->s, p, p->alloc[a].helper, r);
          double bytes = p->alloc[a].bytes / p->st[s].inflight / p->tp;
          push(&off, sg_mailbox_put_async(box("O:%d", hd, 0, 0, 0), R, (long)(bytes + 0.5)));
        }
      t0 = simgrid_get_clock();
      sg_actor_execute(S->f[s] * S->speed);
      if (off.n) sg_comm_wait_all(off.v, (size_t)off.n);
      free(off.v);
      if (s + 1 < pp) push(&q, sg_mailbox_put_async(box("F:%d:%d:%d", s + 1, r, i, 0), R, (long)(shard + 0.5)));
    } else {
      if (s + 1 < pp) sg_comm_wait(bin[i]);
      pending back = {0};
      for (int a = 0; a < p->nalloc; a++)
        if (p->alloc[a].sender == s) {
          int hd = wf_train_stage_die(S->s, p, p->alloc[a].helper, r);
          fetch *f = malloc(sizeof *f);
          WF_ASSERT(f != NULL);
          f->bytes = p->alloc[a].bytes / p->st[s].inflight / p->tp;
          snprintf(f->mb, sizeof f->mb, "R:%d:%d:%d:%d", s, r, i, a);
          sg_actor_t act = sg_actor_init("fetch", host_of(hd));
          sg_actor_set_data(act, f);
          sg_actor_start_(act, fetcher, 0, NULL);
          push(&back, sg_mailbox_get_async(sg_mailbox_by_name(f->mb), &data));
        }
      t0 = simgrid_get_clock();
      sg_actor_execute(S->b[s] * S->speed);
      if (back.n) sg_comm_wait_all(back.v, (size_t)back.n);
      free(back.v);
      if (s > 0) push(&q, sg_mailbox_put_async(box("B:%d:%d:%d", s - 1, r, i, 0), R, (long)(shard + 0.5)));
    }
    if (S->busy) S->busy[me] += simgrid_get_clock() - t0;
  }
  if (q.n) sg_comm_wait_all(q.v, (size_t)q.n);
  free(q.v), free(fin), free(bin);
}

void wf_train_sim_flows(const wf_die_system *s, const wf_train_plan *p, wf_die_flows *f) {
  int ring[64];
  for (int st = 0; st < p->pp; st++) {
    int n = wf_train_ring_of(s, p, st, ring);
    for (int i = 0; n > 1 && i < n; i++) {
      wf_die_flows_add(f, ring[i], ring[(i + 1) % n], 1, 0);
      wf_die_flows_add(f, ring[(i + 1) % n], ring[i], 1, 0);
    }
    for (int r = 0; r < p->tp && st + 1 < p->pp; r++) {
      int a = wf_train_stage_die(s, p, st, r), b = wf_train_stage_die(s, p, st + 1, r);
      wf_die_flows_add(f, a, b, 1, 0);
      wf_die_flows_add(f, b, a, 1, 0);
    }
  }
  for (int k = 0; k < p->nalloc; k++)
    for (int r = 0; r < p->tp; r++) {
      int a = wf_train_stage_die(s, p, p->alloc[k].sender, r), b = wf_train_stage_die(s, p, p->alloc[k].helper, r);
      wf_die_flows_add(f, a, b, 1, 0);
      wf_die_flows_add(f, b, a, 1, 0);
    }
}

double wf_train_simulate(wf_die_engine *e, const wf_die_system *s, const wf_train_work *w, wf_train_plan *p,
                         double *die_busy, double *dram_use, double *link_bytes) {
  (void)w;
  /* 1. Every stage's TP ring at once: one allreduce of a layer's activation. */
  double t_ar = 0;
  wf_die_flows tpf = {0};
  if (p->tp > 1 && p->strategy != WF_TP_B) {
    int ring[64];
    for (int st = 0; st < p->pp; st++) {
      int n = wf_train_ring_of(s, p, st, ring);
      wf_die_ring_allreduce(&tpf, ring, n, p->act_bytes, 1, 1, 0);
    }
    t_ar = wf_die_engine_run(e, &tpf);
  }
  /* 2. The pipeline, with the contended allreduce in place of Eq. 1's. */
  static sim S;
  memset(&S, 0, sizeof S);
  S.s = s, S.p = p, S.busy = die_busy, S.speed = s->t.int8_ops;
  if (die_busy) memset(die_busy, 0, sizeof(double) * (size_t)s->n);
  double delta = p->tp > 1 && p->strategy != WF_TP_B ? t_ar - p->comm_ar_s : 0;
  for (int i = 0; i < p->pp; i++) {
    const wf_train_stage *st = &p->st[i];
    int layers = st->kind_layers[0] + st->kind_layers[1];
    S.f[i] = st->F + 2 * layers * delta + st->help_s / 2;
    S.b[i] = st->B + 2 * layers * delta + st->help_s / 2 + st->recomp_s;
  }
  int nr = p->pp * p->tp;
  rank *R = calloc((size_t)nr, sizeof *R);
  int (*cnt)[2] = calloc((size_t)s->n, sizeof *cnt);
  WF_ASSERT(R && cnt);
  for (int a = 0; a < p->nalloc; a++)
    for (int r = 0; r < p->tp; r++) cnt[wf_train_stage_die(s, p, p->alloc[a].helper, r)][0] += p->micro_batches;
  double t0 = simgrid_get_clock();
  for (int d = 0; d < s->n; d++)
    if (cnt[d][0]) {
      cnt[d][1] = d;
      sg_actor_t a = sg_actor_init("sink", host_of(d));
      sg_actor_set_data(a, cnt[d]);
      sg_actor_start_(a, sink, 0, NULL);
    }
  for (int st = 0; st < p->pp; st++)
    for (int r = 0; r < p->tp; r++) {
      rank *x = &R[st * p->tp + r];
      *x = (rank){&S, st, r};
      sg_actor_t a = sg_actor_init("stage", host_of(wf_train_stage_die(s, p, st, r)));
      sg_actor_set_data(a, x);
      sg_actor_start_(a, stage_rank, 0, NULL);
    }
  simgrid_run();
  double secs = simgrid_get_clock() - t0 + p->opt_s;
  p->sim_s = secs;
  /* Utilization: compute busy share, DRAM occupancy, bytes per link over the iteration. */
  if (die_busy)
    for (int d = 0; d < s->n; d++) die_busy[d] /= secs;
  if (dram_use || link_bytes) {
    double in[WF_MAX_STAGES] = {0}, out[WF_MAX_STAGES] = {0};
    for (int a = 0; a < p->nalloc; a++) out[p->alloc[a].sender] += p->alloc[a].bytes, in[p->alloc[a].helper] += p->alloc[a].bytes;
    wf_die_flows all = {0};
    int ring[64];
    /* The TP collectives of an iteration: four per layer and micro-batch (Megatron's f and g). */
    for (int st = 0; p->tp > 1 && p->strategy != WF_TP_B && st < p->pp; st++) {
      int n = wf_train_ring_of(s, p, st, ring), layers = p->st[st].kind_layers[0] + p->st[st].kind_layers[1];
      wf_die_ring_allreduce(&all, ring, n, p->act_bytes * 4.0 * layers * p->micro_batches, 1, 1, 0);
    }
    for (int st = 0; st < p->pp; st++)
      for (int r = 0; r < p->tp; r++) {
        int d = wf_train_stage_die(s, p, st, r);
        if (dram_use) dram_use[d] = (p->st[st].modelp + p->st[st].mem - fmin(out[st], p->st[st].mem) + in[st]) / s->t.hbm_bytes;
        if (st + 1 < p->pp) wf_die_flows_add(&all, d, wf_train_stage_die(s, p, st + 1, r), 2 * p->micro_batches * p->act_bytes / p->tp, 0);
      }
    for (int a = 0; a < p->nalloc; a++)
      for (int r = 0; r < p->tp; r++)
        wf_die_flows_add(&all, wf_train_stage_die(s, p, p->alloc[a].sender, r), wf_train_stage_die(s, p, p->alloc[a].helper, r),
                         2 * p->micro_batches * p->alloc[a].bytes / p->st[p->alloc[a].sender].inflight / p->tp, 0);
    if (link_bytes) wf_die_flows_link_bytes(s, &all, link_bytes);
    wf_die_flows_free(&all);
  }
  wf_die_flows_free(&tpf);
  free(R), free(cnt);
  return secs;
}
