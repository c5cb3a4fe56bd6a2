/* waferc — backend: lowers a partitioned module to a plan directory for waferrun.
 *
 * The plan format is documented in docs/plan-format.md, the PE program text in
 * docs/pe-programs.md.
 *
 *   wf_plan_opts o = WF_PLAN_OPTS_DEFAULT;
 *   o.compiler_flags = "waferc model.wir -o plan/ --target=test4x4";
 *   int rc = wf_backend_emit_plan(m, &target, "plan", &o);   // a WF_EXIT_* code
 */
#ifndef WAFERC_BACKEND_H
#define WAFERC_BACKEND_H

#include "waferc/ir.h"
#include "waferc/target.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_plan_opts {
  const char *func;           /* function to lower; NULL = "main", else the first function */
  const char *compiler_flags; /* recorded in the manifest */
  int quiet;
  /* Collective choices for the whole compile (waferc --reduce-algo, --gemv-allreduce); they
   * override the ops' own attributes. reduce_algo: a wf_coll_algo name or "auto", NULL =
   * each op's own. gemv_allreduce: ktree, pipeline, ring or auto, NULL = each op's own;
   * gemv_k / gemv_groups: -1 = each op's own. */
  const char *reduce_algo;
  const char *gemv_allreduce;
  int gemv_k, gemv_groups;
  /* A JSON object whose members the manifest carries at its top level (waferc --generate
   * writes "generate", docs/generation.md); NULL = none. */
  const char *manifest_extra;
} wf_plan_opts;
#define WF_PLAN_OPTS_DEFAULT ((wf_plan_opts){NULL, NULL, 0, NULL, NULL, -1, -1, NULL})

/* Writes plan/ (manifest.json, programs/, weights.bin). The directory is created; on error
 * nothing is left that looks like a valid plan (the manifest is written last, atomically).
 * Returns a WF_EXIT_* code and reports errors itself. */
int wf_backend_emit_plan(wf_module *m, const wf_target *t, const char *plan_dir,
                         const wf_plan_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
