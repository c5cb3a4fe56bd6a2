/* waferrun — runs a waferc plan on the cycle-level fabric simulator. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/heatmap.h"
#include "runtime/jit.h"
#include "runtime/runtime.h"
#include "runtime/summary.h"
#include "runtime/trace.h"
#include "generate.h"
#include "observe.h"
#include "pipeline.h"
#include "run_io.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"
#include "waferc/version.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: waferrun PLAN_DIR [options]\n"
          "\n"
          "Simulates a plan written by waferc, wavelet by wavelet (docs/cycle-model.md).\n"
          "\n"
          "options:\n"
          "  --input NAME=FILE.npy   bind an input of the plan (repeat for each input); for\n"
          "                          timing studies NAME=random:SEED (uniform in [-1, 1),\n"
          "                          the same for a given SEED on every host) or NAME=splat:V\n"
          "                          (every element V)\n"
          "  --describe              print the plan's target, mesh, inputs and outputs (shapes,\n"
          "                          dtypes, layouts) and exit without simulating\n"
          "  --output-dir DIR        write each output as DIR/<name>.npy\n"
          "  --generate=N            generate N tokens with a plan compiled by `waferc\n"
          "                          --generate` (greedy): the prefill with the prompt\n"
          "                          (--input input_ids=prompt.npy), then one decode step per\n"
          "                          token; prints the tokens, prefill cycles, time to first\n"
          "                          token and decode tokens/s, writes tokens.npy (int64\n"
          "                          [1, N]) and the final KV caches in --output-dir and a\n"
          "                          report per phase with --report (docs/running.md,\n"
          "                          \"Generation\")\n"
          "  --dump-caches DIR       with --generate: write the KV caches after the switch and\n"
          "                          after each decode step (DIR/switch/, DIR/step_<s>/)\n"
          "  --report FILE           write cycles, per-op split, utilization, links (JSON)\n"
          "  --trace FILE            write a Chrome Trace Event file (open it in Perfetto)\n"
          "  --trace-limit N         keep at most N trace events (default 500000)\n"
          "  --heatmap DIR           write PNG heatmaps (PE busy %%, link use N/E/S/W) + CSVs\n"
          "  --heatmap-scale=LO:HI   the heatmaps' colour scale in %% (default 0:100; links: %% of\n"
          "                          one wavelet per cycle), or auto (each map's own range)\n"
          "  --allow-modified-plan   run a plan whose files differ from the digests waferc\n"
          "                          recorded, or that has none (edited or written by hand),\n"
          "                          with a warning per file; every other check still applies\n"
          "  --no-jit                interpret compute instructions instead of JIT-compiling\n"
          "                          the plan's kernels (same outputs and cycles)\n"
          "  --mode=functional|timing  data and cycles (default), or cycles only: no PE memory,\n"
          "                          same cycles, inputs optional (for meshes whose data would\n"
          "                          not fit in host memory)\n"
          "  --max-cycles N          stop with an error after N cycles\n"
          "  --time-limit SECONDS    stop with an error (exit 5) after SECONDS of host time in\n"
          "                          one simulation (cycles are never affected)\n"
          "  --memory-limit MB       refuse (exit 5) before simulating when the PEs' memory the\n"
          "                          simulator would allocate exceeds MB MiB of host memory\n"
          "                          (default: the machine's physical memory)\n"
          "  --deadlock-cycles N     cycles without progress that count as deadlock (10000)\n"
          "  --threads=N             step the mesh as N bands of rows on N threads (default:\n"
          "                          the idle cores, the %d online less the load average; one\n"
          "                          thread for meshes under %d PEs); cycles, reports, traces\n"
          "                          and outputs are the same for every N (docs/cycle-model.md,\n"
          "                          \"Threads\"). Under mpirun -np R: one band per rank, one\n"
          "                          thread each, the same results, said and written by rank 0\n"
          "                          (\"Ranks\")\n"
          "  --disasm                print the plan's PE programs with instruction synopses\n"
          "  --print-outputs         print the values of each output (first 8x8 of each matrix)\n"
          "  -q, --quiet             no summary on stdout\n"
          "  --help, --version\n"
          "\n"
          "Every output path is checked before the run starts. On a terminal a progress line\n"
          "shows the cycle, the plan's predicted total and an estimate of the time left.\n"
          "\n"
          "exit codes: 0 ok, 1 bad plan or input, 2 usage, 4 --generate=N above the plan's\n"
          "maximum, 5 simulation failed (deadlock, max cycles), 6 a file or directory cannot\n"
          "be read or written\n", wf_sim_cores(), WF_SIM_THREADS_MIN_PES);
}

static int parse_count(const char *opt, const char *v, int64_t *out) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end || errno || n < 0) {
    wf_error_at("waferrun", "%s expects a non-negative integer, got '%s'", opt, v);
    return -1;
  }
  *out = n;
  return 0;
}

static void disasm(const wf_plan *p) {
  for (int k = 0; k < p->n_classes; k++) {
    const wf_pe_class *c = p->classes[k];
    printf("class %s (%lld bytes)\n", c->name, (long long)c->mem_bytes);
    for (int i = 0; i < c->n_code; i++) {
      char syn[256];
      wf_pe_instr_synopsis(c, &c->code[i], syn, sizeof syn);
      printf("  %4d  %-10s %s\n", i, wf_peops[c->code[i].op].name, syn);
    }
  }
}

/* The leading 8x8 corner of a tensor viewed as [rows, last dim], numpy-style. */
static void print_values(const wf_tensor *t) {
  int64_t cols = t->rank ? t->dims[t->rank - 1] : 1;
  int64_t rows = cols ? wf_tensor_numel(t) / cols : 0;
  for (int64_t r = 0; r < rows && r < 8; r++) {
    printf("  [");
    for (int64_t c = 0; c < cols && c < 8; c++)
      printf("%s%10.6g", c ? " " : "", wf_tensor_get(t, r * cols + c));
    printf("%s]\n", cols > 8 ? " ..." : "");
  }
  if (rows > 8) printf("  ... (%lld rows)\n", (long long)rows);
}

/* Frees the --input names (every exit path, so LeakSanitizer sees none) and returns rc. */
static int finish(wf_run_input *in, int n_in, int rc) {
  for (int i = 0; i < n_in; i++) free(in[i].name);
  return rc;
}

/* The MPI rank of this process (runtime.h, wf_sim_mpi_init): 0 outside mpirun. Only rank 0
 * prints and writes; the others step their bands and hand their state to it. */
static int g_rank;

static int run(int argc, char **argv) {
  wf_diag_set_program("waferrun");
  const char *plan_dir = NULL, *out_dir = NULL, *report = NULL, *trace_path = NULL, *heat_dir = NULL;
  int64_t trace_limit = WF_TRACE_DEFAULT_LIMIT;
  wf_heatmap_opts heat_opts = WF_HEATMAP_OPTS_DEFAULT;
  int no_jit = 0;
  unsigned load_flags = 0; /* --allow-modified-plan */
  int64_t mem_limit_mb = 0; /* --memory-limit, 0 = none */
  int64_t gen_n = 0; /* --generate=N */
  const char *dump_dir = NULL; /* --dump-caches DIR (with --generate) */
  wf_run_input in[WF_RUN_MAX_INPUTS];
  int n_in = 0, quiet = 0, want_disasm = 0, print_outputs = 0, describe = 0;
  wf_sim_opts so = WF_SIM_OPTS_DEFAULT;
  so.threads = WF_SIM_THREADS_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
#define OPTVAL(name)                                                              \
  (!strcmp(a, name) ? (i + 1 < argc ? (val = argv[++i]) : NULL)                   \
                    : (!strncmp(a, name "=", strlen(name) + 1) ? (val = a + strlen(name) + 1) : NULL))
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return finish(in, n_in, WF_EXIT_OK);
    } else if (!strcmp(a, "--version")) {
      printf("waferrun %s\n", WF_VERSION_STRING);
      return finish(in, n_in, WF_EXIT_OK);
    } else if (!strcmp(a, "--print-outputs")) {
      print_outputs = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      quiet = 1;
    } else if (!strcmp(a, "--no-jit")) {
      no_jit = 1;
    } else if (!strcmp(a, "--allow-modified-plan")) {
      load_flags |= WF_PLAN_ALLOW_MODIFIED;
    } else if (!strcmp(a, "--disasm")) {
      want_disasm = 1;
    } else if (!strcmp(a, "--describe")) {
      describe = 1;
    } else if (OPTVAL("--input")) {
      const char *eq = strchr(val, '=');
      if (!eq || eq == val || !eq[1]) {
        wf_error_at("waferrun", "--input expects NAME=FILE.npy, NAME=random:SEED or NAME=splat:V, got '%s'", val);
        return finish(in, n_in, WF_EXIT_USAGE);
      }
      if (n_in == WF_RUN_MAX_INPUTS) {
        wf_error_at("waferrun", "too many --input options (at most %d)", WF_RUN_MAX_INPUTS);
        return finish(in, n_in, WF_EXIT_USAGE);
      }
      in[n_in].name = strndup(val, (size_t)(eq - val));
      in[n_in++].spec = eq + 1;
    } else if (OPTVAL("--generate")) {
      if (parse_count("--generate", val, &gen_n)) return finish(in, n_in, WF_EXIT_USAGE);
      if (gen_n < 1) {
        wf_error_at("waferrun", "--generate expects the number of tokens to generate (at least 1)");
        return finish(in, n_in, WF_EXIT_USAGE);
      }
    } else if (OPTVAL("--dump-caches")) {
      dump_dir = val;
    } else if (OPTVAL("--output-dir")) {
      out_dir = val;
    } else if (OPTVAL("--report")) {
      report = val;
    } else if (OPTVAL("--trace")) {
      trace_path = val;
    } else if (OPTVAL("--trace-limit")) {
      if (parse_count("--trace-limit", val, &trace_limit)) return finish(in, n_in, WF_EXIT_USAGE);
      if (trace_limit == 0) {
        wf_error_at("waferrun", "--trace-limit must be at least 1");
        return finish(in, n_in, WF_EXIT_USAGE);
      }
    } else if (OPTVAL("--heatmap-scale")) {
      if (wf_heatmap_parse_scale(val, &heat_opts)) {
        wf_error_at("waferrun", "--heatmap-scale expects LO:HI with 0 <= LO < HI <= 100 (percent), or auto; got '%s'", val);
        return finish(in, n_in, WF_EXIT_USAGE);
      }
    } else if (OPTVAL("--heatmap")) {
      heat_dir = val;
    } else if (OPTVAL("--mode")) {
      if (!strcmp(val, "functional")) so.mode = WF_SIM_FUNCTIONAL;
      else if (!strcmp(val, "timing")) so.mode = WF_SIM_TIMING;
      else {
        wf_error_at("waferrun", "--mode expects functional or timing, got '%s'", val);
        return finish(in, n_in, WF_EXIT_USAGE);
      }
    } else if (OPTVAL("--time-limit")) {
      if (parse_count("--time-limit", val, &so.max_seconds)) return finish(in, n_in, WF_EXIT_USAGE);
    } else if (OPTVAL("--memory-limit")) {
      if (parse_count("--memory-limit", val, &mem_limit_mb)) return finish(in, n_in, WF_EXIT_USAGE);
    } else if (OPTVAL("--max-cycles")) {
      if (parse_count("--max-cycles", val, &so.max_cycles)) return finish(in, n_in, WF_EXIT_USAGE);
    } else if (OPTVAL("--threads")) {
      int64_t n = 0;
      if (parse_count("--threads", val, &n)) return finish(in, n_in, WF_EXIT_USAGE);
      if (n < 1 || n > WF_SIM_THREADS_MAX) {
        wf_error_at("waferrun", "--threads expects 1 to %d threads, got '%s'", WF_SIM_THREADS_MAX, val);
        return finish(in, n_in, WF_EXIT_USAGE);
      }
      so.threads = (int)n;
    } else if (OPTVAL("--deadlock-cycles")) {
      if (parse_count("--deadlock-cycles", val, &so.deadlock_cycles)) return finish(in, n_in, WF_EXIT_USAGE);
    } else if (a[0] == '-') {
      static const char *const own[] = {
          "--help", "--version", "--print-outputs", "--quiet", "--no-jit", "--allow-modified-plan", "--disasm", "--describe",
          "--input", "--output-dir", "--report", "--trace", "--trace-limit", "--heatmap",
          "--heatmap-scale", "--mode", "--max-cycles", "--time-limit", "--memory-limit", "--deadlock-cycles", "--generate", "--dump-caches",
          "--threads"};
      wf_error_unknown_option("waferrun", a, own, (int)(sizeof own / sizeof own[0]));
      return finish(in, n_in, WF_EXIT_USAGE);
    } else if (!plan_dir) {
      plan_dir = a;
    } else {
      wf_error_at("waferrun", "more than one plan directory ('%s' and '%s')", plan_dir, a);
      return finish(in, n_in, WF_EXIT_USAGE);
    }
#undef OPTVAL
  }
  if (!plan_dir) {
    usage(stderr);
    return finish(in, n_in, WF_EXIT_USAGE);
  }
  if (dump_dir && !gen_n) {
    wf_error_at("waferrun", "--dump-caches writes a generation's KV caches: it needs --generate=N");
    return finish(in, n_in, WF_EXIT_USAGE);
  }
  if (gen_n && (trace_path || so.mode == WF_SIM_TIMING || print_outputs)) {
    wf_error_at("waferrun", "--generate runs many simulations and needs their data: it does not take %s",
                trace_path ? "--trace" : print_outputs ? "--print-outputs" : "--mode=timing");
    return finish(in, n_in, WF_EXIT_USAGE);
  }
  int rc = wf_run_check_plan_dir(plan_dir);
  if (rc) return finish(in, n_in, rc);
  wf_plan *p = wf_plan_load_ex(plan_dir, load_flags);
  if (!p) return finish(in, n_in, WF_EXIT_INPUT);
  if (so.mode != WF_SIM_TIMING && !want_disasm && !describe && (rc = wf_run_check_memory(p, mem_limit_mb, plan_dir))) {
    wf_plan_free(p);
    return finish(in, n_in, rc);
  }
  if (want_disasm || describe) {
    if (describe) wf_run_describe(p, stdout);
    else disasm(p);
    wf_plan_free(p);
    return finish(in, n_in, WF_EXIT_OK);
  }
  if (p->pipe.present) { /* the stages in order: pipeline.c */
    if (gen_n || trace_path || heat_dir || print_outputs) {
      wf_error_at("waferrun", "%s: a pipelined plan (waferc --pipeline) runs its stages one after another; it does "
                              "not take %s (run one stage's plan, %s/pipeline/stage<k>, for that)",
                  plan_dir, gen_n ? "--generate" : trace_path ? "--trace" : heat_dir ? "--heatmap" : "--print-outputs",
                  plan_dir);
      rc = WF_EXIT_USAGE;
    } else {
      wf_progress_set_quiet(quiet);
      wf_pipe_opts po = {in, n_in, out_dir, report, so, no_jit, quiet, load_flags, mem_limit_mb};
      rc = wf_run_pipeline(p, &po);
    }
    for (int i = 0; i < n_in; i++) free(in[i].name);
    wf_plan_free(p);
    return rc;
  }
  if (gen_n) { /* the generation loop: generate.c */
    wf_progress_set_quiet(quiet);
    wf_gen_opts go = {gen_n, in, n_in, out_dir, report, dump_dir, so, no_jit, quiet, heat_dir, load_flags, mem_limit_mb};
    rc = wf_run_generate(p, &go);
    for (int i = 0; i < n_in; i++) free(in[i].name);
    wf_plan_free(p);
    return rc;
  }
  /* Usage and paths first: a run must not simulate for minutes and then fail to write. */
  rc = wf_run_check_input_names(p, in, n_in, so.mode != WF_SIM_TIMING); /* timing mode needs no data */
  if (!rc) rc = wf_run_check_outputs(out_dir, report, trace_path, heat_dir);
  int in_index[WF_RUN_MAX_INPUTS];
  for (int i = 0; i < n_in && !rc; i++) {
    in_index[i] = 0;
    while (strcmp(p->inputs[in_index[i]].name, in[i].name)) in_index[i]++; /* checked above */
    rc = wf_run_check_input_spec(&p->inputs[in_index[i]], in[i].spec);
  }
  if (rc) {
    for (int i = 0; i < n_in; i++) free(in[i].name);
    wf_plan_free(p);
    return rc;
  }
  wf_sim *s = wf_sim_new(p, &so);
  wf_progress_set_quiet(quiet);
  /* Compute kernels: JIT-compiled unless --no-jit; a failure is said, never silent. Timing
   * mode computes nothing, so it compiles nothing (and never loads LLVM). */
  wf_jit *jit = NULL;
  if (!no_jit && so.mode != WF_SIM_TIMING) {
    char why[512];
    int rejected = 0;
    jit = wf_jit_load_ex(p, why, sizeof why, &rejected);
    if (jit) wf_sim_set_compute_hook(s, wf_jit_compute, jit);
    else if (rejected) {
      wf_error(WF_LOC_NONE, "refusing the plan's kernels: %s", why);
      rc = WF_EXIT_INPUT;
    } else if (why[0])
      wf_warning(WF_LOC_NONE, "JIT unavailable (%s); interpreting compute instructions", why);
  }
  wf_run_observer obs = {.trace = NULL, .predicted = p->predicted_total};
  if (trace_path) obs.trace = wf_trace_new(s, p, trace_limit);
  wf_run_observe(s, &obs);
  for (int i = 0; i < n_in && !rc; i++) { /* one at a time: inputs can be large */
    wf_tensor *t = wf_run_make_input(&p->inputs[in_index[i]], in[i].spec, &rc);
    if (t && wf_sim_set_input(s, in[i].name, t)) rc = WF_EXIT_INPUT;
    wf_tensor_free(t);
  }
  if (!rc) {
    rc = wf_sim_run(s);
    wf_progress_done();
    if (g_rank > 0) { /* rank 0 holds every band's results and writes them */
      wf_trace_free(obs.trace);
      obs.trace = NULL;
      out_dir = report = heat_dir = NULL;
      quiet = 1;
    }
    /* A failed run's trace is still written: it shows where the PEs stalled. */
    if (obs.trace) {
      int trc = wf_trace_write(obs.trace, trace_path, rc);
      if (!rc) rc = trc;
    }
  }
  if (!rc && heat_dir) rc = wf_heatmap_write(s, p, heat_dir, &heat_opts);
  if (!rc && out_dir && so.mode == WF_SIM_TIMING) {
    wf_warning(WF_LOC_NONE, "--mode=timing computes no data: --output-dir %s is not written", out_dir);
    out_dir = NULL;
  }
  if (!rc && out_dir) {
    if (mkdir(out_dir, 0777) && errno != EEXIST) {
      wf_error_at(out_dir, "cannot create the output directory: %s", strerror(errno));
      rc = WF_EXIT_IO;
    }
    for (int i = 0; i < p->n_outputs && !rc; i++) {
      wf_tensor *t = wf_sim_output(s, i);
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.npy", out_dir, p->outputs[i].name);
      if (!t || wf_npy_write(path, t)) rc = WF_EXIT_IO;
      wf_tensor_free(t);
    }
  }
  if (!rc && report) rc = wf_sim_write_report(s, report);
  if (!rc && !quiet) {
    wf_sim_print_summary(s, stdout);
    wf_summary_print_usage(s, stdout);
    if (jit) printf("compute: %d kernels JIT-compiled (--no-jit interprets)\n", wf_jit_kernel_count(jit));
    else printf("compute: %s\n", so.mode == WF_SIM_TIMING ? "none (timing mode)" : "interpreted");
    if (obs.trace)
      printf("trace:  %s, %lld events%s\n", trace_path, (long long)wf_trace_events(obs.trace),
             wf_trace_dropped(obs.trace) ? " (capped: raise --trace-limit)" : "");
    if (heat_dir) printf("heatmaps: %s/{pe_busy,link_n,link_e,link_s,link_w}.png\n", heat_dir);
    for (int i = 0; i < p->n_outputs; i++) {
      const wf_plan_tensor *t = &p->outputs[i];
      printf("output %s: %s[", t->name, wf_dtype_name(t->dtype));
      for (int d = 0; d < t->rank; d++) printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
      printf("]%s%s", t->layout[0] ? " " : "", t->layout);
      if (out_dir) printf(" -> %s/%s.npy", out_dir, t->name);
      printf("\n");
      if (print_outputs) {
        wf_tensor *v = wf_sim_output(s, i);
        if (v) print_values(v);
        wf_tensor_free(v);
      }
    }
  }
  wf_sim_free(s);
  wf_trace_free(obs.trace);
  wf_jit_free(jit);
  wf_plan_free(p);
  for (int i = 0; i < n_in; i++) free(in[i].name);
  return rc;
}

int main(int argc, char **argv) {
  g_rank = wf_sim_mpi_init(&argc, &argv);
  if (g_rank > 0) { /* one voice: the other ranks' messages are rank 0's too */
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) return WF_EXIT_IO;
  }
  int rc = run(argc, argv);
  wf_sim_mpi_finalize();
  return g_rank > 0 ? WF_EXIT_OK : rc; /* the job's exit code is rank 0's */
}
