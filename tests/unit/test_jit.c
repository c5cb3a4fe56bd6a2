/* The compute-kernel JIT (ir/pe/kernel_gen.c + runtime/jit.c): every covered PE
 * instruction, in every broadcast mode, compiled through ORC LLJIT, must give the same bits as
 * the interpreter's C loop (written out here as the reference, in the interpreter's order).
 * Also: out-of-bounds operands fall back to the interpreter, the .ll carries no fast-math or
 * contraction, and a corrupt kernel file makes wf_jit_load fail with a reason. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/plan/llvm_kernels.h"
#include "runtime/jit.h"

#include "wf_test.h"

enum { WORDS = 256, SYM_D, SYM_A, SYM_B };

/* ---- the reference: runtime/sim.c's loops, same operations in the same order ---- */

static float ref_unary(wf_peop op, float v) {
  switch (op) {
    case WF_PEOP_NEG: return -v;
    case WF_PEOP_RELU: return v > 0 ? v : 0;
    case WF_PEOP_EXP: return expf(v);
    case WF_PEOP_LOG: return logf(v);
    case WF_PEOP_TANH: return tanhf(v);
    case WF_PEOP_COS: return cosf(v);
    case WF_PEOP_SIN: return sinf(v);
    case WF_PEOP_ERF: return erff(v);
    case WF_PEOP_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case WF_PEOP_SILU: return v / (1.0f + expf(-v));
    case WF_PEOP_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case WF_PEOP_GELU_TANH:
      return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case WF_PEOP_SQRT: return sqrtf(v);
    case WF_PEOP_RSQRT: return 1.0f / sqrtf(v);
    case WF_PEOP_RECIP: return 1.0f / v;
    default: abort();
  }
}

static float ref_binary(wf_peop op, float a, float b) {
  switch (op) {
    case WF_PEOP_ADD: return a + b;
    case WF_PEOP_SUB: return a - b;
    case WF_PEOP_MUL: return a * b;
    case WF_PEOP_DIV: return a / b;
    case WF_PEOP_MAX: return a > b ? a : b;
    case WF_PEOP_MIN: return a < b ? a : b;
    case WF_PEOP_EQ: return a == b ? 1.0f : 0.0f;
    case WF_PEOP_LT: return a < b ? 1.0f : 0.0f;
    case WF_PEOP_SEL: return a != 0.0f ? b : 0.0f;
    default: abort();
  }
}

/* d at 0, a at 64, b at 128 words of `mem`; n = the integer operands. */
static void reference(wf_peop op, int mode, const int64_t *n, float *mem) {
  float *d = mem, *a = mem + 64, *b = mem + 128;
  if (op == WF_PEOP_ZERO) memset(d, 0, (size_t)n[0] * 4);
  else if (op == WF_PEOP_COPY) memmove(d, a, (size_t)n[0] * 4);
  else if (op == WF_PEOP_MATMUL) {
    for (int64_t i = 0; i < n[0]; i++)
      for (int64_t k = 0; k < n[1]; k++) {
        float av = a[i * n[1] + k];
        for (int64_t j = 0; j < n[2]; j++) d[i * n[2] + j] += av * b[k * n[2] + j];
      }
  } else if (op == WF_PEOP_MATMUL_T) { /* b is n x k, read by rows */
    for (int64_t i = 0; i < n[0]; i++)
      for (int64_t j = 0; j < n[2]; j++) {
        float acc = d[i * n[2] + j];
        for (int64_t k = 0; k < n[1]; k++) acc += a[i * n[1] + k] * b[j * n[1] + k];
        d[i * n[2] + j] = acc;
      }
  } else if (op == WF_PEOP_RMAX || op == WF_PEOP_RSUM) {
    for (int64_t i = 0; i < n[0]; i++) {
      float acc = op == WF_PEOP_RMAX ? -INFINITY : 0.0f;
      for (int64_t j = 0; j < n[1]; j++) {
        float v = a[i * n[1] + j];
        acc = op == WF_PEOP_RMAX ? (v > acc ? v : acc) : acc + v;
      }
      d[i] = acc;
    }
  } else if (mode >= 0) {
    for (int64_t i = 0; i < n[0]; i++)
      for (int64_t j = 0; j < n[1]; j++) {
        float bv = mode == WF_BMODE_IJ ? b[i * n[1] + j] : mode == WF_BMODE_I ? b[i] : b[j];
        d[i * n[1] + j] = ref_binary(op, a[i * n[1] + j], bv);
      }
  } else {
    for (int64_t i = 0; i < n[0]; i++) d[i] = ref_unary(op, a[i]);
  }
}

/* ---- building the class ---- */

static wf_pe_arg sym(int s) { wf_pe_arg a; memset(&a, 0, sizeof a); a.sym = s; return a; }
static wf_pe_arg num(int32_t v) { wf_pe_arg a; memset(&a, 0, sizeof a); a.term = wf_term_int(v); return a; }

static int add(wf_pe_class *c, wf_peop op, int mode) {
  wf_pe_instr in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.guard = wf_guard0();
  const char *sig = wf_peops[op].sig;
  int bufs = 0, ints = 0;
  /* 6 x 7 blocks (matmul 6x5 * 5x7) fit the 64-word operands */
  static const int32_t sizes[3][3] = {{42, 0, 0}, {6, 7, 0}, {6, 5, 7}};
  int nints = 0;
  for (int i = 0; sig[i]; i++) nints += sig[i] == 'n';
  for (int i = 0; sig[i]; i++) {
    if (sig[i] == 'd' || sig[i] == 's') in.args[i] = sym(bufs++);
    else if (sig[i] == 'n') in.args[i] = num(sizes[nints - 1][ints++]);
    else if (sig[i] == 'm') in.args[i] = num(mode);
  }
  return wf_pe_class_add_instr(c, &in);
}

static void fill(float *mem, unsigned seed) {
  for (int i = 0; i < WORDS; i++) {
    seed = seed * 1103515245u + 12345u;
    /* positive and away from 0, so log, sqrt and division stay finite */
    mem[i] = 0.05f + (float)((seed >> 8) % 20000) / 10000.0f;
    if (i % 7 == 3) mem[i] = -mem[i] * 0.5f; /* some negatives for neg/relu/max/min/gelu */
  }
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

int main(void) {
  char dir[] = "/tmp/wf_test_jit_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  wf_pe_class *c = wf_pe_class_new("main");
  wf_pe_class_add_sym(c, "%d", 64 * 4);
  wf_pe_class_add_sym(c, "%a", 64 * 4);
  wf_pe_class_add_sym(c, "%b", 128 * 4);
  CHECK(c->syms[1].offset == 256 && c->syms[2].offset == 512, "unexpected symbol layout");
  for (int op = 0; op < WF_PEOP_COUNT; op++) {
    if (!wf_kernel_covers((wf_peop)op)) continue;
    if (!strcmp(wf_peops[op].sig, "dssnnm"))
      for (int m = WF_BMODE_IJ; m <= WF_BMODE_J; m++) add(c, (wf_peop)op, m);
    else add(c, (wf_peop)op, -1);
  }
  CHECK(wf_llvm_kernels_write(c, dir) == 0, "wf_llvm_kernels_write failed");

  /* The kernels must never relax IEEE semantics. */
  char llpath[256];
  snprintf(llpath, sizeof llpath, "%s/kernels/main.ll", dir);
  FILE *f = fopen(llpath, "r");
  CHECK(f != NULL, "no %s", llpath);
  char line[512];
  int functions = 0;
  while (f && fgets(line, sizeof line, f)) {
    CHECK(!strstr(line, " fast ") && !strstr(line, "contract") && !strstr(line, "reassoc") &&
              !strstr(line, "fmuladd") && !strstr(line, "llvm.fma"),
          "relaxed float semantics in the kernel text: %s", line);
    functions += !strncmp(line, "define ", 7);
  }
  if (f) fclose(f);

  /* The manifest's kernels entry, as the backend writes it (docs/plan-format.md). */
  char text[8192], names[64][96];
  int listed = 0;
  size_t len = (size_t)snprintf(text, sizeof text,
                                "{\"kernels\": [{\"class\": \"main\", \"file\": "
                                "\"kernels/main.ll\", \"functions\": [");
  static const char *const modes[] = {"ij", "i", "j"};
  for (int pc = 0; pc < c->n_code; pc++) {
    char name[96];
    wf_kernel_name(c->name, &c->code[pc], name, sizeof name);
    int dup = 0;
    for (int k = 0; k < listed; k++) dup |= !strcmp(names[k], name);
    if (dup) continue;
    snprintf(names[listed++], sizeof names[0], "%s", name);
    int mode = wf_kernel_mode(&c->code[pc]);
    len += (size_t)snprintf(text + len, sizeof text - len,
                            "%s{\"name\": \"%s\", \"op\": \"%s\", \"mode\": \"%s\"}",
                            listed > 1 ? ", " : "", name, wf_peops[c->code[pc].op].name,
                            mode >= 0 ? modes[mode] : "-");
  }
  snprintf(text + len, sizeof text - len, "]}]}\n");
  CHECK(listed == functions, "%d distinct kernels, the .ll defines %d", listed, functions);
  char mpath[256];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  CHECK(write_text(mpath, text) == 0, "cannot write %s", mpath);

  wf_plan plan;
  memset(&plan, 0, sizeof plan);
  snprintf(plan.dir, sizeof plan.dir, "%s", dir);
  plan.classes = &c;
  plan.n_classes = 1;
  char why[512];
  wf_jit *j = wf_jit_load(&plan, why, sizeof why);
  CHECK(j != NULL, "wf_jit_load failed: %s", why);
  if (j) {
    CHECK(wf_jit_kernel_count(j) == functions, "%d kernels compiled, %d defined",
          wf_jit_kernel_count(j), functions);
    wf_pe_env env;
    memset(&env, 0, sizeof env);
    int checked = 0;
    for (int pc = 0; pc < c->n_code; pc++) {
      const wf_pe_instr *in = &c->code[pc];
      float got[WORDS], want[WORDS];
      fill(got, (unsigned)pc + 1);
      memcpy(want, got, sizeof got);
      int64_t n[3] = {0, 0, 0};
      for (int i = 0, k = 0; wf_peops[in->op].sig[i]; i++)
        if (wf_peops[in->op].sig[i] == 'n') n[k++] = in->args[i].term.k;
      int mode = wf_kernel_mode(in);
      int rc = wf_jit_compute(j, c, 0, in, got, &env);
      CHECK(rc == 0, "%s: the JIT did not run it (rc %d)", wf_peops[in->op].name, rc);
      reference(in->op, mode, n, want);
      CHECK(!memcmp(got, want, sizeof got), "%s (mode %d): JIT and interpreter differ",
            wf_peops[in->op].name, mode);
      checked++;
    }
    CHECK(checked >= 25, "only %d instructions checked", checked);

    /* An operand past its symbol: the interpreter must handle (and report) it. */
    wf_pe_instr bad = c->code[0];
    for (int i = 0; wf_peops[bad.op].sig[i]; i++)
      if (wf_peops[bad.op].sig[i] == 'n') bad.args[i].term.k = 1000;
    float mem[WORDS];
    fill(mem, 9);
    CHECK(wf_jit_compute(j, c, 0, &bad, mem, &env) == 1, "out-of-bounds operand not declined");
    /* Uncovered instructions and unknown classes are declined too. */
    wf_pe_instr send;
    memset(&send, 0, sizeof send);
    send.op = WF_PEOP_SEND;
    CHECK(wf_jit_compute(j, c, 0, &send, mem, &env) == 1, "send not declined");
    CHECK(wf_jit_compute(j, c, 3, &c->code[0], mem, &env) == 1, "unknown class not declined");
    wf_jit_free(j);
  }

  /* A corrupt kernel file: load fails and says why (waferrun then warns and interprets). */
  CHECK(write_text(llpath, "define void @broken( {\n") == 0, "cannot corrupt %s", llpath);
  j = wf_jit_load(&plan, why, sizeof why);
  CHECK(j == NULL && why[0] && strstr(why, "main.ll"), "corrupt kernel accepted (why: '%s')", why);
  wf_jit_free(j);

  /* No kernels listed: NULL without a reason (nothing to warn about). */
  CHECK(write_text(mpath, "{\"kernels\": []}") == 0, "cannot rewrite %s", mpath);
  j = wf_jit_load(&plan, why, sizeof why);
  CHECK(j == NULL && !why[0], "a plan without kernels should load none silently");

  unlink(llpath);
  unlink(mpath);
  char kdir[256];
  snprintf(kdir, sizeof kdir, "%s/kernels", dir);
  rmdir(kdir);
  rmdir(dir);
  wf_pe_class_free(c);
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  else printf("test_jit: all covered PE instructions are bit-identical under the JIT\n");
  return g_failures != 0;
}
