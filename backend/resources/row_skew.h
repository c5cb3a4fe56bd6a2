/* waferc backend — the skew one op leaves for the next: where each row of PEs ends an op,
 * relative to the op's predicted end (the latest row's), so that the next op's model can start
 * each row when that row is free instead of all together (docs/cycle-model.md, "Skew between
 * ops"). A PE runs its ops in program order, so a row that ends an op early starts the next
 * one early; only models that follow the rows one by one (the shift GEMMs', packed
 * attention's) take or give one.
 *
 *   int64_t in[H], out[H];
 *   wf_row_skew rs = {prev_ok ? in : NULL, out, 0};
 *   int64_t c = wf_gemm_shift_sched(t, 1, W, H, m, k, k, n, 2, 2, NULL, NULL, &rs);
 *   if (rs.have_end) ... out[y] <= 0 is where row y ended, c cycles after the op before ended */
#ifndef WAFERC_BACKEND_RESOURCES_ROW_SKEW_H
#define WAFERC_BACKEND_RESOURCES_ROW_SKEW_H

#include <stdint.h>

typedef struct wf_row_skew {
  const int64_t *start; /* per row (h entries): when it is free, relative to the op before's
                           predicted end (<= 0); NULL: every row starts at 0 */
  int64_t *end;         /* per row, filled when the model followed every row: where it ends
                           the op, relative to the returned prediction (<= 0); NULL: not wanted */
  int have_end;         /* set when `end` was filled */
} wf_row_skew;

#endif
