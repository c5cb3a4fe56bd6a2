/* Graph inputs -> function arguments. The IR has static shapes only, so every dynamic
 * dimension (a dim_param such as "seq", or no value at all) must be fixed: by
 * `--input-shape NAME=1x128` for that input, or through a dim_param another fixed input
 * binds (input_ids=1x16 fixes "batch" and "seq" for attention_mask too). What stays
 * unresolved is an error naming the input and the first node that uses it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"

typedef struct given {
  const char *name; /* points into the option text */
  size_t name_len;
  int rank;
  int64_t dims[WF_MAX_RANK];
  int used;
} given;

typedef struct param {
  const char *name;
  int64_t value;
  const char *from; /* the input that fixed it */
} param;

static int parse_given(const char *text, given *g) {
  const char *eq = strrchr(text, '=');
  if (!eq || eq == text) {
    wf_error_at("--input-shape", "expects NAME=DIMS such as x=1x128, got '%s'", text);
    return -1;
  }
  g->name = text;
  g->name_len = (size_t)(eq - text);
  g->rank = 0;
  const char *p = eq + 1;
  if (strcmp(p, "scalar") == 0 || !*p) return 0;
  for (;;) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || g->rank == WF_MAX_RANK || (*end && *end != 'x')) {
      wf_error_at("--input-shape", "expects NAME=DIMS with non-negative dims separated by 'x' (at most %d), got '%s'",
                  WF_MAX_RANK, text);
      return -1;
    }
    g->dims[g->rank++] = v;
    if (!*end) return 0;
    p = end + 1;
  }
}

static const ox_node *first_user(const ox_ctx *cx, const char *name) {
  for (int i = 0; i < cx->n_nodes; i++)
    for (int k = 0; k < cx->nodes[i].n_in; k++)
      if (strcmp(cx->nodes[i].in[k], name) == 0) return &cx->nodes[i];
  return NULL;
}

static void unresolved(ox_ctx *cx, const char *input, int dim, const char *param_name) {
  const ox_node *u = first_user(cx, input);
  char what[300];
  if (param_name && *param_name) snprintf(what, sizeof what, "dim %d ('%s')", dim, param_name);
  else if (dim >= 0) snprintf(what, sizeof what, "dim %d", dim);
  else snprintf(what, sizeof what, "shape (its rank is unknown)");
  if (u)
    wf_error(ox_node_loc(cx, u), "input '%s' %s is dynamic and this node needs it: fix it with --input-shape %s=...", input,
             what, input);
  else
    wf_error_at(cx->path, "input '%s' %s is dynamic: fix it with --input-shape %s=...", input, what, input);
}

int ox_bind_inputs(ox_ctx *cx, const wf_onnx_opts *o) {
  const Onnx__GraphProto *g = cx->model->graph;
  int ng = o->n_input_shapes;
  given *gv = calloc((size_t)ng + 1, sizeof *gv);
  param *params = calloc(g->n_input * WF_MAX_RANK + 1, sizeof *params);
  WF_ASSERT(gv && params);
  int n_params = 0, rc = WF_EXIT_OK;
  for (int i = 0; i < ng; i++)
    if (parse_given(o->input_shapes[i], &gv[i]) != 0) rc = WF_EXIT_USAGE;

  /* the inputs to bind: not shadowed by an initializer */
  const Onnx__ValueInfoProto **ins = calloc(g->n_input + 1, sizeof *ins);
  given **gi = calloc(g->n_input + 1, sizeof *gi);
  WF_ASSERT(ins && gi);
  int n = 0;
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    if (!vi->name || !*vi->name) {
      wf_error_at(cx->path, "graph input %zu has no name", i);
      rc = WF_EXIT_INPUT;
      continue;
    }
    ox_val *known = ox_lookup(cx, vi->name);
    for (int k = 0; k < ng; k++)
      if (strlen(vi->name) == gv[k].name_len && strncmp(vi->name, gv[k].name, gv[k].name_len) == 0) {
        if (known) {
          wf_error_at("--input-shape", "'%s' is an initializer (a constant), not a dynamic input", vi->name);
          rc = WF_EXIT_USAGE;
        }
        gv[k].used = 1;
        gi[n] = &gv[k];
      }
    if (known) continue;
    ins[n++] = vi;
  }
  for (int k = 0; k < ng; k++)
    if (!gv[k].used && gv[k].name) {
      wf_error_at("--input-shape", "the model has no input named '%.*s'", (int)gv[k].name_len, gv[k].name);
      rc = WF_EXIT_USAGE;
    }

  /* pass 1: check the given shapes against the model's and learn the dim_params they fix */
  for (int i = 0; rc == WF_EXIT_OK && i < n; i++) {
    const Onnx__TypeProto *tp = ins[i]->type;
    const Onnx__TensorShapeProto *sh = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type->shape : NULL;
    if (!gi[i] || !sh) continue;
    if ((int)sh->n_dim != gi[i]->rank) {
      wf_error_at("--input-shape", "input '%s' has rank %zu in the model, but %d dims were given", ins[i]->name, sh->n_dim,
                  gi[i]->rank);
      rc = WF_EXIT_USAGE;
      break;
    }
    for (int d = 0; d < gi[i]->rank; d++) {
      const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
      int64_t want = gi[i]->dims[d];
      if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value != want) {
        wf_error_at("--input-shape", "input '%s' dim %d is %lld in the model, not %lld", ins[i]->name, d, (long long)dm->dim_value,
                    (long long)want);
        rc = WF_EXIT_USAGE;
      } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && *dm->dim_param) {
        int found = 0;
        for (int p = 0; p < n_params; p++)
          if (strcmp(params[p].name, dm->dim_param) == 0) {
            found = 1;
            if (params[p].value != want) {
              wf_error_at("--input-shape", "dim '%s' is %lld for input '%s' but %lld for input '%s'", dm->dim_param,
                          (long long)params[p].value, params[p].from, (long long)want, ins[i]->name);
              rc = WF_EXIT_USAGE;
            }
          }
        if (!found) params[n_params++] = (param){dm->dim_param, want, ins[i]->name};
      }
    }
  }

  /* pass 2: the arguments */
  for (int i = 0; rc == WF_EXIT_OK && i < n; i++) {
    const Onnx__ValueInfoProto *vi = ins[i];
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
      wf_error_at(cx->path, "input '%s' is not a tensor (sequences, maps and optionals are not supported)", vi->name);
      rc = WF_EXIT_UNSUPPORTED;
      break;
    }
    int32_t et = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
    wf_dtype dt = WF_F32;
    int conv = 0;
    const wf_tensor *cval = NULL;
    for (int k = 0; k < o->n_const_inputs; k++)
      if (strcmp(o->const_input_names[k], vi->name) == 0) cval = o->const_input_values[k];
    if (ox_dtype_from_onnx(et, &dt, &conv) == 0 && conv == 1 && !cx->warned_f64) {
      wf_warning(wf_loc_make(cx->path, 0, 0), "double-precision input '%s' is computed in f32", vi->name);
      cx->warned_f64 = 1;
    }
    if (cval) { /* a value known at import time: a constant, checked against the declaration */
      const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
      if (cval->dtype != dt || (sh && (int)sh->n_dim != cval->rank)) {
        wf_type ct = wf_type_make(cval->dtype, cval->rank, cval->dims);
        wf_error_at(cx->path, "the value given for input '%s' is %s, which does not match its declared type %s of rank %d", vi->name,
                    ox_shape_str(&ct), ox_onnx_type_name(et), sh ? (int)sh->n_dim : -1);
        rc = WF_EXIT_INPUT;
        break;
      }
      ox_val *v = ox_const_new(cx, wf_tensor_clone(cval));
      v->name = wf_arena_strdup(cx->arena, vi->name);
      ox_bind(cx, vi->name, v);
      continue;
    }
    if (ox_dtype_from_onnx(et, &dt, &conv) != 0 || conv == 2) {
      wf_error_at(cx->path, "input '%s' has element type %s; waferc's inputs are f32, f16, bf16, i32, i64 or bool", vi->name,
                  ox_onnx_type_name(et));
      rc = WF_EXIT_UNSUPPORTED;
      break;
    }
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    wf_type t = wf_type_make(dt, 0, NULL);
    if (gi[i]) {
      t = wf_type_make(dt, gi[i]->rank, gi[i]->dims);
    } else if (!sh) {
      unresolved(cx, vi->name, -1, NULL);
      rc = WF_EXIT_INPUT;
      break;
    } else {
      if (sh->n_dim > WF_MAX_RANK) {
        wf_error_at(cx->path, "input '%s' has rank %zu (at most %d supported)", vi->name, sh->n_dim, WF_MAX_RANK);
        rc = WF_EXIT_UNSUPPORTED;
        break;
      }
      t.rank = (int)sh->n_dim;
      for (int d = 0; d < t.rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) {
          t.dims[d] = dm->dim_value;
          continue;
        }
        const char *pn = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dm->dim_param : NULL;
        int found = 0;
        for (int p = 0; pn && *pn && p < n_params; p++)
          if (strcmp(params[p].name, pn) == 0) t.dims[d] = params[p].value, found = 1;
        if (!found) {
          unresolved(cx, vi->name, d, pn);
          rc = WF_EXIT_INPUT;
          break;
        }
      }
    }
    if (rc) break;
    ox_val *v = ox_val_new(cx, &t);
    v->name = wf_arena_strdup(cx->arena, vi->name);
    v->v = wf_func_add_arg(cx->f, t, vi->name);
    ox_bind(cx, vi->name, v);
  }
  free(ins);
  free(gi);
  free(gv);
  free(params);
  return rc;
}
