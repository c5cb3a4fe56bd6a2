/* waferc backend — internal to the dist.gemm lowerings (backend/lower_gemm*.c).
 *
 * MeshGEMM and Cannon are one algorithm over two rings: cyclic shifts of A along x and B
 * along y, after an alignment (skew) that gives every PE matching k indices. A ring says
 * how its routes look and which PEs shift in which alignment iteration; lower_gemm_shift.c
 * does the rest. Every role is a guard over x, y and loop variables: the program is one
 * class whatever the mesh size. */
#ifndef WAFERC_BACKEND_LOWER_GEMM_H
#define WAFERC_BACKEND_LOWER_GEMM_H

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_kcut.h"
#include "backend/gemm/gemm_preskew.h"
#include "backend/collectives/ring_line.h"
#include "backend/resources/lower.h"



#define WF_RING_MAX_GUARDS 4
typedef struct wf_ring_align {
  int iters;                                 /* alignment loop: u in [0, iters) */
  wf_pe_guard from0[WF_RING_MAX_GUARDS];     /* shift buffer 0 -> 1 in iteration u */
  int n0;
  wf_pe_guard from1[WF_RING_MAX_GUARDS];     /* shift buffer 1 -> 0 */
  int n1;
  wf_pe_guard fixup[WF_RING_MAX_GUARDS];     /* after alignment the block sits in buffer 1 */
  int nf;
} wf_ring_align;

typedef struct wf_ring {
  const char *name;
  int link_hops; /* the longest ring link, for the report */
  /* The PE that PE i of a line of `len` passes its block to (one ring position forward). */
  int (*dest)(int i, int len);
  /* Alignment of the blocks of line `other` (the row index for A, the column for B): the
   * number of forward shifts is a function of that index; u is the loop variable. */
  void (*align)(wf_ring_align *out, wf_pe_term other, int len, wf_pe_term u);
  /* The alignment both ways round (NULL: forward only): the lines that `back` holds for shift
   * backward, on the links reversed (ring_line.h, wf_ring_links_reversed) with `bwd`'s guards,
   * the others forward with `fwd`'s; both loops have the same iterations. */
  void (*align_both)(wf_ring_align *fwd, wf_ring_align *bwd, wf_pe_guard *back, wf_pe_term other, int len,
                     wf_pe_term u);
} wf_ring;

/* For an align_both (lower_gemm_meshgemm.c): fills fwd (d = 0) and bwd (d = 1): the lines that
 * line[d] holds for shift while `a cmp b` (count[d], over the loop variable u), iteration u
 * reading buffer u % 2, and fixup[d] holds for the lines whose count is odd. */
typedef struct wf_ring_dir {
  wf_pe_guard line, fixup;
  wf_pe_term a, b;
  int cmp;
} wf_ring_dir;
void wf_ring_align_dirs(wf_ring_align *fwd, wf_ring_align *bwd, const wf_ring_dir dir[2], int len, wf_pe_term u);

extern const wf_ring wf_ring_interleave; /* lower_gemm_meshgemm.c */
/* The line's links for `ring` (ring->dest) on the colors of `purpose` (backend/collectives/
 * ring_line.h, wf_ring_dest_links); lower_gemm_meshgemm.c. */
int wf_ring_line_colors(wf_lower *L, const wf_ring *ring, int purpose, const wf_ring_line *line, wf_loc loc);
/* The same links reversed at switch position 1 (once per class and purpose), after them;
 * -1 as wf_ring_links_reversed. */
int wf_ring_line_reversed(wf_lower *L, const wf_ring *ring, int purpose, const wf_ring_line *line);
extern const wf_ring wf_ring_plain;      /* lower_gemm_cannon.c */

/* lower_gemm_allgather.c: gather the row and column panels, then multiply locally. */
int wf_lower_gemm_allgather(wf_lower *L, const wf_op *op, wf_lowered_op *out);

/* lower_gemm_batched.c: a dist.gemm with batch dims or a 1-D A, one rank-2 lowering per
 * matrix of the broadcast batch on views of the operands' blocks. */
int wf_lower_gemm_batched(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_gemm_matrix.c: a rank-2 dist.gemm (or one matrix's view) by its algo attribute.
 * preskew: the operands the host wrote aligned (wf_gemm_preskewed of the real op: a view's
 * operands are fresh values). */
int wf_lower_gemm_matrix(wf_lower *L, const wf_op *op, wf_lowered_op *out, int preskew);

/* Marks the start of phase `n` of the dist.gemm being lowered (WF_GEMM_PHASE_*: alignment,
 * loop, drain; a `phase n` marker, docs/report-format.md) when L->gemm_phases says its
 * phases are measured; nothing otherwise (gemm_phase.c). */
enum { WF_GEMM_PHASE_ALIGN, WF_GEMM_PHASE_LOOP, WF_GEMM_PHASE_DRAIN };
void wf_gemm_phase(wf_lower *L, int n);

int wf_lower_gemm_shift(wf_lower *L, const wf_op *op, wf_lowered_op *out, const wf_ring *ring,
                        wf_gemm_algo algo, int preskew);
/* lower_gemm_rect.c: MeshGEMM / Cannon on a W x H region, W != H (the lcm virtual grid);
 * wf_lower_gemm_shift calls it for such regions. */
int wf_lower_gemm_rect(wf_lower *L, const wf_op *op, wf_lowered_op *out, wf_gemm_algo algo, int preskew);

#endif
