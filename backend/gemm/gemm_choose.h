/* waferc backend — which dist.gemm algorithms can lower a partitioned matmul, what each
 * lowering would predict, and the lowest (lower-gemm's `algo=auto`; the manifest's
 * `explain` of every dist.gemm lists the same numbers). docs/gemm.md, "Choosing".
 *
 *   wf_gemm_choice ch;
 *   wf_gemm_choose(t, f, op, 2, 3, &ch); // op: a matmul or dist.gemm on a 2x3 region
 *   wf_op_set_ident(f, op, "algo", wf_gemm_algo_names[ch.best]);
 */
#ifndef WAFERC_BACKEND_GEMM_CHOOSE_H
#define WAFERC_BACKEND_GEMM_CHOOSE_H

#include <stddef.h>

#include "backend/gemm/gemm_algos.h"
#include "backend/gemm/gemm_kcut.h"
#include "backend/gemm/gemm_preskew.h"
#include "waferc/ir.h"

typedef struct wf_gemm_choice {
  int64_t predicted[WF_GEMM_COUNT]; /* the whole op's cycles (all matrices), -1 = cannot lower */
  int64_t K;                        /* the contracted extent */
  int64_t k_padded;                 /* meshgemm / cannon on W x H pad K to this (0 = no) */
  int64_t k_relaid;                 /* ... or re-cut it to this over the fabric (0 = no) */
  int64_t count;                    /* matrices of the broadcast batch (1 for rank 2) */
  wf_gemm_algo best;                /* the lowest prediction (ties: table order) */
  int why_not[WF_GEMM_COUNT];       /* predicted -1: WF_GEMM_NO_* */
  int L;                            /* lcm(w, h), for the text */
  /* SRAM (docs/gemm.md, "Choosing"): each algorithm's estimated bytes per PE while the op
   * runs (its operands' and result's blocks, its scratch, other live tensors); `best` is the
   * lowest prediction among those that fit the target's SRAM (`lowest` among all: they
   * differ only when that one does not fit); none fits: best = lowest. */
  int64_t bytes[WF_GEMM_COUNT];
  int64_t sram;                     /* the target's SRAM per PE */
  wf_gemm_algo lowest;
  int preskew;                      /* WF_PRESKEW_A | _B: weights MeshGEMM and Cannon get aligned */
  int64_t align[WF_GEMM_COUNT];     /* MeshGEMM and Cannon: the alignment's predicted cycles, else -1 */
  int align_both;                   /* MeshGEMM's and Cannon's alignment goes both ways round
                                       (wf_gemm_align_both) */
  int buffers[WF_GEMM_COUNT];       /* MeshGEMM and Cannon: the schedule predicted (1 or 2), else 0 */
} wf_gemm_choice;

enum { WF_GEMM_NO_NONE, WF_GEMM_NO_VIRTUAL, WF_GEMM_NO_ONEBUF };

/* Fills `ch` for `op` (a partitioned matmul or dist.gemm, rank >= 2 B) on a w x h region:
 * each algorithm's prediction as its lowering reports it (the K padding above for MeshGEMM
 * and Cannon on W x H, K whole: the local product) and its estimated SRAM per PE; best = the
 * lowest prediction among the algorithms that fit. nbuf: MeshGEMM's and Cannon's schedule
 * (gemm_algos.h, wf_gemm_buffers): 1 or 2 as given (1 on W x H: no lowering), or
 * WF_GEMM_BUFFERS_AUTO: 2 where its estimate fits the SRAM, else 1 (ch->buffers). */
void wf_gemm_choose(const wf_target *t, const wf_func *f, const wf_op *op, int w, int h, int nbuf,
                    wf_gemm_choice *ch);

/* The algorithm of the lowest prediction among those that can lower the op and fit the SRAM,
 * leaving out those whose bit is set in skip (1u << WF_GEMM_...); -1 when none. ch->best is
 * that with skip 0 (else the lowest prediction). */
int wf_gemm_lowest_fitting(const wf_gemm_choice *ch, unsigned skip);

/* "candidates: meshgemm 120 (K 4 padded to 6), cannon 98, summa 35, allgather 50 (lowest:
 * summa)", or "(K 4 re-cut to 6 on the mesh)" for a relaid K; an algorithm that does not
 * fit: "allgather 30 no fit (143360 B)" and "(lowest that fits: summa)": the manifest's
 * explain of a dist.gemm. */
void wf_gemm_choice_text(const wf_gemm_choice *ch, char *buf, size_t cap);

#endif
