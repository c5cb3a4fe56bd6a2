/* Padding of split dims the mesh side does not divide (docs/partition.md, "Padding").
 *
 * A dim of length D split over p PEs has blocks of ceil(D/p); the PEs' blocks cover
 * ceil(D/p)*p indices and the ones past D are padding. The host zero-fills them when it
 * scatters an input or a constant, and drops them when it gathers an output, so they never
 * reach the user — unless an op mixes them into real elements. Only contractions and
 * reductions do. Softmax, norms and reduce_* over a padded axis mask it in the backend (each
 * PE reads only the real elements it holds), so they need nothing from the padding. A
 * matmul over a padded K does read it: it is right when both operands' padding along K is
 * still zero; the walk below tracks, per value and dim, whether that holds (ops that keep
 * zeros: mul by broadcast values, neg, relu, gelu, silu, tanh, sqrt, and add/sub/max/min of
 * operands that are all zero there; a softmax, norm or reduction result: no). */
#include <stdlib.h>

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
         c == WF_OP_TANH || c == WF_OP_SQRT;
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

int wf_partition_check_padding(wf_func *f, int w, int h) {
  unsigned *dirty = calloc((size_t)f->n_values + 1, sizeof *dirty);
  WF_ASSERT(dirty);
  int errors = 0;
  wf_func_foreach_op(f, op) {
    if (!op->n_results) continue;
    const wf_type *rt = wf_value_type(f, op->results[0]);
    const wf_type *in = op->n_operands ? wf_value_type(f, op->operands[0]) : NULL;
    unsigned m = 0;
    switch (op->code) {
      case WF_OP_MATMUL: case WF_OP_DIST_GEMM: {
        const wf_type *tb = wf_value_type(f, op->operands[1]);
        int kb = tb->rank >= 2 ? tb->rank - 2 : 0; /* a 1-D operand's K is its only dim */
        if ((padded(in, in->rank - 1, w, h) || padded(tb, kb, w, h)) &&
            ((dirty[op->operands[0]] >> (in->rank - 1) & 1) || (dirty[op->operands[1]] >> kb & 1))) {
          wf_error(op->loc,
                   "partition: '%s' contracts K = %lld, which the mesh does not divide, and an "
                   "operand's padding along K may be nonzero (it comes from an op that does not "
                   "keep zeros, such as exp or a broadcast add); choose a mesh side that divides %lld",
                   wf_opinfos[op->code].name, (long long)in->dims[in->rank - 1],
                   (long long)in->dims[in->rank - 1]);
          errors++;
        }
        /* Rows of A's padding and columns of B's give C's: zero when theirs are. */
        if (in->rank >= 2 && tb->rank >= 2 && (dirty[op->operands[0]] >> (in->rank - 2) & 1))
          m |= 1u << (rt->rank - 2);
        if (tb->rank >= 2 && (dirty[op->operands[1]] >> (tb->rank - 1) & 1)) m |= 1u << (rt->rank - 1);
        m &= all_padded(rt, w, h);
        break;
      }
      case WF_OP_DIST_GEMM_T: { /* K is the last dim of both; C's columns are B's rows */
        const wf_type *tb = wf_value_type(f, op->operands[1]);
        if ((padded(in, 1, w, h) || padded(tb, 1, w, h)) &&
            ((dirty[op->operands[0]] | dirty[op->operands[1]]) >> 1 & 1)) {
          wf_error(op->loc, "partition: 'dist.gemm_t' contracts K = %lld, which the mesh does not "
                            "divide, and an operand's padding along K may be nonzero; choose a mesh "
                            "side that divides %lld",
                   (long long)in->dims[1], (long long)in->dims[1]);
          errors++;
        }
        if (dirty[op->operands[0]] & 1) m |= 1u;
        if (dirty[op->operands[1]] & 1) m |= 2u;
        m &= all_padded(rt, w, h);
        break;
      }
      case WF_OP_SOFTMAX: case WF_OP_LAYERNORM: case WF_OP_RMSNORM:
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
      case WF_OP_RESHAPE:
        m = reshape_mask(in, dirty[op->operands[0]], rt) & all_padded(rt, w, h);
        break;
      default:
        m = wf_opinfos[op->code].flags & WF_OPF_ELEMENTWISE ? elementwise_mask(f, op, dirty, w, h)
                                                            : all_padded(rt, w, h);
    }
    for (int i = 0; i < op->n_results; i++) dirty[op->results[i]] = m;
  }
  free(dirty);
  return errors;
}
