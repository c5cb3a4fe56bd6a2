/* The alpha-beta evaluator: 1F1B as an event schedule over per-stage forward and backward
 * times and stage-to-stage transfers (the closed form (n + p - 1)(F + B) when stages are equal
 * and transfers free), and Eq. 1 for TP collectives. */
#include <math.h>
#include <stdlib.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"

double wf_train_eq1(double alpha, double bw, int tp, double bytes) {
  if (tp < 2) return 0;
  return alpha + 2.0 * (tp - 1) / tp * bytes / bw;
}

/* Stage s's k-th op in 1F1B: warm-up forwards, then forward/backward pairs, then the
 * cool-down backwards. *bwd = 1 for a backward; returns the micro-batch. */
static int op_at(int pp, int n, int s, int k, int *bwd) {
  int w = pp - s - 1 < n ? pp - s - 1 : n;
  if (k < w) return *bwd = 0, k;
  int j = k - w;
  if (j < 2 * (n - w)) return *bwd = j % 2, j % 2 ? j / 2 : w + j / 2;
  return *bwd = 1, n - w + (j - 2 * (n - w));
}

double wf_train_1f1b(int pp, int n, const double *f, const double *b, const double *x) {
  size_t cells = (size_t)pp * n;
  double *fe = malloc(sizeof *fe * cells), *be = malloc(sizeof *be * cells), *free_at = calloc((size_t)pp, sizeof *free_at);
  int *next = calloc((size_t)pp, sizeof *next);
  WF_ASSERT(fe && be && free_at && next);
  for (size_t i = 0; i < cells; i++) fe[i] = be[i] = -1;
  int done = 0, total = 2 * n * pp;
  double end = 0;
  while (done < total) {
    int moved = 0;
    for (int s = 0; s < pp; s++)
      while (next[s] < 2 * n) {
        int bwd, i = op_at(pp, n, s, next[s], &bwd);
        double ready;
        if (!bwd) ready = s == 0 ? 0 : fe[(size_t)(s - 1) * n + i] < 0 ? -1 : fe[(size_t)(s - 1) * n + i] + x[s - 1];
        else if (s == pp - 1) ready = fe[(size_t)s * n + i];
        else ready = be[(size_t)(s + 1) * n + i] < 0 ? -1 : be[(size_t)(s + 1) * n + i] + x[s];
        if (ready < 0) break;
        double start = ready > free_at[s] ? ready : free_at[s];
        double e = start + (bwd ? b[s] : f[s]);
        (bwd ? be : fe)[(size_t)s * n + i] = e;
        free_at[s] = e;
        if (e > end) end = e;
        next[s]++, done++, moved = 1;
      }
    WF_ASSERT(moved && "1F1B schedule deadlocked");
  }
  free(fe), free(be), free(free_at), free(next);
  return end;
}
