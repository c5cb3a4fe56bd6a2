/* waferc backend — distributed GEMM algorithms (dist.gemm, docs/gemm.md): names, the cost
 * formulas `--gemm-algo=auto` ranks them by, and the lowering entry points.
 *
 *   wf_gemm_algo a;
 *   wf_gemm_algo_parse("meshgemm", &a);
 *   int64_t c = wf_gemm_predict(t, a, 8, 8, 64, 64, 64); // 8x8 mesh, 64x64 blocks
 */
#ifndef WAFERC_BACKEND_GEMM_ALGOS_H
#define WAFERC_BACKEND_GEMM_ALGOS_H

#include <stdint.h>

#include "backend/resources/row_skew.h"
#include "waferc/collectives.h"
#include "waferc/target.h"

typedef enum wf_gemm_algo {
  WF_GEMM_MESHGEMM,  /* WaferLLM §5: cyclic shift over INTERLEAVE two-hop rings */
  WF_GEMM_CANNON,    /* the same shifts over the plain ring (wrap link N-1 hops long) */
  WF_GEMM_SUMMA,     /* per k-step row and column broadcasts */
  WF_GEMM_ALLGATHER, /* gather the whole A row panel and B column panel, then compute */
  WF_GEMM_COUNT
} wf_gemm_algo;

extern const char *const wf_gemm_algo_names[WF_GEMM_COUNT];
/* 0 and *out set, or -1 for an unknown name. */
int wf_gemm_algo_parse(const char *name, wf_gemm_algo *out);

/* Predicted cycles of one dist.gemm on a w x h region whose PEs hold A blocks m x k and
 * B blocks k x n (C blocks m x n). -1 when the algorithm cannot lower that shape. */
int64_t wf_gemm_predict(const wf_target *t, wf_gemm_algo a, int w, int h, int64_t m, int64_t k,
                        int64_t n);
/* SUMMA on a w x h region with A blocks m x ka and B blocks kb x n (ka = ceil(K/w), kb =
 * ceil(K/h)): what wf_gemm_predict returns for SUMMA with kb derived from ka, and what the
 * lowering reports with its real kb. -1 on a bad shape. */
int64_t wf_gemm_summa_cost(const wf_target *t, int w, int h, int64_t m, int64_t ka, int64_t kb,
                           int64_t n);
/* MeshGEMM (meshgemm = 1) or Cannon on a w x h region (w = h too, w h > 1), A blocks m x ka,
 * B blocks kb x n (the lowering's and the chooser's prediction; wf_gemm_predict derives kb =
 * ceil(ka w / h)); -1 when ka is not a multiple of lcm(w, h) / w (gemm_cost_rect.c). */
int64_t wf_gemm_rect_shift_cost(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka,
                                int64_t kb, int64_t n);
/* The same with the operands `preskew` names (WF_PRESKEW_A = 1, WF_PRESKEW_B = 2,
 * gemm_preskew.h) written aligned by the host: they do not move in the alignment; and the
 * schedule of `nbuf` buffers (2: double buffered; 1: the memory-minimal schedule, square
 * regions only: -1 on W x H, see wf_gemm_buffers). *align (optional) receives the
 * alignment's cycles: how much later the latest PE ends it than it would with nothing to
 * shift (0 when both operands are pre-skewed). */
int64_t wf_gemm_shift_cost(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                           int64_t n, int preskew, int nbuf, int64_t *align);
/* The same, split into the phases the report measures (docs/gemm.md, "Phases"):
 * phases[0] the alignment (0 on a square region when both operands are pre-skewed),
 * phases[1] the loop (with the setup before the alignment), phases[2] the drain (C's tiles
 * copied back on W x H; 0 on a square region); they add up to the return value. */
int64_t wf_gemm_shift_phases(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                             int64_t n, int preskew, int nbuf, int64_t *align, int64_t phases[3]);
/* The same with each row starting when rs->start says and the rows' ends in rs->end
 * (row_skew.h; rs may be NULL). The start is taken, and the ends given, only when the model
 * follows every row (it samples rows on large meshes): the prediction is then the cycles from
 * the op before's end to this one's. */
int64_t wf_gemm_shift_sched(const wf_target *t, int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb,
                            int64_t n, int preskew, int nbuf, int64_t *align, int64_t phases[3], wf_row_skew *rs);
/* The one-buffer schedule on a square region (lower_gemm_shift.c): the operand that aligns
 * through C's block, a second spare until the loop zeroes it, so that A and B align at once
 * as with two buffers: WF_PRESKEW_B (B's block fits C's: m >= k), else WF_PRESKEW_A (n >= k);
 * 0 when only one operand aligns or C holds neither block (they align one after the other
 * through the one spare). */
int wf_gemm_single_c_spare(int64_t m, int64_t k, int64_t n, int preskew);
/* MeshGEMM's and Cannon's alignment goes both ways round (lower_gemm_shift.c): on a square
 * region of side 4 or more when an operand aligns at all, on 3 x 3 when both do (preskew:
 * the pre-skewed operands). */
int wf_gemm_align_both(int w, int h, int preskew);
/* The per-PE scratch of one matrix's dist.gemm lowering, in words: the buffers it allocates
 * (wf_lower_temp), sized here once for the lowerings and for the chooser's SRAM check
 * (gemm_choose.c). ka, kb, m, n: the blocks the algorithm runs on (K already padded or
 * re-cut; for SUMMA w or h is 1 along an axis whose K is not split). K whole (K = 1) and a
 * 1x1 region lower to a local product and need none of these. 0 = not allocated. */
typedef struct wf_gemm_bufs {
  int64_t a0, a1, b0, b1; /* meshgemm/cannon: $gemm_a0/a1/b0/b1; summa: $a_recv (a0), $a_tile
                           * (a1), $b_recv (b0); allgather: the panels (a0, b0) */
  int64_t c;              /* meshgemm/cannon on W x H: $gemm_c, C's tiles (0: C in place) */
  int sx, sy;             /* meshgemm/cannon on W x H: tile slots per row of buffer 0 */
} wf_gemm_bufs;
void wf_gemm_buffers(wf_gemm_algo a, int nbuf, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                     wf_gemm_bufs *out);
/* --gemm-buffers (lower-gemm's `buffers`, the dist.gemm's `buffers` attribute): how many
 * buffers per operand MeshGEMM and Cannon shift through. 2 (the default): a step multiplies
 * one pair while the next pair streams in. 1, WaferLLM's memory-minimal budget (the A, B and
 * C blocks plus one spare): on a square region three rotating buffers of max(m k, k n) words
 * hold A, B and the spare, and a step multiplies, then shifts A into the spare and B into
 * A's old buffer, each closed by a wait (lower_gemm_shift.c; less memory than 2 while
 * neither block is twice the other); not offered on W x H (the lcm
 * grid's renaming slots are already one spare tile per tile row). SUMMA's broadcasts block
 * and allgather has no steps: both lower the same for 1 and 2. Auto (lower-gemm only): 2
 * when its SRAM estimate fits, else 1 if that estimate is smaller (gemm_choose.c). */
enum { WF_GEMM_BUFFERS_AUTO = 0 };
/* 0 and *out (1, 2 or WF_GEMM_BUFFERS_AUTO) for "1", "2" or "auto"; -1 otherwise. */
int wf_gemm_buffers_parse(const char *s, int *out);
/* Tile slots per row of buffer 0 on an axis of v positions per PE, len PEs long: renaming
 * Cannon (v + 1, v on a 1-PE axis) and renaming MeshGEMM (v + 2; 2 for v = 1). */
int wf_gemm_rect_cannon_slots(int v, int len);
/* wf_gemm_buffers of MeshGEMM (meshgemm = 1) or Cannon on w x h, w != h (gemm_cost_rect.c). */
void wf_gemm_rect_buffers(int meshgemm, int w, int h, int64_t m, int64_t ka, int64_t kb, int64_t n,
                          wf_gemm_bufs *out);
int wf_gemm_rect_mesh_slots(int v);
/* The algorithm with the lowest prediction (ties: table order). */
wf_gemm_algo wf_gemm_auto(const wf_target *t, int w, int h, int64_t m, int64_t k, int64_t n);
/* Cannon on w x h (w != h): the number of steps its unrolled loop body holds when the steps
 * rename tile slots instead of copying the tiles that stay on a PE (lcm of v_x + 1 and
 * v_y + 1, v for a 1-PE axis), or 0 when that body would pass WF_GEMM_RECT_MAX_UNROLL
 * multiplies and the steps copy (gemm_cost_rect.c, lower_gemm_rect.c). */
#define WF_GEMM_RECT_MAX_UNROLL 1024
/* MeshGEMM and Cannon on w x h: the most virtual positions a PE stands for along an axis
 * (lcm(w, h) / w or / h); the program is unrolled over them (lower_gemm_rect.c refuses more,
 * and the chooser leaves the two algorithms out). */
#define WF_GEMM_RECT_MAX_V 16
int wf_gemm_rect_cannon_period(int w, int h);
/* The same for MeshGEMM on w x h: its steps rename slots along INTERLEAVE's even and odd
 * chains of a PE (lower_gemm_rect.c); *turns = 1 when the ends of a line copy their turning
 * tile (the smaller program) instead of renaming it too; 0: the steps copy. */
int wf_gemm_rect_meshgemm_period(int w, int h, int *turns);

/* ---- dist.gemv (MeshGEMV, lower_gemv.c; gemv_cost.c) ---- */
/* The allreduce of n-word partial sums over a line of P PEs as lower_gemv.c predicts it: the
 * K-tree with its broadcast back (-1 when the tree cannot be built), or the pipeline (a chain
 * to the line's end, then a flooding broadcast). 0 for P <= 1. */
double wf_gemv_ktree_allreduce(int P, int K, int groups, int64_t len, const wf_coll_params *p);
double wf_gemv_pipeline_allreduce(int P, int64_t len, const wf_coll_params *p);
/* The K-tree shape (*K levels, or the two-level variant's *groups when > 0) that minimizes
 * the sum of wf_gemv_ktree_allreduce over allreduces of lens[0 .. nlens-1] words on the same
 * line of P PEs (one shape per line: a tree of another shape would need colors of its own),
 * among the trees of at most two levels (gemv_cost.c says why). Returns that sum. */
double wf_gemv_ktree_tune(int P, const int64_t *lens, int nlens, const wf_coll_params *p, int *K, int *groups);
/* One dist.gemv whose line of P PEs holds x blocks of k and W blocks k x n: the local GEMV plus
 * the allreduce `how` names (ktree, pipeline, ring, or auto: the lowest, as the lowering picks),
 * K levels or `groups`; *chosen (optional) names the allreduce. -1 for an unknown `how`. */
int64_t wf_gemv_predict(const wf_target *t, int P, int64_t k, int64_t n, const char *how, int K, int groups,
                        const char **chosen);

#endif
