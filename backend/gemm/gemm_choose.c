/* Choosing a dist.gemm algorithm (docs/gemm.md, "Choosing"): for each of the four, whether it
 * can lower the op and, if so, the prediction its lowering will report — the same blocks, the
 * same cost function, the same special cases (K whole: a local product; MeshGEMM and Cannon on
 * W x H: the lcm grid, with K padded to lcm tiles when the operands allow it, else re-cut to
 * them over the fabric at the relayout's predicted cost (lower_relayout.c); refused when a
 * PE would stand for more than WF_GEMM_RECT_MAX_V virtual positions).
 * `auto` takes the lowest; every dist.gemm's manifest entry lists them (`explain`), so a
 * choice can be checked against the alternatives.
 *
 * The K padding decision it asks before an algorithm is set is gemm_kcut.c's. */
#include "backend/gemm/gemm_choose.h"
#include "ir/support/intmath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm/lower_gemm.h"
#include "backend/collectives/lower_relayout.h"



/* The block extent of dim d of t on a w x h region (a padded dim's: ceil(D/p)). */
static int64_t block(const wf_type *t, int d, int w, int h) {
  int s = t->layout.dims[d].split;
  int64_t p = s == WF_AXIS_X ? w : s == WF_AXIS_Y ? h : 1;
  return (t->dims[d] + p - 1) / p;
}

/* ---- SRAM: what a candidate needs per PE while the op runs ----
 * The memory planner (lower_memory.c) gives every value a block symbol (rows x cols words,
 * wf_lower_sym) and every scratch buffer its own (wf_lower_temp), each at a 16-byte aligned
 * offset. While the dist.gemm runs its operands, its result and its scratch are live, and so
 * is every other value defined before it and read after it (graph inputs and constants are
 * live from launch, results to the end). An async stream's buffers are live until the `wait`
 * that ends the op, so scratch is the op's own. MeshGEMM and Cannon on a square region copy
 * their operands into the first A buffer and then the B buffer before any stream writes the
 * others: an operand read for the last time there (no later use, not a result) leaves its
 * block to the buffers written after it, so one matrix needs C + max(the dying operands +
 * the first A buffer, the buffers) (a batch reads its operands matrix by matrix: no reuse) (lower_gemm_shift.c; the planner places 88^3 on 2x2 in 5
 * blocks with 2 buffers, 4 with 1). Not weighed: other ops' scratch and async code the
 * planner cannot join (the estimate is then low, and the planner's exit 4 remains), and the
 * like reuse in the other lowerings (allgather on one row: B's panel in A's block; the
 * estimate is then high by that block). */
typedef struct { int64_t sum, pad; } mem_acc; /* aligned bytes, the largest alignment gap */

/* A symbol of `words` words: its 16-byte aligned size, less (once) the gap of the one placed
 * last, which the plan's peak does not include (mem_total). */
static void add_sym(mem_acc *acc, int64_t words) {
  if (words <= 0) return;
  int64_t b = words * 4, al = (b + 15) / 16 * 16;
  acc->sum += al;
  if (al - b > acc->pad) acc->pad = al - b;
}
static int64_t mem_total(const mem_acc *acc) { return acc->sum - acc->pad; }

static int64_t block_words(const wf_type *t, int w, int h) {
  int64_t e = 1;
  for (int d = 0; d < t->rank; d++) e *= t->layout.rank == t->rank ? block(t, d, w, h) : t->dims[d];
  return e;
}

/* The blocks of the values other than op's operands and results that are live while op runs
 * (defined before it, read after it) into *live, and dies[k] = whether op reads its operand k
 * for the last time (no later op, the return included, uses it). One pass over the ops for
 * every value's definition and last use. */
static void others(const wf_func *f, const wf_op *op, int w, int h, mem_acc *live, int dies[2]) {
  int n = (int)f->n_values, pos = 0, i = 0;
  int *def = malloc((size_t)n * 2 * sizeof *def), *last = def ? def + n : NULL;
  WF_ASSERT(def);
  for (int v = 0; v < n; v++) def[v] = last[v] = -1;
  wf_func_foreach_op(f, o) {
    if (o == op) pos = i;
    for (int r = 0; r < o->n_results; r++) def[o->results[r]] = i;
    for (int k = 0; k < o->n_operands; k++) last[o->operands[k]] = i;
    i++;
  }
  for (int k = 0; k < 2; k++) dies[k] = k < op->n_operands && last[op->operands[k]] == pos;
  for (int k = 0; k < op->n_operands; k++) last[op->operands[k]] = -2; /* the op's own */
  for (int r = 0; r < op->n_results; r++) last[op->results[r]] = -2;
  for (int v = 1; v < n; v++) {
    const wf_value_info *vi = &f->values[v];
    if (last[v] == -2 || vi->type.rank < 1) continue;
    if (last[v] < 0 && vi->kind != WF_VAL_ARG) continue; /* dead: no symbol */
    int dup = 0; /* a global read through two values is one symbol */
    for (int u = 1; vi->kind == WF_VAL_GLOBAL && u < v && !dup; u++)
      dup = f->values[u].kind == WF_VAL_GLOBAL && f->values[u].index == vi->index;
    if (dup) continue;
    if (def[v] < pos && last[v] > pos) add_sym(live, block_words(&vi->type, w, h));
  }
  free(def);
}

/* Bytes per PE algorithm a needs for op (the estimate above): the blocks it lowers with
 * (MeshGEMM and Cannon on W x H: K padded to kp, or re-cut into scratch), its scratch
 * (wf_gemm_buffers, the sizes the lowering allocates; once per op: a batch reuses it), and the
 * other live values. */
static int64_t sram_need(const wf_func *f, const wf_op *op, int w, int h, wf_gemm_algo a, int nbuf,
                         const wf_gemm_choice *ch, int k_whole, int64_t kp, const mem_acc *other,
                         const int dies[2]) {
  const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
  int ra = ta->rank, rb = tb->rank, shift = a == WF_GEMM_MESHGEMM || a == WF_GEMM_CANNON;
  int64_t m = ra >= 2 ? block(ta, ra - 2, w, h) : 1, ka = block(ta, ra - 1, w, h);
  int64_t kb = block(tb, rb - 2, w, h), n = block(tb, rb - 1, w, h);
  int64_t wa = block_words(ta, w, h), wb = block_words(tb, w, h);
  int64_t wc = block_words(wf_value_type(f, op->results[0]), w, h);
  mem_acc acc = {0, 0};
  int rect = shift && w != h && !k_whole;
  if (rect && kp) { /* the host-written operands' padded blocks (wf_gemm_rect_k_pad) */
    int as = -1;
    if (wf_gemm_only_use(f, op->operands[0], &as) == op && as == 0) wa = wa / ka * (kp / w), ka = kp / w;
    if (wf_gemm_only_use(f, op->operands[1], &as) == op && as == 1) wb = wb / kb * (kp / h), kb = kp / h;
  } else if (rect && ch->k_relaid) {
    /* lower_relayout.c: $kp_a / $kp_b hold the re-cut blocks, $rb_recv one received block */
    int64_t kr = ch->k_relaid, recv = 0;
    if (ka != kr / w) add_sym(&acc, m * (kr / w)), recv = m * ka, ka = kr / w;
    if (kb != kr / h) add_sym(&acc, (kr / h) * n), recv = recv > kb * n ? recv : kb * n, kb = kr / h;
    add_sym(&acc, recv);
  }
  int same = op->operands[1] == op->operands[0];
  wf_gemm_bufs bf = {0};
  if (!k_whole) {
    if (a == WF_GEMM_SUMMA) { /* an axis along which K is not split broadcasts nothing */
      int ax = ta->layout.dims[ra - 1].split, by = tb->layout.dims[rb - 2].split;
      wf_gemm_buffers(a, 2, ax == WF_AXIS_X ? w : 1, by == WF_AXIS_Y ? h : 1, m, ka, kb, n, &bf);
    } else {
      wf_gemm_buffers(a, nbuf, w, h, m, ka, kb, n, &bf);
    }
  }
  add_sym(&acc, wc);
  int64_t b[] = {bf.a0, bf.a1, bf.b0, bf.b1, bf.c};
  if (shift && w == h && !k_whole && w > 1 && ch->count == 1) { /* the operands' blocks reused (above) */
    mem_acc dying = {0, 0}, bufs = {0, 0};
    int da = dies[0], db = !same && dies[1];
    add_sym(da ? &dying : &acc, wa);
    if (!same) add_sym(db ? &dying : &acc, wb);
    add_sym(&dying, bf.a0);
    for (int i = 0; i < 5; i++) add_sym(&bufs, b[i]);
    const mem_acc *big = dying.sum > bufs.sum ? &dying : &bufs;
    acc.sum += big->sum;
    if (big->pad > acc.pad) acc.pad = big->pad;
  } else {
    add_sym(&acc, wa);
    if (!same) add_sym(&acc, wb);
    for (int i = 0; i < 5; i++) add_sym(&acc, b[i]);
  }
  acc.sum += other->sum;
  if (other->pad > acc.pad) acc.pad = other->pad;
  return mem_total(&acc);
}

void wf_gemm_choose(const wf_target *t, const wf_func *f, const wf_op *op, int w, int h, int nbuf,
                    wf_gemm_choice *ch) {
  memset(ch, 0, sizeof *ch);
  const wf_type *ta = wf_value_type(f, op->operands[0]), *tb = wf_value_type(f, op->operands[1]);
  const wf_type *tc = wf_value_type(f, op->results[0]);
  int ra = ta->rank, rb = tb->rank, has_rows = ra >= 2;
  /* one matrix's blocks (lower_gemm_batched.c runs the rank-2 algorithm per matrix) */
  int64_t m = has_rows ? block(ta, ra - 2, w, h) : 1, ka = block(ta, ra - 1, w, h);
  int64_t kb = block(tb, rb - 2, w, h), n = block(tb, rb - 1, w, h);
  ch->count = 1;
  for (int d = 0; d < tc->rank - (has_rows ? 2 : 1); d++) ch->count *= tc->dims[d];
  ch->K = ta->dims[ra - 1];
  ch->L = (int)wf_lcm(w, h);
  ch->align_both = 0;
  int ax = ta->layout.dims[ra - 1].split, by = tb->layout.dims[rb - 2].split;
  int64_t f_ = t->fmac_per_cycle > 0 ? t->fmac_per_cycle : 1, local = m * n + (m * ka * n + f_ - 1) / f_;
  int k_whole = ax == WF_AXIS_NONE && by == WF_AXIS_NONE; /* K = 1: every lowering multiplies locally */
  int64_t kp = k_whole ? 0 : wf_gemm_k_paddable(f, op, w, h);
  mem_acc other = {0, 0};
  int dies[2];
  others(f, op, w, h, &other, dies);
  /* weights the host writes aligned for MeshGEMM and Cannon (gemm_preskew.c) */
  ch->preskew = (wf_gemm_preskewable(f, op, 0, w, h) ? WF_PRESKEW_A : 0) |
                (wf_gemm_preskewable(f, op, 1, w, h) ? WF_PRESKEW_B : 0);
  ch->align_both = !k_whole && wf_gemm_align_both(w, h, ch->preskew);
  ch->sram = t->sram_bytes;
  for (int a = 0; a < WF_GEMM_COUNT; a++) {
    int shift = a == WF_GEMM_MESHGEMM || a == WF_GEMM_CANNON;
    /* auto: the double-buffered schedule first; the one-buffer one when that does not fit
     * (only a square region with K split has it: the lowering's own condition) */
    int nb = nbuf == 1 ? 1 : 2;
    int64_t bytes2 = -1; /* auto: the double-buffered estimate, once it did not fit */
  again:;
    int64_t p = -1;
    ch->align[a] = -1;
    ch->why_not[a] = WF_GEMM_NO_NONE;
    ch->buffers[a] = shift && !k_whole && w * h > 1 ? nb : 0;
    if (k_whole) {
      p = local;
    } else if (a == WF_GEMM_SUMMA) {
      /* an axis along which K is not split moves nothing (lower_matmul.c) */
      p = wf_gemm_summa_cost(t, ax == WF_AXIS_X ? w : 1, by == WF_AXIS_Y ? h : 1, m, ka, kb, n);
    } else if (a == WF_GEMM_ALLGATHER || (w == h && (!shift || w == 1))) {
      p = wf_gemm_predict(t, (wf_gemm_algo)a, w, h, m, ka, n);
    } else if (nb == 1 && w != h) {
      ch->why_not[a] = WF_GEMM_NO_ONEBUF; /* lower_gemm_shift.c refuses it */
    } else if (ch->L / w > WF_GEMM_RECT_MAX_V || ch->L / h > WF_GEMM_RECT_MAX_V) {
      ch->why_not[a] = WF_GEMM_NO_VIRTUAL;
    } else if (w > 1 && h > 1 && !wf_gemm_rect_k_fits(w, h, ch->K) && !kp) {
      /* partition's cuts (and no host padding): K is re-cut to lcm tiles over the fabric
       * first (wf_relayout_gemm_k), then the lcm grid runs on K' = L ceil(K/L) */
      int64_t kr = (ch->K + ch->L - 1) / ch->L * ch->L;
      p = wf_gemm_shift_cost(t, a == WF_GEMM_MESHGEMM, w, h, m, kr / w, kr / h, n, 0, nb, &ch->align[a]);
      if (p >= 0) p += wf_relayout_gemm_k_cost(t, w, h, m, n, ch->K, ka, kb);
      ch->k_relaid = kr;
    } else {
      /* the lcm grid on the blocks wf_lower_block gives (one tile per PE on a square
       * region): K padded when kp; the weights the host writes aligned do not shift */
      p = wf_gemm_shift_cost(t, a == WF_GEMM_MESHGEMM, w, h, m, kp ? kp / w : ka, kp ? kp / h : kb, n, ch->preskew,
                             nb, &ch->align[a]);
    }
    ch->predicted[a] = p < 0 ? -1 : p * ch->count;
    if (p < 0 || ch->align[a] < 0) ch->align[a] = -1;
    else ch->align[a] *= ch->count;
    if (p >= 0) ch->bytes[a] = sram_need(f, op, w, h, (wf_gemm_algo)a, nb, ch, k_whole, kp, &other, dies);
    if (nbuf == WF_GEMM_BUFFERS_AUTO && nb == 2 && bytes2 < 0 && ch->buffers[a] == 2 && w == h && p >= 0 &&
        ch->bytes[a] > ch->sram) {
      bytes2 = ch->bytes[a];
      nb = 1;
      goto again;
    }
    /* the three rotating buffers hold max(mk, kn) each: with one block at least twice the
     * other they hold no less than two per operand, and auto keeps 2 */
    if (nbuf == WF_GEMM_BUFFERS_AUTO && nb == 1 && p >= 0 && ch->bytes[a] >= bytes2) {
      nb = 2;
      goto again;
    }
  }
  ch->k_padded = kp;
  /* the lowest prediction, and the lowest among the algorithms that fit */
  int best = -1, fit = wf_gemm_lowest_fitting(ch, 0);
  for (int a = 0; a < WF_GEMM_COUNT; a++)
    if (ch->predicted[a] >= 0 && (best < 0 || ch->predicted[a] < ch->predicted[best])) best = a;
  ch->lowest = best < 0 ? WF_GEMM_SUMMA : (wf_gemm_algo)best;
  ch->best = fit >= 0 ? (wf_gemm_algo)fit : ch->lowest;
}

int wf_gemm_lowest_fitting(const wf_gemm_choice *ch, unsigned skip) {
  int fit = -1;
  for (int a = 0; a < WF_GEMM_COUNT; a++)
    if (!(skip >> a & 1u) && ch->predicted[a] >= 0 && ch->bytes[a] <= ch->sram &&
        (fit < 0 || ch->predicted[a] < ch->predicted[fit]))
      fit = a;
  return fit;
}

void wf_gemm_choice_text(const wf_gemm_choice *ch, char *buf, size_t cap) {
  size_t u = (size_t)snprintf(buf, cap, "candidates:");
  for (int a = 0; a < WF_GEMM_COUNT && u < cap; a++) {
    const char *sep = a ? "," : "";
    int64_t p = ch->predicted[a];
    int shift = a == WF_GEMM_MESHGEMM || a == WF_GEMM_CANNON;
    if (p >= 0 && shift && ch->k_padded)
      u += (size_t)snprintf(buf + u, cap - u, "%s %s %lld (K %lld padded to %lld)", sep, wf_gemm_algo_names[a],
                            (long long)p, (long long)ch->K, (long long)ch->k_padded);
    else if (p >= 0 && shift && ch->k_relaid)
      u += (size_t)snprintf(buf + u, cap - u, "%s %s %lld (K %lld re-cut to %lld on the mesh)", sep,
                            wf_gemm_algo_names[a], (long long)p, (long long)ch->K, (long long)ch->k_relaid);
    else if (p >= 0)
      u += (size_t)snprintf(buf + u, cap - u, "%s %s %lld", sep, wf_gemm_algo_names[a], (long long)p);
    else
      u += (size_t)snprintf(buf + u, cap - u, "%s %s - (%s)", sep, wf_gemm_algo_names[a],
                            ch->why_not[a] == WF_GEMM_NO_VIRTUAL  ? "too many virtual positions per PE"
                            : ch->why_not[a] == WF_GEMM_NO_ONEBUF ? "no one-buffer schedule on W x H"
                                                                  : "no lowering");
    /* the memory-minimal schedule (--gemm-buffers=1 or auto's choice) */
    if (p >= 0 && ch->buffers[a] == 1 && u < cap) u += (size_t)snprintf(buf + u, cap - u, " (1 buffer)");
    /* the alignment's share, and the weights the host writes aligned (they add none) */
    if (p >= 0 && ch->align[a] >= 0 && u < cap)
      u += (size_t)snprintf(buf + u, cap - u, " (alignment %lld%s%s)", (long long)ch->align[a],
                            ch->align_both ? " both ways round" : "",
                            ch->preskew == (WF_PRESKEW_A | WF_PRESKEW_B) ? "; A and B pre-skewed"
                            : ch->preskew == WF_PRESKEW_A                ? "; A pre-skewed"
                            : ch->preskew == WF_PRESKEW_B                ? "; B pre-skewed"
                                               : "");
    if (p >= 0 && ch->bytes[a] > ch->sram && u < cap)
      u += (size_t)snprintf(buf + u, cap - u, " no fit (%lld B)", (long long)ch->bytes[a]);
  }
  if (u >= cap) return;
  if (ch->best != ch->lowest)
    snprintf(buf + u, cap - u, " (lowest that fits: %s)", wf_gemm_algo_names[ch->best]);
  else if (ch->bytes[ch->best] > ch->sram)
    snprintf(buf + u, cap - u, " (lowest: %s; none fits the %lld-B SRAM)", wf_gemm_algo_names[ch->best],
             (long long)ch->sram);
  else
    snprintf(buf + u, cap - u, " (lowest: %s)", wf_gemm_algo_names[ch->best]);
}
