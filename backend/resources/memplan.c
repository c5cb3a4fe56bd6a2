/* Liveness-based per-PE SRAM planning (see memplan.h): greedy by size, each symbol at the
 * lowest aligned offset that no placed symbol with an overlapping live interval occupies. */
#include <stdlib.h>

#include "waferc/diag.h"
#include <string.h>

#include "backend/resources/memplan.h"

void wf_mem_plan_free(wf_mem_plan *p) {
  free(p->offset);
  memset(p, 0, sizeof *p);
}

static const wf_mem_sym *g_syms; /* qsort has no context argument in C11 */

static int cmp_place(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  const wf_mem_sym *x = &g_syms[i], *y = &g_syms[j];
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return i - j;
}

typedef struct span { int64_t lo, hi; } span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int64_t align_up(int64_t v, int64_t a) { return a <= 1 ? v : (v + a - 1) & ~(a - 1); }

int wf_memplan(const wf_mem_sym *syms, int n, int64_t budget, wf_mem_plan *out) {
  memset(out, 0, sizeof *out);
  out->over = -1;
  if (n < 0) return -1;
  for (int i = 0; i < n; i++) {
    const wf_mem_sym *s = &syms[i];
    if (s->size < 0 || s->first > s->last || (s->align > 1 && (s->align & (s->align - 1))))
      return -1;
  }
  int *ord = malloc((size_t)(n ? n : 1) * sizeof *ord);
  int *placed = malloc((size_t)(n ? n : 1) * sizeof *placed);
  span *busy = malloc((size_t)(n ? n : 1) * sizeof *busy);
  out->offset = calloc((size_t)(n ? n : 1), sizeof *out->offset);
  WF_ASSERT(ord && placed && busy && out->offset); /* out of host memory: exit 7, never "does not fit" */
  for (int i = 0; i < n; i++) ord[i] = i;
  g_syms = syms;
  qsort(ord, (size_t)n, sizeof *ord, cmp_place);
  int n_placed = 0;
  for (int o = 0; o < n; o++) {
    const wf_mem_sym *s = &syms[ord[o]];
    out->sum += s->size;
    int nb = 0;
    for (int p = 0; p < n_placed; p++) {
      const wf_mem_sym *t = &syms[placed[p]];
      if (t->size > 0 && t->first <= s->last && s->first <= t->last && !(s->group && t->group && s->group != t->group))
        busy[nb++] = (span){out->offset[placed[p]], out->offset[placed[p]] + t->size};
    }
    qsort(busy, (size_t)nb, sizeof *busy, cmp_span);
    /* First fit: walk the busy spans in address order, stop at the first gap. */
    int64_t at = 0;
    if (s->size > 0)
      for (int b = 0; b < nb; b++) {
        int64_t cand = align_up(at, s->align);
        if (cand + s->size <= busy[b].lo) break;
        if (busy[b].hi > at) at = busy[b].hi;
      }
    at = align_up(at, s->align);
    out->offset[ord[o]] = at;
    placed[n_placed++] = ord[o];
    if (at + s->size > out->peak) out->peak = at + s->size;
  }
  if (out->peak > budget) {
    out->missing = out->peak - budget;
    for (int i = 0; i < n; i++)
      if (out->offset[i] + syms[i].size == out->peak) {
        out->over = i;
        break;
      }
  }
  free(ord);
  free(placed);
  free(busy);
  return out->over >= 0 ? 1 : 0;
}
