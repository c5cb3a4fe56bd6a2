/* Padding of split dims the mesh side does not divide (docs/partition.md, "Padding").
 *
 * A dim of length D split over p PEs has blocks of ceil(D/p); the PEs' blocks cover
 * ceil(D/p)*p indices and the ones past D are padding. The host zero-fills them when it
 * scatters an input or a constant, and drops them when it gathers an output, so they never
 * reach the user — unless an op mixes them into real elements. Only contractions and
 * reductions do. Softmax, norms and reduce_* over a padded axis mask it in the backend (each
 * PE reads only the real elements it holds), so they need nothing from the padding. A
 * matmul over a padded K does read it: it is right when one operand's padding along K is
 * still zero and the other's finite (a constant's padding is zero: CumSum's triangle times a
 * router's mask); the walk below tracks, per value and dim, whether that holds (ops that keep
 * zeros: mul by broadcast values, neg, relu, gelu, silu, tanh, sqrt, and add/sub/max/min of
 * operands that are all zero there; a norm over the last axis of an input whose padding there
 * is finite (add, sub, mul... of finite paddings), as its lowering zeroes its result's; slice,
 * concat and split carry it along the dims they do not cut and zero it along the one they do;
 * a softmax or reduction result: no). */
#include <stdlib.h>

#include "ir/rules.h"
#include "passes/partition_pad.h"
#include "waferc/diag.h"

static int parts_of(const wf_type *t, int d, int w, int h) {
  int s = t->layout.rank == t->rank ? t->layout.dims[d].split : WF_AXIS_NONE;
  return s == WF_AXIS_X ? w : s == WF_AXIS_Y ? h : 1;
}

static int padded(const wf_type *t, int d, int w, int h) {
  return t->dims[d] % parts_of(t, d, w, h) != 0;
}

/* Bit d of the mask: padding along dim d may hold nonzero values. */
static unsigned all_padded(const wf_type *t, int w, int h) {
  unsigned m = 0;
  for (int d = 0; d < t->rank; d++)
    if (padded(t, d, w, h)) m |= 1u << d;
  return m;
}

static int zero_keeping_unary(wf_opcode c) {
  return c == WF_OP_NEG || c == WF_OP_RELU || c == WF_OP_GELU || c == WF_OP_SILU ||
         c == WF_OP_TANH || c == WF_OP_SQRT || c == WF_OP_SIN || c == WF_OP_ERF; /* f(0) = 0 */
}

/* The mask of an elementwise result from its operands' (numpy broadcasting: operand dims
 * line up with the result's last dims; a size-1 operand dim spreads one value, which may
 * be nonzero, over the padding). */
static unsigned elementwise_mask(const wf_func *f, const wf_op *op, const unsigned *dirty, int w,
                                 int h) {
  const wf_type *rt = wf_value_type(f, op->results[0]);
  unsigned out = 0;
  for (int d = 0; d < rt->rank; d++) {
    if (!padded(rt, d, w, h)) continue;
    /* mul: broadcast operands are real values (finite), full ones must all have zero
     * padding (a padding of -inf from log(0) times 0 would be NaN) */
    int full_clean = 0, full_dirty = 0, all_clean = 1;
    for (int i = 0; i < op->n_operands; i++) {
      const wf_type *ot = wf_value_type(f, op->operands[i]);
      int od = d - (rt->rank - ot->rank);
      int full = od >= 0 && ot->dims[od] == rt->dims[d];
      int clean = full && !(dirty[op->operands[i]] >> od & 1);
      full_clean |= clean;
      full_dirty |= full && !clean;
      all_clean &= clean;
    }
    int ok = op->code == WF_OP_MUL ? full_clean && !full_dirty
             : (op->code == WF_OP_ADD || op->code == WF_OP_SUB || op->code == WF_OP_MAXIMUM ||
                op->code == WF_OP_MINIMUM || zero_keeping_unary(op->code))
                 ? all_clean
                 : 0;
    if (!ok) out |= 1u << d;
  }
  return out;
}

/* Reshape only adds or drops size-1 dims (lower_movement.c): the other dims keep order. */
static unsigned reshape_mask(const wf_type *in, unsigned m, const wf_type *rt) {
  unsigned out = 0;
  int j = 0;
  for (int d = 0; d < rt->rank; d++) {
    if (rt->dims[d] == 1) continue;
    while (j < in->rank && in->dims[j] == 1) j++;
    if (j < in->rank && (m >> j & 1)) out |= 1u << d;
    j++;
  }
  return out;
}

/* A reshape that regroups the rows and keeps the last dim ([B, T, E] -> [B*T, E]:
 * backend/ops/lower_reshape_rows.c), not one that only adds or drops size-1 dims. */
static int regroups_rows(const wf_type *in, const wf_type *rt) {
  int i = 0, j = 0;
  if (in->rank < 1 || rt->rank < 1 || in->dims[in->rank - 1] != rt->dims[rt->rank - 1]) return 0;
  for (;;) {
    while (i < in->rank && in->dims[i] == 1) i++;
    while (j < rt->rank && rt->dims[j] == 1) j++;
    if (i == in->rank || j == rt->rank) return i != in->rank || j != rt->rank;
    if (in->dims[i++] != rt->dims[j++]) return 1;
  }
}

/* The axes a slice cuts (one whose range is not the whole dim with step 1), or the axis of a
 * concat or split, as a mask of dims. */
static unsigned moved_axes(const wf_func *f, const wf_op *op, const wf_type *in) {
  if (op->code != WF_OP_SLICE) return 1u << wf_norm_axis(wf_rule_int(f, op, "axis", 0), in->rank);
  int n;
  const int64_t *starts = wf_rule_ints(f, op, "starts", &n), *ends = wf_rule_ints(f, op, "ends", &n);
  const int64_t *axes = wf_rule_ints(f, op, "axes", &n), *steps = wf_rule_ints(f, op, "steps", &n);
  unsigned m = 0;
  for (int i = 0; i < n; i++) {
    int ax = wf_norm_axis(axes[i], in->rank);
    int64_t first, cnt;
    wf_slice_resolve(in->dims[ax], starts[i], ends[i], steps[i], &first, &cnt);
    if (ax >= 0 && (first != 0 || cnt != in->dims[ax] || steps[i] != 1)) m |= 1u << ax;
  }
  return m;
}

/* Ops whose result is finite where their operands are: a padding they make from finite
 * paddings (x - mean broadcast over it) is nonzero but finite. */
static int finite_keeping(wf_opcode c) {
  return c == WF_OP_ADD || c == WF_OP_SUB || c == WF_OP_MUL || c == WF_OP_NEG || c == WF_OP_MAXIMUM ||
         c == WF_OP_MINIMUM || c == WF_OP_RELU || c == WF_OP_SILU || c == WF_OP_GELU || c == WF_OP_TANH ||
         c == WF_OP_SIGMOID || c == WF_OP_CAST || c == WF_OP_WHERE; /* (a where's condition is a bool) */
}

/* Bit d: the padding along dim d may hold inf or NaN (a subset of the dirty bits). Operand dims
 * of size 1 broadcast real values, taken as finite. */
static unsigned wild_mask(const wf_func *f, const wf_op *op, const unsigned *wild, unsigned m) {
  if (op->code == WF_OP_EQUAL || op->code == WF_OP_LESS || op->code == WF_OP_NOT) return 0; /* 0 or 1 */
  if (op->code == WF_OP_RESHAPE || op->code == WF_OP_TRANSPOSE || op->code == WF_OP_EXPAND) {
    /* moves: the padding may take any of the operand's values, finite when all of them are */
    unsigned any = 0;
    for (int i = 0; i < op->n_operands; i++) any |= wild[op->operands[i]];
    return any ? m : 0;
  }
  if (!finite_keeping(op->code)) return m;
  const wf_type *rt = wf_value_type(f, op->results[0]);
  unsigned out = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const wf_type *ot = wf_value_type(f, op->operands[i]);
    for (int od = 0; od < ot->rank; od++) {
      int d = od + rt->rank - ot->rank;
      if (d >= 0 && ot->dims[od] == rt->dims[d] && (wild[op->operands[i]] >> od & 1)) out |= 1u << d;
    }
  }
  return out & m;
}

void wf_partition_mark_padding(wf_func *f, int w, int h) {
  unsigned *dirty = calloc((size_t)f->n_values + 1, sizeof *dirty);
  unsigned *wild = calloc((size_t)f->n_values + 1, sizeof *wild);
  WF_ASSERT(dirty && wild);
  wf_func_foreach_op(f, op) {
    if (!op->n_results) continue;
    const wf_type *rt = wf_value_type(f, op->results[0]);
    const wf_type *in = op->n_operands ? wf_value_type(f, op->operands[0]) : NULL;
    unsigned m = 0;
    switch (op->code) {
      case WF_OP_MATMUL: case WF_OP_DIST_GEMM: {
        const wf_type *tb = wf_value_type(f, op->operands[1]);
        int kb = tb->rank >= 2 ? tb->rank - 2 : 0; /* a 1-D operand's K is its only dim */
        /* a padding product a·b along K is zero when one side's padding is zero and the
         * other's finite (a constant's is the host's zeros) */
        int ka = in->rank - 1;
        int za = !(dirty[op->operands[0]] >> ka & 1), zb = !(dirty[op->operands[1]] >> kb & 1);
        int fa = !(wild[op->operands[0]] >> ka & 1), fb = !(wild[op->operands[1]] >> kb & 1);
        if ((padded(in, ka, w, h) || padded(tb, kb, w, h)) && !((za && fb) || (zb && fa)))
          /* zero one side's padding along K first (both when neither is finite there):
           * the lowering zeroes it in place (backend/plan/emit.c), which no reader of that
           * padding minds */
          wf_op_set_int(f, op, "zero_k", fb ? 1 : fa ? 2 : 3);
        /* Rows of A's padding and columns of B's give C's: zero when theirs are. */
        if (in->rank >= 2 && tb->rank >= 2 && (dirty[op->operands[0]] >> (in->rank - 2) & 1))
          m |= 1u << (rt->rank - 2);
        if (tb->rank >= 2 && (dirty[op->operands[1]] >> (tb->rank - 1) & 1)) m |= 1u << (rt->rank - 1);
        m &= all_padded(rt, w, h);
        break;
      }
      case WF_OP_DIST_GEMM_T: { /* K is the last dim of both; C's columns are B's rows */
        const wf_type *tb = wf_value_type(f, op->operands[1]);
        int ka = in->rank - 1;
        if ((padded(in, ka, w, h) || padded(tb, 1, w, h)) &&
            ((dirty[op->operands[0]] >> ka | dirty[op->operands[1]] >> 1) & 1))
          wf_op_set_int(f, op, "zero_k", (dirty[op->operands[0]] >> ka & 1) | (dirty[op->operands[1]] >> 1 & 1) << 1);
        m |= dirty[op->operands[0]] & ((1u << ka) - 1); /* A's rows (and batch) are C's */
        if (dirty[op->operands[1]] & 1) m |= 1u << ka;
        m &= all_padded(rt, w, h);
        break;
      }
      case WF_OP_LAYERNORM: case WF_OP_RMSNORM: {
        /* As below, except along the normalised last axis when the input's padding there is
         * finite: the lowering multiplies the padding columns by 0 (backend/ops/lower_norm.c),
         * whatever the scale, shift and statistics put there. */
        m = all_padded(rt, w, h);
        int last = rt->rank - 1;
        int64_t axis = wf_op_int(f, op, "axis", -1);
        if ((axis == -1 || axis == last) && !(wild[op->operands[0]] >> last & 1)) m &= ~(1u << last);
        break;
      }
      case WF_OP_SOFTMAX:
      case WF_OP_REDUCE_SUM: case WF_OP_REDUCE_MEAN: case WF_OP_REDUCE_MAX:
        /* Their statistics read only real elements (backend/ops/lower_reduce.c masks a padded
         * axis by the PE's coordinate), whatever the padding holds; what they write into
         * the result's padding is not zero (exp, x - mean, a max of nothing = -inf). */
        m = all_padded(rt, w, h);
        break;
      case WF_OP_TRANSPOSE: { /* the lowered transposes swap the last two dims */
        unsigned im = dirty[op->operands[0]];
        m = im;
        if (in->rank >= 2 && rt->rank == in->rank) {
          unsigned a = im >> (in->rank - 2) & 1, b = im >> (in->rank - 1) & 1;
          m = (im & ~(3u << (in->rank - 2))) | b << (in->rank - 2) | a << (in->rank - 1);
        }
        m &= all_padded(rt, w, h);
        break;
      }
      case WF_OP_GATHER: /* rows of the table: E's padding is the table's; the padding rows
                            past L are written as zeros (lower_index.c) */
        if (rt->rank >= 1 && (dirty[op->operands[0]] >> 1 & 1)) m |= 1u << (rt->rank - 1);
        m &= all_padded(rt, w, h);
        break;
      case WF_OP_RESHAPE:
        if (regroups_rows(in, rt)) { /* the columns' padding moves with them; the result's
                                        padding rows hold other rows */
          m = (dirty[op->operands[0]] >> (in->rank - 1) & 1) << (rt->rank - 1);
          if (rt->rank >= 2) m |= all_padded(rt, w, h) & ~(1u << (rt->rank - 1));
          m &= all_padded(rt, w, h);
          break;
        }
        m = reshape_mask(in, dirty[op->operands[0]], rt) & all_padded(rt, w, h);
        break;
      case WF_OP_TOPK: case WF_OP_GATHER_ELEMENTS: case WF_OP_SCATTER_ELEMENTS: {
        /* backend/ops/lower_topk.c: topk's and gather_elements' results are zero past the
         * last axis' end; a scatter never updates data's padding columns. A row of padding
         * (a dim before the last) of gather_elements sums data's row times 0 or 1, and a
         * scatter's mixes data's and the updates' rows so: zero when theirs are (topk's
         * rows are -inf statistics, never zero) */
        unsigned last = 1u << (rt->rank - 1), rows = all_padded(rt, w, h) & ~last;
        m = rows;
        if (op->code != WF_OP_TOPK && in->rank == rt->rank) {
          m = dirty[op->operands[0]] & rows;
          if (op->code == WF_OP_SCATTER_ELEMENTS && wf_value_type(f, op->operands[2])->rank == rt->rank)
            m |= dirty[op->operands[2]] & rows;
          else if (op->code == WF_OP_SCATTER_ELEMENTS) m = rows;
        }
        if (op->code == WF_OP_SCATTER_ELEMENTS) m |= dirty[op->operands[0]] & last & all_padded(rt, w, h);
        break;
      }
      case WF_OP_TRILU: /* x's value or 0 (a select): x's padding or zero */
        m = dirty[op->operands[0]] & all_padded(rt, w, h);
        break;
      case WF_OP_KV_SWITCH: /* lower_slice.c zeroes the whole result before its copies */
      case WF_OP_UNSKEW:    /* the host's zero padding, whole tiles put back in place */
        break;
      case WF_OP_SHIFT: { /* lower_shift.c: the other dims' padding moves with the blocks; along the
                             axis, data shifts into the last block's padding */
        int ax = wf_norm_axis(wf_op_int(f, op, "axis", 0), rt->rank);
        m = (dirty[op->operands[0]] | (ax >= 0 ? 1u << ax : 0)) & all_padded(rt, w, h);
        break;
      }
      case WF_OP_SLICE: case WF_OP_CONCAT: case WF_OP_SPLIT:
        /* backend/ops/lower_slice.c copies the other dims' blocks whole (their padding with
         * them) and zeroes the result's padding along each axis it cuts */
        for (int i = 0; i < op->n_operands; i++) m |= dirty[op->operands[i]];
        m &= ~moved_axes(f, op, in);
        m &= all_padded(rt, w, h);
        break;
      default:
        m = wf_opinfos[op->code].flags & WF_OPF_ELEMENTWISE ? elementwise_mask(f, op, dirty, w, h)
                                                            : all_padded(rt, w, h);
    }
    unsigned wm = op->code == WF_OP_LAYERNORM || op->code == WF_OP_RMSNORM ? m : wild_mask(f, op, wild, m);
    if (op->code == WF_OP_SLICE || op->code == WF_OP_CONCAT || op->code == WF_OP_SPLIT) {
      wm = 0; /* copies: what was finite stays so, and the cut axis' padding is zero */
      for (int i = 0; i < op->n_operands; i++) wm |= wild[op->operands[i]];
      wm &= m;
    }
    for (int i = 0; i < op->n_results; i++) dirty[op->results[i]] = m, wild[op->results[i]] = wm;
  }
  free(dirty);
  free(wild);
}

/* ---- tensors that are mostly padding -------------------------------------------------- */

/* Does side s divide every dim of t split along `axis`? */
static int side_divides(const wf_type *t, int axis, int s) {
  for (int d = 0; d < t->rank; d++)
    if (t->layout.rank == t->rank && t->layout.dims[d].split == axis && t->dims[d] % s) return 0;
  return 1;
}

static void shape_text(char *buf, size_t cap, const int64_t *dims, int rank) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < rank && n < cap; d++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)dims[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

typedef struct pad_walk {
  int w, h;     /* the mesh */
  int sw, sh;   /* the largest sides <= w, h dividing every split dim seen (the suggestion) */
  int budget;   /* warnings left to print; 0 = only count */
} pad_walk;

/* Warns (while the budget lasts) when more than half of t's padded elements are padding;
 * 1 when it is. With budget 0 it only narrows the suggested mesh. */
static int warn_one(const wf_type *t, const char *what, wf_loc loc, pad_walk *pw) {
  int w = pw->w, h = pw->h;
  while (pw->sw > 1 && !side_divides(t, WF_AXIS_X, pw->sw)) pw->sw--;
  while (pw->sh > 1 && !side_divides(t, WF_AXIS_Y, pw->sh)) pw->sh--;
  if (t->layout.rank != t->rank || t->rank == 0) return 0;
  int64_t pad[WF_MAX_RANK];
  double real = 1, total = 1;
  for (int d = 0; d < t->rank; d++) {
    int64_t p = parts_of(t, d, w, h);
    pad[d] = (t->dims[d] + p - 1) / p * p;
    real *= (double)t->dims[d];
    total *= (double)pad[d];
  }
  if (total <= 0 || real / total >= 0.5) return 0;
  if (pw->budget <= 0) return 1;
  pw->budget--;
  char shape[160], padded_shape[160];
  shape_text(shape, sizeof shape, t->dims, t->rank);
  shape_text(padded_shape, sizeof padded_shape, pad, t->rank);
  wf_warning(loc, "%s %s%s is padded to %s on the %dx%d mesh: %.0f%% of its elements are padding, "
                  "memory and cycles spent on nothing; on --mesh=%dx%d, the largest mesh whose sides "
                  "divide every split dim of the model, nothing is padded",
             what, wf_dtype_name(t->dtype), shape, padded_shape, w, h, 100.0 * (1 - real / total), pw->sw, pw->sh);
  return 1;
}

/* Visits every tensor of f once: arguments, constants, op results. */
static int walk(wf_module *m, wf_func *f, pad_walk *pw) {
  int n = 0;
  char what[300];
  for (int i = 0; i < f->n_args; i++) {
    snprintf(what, sizeof what, "argument %%%s", wf_str(m, wf_value_get(f, f->args[i])->name));
    n += warn_one(wf_value_type(f, f->args[i]), what, f->loc, pw);
  }
  unsigned char *seen = calloc((size_t)m->n_globals + 1, 1);
  WF_ASSERT(seen);
  wf_func_foreach_op(f, op) {
    for (int i = 0; i < op->n_operands; i++) {
      const wf_value_info *vi = wf_value_get(f, op->operands[i]);
      if (vi->kind != WF_VAL_GLOBAL || seen[vi->index]++) continue;
      const wf_global *g = &m->globals[vi->index];
      snprintf(what, sizeof what, "constant @%s", wf_str(m, g->name));
      n += warn_one(&g->type, what, g->loc, pw);
    }
    for (int i = 0; i < op->n_results; i++) {
      snprintf(what, sizeof what, "%s result %%%s", wf_opinfos[op->code].name,
               wf_str(m, wf_value_get(f, op->results[i])->name));
      n += warn_one(wf_value_type(f, op->results[i]), what, op->loc, pw);
    }
  }
  free(seen);
  return n;
}

void wf_partition_warn_padding(wf_module *m, wf_func *f, int w, int h) {
  /* First pass: the one mesh to suggest, whose sides divide every split dim of the model. */
  pad_walk pw = {w, h, w, h, 0};
  if (!walk(m, f, &pw)) return;
  pw.budget = 5;
  int n = walk(m, f, &pw);
  if (n > 5) wf_note(WF_LOC_NONE, "%d more tensors are mostly padding on the %dx%d mesh", n - 5, w, h);
}
