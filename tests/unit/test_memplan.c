/* SRAM planning (backend/resources/memplan.c): symbols live at different times share space,
 * overlapping lifetimes never overlap in memory, alignment holds, peak <= sum, and an
 * over-budget plan names the symbol and the bytes missing. */
#include <stdlib.h>

#include "backend/resources/memplan.h"
#include "wf_test.h"

static void no_conflicts(const wf_mem_sym *s, int n, const wf_mem_plan *m) {
  for (int i = 0; i < n; i++) {
    if (s[i].align > 1) CHECK(m->offset[i] % s[i].align == 0, "%s misaligned", s[i].name);
    CHECK(m->offset[i] >= 0 && m->offset[i] + s[i].size <= m->peak);
    for (int j = 0; j < i; j++) {
      int live = s[i].first <= s[j].last && s[j].first <= s[i].last;
      int mem = m->offset[i] < m->offset[j] + s[j].size && m->offset[j] < m->offset[i] + s[i].size;
      CHECK(!(live && mem && s[i].size && s[j].size), "%s and %s overlap", s[i].name, s[j].name);
    }
  }
  CHECK(m->peak <= m->sum);
}

int main(void) {
  wf_mem_plan m;
  wf_mem_sym a[3] = {{"x", 4096, 4, 0, 3, 0}, {"y", 4096, 4, 4, 9, 0}, {"z", 100, 16, 2, 5, 0}};
  CHECK(wf_memplan(a, 3, 48 * 1024, &m) == 0);
  CHECK(m.offset[0] == 0 && m.offset[1] == 0, "x and y share: %lld %lld",
        (long long)m.offset[0], (long long)m.offset[1]);
  CHECK(m.offset[2] == 4096 && m.peak == 4196 && m.sum == 8292 && m.over == -1);
  no_conflicts(a, 3, &m);
  wf_mem_plan_free(&m);

  /* A pseudo-random program: many symbols, mixed sizes, alignments and lifetimes. */
  enum { N = 200 };
  wf_mem_sym s[N];
  unsigned seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    int first = (int)(seed >> 8) % 100;
    seed = seed * 1103515245u + 12345u;
    s[i] = (wf_mem_sym){"s", 1 + (int64_t)((seed >> 8) % 3000), (int64_t)1 << ((seed >> 4) % 6),
                        first, first + (int)((seed >> 16) % 20), 0};
  }
  CHECK(wf_memplan(s, N, INT64_MAX, &m) == 0);
  no_conflicts(s, N, &m);
  CHECK(m.peak < m.sum, "reuse: peak %lld sum %lld", (long long)m.peak, (long long)m.sum);
  wf_mem_plan_free(&m);

  /* Over budget: two live-together 30 KiB blocks in 48 KiB -> 12 KiB missing, named. */
  wf_mem_sym o[2] = {{"%w1", 30720, 4, 0, 5, 0}, {"%w2", 30720, 4, 1, 6, 0}};
  CHECK(wf_memplan(o, 2, 49152, &m) == 1);
  CHECK(m.over == 1 && m.missing == 61440 - 49152, "over %d missing %lld", m.over,
        (long long)m.missing);
  wf_mem_plan_free(&m);

  /* Groups: two bands' weights, live throughout, share their bytes; either against the
   * mesh's value (group 0) or against another of its own band does not. */
  wf_mem_sym g[4] = {{"@w_band1", 30720, 4, 0, 9, 1}, {"@w_band2", 30720, 4, 0, 9, 2},
                     {"%x", 1024, 4, 0, 9, 0}, {"%h_band2", 512, 4, 2, 3, 2}};
  CHECK(wf_memplan(g, 4, 49152, &m) == 0);
  CHECK(m.offset[0] == m.offset[1], "the bands share: %lld %lld", (long long)m.offset[0], (long long)m.offset[1]);
  CHECK(m.peak == 30720 + 1024 + 512, "peak %lld", (long long)m.peak);
  CHECK(m.offset[3] >= m.offset[1] + 30720 || m.offset[3] + 512 <= m.offset[1]);
  wf_mem_plan_free(&m);

  wf_mem_sym bad[1] = {{"b", 8, 3, 0, 1, 0}};
  CHECK(wf_memplan(bad, 1, 100, &m) == -1);
  return wf_test_result("test_memplan");
}
