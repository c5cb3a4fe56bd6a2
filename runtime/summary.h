/* waferc runtime — the lines of waferrun's text summary computed from the public statistics
 * API (runtime.h): PE utilization and the busiest link. Kept short on purpose; the JSON
 * report, trace and heatmaps carry the detail.
 *
 *   wf_sim_print_summary(sim, stdout);        // cycles, time, per op
 *   wf_summary_print_usage(sim, stdout);      // utilization, busiest link
 */
#ifndef WAFERC_RUNTIME_SUMMARY_H
#define WAFERC_RUNTIME_SUMMARY_H

#include <stdio.h>

#include "runtime/runtime.h"

void wf_summary_print_usage(const wf_sim *s, FILE *out);

#endif
