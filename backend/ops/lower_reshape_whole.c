/* A reshape that re-blocks a small tensor: gathered whole on every PE, then cut again.
 *
 * A reshape whose dims, after dropping those of size 1, keep their splits is a local copy
 * (lower_movement.c), and one that regroups rows keeping the last dim is lower_reshape_rows.c's.
 * Any other moves elements between PEs: [T, K] {T_y, K_x} -> [T, K, 1] {T, K_y, 1} (the indices
 * of a one-hot, K leaving x for y), [2, 3, 4] -> [6, 4], a flatten of split dims. For a tensor
 * small enough for every PE to hold whole, the lowering makes it whole and cuts the result's
 * block out of it:
 *
 *   1. gather, one mesh axis at a time: every PE copies its block into a zeroed buffer that is
 *      whole (padded to whole blocks) along the dim split on that axis, at its place there (an
 *      offset of the PE's x or y times the block), and an allreduce-sum along the axis fills
 *      the buffer (every element comes from one PE, the others add zeros);
 *   2. the padding of each split dim is dropped (a strided copy), which leaves the tensor whole
 *      and row-major: the same elements, in the same order, as the result whole;
 *   3. cut, one mesh axis at a time: every PE copies its block of the result's dim split on
 *      that axis (a range of the whole, at an offset of x or y), only its real rows (the last
 *      PE of a padded dim fewer, those past it none: guards), into a zeroed buffer, so the
 *      result's padding is zeros.
 *
 * Every copy is one copy2d instruction (rows of the dims before the dim, runs of the dim and
 * those after it), so a PE's program has a fixed number of instructions whatever the mesh. The
 * traffic is two allreduces of the whole tensor; the cost model charges them as
 * wf_lower_allreduce predicts, and the copies one cycle per word. A slice whose operand is laid
 * out otherwise than its result (lower_slice.c) takes the same steps with a local slice of the
 * whole between 2 and 3 (wf_lower_whole_slice), and a transpose of other dims than the last
 * two (lower_movement.c) with a local permutation there (wf_lower_whole_permute: one strided
 * copy2d per index of the result's outer dims, at most 1024). */
#include "backend/resources/lower.h"
#include "waferc/diag.h"

#define WHOLE_MAX_WORDS 4096 /* the largest tensor (padded) a PE gathers whole, 16 KiB */

typedef struct shape {
  int rank;
  int64_t d[WF_MAX_RANK];
} shape;

static int64_t numel(const shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->d[i];
  return n;
}

static int64_t inner(const shape *s, int dim) {
  int64_t n = 1;
  for (int i = dim + 1; i < s->rank; i++) n *= s->d[i];
  return n;
}

static int64_t outer(const shape *s, int dim) {
  int64_t n = 1;
  for (int i = 0; i < dim; i++) n *= s->d[i];
  return n;
}

/* The dim of t split along axis over more than one PE, -1 when none, -2 when several. */
static int split_dim(const wf_lower *L, const wf_type *t, int axis) {
  int p = axis == WF_AXIS_X ? L->w : L->h, found = -1;
  for (int d = 0; d < t->rank && p > 1; d++)
    if (t->layout.dims[d].split == axis && t->dims[d] > 1) found = found == -1 ? d : -2;
  return found;
}

static const int axes[2] = {WF_AXIS_X, WF_AXIS_Y};

static wf_pe_term pos_of(int axis) { return wf_term(axis == WF_AXIS_X ? WF_TERM_X : WF_TERM_Y, 0); }

/* dst[0..n) = 0 */
static void zero(wf_lower *L, int dst, int64_t n) {
  wf_emit(L, NULL, WF_PEOP_ZERO, (wf_pe_arg[]){wf_arg_sym(dst), wf_arg_int(n)});
}

/* copy2d: rows of run words, the destination's rows ds apart, the source's ss apart; either
 * side may be offset by the PE's position times `step` words (at: which side). */
enum { AT_NONE, AT_DST, AT_SRC };
static void copy2d(wf_lower *L, const wf_pe_guard *g, int dst, int src, int64_t rows, int64_t run, int64_t ds,
                   int64_t ss, int at, int axis, int64_t step) {
  wf_pe_arg d = wf_arg_sym(dst), s = wf_arg_sym(src);
  if (at == AT_DST) d.term = wf_term_scaled(pos_of(axis), (int)step, 0);
  if (at == AT_SRC) s.term = wf_term_scaled(pos_of(axis), (int)step, 0);
  wf_emit(L, g, WF_PEOP_COPY2D,
          (wf_pe_arg[]){d, s, wf_arg_int(rows), wf_arg_int(run), wf_arg_int(ds), wf_arg_int(ss)});
}

/* Largest buffer a whole-gather of t needs: t padded to whole blocks; 0 when too large or laid
 * out with two dims on one mesh axis. */
static int64_t whole_words(const wf_lower *L, const wf_type *t) {
  int64_t b[WF_MAX_RANK], words = 1;
  wf_lower_block_dims(L, t, b);
  for (int d = 0; d < t->rank; d++) {
    int s = t->layout.dims[d].split;
    words *= s == WF_AXIS_X ? b[d] * L->w : s == WF_AXIS_Y ? b[d] * L->h : b[d];
  }
  if (split_dim(L, t, WF_AXIS_X) == -2 || split_dim(L, t, WF_AXIS_Y) == -2) return 0;
  return words > WHOLE_MAX_WORDS || words > WF_PE_MAX_SCALE ? 0 : words;
}

/* The buffer that is not w->src. */
static int other(const wf_whole *w) { return w->src == w->buf[0] ? w->buf[1] : w->buf[0]; }

int wf_lower_whole_gather(wf_lower *L, const wf_op *op, wf_value v, int64_t cap, wf_whole *w, int64_t *cycles) {
  const wf_type *xt = wf_value_type(L->f, v);
  int64_t words = whole_words(L, xt), xb[WF_MAX_RANK];
  if (!words || cap > WHOLE_MAX_WORDS) return -1;
  if (cap < words) cap = words;
  wf_lower_block_dims(L, xt, xb);
  shape cur = {xt->rank, {0}};
  for (int d = 0; d < xt->rank; d++) cur.d[d] = xb[d];
  w->buf[0] = wf_lower_temp(L, "$rw_a", cap * 4);
  w->buf[1] = wf_lower_temp(L, "$rw_b", cap * 4);
  w->src = wf_lower_sym(L, v);
  /* 1. gather along x, then y: the split dim becomes its padded whole */
  for (int a = 0; a < 2; a++) {
    int d = split_dim(L, xt, axes[a]);
    if (d < 0) continue;
    int p = axes[a] == WF_AXIS_X ? L->w : L->h, dst = other(w);
    int64_t in = inner(&cur, d), rows = outer(&cur, d), blk = cur.d[d];
    shape next = cur;
    next.d[d] = blk * p;
    zero(L, dst, numel(&next));
    copy2d(L, NULL, dst, w->src, rows, blk * in, blk * p * in, blk * in, AT_DST, axes[a], blk * in);
    *cycles += numel(&next) + numel(&cur);
    int rc = wf_lower_allreduce(L, dst, numel(&next), axes[a], 0, op->loc, cycles, NULL);
    if (rc) return rc;
    L->move_bits |= WF_MOVE_RELAYOUT;
    cur = next;
    w->src = dst;
  }
  /* 2. drop the padding of each dim: cur becomes v's dims, whole */
  for (int d = 0; d < xt->rank; d++) {
    if (cur.d[d] == xt->dims[d]) continue;
    int64_t in = inner(&cur, d), rows = outer(&cur, d);
    int dst = other(w);
    copy2d(L, NULL, dst, w->src, rows, xt->dims[d] * in, xt->dims[d] * in, cur.d[d] * in, AT_NONE, 0, 0);
    *cycles += rows * xt->dims[d] * in;
    cur.d[d] = xt->dims[d];
    w->src = dst;
  }
  return 0;
}

void wf_lower_whole_slice(wf_lower *L, wf_whole *w, const wf_type *t, int axis, int64_t first, int64_t count,
                          int64_t *cycles) {
  shape cur = {t->rank, {0}};
  for (int d = 0; d < t->rank; d++) cur.d[d] = t->dims[d];
  int64_t in = inner(&cur, axis), rows = outer(&cur, axis);
  int dst = other(w);
  wf_pe_arg s = wf_arg_at(w->src, first * in);
  wf_emit(L, NULL, WF_PEOP_COPY2D,
          (wf_pe_arg[]){wf_arg_sym(dst), s, wf_arg_int(rows), wf_arg_int(count * in), wf_arg_int(count * in),
                        wf_arg_int(t->dims[axis] * in)});
  *cycles += rows * count * in;
  w->src = dst;
}

int wf_lower_whole_permute(wf_lower *L, wf_whole *w, const wf_type *t, const int64_t *perm, int64_t *cycles) {
  int R = t->rank;
  int64_t ist[WF_MAX_RANK], od[WF_MAX_RANK], n = 1;
  for (int d = R - 1; d >= 0; d--) ist[d] = n, n *= t->dims[d];
  for (int d = 0; d < R; d++) od[d] = t->dims[perm[d]];
  /* one copy2d per index of the outer output dims: the last output dim's run (contiguous in
   * the input too when it is the input's last dim, then two dims per copy), strided */
  int contiguous = R >= 2 && perm[R - 1] == R - 1;
  int inner = contiguous ? 2 : 1; /* output dims each copy covers */
  int64_t rows = od[R - inner], cols = contiguous ? od[R - 1] : 1;
  int64_t sstride = ist[perm[R - inner]], dstride = contiguous ? od[R - 1] : 1, copies = 1;
  for (int d = 0; d < R - inner; d++) copies *= od[d];
  if (copies > 1024) return -1;
  int dst = other(w);
  for (int64_t c = 0; c < copies; c++) {
    int64_t rem = c, soff = 0;
    for (int d = R - inner - 1; d >= 0; d--) {
      soff += (rem % od[d]) * ist[perm[d]];
      rem /= od[d];
    }
    wf_emit(L, NULL, WF_PEOP_COPY2D,
            (wf_pe_arg[]){wf_arg_at(dst, c * rows * cols), wf_arg_at(w->src, soff), wf_arg_int(rows),
                          wf_arg_int(cols), wf_arg_int(dstride), wf_arg_int(sstride)});
  }
  *cycles += n;
  w->src = dst;
  return 0;
}

int wf_lower_whole_cut(wf_lower *L, wf_whole *w, wf_value r, int64_t *cycles) {
  const wf_type *rt = wf_value_type(L->f, r);
  int64_t rb[WF_MAX_RANK];
  wf_lower_block_dims(L, rt, rb);
  if (split_dim(L, rt, WF_AXIS_X) == -2 || split_dim(L, rt, WF_AXIS_Y) == -2) return -1;
  int sr = wf_lower_sym(L, r);
  shape cur = {rt->rank, {0}};
  for (int d = 0; d < rt->rank; d++) cur.d[d] = rt->dims[d];
  /* 3. the result's block: cut along y, then x (the last cut writes the result) */
  int cuts[2], n_cuts = 0;
  for (int a = 1; a >= 0; a--) {
    int d = split_dim(L, rt, axes[a]);
    if (d >= 0) cuts[n_cuts++] = a;
  }
  for (int c = 0; c < n_cuts; c++) {
    int a = cuts[c], d = split_dim(L, rt, axes[a]);
    int dst = c == n_cuts - 1 ? sr : other(w);
    int64_t in = inner(&cur, d), rows = outer(&cur, d), blk = rb[d], full = cur.d[d];
    shape next = cur;
    next.d[d] = blk;
    zero(L, dst, numel(&next));
    int64_t q = full / blk, rem = full - q * blk;
    for (int part = 0; part < 2; part++) { /* PEs below q: blk real rows; PE q: rem; the rest none */
      int64_t cnt = part == 0 ? blk : rem;
      if (!cnt || (part == 0 && q == 0)) continue;
      wf_pe_guard g = wf_guard0();
      wf_guard_add(&g, pos_of(axes[a]), part == 0 ? WF_CMP_LT : WF_CMP_EQ, wf_term_int((int32_t)q));
      copy2d(L, &g, dst, w->src, rows, cnt * in, blk * in, full * in, AT_SRC, axes[a], blk * in);
    }
    *cycles += 2 * numel(&next);
    cur = next;
    w->src = dst;
  }
  if (!n_cuts) {
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sr), wf_arg_sym(w->src), wf_arg_int(numel(&cur))});
    *cycles += numel(&cur);
  }
  return 0;
}

int wf_lower_reshape_whole(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_whole w;
  int64_t cycles = 0;
  int rc = wf_lower_whole_gather(L, op, op->operands[0], 0, &w, &cycles);
  if (rc) return rc;
  rc = wf_lower_whole_cut(L, &w, op->results[0], &cycles);
  if (rc) return rc;
  out->lowering = "gather-whole";
  out->predicted = cycles;
  return 0;
}
