/* waferrun --describe: what a plan needs and gives, read from its manifest without
 * simulating. */
#include <stdio.h>

#include "run_io.h"

static void tensor_line(const wf_plan_tensor *t, FILE *out) {
  char shape[256];
  int n = snprintf(shape, sizeof shape, "%s[", wf_dtype_name(t->dtype));
  for (int d = 0; d < t->rank && n < (int)sizeof shape; d++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
  if (n < (int)sizeof shape) snprintf(shape + n, sizeof shape - (size_t)n, "]");
  fprintf(out, "  %-24s %-20s %s", t->name, shape, t->layout[0] ? t->layout : "(replicated)");
  if (t->index_bound > 0) fprintf(out, "  ids in [0, %lld)", (long long)t->index_bound); /* a gather's */
  fprintf(out, "\n");
}

void wf_run_describe(const wf_plan *p, FILE *out) {
  fprintf(out, "plan %s: target %s, mesh %dx%d, %d op%s, %lld predicted cycles\n", p->dir, p->target.name,
          p->mesh_w, p->mesh_h, p->n_ops, p->n_ops == 1 ? "" : "s", (long long)p->predicted_total);
  fprintf(out, "inputs (%d):\n", p->n_inputs);
  for (int i = 0; i < p->n_inputs; i++) tensor_line(&p->inputs[i], out);
  fprintf(out, "outputs (%d):\n", p->n_outputs);
  for (int i = 0; i < p->n_outputs; i++) tensor_line(&p->outputs[i], out);
}
