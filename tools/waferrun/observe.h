/* waferrun — what watches a run through the simulator's one event callback: the trace
 * (--trace) and the progress line on a terminal. */
#ifndef WAFERRUN_OBSERVE_H
#define WAFERRUN_OBSERVE_H

#include <stdint.h>

#include "runtime/runtime.h"
#include "runtime/trace.h"

typedef struct wf_run_observer {
  wf_trace *trace;      /* NULL = no trace */
  int64_t events;       /* events seen (progress throttling) */
  double last_report;   /* host seconds of the last progress line (display only) */
  int64_t predicted;    /* the plan's predicted cycles (0 = unknown), for the progress line */
  double start;         /* host seconds when the run began (the ETA; display only) */
} wf_run_observer;

/* Installs the callback on s when there is something to observe (a trace, or progress on a
 * terminal); otherwise leaves the simulator without one, which costs nothing. */
void wf_run_observe(wf_sim *s, wf_run_observer *o);

#endif
