/* waferrun --describe: what a plan needs and gives, read from its manifest without
 * simulating. */
#include <stdio.h>
#include <string.h>

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
  if (p->n_moves) { /* a switch plan's weight moves (docs/plan-format.md, switch_weights) */
    fprintf(out, "switch weights (%d): prefill weight -> input, output -> decode weight\n", p->n_moves);
    for (int i = 0; i < p->n_moves; i++)
      fprintf(out, "  %s -> %s, %s -> %s%s\n", p->moves[i].prefill, p->inputs[p->moves[i].input].name,
              p->outputs[p->moves[i].output].name, p->moves[i].decode,
              p->inputs[p->moves[i].input].skew_ring ? " (pre-skewed)" : "");
  }
  const wf_plan_generate *g = &p->gen;
  if (!g->present) return;
  fprintf(out, "generate (waferrun --generate=N, N <= %lld): prompt '%s' of %lld tokens, next token '%s'\n",
          (long long)g->max_new_tokens, g->prompt_input, (long long)g->prompt_length, g->prefill_next);
  fprintf(out, "  decode step plan %s/%s: token '%s', position '%s', next token '%s'\n", p->dir, g->decode_plan,
          g->decode_ids, g->decode_position, g->decode_next);
  fprintf(out, "  kv cache: %s, %d rows x %d slots per row, %d tensor%s:", g->kv_cache, g->rows, g->slots_per_row,
          g->n_caches, g->n_caches == 1 ? "" : "s");
  for (int i = 0; i < g->n_caches; i++)
    fprintf(out, " %s%s%s", g->caches[i].prefill, strcmp(g->caches[i].prefill, g->caches[i].decode) ? "->" : "",
            strcmp(g->caches[i].prefill, g->caches[i].decode) ? g->caches[i].decode : "");
  fprintf(out, "\n");
}
