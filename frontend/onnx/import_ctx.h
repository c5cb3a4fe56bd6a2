/* Internal: the importer's context, shared by import.c, function.c and inputs.c (the op
 * importers see it only through onnx_internal.h's functions). */
#ifndef WAFERC_FRONTEND_ONNX_IMPORT_CTX_H
#define WAFERC_FRONTEND_ONNX_IMPORT_CTX_H

#include "frontend/onnx/onnx_internal.h"

typedef struct ox_slot {
  const char *name;
  ox_val *val;
  const ox_node *by;           /* the node that produced it (NULL: input, initializer, made up) */
} ox_slot;

/* A naming scope of nodes that came from a nested body: an inlined call of a model-local
 * function (closed: every name not a formal input/output is internal and gets the prefix),
 * or one iteration of a Loop body or one If branch (open: names the body defines get the
 * prefix, every other name is an outer value and resolves in the enclosing scope).
 * Arena-allocated: a node keeps its scope, so a Loop inside a function resolves its body's
 * outer names when it is unrolled, after the flattening. */
typedef struct ox_scope {
  const struct ox_scope *up;
  const Onnx__FunctionProto *fn; /* the inlined function; NULL for a subgraph scope */
  const char *prefix;
  int n;                         /* renamed names: formal -> actual (function scopes) */
  const char **from, **to;
  const ox_node *call;           /* the calling node (its attributes resolve references) */
  int n_defined;                 /* subgraph scopes: the names the body defines */
  const char **defined;
  const char *what;              /* subgraph scopes: "loop 'L' iteration 2", for locations */
} ox_scope;

/* A growable list of flattened nodes. */
typedef struct ox_nodelist {
  ox_node *v;
  int n, cap;
} ox_nodelist;

typedef struct ox_opset {
  const char *domain; /* "" for the default domain (also written "ai.onnx") */
  int version;
} ox_opset;

struct ox_ctx {
  const char *path;            /* the model file, as given */
  char *dir;                   /* its directory: external data and file constants */
  Onnx__ModelProto *model;
  wf_arena *arena;             /* ox_val, names, flattened nodes: freed after the import */
  wf_module *m;
  wf_func *f;
  ox_slot **slots;             /* name -> value, open addressing */
  size_t cap, count;
  wf_tensor **consts;          /* host constants owned by the import */
  int n_consts, cap_consts;
  ox_opset *opsets;
  int n_opsets;
  ox_node *nodes;              /* flattened: functions inlined; subgraph nodes scan-only */
  int n_nodes, cap_nodes;
  int n_top;                   /* nodes of the main graph */
  int n_anon;                  /* counter for made-up constant names */
  int n_calls;                 /* inlined function calls so far (unique name prefixes) */
  int warned_f64;
  int warned_repeat;           /* torch_quirks.c warned once */
  int64_t host_made;           /* bytes of constants made on the host from fewer (ox_host_budget) */
  int64_t unrolled;            /* nodes imported from Loop and If bodies so far (ops_control.c) */
  struct ox_memo *memo;        /* large host-made constants and what made them (host_memo.c) */
  int n_memo, cap_memo;
};

ox_val *ox_lookup(ox_ctx *cx, const char *name);
void ox_bind(ox_ctx *cx, const char *name, ox_val *v);
/* The node whose output `name` is (NULL for inputs, initializers, made-up names). */
const ox_node *ox_producer(ox_ctx *cx, const char *name);
wf_loc ox_node_loc(ox_ctx *cx, const ox_node *nd);

/* Imports one flattened node (import.c): runs its op's importer; scan-only nodes are skipped. */
int ox_import_node(ox_ctx *cx, const ox_node *nd);

/* function.c: reads the model's opset imports; flattens the graph's nodes, inlining calls of
 * model-local functions. The nodes of subgraphs (Loop and If bodies) are added too, marked
 * scan-only: the unsupported-op scan sees them; their importer flattens them again per use. */
int ox_opsets_read(ox_ctx *cx);
int ox_flatten_nodes(ox_ctx *cx);
/* A subgraph scope for `g` under the scope of node `owner` (names of g's inputs and nodes'
 * outputs get a fresh prefix); `what` describes it in locations. */
ox_scope *ox_subgraph_scope(ox_ctx *cx, const ox_node *owner, const Onnx__GraphProto *g, const char *what);
/* The name `name` of scope s as the importer binds it. */
const char *ox_scope_name(ox_ctx *cx, const ox_scope *s, const char *name);
/* Appends g's nodes, renamed in scope s, to list (importable, not scan-only). */
int ox_flatten_subgraph(ox_ctx *cx, const Onnx__GraphProto *g, const ox_scope *s, int index, ox_nodelist *list);
/* Version of `domain` in the model's imports; 0 when not imported. */
int ox_opset_of(const ox_ctx *cx, const char *domain);

/* inputs.c: graph inputs (not initializers) become function arguments, their dynamic dims
 * fixed by --input-shape or shared dim_params. */
int ox_bind_inputs(ox_ctx *cx, const wf_onnx_opts *o);

#endif
