/* Node attributes and constant inputs, as the op importers read them. An attribute of the
 * wrong type is reported at the node and marks it failed (import.c turns that into an
 * error), so importers can read attributes without checking each one. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

#define AT(x) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##x

const Onnx__AttributeProto *ox_attr(const ox_nctx *n, const char *name) {
  for (int i = 0; i < n->node->n_attr; i++)
    if (n->node->attr[i]->name && strcmp(n->node->attr[i]->name, name) == 0) return n->node->attr[i];
  return NULL;
}

/* Old models (IR version 1) leave the type unset; infer it from the field that is present. */
static int attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type && a->type != AT(UNDEFINED)) return a->type;
  if (a->has_f) return AT(FLOAT);
  if (a->has_i) return AT(INT);
  if (a->has_s) return AT(STRING);
  if (a->t) return AT(TENSOR);
  if (a->g) return AT(GRAPH);
  if (a->n_floats) return AT(FLOATS);
  if (a->n_ints) return AT(INTS);
  if (a->n_strings) return AT(STRINGS);
  return AT(UNDEFINED);
}

static const Onnx__AttributeProto *typed(const ox_nctx *n, const char *name, int type, const char *want) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a) return NULL;
  if (attr_type(a) != type) {
    ox_err(n, "attribute '%s' must be %s", name, want);
    ((ox_nctx *)n)->failed = 1;
    return NULL;
  }
  return a;
}

int64_t ox_attr_int(const ox_nctx *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = typed(n, name, AT(INT), "an int");
  return a ? a->i : dflt;
}

double ox_attr_float(const ox_nctx *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = typed(n, name, AT(FLOAT), "a float");
  return a ? a->f : dflt;
}

const char *ox_attr_str(const ox_nctx *n, const char *name, const char *dflt) {
  static char buf[4][256];
  static int next;
  const Onnx__AttributeProto *a = typed(n, name, AT(STRING), "a string");
  if (!a) return dflt;
  char *b = buf[next];
  next = (next + 1) % 4;
  size_t len = a->s.len < 255 ? a->s.len : 255;
  if (len) memcpy(b, a->s.data, len);
  b[len] = '\0';
  return b;
}

const int64_t *ox_attr_ints(const ox_nctx *n, const char *name, int *cnt) {
  *cnt = -1;
  const Onnx__AttributeProto *a = typed(n, name, AT(INTS), "a list of ints");
  if (!a) return NULL;
  *cnt = (int)a->n_ints;
  return a->ints;
}

int ox_attr_check_types(const ox_nctx *n) {
  for (int i = 0; i < n->node->n_attr; i++) {
    const Onnx__AttributeProto *a = n->node->attr[i];
    if (!a->name || !*a->name) {
      ox_err(n, "attribute %d has no name", i);
      return -1;
    }
    if (attr_type(a) == AT(UNDEFINED)) {
      ox_err(n, "attribute '%s' has no type and no value", a->name);
      return -1;
    }
  }
  return 0;
}

/* ---- inputs ------------------------------------------------------------------------------- */

ox_val *ox_in(ox_nctx *n, int i) {
  if (i < n->n_in && n->in[i]) return n->in[i];
  ox_err(n, "input %d is required but missing", i);
  n->failed = 1;
  return NULL;
}

int ox_in_ints(ox_nctx *n, int i, const char *what, int64_t **out, int *cnt) {
  *out = NULL;
  *cnt = 0;
  ox_val *v = ox_in(n, i);
  if (!v) return WF_EXIT_INPUT;
  if (!v->k) {
    return ox_unsupported(n, "input %d (%s) must be a constant once shapes are known, but it depends on a graph input",
                          i, what);
  }
  if (v->k->rank > 1 || (v->k->dtype != WF_I64 && v->k->dtype != WF_I32)) {
    ox_err(n, "input %d (%s) must be a 1-D int64 tensor, got %s", i, what, ox_shape_str(&v->type));
    return WF_EXIT_INPUT;
  }
  int64_t k = wf_tensor_numel(v->k);
  *out = malloc((size_t)(k + 1) * sizeof **out);
  WF_ASSERT(*out);
  for (int64_t j = 0; j < k; j++) (*out)[j] = ox_int_at(v->k, j);
  *cnt = (int)k;
  return WF_EXIT_OK;
}

int ox_in_float(ox_nctx *n, int i, const char *what, double *out) {
  ox_val *v = ox_in(n, i);
  if (!v) return WF_EXIT_INPUT;
  if (!v->k) return ox_unsupported(n, "input %d (%s) must be a constant", i, what);
  if (wf_tensor_numel(v->k) != 1) {
    ox_err(n, "input %d (%s) must hold one element, got %s", i, what, ox_shape_str(&v->type));
    return WF_EXIT_INPUT;
  }
  *out = wf_tensor_get(v->k, 0);
  return WF_EXIT_OK;
}
