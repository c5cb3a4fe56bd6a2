/* Opset imports and node flattening: a call of a model-local FunctionProto is replaced by the
 * function's body, its formal inputs/outputs renamed to the call's actual names, its
 * internal names given a unique prefix, and attribute references (ref_attr_name) replaced by
 * the caller's attributes (an unset reference leaves the attribute out: its default applies).
 * Functions may call functions; recursion deeper than a fixed bound is an error. */
#include <string.h>

#include "frontend/onnx/import_ctx.h"

#define MAX_DEPTH 32

static const char *norm_domain(const char *d) {
  if (!d || strcmp(d, "ai.onnx") == 0) return "";
  return d;
}

int ox_opsets_read(ox_ctx *cx) {
  const Onnx__ModelProto *mp = cx->model;
  cx->opsets = wf_arena_alloc(cx->arena, (mp->n_opset_import + 1) * sizeof *cx->opsets);
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
    cx->opsets[cx->n_opsets].domain = norm_domain(op->domain);
    cx->opsets[cx->n_opsets].version = op->has_version && op->version > 0 && op->version < 1000 ? (int)op->version : 0;
    cx->n_opsets++;
  }
  if (ox_opset_of(cx, "") <= 0) {
    wf_error_at(cx->path, "the model imports no version of the default ONNX opset (opset_import)");
    return WF_EXIT_INPUT;
  }
  return WF_EXIT_OK;
}

int ox_opset_of(const ox_ctx *cx, const char *domain) {
  domain = norm_domain(domain);
  for (int i = 0; i < cx->n_opsets; i++)
    if (strcmp(cx->opsets[i].domain, domain) == 0) return cx->opsets[i].version;
  return 0;
}

/* A renaming scope of one inlined call. */
typedef struct scope {
  const struct scope *up;
  const Onnx__FunctionProto *fn;
  const char *prefix;
  int n;
  const char **from, **to;
  const ox_node *call;          /* the calling node (its attributes resolve references) */
} scope;

static const char *scope_name(ox_ctx *cx, const scope *s, const char *name) {
  if (!s || !name[0]) return name;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->from[i], name) == 0) return s->to[i];
  size_t n = strlen(s->prefix) + strlen(name) + 1;
  char *r = wf_arena_alloc(cx->arena, n);
  snprintf(r, n, "%s%s", s->prefix, name);
  return r;
}

static const Onnx__FunctionProto *find_function(const ox_ctx *cx, const char *domain, const char *name) {
  const Onnx__ModelProto *mp = cx->model;
  for (size_t i = 0; i < mp->n_functions; i++) {
    const Onnx__FunctionProto *fn = mp->functions[i];
    if (fn->name && strcmp(fn->name, name) == 0 && strcmp(norm_domain(fn->domain), domain) == 0) return fn;
  }
  return NULL;
}

static int node_opset(const ox_ctx *cx, const scope *s, const char *domain) {
  for (; s; s = s->up)
    for (size_t i = 0; i < s->fn->n_opset_import; i++) {
      const Onnx__OperatorSetIdProto *op = s->fn->opset_import[i];
      if (strcmp(norm_domain(op->domain), domain) == 0 && op->has_version) return (int)op->version;
    }
  return ox_opset_of(cx, domain);
}

static ox_node *push_node(ox_ctx *cx) {
  if (cx->n_nodes == cx->cap_nodes) {
    int ncap = cx->cap_nodes ? cx->cap_nodes * 2 : 64;
    ox_node *nn = wf_arena_alloc(cx->arena, (size_t)ncap * sizeof *nn);
    if (cx->n_nodes) memcpy(nn, cx->nodes, (size_t)cx->n_nodes * sizeof *nn);
    cx->nodes = nn;
    cx->cap_nodes = ncap;
  }
  return &cx->nodes[cx->n_nodes++];
}

static int add_node(ox_ctx *cx, const Onnx__NodeProto *np, const scope *s, int index, int depth);

static int inline_call(ox_ctx *cx, const Onnx__FunctionProto *fn, const ox_node *call, const scope *up,
                       int index, int depth) {
  if (depth >= MAX_DEPTH) {
    wf_error(ox_node_loc(cx, call), "function '%s' is nested more than %d calls deep (recursive?)", fn->name, MAX_DEPTH);
    return WF_EXIT_INPUT;
  }
  scope s = {.up = up, .fn = fn, .call = call};
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s/%d/", call->name && *call->name ? call->name : fn->name, cx->n_calls++);
  s.prefix = wf_arena_strdup(cx->arena, prefix);
  s.n = (int)(fn->n_input + fn->n_output);
  s.from = wf_arena_alloc(cx->arena, ((size_t)s.n + 1) * sizeof *s.from);
  s.to = wf_arena_alloc(cx->arena, ((size_t)s.n + 1) * sizeof *s.to);
  int k = 0;
  for (size_t i = 0; i < fn->n_input; i++, k++) {
    s.from[k] = fn->input[i];
    s.to[k] = (int)i < call->n_in ? call->in[i] : "";
  }
  for (size_t i = 0; i < fn->n_output; i++, k++) {
    s.from[k] = fn->output[i];
    s.to[k] = (int)i < call->n_out ? call->out[i] : "";
  }
  for (size_t i = 0; i < fn->n_node; i++) {
    int rc = add_node(cx, fn->node[i], &s, index, depth + 1);
    if (rc) return rc;
  }
  return WF_EXIT_OK;
}

static int add_node(ox_ctx *cx, const Onnx__NodeProto *np, const scope *s, int index, int depth) {
  ox_node nd;
  memset(&nd, 0, sizeof nd);
  nd.op_type = np->op_type ? np->op_type : "";
  nd.domain = norm_domain(np->domain);
  nd.name = np->name ? scope_name(cx, s, np->name) : "";
  nd.index = index;
  nd.via = s ? s->fn->name : NULL;
  nd.n_in = (int)np->n_input;
  nd.n_out = (int)np->n_output;
  nd.in = wf_arena_alloc(cx->arena, ((size_t)nd.n_in + 1) * sizeof *nd.in);
  nd.out = wf_arena_alloc(cx->arena, ((size_t)nd.n_out + 1) * sizeof *nd.out);
  for (int i = 0; i < nd.n_in; i++) nd.in[i] = scope_name(cx, s, np->input[i] ? np->input[i] : "");
  for (int i = 0; i < nd.n_out; i++) nd.out[i] = scope_name(cx, s, np->output[i] ? np->output[i] : "");
  nd.attr = wf_arena_alloc(cx->arena, (np->n_attribute + 1) * sizeof *nd.attr);
  for (size_t i = 0; i < np->n_attribute; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    if (a->ref_attr_name && *a->ref_attr_name) {
      if (!s) {
        wf_error(ox_node_loc(cx, &nd), "attribute '%s' refers to '%s' outside a function", a->name ? a->name : "",
                 a->ref_attr_name);
        return WF_EXIT_INPUT;
      }
      const Onnx__AttributeProto *src = NULL;
      for (int j = 0; j < s->call->n_attr; j++)
        if (s->call->attr[j]->name && strcmp(s->call->attr[j]->name, a->ref_attr_name) == 0) src = s->call->attr[j];
      if (!src) continue; /* not given by the caller: the op's default applies */
      Onnx__AttributeProto *copy = wf_arena_dup(cx->arena, src, sizeof *src);
      copy->name = a->name;
      a = copy;
    }
    nd.attr[nd.n_attr++] = a;
  }
  const Onnx__FunctionProto *fn = find_function(cx, nd.domain, nd.op_type);
  /* A model-local function shadows a standard op only outside the default domain, or when
   * the standard table does not know the op (a function named like a standard op in the
   * default domain is how some exporters ship a decomposition). */
  if (fn && (nd.domain[0] || !ox_op_lookup(nd.op_type))) return inline_call(cx, fn, &nd, s, index, depth);
  nd.opset = node_opset(cx, s, nd.domain);
  *push_node(cx) = nd;
  return WF_EXIT_OK;
}

int ox_flatten_nodes(ox_ctx *cx) {
  const Onnx__GraphProto *g = cx->model->graph;
  cx->n_top = (int)g->n_node;
  for (size_t i = 0; i < g->n_node; i++) {
    int rc = add_node(cx, g->node[i], NULL, (int)i, 0);
    if (rc) return rc;
  }
  return WF_EXIT_OK;
}
