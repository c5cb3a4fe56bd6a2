/* Writing a plan without ever leaving a half-overwritten one (docs/plan-format.md): waferc
 * compiles into a stage directory beside the plan directory (same parent, so renames stay on
 * one file system), and only when the whole plan is written moves it into place. A failed
 * compile leaves an older plan in the directory as it was. */
#ifndef WAFERC_TOOLS_WAFERC_PLAN_STAGE_H
#define WAFERC_TOOLS_WAFERC_PLAN_STAGE_H

/* Creates the stage directory for plan directory `out` (creating out's parent if needed):
 * `<parent>/.<name>.waferc-XXXXXX`, malloc'd. NULL after reporting (exit code WF_EXIT_IO). */
char *wf_plan_stage_begin(const char *out);
/* Moves the staged plan into `out`: the old plan's manifest goes first, then its programs,
 * kernels, weights, decode, switch and pipeline plans are replaced by the stage's, the files of the stage's ir/
 * are moved into out/ir/ (dumps other files there, such as --dump-dir's, stay), and the new
 * manifest comes last. Removes the stage. 0, or WF_EXIT_IO after reporting. */
int wf_plan_stage_commit(char *stage, const char *out);
/* Removes the stage and everything in it; frees it. */
void wf_plan_stage_abort(char *stage);

#endif
