/* The step parameters R and C of PE programs (docs/pe-programs.md, "Parameters, terms and
 * guards"; issue 17's decode steps):
 *   - they parse and print back (parse -> write -> parse is a fixed point) in guards, loop
 *     bounds, sizes and buffer offsets;
 *   - a route guard naming them, or a loop variable named R or C, is refused with a message;
 *   - wf_guard_split files them with the y conditions;
 *   - wf_sim_set_step sets them on every PE of a hand-written plan (R region-wide, C per row),
 *     and a matmul of C rows, a loop of C rounds, a slot at C and a guard on R compute what
 *     they should, interpreted and through the JIT's kernels alike; without wf_sim_set_step
 *     both are 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/plan/llvm_kernels.h"
#include "runtime/jit.h"
#include "runtime/runtime.h"
#include "waferc/diag.h"

#include "wf_test.h"

enum { LEN = 8 }; /* words of $a and $b per PE */

/* b[0..C) += a[0..C) * a[0] (a C x 1 by 1 x 1 matmul); b[C+1] = a[1]; b[6] = C * a[0] (a loop
 * of C rounds); b[7] = a[0] on row R only. C <= 4 keeps the slots apart. */
static const char *const program =
    ".format 1\n"
    ".class main\n"
    ".sym $a 0 32\n"
    ".sym $b 32 32\n"
    ".code\n"
    "op 0\n"
    "zero $b 8\n"
    "matmul $b $a $a C 1 1\n"
    "copy $b+C+1 $a+1 1\n"
    "loop j 0 C\n"
    "  add $b+6 $b+6 $a 1 1 ij\n"
    "endloop\n"
    "[y==R] copy $b+7 $a 1\n"
    "[C>=1, 2*R%4<=C-1] zero $a 0\n";

/* Text of class c as the writer prints it (static buffer). */
static const char *written(const wf_pe_class *c) {
  static char buf[8192];
  FILE *f = tmpfile();
  if (!f) return "";
  wf_pe_class_write(c, f);
  long n = ftell(f);
  rewind(f);
  size_t got = fread(buf, 1, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

static void test_text(void) {
  wf_pe_class *c = wf_pe_class_parse_string(program, "step.wpe");
  CHECK(c != NULL, "the program with R and C does not parse");
  if (!c) return;
  CHECK(c->code[2].op == WF_PEOP_MATMUL && c->code[2].args[3].term.kind == WF_TERM_C, "matmul m is not C");
  CHECK(c->code[3].args[0].term.kind == WF_TERM_C && c->code[3].args[0].term.k == 1, "offset C+1");
  CHECK(c->code[4].op == WF_PEOP_LOOP && c->code[4].args[2].term.kind == WF_TERM_C, "loop bound C");
  CHECK(c->code[7].guard.n == 1 && c->code[7].guard.c[0].b.kind == WF_TERM_R, "guard y==R");
  const wf_pe_cond *sc = &c->code[8].guard.c[1];
  CHECK(sc->a.kind == WF_TERM_R && sc->a.mul == 2 && sc->a.mod == 4 && sc->b.kind == WF_TERM_C && sc->b.k == -1,
        "scaled R and C with an offset");
  char first[8192];
  snprintf(first, sizeof first, "%s", written(c));
  CHECK(strstr(first, "matmul $b $a $a C 1 1") && strstr(first, "[y==R] copy") && strstr(first, "loop j 0 C") &&
            strstr(first, "$b+C+1") && strstr(first, "2*R%4<=C-1"),
        "the writer does not print R and C back:\n%s", first);
  wf_pe_class *d = wf_pe_class_parse_string(first, "written.wpe");
  CHECK(d != NULL, "the written program does not parse back:\n%s", first);
  if (d) CHECK(!strcmp(first, written(d)), "parse -> write -> parse is not a fixed point");
  wf_pe_class_free(d);

  /* Evaluation: R and C come from the environment, 0 by default. */
  wf_pe_env e = wf_pe_env_at(c, 1, 2, 4, 3);
  CHECK(e.r == 0 && e.c == 0, "step parameters are not 0 by default");
  CHECK(!wf_guard_eval(&c->code[7].guard, &e), "y==R holds on row 2 with R 0");
  e.r = 2;
  e.c = 3;
  CHECK(wf_guard_eval(&c->code[7].guard, &e), "y==R fails on row 2 with R 2");
  CHECK(wf_pe_arg_int(&c->code[2].args[3], &e) == 3, "matmul m is not C's value");
  CHECK(wf_pe_arg_off(&c->code[3].args[0], &e) == 4, "offset C+1 is not 4");
  CHECK(wf_guard_eval(&c->code[8].guard, &e), "C>=1, 2*R%%4<=C-1 fails with R 2, C 3");
  e.r = 1;
  e.c = 2;
  CHECK(!wf_guard_eval(&c->code[8].guard, &e), "C>=1, 2*R%%4<=C-1 holds with R 1, C 2");

  /* The route checks evaluate rules per column and per row: R and C go with y. */
  wf_pe_guard g = wf_guard0(), gx, gy;
  wf_guard_add(&g, wf_term(WF_TERM_X, 0), WF_CMP_LT, wf_term_int(2));
  wf_guard_add(&g, wf_term(WF_TERM_Y, 0), WF_CMP_GT, wf_term(WF_TERM_R, 0));
  wf_guard_add(&g, wf_term(WF_TERM_C, 0), WF_CMP_GE, wf_term_int(1));
  CHECK(wf_guard_split(&g, &gx, &gy) == 0 && gx.n == 1 && gy.n == 2, "split: R and C are not y conditions");
  wf_guard_add(&g, wf_term(WF_TERM_X, 0), WF_CMP_LT, wf_term(WF_TERM_C, 0));
  CHECK(wf_guard_split(&g, &gx, &gy) != 0, "split: x < C ties x to a row's parameter");
  CHECK(wf_guard_uses_step(&g) && !wf_guard_uses_step(&c->code[2].guard), "wf_guard_uses_step");
  wf_pe_class_free(c);
}

static void test_refused(void) {
  static const char *const bad[] = {
      /* a route on C: routers are configured once */
      ".format 1\n.class main\n.sym $a 0 32\n.color c0 x\n[y<C] .route c0 RAMP -> E\n.code\nzero $a 1\n",
      /* ... on R */
      ".format 1\n.class main\n.sym $a 0 32\n.color c0 x\n[R==0, x==0] .route c0 RAMP -> E\n.code\nzero $a 1\n",
      /* loop variables cannot take the parameters' names */
      ".format 1\n.class main\n.sym $a 0 32\n.code\nloop C 0 4\nzero $a 1\nendloop\n",
      ".format 1\n.class main\n.sym $a 0 32\n.code\nloop R 0 4\nzero $a 1\nendloop\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fprintf(stderr, "(expected error %zu follows)\n", i);
    wf_pe_class *c = wf_pe_class_parse_string(bad[i], "bad.wpe");
    CHECK(c == NULL, "program %zu accepted:\n%s", i, bad[i]);
    wf_pe_class_free(c);
  }
}

/* A w x h plan running `program` with a: f32[h, w*LEN] split (y, x) and b likewise, and, when
 * `kernels` is given, the manifest's kernels entry. Returns the directory (static). */
static const char *write_plan(const char *root, int w, int h, const char *kernels) {
  static char dir[512];
  char path[700];
  snprintf(dir, sizeof dir, "%s/step_%dx%d", root, w, h);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/programs", dir);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/programs/main.wpe", dir);
  FILE *f = fopen(path, "w");
  if (!f) return dir;
  fputs(program, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  f = fopen(path, "w");
  if (!f) return dir;
  fprintf(f,
          "{\"format_version\": 1,\n"
          " \"target\": {\"name\": \"unit\", \"fabric\": [%d, %d], \"sram_bytes\": 49152,\n"
          "   \"sram_banks\": 8, \"clock_hz\": 1e9, \"fmac_per_cycle\": 1, \"fp16_simd\": 4,\n"
          "   \"wavelet_bits\": 32, \"hop_cycles\": 1, \"ramp_cycles\": 2, \"colors\": 24,\n"
          "   \"reserved_colors\": [21, 22, 23], \"switch_positions\": 4, \"route_code_bits\": 5,\n"
          "   \"queue_depth\": 4, \"exp_cycles\": 8, \"div_cycles\": 8},\n"
          " \"mesh\": [%d, %d],\n"
          " \"colors\": [{\"color\": 0}],\n"
          " \"regions\": [{\"name\": \"mesh\", \"rect\": [0, 0, %d, %d],\n"
          "   \"classes\": [{\"name\": \"main\", \"rect\": [0, 0, %d, %d], \"program\": \"programs/main.wpe\"}]}],\n"
          " \"weights\": {\"file\": \"weights.bin\", \"bytes\": 0, \"tensors\": []},\n"
          " \"inputs\": [{\"name\": \"a\", \"symbol\": \"$a\", \"dtype\": \"f32\", \"shape\": [%d, %d],\n"
          "   \"split\": [\"y\", \"x\"], \"region\": \"mesh\"}],\n"
          " \"outputs\": [{\"name\": \"b\", \"symbol\": \"$b\", \"dtype\": \"f32\", \"shape\": [%d, %d],\n"
          "   \"split\": [\"y\", \"x\"], \"region\": \"mesh\"}],\n"
          " \"ops\": [{\"op\": \"test\", \"predicted_cycles\": 0}]%s%s}\n",
          w, h, w, h, w, h, w, h, h, w * LEN, h, w * LEN, kernels ? ",\n \"kernels\": " : "",
          kernels ? kernels : "");
  fclose(f);
  return dir;
}

/* Counts the compute instructions the JIT ran (rc 0), matmuls among them. */
typedef struct jit_count {
  wf_jit *j;
  int ran, matmuls;
} jit_count;

static int counting_hook(void *user, const wf_pe_class *cls, int ci, const wf_pe_instr *in, float *mem,
                         const wf_pe_env *env) {
  jit_count *k = user;
  int rc = wf_jit_compute(k->j, cls, ci, in, mem, env);
  if (rc == 0) {
    k->ran++;
    k->matmuls += in->op == WF_PEOP_MATMUL;
  }
  return rc;
}

static float a_at(int x, int y, int i) { return (float)(1 + y * 3 + x * 2 + i); }

/* Runs the plan with step (R, counts) (counts NULL: no wf_sim_set_step) and checks b. */
static void run_step(const wf_plan *p, jit_count *jit, int w, int h, int R, const int *counts, const char *what) {
  wf_sim *s = wf_sim_new(p, NULL);
  if (jit) wf_sim_set_compute_hook(s, counting_hook, jit);
  if (counts) CHECK(wf_sim_set_step(s, R, counts) == 0, "%s: wf_sim_set_step refused", what);
  int64_t dims[2] = {h, (int64_t)w * LEN};
  wf_tensor *a = wf_tensor_new(WF_F32, 2, dims);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int i = 0; i < LEN; i++) ((float *)a->data)[(size_t)y * w * LEN + x * LEN + i] = a_at(x, y, i);
  CHECK(wf_sim_set_input(s, "a", a) == 0, "%s: input", what);
  wf_tensor_free(a);
  int rc = wf_sim_run(s);
  CHECK(rc == 0, "%s: run failed (%d)", what, rc);
  wf_tensor *b = rc ? NULL : wf_sim_output(s, 0);
  for (int y = 0; b && y < h; y++) {
    int C = counts ? counts[y] : 0, r = counts ? R : 0;
    for (int x = 0; x < w; x++) {
      float want[LEN] = {0};
      float a0 = a_at(x, y, 0);
      for (int i = 0; i < C; i++) want[i] = a_at(x, y, i) * a0;
      want[C + 1] = a_at(x, y, 1);
      want[6] = (float)C * a0;
      if (y == r) want[7] = a0;
      const float *got = (const float *)b->data + (size_t)y * w * LEN + x * LEN;
      for (int i = 0; i < LEN; i++)
        CHECK(got[i] == want[i], "%s: PE (%d,%d) b[%d] = %g, want %g (R %d, C %d)", what, x, y, i, got[i], want[i],
              r, C);
    }
  }
  wf_tensor_free(b);
  if (counts) {
    CHECK(wf_sim_set_step(s, R, counts) != 0, "%s: wf_sim_set_step after the run accepted", what);
  }
  wf_sim_free(s);
}

/* The manifest's kernels list for class c, as the backend writes it (docs/plan-format.md). */
static void kernels_entry(const wf_pe_class *c, char *text, size_t cap) {
  static const char *const modes[] = {"ij", "i", "j"};
  char names[32][96];
  int listed = 0;
  size_t len = (size_t)snprintf(text, cap, "[{\"class\": \"%s\", \"file\": \"kernels/%s.ll\", \"functions\": [",
                                c->name, c->name);
  for (int pc = 0; pc < c->n_code && listed < 32; pc++) {
    if (!wf_kernel_covers(c->code[pc].op)) continue;
    char name[96];
    wf_kernel_name(c->name, &c->code[pc], name, sizeof name);
    int dup = 0;
    for (int k = 0; k < listed; k++) dup |= !strcmp(names[k], name);
    if (dup) continue;
    snprintf(names[listed++], sizeof names[0], "%s", name);
    int mode = wf_kernel_mode(&c->code[pc]);
    len += (size_t)snprintf(text + len, cap - len, "%s{\"name\": \"%s\", \"op\": \"%s\", \"mode\": \"%s\"}",
                            listed > 1 ? ", " : "", name, wf_peops[c->code[pc].op].name, mode >= 0 ? modes[mode] : "-");
  }
  snprintf(text + len, cap - len, "]}]");
}

static void test_run(const char *root, int w, int h, int R, const int *counts) {
  const char *dir = write_plan(root, w, h, NULL);
  wf_plan *p = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  CHECK(p != NULL, "the hand-written %dx%d plan does not load", w, h);
  if (!p) return;
  char what[64];
  snprintf(what, sizeof what, "%dx%d interpreted", w, h);
  run_step(p, NULL, w, h, 0, NULL, what);
  run_step(p, NULL, w, h, R, counts, what);
  int bad[4] = {1, -1, 0, 0};
  wf_sim *s = wf_sim_new(p, NULL);
  fprintf(stderr, "(expected errors follow)\n");
  CHECK(wf_sim_set_step(s, h, counts) != 0, "grow row %d of a %d-row region accepted", h, h);
  CHECK(wf_sim_set_step(s, 0, bad) != 0, "a negative count accepted");
  wf_sim_free(s);

  /* The same plan with the JIT's kernels: C reaches the matmul's m already evaluated. */
  CHECK(wf_llvm_kernels_write(p->classes[0], dir) == 0, "cannot write the kernels");
  char text[2048];
  kernels_entry(p->classes[0], text, sizeof text);
  wf_plan_free(p);
  dir = write_plan(root, w, h, text);
  p = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  CHECK(p != NULL, "the plan with kernels does not load");
  if (!p) return;
  char why[512];
  jit_count k = {wf_jit_load(p, why, sizeof why), 0, 0};
  CHECK(k.j != NULL, "wf_jit_load failed: %s", why);
  if (k.j) {
    snprintf(what, sizeof what, "%dx%d JIT", w, h);
    run_step(p, &k, w, h, R, counts, what);
    CHECK(k.matmuls == w * h, "%s: the JIT ran %d matmuls, want one per PE (%d)", what, k.matmuls, w * h);
    k.ran = k.matmuls = 0;
    run_step(p, &k, w, h, 0, NULL, what); /* C 0: the matmul has no rows */
    wf_jit_free(k.j);
  }
  wf_plan_free(p);
}

int main(void) {
  char root[] = "/tmp/wf_test_step_XXXXXX";
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  test_text();
  test_refused();
  int c2[2] = {3, 1}, c3[3] = {2, 4, 0};
  test_run(root, 3, 2, 1, c2);
  test_run(root, 2, 3, 0, c3);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  else printf("test_step_params: R and C parse, print, refuse routes, and drive a decode step (interpreted and JIT)\n");
  return g_failures != 0;
}
