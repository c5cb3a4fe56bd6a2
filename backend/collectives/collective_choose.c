/* Model-driven choice of a collective algorithm (Reduce paper §5.7, §6.3, §7.6): predict
 * every allowed algorithm with the closed forms and take the cheapest. */
#include <stdio.h>
#include <string.h>

#include "waferc/collectives.h"

static int is_1d(const wf_coll_query *q) { return q->w <= 1 || q->h <= 1; }

static int64_t autogen_max(const wf_coll_query *q) {
  return q->autogen_max > 0 ? q->autogen_max : 512;
}

static int is_reduce_pattern(wf_coll_algo a) { return a <= WF_COLL_AUTOGEN; }

int wf_coll_predict(const wf_coll_query *q, wf_coll_algo algo, const wf_coll_params *p,
                    wf_coll_choice *out) {
  memset(out, 0, sizeof *out);
  out->algo = algo;
  int64_t w = q->w < 1 ? 1 : q->w, h = q->h < 1 ? 1 : q->h, P = w * h, B = q->len;
  int one = is_1d(q);
  double v = -1;
  if (algo == WF_COLL_AUTOGEN && (one ? P : (w > h ? w : h)) > autogen_max(q)) return -1;
  switch (q->kind) {
  case WF_COLL_BROADCAST:
    if (algo != WF_COLL_FLOOD) return -1;
    v = one ? wf_coll_bcast(P, B, p) : wf_coll_bcast2d(w, h, B, p);
    break;
  case WF_COLL_REDUCE:
    if (one) {
      if (!is_reduce_pattern(algo)) return -1;
      v = algo == WF_COLL_STAR        ? wf_coll_star(P, B, p)
          : algo == WF_COLL_CHAIN     ? wf_coll_chain(P, B, p)
          : algo == WF_COLL_TREE      ? wf_coll_tree(P, B, p)
          : algo == WF_COLL_TWO_PHASE ? wf_coll_two_phase(P, B, 0, p)
                                      : wf_coll_autogen(P, B, p, NULL);
      out->lower_bound = wf_coll_lower_bound(P, B, p);
    } else {
      if (algo == WF_COLL_SNAKE) v = wf_coll_snake(w, h, B, p);
      else if (is_reduce_pattern(algo)) v = wf_coll_xy_reduce(algo, w, h, B, p);
      else return -1;
      out->lower_bound = wf_coll_lower_bound_2d(w, h, B, p);
    }
    break;
  case WF_COLL_ALLREDUCE:
    if (one) {
      if (algo == WF_COLL_RING) v = wf_coll_ring_lowered(P, B, p);
      else if (is_reduce_pattern(algo)) v = wf_coll_allreduce_rb(algo, P, B, p, &out->root);
      else return -1;
    } else {
      /* §7.4: a 2D reduce then the 2D broadcast; ring = ring on x, then ring on y. */
      if (algo == WF_COLL_RING) v = wf_coll_ring_lowered(w, B, p) + wf_coll_ring_lowered(h, B, p);
      else if (algo == WF_COLL_SNAKE) v = wf_coll_snake(w, h, B, p) + wf_coll_bcast2d(w, h, B, p);
      else if (is_reduce_pattern(algo)) {
        v = wf_coll_xy_reduce(algo, w, h, B, p);
        if (v >= 0) v += wf_coll_bcast2d(w, h, B, p);
      } else return -1;
    }
    break;
  }
  if (v < 0) return -1;
  out->predicted = v;
  if (out->lower_bound > 0)
    snprintf(out->why, sizeof out->why, "%s: %.0f cycles predicted, lower bound %.0f (%.2fx)",
             wf_coll_algo_name(algo), v, out->lower_bound, v / out->lower_bound);
  else
    snprintf(out->why, sizeof out->why, "%s: %.0f cycles predicted", wf_coll_algo_name(algo), v);
  return 0;
}

int wf_coll_choose(const wf_coll_query *q, const wf_coll_params *p, wf_coll_choice *out) {
  wf_coll_choice best, second, c;
  memset(&best, 0, sizeof best);
  memset(&second, 0, sizeof second);
  int have = 0, have2 = 0;
  memset(out, 0, sizeof *out);
  for (int a = 0; a < WF_COLL_N_ALGOS; a++) {
    if (q->allowed && !(q->allowed & (1u << a))) continue;
    if (wf_coll_predict(q, (wf_coll_algo)a, p, &c) != 0) continue;
    /* Strictly lower wins, so equal predictions keep the earlier (lower) algorithm. */
    if (!have || c.predicted < best.predicted) {
      if (have) { second = best; have2 = 1; }
      best = c;
      have = 1;
    } else if (!have2 || c.predicted < second.predicted) {
      second = c;
      have2 = 1;
    }
  }
  if (!have) return -1;
  *out = best;
  const char *shape = is_1d(q) ? "1D" : "2D";
  char tail[64] = "";
  if (have2)
    snprintf(tail, sizeof tail, "; next %.24s %.0f", wf_coll_algo_name(second.algo), second.predicted);
  snprintf(out->why, sizeof out->why, "%s %s P=%lldx%lld B=%lld: %.120s%s", shape,
           q->kind == WF_COLL_REDUCE ? "reduce" : q->kind == WF_COLL_ALLREDUCE ? "allreduce" : "broadcast",
           (long long)(q->w < 1 ? 1 : q->w), (long long)(q->h < 1 ? 1 : q->h), (long long)q->len,
           best.why, tail);
  return 0;
}
