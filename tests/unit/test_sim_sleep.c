/* Blocked routers sleep (runtime/sim.c): a run where they do must equal, number for number,
 * the run where they are visited every cycle (wf_sim.rt_poll, the polling loop): cycles, exit
 * code, every per-PE counter, every per-link wavelet and stall count, the ramp counts, the
 * output and the diagnostics (deadlock reports name cycles and blocked buffers). The plans
 * build backpressure on purpose (queue depth 2, slow consumers, multicast to consumers of
 * different speeds, two colors crossing one row), and one deadlocks on full buffers; both
 * run with several deadlock bounds and --max-cycles limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/sim_sched.h"
#include "waferc/diag.h"
#include "wf_test.h"
#include "wf_test_plan.h"

enum { W = 6, LEN = 64, CHUNK = 8 };

static char tmpdir[256];

/* plan dir `name`: a W x 1 row at queue depth 2 running `prog`; input a and output b are
 * f32[W * LEN] split along x ($a and $b) (wf_test_plan.h). */
static const char *write_plan(const char *name, const char *prog) {
  wf_test_plan t = {tmpdir, name, W, 1, 2, 2, LEN, 4, 0, 1, "{\"color\": 0}, {\"color\": 1}", prog};
  return wf_test_write_plan(&t);
}

/* PE0 multicasts LEN wavelets on c0 to PEs 1..5, which take them in chunks with compute of
 * different lengths in between; c1 carries LEN wavelets from PE5 back to PE0, which also
 * takes them slowly. c1_first: PE5 sends before it receives (then both ends wait on each
 * other with full buffers in between: a deadlock). */
static const char *program(char *buf, size_t cap, int c1_first) {
  size_t n = (size_t)snprintf(
      buf, cap,
      ".format 2\n.class main\n.sym $a 0 %d\n.sym $b %d %d\n.color c0 test\n.color c1 test\n"
      "[x==0] .route c0 RAMP -> E\n[x>0, x<%d] .route c0 W -> E RAMP\n[x==%d] .route c0 W -> RAMP\n"
      "[x==%d] .route c1 RAMP -> W\n[x>0, x<%d] .route c1 E -> W\n[x==0] .route c1 E -> RAMP\n"
      ".code\nop 0\n",
      4 * LEN, 4 * LEN, 4 * LEN, W - 1, W - 1, W - 1, W - 1);
  if (c1_first) n += (size_t)snprintf(buf + n, cap - n, "[x==%d] send c1 $a %d\n", W - 1, LEN);
  n += (size_t)snprintf(buf + n, cap - n, "[x==0] send c0 $a %d\n", LEN);
  for (int c = 0; c < LEN / CHUNK; c++)
    n += (size_t)snprintf(buf + n, cap - n,
                          "[x>0] recv c0 $b+%d %d\n[x==1] exp $b $b 3\n[x==3] exp $b $b 7\n"
                          "[x==%d] exp $b $b 1\n",
                          c * CHUNK, CHUNK, W - 1);
  if (!c1_first) n += (size_t)snprintf(buf + n, cap - n, "[x==%d] send c1 $a %d\n", W - 1, LEN);
  for (int c = 0; c < LEN / CHUNK; c++)
    n += (size_t)snprintf(buf + n, cap - n, "[x==0] recv c1 $b+%d %d\n[x==0] exp $b $b 5\n",
                          c * CHUNK, CHUNK);
  WF_ASSERT(n < cap);
  return buf;
}

/* Diagnostics of the current run, collected instead of printed. */
static char g_diag[16384];
static size_t g_diag_n;

static void collect(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)loc;
  (void)user;
  if (g_diag_n < sizeof g_diag)
    g_diag_n +=
        (size_t)snprintf(g_diag + g_diag_n, sizeof g_diag - g_diag_n, "%d %s\n", (int)sev, msg);
}

typedef struct outcome {
  char diag[sizeof g_diag];
  int rc;
  int64_t cycles, skipped;
  int64_t pe[W][6], link[W][2 * WF_DIR_COUNT + 1];
  float b[W * LEN];
} outcome;

static void run(const char *dir, int mode, int poll, int64_t max_cycles, int64_t deadlock,
                outcome *o) {
  memset(o, 0, sizeof *o);
  g_diag_n = 0;
  g_diag[0] = 0;
  wf_diag_set_sink(collect, NULL);
  wf_plan *p = wf_plan_load_ex(dir, WF_PLAN_ALLOW_MODIFIED);
  CHECK(p != NULL, "%s: plan does not load", dir);
  if (!p) return;
  wf_sim_opts opts = WF_SIM_OPTS_DEFAULT;
  opts.mode = mode;
  opts.max_cycles = max_cycles;
  opts.deadlock_cycles = deadlock;
  wf_sim *s = wf_sim_new(p, &opts);
  s->rt_poll = poll;
  int64_t dims[1] = {W * LEN};
  wf_tensor *a = wf_tensor_new(WF_F32, 1, dims);
  for (int i = 0; i < W * LEN; i++) ((float *)a->data)[i] = (float)(i % 97) / 8.0f;
  wf_sim_set_input(s, "a", a);
  wf_tensor_free(a);
  o->rc = wf_sim_run(s);
  o->cycles = wf_sim_cycles(s);
  o->skipped = s->rt_skipped;
  for (int x = 0; x < W; x++) {
    wf_sim_pe_stats st;
    wf_sim_pe_stats_at(s, x, 0, &st);
    int64_t v[6] = {st.compute, st.comm, st.stall, st.finish, st.ctl_wavelets, st.busy};
    memcpy(o->pe[x], v, sizeof v);
    for (int d = 0; d < WF_DIR_COUNT; d++) {
      o->link[x][d] = wf_sim_link_wavelets(s, x, 0, d);
      o->link[x][WF_DIR_COUNT + d] = wf_sim_link_stalls(s, x, 0, d);
    }
    o->link[x][2 * WF_DIR_COUNT] = wf_sim_ramp_down(s, x, 0);
  }
  if (!o->rc && mode == WF_SIM_FUNCTIONAL) {
    wf_tensor *t = wf_sim_output(s, 0);
    memcpy(o->b, t->data, sizeof o->b);
    wf_tensor_free(t);
  }
  wf_sim_free(s);
  wf_plan_free(p);
  wf_diag_set_sink(NULL, NULL);
  memcpy(o->diag, g_diag, sizeof g_diag);
}

/* The sleeping run equals the polling one; returns the visits sleeping saved. */
static int64_t same(const char *what, const char *dir, int mode, int64_t max_cycles,
                    int64_t deadlock) {
  static outcome a, b;
  run(dir, mode, 0, max_cycles, deadlock, &a);
  run(dir, mode, 1, max_cycles, deadlock, &b);
  CHECK(b.skipped == 0, "%s: the polling run slept", what);
  CHECK(a.rc == b.rc && a.cycles == b.cycles, "%s: rc %d, %lld cycles; polling: rc %d, %lld", what,
        a.rc, (long long)a.cycles, b.rc, (long long)b.cycles);
  for (int x = 0; x < W; x++) {
    for (int k = 0; k < 6; k++)
      CHECK(a.pe[x][k] == b.pe[x][k], "%s: PE %d counter %d: %lld, polling %lld", what, x, k,
            (long long)a.pe[x][k], (long long)b.pe[x][k]);
    for (int k = 0; k < 2 * WF_DIR_COUNT + 1; k++)
      CHECK(a.link[x][k] == b.link[x][k], "%s: router %d link counter %d: %lld, polling %lld",
            what, x, k, (long long)a.link[x][k], (long long)b.link[x][k]);
  }
  CHECK(memcmp(a.b, b.b, sizeof a.b) == 0, "%s: outputs differ", what);
  CHECK(strcmp(a.diag, b.diag) == 0, "%s: diagnostics differ:\n%s---- polling:\n%s", what, a.diag,
        b.diag);
  return a.skipped;
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/wf_sim_sleep_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  static char prog[16384];
  const char *flow = write_plan("flow", program(prog, sizeof prog, 0));
  int64_t saved = same("flow, timing", flow, WF_SIM_TIMING, 0, 0);
  CHECK(saved > 0, "flow: no router slept (the test does not exercise sleeping)");
  same("flow, functional", flow, WF_SIM_FUNCTIONAL, 0, 0);
  /* --max-cycles cutting the run while routers sleep */
  for (int64_t m = 100; m <= 1600; m += 300) same("flow, max-cycles", flow, WF_SIM_TIMING, m, 0);

  const char *dead = write_plan("dead", program(prog, sizeof prog, 1));
  saved = same("deadlock", dead, WF_SIM_TIMING, 0, 0);
  CHECK(saved > 0, "deadlock: no router slept");
  static outcome o;
  run(dead, WF_SIM_TIMING, 0, 0, 0, &o);
  CHECK(o.rc == WF_EXIT_RUNTIME && strstr(o.diag, "deadlock at cycle") &&
            strstr(o.diag, "(destination full)"),
        "deadlock: not reported as blocked buffers (rc %d):\n%s", o.rc, o.diag);
  same("deadlock, functional", dead, WF_SIM_FUNCTIONAL, 0, 0);
  same("deadlock, bound 37", dead, WF_SIM_TIMING, 0, 37);
  same("deadlock, bound 500", dead, WF_SIM_TIMING, 0, 500);
  for (int64_t m = 50; m <= 20000; m *= 3) same("deadlock, max-cycles", dead, WF_SIM_TIMING, m, 0);
  same("deadlock, max-cycles and bound", dead, WF_SIM_TIMING, 700, 650);

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return wf_test_result("sim_sleep");
}
