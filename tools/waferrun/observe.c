/* Event fan-out for waferrun (observe.h). Host time is read only to throttle the progress
 * line; it never reaches a cycle count, a report or the trace. */
#include "observe.h"

#include <stdio.h>
#include <time.h>

#include "waferc/diag.h"

static double host_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_event(const wf_sim_event *ev, void *user) {
  wf_run_observer *o = user;
  if (o->trace) wf_trace_on_event(ev, o->trace);
  /* Checking the clock every 64Ki events keeps the progress line nearly free. */
  if ((++o->events & 0xffff) || !wf_progress_enabled()) return;
  double now = host_seconds();
  if (now - o->last_report < 0.5) return;
  o->last_report = now;
  /* The ETA assumes host time per simulated cycle stays what it has been so far. */
  long long c = (long long)ev->cycle, p = (long long)o->predicted;
  double per_cycle = c > 0 ? (now - o->start) / (double)c : 0;
  if (p <= 0) {
    wf_progress("simulating: cycle %lld", c);
  } else if (c < p) {
    long long eta = (long long)(per_cycle * (double)(p - c) + 0.5);
    char t[32];
    if (eta < 120) snprintf(t, sizeof t, "%lld s", eta);
    else if (eta < 7200) snprintf(t, sizeof t, "%lld min %lld s", eta / 60, eta % 60);
    else snprintf(t, sizeof t, "%lld h %lld min", eta / 3600, eta / 60 % 60);
    wf_progress("simulating: cycle %lld of ~%lld predicted (%.0f%%), ETA %s", c, p, 100.0 * (double)c / (double)p, t);
  } else {
    wf_progress("simulating: cycle %lld, past the %lld predicted", c, p);
  }
}

void wf_run_observe(wf_sim *s, wf_run_observer *o) {
  o->events = 0;
  o->last_report = o->start = host_seconds();
  if (o->trace || wf_progress_enabled()) wf_sim_set_event_callback(s, on_event, o);
}
