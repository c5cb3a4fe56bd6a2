/* waferc runtime — `waferrun --trace trace.json`: the simulation as a Chrome Trace Event file
 * that Perfetto (ui.perfetto.dev) and chrome://tracing open. Format: docs/report-format.md.
 *
 *   wf_trace *t = wf_trace_new(sim, plan, WF_TRACE_DEFAULT_LIMIT);
 *   wf_sim_set_event_callback(sim, wf_trace_on_event, t);   // before wf_sim_run
 *   wf_sim_run(sim);
 *   int rc = wf_trace_write(t, "trace.json", run_rc);       // WF_EXIT_*
 *   wf_trace_free(t);
 *
 * One timestamp unit is one simulated cycle (the viewer calls it a microsecond). Meshes of up
 * to WF_TRACE_PE_TRACKS PEs get one track per PE with task, op and instruction spans, and one
 * per async engine a PE used with its streams; larger meshes get one counter track per row
 * (how many PEs of the row compute, run a fabric instruction, have async streams running).
 * Deterministic: the same run writes the same bytes.
 */
#ifndef WAFERC_RUNTIME_TRACE_H
#define WAFERC_RUNTIME_TRACE_H

#include <stdint.h>

#include "runtime/runtime.h"

#define WF_TRACE_DEFAULT_LIMIT 500000 /* timeline events kept; later ones are counted as dropped */
#define WF_TRACE_PE_TRACKS 256        /* above this many PEs: one track per row */

typedef struct wf_trace wf_trace;

/* limit: timeline events (spans, counter samples, the mesh-wide op spans) the file may hold
 * (<= 0: the default); metadata comes on top. */
wf_trace *wf_trace_new(const wf_sim *s, const wf_plan *p, int64_t limit);
void wf_trace_free(wf_trace *t);
/* A wf_sim_event_fn; user = the wf_trace. */
void wf_trace_on_event(const wf_sim_event *ev, void *user);
/* Writes the trace (after the run; run_rc is wf_sim_run's result: a failed or stopped run is
 * marked incomplete). Returns a WF_EXIT_* code, errors reported. */
int wf_trace_write(wf_trace *t, const char *path, int run_rc);
/* Entries wf_trace_write put in the file's traceEvents (0 before), and events dropped by the
 * limit (for the summary). */
int64_t wf_trace_events(const wf_trace *t);
int64_t wf_trace_dropped(const wf_trace *t);

#endif
