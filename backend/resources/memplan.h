/* waferc backend — liveness-based SRAM planning for one program class.
 *
 * Every symbol of a class (a tensor block, a receive buffer, a scratch area) has a size and
 * a live interval in program order [first, last] (first definition, last use). Symbols whose
 * intervals overlap must not overlap in memory; the others may share it. Placement is greedy
 * (largest first, then first definition, then index), each symbol at the lowest aligned
 * offset free for its whole interval. Over budget, the result names the symbol that ends
 * highest and the bytes missing; the lowering words the error (class, suggestion).
 *
 *   wf_mem_sym s[2] = {{"%x", 4096, 4, 0, 3}, {"%y", 4096, 4, 4, 9}};
 *   wf_mem_plan m;
 *   wf_memplan(s, 2, 48 * 1024, &m);   // m.offset[0] == m.offset[1] == 0, m.peak == 4096
 *   wf_mem_plan_free(&m);
 */
#ifndef WAFERC_BACKEND_MEMPLAN_H
#define WAFERC_BACKEND_MEMPLAN_H

#include <stdint.h>

typedef struct wf_mem_sym {
  const char *name;  /* for the error */
  int64_t size;      /* bytes (0 is allowed and takes no space) */
  int64_t align;     /* a power of two; <= 1 = none */
  int first, last;   /* live interval in program order, inclusive */
  int group;         /* 0, or the PEs it lives on: symbols of two different nonzero groups
                        (values of two bands, lower_band.c) never meet on a PE, so they may
                        share memory whatever their intervals */
} wf_mem_sym;

typedef struct wf_mem_plan {
  int64_t *offset;   /* per symbol */
  int64_t peak;      /* bytes used: max offset + size */
  int64_t sum;       /* sum of sizes (what planning without reuse would need) */
  int over;          /* over budget: the symbol ending highest; else -1 */
  int64_t missing;   /* over budget: peak - budget; else 0 */
} wf_mem_plan;

/* Returns 0 if the plan fits `budget`, 1 if it does not (offsets, over and missing are
 * filled), -1 on bad input (negative size, bad alignment, first > last) or no memory. */
int wf_memplan(const wf_mem_sym *syms, int n, int64_t budget, wf_mem_plan *out);
void wf_mem_plan_free(wf_mem_plan *p);

#endif
