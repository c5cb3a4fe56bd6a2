/* waferrun on a pipelined plan (waferc --pipeline=N; the manifest's "pipeline", docs/pipeline.md):
 * the stages in order on their bands, each later one after its transfer plan has moved the
 * previous stage's results onto its band over the fabric. Prints the cycles per stage and
 * transfer, the latency of one run through all of them and the period of a pipeline kept full,
 * and writes the last stage's outputs and the --report. */
#ifndef WAFERRUN_PIPELINE_H
#define WAFERRUN_PIPELINE_H

#include "run_io.h"

typedef struct wf_pipe_opts {
  const wf_run_input *in; /* --input bindings: each names an input of some stage */
  int n_in;
  const char *out_dir, *report; /* NULL when not given */
  wf_sim_opts so;
  int no_jit, quiet;
  unsigned load_flags;    /* wf_plan_load_ex's, for the other stages' plans */
  int64_t mem_limit_mb;   /* --memory-limit (0: the machine's memory), checked per plan */
} wf_pipe_opts;

/* Returns a WF_EXIT_* code, every failure reported naming the manifest and the tensor: 1 a
 * stage or transfer plan is missing or does not match the "pipeline" object, 2 unbound or
 * unknown inputs, 5 a run failed, 6 a file cannot be read or written. Everything is checked
 * before the first cycle is simulated. */
int wf_run_pipeline(const wf_plan *p, const wf_pipe_opts *o);

#endif
