/* NonZero as a bounded list (docs/onnx.md, "NonZero").
 *
 * NonZero's result has as many columns as its input has non-zero elements: a shape the data
 * decides, which a plan cannot have. Exporters write it for Hugging Face's MoE dispatch
 * (`idx, top_x = torch.where(expert_mask[e])`, then the tokens gathered, the expert run on
 * them and `index_add_` back), where what the graph computes does not depend on how many
 * entries the list has, only on which are valid. So the importer makes the list as long as it
 * can be, every position of the input in row-major order, valid or not: the coordinates are a
 * constant and the validity ([U] f32, 1 where the input is non-zero) a computed value beside
 * them. Every value computed from the list carries a tag, its dim that runs over the entries;
 * the ops between may only treat entries one by one (elementwise ops, gathers by the list,
 * matmuls on its rows, reshapes that keep the dim), and the list ends in a ScatterElements,
 * whose updates are multiplied by the validity there: an invalid entry adds zero. Any other
 * use (a reduction over the entries, a graph output, arithmetic on the list's length) could
 * see the invalid entries and is refused with exit 3, at the node.
 *
 * The cost: every entry is computed, valid or not (for the MoE dispatch, each expert runs on
 * k x T rows where torch runs it on those of its tokens). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"
#include "ir/rules.h"
#include "waferc/tensor.h"

struct ox_list {
  ox_val *valid;    /* f32 [len]: 1 for an entry of a non-zero element */
  int64_t len;
  const char *node; /* the NonZero, for messages */
};

static int in_set(const char *op, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(op, *set)) return 1;
  return 0;
}

/* Ops that map each element on its own (any number of inputs, numpy broadcasting). */
static const char *const k_elementwise[] = {
    "Identity", "Cast", "CastLike", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal",
    "Erf", "Sin", "Cos", "Softplus", "Gelu", "HardSigmoid", "LeakyRelu", "Elu", "Not", "Floor", "Ceil", "Round",
    "Sign", "Clip", "Dropout", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "LessOrEqual",
    "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where", "Mod", NULL};

/* Output i of the node bound to a copy of its value carrying the tag (a copy: folded
 * constants may be shared between nodes, and each list is its own). */
static void tag(ox_nctx *n, int i, const ox_list *l, int axis, int shape) {
  if (!ox_out_used(n, i)) return;
  ox_val *v = ox_lookup(n->cx, n->node->out[i]);
  if (!v) return;
  ox_val *c = wf_arena_alloc(n->cx->arena, sizeof *c);
  *c = *v;
  c->list = l;
  c->list_axis = axis;
  c->list_shape = shape;
  ox_set_out(n, i, c);
}

static int refuse(ox_nctx *n, const ox_list *l, const char *why) {
  return ox_unsupported(n, "%s, computed from the list NonZero '%s' makes (its length depends on the data; waferc "
                           "keeps every entry and needs each to stay on its own until a ScatterElements drops the "
                           "invalid ones: docs/onnx.md, \"NonZero\")",
                        why, l ? l->node : "?");
}

/* Every result of the node an integer constant: shape arithmetic. */
static int outputs_constant(ox_nctx *n) {
  for (int i = 0; i < ox_n_out(n); i++) {
    if (!ox_out_used(n, i)) continue;
    ox_val *v = ox_lookup(n->cx, n->node->out[i]);
    if (!v || !v->k) return 0;
  }
  return 1;
}

/* Reshape: where dim `a` of `in` lands in `out`, when the dims before it hold the same number
 * of elements in both and it keeps its size (each entry's elements stay its own); else -1. */
static int reshaped_axis(const wf_type *in, int a, const wf_type *out) {
  int64_t before = 1;
  for (int i = 0; i < a; i++) before *= in->dims[i];
  int64_t p = 1;
  for (int j = 0; j < out->rank; j++) {
    if (p == before && out->dims[j] == in->dims[a]) return j;
    p *= out->dims[j];
  }
  return -1;
}

static int is_op(const ox_node *nd, const char *op) { return nd && !nd->domain[0] && !strcmp(nd->op_type, op); }

/* Whether the 2-D input of NonZero node n is one expert's slice of a one-hot of top-k indices,
 * Hugging Face's `one_hot(topk(..).indices, N).permute(..)[e]`: Gather(Transpose(OneHot(I)),
 * e) with I a TopK's indices [T, k] (k last) and the expert axis gathered, maybe through a
 * Cast. Top-k indices of a row are distinct, so each token is in at most one of its k slots:
 * *kdim is the input's dim that runs over the slots (the other runs over the tokens). */
static int onehot_of_topk(ox_nctx *n, int *kdim) {
  ox_ctx *cx = n->cx;
  const ox_node *g = ox_producer(cx, n->node->in[0]);
  if (is_op(g, "Cast")) g = ox_producer(cx, g->in[0]);
  if (!is_op(g, "Gather") || g->n_in < 2) return 0;
  ox_nctx gn = {.cx = cx, .node = g, .opset = g->opset};
  const ox_val *e = ox_lookup(cx, g->in[1]);
  if (!e || !e->k || e->type.rank != 0 || ox_attr_int(&gn, "axis", 0) != 0 || gn.failed) return 0;
  const ox_node *t = ox_producer(cx, g->in[0]);
  if (!is_op(t, "Transpose")) return 0;
  ox_nctx tn = {.cx = cx, .node = t, .opset = t->opset};
  int cnt;
  const int64_t *perm = ox_attr_ints(&tn, "perm", &cnt);
  const ox_node *o = ox_producer(cx, t->in[0]);
  if (!is_op(o, "OneHot") || o->n_in < 3 || cnt != 3 || tn.failed) return 0;
  ox_nctx on = {.cx = cx, .node = o, .opset = o->opset};
  int64_t oax = ox_attr_int(&on, "axis", -1);
  const ox_val *vals = ox_lookup(cx, o->in[2]), *idx = ox_lookup(cx, o->in[0]);
  if (on.failed || (oax != -1 && oax != 2) || !vals || !vals->k || wf_tensor_numel(vals->k) != 2 || !idx ||
      idx->type.rank != 2 || wf_tensor_get(vals->k, 0) != 0 || wf_tensor_get(vals->k, 1) == 0)
    return 0;
  const ox_node *k = ox_producer(cx, o->in[0]);
  if (!is_op(k, "TopK") || k->n_out < 2 || strcmp(k->out[1], o->in[0])) return 0;
  ox_nctx kn = {.cx = cx, .node = k, .opset = k->opset};
  int64_t kax = ox_attr_int(&kn, "axis", -1);
  if (kn.failed || (kax != -1 && kax != 1)) return 0;
  /* the one-hot [T, k, N] permuted with N first; the slice's dims are perm[1], perm[2] */
  if (perm[0] != 2 || !((perm[1] == 0 && perm[2] == 1) || (perm[1] == 1 && perm[2] == 0))) return 0;
  *kdim = perm[1] == 1 ? 0 : 1;
  return 1;
}

/* The list of a one-hot slice of top-k indices (onehot_of_topk): one entry per token, its slot
 * computed (the sum of j over the slots holding it), valid when some slot does: T entries
 * instead of k T. Fills the coordinates [2, T] (i64) and the validity [T]. */
static int token_list(ox_nctx *n, ox_val *f, int kdim, ox_val **coords, ox_val **valid) {
  int64_t kk = f->type.dims[kdim], tt = f->type.dims[1 - kdim];
  /* W holds j and 1 per slot: [2, k] (kdim 0: W·M) or [k, 2] (kdim 1: M·W, transposed), so
   * that the product's rows are the slot and the count of each token */
  int64_t wd[2] = {kdim ? kk : 2, kdim ? 2 : kk}, td[2] = {1, tt};
  wf_tensor *wt = wf_tensor_new(WF_F32, 2, wd), *tk = wf_tensor_new(WF_F32, 2, td);
  float *w = wt->data;
  for (int64_t i = 0; i < kk; i++) {
    w[kdim ? i * 2 : i] = (float)i;
    w[kdim ? i * 2 + 1 : kk + i] = 1.0f;
  }
  for (int64_t i = 0; i < tt; i++) ((float *)tk->data)[i] = (float)i;
  ox_val *wv = ox_const_new(n->cx, wt), *tv = ox_const_new(n->cx, tk);
  ox_val *sc = ox_emit1(n, WF_OP_MATMUL, 2, kdim ? (ox_val *[]){f, wv} : (ox_val *[]){wv, f}, 0, NULL, NULL);
  if (sc && kdim) sc = ox_transpose(n, sc, 2, (int64_t[]){1, 0});
  if (!sc) return WF_EXIT_INPUT;
  ox_val *row[2];
  for (int64_t i = 0; i < 2; i++) {
    int64_t st = i, en = i + 1, axis = 0, step = 1;
    ox_attrv at[4] = {OX_A_INTS("starts", 1, &st), OX_A_INTS("ends", 1, &en), OX_A_INTS("axes", 1, &axis),
                      OX_A_INTS("steps", 1, &step)};
    if (!(row[i] = ox_emit1(n, WF_OP_SLICE, 1, &sc, 4, at, NULL))) return WF_EXIT_INPUT;
  }
  ox_val *parts[2];
  parts[kdim] = row[0]; /* the coordinate along the slots: the slot; along the tokens: the token */
  parts[1 - kdim] = tv;
  ox_attrv ax = OX_A_INT("axis", 0);
  ox_val *c = ox_emit1(n, WF_OP_CONCAT, 2, parts, 1, &ax, NULL);
  *coords = c ? ox_cast(n, c, WF_I64) : NULL;
  *valid = ox_reshape(n, row[1], 1, &tt);
  return *coords && *valid ? 0 : WF_EXIT_INPUT;
}

int ox_imp_nonzero(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int r = x->type.rank;
  if (r < 1) return ox_unsupported(n, "a rank-0 input");
  int64_t len = 1;
  for (int i = 0; i < r; i++) len *= x->type.dims[i];
  if (len < 1) return ox_unsupported(n, "an empty input %s", ox_shape_str(&x->type));
  if (x->k) { /* the input known: the exact list */
    int64_t cnt = 0;
    for (int64_t e = 0; e < len; e++) cnt += wf_tensor_get(x->k, e) != 0;
    int64_t d[2] = {r, cnt};
    wf_tensor *t = wf_tensor_new(WF_I64, 2, d);
    int64_t *o = t->data, j = 0;
    for (int64_t e = 0; e < len; e++) {
      if (wf_tensor_get(x->k, e) == 0) continue;
      for (int64_t rem = e, i = r - 1; i >= 0; i--) {
        o[i * cnt + j] = rem % x->type.dims[i];
        rem /= x->type.dims[i];
      }
      j++;
    }
    return ox_set_out(n, 0, ox_const_new(n->cx, t));
  }
  /* every position, in row-major order, and which are valid */
  if (len > (INT64_C(1) << 24) || ox_host_budget(n->cx, (int64_t)r * len * 8))
    return ox_unsupported(n, "an input of %lld elements: its list of every position passes the host budget of %s",
                          (long long)len, OX_HOST_BUDGET_TEXT);
  int64_t d[2] = {r, len};
  wf_tensor *t = wf_tensor_new(WF_I64, 2, d);
  int64_t *o = t->data;
  for (int64_t e = 0; e < len; e++)
    for (int64_t rem = e, i = r - 1; i >= 0; i--) {
      o[i * len + e] = rem % x->type.dims[i];
      rem /= x->type.dims[i];
    }
  ox_val *m = x->type.dtype == WF_BOOL ? x : ox_cast(n, x, WF_BOOL);
  ox_val *f = m ? ox_cast(n, m, WF_F32) : NULL;
  ox_val *valid = NULL, *coords = NULL;
  int kdim;
  if (f && r == 2 && onehot_of_topk(n, &kdim)) { /* one entry per token */
    wf_tensor_free(t);
    int rc = token_list(n, f, kdim, &coords, &valid);
    if (rc) return rc;
    len = x->type.dims[1 - kdim];
  } else {
    valid = f ? ox_reshape(n, f, 1, &len) : NULL;
    coords = valid ? ox_const_new(n->cx, t) : NULL;
    if (!coords) wf_tensor_free(t);
  }
  if (!valid || !coords) return WF_EXIT_INPUT;
  ox_list *l = wf_arena_alloc(n->cx->arena, sizeof *l);
  l->valid = valid;
  l->len = len;
  const char *who = n->node->name && n->node->name[0] ? n->node->name
                    : n->node->n_out > 0 && n->node->out[0][0] ? n->node->out[0] : "(unnamed)";
  l->node = wf_arena_strdup(n->cx->arena, who); /* (a node may name neither itself nor an output) */
  int rc = ox_set_out(n, 0, coords);
  if (rc) return rc;
  tag(n, 0, l, 1, 0);
  return 0;
}

int ox_list_after(ox_nctx *n) {
  const ox_list *l = NULL;
  int a = -1, ai = -1, shape = 0;
  for (int i = 0; i < n->n_in; i++) {
    const ox_val *v = n->in[i];
    if (!v) continue;
    if (v->list_shape) shape = 1;
    if (!v->list) continue;
    if (l && v->list != l) return refuse(n, l, "two lists meet");
    l = v->list;
    if (a < 0) {
      a = v->list_axis;
      ai = i;
    }
  }
  const char *op = n->node->op_type;
  if (!l) {
    if (!shape || outputs_constant(n)) { /* shape arithmetic stays tagged */
      if (shape)
        for (int i = 0; i < ox_n_out(n); i++) tag(n, i, NULL, -1, 1);
      return 0;
    }
    /* a length computed from the list may only shape a value */
    for (int i = 0; i < n->n_in; i++)
      if (n->in[i] && n->in[i]->list_shape && !(i == 1 && (!strcmp(op, "Reshape") || !strcmp(op, "Expand"))))
        return refuse(n, NULL, "a length");
    return 0;
  }
  if (!strcmp(op, "NonZero")) return refuse(n, l, "NonZero of a list");
  if (!strcmp(op, "ScatterElements") || !strcmp(op, "ScatterND")) /* the end: ox_list_scatter masked it */
    return n->in[0] && n->in[0]->list ? refuse(n, l, "a scatter into data") : 0;
  if (!strcmp(op, "Shape") || !strcmp(op, "Size")) {
    tag(n, 0, NULL, -1, 1);
    return 0;
  }
  ox_val *x = n->in[ai], *y = ox_out_used(n, 0) ? ox_lookup(n->cx, n->node->out[0]) : NULL;
  if (!y) return 0;
  int rank = x->type.rank, out = -1;
  if (in_set(op, k_elementwise)) {
    /* numpy broadcasting aligns the last dims: every tagged input must put the list on the
     * same dim of the result */
    for (int i = 0; i < n->n_in; i++) {
      const ox_val *v = n->in[i];
      if (!v || !v->list) continue;
      int o = v->list_axis + y->type.rank - v->type.rank;
      if (out >= 0 && o != out) return refuse(n, l, "two inputs hold the list on different dims");
      out = o;
    }
  } else if (!strcmp(op, "Transpose")) {
    int cnt;
    const int64_t *perm = ox_attr_ints(n, "perm", &cnt);
    for (int j = 0; j < rank; j++)
      if ((cnt < 0 ? rank - 1 - j : (int)perm[j]) == a) out = j;
  } else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strcmp(op, "Reshape") || !strcmp(op, "Flatten") ||
             !strcmp(op, "Expand")) {
    if (ai != 0) return refuse(n, l, "a shape");
    if (!strcmp(op, "Expand")) {
      out = a + y->type.rank - rank;
      if (y->type.dims[out] != x->type.dims[a]) out = -1;
    } else {
      out = reshaped_axis(&x->type, a, &y->type);
    }
  } else if (!strcmp(op, "Split")) {
    if (wf_norm_axis(ox_attr_int(n, "axis", 0), rank) == a || ai != 0) return refuse(n, l, "a split along the list");
    for (int i = 0; i < ox_n_out(n); i++) tag(n, i, l, a, 0);
    return 0;
  } else if (!strcmp(op, "Concat")) {
    if (wf_norm_axis(ox_attr_int(n, "axis", 0), rank) == a) return refuse(n, l, "a concat along the list");
    for (int i = 0; i < n->n_in; i++)
      if (n->in[i] && n->in[i]->list && n->in[i]->list_axis != a) return refuse(n, l, "inputs holding the list on different dims");
    out = a;
  } else if (!strcmp(op, "Gather")) {
    int axis = wf_norm_axis(ox_attr_int(n, "axis", 0), n->in[0]->type.rank);
    if (ai == 1 && !n->in[0]->list) out = axis + a; /* rows picked by the entries */
    else if (ai == 0 && !(n->in[1] && n->in[1]->list) && axis != a)
      out = a < axis ? a : a + n->in[1]->type.rank - 1;
    else return refuse(n, l, "a gather along the list");
  } else if (!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) {
    int trans = !strcmp(op, "Gemm") && ox_attr_int(n, "transA", 0);
    if (ai != 0 || (n->in[1] && n->in[1]->list) || (n->n_in > 2 && n->in[2] && n->in[2]->list) || rank < 2 ||
        a > rank - 2 || trans)
      return refuse(n, l, "a product over the list");
    out = a + y->type.rank - rank;
  } else if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
    if (wf_norm_axis(ox_attr_int(n, "axis", n->opset < 13 ? 1 : -1), rank) == a || (n->opset < 13))
      return refuse(n, l, "a softmax over the list");
    out = a;
  } else if (!strcmp(op, "LayerNormalization")) {
    if (ai != 0 || a >= wf_norm_axis(ox_attr_int(n, "axis", -1), rank)) return refuse(n, l, "a normalization over the list");
    out = a;
  } else {
    char why[96];
    snprintf(why, sizeof why, "%s of a value", op);
    return refuse(n, l, why);
  }
  if (out < 0 || out >= y->type.rank || y->type.dims[out] != l->len) return refuse(n, l, "an op that moves the entries");
  tag(n, 0, l, out, 0);
  return 0;
}

static int all_zero(const wf_tensor *k) {
  for (int64_t i = 0, cnt = wf_tensor_numel(k); i < cnt; i++)
    if (wf_tensor_get(k, i) != 0) return 0;
  return 1;
}

int ox_list_scatter(ox_nctx *n, ox_val **ins, int64_t axis, char *red, size_t red_cap) {
  ox_val *idx = ins[1], *upd = ins[2];
  if (!idx->list) return 0;
  const ox_list *l = idx->list;
  if (ins[0]->list) return refuse(n, l, "a scatter into data");
  if (upd->list && upd->list_axis != idx->list_axis) return refuse(n, l, "updates holding the list on another dim");
  if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul"))
    return refuse(n, l, "ScatterElements with reduction max or min");
  int64_t vd[WF_MAX_RANK];
  for (int i = 0; i < idx->type.rank; i++) vd[i] = i == idx->list_axis ? l->len : 1;
  ox_val *v = ox_reshape(n, l->valid, idx->type.rank, vd);
  if (v && upd->type.dtype != WF_F32) v = ox_cast(n, v, upd->type.dtype);
  ox_val *one = ox_scalar(n, upd->type.dtype, 1.0);
  ox_val *inv = v && one ? ox_emit1(n, WF_OP_SUB, 2, (ox_val *[]){one, v}, 0, NULL, NULL) : NULL; /* 1 - v */
  if (!inv) return WF_EXIT_INPUT;
  if (!strcmp(red, "none")) {
    /* valid entries write distinct places (ONNX leaves duplicates undefined): the places they
     * write are cleared first (a product with 1 - v, which an invalid entry leaves alone),
     * then the valid updates added; into a constant of zeros the clearing is not needed */
    if (!ins[0]->k || !all_zero(ins[0]->k)) {
      wf_type t = idx->type;
      t.dtype = upd->type.dtype;
      ox_val *clr = ox_emit1(n, WF_OP_EXPAND, 1, &inv, 0, NULL, &t);
      ox_attrv at[2] = {OX_A_INT("axis", axis), OX_A_IDENT("reduction", "mul")};
      ox_val *d = clr ? ox_emit1(n, WF_OP_SCATTER_ELEMENTS, 3, (ox_val *[]){ins[0], idx, clr}, 2, at, NULL) : NULL;
      if (!d) return WF_EXIT_INPUT;
      ins[0] = d;
    }
    snprintf(red, red_cap, "add");
  }
  ox_val *m = ox_emit1(n, WF_OP_MUL, 2, (ox_val *[]){upd, v}, 0, NULL, NULL);
  if (m && !strcmp(red, "mul")) /* an invalid entry multiplies by one: upd v + (1 - v) */
    m = ox_emit1(n, WF_OP_ADD, 2, (ox_val *[]){m, inv}, 0, NULL, NULL);
  if (!m) return WF_EXIT_INPUT;
  ins[2] = m;
  return 0;
}

ox_val *ox_list_retag(ox_nctx *n, ox_val *v, const ox_val *from) {
  if (!v || !from->list) return v;
  int a = reshaped_axis(&from->type, from->list_axis, &v->type);
  if (a < 0 && v->type.rank == from->type.rank && v->type.dims[from->list_axis] == from->type.dims[from->list_axis])
    a = from->list_axis; /* an expand keeps it */
  if (a < 0) {
    refuse(n, from->list, "a reshape that moves the entries");
    return NULL;
  }
  ox_val *c = wf_arena_alloc(n->cx->arena, sizeof *c);
  *c = *v;
  c->list = from->list;
  c->list_axis = a;
  return c;
}

int ox_list_output(ox_ctx *cx, const char *name, wf_loc loc) {
  const ox_val *v = ox_lookup(cx, name);
  if (!v || (!v->list && !v->list_shape)) return 0;
  wf_error(loc, "graph output '%s' is computed from the list NonZero '%s' makes, entry by entry, invalid entries "
                "included: waferc needs a scatter (ScatterElements, ScatterND) to drop them (docs/onnx.md, \"NonZero\")",
           name, v->list ? v->list->node : "?");
  return WF_EXIT_UNSUPPORTED;
}
