/* waferc runtime — the results of a generation run (waferrun --generate, docs/running.md,
 * "Generation"): its JSON report, one section per phase (docs/report-format.md), and its
 * text summary. Every number comes from simulated cycles and the targets' clocks.
 *
 *   wf_gen_result r = {...};                 // filled by the host loop
 *   wf_gen_print_summary(&r, stdout);
 *   wf_gen_write_report(&r, "report.json");
 */
#ifndef WAFERC_RUNTIME_GEN_REPORT_H
#define WAFERC_RUNTIME_GEN_REPORT_H

#include <stdint.h>
#include <stdio.h>

typedef struct wf_gen_result {
  const char *plan, *decode_plan;  /* the two plan directories */
  const char *target;              /* the prefill plan's target name */
  double prefill_clock_hz, decode_clock_hz;
  int64_t prompt_length;
  int n_tokens;                    /* tokens generated: 1 from the prefill + decode steps */
  const int64_t *tokens;           /* [n_tokens] */
  int64_t prefill_cycles;
  int decode_steps;                /* n_tokens - 1 */
  const int64_t *step_cycles;      /* [decode_steps] */
  const char *kv_cache;            /* "shift" or "concat" */
  int rows, slots_per_row;
  const int *occupancy;            /* [rows]: tokens per row of PEs after the last step */
  const char *switch_plan;         /* NULL: decode on the prefill's region (nothing moves) */
  int64_t switch_cycles, switch_words, switch_predicted; /* its run: cycles, wavelet-hops, the
                                                            cost model's cycles */
  int prefill_w, prefill_h, decode_w, decode_h;          /* the two regions */
  int switch_weights;              /* decode weights the switch built from the prefill's */
  int64_t switch_weight_words;     /* their elements */
} wf_gen_result;

/* 0, or WF_EXIT_IO (reported) when the file cannot be written. */
int wf_gen_write_report(const wf_gen_result *r, const char *path);
void wf_gen_print_summary(const wf_gen_result *r, FILE *out);

#endif
