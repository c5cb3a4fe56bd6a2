/* wf_onnx_import: the driver. Loads the model, flattens its nodes (functions inlined), lists
 * every unsupported op at once, binds initializers and inputs, runs each node's importer,
 * returns the graph outputs, then removes dead ops and unused constants. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"

/* ---- the unsupported-op scan --------------------------------------------------------------- */

static int scan_unsupported(ox_ctx *cx) {
  int bad = 0, n_types = 0;
  for (int i = 0; i < cx->n_nodes; i++) {
    const ox_node *nd = &cx->nodes[i];
    const ox_opdef *d = nd->opset > 0 && !nd->domain[0] ? ox_op_lookup(nd->op_type) : NULL;
    if (d && nd->opset >= d->min_opset && nd->opset <= d->max_opset) continue;
    /* report each (domain, op type) once, at its first node, with the count */
    int first = 1, count = 0;
    for (int j = 0; j < cx->n_nodes; j++) {
      const ox_node *o = &cx->nodes[j];
      if (strcmp(o->op_type, nd->op_type) != 0 || strcmp(o->domain, nd->domain) != 0) continue;
      if (j < i) first = 0;
      count++;
    }
    bad = 1;
    if (!first) continue;
    n_types++;
    ox_nctx n = {.cx = cx, .node = nd, .opset = nd->opset, .eloc = ox_node_loc(cx, nd)};
    char more[64] = "";
    if (count > 1) snprintf(more, sizeof more, " (%d nodes)", count);
    if (!nd->domain[0] && nd->opset <= 0)
      ox_err(&n, "unsupported operator '%s'%s: the model imports no version of the default ONNX opset", nd->op_type, more);
    else if (nd->domain[0] && nd->opset > 0)
      ox_err(&n, "unsupported operator '%s' of domain '%s'%s", nd->op_type, nd->domain, more);
    else if (nd->opset <= 0)
      ox_err(&n, "unsupported operator '%s' of domain '%s'%s: the model imports no opset of that domain waferc knows", nd->op_type,
             nd->domain, more);
    else if (!d)
      ox_err(&n, "unsupported operator '%s'%s", nd->op_type, more);
    else
      ox_err(&n, "unsupported operator '%s' at opset %d%s: waferc supports it at opsets %d-%d", nd->op_type,
             nd->opset, more, d->min_opset, d->max_opset);
  }
  if (bad) wf_error_at(cx->path, "%d unsupported operator%s (see 'waferc --list-onnx-ops')", n_types, n_types == 1 ? "" : "s");
  return bad;
}

/* ---- graph inputs and initializers -------------------------------------------------------- */

static int bind_initializers(ox_ctx *cx, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *tp = g->initializer[i];
    if (!tp->name || !*tp->name) {
      wf_error_at(cx->path, "initializer %zu has no name", i);
      return WF_EXIT_INPUT;
    }
    int narrowed = 0;
    wf_dtype dt;
    if (tp->has_data_type && ox_dtype_from_onnx(tp->data_type, &dt, &narrowed) == 0 && narrowed == 1 && !cx->warned_f64) {
      wf_warning(wf_loc_make(cx->path, 0, 0), "double-precision initializers (first: '%s') are narrowed to f32", tp->name);
      cx->warned_f64 = 1;
    }
    wf_tensor *k = ox_tensor_from_proto(tp, cx->dir, wf_loc_make(cx->path, 0, 0));
    if (!k) return WF_EXIT_INPUT;
    ox_val *v = ox_const_new(cx, k);
    v->name = wf_arena_strdup(cx->arena, tp->name);
    ox_bind(cx, tp->name, v);
  }
  if (g->n_sparse_initializer) {
    wf_error_at(cx->path, "sparse initializers are not supported");
    return WF_EXIT_UNSUPPORTED;
  }
  return WF_EXIT_OK;
}

static int check_graph_outputs_defined(ox_ctx *cx, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    if (!ox_lookup(cx, name)) {
      wf_error_at(cx->path, "graph output '%s' is not produced by any node, input or initializer", name);
      return WF_EXIT_INPUT;
    }
  }
  return WF_EXIT_OK;
}

/* ---- nodes -------------------------------------------------------------------------------- */

int ox_import_node(ox_ctx *cx, const ox_node *nd) {
  if (nd->scan_only) return WF_EXIT_OK;
  ox_nctx n = {.cx = cx, .node = nd, .opset = nd->opset};
  n.eloc = ox_node_loc(cx, nd);
  n.oploc = wf_loc_make(cx->path, (uint32_t)nd->index + 1, 0);
  wf_loc_describe(n.oploc, n.eloc.file); /* later passes' errors name the node */
  n.n_in = nd->n_in;
  ox_val *ins[16];
  n.in = nd->n_in <= 16 ? ins : wf_arena_alloc(cx->arena, (size_t)nd->n_in * sizeof *n.in);
  for (int i = 0; i < nd->n_in; i++) {
    n.in[i] = NULL;
    if (!nd->in[i][0]) continue;
    n.in[i] = ox_lookup(cx, nd->in[i]);
    if (!n.in[i]) {
      ox_err(&n, "input %d '%s' is not produced by any earlier node, graph input or initializer (the graph must be topologically sorted)",
             i, nd->in[i]);
      return WF_EXIT_INPUT;
    }
  }
  if (ox_attr_check_types(&n)) return WF_EXIT_INPUT;
  const ox_opdef *d = ox_op_lookup(nd->op_type);
  WF_ASSERT(d);
  for (int i = 0; i < nd->n_in; i++)
    if (n.in[i] && n.in[i]->is_seq && !d->takes_seq) {
      ox_err(&n, "input %d '%s' is a sequence; %s takes tensors", i, nd->in[i], nd->op_type);
      return WF_EXIT_INPUT;
    }
  int rc = d->fn(&n);
  if (!rc) rc = ox_list_after(&n);
  if (rc) return rc;
  for (int i = 0; i < nd->n_out; i++)
    if (ox_out_used(&n, i) && !ox_lookup(cx, nd->out[i])) {
      ox_err(&n, "output %d '%s' is not produced (waferc computes only the first %d output%s of %s)", i, nd->out[i], i,
             i == 1 ? "" : "s", nd->op_type);
      return WF_EXIT_UNSUPPORTED;
    }
  return WF_EXIT_OK;
}

/* ---- dead code and unused constants ------------------------------------------------------- */

static void remove_dead(ox_ctx *cx) {
  wf_func_remove_dead_ops(cx->f);
  wf_module_remove_unused_globals(cx->m); /* globals no op uses any more, renumbered */
}

/* ---- the entry point ------------------------------------------------------------------------ */

static void ctx_free(ox_ctx *cx) {
  for (int i = 0; i < cx->n_consts; i++) wf_tensor_free(cx->consts[i]);
  free(cx->consts);
  free(cx->memo);
  free(cx->slots);
  free(cx->dir);
  if (cx->model) protobuf_c_message_free_unpacked(&cx->model->base, NULL);
  wf_arena_free(cx->arena);
}

static int import_model(ox_ctx *cx, const wf_onnx_opts *o) {
  const Onnx__ModelProto *mp = cx->model;
  const Onnx__GraphProto *g = mp->graph;
  if (!g) {
    wf_error_at(cx->path, "not an ONNX model: it has no graph");
    return WF_EXIT_INPUT;
  }
  int rc = ox_opsets_read(cx);
  if (rc) return rc;
  if ((rc = ox_flatten_nodes(cx)) != 0) return rc;
  if (scan_unsupported(cx)) return WF_EXIT_UNSUPPORTED;

  cx->m = wf_module_new();
  wf_module_set_base_dir(cx->m, cx->dir);
  if (g->name && *g->name) cx->m->name = wf_intern(cx->m, g->name);
  cx->f = wf_func_new(cx->m, o->func_name ? o->func_name : "main", wf_loc_make(cx->path, 0, 0));

  if ((rc = bind_initializers(cx, g)) != 0) return rc;
  if ((rc = ox_bind_inputs(cx, o)) != 0) return rc;
  for (int i = 0; i < cx->n_nodes; i++) {
    if ((i & 63) == 0) wf_progress("importing %s: node %d of %d", cx->path, i, cx->n_nodes);
    if ((rc = ox_import_node(cx, &cx->nodes[i])) != 0) return rc;
  }
  if ((rc = check_graph_outputs_defined(cx, g)) != 0) return rc;

  wf_value *rets = calloc(g->n_output + 1, sizeof *rets);
  wf_type *types = calloc(g->n_output + 1, sizeof *types);
  WF_ASSERT(rets && types);
  ox_nctx top = {.cx = cx, .oploc = wf_loc_make(cx->path, 0, 0), .eloc = wf_loc_make(cx->path, 0, 0)};
  for (size_t i = 0; i < g->n_output; i++) {
    ox_val *v = ox_lookup(cx, g->output[i]->name);
    if (v->is_seq) {
      wf_error_at(cx->path, "graph output '%s' is a sequence: waferc's functions return tensors only", g->output[i]->name);
      free(rets);
      free(types);
      return WF_EXIT_UNSUPPORTED;
    }
    if ((rc = ox_list_output(cx, g->output[i]->name, wf_loc_make(cx->path, 0, 0))) != 0) {
      free(rets);
      free(types);
      return rc;
    }
    rets[i] = ox_ir_value(&top, v);
    types[i] = v->type;
    /* the output keeps its ONNX name (a constant output is a global with that name) */
    wf_value_info *vi = wf_value_get(cx->f, rets[i]);
    int dup = 0;
    for (size_t j = 0; j < i; j++) dup |= rets[j] == rets[i];
    if (vi->kind == WF_VAL_RESULT && !dup) wf_value_set_name(cx->f, rets[i], g->output[i]->name);
  }
  wf_op_append(cx->f, WF_OP_RETURN, (int)g->n_output, rets, 0, NULL, wf_loc_make(cx->path, (uint32_t)cx->n_top + 1, 0));
  wf_func_set_result_types(cx->f, (int)g->n_output, types);
  free(rets);
  free(types);
  if (!o->keep_dead) remove_dead(cx);
  wf_progress_done();
  if (wf_verify_module(cx->m) != 0) {
    wf_error_at(cx->path, "the imported IR does not verify (an importer bug or an inconsistent model)");
    return WF_EXIT_INPUT;
  }
  return WF_EXIT_OK;
}

/* The model is read from `path` when data is NULL, else it is the size bytes at data. */
static int import(const char *path, const uint8_t *data, size_t size, const wf_onnx_opts *opts, wf_module **out) {
  *out = NULL;
  wf_onnx_opts dflt = WF_ONNX_OPTS_DEFAULT;
  const wf_onnx_opts *o = opts ? opts : &dflt;
  ox_ctx cx;
  memset(&cx, 0, sizeof cx);
  cx.arena = wf_arena_new();
  cx.path = wf_arena_strdup(cx.arena, path);
  cx.dir = strdup(path);
  WF_ASSERT(cx.dir);
  char *slash = strrchr(cx.dir, '/');
  if (slash) *(slash == cx.dir ? slash + 1 : slash) = '\0';
  else strcpy(cx.dir, ".");
  int rc;
  if (data) cx.model = ox_unpack_buffer(path, data, size, &onnx__model_proto__descriptor, &rc);
  else cx.model = ox_unpack_file(path, &onnx__model_proto__descriptor, &rc);
  if (cx.model) rc = import_model(&cx, o);
  if (rc == WF_EXIT_OK) *out = cx.m;
  else if (cx.m) wf_module_free(cx.m);
  ctx_free(&cx);
  wf_progress_done();
  return rc;
}

int wf_onnx_import(const char *path, const wf_onnx_opts *opts, wf_module **out) {
  return import(path, NULL, 0, opts, out);
}

int wf_onnx_import_buffer(const void *data, size_t size, const char *path, const wf_onnx_opts *opts,
                          wf_module **out) {
  return import(path, data ? data : (const void *)"", size, opts, out);
}
