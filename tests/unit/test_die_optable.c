/* The per-operator GEMM table (runtime/die/train_optable.c, docs/dse.md): the reader on a
 * hand-made table (exact grid points, log2 interpolation, tiling above the grid, the roofline
 * below it, malformed files at file:line), an op's compute time and its source, and the
 * committed table (targets/dies/dojo-gemm.csv): its efficiency rises with the block, so the
 * same layer split 16 ways costs more die-seconds than split 2 ways, which the roofline does
 * not see. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/die/train.h"
#include "waferc/diag.h"
#include "wf_test.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(1, fabs(b)); }

static const char *write_file(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "/tmp/wf_test_optable_%d_%s.csv", (int)getpid(), name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

/* m_core in {2, 8}, k_core 4, n_core in {2, 8}. */
static const char *const TOY = "# a hand-made table\n"
                               "mesh=2x2\n"
                               "m_core,k_core,n_core,algo,efficiency\n"
                               "2,4,2,meshgemm,0.2\n"
                               "2,4,8,meshgemm,0.4\n"
                               "8,4,2,meshgemm,0.6\n"
                               "8,4,8,meshgemm,0.8\n";

/* Die-seconds of compute for one layer's GEMMs (forward and backward) at TP tp, split HK. */
static double layer_gemm_die_s(const wf_die_target *t, const wf_train_work *w, int tp, int *src) {
  wf_train_op ops[WF_OP_N];
  wf_train_layer_ops(w, t, 0, tp, WF_TP_HK, ops);
  static const int gemms[] = {WF_OP_QKV, WF_OP_PROJ, WF_OP_UP, WF_OP_DOWN};
  double s = 0;
  for (int i = 0; i < 4; i++)
    s += wf_train_op_compute_s(t, w, &ops[gemms[i]], 0, src) + wf_train_op_compute_s(t, w, &ops[gemms[i]], 1, src);
  return s * tp;
}

int main(void) {
  wf_train_optable T;
  const char *p = write_file("toy", TOY);
  CHECK(p && wf_train_optable_load(p, &T) == 0, "loading the toy table");
  CHECK(T.mesh_w == 2 && T.mesh_h == 2 && T.nm == 2 && T.nk == 1 && T.nn == 2, "grid %dx%dx%d", T.nm, T.nk, T.nn);
  /* Grid points exactly. */
  CHECK(near(wf_train_optable_block_eff(&T, 2, 4, 2), 0.2));
  CHECK(near(wf_train_optable_block_eff(&T, 8, 4, 8), 0.8));
  CHECK(near(wf_train_optable_block_eff(&T, 2, 4, 8), 0.4));
  /* Halfway in log2 (4 between 2 and 8): the mean of the corners. */
  CHECK(near(wf_train_optable_block_eff(&T, 4, 4, 4), 0.5), "%g", wf_train_optable_block_eff(&T, 4, 4, 4));
  CHECK(near(wf_train_optable_block_eff(&T, 4, 4, 2), 0.4), "%g", wf_train_optable_block_eff(&T, 4, 4, 2));
  /* Above the grid: equal tiles no larger than its top. 16 = 2 tiles of 8; 12 = 2 tiles of 6,
   * log2(6) is 0.79 of the way from 2 to 8; k 16 = 4 tiles of 4. */
  CHECK(near(wf_train_optable_block_eff(&T, 16, 4, 2), 0.6));
  double w6 = (log2(6) - 1) / 2;
  CHECK(near(wf_train_optable_block_eff(&T, 12, 4, 2), 0.2 + w6 * 0.4), "%g", wf_train_optable_block_eff(&T, 12, 4, 2));
  CHECK(near(wf_train_optable_block_eff(&T, 4, 16, 4), 0.5));
  /* k has one value: any k from it up is that tile (26 is not two tiles of 13, below it). */
  CHECK(near(wf_train_optable_block_eff(&T, 4, 26, 4), 0.5));
  /* Below the grid on any axis: 0, the caller keeps the roofline. */
  CHECK(wf_train_optable_block_eff(&T, 1, 4, 4) == 0);
  CHECK(wf_train_optable_block_eff(&T, 4, 2, 4) == 0);
  CHECK(wf_train_optable_block_eff(&T, 4, 4, 1.5) == 0);
  CHECK(wf_train_optable_block_eff(NULL, 4, 4, 4) == 0);
  /* A die GEMM on a 2x2 core array: blocks M/2, K/2, N/2. */
  CHECK(near(wf_train_optable_eff(&T, 8, 8, 4, 2, 2), 0.4));

  /* An op's compute time: forward 8x8x4 from the table (0.4); backward dA = dC.B^T is 8x4x8,
   * blocks 4x2x4 below the grid's k (roofline, 0.8), and dB = A^T.dC is 8x8x4 (0.4). */
  wf_die_target die;
  memset(&die, 0, sizeof die);
  die.fp16_flops = 1e12, die.hbm_bw = 1e30, die.core_w = die.core_h = 2;
  wf_train_work w;
  memset(&w, 0, sizeof w);
  w.c = WF_TRAIN_CFG_DEFAULT;
  w.optable = &T;
  wf_train_op op = {.flops_f = 512, .flops_b = 1024, .gm = 8, .gk = 8, .gn = 4};
  int src = 0;
  CHECK(near(wf_train_op_compute_s(&die, &w, &op, 0, &src), 512 / (1e12 * 0.4)));
  CHECK(src == WF_COST_SIM && !strcmp(wf_train_cost_names[src], "sim"), "%d", src);
  src = 0;
  CHECK(near(wf_train_op_compute_s(&die, &w, &op, 1, &src), 512 / (1e12 * 0.8) + 512 / (1e12 * 0.4)));
  CHECK(!strcmp(wf_train_cost_names[src], "sim+roofline"), "%d", src);
  /* Not a GEMM, or no table: the roofline. */
  wf_train_op ln = {.flops_f = 800, .flops_b = 1600};
  src = 0;
  CHECK(near(wf_train_op_compute_s(&die, &w, &ln, 0, &src), 800 / (1e12 * 0.8)) && src == WF_COST_ROOFLINE);
  w.optable = NULL, src = 0;
  CHECK(near(wf_train_op_compute_s(&die, &w, &op, 0, &src), 512 / (1e12 * 0.8)) && src == WF_COST_ROOFLINE);
  /* The op's time is the slower of compute and DRAM. */
  die.hbm_bw = 1;
  op.ema_f = 3;
  CHECK(near(wf_train_op_time(&die, &w, &op, 0, NULL), 3));
  remove(p);

  /* Malformed tables: every error is an input error (exit 1); a missing file is I/O (6). */
  static const struct { const char *name, *text; } bad[] = {
      {"missing_row", "mesh=2x2\nm_core,k_core,n_core,efficiency\n2,4,2,0.2\n2,4,8,0.4\n8,4,2,0.6\n"},
      {"eff_range", "mesh=2x2\nm_core,k_core,n_core,efficiency\n2,4,2,1.5\n"},
      {"duplicate", "mesh=2x2\nm_core,k_core,n_core,efficiency\n2,4,2,0.2\n2,4,2,0.3\n"},
      {"no_column", "mesh=2x2\nm_core,k_core,efficiency\n2,4,0.2\n"},
      {"no_mesh", "m_core,k_core,n_core,efficiency\n2,4,2,0.2\n"},
      {"bad_number", "mesh=2x2\nm_core,k_core,n_core,efficiency\n2,four,2,0.2\n"},
      {"empty", "# nothing\n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *q = write_file(bad[i].name, bad[i].text);
    CHECK(q && wf_train_optable_load(q, &T) == WF_EXIT_INPUT, "%s", bad[i].name);
    remove(q);
  }
  CHECK(wf_train_optable_load("/nonexistent/dir/table.csv", &T) == WF_EXIT_IO);

  /* The committed table, found by name as wafer-dse finds it. */
  const char *srcdir = getenv("WAFERC_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/targets/dies", srcdir ? srcdir : "../..");
  setenv("WAFERC_TARGET_PATH", dir, 1);
  CHECK(wf_train_optable_load("dojo-gemm", &T) == 0, "loading dojo-gemm.csv from %s", dir);
  CHECK(T.nm >= 2 && T.nk >= 1 && T.nn >= 2);
  /* Small blocks are less efficient than large ones, on both the rows and the columns. */
  int K = T.nk - 1;
  for (int i = 0; i + 1 < T.nm; i++)
    CHECK(T.eff[i][K][T.nn - 1] < T.eff[i + 1][K][T.nn - 1], "m_core %g vs %g", T.m[i], T.m[i + 1]);
  for (int j = 0; j + 1 < T.nn; j++)
    CHECK(T.eff[T.nm - 1][K][j] < T.eff[T.nm - 1][K][j + 1], "n_core %g vs %g", T.n[j], T.n[j + 1]);
  /* llama2-30b's layer on config3's 18x18-core dies: under the roofline, TP 16 and TP 2 cost
   * the same die-seconds of GEMM compute (the FLOPs are conserved); under the table TP 16's
   * narrower GEMMs cost more. How much more is the table's to say, not a bound here: at 4096
   * tokens per micro-batch every TP 2 block is 0.93 efficient; TP 16's are 62-69 per core on
   * qkv's and ffn_down's narrow side (0.90-0.92) and 23 on proj's backward (0.55; proj is a
   * twelfth of the layer's GEMM FLOPs), so the difference is about 5% (about 10% while
   * dojo.target's queue_depth of 8 halved every link's rate). */
  wf_die_target c3;
  char path[4200];
  snprintf(path, sizeof path, "%s/watos-config3.target", dir);
  CHECK(wf_die_target_load(path, &c3) == 0);
  wf_train_work_init(&w, wf_train_model_find("llama2-30b"), NULL);
  double r2 = layer_gemm_die_s(&c3, &w, 2, NULL), r16 = layer_gemm_die_s(&c3, &w, 16, NULL);
  CHECK(fabs(r16 - r2) <= 1e-9 * r2, "roofline: %g vs %g", r2, r16);
  w.optable = &T;
  int s2 = 0, s16 = 0;
  double t2 = layer_gemm_die_s(&c3, &w, 2, &s2), t16 = layer_gemm_die_s(&c3, &w, 16, &s16);
  CHECK(s2 == WF_COST_SIM && s16 == WF_COST_SIM, "every GEMM from the table: %d %d", s2, s16);
  CHECK(t16 > t2, "table: TP 16 %g die-s vs TP 2 %g", t16, t2);
  printf("llama2-30b layer GEMMs on config3, die-seconds: roofline %.4g; table TP 2 %.4g, TP 16 %.4g\n", r2, t2, t16);
  return wf_test_result("test_die_optable");
}
