/* wafer-bench — generate, compile and simulate one operation; print one JSON object.
 * Subcommands live in their own files: collective.c, gemm.c. Each returns a WF_EXIT_* code. */
#ifndef WAFER_BENCH_H
#define WAFER_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "waferc/ir.h"
#include "waferc/target.h"

int wf_bench_collective(int argc, char **argv);
int wf_bench_gemm(int argc, char **argv);

/* Shared by the subcommands (common.c). */
/* "--name=value" -> value if argv[i] starts with "--name=", else NULL. */
const char *wf_bench_opt(const char *arg, const char *name);
/* Parses a positive integer option value or reports and returns -1. */
int64_t wf_bench_int(const char *name, const char *v);
/* Compiles `ir_text` for target `t` into a fresh plan directory (kept at keep_dir when not
 * NULL), simulates it with `input` bound to its first input (NULL: timing mode), and fills
 * cycles and, if out != NULL, the first output (caller frees). plan_dir receives the path
 * (caller-provided buffer of 4096). Returns a WF_EXIT_* code. */
struct wf_tensor;
int wf_bench_run(const char *ir_text, const wf_target *t, const char *keep_dir,
                 const struct wf_tensor *input, int64_t *cycles, struct wf_tensor **out,
                 char *plan_dir);
/* Only the compile of wf_bench_run: the plan (and its manifest's predictions) in plan_dir. */
int wf_bench_compile(const char *ir_text, const wf_target *t, const char *keep_dir, char *plan_dir);
/* The same, and op 0's phases (wf_sim_op_phases): simulated alignment, loop, drain into
 * phases[0..2], predicted into phases[3..5]; phases[0] = -1 when it has none. */
int wf_bench_run_phases(const char *ir_text, const wf_target *t, const char *keep_dir,
                        const struct wf_tensor *input, int64_t *cycles, struct wf_tensor **out,
                        char *plan_dir, int64_t phases[6]);
/* Reads op 0's string field `key` ("lowering", "explain") or number field from the plan's
 * manifest.json into buf; returns 0 or -1. */
int wf_bench_manifest_field(const char *plan_dir, const char *key, char *buf, size_t cap);
/* Writes s as a JSON string literal. */
void wf_bench_json_str(FILE *out, const char *s);
/* Makes a fresh temporary directory $TMPDIR/STEM.XXXXXX (/tmp without TMPDIR) into dir (a
 * buffer of 4096), removed at exit unless wf_bench_rmplan removed it first; WF_EXIT_IO (said)
 * when it cannot. */
int wf_bench_tmpdir(char *dir, const char *stem);
/* Removes a plan directory written by wf_bench_run. */
void wf_bench_rmplan(const char *dir);

#endif
