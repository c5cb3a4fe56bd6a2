/* Known exporter bugs the importer repairs, each recognised on its exact shape and warned
 * about once, never silently.
 *
 * torch 1.13's repeat_interleave(x, r, dim) over a tensor with a dim of unknown size at
 * export time (any dynamic axis reaching it: LLaMA's GQA KV-head repeat with a dynamic
 * sequence axis) is written slice by slice: each slice of size 1 along dim is unsqueezed at
 * dim+1, expanded to r copies there, and reshaped back with a target shape written for x's
 * rank — 0 ("copy this dim") for every dim torch did not know, -1 at dim (symbolic_opset9 and,
 * for an unknown dim, symbolic_opset13's Loop over SplitToSequence). The reshape's input has
 * one dim more than that target, so every 0 after dim copies the dim left of the one meant,
 * and every ONNX runtime computes garbage or fails on a shape. What torch computes, and
 * the graph means, is the merge of dims dim and dim+1; that is what waferc imports when the
 * chain is exactly Split | SplitToSequence+SequenceAt | Slice -> Unsqueeze -> Expand ->
 * Reshape with those shapes, and the ONNX reading differs from the merge. */
#include <string.h>

#include "frontend/onnx/import_ctx.h"

static int is(const ox_node *nd, const char *op) { return nd && !nd->domain[0] && !strcmp(nd->op_type, op) && nd->n_in >= 1; }

int ox_torch_repeat_reshape(ox_nctx *n, const ox_val *x, int64_t *shape, int ns) {
  ox_ctx *cx = n->cx;
  const ox_node *e = ox_producer(cx, n->node->in[0]);
  const ox_node *u = is(e, "Expand") ? ox_producer(cx, e->in[0]) : NULL;
  const ox_node *s = is(u, "Unsqueeze") ? ox_producer(cx, u->in[0]) : NULL;
  if (!is(s, "Split") && !is(s, "SequenceAt") && !is(s, "Slice")) return 0;
  int rank = x->type.rank, p = -1;
  if (ns != rank - 1 || ns < 1) return 0;
  for (int i = 0; i < ns; i++)
    if (shape[i] == -1) {
      if (p >= 0) return 0;
      p = i;
    }
  if (p < 0) return 0;
  /* the slice has size 1 at p, the unsqueeze added the repeat dim at p+1 */
  const ox_val *uv = ox_lookup(cx, u->out[0]), *sv = ox_lookup(cx, u->in[0]);
  if (!uv || !sv || uv->is_seq || sv->is_seq || uv->type.rank != rank || sv->type.rank != rank - 1 ||
      sv->type.dims[p] != 1 || uv->type.dims[p] != 1 || uv->type.dims[p + 1] != 1)
    return 0;
  int64_t want[WF_MAX_RANK];
  int differs = 0;
  for (int i = 0; i < ns; i++) {
    want[i] = i < p ? x->type.dims[i] : i == p ? x->type.dims[p] * x->type.dims[p + 1] : x->type.dims[i + 1];
    if (i != p && shape[i] != 0 && shape[i] != want[i]) return 0; /* a fixed entry that does not fit */
    differs |= i != p && shape[i] == 0 && x->type.dims[i] != want[i];
  }
  if (!differs) return 0; /* ONNX's reading already is the merge */
  if (!cx->warned_repeat) {
    wf_warning(n->eloc,
               "this Reshape copies dims (0 entries) from an input of rank %d into a shape of rank %d, so they do not "
               "line up: it is torch 1.13's export of repeat_interleave over a dynamic axis; imported as the "
               "repeat_interleave torch computes (dims %d and %d merged; further such reshapes are not reported)",
               rank, ns, p, p + 1);
    cx->warned_repeat = 1;
  }
  memcpy(shape, want, (size_t)ns * sizeof *shape);
  return 1;
}
