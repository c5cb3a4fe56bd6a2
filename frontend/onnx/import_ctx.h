/* Internal: the importer's context, shared by import.c, function.c and inputs.c (the op
 * importers see it only through onnx_internal.h's functions). */
#ifndef WAFERC_FRONTEND_ONNX_IMPORT_CTX_H
#define WAFERC_FRONTEND_ONNX_IMPORT_CTX_H

#include "frontend/onnx/onnx_internal.h"

typedef struct ox_slot {
  const char *name;
  ox_val *val;
} ox_slot;

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
  ox_node *nodes;              /* flattened: functions inlined */
  int n_nodes, cap_nodes;
  int n_top;                   /* nodes of the main graph */
  int n_anon;                  /* counter for made-up constant names */
  int n_calls;                 /* inlined function calls so far (unique name prefixes) */
  int warned_f64;
};

ox_val *ox_lookup(ox_ctx *cx, const char *name);
void ox_bind(ox_ctx *cx, const char *name, ox_val *v);
wf_loc ox_node_loc(ox_ctx *cx, const ox_node *nd);

/* function.c: reads the model's opset imports; flattens the graph's nodes, inlining calls of
 * model-local functions. */
int ox_opsets_read(ox_ctx *cx);
int ox_flatten_nodes(ox_ctx *cx);
/* Version of `domain` in the model's imports; 0 when not imported. */
int ox_opset_of(const ox_ctx *cx, const char *domain);

/* inputs.c: graph inputs (not initializers) become function arguments, their dynamic dims
 * fixed by --input-shape or shared dim_params. */
int ox_bind_inputs(ox_ctx *cx, const wf_onnx_opts *o);

#endif
