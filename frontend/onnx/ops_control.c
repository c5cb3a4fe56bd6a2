/* Importers of the control-flow ops, resolved at import time: Loop is unrolled when its trip
 * count and condition are constants once shapes are known (torch 1.13 exports
 * repeat_interleave over a dynamic axis as a Loop over sequences), If takes the branch its
 * constant condition picks. Each use of a body flattens it again in a fresh naming scope
 * (function.c), binds the body's inputs to this iteration's values and imports its nodes. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"

/* More iterations than this is not a model to unroll into a static graph. */
#define OX_MAX_UNROLL 4096
/* Nor more body nodes over the import, nested loops multiplied out (4096 iterations of a body
 * of 16 nodes): each costs about 2 KB of host memory (its values, names, scope and slots; 8 KB
 * before a body's node list was sized to the body), and
 * a loop of up to 4096 iterations inside another would otherwise import millions of nodes
 * (a fuzz finding took 14 GB and 52 s before it failed). */
#define OX_MAX_UNROLLED_NODES (1 << 16)

static const Onnx__GraphProto *graph_attr(ox_nctx *n, const char *name) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a || !a->g) {
    ox_err(n, "attribute '%s' (a graph) is required", name);
    return NULL;
  }
  return a->g;
}

/* A constant with one element read as an integer; returns nonzero (reported) otherwise. */
static int const_scalar(ox_nctx *n, int i, const char *what, int64_t *out) {
  ox_val *v = n->in[i];
  if (v->is_seq) {
    ox_err(n, "input %d (%s) must be a tensor, got a sequence", i, what);
    return WF_EXIT_INPUT;
  }
  if (!v->k)
    return ox_unsupported(n, "input %d (%s) depends on runtime values: waferc resolves control flow at import time", i,
                          what);
  if (wf_tensor_numel(v->k) != 1) {
    ox_err(n, "input %d (%s) must hold one element, got %s", i, what, ox_shape_str(&v->type));
    return WF_EXIT_INPUT;
  }
  *out = ox_int_at(v->k, 0);
  return WF_EXIT_OK;
}

/* A constant for body input i of g: `value` with the input's declared shape when that shape
 * is static with one element (torch declares the iteration number as [1]), else a scalar. */
static ox_val *body_scalar(ox_nctx *n, const Onnx__GraphProto *g, int i, wf_dtype dt, double value) {
  int rank = 0;
  int64_t dims[WF_MAX_RANK];
  const Onnx__ValueInfoProto *vi = g->input[i];
  const Onnx__TypeProto__Tensor *tt = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
                                          ? vi->type->tensor_type
                                          : NULL;
  if (tt && tt->shape && tt->shape->n_dim <= WF_MAX_RANK) {
    int one = 1;
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
      const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
      one &= dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value == 1;
      dims[d] = 1;
    }
    if (one) rank = (int)tt->shape->n_dim;
  }
  wf_tensor *k = wf_tensor_new(dt, rank, dims);
  wf_tensor_set(k, 0, value);
  return ox_const_new(n->cx, k);
}

/* Flattens g in scope s and imports its nodes; then looks up its outputs into outs. */
static int run_body(ox_nctx *n, const Onnx__GraphProto *g, const ox_scope *s, ox_val **outs) {
  ox_ctx *cx = n->cx;
  ox_nodelist l = {NULL, 0, 0};
  int rc = ox_flatten_subgraph(cx, g, s, n->node->index, &l);
  if (rc == 0 && (cx->unrolled += l.n) > OX_MAX_UNROLLED_NODES)
    return ox_unsupported(n, "%s: unrolling would import more than %d nodes from loop and branch bodies (loops "
                             "nested or too long for a static graph)", s->what, OX_MAX_UNROLLED_NODES);
  for (int i = 0; rc == 0 && i < l.n; i++) rc = ox_import_node(cx, &l.v[i]);
  if (rc) return rc;
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    outs[i] = name[0] ? ox_lookup(cx, ox_scope_name(cx, s, name)) : NULL;
    if (!outs[i]) {
      ox_err(n, "%s: output %zu '%s' is not produced by the body, its inputs or an outer value", s->what, i, name);
      return WF_EXIT_INPUT;
    }
  }
  return WF_EXIT_OK;
}

/* Stacks the per-iteration values of a scan output along a new axis 0. */
static ox_val *stack(ox_nctx *n, int cnt, ox_val **items) {
  ox_val **parts = malloc((size_t)cnt * sizeof *parts);
  WF_ASSERT(parts);
  ox_val *r = NULL;
  int ok = 1;
  for (int i = 0; ok && i < cnt; i++) {
    const wf_type *t = &items[i]->type;
    if (items[i]->is_seq || t->rank >= WF_MAX_RANK) {
      ox_err(n, "scan output of iteration %d is %s: waferc stacks tensors of rank < %d", i,
             items[i]->is_seq ? "a sequence" : ox_shape_str(t), WF_MAX_RANK);
      ok = 0;
      break;
    }
    int64_t dims[WF_MAX_RANK];
    dims[0] = 1;
    for (int d = 0; d < t->rank; d++) dims[d + 1] = t->dims[d];
    ok = (parts[i] = ox_reshape(n, items[i], t->rank + 1, dims)) != NULL;
  }
  if (ok) {
    ox_attrv at = OX_A_INT("axis", 0);
    r = cnt == 1 ? parts[0] : ox_emit1(n, WF_OP_CONCAT, cnt, parts, 1, &at, NULL);
  }
  free(parts);
  return r;
}

int ox_imp_loop(ox_nctx *n) {
  ox_ctx *cx = n->cx;
  const Onnx__GraphProto *body = graph_attr(n, "body");
  if (!body) return WF_EXIT_INPUT;
  int n_carried = n->n_in - 2;
  if (n_carried < 0) {
    ox_err(n, "Loop takes the trip count and the condition (either may be \"\") before its loop-carried values");
    return WF_EXIT_INPUT;
  }
  if ((int)body->n_input != n_carried + 2 || (int)body->n_output < n_carried + 1) {
    ox_err(n, "the body has %zu inputs and %zu outputs; with %d loop-carried values it needs %d inputs and at least %d outputs",
           body->n_input, body->n_output, n_carried, n_carried + 2, n_carried + 1);
    return WF_EXIT_INPUT;
  }
  int n_scan = (int)body->n_output - 1 - n_carried;
  if (ox_n_out(n) > n_carried + n_scan) {
    ox_err(n, "the node has %d outputs but the body gives %d loop-carried and %d scan outputs", ox_n_out(n), n_carried,
           n_scan);
    return WF_EXIT_INPUT;
  }
  for (int j = 0; j < n_carried; j++)
    if (!ox_in(n, 2 + j)) return WF_EXIT_INPUT;
  int64_t trips = -1, keep = 1;
  int rc;
  if (n->in[0] && (rc = const_scalar(n, 0, "trip count", &trips)) != 0) return rc;
  if (n->in[1] && (rc = const_scalar(n, 1, "condition", &keep)) != 0) return rc;
  if (trips < 0 && !n->in[0] && !n->in[1])
    return ox_unsupported(n, "a Loop with neither a trip count nor a condition never ends");
  if (trips > OX_MAX_UNROLL)
    return ox_unsupported(n, "trip count %lld: waferc unrolls loops of at most %d iterations", (long long)trips,
                          OX_MAX_UNROLL);

  ox_val **carried = malloc(((size_t)n_carried + 1) * sizeof *carried);
  ox_val **outs = malloc((body->n_output + 1) * sizeof *outs);
  ox_val **scans = malloc(((size_t)n_scan * OX_MAX_UNROLL + 1) * sizeof *scans);
  WF_ASSERT(carried && outs && scans);
  for (int j = 0; j < n_carried; j++) carried[j] = n->in[2 + j];
  int64_t it = 0;
  rc = WF_EXIT_OK;
  for (; rc == 0 && keep && (trips < 0 || it < trips); it++) {
    if (it >= OX_MAX_UNROLL) {
      rc = ox_unsupported(n, "the loop runs more than %d iterations: waferc unrolls loops whose condition turns false sooner",
                          OX_MAX_UNROLL);
      break;
    }
    char what[512];
    snprintf(what, sizeof what, "loop '%s' iteration %lld", n->node->name && *n->node->name ? n->node->name : "Loop",
             (long long)it);
    ox_scope *s = ox_subgraph_scope(cx, n->node, body, what);
    ox_val *in_vals[2] = {body_scalar(n, body, 0, WF_I64, (double)it), body_scalar(n, body, 1, WF_BOOL, 1.0)};
    for (int i = 0; i < (int)body->n_input; i++) {
      const char *name = body->input[i]->name ? body->input[i]->name : "";
      if (name[0]) ox_bind(cx, ox_scope_name(cx, s, name), i < 2 ? in_vals[i] : carried[i - 2]);
    }
    if ((rc = run_body(n, body, s, outs)) != 0) break;
    ox_val *c = outs[0];
    if (c->is_seq || (c->k && wf_tensor_numel(c->k) != 1)) {
      ox_err(n, "%s: the condition output must be one boolean", what);
      rc = WF_EXIT_INPUT;
      break;
    }
    if (c->k) keep = wf_tensor_get(c->k, 0) != 0;
    else if (n->in[1] || !n->in[0])  /* a for-loop (trip count, no condition) ignores it */
      rc = ox_unsupported(n, "%s: the loop condition depends on runtime values: waferc unrolls loops at import time", what);
    for (int j = 0; j < n_carried; j++) carried[j] = outs[1 + j];
    for (int k = 0; k < n_scan; k++) scans[(size_t)k * OX_MAX_UNROLL + (size_t)it] = outs[1 + n_carried + k];
  }
  for (int j = 0; rc == 0 && j < n_carried; j++) rc = ox_set_out(n, j, carried[j]);
  for (int k = 0; rc == 0 && k < n_scan; k++) {
    if (!ox_out_used(n, n_carried + k)) continue;
    if (it == 0) {
      rc = ox_unsupported(n, "scan output %d of a loop that runs no iteration (its shape is unknown)", k);
      break;
    }
    ox_val *r = stack(n, (int)it, &scans[(size_t)k * OX_MAX_UNROLL]);
    rc = r ? ox_set_out(n, n_carried + k, r) : WF_EXIT_INPUT;
  }
  free(carried);
  free(outs);
  free(scans);
  return rc;
}

int ox_imp_if(ox_nctx *n) {
  ox_val *c = ox_in(n, 0);
  if (!c) return WF_EXIT_INPUT;
  int64_t cond;
  int rc = const_scalar(n, 0, "condition", &cond);
  if (rc) return rc;
  const char *which = cond ? "then_branch" : "else_branch";
  const Onnx__GraphProto *g = graph_attr(n, which);
  if (!g) return WF_EXIT_INPUT;
  if ((int)g->n_output < ox_n_out(n)) {
    ox_err(n, "%s has %zu outputs, the node %d", which, g->n_output, ox_n_out(n));
    return WF_EXIT_INPUT;
  }
  char what[512];
  snprintf(what, sizeof what, "%s of '%s'", which, n->node->name && *n->node->name ? n->node->name : "If");
  ox_scope *s = ox_subgraph_scope(n->cx, n->node, g, what);
  ox_val **outs = malloc((g->n_output + 1) * sizeof *outs);
  WF_ASSERT(outs);
  rc = run_body(n, g, s, outs);
  for (int i = 0; rc == 0 && i < ox_n_out(n); i++) rc = ox_set_out(n, i, outs[i]);
  free(outs);
  return rc;
}
