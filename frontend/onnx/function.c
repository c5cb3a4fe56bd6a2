/* Opset imports and node flattening: a call of a model-local FunctionProto is replaced by the
 * function's body, its formal inputs/outputs renamed to the call's actual names, its
 * internal names given a unique prefix, and attribute references (ref_attr_name) replaced by
 * the caller's attributes (an unset reference leaves the attribute out: its default applies).
 * Functions may call functions; recursion deeper than a fixed bound is an error. */
#include <limits.h>
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
  /* No default-domain import is not an error by itself: a model of other domains' ops only
   * (ONNX's training ops) has none, and the op scan lists its ops as unsupported. */
  return WF_EXIT_OK;
}

int ox_opset_of(const ox_ctx *cx, const char *domain) {
  domain = norm_domain(domain);
  for (int i = 0; i < cx->n_opsets; i++)
    if (strcmp(cx->opsets[i].domain, domain) == 0) return cx->opsets[i].version;
  return 0;
}

static int in_list(const char *const *v, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(v[i], name) == 0) return 1;
  return 0;
}

const char *ox_scope_name(ox_ctx *cx, const ox_scope *s, const char *name) {
  /* open (subgraph) scopes pass the names they do not define to the enclosing scope */
  while (s && !s->fn && name[0] && !in_list(s->defined, s->n_defined, name)) s = s->up;
  if (!s || !name[0]) return name;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->from[i], name) == 0) return s->to[i];
  size_t n = strlen(s->prefix) + strlen(name) + 1;
  char *r = wf_arena_alloc(cx->arena, n);
  snprintf(r, n, "%s%s", s->prefix, name);
  return r;
}

/* The innermost function-call scope: attribute references resolve against its call. */
static const ox_scope *call_scope(const ox_scope *s) {
  while (s && !s->fn) s = s->up;
  return s;
}

static const Onnx__FunctionProto *find_function(const ox_ctx *cx, const char *domain, const char *name) {
  const Onnx__ModelProto *mp = cx->model;
  for (size_t i = 0; i < mp->n_functions; i++) {
    const Onnx__FunctionProto *fn = mp->functions[i];
    if (fn->name && strcmp(fn->name, name) == 0 && strcmp(norm_domain(fn->domain), domain) == 0) return fn;
  }
  return NULL;
}

static int node_opset(const ox_ctx *cx, const ox_scope *s, const char *domain) {
  for (; s; s = s->up)
    for (size_t i = 0; s->fn && i < s->fn->n_opset_import; i++) {
      const Onnx__OperatorSetIdProto *op = s->fn->opset_import[i];
      if (strcmp(norm_domain(op->domain), domain) == 0 && op->has_version) return (int)op->version;
    }
  return ox_opset_of(cx, domain);
}

/* Grows l to hold at least `want` nodes (in the arena: the old array stays until the import
 * ends, so a list starts at the size it needs; a Loop body's list is made once per iteration). */
static void reserve_nodes(ox_ctx *cx, ox_nodelist *l, int want) {
  if (want <= l->cap) return;
  int ncap = l->cap ? l->cap * 2 : 4;
  if (ncap < want) ncap = want;
  ox_node *nn = wf_arena_alloc(cx->arena, (size_t)ncap * sizeof *nn);
  if (l->n) memcpy(nn, l->v, (size_t)l->n * sizeof *nn);
  l->v = nn;
  l->cap = ncap;
}

static ox_node *push_node(ox_ctx *cx, ox_nodelist *l) {
  reserve_nodes(cx, l, l->n + 1);
  return &l->v[l->n++];
}

static int add_node(ox_ctx *cx, const Onnx__NodeProto *np, const ox_scope *s, int index, int depth, ox_nodelist *l,
                    int scan_only);

static int inline_call(ox_ctx *cx, const Onnx__FunctionProto *fn, const ox_node *call, const ox_scope *up,
                       int index, int depth, ox_nodelist *l, int scan_only) {
  if (depth >= MAX_DEPTH) {
    wf_error(ox_node_loc(cx, call), "function '%s' is nested more than %d calls deep (recursive?)", fn->name, MAX_DEPTH);
    return WF_EXIT_INPUT;
  }
  ox_scope *s = wf_arena_alloc(cx->arena, sizeof *s);
  memset(s, 0, sizeof *s);
  s->up = up;
  s->fn = fn;
  s->call = wf_arena_dup(cx->arena, call, sizeof *call);
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s/%d/", call->name && *call->name ? call->name : fn->name, cx->n_calls++);
  s->prefix = wf_arena_strdup(cx->arena, prefix);
  s->n = (int)(fn->n_input + fn->n_output);
  s->from = wf_arena_alloc(cx->arena, ((size_t)s->n + 1) * sizeof *s->from);
  s->to = wf_arena_alloc(cx->arena, ((size_t)s->n + 1) * sizeof *s->to);
  int k = 0;
  for (size_t i = 0; i < fn->n_input; i++, k++) {
    s->from[k] = fn->input[i];
    s->to[k] = (int)i < call->n_in ? call->in[i] : "";
  }
  for (size_t i = 0; i < fn->n_output; i++, k++) {
    s->from[k] = fn->output[i];
    s->to[k] = (int)i < call->n_out ? call->out[i] : "";
  }
  for (size_t i = 0; i < fn->n_node; i++) {
    int rc = add_node(cx, fn->node[i], s, index, depth + 1, l, scan_only);
    if (rc) return rc;
  }
  return WF_EXIT_OK;
}

ox_scope *ox_subgraph_scope(ox_ctx *cx, const ox_node *owner, const Onnx__GraphProto *g, const char *what) {
  ox_scope *s = wf_arena_alloc(cx->arena, sizeof *s);
  memset(s, 0, sizeof *s);
  s->up = owner->scope;
  char prefix[512];
  snprintf(prefix, sizeof prefix, "%s/%d/", owner->name && *owner->name ? owner->name : owner->op_type, cx->n_calls++);
  s->prefix = wf_arena_strdup(cx->arena, prefix);
  s->what = wf_arena_strdup(cx->arena, what);
  size_t cap = g->n_input + 1;
  for (size_t i = 0; i < g->n_node; i++) cap += g->node[i]->n_output;
  s->defined = wf_arena_alloc(cx->arena, cap * sizeof *s->defined);
  for (size_t i = 0; i < g->n_input; i++)
    if (g->input[i]->name && *g->input[i]->name) s->defined[s->n_defined++] = g->input[i]->name;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_output; j++)
      if (g->node[i]->output[j] && *g->node[i]->output[j]) s->defined[s->n_defined++] = g->node[i]->output[j];
  return s;
}

int ox_flatten_subgraph(ox_ctx *cx, const Onnx__GraphProto *g, const ox_scope *s, int index, ox_nodelist *list) {
  if (g->n_node < (size_t)INT_MAX - list->n) reserve_nodes(cx, list, list->n + (int)g->n_node);
  for (size_t i = 0; i < g->n_node; i++) {
    int rc = add_node(cx, g->node[i], s, index, 0, list, 0);
    if (rc) return rc;
  }
  return WF_EXIT_OK;
}

/* The nodes of a node's subgraphs (Loop body, If branches), for the unsupported-op scan. */
static int add_subgraph_nodes(ox_ctx *cx, const ox_node *owner, int index, int depth, ox_nodelist *l) {
  for (int i = 0; i < owner->n_attr; i++) {
    const Onnx__AttributeProto *a = owner->attr[i];
    const Onnx__GraphProto *gs[1] = {a->g};
    const Onnx__GraphProto *const *g = a->g ? gs : (const Onnx__GraphProto *const *)a->graphs;
    size_t ng = a->g ? 1 : a->n_graphs;
    for (size_t k = 0; k < ng; k++) {
      if (!g[k]) continue;
      if (depth >= MAX_DEPTH) {
        wf_error(ox_node_loc(cx, owner), "subgraphs are nested more than %d deep", MAX_DEPTH);
        return WF_EXIT_INPUT;
      }
      char what[512];
      snprintf(what, sizeof what, "subgraph '%s' of node '%s'", a->name ? a->name : "",
               owner->name && *owner->name ? owner->name : owner->op_type);
      ox_scope *s = ox_subgraph_scope(cx, owner, g[k], what);
      for (size_t j = 0; j < g[k]->n_node; j++) {
        int rc = add_node(cx, g[k]->node[j], s, index, depth + 1, l, 1);
        if (rc) return rc;
      }
    }
  }
  return WF_EXIT_OK;
}

static int add_node(ox_ctx *cx, const Onnx__NodeProto *np, const ox_scope *s, int index, int depth, ox_nodelist *l,
                    int scan_only) {
  ox_node nd;
  memset(&nd, 0, sizeof nd);
  nd.op_type = np->op_type ? np->op_type : "";
  nd.domain = norm_domain(np->domain);
  nd.name = np->name ? ox_scope_name(cx, s, np->name) : "";
  nd.index = index;
  const ox_scope *cs = call_scope(s);
  nd.via = cs ? cs->fn->name : NULL;
  nd.scope = s;
  nd.scan_only = scan_only;
  nd.n_in = (int)np->n_input;
  nd.n_out = (int)np->n_output;
  nd.in = wf_arena_alloc(cx->arena, ((size_t)nd.n_in + 1) * sizeof *nd.in);
  nd.out = wf_arena_alloc(cx->arena, ((size_t)nd.n_out + 1) * sizeof *nd.out);
  for (int i = 0; i < nd.n_in; i++) nd.in[i] = ox_scope_name(cx, s, np->input[i] ? np->input[i] : "");
  for (int i = 0; i < nd.n_out; i++) nd.out[i] = ox_scope_name(cx, s, np->output[i] ? np->output[i] : "");
  nd.attr = wf_arena_alloc(cx->arena, (np->n_attribute + 1) * sizeof *nd.attr);
  for (size_t i = 0; i < np->n_attribute; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    if (a->ref_attr_name && *a->ref_attr_name) {
      if (!cs) {
        wf_error(ox_node_loc(cx, &nd), "attribute '%s' refers to '%s' outside a function", a->name ? a->name : "",
                 a->ref_attr_name);
        return WF_EXIT_INPUT;
      }
      const Onnx__AttributeProto *src = NULL;
      for (int j = 0; j < cs->call->n_attr; j++)
        if (cs->call->attr[j]->name && strcmp(cs->call->attr[j]->name, a->ref_attr_name) == 0) src = cs->call->attr[j];
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
  if (fn && (nd.domain[0] || !ox_op_lookup(nd.op_type))) return inline_call(cx, fn, &nd, s, index, depth, l, scan_only);
  nd.opset = node_opset(cx, s, nd.domain);
  ox_node *pushed = push_node(cx, l);
  *pushed = nd;
  /* the pushed copy may move when the list grows: the subgraph scan works on a stable copy */
  return add_subgraph_nodes(cx, wf_arena_dup(cx->arena, &nd, sizeof nd), index, depth, l);
}

int ox_flatten_nodes(ox_ctx *cx) {
  const Onnx__GraphProto *g = cx->model->graph;
  cx->n_top = (int)g->n_node;
  ox_nodelist l = {cx->nodes, cx->n_nodes, cx->cap_nodes};
  for (size_t i = 0; i < g->n_node; i++) {
    int rc = add_node(cx, g->node[i], NULL, (int)i, 0, &l, 0);
    if (rc) return rc;
  }
  cx->nodes = l.v;
  cx->n_nodes = l.n;
  cx->cap_nodes = l.cap;
  return WF_EXIT_OK;
}
