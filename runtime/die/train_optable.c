/* The per-operator GEMM table (docs/dse.md, "The per-operator table"): the efficiency of a
 * per-core GEMM block, simulated by waferc's own fabric runtime on the Dojo-like core target
 * (targets/dojo.target) by tools/wafer-dse/gen_optable.py, read here and interpolated for
 * the GEMMs of the training model. A GEMM outside the table keeps the roofline. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"

const char *const wf_train_cost_names[] = {"none", "sim", "roofline", "sim+roofline"};

/* Index of v in the ascending axis, inserting it when new; -1 when the axis is full. */
static int axis_add(double *ax, int *n, double v) {
  int i = 0;
  while (i < *n && ax[i] < v) i++;
  if (i < *n && ax[i] == v) return i;
  if (*n == WF_OPT_AXIS) return -1;
  memmove(ax + i + 1, ax + i, sizeof *ax * (size_t)(*n - i));
  ax[i] = v, (*n)++;
  return i;
}

static int axis_find(const double *ax, int n, double v) {
  for (int i = 0; i < n; i++)
    if (ax[i] == v) return i;
  return -1;
}

typedef struct row { double m, k, n, eff; unsigned line; } row;

int wf_train_optable_load(const char *name, wf_train_optable *t) {
  memset(t, 0, sizeof *t);
  int given;
  FILE *f = wf_die_file_open(name, ".csv", t->path, sizeof t->path, &given);
  if (!f) {
    wf_error_at(t->path, "cannot open the per-operator table: %s (a name is looked up as NAME.csv in "
                "$WAFERC_TARGET_PATH and targets/dies/; tools/wafer-dse/gen_optable.py writes one)", strerror(errno));
    return WF_EXIT_IO;
  }
  char line[1024];
  unsigned lineno = 0;
  int col[4] = {-1, -1, -1, -1}, header = 0, errors = 0, nrows = 0, cap = 0;
  static const char *const names[4] = {"m_core", "k_core", "n_core", "efficiency"};
  row *rows = NULL;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#') continue;
    if (!strncmp(line, "mesh=", 5)) {
      char tail = 0;
      if (sscanf(line + 5, "%dx%d%c", &t->mesh_w, &t->mesh_h, &tail) != 2 || t->mesh_w < 1 || t->mesh_h < 1) {
        wf_error(wf_loc_make(t->path, lineno, 6), "bad mesh '%s': expected WxH", line + 5);
        errors++;
      }
      continue;
    }
    if (!header) { /* the column names */
      header = 1;
      int c = 0;
      for (char *tok = strtok(line, ","); tok; tok = strtok(NULL, ","), c++)
        for (int i = 0; i < 4; i++)
          if (!strcmp(tok, names[i])) col[i] = c;
      for (int i = 0; i < 4; i++)
        if (col[i] < 0) {
          wf_error(wf_loc_make(t->path, lineno, 1), "no column '%s' in the header (gen_optable.py writes m_core, "
                   "k_core, n_core, ..., efficiency)", names[i]);
          errors++;
        }
      if (errors) break;
      continue;
    }
    double v[4] = {0};
    int c = 0, got = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save), c++)
      for (int i = 0; i < 4; i++)
        if (c == col[i]) {
          char *end;
          errno = 0;
          v[i] = strtod(tok, &end);
          if (end == tok || *end || errno || !(v[i] > 0) || (i == 3 && v[i] > 1) || (i < 3 && v[i] > 1e9)) {
            wf_error(wf_loc_make(t->path, lineno, 1), "bad %s '%s': expected %s", names[i], tok,
                     i == 3 ? "a number in (0, 1]" : "a positive number");
            errors++;
          }
          got++;
        }
    if (got != 4) {
      wf_error(wf_loc_make(t->path, lineno, 1), "expected %d or more columns, got %d", col[0] > col[3] ? col[0] + 1 : col[3] + 1, c);
      errors++;
      continue;
    }
    if (nrows == cap) {
      cap = cap ? 2 * cap : 64;
      row *r = realloc(rows, sizeof *r * (size_t)cap);
      WF_ASSERT(r != NULL);
      rows = r;
    }
    rows[nrows++] = (row){v[0], v[1], v[2], v[3], lineno};
  }
  fclose(f);
  if (!errors && !header) wf_error_at(t->path, "no header and no rows: not a per-operator table"), errors++;
  if (!errors && !t->mesh_w) wf_error_at(t->path, "no 'mesh=WxH' line (the core array the tiles ran on)"), errors++;
  for (int r = 0; !errors && r < nrows; r++)
    if (axis_add(t->m, &t->nm, rows[r].m) < 0 || axis_add(t->k, &t->nk, rows[r].k) < 0 ||
        axis_add(t->n, &t->nn, rows[r].n) < 0) {
      wf_error(wf_loc_make(t->path, rows[r].line, 1), "more than %d values on one axis of the grid", WF_OPT_AXIS);
      errors++;
    }
  for (int i = 0; i < WF_OPT_AXIS; i++)
    for (int j = 0; j < WF_OPT_AXIS; j++)
      for (int k = 0; k < WF_OPT_AXIS; k++) t->eff[i][j][k] = -1;
  for (int r = 0; !errors && r < nrows; r++) {
    double *e = &t->eff[axis_find(t->m, t->nm, rows[r].m)][axis_find(t->k, t->nk, rows[r].k)][axis_find(t->n, t->nn, rows[r].n)];
    if (*e >= 0) {
      wf_error(wf_loc_make(t->path, rows[r].line, 1), "a second row for block %gx%gx%g", rows[r].m, rows[r].k, rows[r].n);
      errors++;
    }
    *e = rows[r].eff;
  }
  for (int i = 0; !errors && i < t->nm; i++)
    for (int j = 0; !errors && j < t->nk; j++)
      for (int k = 0; !errors && k < t->nn; k++)
        if (t->eff[i][j][k] < 0) {
          wf_error_at(t->path, "the grid has no row for block %gx%gx%g: every m_core x k_core x n_core is needed",
                      t->m[i], t->k[j], t->n[k]);
          errors++;
        }
  free(rows);
  return errors ? WF_EXIT_INPUT : 0;
}

/* Where v sits on the axis, as the lower index and the weight of the upper one, in log2. */
static void locate(const double *ax, int n, double v, int *lo, double *w) {
  if (n == 1 || v <= ax[0]) { *lo = 0, *w = 0; return; }
  int i = 0;
  while (i + 2 < n && v > ax[i + 1]) i++;
  *lo = i;
  *w = fmin(1, (log2(v) - log2(ax[i])) / (log2(ax[i + 1]) - log2(ax[i])));
}

/* A per-core extent above the axis's largest runs as equal tiles no larger than it (and no
 * smaller than the axis's least: a one-value axis takes every extent from it up). */
static double tile(double v, const double *ax, int n) {
  double top = ax[n - 1];
  return v > top ? fmax(v / ceil(v / top - 1e-9), ax[0]) : v;
}

double wf_train_optable_block_eff(const wf_train_optable *t, double mc, double kc, double nc) {
  if (!t || !t->nm) return 0;
  mc = tile(mc, t->m, t->nm), kc = tile(kc, t->k, t->nk), nc = tile(nc, t->n, t->nn);
  if (mc < t->m[0] * (1 - 1e-9) || kc < t->k[0] * (1 - 1e-9) || nc < t->n[0] * (1 - 1e-9)) return 0;
  int i, j, k;
  double wi, wj, wk, e = 0;
  locate(t->m, t->nm, mc, &i, &wi);
  locate(t->k, t->nk, kc, &j, &wj);
  locate(t->n, t->nn, nc, &k, &wk);
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++) {
        double w = (a ? wi : 1 - wi) * (b ? wj : 1 - wj) * (c ? wk : 1 - wk);
        if (w > 0) e += w * t->eff[i + a][j + b][k + c];
      }
  return e;
}

double wf_train_optable_eff(const wf_train_optable *t, double M, double K, double N, int cores_w, int cores_h) {
  if (!t || cores_w < 1 || cores_h < 1) return 0;
  int kk = cores_w > cores_h ? cores_w : cores_h; /* as gen_optable.py's K = max(W, H) k_core */
  return wf_train_optable_block_eff(t, M / cores_h, K / kk, N / cores_w);
}

/* One GEMM (M x K x N, 2MKN FLOPs) on the die: seconds of compute, and where they came from. */
static double gemm_s(const wf_die_target *t, const wf_train_work *w, double M, double K, double N, int *src) {
  double e = wf_train_optable_eff(w->optable, M, K, N, t->core_w, t->core_h);
  *src |= e > 0 ? WF_COST_SIM : WF_COST_ROOFLINE;
  return 2 * M * K * N / (t->fp16_flops * (e > 0 ? e : w->c.efficiency));
}

double wf_train_op_compute_s(const wf_die_target *t, const wf_train_work *w, const wf_train_op *o, int bwd, int *src) {
  int dummy = 0;
  if (!src) src = &dummy;
  double flops = bwd ? o->flops_b : o->flops_f;
  if (!w->optable || o->gm <= 0) {
    *src |= WF_COST_ROOFLINE;
    return flops / (t->fp16_flops * w->c.efficiency);
  }
  /* The op's FLOPs as o->gcount GEMMs of gm x gk x gn: forward C = A.B; backward dA = dC.B^T
   * (M x N x K) and dB = A^T.dC (K x M x N). */
  double M = o->gm, K = o->gk, N = o->gn, s;
  if (!bwd) s = gemm_s(t, w, M, K, N, src);
  else s = gemm_s(t, w, M, N, K, src) + gemm_s(t, w, K, M, N, src);
  double per = bwd ? 4 * M * K * N : 2 * M * K * N; /* scale to the op's own FLOPs (MoE: several GEMMs) */
  return per > 0 ? s * flops / per : 0;
}

double wf_train_op_time(const wf_die_target *t, const wf_train_work *w, const wf_train_op *o, int bwd, int *src) {
  return fmax(wf_train_op_compute_s(t, w, o, bwd, src), (bwd ? o->ema_b : o->ema_f) / t->hbm_bw);
}
