/* The rows' skew between ops (backend/resources/row_skew.h, docs/cycle-model.md "Skew between
 * ops") in the two models that take and give it, the shift GEMMs' (gemm_cost_rect.c) and
 * packed attention's (attention_cost.c):
 *  - asking for the rows' ends changes nothing: the prediction is the synchronized one, the
 *    latest row ends at 0 and none after it;
 *  - a GEMM with a pre-skewed weight and a causal attention leave their rows apart;
 *  - every row starting d cycles early makes the op end d cycles early, its rows' ends the same
 *    (the models are max-plus: only differences of times matter);
 *  - started from skewed rows, an op ends no later than started together, and no earlier than
 *    that minus the earliest row's lead;
 *  - a GEMM whose model samples rows (a large mesh) neither takes a start nor gives ends. */
#include <stdlib.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_preskew.h"
#include "backend/ops/attention_cost.h"
#include "wf_test.h"

#define H 16

static int64_t lead(const int64_t *s, int n) { /* how early the earliest row starts (>= 0) */
  int64_t m = 0;
  for (int y = 0; y < n; y++) m = s[y] < m ? s[y] : m;
  return -m;
}

static void ends_ok(const char *what, const wf_row_skew *rs, int n, int spread) {
  CHECK(rs->have_end, "%s: no rows' ends", what);
  int64_t mx = INT64_MIN, mn = 0;
  for (int y = 0; y < n; y++) {
    mx = rs->end[y] > mx ? rs->end[y] : mx;
    mn = rs->end[y] < mn ? rs->end[y] : mn;
  }
  CHECK(mx == 0, "%s: the latest row ends at %lld, not 0", what, (long long)mx);
  if (spread) CHECK(mn < 0, "%s: every row ends together", what);
}

static int64_t gemm(const wf_target *t, int preskew, const int64_t *start, int64_t *end, int *have) {
  wf_row_skew rs = {start, end, 0};
  int64_t c = wf_gemm_shift_sched(t, 1, H, H, 4, 16, 16, 4, preskew, 2, NULL, NULL, &rs);
  *have = rs.have_end;
  return c;
}

static int64_t attn(const wf_target *t, const int64_t *start, int64_t *end, int *have) {
  wf_row_skew rs = {start, end, 0};
  wf_attn_shape a = {H, 1, 4, 16, 16, 32, 0, 1, 4 * H, 0, 0, 0, &rs, 0};
  int64_t c = wf_attention_predict(t, &a);
  *have = rs.have_end;
  return c;
}

int main(void) {
  wf_test_targets();
  wf_target t;
  CHECK(wf_target_load("wse2", &t) == 0, "wse2 does not load");
  if (g_failures) return wf_test_result("test_row_skew");
  int64_t e0[H], e1[H], start[H];
  int have;

  /* the GEMM, B a pre-skewed weight: A alone aligns, by a different number of shifts per row */
  int64_t sync = gemm(&t, WF_PRESKEW_B, NULL, e0, &have);
  CHECK(sync == wf_gemm_shift_phases(&t, 1, H, H, 4, 16, 16, 4, WF_PRESKEW_B, 2, NULL, NULL),
        "asking for the ends changed the GEMM's prediction");
  wf_row_skew r0 = {NULL, e0, have};
  ends_ok("gemm", &r0, H, 1);
  for (int y = 0; y < H; y++) start[y] = -100;
  int64_t early = gemm(&t, WF_PRESKEW_B, start, e1, &have);
  CHECK(early == sync - 100, "gemm: every row 100 cycles early ends %lld, not %lld", (long long)early,
        (long long)(sync - 100));
  for (int y = 0; y < H; y++) CHECK(e1[y] == e0[y], "gemm: row %d ends at %lld, not %lld", y, (long long)e1[y],
                                    (long long)e0[y]);
  /* the next GEMM, started from this one's rows */
  int64_t chained = gemm(&t, WF_PRESKEW_B, e0, e1, &have);
  CHECK(chained <= sync && chained >= sync - lead(e0, H), "gemm after gemm: %lld outside [%lld, %lld]",
        (long long)chained, (long long)(sync - lead(e0, H)), (long long)sync);

  /* the causal attention: the rows' live rounds differ */
  int64_t asy = attn(&t, NULL, e1, &have);
  wf_attn_shape plain = {H, 1, 4, 16, 16, 32, 0, 1, 4 * H, 0, 0, 0, NULL, 0};
  CHECK(asy > 0 && asy == wf_attention_predict(&t, &plain), "asking for the ends changed the attention's prediction");
  wf_row_skew r1 = {NULL, e1, have};
  ends_ok("attention", &r1, H, 1);
  int64_t aearly = attn(&t, start, e0, &have);
  CHECK(aearly == asy - 100, "attention: every row 100 cycles early ends %lld, not %lld", (long long)aearly,
        (long long)(asy - 100));
  for (int y = 0; y < H; y++) CHECK(e0[y] == e1[y], "attention: row %d ends at %lld, not %lld", y, (long long)e0[y],
                                    (long long)e1[y]);
  /* attention after the GEMM, and the GEMM after the attention */
  gemm(&t, WF_PRESKEW_B, NULL, e0, &have);
  int64_t a2 = attn(&t, e0, e1, &have);
  CHECK(a2 <= asy && a2 >= asy - lead(e0, H), "attention after gemm: %lld outside [%lld, %lld]", (long long)a2,
        (long long)(asy - lead(e0, H)), (long long)asy);
  int64_t g2 = gemm(&t, WF_PRESKEW_B, e1, e0, &have);
  CHECK(g2 <= sync && g2 >= sync - lead(e1, H), "gemm after attention: %lld outside [%lld, %lld]", (long long)g2,
        (long long)(sync - lead(e1, H)), (long long)sync);

  /* 660 x 660: the model samples rows; a start is ignored, no ends are given */
  int64_t *big = calloc(660 * 2, sizeof *big);
  CHECK(big != NULL);
  for (int y = 0; y < 660; y++) big[y] = -1000;
  wf_row_skew rb = {big, big + 660, 0};
  int64_t sampled = wf_gemm_shift_sched(&t, 1, 660, 660, 2, 2, 2, 2, WF_PRESKEW_B, 2, NULL, NULL, &rb);
  CHECK(!rb.have_end, "660x660: the sampled model gave rows' ends");
  CHECK(sampled == wf_gemm_shift_phases(&t, 1, 660, 660, 2, 2, 2, 2, WF_PRESKEW_B, 2, NULL, NULL),
        "660x660: the sampled model took a start");
  free(big);
  return wf_test_result("test_row_skew");
}
