/* Internal: the reference kernels of the interpreter (ir/interp.c), one per op of ops.def,
 * named wf_kern_<ID>. The interpreter allocates the results from the op's result types and
 * hands them over zeroed; a kernel fills them and returns 0, or reports a located error
 * (wf_error at k->op->loc, naming the op) and returns nonzero.
 *
 * Numerics: floats are read as double and every result is rounded once to its dtype on
 * store (so f32 add/sub/mul/div/sqrt match IEEE f32 exactly; f16/bf16 round to nearest even
 * from f32); matmul and reductions accumulate in double; integer ops are exact in int64
 * (i32 results wrap). */
#ifndef WAFERC_IR_KERNELS_H
#define WAFERC_IR_KERNELS_H

#include "ir/rules.h"
#include "waferc/tensor.h"

typedef struct wf_kctx {
  wf_func *f;
  const wf_op *op;
  int n_in;
  wf_tensor *const *in;
  int n_out;
  wf_tensor *const *out;
} wf_kctx;

#define WF_OP(id, text, nin, nout, flags, rule, attrs) int wf_kern_##id(const wf_kctx *k);
#include "waferc/ops.def"
#undef WF_OP

#define WF_KNAME(k) (wf_opinfos[(k)->op->code].name)

/* Integer element access for I32 / I64 / BOOL tensors (exact, unlike wf_tensor_get). */
int64_t wf_kget_int(const wf_tensor *t, int64_t i);
void wf_kset_int(wf_tensor *t, int64_t i, int64_t v); /* I32 wraps modulo 2^32 */
static inline int wf_kis_int(const wf_tensor *t) { return t->dtype == WF_I32 || t->dtype == WF_I64; }

/* Offset into `in` of output element i, under numpy broadcasting of in's shape to out's. */
int64_t wf_kbcast_index(const wf_tensor *in, const wf_tensor *out, int64_t i);
/* Same, for a shape given as (rank, dims) broadcast to (orank, odims). */
int64_t wf_kbcast_index_shape(int rank, const int64_t *dims, int orank, const int64_t *odims, int64_t i);

/* Product of dims[lo, hi). */
int64_t wf_kprod(const int64_t *dims, int lo, int hi);
/* Row-major element strides of t: out[d] = product of t->dims[d+1..rank). */
void wf_kstrides(const wf_tensor *t, int64_t *out);
/* GatherElements / ScatterElements: the element of data (row-major strides dstride) that
 * position e of indices ix addresses along `axis` (of size dim), or -1 after a located error
 * naming `who` when the index is outside [-dim, dim). */
int64_t wf_kelem_offset(const wf_kctx *k, const char *who, const wf_tensor *ix, int64_t e, int axis, int64_t dim,
                        const int64_t *dstride);

#endif
