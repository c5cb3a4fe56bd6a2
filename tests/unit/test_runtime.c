/* The wavelet-level cycle model against closed forms that follow from its rules
 * (docs/cycle-model.md), on tiny hand-written plans:
 *   - one message of B wavelets over P hops (P+1 PEs): B + (P+1) + 2*T_R  (Reduce paper,
 *     T_MESSAGE = B + P_PEs + 2T_R: hops + 2 ramps + 1 cycle to store the last element)
 *   - a 1-D flooding broadcast to P hops: the same            (Reduce paper, Lemma 4.1)
 *   - two senders sharing one link serialize: 2B + 2 + 2*T_R for the 1-hop/2-hop pair
 *   - compute costs: matmul m*k*n / fmac, exp n * exp_cycles
 *   - a receive nobody sends to is reported as a deadlock
 *   - plans with a wrong format version or an undeclared color are rejected
 *   - fp16 SIMD: ceil(n / fp16_simd) cycles (WSE-2 4, WSE-3 8), f16 rounding, f32 accumulate
 *   - bank conflicts: two source reads in one bank cost bank_conflict_cycles more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "waferc/diag.h"

#include "wf_test.h"
#include "wf_test_plan.h"

static char tmpdir[256];
static int g_fp16_simd = 4;   /* target keys the fp16 and bank tests vary */
static int g_bank_cycles = 0;

/* The plan `name` for a w x h mesh running `program` (wf_test_plan.h), with the target keys
 * the fp16 and bank tests vary. */
static const char *write_plan(const char *name, int w, int h, int ramp, int depth, int len,
                              const char *colors, const char *program, int format_version) {
  wf_test_plan t = {tmpdir, name, w, h, ramp, depth, len, g_fp16_simd, g_bank_cycles, format_version, colors, program};
  return wf_test_write_plan(&t);
}

static int sim_mode = WF_SIM_FUNCTIONAL;
static int64_t run_both(const char *dir, int n, float *b, const char *what);

/* Runs a plan with input a[i] = i + 1; returns cycles (or -1 on a failed run); fills b. */
static int64_t run(const char *dir, int n, float *b, int *rc_out) {
  wf_plan *p = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  if (!p) return -2;
  wf_sim_opts o = WF_SIM_OPTS_DEFAULT;
  o.mode = sim_mode;
  wf_sim *s = wf_sim_new(p, &o);
  int64_t dims[1] = {n};
  wf_tensor *a = wf_tensor_new(WF_F32, 1, dims);
  for (int i = 0; i < n; i++) ((float *)a->data)[i] = (float)(i + 1);
  wf_sim_set_input(s, "a", a);
  wf_tensor_free(a);
  int rc = wf_sim_run(s);
  if (rc_out) *rc_out = rc;
  int64_t cycles = rc ? -1 : wf_sim_cycles(s);
  if (!rc && b && sim_mode == WF_SIM_FUNCTIONAL) {
    wf_tensor *t = wf_sim_output(s, 0);
    memcpy(b, t->data, (size_t)n * sizeof(float));
    wf_tensor_free(t);
  }
  wf_sim_free(s);
  wf_plan_free(p);
  return cycles;
}

static const char *header(char *buf, size_t cap, int len, const char *routes) {
  snprintf(buf, cap,
           ".format 1\n.class main\n.sym $a 0 %d\n.sym $b %d %d\n.color c0 test\n%s.code\nop 0\n",
           4 * len, ((4 * len + 15) / 16) * 16, 8 * len, routes);
  return buf;
}

static void test_message(int B, int P, int T_R) {
  char prog[2048], hdr[1024], routes[256];
  snprintf(routes, sizeof routes,
           "[x==0] .route c0 RAMP -> E\n[x>0] .route c0 W -> E\n[x==%d] .route c0 W -> RAMP\n", P);
  snprintf(prog, sizeof prog, "%s[x==0] send c0 $a %d\n[x==%d] recv c0 $b %d\n",
           header(hdr, sizeof hdr, B, routes), B, P, B);
  const char *dir = write_plan("message", P + 1, 1, T_R, 8, B, "{\"color\": 0}", prog, 1);
  int n = (P + 1) * B;
  float *b = calloc((size_t)n, sizeof *b);
  int64_t cyc = run_both(dir, n, b, "message");
  CHECK(cyc == B + P + 1 + 2 * T_R, "message B=%d P=%d T_R=%d: %lld cycles, model says %d", B, P,
        T_R, (long long)cyc, B + P + 1 + 2 * T_R);
  /* The receiver's $b holds the sender's $a block in order. */
  for (int i = 0; i < B; i++)
    CHECK(b[P * B + i] == (float)(i + 1), "message payload %d: got %g", i, b[P * B + i]);
  free(b);
}

static void test_broadcast(int B, int P) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s[x==0] send c0 $a %d\n[x>0] recv c0 $b %d\n",
           header(hdr, sizeof hdr, B, "[x==0] .route c0 RAMP -> E\n[x>0] .route c0 W -> E RAMP\n"),
           B, B);
  const char *dir = write_plan("bcast", P + 1, 1, 2, 8, B, "{\"color\": 0}", prog, 1);
  int n = (P + 1) * B;
  float *b = calloc((size_t)n, sizeof *b);
  int64_t cyc = run(dir, n, b, NULL);
  CHECK(cyc == B + P + 1 + 4, "broadcast B=%d P=%d: %lld cycles, model says %d", B, P,
        (long long)cyc, B + P + 1 + 4);
  for (int x = 1; x <= P; x++)
    for (int i = 0; i < B; i++)
      CHECK(b[x * B + i] == (float)(i + 1), "broadcast PE %d elem %d: got %g", x, i, b[x * B + i]);
  free(b);
}

/* PE0 (2 hops) and PE1 (1 hop) both send B wavelets to PE2 through link 1->2. The link
 * carries one wavelet per cycle from cycle T_R on, so the last of the 2B crosses at
 * T_R + 2B - 1, is consumed T_R + 1 cycles later and stored in the cycle after that.
 * Alone, PE1's message takes B + 2 + 2T_R. */
static void test_contention(int B) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s[x<2] send c0 $a %d\n[x==2] recv c0 $b %d\n",
           header(hdr, sizeof hdr, 2 * B,
                  "[x==0] .route c0 RAMP -> E\n[x==1] .route c0 W -> E\n"
                  "[x==1] .route c0 RAMP -> E\n[x==2] .route c0 W -> RAMP\n"),
           B, 2 * B);
  const char *dir = write_plan("contention", 3, 1, 2, 8, 2 * B, "{\"color\": 0}", prog, 1);
  int64_t cyc = run(dir, 6 * B, NULL, NULL);
  CHECK(cyc == 2 * B + 2 + 4, "contention B=%d: %lld cycles, model says %d", B, (long long)cyc,
        2 * B + 6);
}

static void test_compute(void) {
  char prog[2048], hdr[1024];
  /* 4x4 block: matmul 4*4*4 = 64 cycles, then exp of 16 elements = 16 * 8 cycles. */
  snprintf(prog, sizeof prog, "%smatmul $b $a $a 4 4 4\nexp $b $b 16\n",
           header(hdr, sizeof hdr, 16, ""));
  const char *dir = write_plan("compute", 1, 1, 2, 8, 16, "{\"color\": 0}", prog, 1);
  float b[16];
  int64_t cyc = run(dir, 16, b, NULL);
  CHECK(cyc == 64 + 16 * 8, "compute: %lld cycles, model says %d", (long long)cyc, 64 + 128);
  /* a = 1..16 as a 4x4 matrix; (a*a)[0][0] = 1*1 + 2*5 + 3*9 + 4*13 = 90. */
  CHECK(b[0] > 0 && b[0] == expf(90.0f), "compute: b[0] = %g, want exp(90)", b[0]);
}

/* copy2d gathers a strided sub-block: columns 2..3 of the 4x4 matrix a = 1..16 into a
 * contiguous 4x2 tile (the layout MeshGEMM's lcm tiles need); it costs rows x cols cycles,
 * its strides are not work. */
static void test_copy2d(void) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%szero $b 16\ncopy2d $b $a+2 4 2 2 4\n", header(hdr, sizeof hdr, 16, ""));
  const char *dir = write_plan("copy2d", 1, 1, 2, 8, 16, "{\"color\": 0}", prog, 1);
  float b[16];
  int64_t cyc = run(dir, 16, b, NULL);
  CHECK(cyc == 16 + 4 * 2, "copy2d: %lld cycles, model says %d", (long long)cyc, 16 + 8);
  const float want[16] = {3, 4, 7, 8, 11, 12, 15, 16};
  for (int i = 0; i < 16; i++) CHECK(b[i] == want[i], "copy2d: b[%d] = %g, want %g", i, b[i], want[i]);
  /* a source reaching past its symbol is a located runtime error, not a read out of bounds */
  snprintf(prog, sizeof prog, "%scopy2d $b $a+2 4 2 2 5\n", header(hdr, sizeof hdr, 16, ""));
  dir = write_plan("copy2d_oob", 1, 1, 2, 8, 16, "{\"color\": 0}", prog, 1);
  int rc = 0;
  CHECK(run(dir, 16, NULL, &rc) < 0 && rc != 0, "copy2d past the end of $a accepted");
}

static void test_deadlock(void) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s[x==1] recv c0 $b 4\n",
           header(hdr, sizeof hdr, 4, "[x==0] .route c0 RAMP -> E\n[x==1] .route c0 W -> RAMP\n"));
  const char *dir = write_plan("deadlock", 2, 1, 2, 8, 4, "{\"color\": 0}", prog, 1);
  int rc = 0;
  int64_t cyc = run(dir, 8, NULL, &rc);
  CHECK(cyc == -1 && rc == WF_EXIT_RUNTIME, "deadlock not reported (rc %d, cycles %lld)", rc,
        (long long)cyc);
}

static void test_bad_plans(void) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s", header(hdr, sizeof hdr, 4, ""));
  const char *dir = write_plan("badversion", 1, 1, 2, 8, 4, "{\"color\": 0}", prog, 3);
  CHECK(wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED) == NULL, "format_version 3 (newer than this loader) accepted");
  /* A send on a color the program never declared. */
  snprintf(prog, sizeof prog, "%ssend c5 $a 4\n", header(hdr, sizeof hdr, 4, ""));
  dir = write_plan("badcolor", 1, 1, 2, 8, 4, "{\"color\": 0}", prog, 1);
  CHECK(wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED) == NULL, "undeclared color accepted");
  /* A class rectangle outside the mesh. */
  snprintf(prog, sizeof prog, "%s", header(hdr, sizeof hdr, 4, ""));
  dir = write_plan("badrect", 1, 1, 2, 8, 4, "{\"color\": 23}", prog, 1);
  CHECK(wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED) == NULL, "reserved color 23 accepted");
  /* A valid plan written by hand carries no digests: refused unless the caller allows it. */
  snprintf(prog, sizeof prog, "%s", header(hdr, sizeof hdr, 4, ""));
  dir = write_plan("unsealed", 1, 1, 2, 8, 4, "{\"color\": 0}", prog, 1);
  wf_plan *p = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  CHECK(p != NULL, "a valid hand-written plan refused with WF_PLAN_ALLOW_MODIFIED");
  wf_plan_free(p);
  CHECK(wf_plan_load(dir) == NULL, "a plan without digests accepted by the strict loader");
  /* wf_plan_load_text: the manifest's text from memory loads as the file does; an edit to the
   * text is seen though the file is unchanged. */
  char mpath[512];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  FILE *f = fopen(mpath, "rb");
  static char text[1 << 16];
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = 0;
  p = wf_plan_load_text(dir, text, n, WF_PLAN_ALLOW_MODIFIED);
  wf_plan *q = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  CHECK(p && q && p->mesh_w == q->mesh_w && p->n_classes == q->n_classes && p->n_inputs == q->n_inputs &&
            p->colors_used == q->colors_used && !strcmp(p->dir, q->dir),
        "a manifest from memory loads differently");
  wf_plan_free(p);
  wf_plan_free(q);
  CHECK(wf_plan_load_text(dir, text, n, 0) == NULL, "a manifest without digests accepted from memory");
  char *fv = strstr(text, "\"format_version\": 1");
  CHECK(fv != NULL, "no format_version 1 in %s", mpath);
  if (fv) fv[18] = '3';
  CHECK(wf_plan_load_text(dir, text, n, WF_PLAN_ALLOW_MODIFIED) == NULL, "format_version 3 accepted from memory");
}

/* Format 2: a header with $a and $b of `len` words each and colors c0, c1. */
static const char *header2(char *buf, size_t cap, int len, const char *routes) {
  snprintf(buf, cap,
           ".format 2\n.class main\n.sym $a 0 %d\n.sym $b %d %d\n.color c0 test\n.color c1 test\n"
           "%s.code\n",
           4 * len, ((4 * len + 15) / 16) * 16, 4 * len, routes);
  return buf;
}

/* The same plan in functional and timing mode: equal cycles (timing mode has no data). */
static int64_t run_both(const char *dir, int n, float *b, const char *what) {
  int64_t f = run(dir, n, b, NULL);
  sim_mode = WF_SIM_TIMING;
  int64_t t = run(dir, n, NULL, NULL);
  sim_mode = WF_SIM_FUNCTIONAL;
  CHECK(f > 0 && f == t, "%s: functional %lld cycles, timing %lld", what, (long long)f, (long long)t);
  return f;
}

/* The simulator's memory layout (runtime/sim_layout.c): a flooding broadcast along a row
 * long enough that its queues take several FIFO arena chunks, with a queue depth that is not
 * a power of two, keeps the closed form (B + P + 1 + 2T_R) and the payload, in both modes. */
static void test_long_row(int B, int P, int depth) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s[x==0] send c0 $a %d\n[x>0] recv c0 $b %d\n",
           header(hdr, sizeof hdr, B, "[x==0] .route c0 RAMP -> E\n[x>0] .route c0 W -> E RAMP\n"),
           B, B);
  const char *dir = write_plan("long_row", P + 1, 1, 2, depth, B, "{\"color\": 0}", prog, 1);
  int n = (P + 1) * B;
  float *b = calloc((size_t)n, sizeof *b);
  int64_t cyc = run_both(dir, n, b, "long row");
  CHECK(cyc == B + P + 1 + 4, "long row B=%d P=%d depth=%d: %lld cycles, model says %d", B, P,
        depth, (long long)cyc, B + P + 1 + 4);
  int bad = 0;
  for (int x = 1; x <= P; x++)
    for (int i = 0; i < B; i++) bad += b[x * B + i] != (float)(i + 1);
  CHECK(bad == 0, "long row: %d payload elements wrong", bad);
  free(b);
}

/* Switch positions and control wavelets: PE0 sends B to PE1 (router 1 at position 0: W ->
 * RAMP), then a control wavelet, which reaches PE1 (activating its control task) and then
 * advances router 1 to position 1 (W -> E): the next B go to PE2. A teardown wavelet resets
 * router 1 to position 0, so the last B go to PE1 again. */
static void test_switch_ctl_teardown(int B) {
  char prog[4096], hdr[1024];
  snprintf(prog, sizeof prog,
           "%sop 0\n[x==0] send c0 $a %d\n[x==0] ctl c0\n[x==0] send c0 $a+%d %d\n[x==0] teardown c0\n"
           "[x==0] send c0 $a+%d %d\n"
           "[x==1] recv c0 $b %d\n[x==1] recv c0 $b+%d %d\n[x==2] recv c0 $b %d\n"
           ".task onctl control c0\ncopy $a $b 1\n",
           header2(hdr, sizeof hdr, 3 * B,
                   "[x==0] .route c0 RAMP -> E\n[x==1] .route c0 W -> RAMP\n"
                   "[x==1] .route c0 p1 W -> E\n[x==2] .route c0 W -> RAMP\n"),
           B, B, B, 2 * B, B, B, 2 * B, B, B);
  const char *dir = write_plan("switch", 3, 1, 2, 8, 3 * B, "{\"color\": 0}, {\"color\": 1}", prog, 1);
  int n = 9 * B;
  float *b = calloc((size_t)n, sizeof *b);
  run_both(dir, n, b, "switch/ctl/teardown");
  for (int i = 0; i < B; i++) {
    CHECK(b[3 * B + i] == (float)(i + 1), "switch: PE1 first block [%d] = %g", i, b[3 * B + i]);
    CHECK(b[6 * B + i] == (float)(B + i + 1), "switch: PE2 block [%d] = %g", i, b[6 * B + i]);
    CHECK(b[5 * B + i] == (float)(2 * B + i + 1), "switch: PE1 after teardown [%d] = %g", i,
          b[5 * B + i]);
  }
  free(b);
}

/* Tasks: PE0 starts an async send and goes on; its completion activates task `sent`. PE1's
 * data task wakes when the first wavelet arrives. A blocked task runs only once unblocked;
 * one never unblocked never runs. */
static void test_tasks_async(int B) {
  char prog[4096], hdr[1024];
  snprintf(prog, sizeof prog,
           "%sop 0\n[x==0] asend c0 $a %d sent\n[x==0] zero $b 1\n"
           "[x==1] unblock late\n"
           ".task sent local\ncopy $b+1 $a 1\n"
           ".task rx data c0\nrecv c0 $b+2 %d\n"
           ".task late local active blocked\ncopy $b+%d $a 1\n"
           ".task never local active blocked\ncopy $b+%d $a 1\n",
           header2(hdr, sizeof hdr, B + 4, "[x==0] .route c0 RAMP -> E\n[x==1] .route c0 W -> RAMP\n"),
           B, B, B + 2, B + 3);
  const char *dir = write_plan("tasks", 2, 1, 2, 8, B + 4, "{\"color\": 0}, {\"color\": 1}", prog, 1);
  int len = B + 4, n = 2 * len;
  float *b = calloc((size_t)n, sizeof *b);
  int64_t cyc = run_both(dir, n, b, "tasks/async");
  CHECK(b[1] == 1.0f, "async completion did not run task 'sent' (b[1] = %g)", b[1]);
  for (int i = 0; i < B; i++)
    CHECK(b[len + 2 + i] == (float)(i + 1), "data task: PE1 got %g at %d", b[len + 2 + i], i);
  CHECK(b[len + B + 2] == (float)(len + 1), "unblocked task did not run (%g)", b[len + B + 2]);
  CHECK(b[len + B + 3] == 0.0f, "a task that stays blocked ran (%g)", b[len + B + 3]);
  /* The message takes what a synchronous one does: B + 2 + 2T_R (the sender's tasks overlap). */
  CHECK(cyc == B + 2 + 4, "tasks/async: %lld cycles, model says %d", (long long)cyc, B + 6);
  free(b);
}

/* Limits of the target are checked when the plan loads. */
/* fp16 SIMD: a = 1..10 narrowed to f16, squared twice in f16, widened, then an f16 x f16
 * multiply accumulated into f32. Five SIMD16 instructions of 10 elements: ceil(10/4) = 3
 * cycles each at fp16_simd 4 (WSE-2), ceil(10/8) = 2 at 8 (WSE-3). */
static void test_fp16(int simd) {
  const char *prog =
      ".format 1\n.class main\n.sym $a 0 40\n.sym $b 48 80\n.sym $h 128 20\n.sym $h2 160 20\n"
      ".sym $h4 192 20\n.code\nop 0\n"
      "hcvt $h $a 10\nhmul $h2 $h $h 10\nhmul $h4 $h2 $h2 10\nhext $b $h4 10\n"
      "hfmac $b $h $h 10\n";
  g_fp16_simd = simd;
  const char *dir = write_plan(simd == 4 ? "fp16_w2" : "fp16_w3", 1, 1, 2, 8, 10, "", prog, 1);
  g_fp16_simd = 4;
  float b[10];
  int64_t cyc = run_both(dir, 10, b, "fp16");
  int64_t want = 5 * ((10 + simd - 1) / simd);
  CHECK(cyc == want, "fp16 (simd %d): %lld cycles, model says %lld", simd, (long long)cyc,
        (long long)want);
  /* i^4 rounded to f16 (11 significant bits, ties to even): 2401 lies halfway between 2400
   * and 2402 (spacing 2 in [2048,4096)) and goes to 2400 (1200 even); 6561 is 6560 + 1/4 of
   * the spacing 4 in [4096,8192): 6560. The others are exact. Then + i^2 in f32. */
  static const float p4[10] = {1, 16, 81, 256, 625, 1296, 2400, 4096, 6560, 10000};
  for (int i = 0; i < 10; i++) {
    float w = p4[i] + (float)((i + 1) * (i + 1));
    CHECK(b[i] == w, "fp16: b[%d] = %g, want %g", i, b[i], w);
  }
  /* An f16 operand is counted in 2-byte elements: 11 elements overrun the 20-byte $h. */
  prog = ".format 1\n.class main\n.sym $a 0 40\n.sym $b 48 80\n.sym $h 128 20\n.code\nop 0\n"
         "hcvt $h $a 11\n";
  dir = write_plan("fp16_bad", 1, 1, 2, 8, 10, "", prog, 1);
  int rc = 0;
  CHECK(run(dir, 10, NULL, &rc) < 0 && rc != 0, "fp16: 11 f16 elements fit a 20-byte symbol");
}

/* Bank conflicts (banks of 49152 / 8 = 6144 bytes): add $b = $a + $c over 16 elements. $a at
 * byte 0 and $c at byte 64 share bank 0 on all 16 reads; $c at 6144 (bank 1) never does. With
 * bank_conflict_cycles 0 both cost 16 cycles. */
static void test_banks(void) {
  char prog[1024];
  for (int far = 0; far < 2; far++)
    for (int cost = 0; cost < 3; cost += 2) {
      snprintf(prog, sizeof prog,
               ".format 1\n.class main\n.sym $a 0 64\n.sym $b 6144 64\n.sym $c %d 64\n"
               ".code\nop 0\ncopy $c $a 16\nadd $b $a $c 1 16 ij\n",
               far ? 12288 : 64);
      g_bank_cycles = cost;
      const char *dir = write_plan("banks", 1, 1, 2, 8, 16, "", prog, 1);
      g_bank_cycles = 0;
      float b[16];
      int64_t cyc = run_both(dir, 16, b, "banks");
      int64_t want = 16 + 16 + (far ? 0 : 16 * cost);
      CHECK(cyc == want, "banks (c at %s, cost %d): %lld cycles, rule says %lld",
            far ? "bank 2" : "bank 0", cost, (long long)cyc, (long long)want);
      CHECK(b[3] == 8.0f, "banks: b[3] = %g, want 8", b[3]);
    }
}

static void test_limits(void) {
  char prog[2048], hdr[1024];
  snprintf(prog, sizeof prog, "%s", header2(hdr, sizeof hdr, 4, "[x==0] .route c0 p4 RAMP -> E\n"));
  const char *dir = write_plan("pos", 1, 1, 2, 8, 4, "{\"color\": 0}, {\"color\": 1}", prog, 1);
  CHECK(wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED) == NULL, "switch position p4 accepted with 4 positions");
  snprintf(prog, sizeof prog, ".format 2\n.class main\n.sym $a 0 16\n.sym $b 16 16\n.sym $big 32 49152\n.code\n");
  dir = write_plan("sram", 1, 1, 2, 8, 4, "", prog, 1);
  CHECK(wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED) == NULL, "SRAM overflow accepted");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/wf_test_runtime_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_message(1, 1, 2);
  test_message(5, 3, 2);
  test_message(32, 7, 2);
  test_message(20, 4, 3); /* T_R is a parameter, not a constant */
  test_message(100, 2, 2); /* longer than the queues: backpressure must not slow it */
  test_broadcast(16, 5);
  test_broadcast(1, 1);
  test_long_row(5, 20000, 3);
  test_long_row(3, 9000, 8);
  test_contention(16);
  test_contention(40);
  test_compute();
  test_copy2d();
  test_deadlock();
  test_bad_plans();
  test_switch_ctl_teardown(4);
  test_switch_ctl_teardown(13);
  test_tasks_async(5);
  test_tasks_async(20);
  test_limits();
  test_fp16(4); /* WSE-2 */
  test_fp16(8); /* WSE-3 */
  test_banks();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd)) fprintf(stderr, "note: could not remove %s\n", tmpdir);
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("test_runtime: all checks passed\n");
  return g_failures ? 1 : 0;
}
