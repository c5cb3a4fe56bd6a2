/* Prefill attention's K/V ring (backend/ops/lower_attention.c): the causal skip rule the
 * lowering's guards test, wf_attention_ring_live, against the block each row really holds in
 * each round of the INTERLEAVE ring (block order[(pos(y) - r) mod H]); every row meets each
 * block once, its own in round 0, and is live in exactly y + 1 rounds. */
#include <stdlib.h>

#include "backend/collectives/ring_line.h"
#include "backend/ops/attention_cost.h"
#include "wf_test.h"

static void ring(int h) {
  int *order = malloc(h * sizeof *order), *pos = malloc(h * sizeof *pos), *seen = malloc(h * sizeof *seen);
  CHECK(wf_interleave_order(h, order, pos) == 0);
  for (int y = 0; y < h; y++) {
    int lives = 0;
    for (int j = 0; j < h; j++) seen[j] = 0;
    for (int r = 0; r < h; r++) {
      int j = order[((pos[y] - r) % h + h) % h];
      seen[j]++;
      int live = wf_attention_ring_live(h, y, r);
      lives += live;
      CHECK(live == (j <= y), "H=%d y=%d r=%d: block %d, rule says %s", h, y, r, j, live ? "live" : "skip");
      CHECK((r == 0) == (j == y), "H=%d y=%d r=%d: block %d", h, y, r, j);
    }
    for (int j = 0; j < h; j++) CHECK(seen[j] == 1, "H=%d y=%d: block %d seen %d times", h, y, j, seen[j]);
    CHECK(lives == y + 1, "H=%d y=%d: %d live rounds", h, y, lives);
  }
  free(order), free(pos), free(seen);
}

int main(void) {
  for (int h = 1; h <= 97; h++) ring(h);
  ring(660);
  return wf_test_result("test_attention_ring");
}
