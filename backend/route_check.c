/* Route codes per PE (WaferLLM §3.1): a router tells apart at most R = 2^route_code_bits
 * routes. Every (color, switch position) a PE's router is configured for is one route
 * code; a class whose guards give some PE more than R of them cannot be loaded on the
 * target. Checked on every PE of the region (guards are cheap to evaluate). */
#include <stdlib.h>
#include <string.h>

#include "backend/lower.h"
#include "waferc/diag.h"

int wf_lower_check_route_codes(const wf_lower *L) {
  const wf_pe_class *c = L->cls;
  int bits = L->t->route_code_bits;
  if (bits <= 0 || bits >= 16 || !c->n_routes) return 0;
  int limit = 1 << bits;
  /* (color, pos) pairs: colors < 32, positions < WF_PE_MAX_POS */
  uint8_t seen[32 * WF_PE_MAX_POS];
  for (int y = 0; y < L->h; y++)
    for (int x = 0; x < L->w; x++) {
      wf_pe_env e = wf_pe_env_at(c, x, y, L->w, L->h);
      memset(seen, 0, sizeof seen);
      int n = 0;
      for (int i = 0; i < c->n_routes; i++) {
        const wf_pe_route *r = &c->routes[i];
        if (r->color < 0 || r->color >= 32 || r->pos < 0 || r->pos >= WF_PE_MAX_POS) continue;
        if (!wf_guard_eval(&r->guard, &e)) continue;
        uint8_t *s = &seen[r->color * WF_PE_MAX_POS + r->pos];
        if (!*s) *s = 1, n++;
      }
      if (n > limit) {
        wf_error(L->f->loc, "PE (%d, %d) of class '%s' needs %d route codes (color and switch "
                            "position pairs) but a '%s' router tells apart %d (route_code_bits = %d)",
                 x, y, c->name, n, L->t->name, limit, bits);
        return WF_EXIT_NOFIT;
      }
    }
  return 0;
}
