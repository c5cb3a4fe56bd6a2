/* waferrun --generate=N: the host loop of a generation plan (docs/running.md, "Generation";
 * the manifest's "generate" object, docs/plan-format.md): the prefill plan once, the switch
 * of the KV cache to the decode layout, then one run of the decode step plan per new token
 * with the step parameters R and C set (wf_sim_set_step). Writes OUT/tokens.npy, prints the
 * tokens and a summary per phase, and the --report sections. */
#ifndef WAFERRUN_GENERATE_H
#define WAFERRUN_GENERATE_H

#include "run_io.h"

typedef struct wf_gen_opts {
  int64_t n;                    /* tokens to generate (>= 1) */
  const wf_run_input *in;       /* --input bindings of the prefill plan */
  int n_in;
  const char *out_dir, *report; /* NULL when not given */
  const char *dump_dir;         /* --dump-caches: the caches after the switch and each step */
  wf_sim_opts so;               /* functional mode */
  int no_jit, quiet;
  const char *heat_dir;         /* --heatmap: DIR/kv_occupancy.png and .csv after the last step */
  unsigned load_flags;          /* wf_plan_load_ex's, for the decode plan (--allow-modified-plan) */
  int64_t mem_limit_mb;         /* --memory-limit (0: the machine's memory), checked on the decode plan too */
} wf_gen_opts;

/* Runs the generation; returns a WF_EXIT_* code (every failure reported, naming the place):
 * 1 the plan has no "generate" object or its two plans do not match, 2 unbound or unknown
 * inputs, 4 N above the plan's max_new_tokens, 5 a run failed, 6 a file cannot be read or
 * written. Output paths are checked before anything is simulated. */
int wf_run_generate(const wf_plan *prefill, const wf_gen_opts *o);

#endif
