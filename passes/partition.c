/* partition — gives every tensor of the entry function a layout on one region, @mesh, that
 * covers the compile's mesh. The rule (docs/partition.md) is deliberately simple:
 *
 *   rank 2  [R, C]        ->  {M_y, N_x}      rows split along y, columns along x
 *   rank 1  [C]           ->  {N_x}           split along x, held by every row
 *   rank r  [B.., R, C]   ->  {B.., M_y, N_x} leading dims whole
 *   a dim of size 1 is never split: [1, N] -> {M, N_x}, every PE holds it
 *
 * It is uniform on purpose: for C = A·B the operands come out as A {M_y, K_x} and
 * B {K_y, N_x}, exactly the blocks the broadcast GEMM lowerings multicast along rows and
 * columns; elementwise ops, biases and scales see matching blocks, and reductions over the
 * last two axes reduce along x or y. A reduction without keepdims keeps its input's splits.
 * slice, concat and split need nothing special: their operands and results take the same
 * rule, so they differ only along the cut axis (backend/ops/lower_slice.c moves the data).
 * `gemm` is first decomposed into transpose/matmul/mul/add (decompose_gemm.c), a
 * matrix-vector matmul into mul/reduce_sum (decompose_matvec.c); a vector-matrix result
 * [.., N] keeps its leading dims whole. A split dim
 * the mesh side does not divide is padded (blocks of ceil(D/p), partition_pad.c checks no
 * padding leaks into results); scalar constants and arguments become [1] tensors
 * (widen_scalar_args), and so do scalars computed inside the graph (widen_computed_scalars:
 * a reduction over every axis keeps its dims). Integer and bool tensors are f32 words on the
 * PEs, allowed where they stay exact (wf_int_words_ok, ir/rules.h); they take the rule's
 * layout, but the token ids of a gather, a function argument laid out like the gather's rows
 * ({B, L_y}, held by every PE of a row; gather_ids). An argmax's i64 result and topk's i64
 * indices are laid out by the rule like its values (lower_topk.c);
 * its table, a constant [V, E], is held as {V, E_x} (E split like the
 * activations, every row of PEs holds all V rows), or {V_y, E_x} when it is tied to an LM head
 * or too large for that, with the ids then whole on every PE (partition_table.c). */
#include <stdio.h>
#include <string.h>

#include "ir/rules.h"
#include "passes/decompose.h"
#include "passes/partition.h"
#include "passes/partition_decode.h"
#include "passes/partition_pad.h"
#include "passes/partition_table.h"
#include "waferc/pass.h"

static const wf_pass_option partition_opts[] = {
    {"mesh", WF_OPT_STRING, "", "WxH of the region to partition over (default: the target's mesh)"},
    {"tie-heads", WF_OPT_BOOL, "true",
     "an LM head whose weight is the embedding table transposed multiplies by the table (one copy: dist.gemm_t, "
     "or dist.gemv_t in a decode step)"},
};
static const char *const partition_stats[] = {"values-partitioned", "tied-heads"};

typedef struct {
  wf_module *m;
  int region, w, h;
  int errors;
} pctx;

int wf_pass_mesh(wf_pass_ctx *ctx, const char *pass, int *w, int *h) {
  const wf_target *t = wf_pass_target(ctx);
  const char *mesh = wf_pass_opt_str(ctx, "mesh");
  char tail;
  *w = t->mesh_w, *h = t->mesh_h;
  if (!mesh || !*mesh) return 0;
  if (sscanf(mesh, "%dx%d%c", w, h, &tail) == 2 && *w > 0 && *h > 0) return 0;
  wf_error_at(pass, "bad mesh option '%s': expected WxH", mesh);
  return WF_EXIT_USAGE;
}

/* The layout for a type under the rule above, or an error at loc. int_ok: an integer or bool
 * tensor is allowed here (wf_int_words_ok, which is 0 for any other dtype). */
static int layout_for_dt(pctx *c, wf_type *t, wf_loc loc, const char *what, int int_ok) {
  if (t->dtype != WF_F32 && !int_ok) {
    wf_error(loc, "partition: %s has dtype %s; the mesh holds f32, and integers and bools only where they "
                  "stay exact f32 words (ir/rules.h, wf_int_words_ok)", what, wf_dtype_name(t->dtype));
    return -1;
  }
  if (t->rank < 1) {
    wf_error(loc, "partition: %s is a rank-0 scalar; only tensors of rank 1 and above are "
                  "supported (a one-element [1] tensor is)", what);
    return -1;
  }
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] == 0) {
      wf_error(loc, "partition: %s has no element (dim %d is 0); empty tensors have no mesh lowering (the "
                    "reference interpreter, waferc --interpret, runs them)", what, d);
      return -1;
    }
  static const char *const lead[] = {"B", "C", "D", "F", "G", "H"};
  wf_layout l;
  memset(&l, 0, sizeof l);
  l.rank = t->rank;
  l.region = c->region;
  for (int d = 0; d < t->rank; d++) {
    int from_end = t->rank - 1 - d;
    const char *label = from_end == 0 ? "N" : from_end == 1 ? "M" : lead[d % 6];
    /* Size-1 dims stay whole: every PE holds them (a [1, N] bias, a [M, 1] statistic). */
    uint8_t split = t->dims[d] == 1 || from_end > 1 ? WF_AXIS_NONE
                    : from_end == 0                 ? WF_AXIS_X
                                                    : WF_AXIS_Y;
    l.dims[d] = (wf_layout_dim){wf_intern(c->m, label), split, WF_AXIS_NONE};
  }
  t->layout = l;
  return 0;
}

/* A function argument used only as the indices of gathers (the token ids): laid out like the
 * gathers' rows (ids_layout), its PEs hold them as f32 row numbers (the host converts them
 * when it loads the plan's inputs). */
static int gather_ids(const wf_func *f, wf_value v) {
  const wf_value_info *vi = &f->values[v];
  if (vi->kind != WF_VAL_ARG) return 0;
  int uses = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
    if (op->operands[i] != v) continue;
    if (op->code == WF_OP_RETURN) continue;
    if (op->code != WF_OP_GATHER || i != 1) return 0;
    uses++;
  }
  return uses > 0;
}

/* A gather's ids [.., L] take the layout of its result's rows ([.., L, E] -> {.., L_y, E_x}
 * without E): every dim whole but the last, split along y; every PE of a row holds them.
 * whole: the ids of a table with split rows, which every PE holds whole (partition_table.c). */
static void ids_layout(wf_module *m, wf_type *t, int whole) {
  static const char *const lead[] = {"B", "C", "D", "F", "G", "H"};
  for (int d = 0; d < t->rank; d++) {
    int last = d == t->rank - 1;
    t->layout.dims[d].split = last && t->dims[d] != 1 && !whole ? WF_AXIS_Y : WF_AXIS_NONE;
    t->layout.dims[d].label = wf_intern(m, last ? "M" : lead[d % 6]); /* the result's labels */
  }
}

/* Records which arguments or results (indices) were rank-0 scalars before they became [1]:
 * the module attribute `name` (the plan's interface keeps them rank 0: backend/plan/manifest.c). */
static void note_scalars(wf_module *m, const char *name, int n, int64_t *idx) {
  if (n) wf_module_set_attr(m, (wf_attr){wf_intern(m, name), WF_ATTR_INTS, {.ints = {n, idx}}});
}

/* A rank-0 f32 argument (ONNX Gemm's scalar C) becomes a one-element [1] tensor, as scalar
 * constants do: it broadcasts as the scalar did and every PE holds it. Ops whose rank-0
 * results came from such arguments get their types inferred again ([1]), and so does a
 * function result that returns one. The module attributes `scalar_args` and
 * `scalar_results` list them, so the plan still reads and writes rank-0 arrays. Runs before
 * the decompositions, so the ops they build see [1]. */
static void widen_scalar_args(wf_module *m, wf_func *f) {
  int64_t *idx = wf_arena_alloc(m->arena, (size_t)(f->n_args + 1) * sizeof *idx);
  int n = 0;
  for (int i = 0; i < f->n_args; i++) {
    wf_type *t = wf_value_type(f, f->args[i]);
    if (t->rank != 0 || t->dtype != WF_F32) continue;
    t->rank = 1;
    t->dims[0] = 1;
    idx[n++] = i;
  }
  if (!n) return;
  note_scalars(m, "scalar_args", n, idx);
  wf_func_foreach_op(f, op) {
    int scalar = 0, widened = 0;
    for (int i = 0; i < op->n_results; i++) scalar |= wf_value_type(f, op->results[i])->rank == 0;
    for (int i = 0; i < op->n_operands; i++) {
      const wf_type *t = wf_value_type(f, op->operands[i]);
      widened |= t->rank == 1 && t->dims[0] == 1;
    }
    wf_type out[8];
    if (!scalar || !widened || op->code == WF_OP_RETURN || op->n_results > 8 || wf_infer_result_types(f, op, out))
      continue;
    for (int i = 0; i < op->n_results; i++) {
      wf_type *t = wf_value_type(f, op->results[i]);
      if (t->rank == 0 && out[i].rank == 1 && out[i].dims[0] == 1) *t = out[i];
    }
  }
}

/* A layernorm or rmsnorm over the dims from axis a (ONNX LayerNormalization's axis), a not the
 * last: the normalized dims flattened into one, normalized over the last axis (the lowering's,
 * lower_norm.c), reshaped back; scale and bias expanded to those dims first when they
 * broadcast, then flattened the same way. The reshapes are laid out by the rule like any other
 * (small ones gathered whole: lower_reshape_whole.c). */
static void norm_last_axis(wf_func *f) {
  int n_rewritten = 0;
  wf_func_foreach_op(f, op) {
    if (op->code != WF_OP_LAYERNORM && op->code != WF_OP_RMSNORM) continue;
    const wf_type *xt = wf_value_type(f, op->operands[0]);
    int64_t a = wf_op_int(f, op, "axis", -1);
    if (a < 0) a += xt->rank;
    if (a < 0 || a >= xt->rank - 1) continue;
    wf_type flat = wf_rewrite_type(xt), vec = flat;
    int64_t P = 1;
    for (int d = (int)a; d < xt->rank; d++) P *= xt->dims[d];
    flat.rank = (int)a + 1, flat.dims[a] = P;
    vec.rank = 1, vec.dims[0] = P;
    wf_value ops[3];
    ops[0] = wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &op->operands[0], flat, op->loc);
    for (int i = 1; i < op->n_operands; i++) {
      wf_value p = op->operands[i];
      const wf_type *pt = wf_value_type(f, p);
      if (wf_type_numel(pt) != P) { /* broadcast over the normalized dims: written out first */
        wf_type full = wf_rewrite_type(xt);
        full.rank = xt->rank - (int)a;
        for (int d = 0; d < full.rank; d++) full.dims[d] = xt->dims[a + d];
        full.dtype = pt->dtype;
        p = wf_op_insert_new(f, op, WF_OP_EXPAND, 1, &p, full, op->loc);
      }
      vec.dtype = pt->dtype;
      ops[i] = wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &p, vec, op->loc);
    }
    wf_value n = wf_op_insert_new(f, op, op->code, op->n_operands, ops, flat, op->loc);
    wf_op *nop = f->values[n].def;
    wf_op_set_int(f, nop, "axis", -1);
    const wf_attr *eps = wf_op_attr(f, op, "epsilon");
    if (eps) wf_op_set_attr(f, nop, *eps);
    wf_value_replace_uses(f, op->results[0],
                          wf_op_insert_new(f, op, WF_OP_RESHAPE, 1, &n, wf_rewrite_type(xt), op->loc));
    n_rewritten++;
  }
  if (n_rewritten) wf_func_remove_dead_ops(f);
}

static int is_reduce(wf_opcode c) {
  return c == WF_OP_REDUCE_SUM || c == WF_OP_REDUCE_MEAN || c == WF_OP_REDUCE_MAX;
}

/* Rank-0 values computed inside the graph become [1] tensors as well: a reduction over every
 * axis without keepdims keeps its dims instead ([1] of a vector; [1, 1] of a matrix, then a
 * reshape to [1] takes the rank-0 value's place), which covers a 1-D · 1-D matmul
 * (decompose_matvec makes it mul + reduce_sum); a reshape of a one-element tensor to a
 * scalar gives [1]; an op computing a rank-0 value from [1] ones is inferred again. Runs
 * after the decompositions. Then every rank-0 function result now held as [1] is listed in
 * `scalar_results` (with those of widen_scalar_args), so the plan still writes a rank-0
 * array. What stays rank 0 is rejected by layout_for. */
static void widen_computed_scalars(wf_module *m, wf_func *f) {
  static const int64_t ones[WF_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
  wf_func_foreach_op(f, op) {
    if (op->code == WF_OP_RETURN || op->n_results != 1 || op->n_operands < 1) continue;
    wf_type *t = wf_value_type(f, op->results[0]);
    /* an argmax of a vector (the next token of one row of logits) is an i64 scalar */
    if (t->rank != 0 || (t->dtype != WF_F32 && op->code != WF_OP_ARGMAX)) continue;
    const wf_type *in = wf_value_type(f, op->operands[0]);
    if ((is_reduce(op->code) || op->code == WF_OP_ARGMAX) && in->rank >= 1 && in->dtype == WF_F32) {
      wf_op_set_attr(f, op, (wf_attr){wf_intern(m, "keepdims"), WF_ATTR_BOOL, {.i = 1}});
      *t = wf_type_make(t->dtype, in->rank, ones);
      if (in->rank == 1) continue;
      wf_value kept = op->results[0];
      wf_type one = wf_type_make(WF_F32, 1, ones);
      wf_op *rs = wf_op_new(f, WF_OP_RESHAPE, 1, &kept, 1, &one, op->loc);
      wf_value y = rs->results[0];
      wf_value_replace_uses(f, kept, y); /* the reshape is not linked yet: its operand stays */
      wf_op_insert_after(f, op, rs);
      if (f->values[kept].name) { /* the result keeps the name (an ONNX output's) */
        char name[256], buf[300];
        snprintf(name, sizeof name, "%s", wf_str(m, f->values[kept].name));
        snprintf(buf, sizeof buf, "%s.keepdims", name);
        wf_value_set_name(f, y, name);
        wf_value_set_name(f, kept, buf);
      }
      continue;
    }
    int64_t numel = 1;
    for (int d = 0; d < in->rank; d++) numel *= in->dims[d];
    if (op->code == WF_OP_RESHAPE && numel == 1) {
      *t = wf_type_make(WF_F32, 1, ones);
      continue;
    }
    wf_type out[1];
    if (!wf_infer_result_types(f, op, out) && out[0].rank == 1 && out[0].dims[0] == 1) *t = out[0];
  }
  const wf_op *ret = wf_func_return(f);
  int64_t *idx = wf_arena_alloc(m->arena, (size_t)(f->n_results + 1) * sizeof *idx);
  int n = 0;
  for (int i = 0; ret && i < f->n_results && i < ret->n_operands; i++) {
    const wf_type *t = wf_value_type(f, ret->operands[i]);
    if (f->result_types[i].rank != 0 || t->rank != 1 || t->dims[0] != 1) continue;
    f->result_types[i] = *t;
    idx[n++] = i;
  }
  note_scalars(m, "scalar_results", n, idx);
}

/* A reduction keeps the split of every dim it does not reduce (without keepdims its result
 * [M] of X[M, N] {M_y, N_x} is {M_y}, not the default rank-1 {M_x}; with them the kept dims
 * follow X even when X's layout is not the default one), so its PE block is exactly the
 * statistic of X's block (backend/ops/lower_reduce_ops.c). */
static void reduce_layout(const wf_func *f, const wf_op *op, wf_type *rt) {
  const wf_type *in = wf_value_type(f, op->operands[0]);
  int keep = wf_op_int(f, op, "keepdims", 1) != 0;
  if (in->layout.rank != in->rank || (keep && rt->rank != in->rank)) return;
  unsigned red = 0;
  if (op->code == WF_OP_ARGMAX) { /* one axis, as an attribute of its own */
    int64_t a = wf_op_int(f, op, "axis", 0);
    a = a < 0 ? a + in->rank : a;
    if (a >= 0 && a < in->rank) red = 1u << a;
  }
  const wf_attr *axes = op->code == WF_OP_ARGMAX ? NULL : wf_op_attr(f, op, "axes");
  for (int i = 0; axes && i < axes->u.ints.n; i++) {
    int64_t a = axes->u.ints.v[i] < 0 ? axes->u.ints.v[i] + in->rank : axes->u.ints.v[i];
    if (a >= 0 && a < in->rank) red |= 1u << a;
  }
  if (!red) red = (1u << in->rank) - 1;
  int k = 0;
  for (int d = 0; d < in->rank && k < rt->rank; d++) {
    if (!(red >> d & 1)) rt->layout.dims[k] = in->layout.dims[d];
    if (!(red >> d & 1) || keep) k++;
  }
}

/* An elementwise op on a vector that keeps a reduction's split ([M] {M_y} of an argmax over
 * the last axis) follows that operand instead of the default {N_x}: `argmax(p, -1) == e`, a
 * top-1 router's mask, stays where its rows are. */
static void vector_follows(const wf_func *f, const wf_op *op, wf_type *rt) {
  if (!(wf_opinfos[op->code].flags & WF_OPF_ELEMENTWISE) || rt->rank != 1 || rt->layout.rank != 1) return;
  for (int i = 0; i < op->n_operands; i++) {
    const wf_type *t = wf_value_type(f, op->operands[i]);
    if (t->rank == 1 && t->dims[0] == rt->dims[0] && t->layout.rank == 1 &&
        t->layout.dims[0].split != rt->layout.dims[0].split) {
      rt->layout.dims[0] = t->layout.dims[0];
      return;
    }
  }
}

/* A vector-matrix product a[K] . B[.., K, N] is a one-row GEMM per matrix of B: its result
 * [.., N] keeps B's batch dims whole (the default would split the first along y) and N
 * split along x, as the row [1, N] the GEMM writes (lower_gemm_batched.c). */
static void vecmat_layout(const wf_func *f, const wf_op *op, wf_type *rt) {
  if ((op->code != WF_OP_MATMUL && op->code != WF_OP_DIST_GEMM) ||
      wf_value_type(f, op->operands[0])->rank != 1)
    return;
  for (int d = 0; d + 1 < rt->rank; d++) rt->layout.dims[d].split = WF_AXIS_NONE;
}

/* kv_switch{swap = 1} (the prefill->decode switch of a weight that decode holds in the other
 * axes, {K_x, N_y}): its result [cols, rows] is laid out {C_x, R_y}, each PE's block the
 * decode weight's. */
static void switch_layout(const wf_func *f, const wf_op *op, wf_type *rt) {
  if (op->code != WF_OP_KV_SWITCH || !wf_op_int(f, op, "swap", 0) || rt->rank != 2 || rt->layout.rank != 2) return;
  rt->layout.dims[0].split = WF_AXIS_X;
  rt->layout.dims[1].split = WF_AXIS_Y;
}

/* The packed attention's tensors (head-layout) print in WaferLLM's notation with the heads:
 * {B, L_y, HD_x}, E = H·D along x (docs/attention.md). The split is partition's rule; only the
 * labels say what the columns hold. */
static void label_heads(wf_module *m, wf_func *f) {
  uint32_t b = wf_intern(m, "B"), l = wf_intern(m, "L"), hd = wf_intern(m, "HD");
  wf_func_foreach_op(f, op) {
    if (!(op->code == WF_OP_ATTENTION && wf_op_int(f, op, "heads", 0) > 0) && op->code != WF_OP_ROTATE_PAIRS)
      continue;
    wf_value vs[4] = {op->results[0], op->operands[0], op->operands[1], op->operands[2]};
    for (int i = 0; i < (op->code == WF_OP_ATTENTION ? 4 : 2); i++) {
      wf_type *t = wf_value_type(f, vs[i]);
      if (t->rank != 3 || t->layout.rank != 3) continue;
      t->layout.dims[0].label = b, t->layout.dims[1].label = l, t->layout.dims[2].label = hd;
    }
  }
}

int wf_partition_lowers(wf_opcode c) {
  switch (c) {
    case WF_OP_GEMM: /* wf_decompose_gemm turns it into the ops below */
    case WF_OP_MATMUL: case WF_OP_DIST_GEMM: case WF_OP_DIST_GEMM_T: case WF_OP_ADD: case WF_OP_SUB: case WF_OP_MUL: case WF_OP_DIV:
    case WF_OP_MAXIMUM: case WF_OP_MINIMUM: case WF_OP_NEG: case WF_OP_EXP: case WF_OP_LOG:
    case WF_OP_EQUAL: case WF_OP_LESS: case WF_OP_WHERE: case WF_OP_NOT: case WF_OP_CAST: /* as f32 words */
    case WF_OP_POW: /* a constant exponent (lower_elementwise.c) */
    case WF_OP_EXPAND: /* the broadcast written out (lower_elementwise.c) */
    case WF_OP_TRILU:  /* a select by global row and column (lower_elementwise.c) */
    case WF_OP_COS: case WF_OP_SIN: case WF_OP_ERF:
    case WF_OP_SQRT: case WF_OP_RSQRT: case WF_OP_RECIPROCAL: case WF_OP_TANH:
    case WF_OP_SIGMOID: case WF_OP_RELU: case WF_OP_SILU: case WF_OP_GELU: case WF_OP_SOFTMAX:
    case WF_OP_LAYERNORM: case WF_OP_RMSNORM: case WF_OP_REDUCE_SUM:
    case WF_OP_REDUCE_MEAN: case WF_OP_REDUCE_MAX: case WF_OP_RESHAPE: case WF_OP_TRANSPOSE:
    case WF_OP_SLICE: case WF_OP_CONCAT: case WF_OP_SPLIT:
    case WF_OP_GATHER: case WF_OP_ARGMAX: /* backend/ops/lower_index.c */
    case WF_OP_TOPK: case WF_OP_SCATTER_ELEMENTS: case WF_OP_GATHER_ELEMENTS: /* backend/ops/lower_topk.c */
    case WF_OP_ROTATE_PAIRS: case WF_OP_ATTENTION: /* packed by head-layout (checked below) */
    case WF_OP_DECODE_ATTENTION: /* decode-step's */
    case WF_OP_KV_SWITCH: /* the prefill->decode switch (lower_slice.c) */
    case WF_OP_UNSKEW: /* its first step for a pre-skewed weight (lower_unskew.c) */
    case WF_OP_SHIFT: /* backend/ops/lower_shift.c */
    case WF_OP_RETURN:
      return 1;
    default:
      return 0;
  }
}

/* A gather's table is held as {V, E_x} (its rows whole on every PE row); any other use of the
 * same constant expects partition's {M_y, N_x}, so a table shared with another op is not
 * lowered: said here, before any PE program. A tied LM head (partition_table.c) is the
 * exception: the table is {V_y, E_x} for both. */
static int gather_table_conflict(const wf_func *f, const wf_global *g, int gi, const char *what) {
  int as_table = 0, other = 0;
  const char *other_op = "";
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
    const wf_value_info *vi = &f->values[op->operands[i]];
    if (vi->kind != WF_VAL_GLOBAL || vi->index != gi) continue;
    if (op->code == WF_OP_GATHER && i == 0) as_table = 1;
    else if (!other) other = 1, other_op = wf_opinfos[op->code].name;
  }
  if (!as_table || !other || wf_partition_table_tied(f, gi)) return 0;
  wf_error(g->loc, "partition: %s is the table of a 'gather' and an operand of '%s': a gather "
                   "table shared with another op has no mesh lowering yet", what, other_op);
  return -1;
}

static int run_partition(wf_module *m, wf_pass_ctx *ctx) {
  pctx c = {m, -1, 0, 0, 0};
  int rc = wf_pass_mesh(ctx, "partition", &c.w, &c.h);
  if (rc) return rc;
  wf_func *f = wf_module_find_func(m, "main");
  if (!f && m->n_funcs) f = m->funcs[0];
  if (!f) return 0;

  c.region = wf_module_find_region(m, "mesh");
  if (c.region < 0) {
    c.region = wf_module_add_region(m, "mesh", 0, 0, c.w, c.h, f->loc);
  } else {
    const wf_region *r = &m->regions[c.region];
    if (r->x != 0 || r->y != 0 || r->w != c.w || r->h != c.h) {
      wf_error(r->loc, "partition: region @mesh is rect(%d, %d, %d, %d) but the mesh is %dx%d", r->x,
               r->y, r->w, r->h, c.w, c.h);
      return WF_EXIT_NOFIT;
    }
  }

  wf_partition_dispatch(m, f); /* a sparse MoE block's indexing (partition_dispatch.c) */
  norm_last_axis(f);
  widen_scalar_args(m, f);
  wf_decompose_gemm(m, f);
  wf_decompose_matvec(m, f);
  wf_partition_moe_combine(m, f); /* a dense MoE block's stacked combine (partition_moe.c) */
  wf_partition_moe_groups(m, f);  /* DeepSeek-V3's grouped gate (partition_moe.c) */
  wf_partition_sink_transpose(m, f); /* a transposed one-hot mask (partition_sink.c) */
  widen_computed_scalars(m, f);
  /* Unsupported ops first, all at once, so a user sees the whole list and what a mesh
   * compile of the model would need. */
  int bad = 0;
  unsigned char missing[WF_OP_COUNT] = {0};
  wf_func_foreach_op(f, op) {
    if (wf_partition_lowers(op->code) && op->code != WF_OP_GEMM &&
        (op->code != WF_OP_ATTENTION || wf_op_int(f, op, "heads", 0) > 0))
      continue; /* gemm: decomposed above; attention: as head-layout packs it */
    if (op->code == WF_OP_ATTENTION) {
      wf_error(op->loc, "attention over [B, H, S, D] has no mesh lowering: run head-layout before partition "
                        "(waferc's default pipeline does) to pack its heads into [B, S, E]");
      bad++;
      continue;
    }
    wf_error(op->loc, "op '%s' has no mesh lowering yet: it runs only in the reference interpreter "
                      "(waferc --interpret)", wf_opinfos[op->code].name);
    missing[op->code] = 1;
    bad++;
  }
  if (bad) {
    char need[1024] = "", have[2048] = "";
    for (int c = 0; c < WF_OP_COUNT; c++) {
      char *buf = missing[c] ? need : wf_partition_lowers((wf_opcode)c) && c != WF_OP_RETURN ? have : NULL;
      size_t cap = buf == need ? sizeof need : sizeof have, n = buf ? strlen(buf) : 0;
      if (buf && n < cap) snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", wf_opinfos[c].name);
    }
    wf_note(WF_LOC_NONE, "to compile this model for the mesh, waferc would need a mesh lowering of: %s "
                         "(it lowers %s)", need, have);
    return WF_EXIT_UNSUPPORTED;
  }

  int64_t n = 0;
  char what[128];
  if (wf_partition_is_decode(f)) { /* the token's row on alternating axes (partition_decode.c) */
    int64_t tied = 0;
    if ((rc = wf_partition_decode(m, f, c.region, c.w, c.h, wf_pass_target(ctx)->sram_bytes,
                                  wf_pass_opt_bool(ctx, "tie-heads"), &n, &tied)) != 0)
      return rc;
    wf_pass_stat_add(ctx, "tied-heads", tied);
    goto laid;
  }
  int64_t sram = wf_pass_target(ctx)->sram_bytes;
  if (wf_pass_opt_bool(ctx, "tie-heads")) wf_pass_stat_add(ctx, "tied-heads", wf_partition_tie_heads(m, f));
  for (int i = 0; i < f->n_args; i++) {
    snprintf(what, sizeof what, "argument %%%s", wf_str(m, wf_value_get(f, f->args[i])->name));
    wf_type *at = wf_value_type(f, f->args[i]);
    int ids = at->dtype != WF_F32 && gather_ids(f, f->args[i]);
    if (layout_for_dt(&c, at, f->loc, what, wf_int_words_ok(m, f, f->args[i]))) return WF_EXIT_UNSUPPORTED;
    if (ids) ids_layout(m, at, wf_partition_ids_whole(m, f, f->args[i], c.w, c.h, sram));
    n++;
  }
  /* Only values of ops still in the body: values of erased ops keep their table slots. */
  wf_func_foreach_op(f, op) {
    for (int i = 0; i < op->n_operands; i++) {
      wf_value_info *vi = wf_value_get(f, op->operands[i]);
      if (vi->kind != WF_VAL_GLOBAL) continue;
      /* The constant itself carries the layout, so it survives a dump and re-parse. */
      wf_global *g = &m->globals[vi->index];
      /* A scalar constant (ONNX's epsilon, a scale, a one-hot's on / off value) becomes a
       * one-element [1] tensor: it broadcasts as the scalar did, and every PE holds it. */
      if (g->type.rank == 0) {
        g->type.rank = 1;
        g->type.dims[0] = 1;
      }
      if (vi->type.rank == 0 && g->type.rank == 1) {
        vi->type.rank = 1;
        vi->type.dims[0] = 1;
      }
      snprintf(what, sizeof what, "constant @%s", wf_str(m, g->name));
      if (g->type.layout.rank == 0) {
        if (layout_for_dt(&c, &g->type, g->loc, what, wf_int_words_ok(m, f, op->operands[i]))) return WF_EXIT_UNSUPPORTED;
        if (op->code == WF_OP_GATHER && i == 0 && !wf_partition_table_rows_split(m, f, vi->index, c.w, c.h, sram))
          g->type.layout.dims[0].split = WF_AXIS_NONE;
        n++;
      }
      if (gather_table_conflict(f, g, vi->index, what)) return WF_EXIT_UNSUPPORTED;
      vi->type.layout = g->type.layout;
    }
    for (int i = 0; i < op->n_results; i++) {
      snprintf(what, sizeof what, "result of '%s'", wf_opinfos[op->code].name);
      if (layout_for_dt(&c, wf_value_type(f, op->results[i]), op->loc, what, wf_int_words_ok(m, f, op->results[i])))
        return WF_EXIT_UNSUPPORTED;
      if (op->code == WF_OP_REDUCE_SUM || op->code == WF_OP_REDUCE_MEAN || op->code == WF_OP_REDUCE_MAX ||
          op->code == WF_OP_ARGMAX)
        reduce_layout(f, op, wf_value_type(f, op->results[i]));
      vecmat_layout(f, op, wf_value_type(f, op->results[i]));
      vector_follows(f, op, wf_value_type(f, op->results[i]));
      switch_layout(f, op, wf_value_type(f, op->results[i]));
      n++;
    }
  }
  label_heads(m, f);
laid:;
  const wf_op *ret = wf_func_return(f);
  for (int i = 0; i < f->n_results; i++) {
    snprintf(what, sizeof what, "result %d of @%s", i, wf_str(m, f->name));
    int ints = ret && i < ret->n_operands && wf_int_words_ok(m, f, ret->operands[i]);
    if (layout_for_dt(&c, &f->result_types[i], f->loc, what, ints)) return WF_EXIT_UNSUPPORTED;
    /* A returned value's layout is the function's (a reduction may have kept a split). */
    if (ret && i < ret->n_operands)
      f->result_types[i].layout = wf_value_type(f, ret->operands[i])->layout;
  }
  wf_partition_mark_padding(f, c.w, c.h);
  wf_partition_warn_padding(m, f, c.w, c.h);
  wf_pass_stat_add(ctx, "values-partitioned", n);
  wf_pass_set_changed(ctx);
  return 0;
}

const wf_pass_info wf_pass_partition = {
    "partition",
    "Assign every tensor a layout on one mesh region: [R,C] -> {M_y, N_x}, [C] -> {N_x}",
    partition_opts, 2, partition_stats, 2, run_partition};
