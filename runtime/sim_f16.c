/* fp16 SIMD instructions (the h* rows of ir/pe/peops.def): IEEE binary16 data in PE SRAM,
 * two bytes per element, operand offsets counted in f16 elements. Numerics
 * (docs/cycle-model.md, "fp16"): hadd/hsub/hmul/hmax compute in f32 and round once to f16
 * (round to nearest even). f32 carries 24 >= 2*11+2 significand bits, so this double rounding
 * gives the correctly rounded fp16 result. hfmac/hmatmul multiply f16 by f16 (the product is
 * exact in f32) and accumulate into an f32 destination, the mixed-precision FMAC the
 * hardware has; the sum is rounded to f32 once per step. */
#include <math.h>
#include <string.h>

#include "runtime/sim_internal.h"
#include "waferc/diag.h"
#include "waferc/tensor.h" /* wf_f16_to_f32, wf_f32_to_f16 (round to nearest even) */

/* f16 operand a of `in`, `elems` elements: 0 and a byte pointer (NULL in timing mode), or -1
 * after reporting an overrun of its symbol. */
static int operand_h(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int a, int64_t elems,
                     unsigned char **ptr) {
  const wf_pe_sym *sym = &p->cls->syms[in->args[a].sym];
  int64_t o = wf_pe_arg_off(&in->args[a], &p->env);
  if (elems < 0 || o < 0 || 2 * (o + elems) > sym->bytes) {
    wf_sim_rt_error(s, p, in,
                    "%s operand %d reaches past the end of %s (%lld f16 elements at +%lld, "
                    "symbol holds %lld)",
                    wf_peops[in->op].name, a + 1, sym->name, (long long)elems, (long long)o,
                    (long long)(sym->bytes / 2));
    return -1;
  }
  float *m = wf_sim_pe_mem(s, p);
  *ptr = m ? (unsigned char *)m + sym->offset + 2 * o : NULL;
  return 0;
}

static float ld(const unsigned char *b, int64_t i) {
  uint16_t h;
  memcpy(&h, b + 2 * i, 2);
  return wf_f16_to_f32(h);
}

static void st(unsigned char *b, int64_t i, float v) {
  uint16_t h = wf_f32_to_f16(v);
  memcpy(b + 2 * i, &h, 2);
}

static float h_binary(wf_peop op, float a, float b) {
  switch (op) {
    case WF_PEOP_HADD: return a + b;
    case WF_PEOP_HSUB: return a - b;
    case WF_PEOP_HMUL: return a * b;
    case WF_PEOP_HMAX: return a > b ? a : b;
    default: WF_UNREACHABLE("not an f16 binary op");
  }
}

static int64_t ival(const wf_pe *p, const wf_pe_instr *in, int a) {
  return wf_pe_arg_int(&in->args[a], &p->env);
}

int wf_sim_run_f16(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int fn) {
  unsigned char *hd, *ha, *hb;
  float *fd, *fa;
  int64_t off;
  switch (in->op) {
    case WF_PEOP_HCVT: {
      int64_t n = ival(p, in, 2);
      if (operand_h(s, p, in, 0, n, &hd) || wf_sim_operand(s, p, in, 1, n, &fa, &off)) return -1;
      if (fn) /* forward: an in-place narrowing never overwrites an unread f32 */
        for (int64_t i = 0; i < n; i++) st(hd, i, fa[i]);
      return 0;
    }
    case WF_PEOP_HEXT: {
      int64_t n = ival(p, in, 2);
      if (wf_sim_operand(s, p, in, 0, n, &fd, &off) || operand_h(s, p, in, 1, n, &ha)) return -1;
      if (fn) /* backward: an in-place widening never overwrites an unread f16 */
        for (int64_t i = n - 1; i >= 0; i--) fd[i] = ld(ha, i);
      return 0;
    }
    case WF_PEOP_HFMAC: {
      int64_t n = ival(p, in, 3);
      if (wf_sim_operand(s, p, in, 0, n, &fd, &off) || operand_h(s, p, in, 1, n, &ha) ||
          operand_h(s, p, in, 2, n, &hb))
        return -1;
      if (fn)
        for (int64_t i = 0; i < n; i++) fd[i] += ld(ha, i) * ld(hb, i);
      return 0;
    }
    case WF_PEOP_HMATMUL: {
      int64_t m = ival(p, in, 3), k = ival(p, in, 4), n = ival(p, in, 5);
      if (wf_sim_operand(s, p, in, 0, m * n, &fd, &off) || operand_h(s, p, in, 1, m * k, &ha) ||
          operand_h(s, p, in, 2, k * n, &hb))
        return -1;
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++) {
          float av = ld(ha, i * k + kk);
          for (int64_t j = 0; j < n; j++) fd[i * n + j] += av * ld(hb, kk * n + j);
        }
      return 0;
    }
    default: { /* hadd, hsub, hmul, hmax */
      int64_t n = ival(p, in, 3);
      if (operand_h(s, p, in, 0, n, &hd) || operand_h(s, p, in, 1, n, &ha) ||
          operand_h(s, p, in, 2, n, &hb))
        return -1;
      if (fn)
        for (int64_t i = 0; i < n; i++) st(hd, i, h_binary(in->op, ld(ha, i), ld(hb, i)));
      return 0;
    }
  }
}
