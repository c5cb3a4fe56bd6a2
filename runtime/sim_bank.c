/* SRAM bank conflicts (docs/cycle-model.md, "Bank conflicts"; off unless the target sets
 * bank_conflict_cycles). A PE's SRAM is sram_banks banks of sram_bytes / sram_banks bytes
 * (6 KiB on WSE-2), bank = byte address / bank size. A read step of an instruction whose two
 * source operands are read in the same cycle conflicts when both addresses fall in one bank;
 * each conflicting step costs bank_conflict_cycles more. Read steps: one element per step for
 * the f32 elementwise binaries (add ... min, any broadcast mode), one fp16_simd-wide vector per
 * step for the f16 binaries and hfmac (the address of its first element decides). matmul and
 * hmatmul keep the A element in a register and read one source vector per step: no pairs.
 * The count depends on addresses and sizes only, so timing mode charges the same. */
#include <string.h>

#include "runtime/sim_sched.h"

static int64_t ival(const wf_pe *p, const wf_pe_instr *in, int a) {
  return wf_pe_arg_int(&in->args[a], &p->env);
}

/* Byte address of operand a, whose elements are `es` bytes. */
static int64_t addr(const wf_pe *p, const wf_pe_instr *in, int a, int es) {
  return p->cls->syms[in->args[a].sym].offset + wf_pe_arg_off(&in->args[a], &p->env) * es;
}

int64_t wf_sim_bank_conflicts(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in) {
  const wf_target *t = &s->plan->target;
  if (t->bank_conflict_cycles <= 0 || t->sram_banks <= 0) return 0;
  int64_t bank = t->sram_bytes / t->sram_banks;
  if (bank <= 0) return 0;
  const wf_peop_info *info = &wf_peops[in->op];
  int64_t n_conf = 0;
  if (!strcmp(info->sig, "dssnnm")) {
    int64_t m = ival(p, in, 3), n = ival(p, in, 4), a0 = addr(p, in, 1, 4), b0 = addr(p, in, 2, 4);
    int mode = (int)in->args[5].term.k;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t bi = mode == WF_BMODE_IJ ? i * n + j : mode == WF_BMODE_I ? i : j;
        n_conf += (a0 + 4 * (i * n + j)) / bank == (b0 + 4 * bi) / bank;
      }
  } else if (info->cost == WF_PECOST_SIMD16 && !strcmp(info->sig, "dssn")) {
    int64_t n = ival(p, in, 3), w = t->fp16_simd > 0 ? t->fp16_simd : 1;
    int64_t a0 = addr(p, in, 1, 2), b0 = addr(p, in, 2, 2);
    for (int64_t e = 0; e < n; e += w) n_conf += (a0 + 2 * e) / bank == (b0 + 2 * e) / bank;
  }
  return n_conf * t->bank_conflict_cycles;
}
