/* waferc --pipeline=N: a model's layers over N bands of the mesh's rows, the activations
 * passed from band to band over the fabric (docs/pipeline.md). */
#ifndef WAFERC_TOOLS_PIPELINE_H
#define WAFERC_TOOLS_PIPELINE_H

#include "passes/cli.h"
#include "waferc/backend.h"

typedef struct wf_pipe_compile {
  int stages;                    /* N >= 2; the mesh's rows a multiple of N */
  const char *out_dir;
  const char *post;              /* the pipeline from partition on, run per stage */
  wf_plan_opts po;               /* flags, collectives, quiet */
  /* Imports the model and runs the passes before partition on it, for the target's current
   * mesh (the band's): NULL with *rc set on failure. Called once per stage, so every stage
   * sees the same graph. */
  wf_module *(*load)(void *user, int *rc);
  void *user;
} wf_pipe_compile;

/* Writes out_dir/ (stage 0, whose manifest carries "pipeline"), out_dir/pipeline/stage<k>/
 * and out_dir/pipeline/transfer<k>/ (the shift of stage k-1's results onto band k), all or
 * nothing. Returns a WF_EXIT_* code after reporting: 3 when the graph has too few places to
 * cut or a carried value is not split over the rows, 4 when a stage does not fit its band. */
int wf_waferc_compile_pipeline(wf_cli *c, const wf_pipe_compile *pc);

#endif
