/* waferrun — the hardware rule for router configurations, checked at load
 * (docs/cycle-model.md, "Switch positions"). */
#ifndef WAFERC_RUNTIME_PLAN_ROUTES_H
#define WAFERC_RUNTIME_PLAN_ROUTES_H

#include "runtime/runtime.h"

/* A WSE router holds, per color and switch position, one set of rx ports and one set of tx
 * ports: a wavelet from any rx port goes to every tx port. Checks that on every PE of place
 * `pl` (region `reg`), the rules of class `c` that hold there give each (color, position)
 * one tx set for all the rx ports a wavelet can arrive on. Returns 0, or -1 after reporting
 * the first PE that breaks the rule at `path`:line, naming the PE, the color, the position
 * and the rules, as an error. */
int wf_plan_check_routes(const wf_pe_class *c, const wf_plan_region *reg, const wf_plan_place *pl,
                         const char *path);

#endif
