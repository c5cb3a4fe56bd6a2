/* waferrun — what happens around a run, before the simulator starts: the plan directory is
 * a plan, every output path can be written, every input is named and bound (from a .npy,
 * or generated for timing studies), and --describe. */
#ifndef WAFERRUN_RUN_IO_H
#define WAFERRUN_RUN_IO_H

#include "runtime/runtime.h"

#define WF_RUN_MAX_INPUTS 64

/* One --input NAME=SPEC: SPEC is FILE.npy, random:SEED or splat:V. */
typedef struct wf_run_input {
  char *name;
  const char *spec;
} wf_run_input;

/* Checks that `dir` is a plan directory before it is loaded: exit 6 when it cannot be read,
 * 1 (with how to make a plan) when it is not a plan; 0 when it looks like one. */
int wf_run_check_plan_dir(const char *dir);

/* Checks, before anything is simulated or written, that every output path given can be
 * written: files (--report, --trace) in an existing writable directory and not directories
 * themselves; directories (--output-dir, --heatmap) existing and writable, or creatable in
 * one. Reports every bad path; WF_EXIT_IO if any, else 0. NULL paths are skipped. */
int wf_run_check_outputs(const char *out_dir, const char *report, const char *trace, const char *heat_dir);

/* The same check for one more output directory, named by its option `opt` in messages. */
int wf_run_check_dir(const char *opt, const char *dir);

/* Names every --input that is not an input of the plan (with the plan's inputs and the
 * nearest name) and every input of the plan left unbound (unless `need_all` is 0), all at
 * once. WF_EXIT_USAGE if any, else 0. */
int wf_run_check_input_names(const wf_plan *p, const wf_run_input *in, int n, int need_all);

/* Refuses (WF_EXIT_RUNTIME, reported under `what`) a functional run whose PEs' memory
 * (wf_plan_sram_host_bytes) is over limit_mb MiB, or, when limit_mb is 0, over the machine's
 * physical memory; 0 otherwise. */
int wf_run_check_memory(const wf_plan *p, int64_t limit_mb, const char *what);

/* Checks an --input SPEC before the run: a generator's syntax, or that the file can be read.
 * 0, or (reported) WF_EXIT_USAGE / WF_EXIT_IO. */
int wf_run_check_input_spec(const wf_plan_tensor *t, const char *spec);

/* The tensor for one --input of plan input `t`: read from the .npy file, or generated
 * (random:SEED, splat:V; docs in waferrun --help). NULL and *rc set (WF_EXIT_IO when the
 * file cannot be read, WF_EXIT_INPUT when it is not a valid .npy, WF_EXIT_USAGE for a bad
 * generator spec). */
wf_tensor *wf_run_make_input(const wf_plan_tensor *t, const char *spec, int *rc);

/* subplan.c, for the host loops that run several plans (generate.c, pipeline.c): the plan's
 * JIT-compiled kernels (NULL with no_jit, or when the JIT is unavailable: warned; a kernel file
 * that is refused sets *rejected, reported), and the wavelet-hops a finished run moved over
 * every link. */
struct wf_jit;
struct wf_jit *wf_run_load_jit(const wf_plan *p, int no_jit, int *rejected);
int64_t wf_run_link_words(const wf_sim *s);

/* --describe: the plan's target, mesh, inputs and outputs (shapes, dtypes, layouts). */
void wf_run_describe(const wf_plan *p, FILE *out);

#endif
