/* Compute instructions: their cycle cost (docs/cycle-model.md, "PE costs") and, in
 * functional mode, their effect on PE memory. Costs depend only on integer operands, never
 * on data, so timing mode charges the same cycles without executing anything. */
#include <math.h>
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

static int64_t ival(const wf_pe *p, const wf_pe_instr *in, int a) {
  return wf_pe_arg_int(&in->args[a], &p->env);
}

int64_t wf_sim_compute_cycles(const wf_sim *s, const wf_pe *p, const wf_pe_instr *in) {
  const wf_peop_info *info = &wf_peops[in->op];
  int64_t work = 1;
  for (int i = 0; info->sig[i]; i++)
    if (info->sig[i] == 'n') work *= ival(p, in, i);
  /* a strided copy moves rows x cols words; its strides are addresses, not work; gather's and
   * scatter's P6 (the table's rows) and rfind's P6 (an index base) are bounds, not work */
  if (in->op == WF_PEOP_COPY2D) work = ival(p, in, 2) * ival(p, in, 3);
  if (in->op == WF_PEOP_GATHER || in->op == WF_PEOP_SCATTER || in->op == WF_PEOP_SCATTERADD ||
      in->op == WF_PEOP_RFIND || in->op == WF_PEOP_RFINDL)
    work = ival(p, in, 3) * ival(p, in, 4);
  const wf_target *t = &s->plan->target;
  int64_t simd = t->fp16_simd > 0 ? t->fp16_simd : 1, cyc;
  switch (info->cost) {
    case WF_PECOST_ELEM: cyc = work; break;
    case WF_PECOST_EXP: cyc = work * t->exp_cycles; break;
    case WF_PECOST_DIV: cyc = work * t->div_cycles; break;
    case WF_PECOST_FMAC: cyc = (work + t->fmac_per_cycle - 1) / t->fmac_per_cycle; break;
    case WF_PECOST_SIMD16: cyc = (work + simd - 1) / simd; break;
    default: return 0;
  }
  return cyc + wf_sim_bank_conflicts(s, p, in);
}

static float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
static float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

static float unary(wf_peop op, float v) {
  switch (op) {
    case WF_PEOP_NEG: return -v;
    case WF_PEOP_RELU: return v > 0 ? v : 0;
    case WF_PEOP_EXP: return expf(v);
    case WF_PEOP_LOG: return logf(v);
    case WF_PEOP_TANH: return tanhf(v);
    case WF_PEOP_COS: return cosf(v);
    case WF_PEOP_SIN: return sinf(v);
    case WF_PEOP_ERF: return erff(v);
    case WF_PEOP_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case WF_PEOP_SILU: return v / (1.0f + expf(-v));
    case WF_PEOP_GELU: return gelu_erf(v);
    case WF_PEOP_GELU_TANH: return gelu_tanh(v);
    case WF_PEOP_SQRT: return sqrtf(v);
    case WF_PEOP_RSQRT: return 1.0f / sqrtf(v);
    case WF_PEOP_RECIP: return 1.0f / v;
    default: WF_UNREACHABLE("not a unary PE op");
  }
}

static float binary(wf_peop op, float a, float b) {
  switch (op) {
    case WF_PEOP_ADD: return a + b;
    case WF_PEOP_SUB: return a - b;
    case WF_PEOP_MUL: return a * b;
    case WF_PEOP_DIV: return a / b;
    case WF_PEOP_MAX: return a > b ? a : b;
    case WF_PEOP_MIN: return a < b ? a : b;
    case WF_PEOP_EQ: return a == b ? 1.0f : 0.0f;
    case WF_PEOP_LT: return a < b ? 1.0f : 0.0f;
    case WF_PEOP_SEL: return a != 0.0f ? b : 0.0f;
    default: WF_UNREACHABLE("not a binary PE op");
  }
}

#define OPND(var, a, words)                                        \
  float *var;                                                      \
  do {                                                             \
    int64_t off_;                                                  \
    if (wf_sim_operand(s, p, in, a, words, &var, &off_)) return -1; \
  } while (0)

/* Checks the operands and, when fn is set, performs the instruction. */
static int run(wf_sim *s, wf_pe *p, const wf_pe_instr *in, int fn) {
  const char *sig = wf_peops[in->op].sig;
  switch (in->op) {
    case WF_PEOP_ZERO: {
      int64_t n = ival(p, in, 1);
      OPND(d, 0, n);
      if (fn) memset(d, 0, (size_t)n * sizeof *d);
      return 0;
    }
    case WF_PEOP_COPY: {
      int64_t n = ival(p, in, 2);
      OPND(d, 0, n);
      OPND(a, 1, n);
      if (fn) memmove(d, a, (size_t)n * sizeof *d);
      return 0;
    }
    case WF_PEOP_MATMUL: {
      int64_t m = ival(p, in, 3), k = ival(p, in, 4), n = ival(p, in, 5);
      OPND(c, 0, m * n);
      OPND(a, 1, m * k);
      OPND(b, 2, k * n);
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++) {
          float av = a[i * k + kk];
          for (int64_t j = 0; j < n; j++) c[i * n + j] += av * b[kk * n + j];
        }
      return 0;
    }
    case WF_PEOP_MATMUL_T: { /* B read by rows: a strided operand, as a DSD walks it */
      int64_t m = ival(p, in, 3), k = ival(p, in, 4), n = ival(p, in, 5);
      OPND(c, 0, m * n);
      OPND(a, 1, m * k);
      OPND(b, 2, n * k);
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          float acc = c[i * n + j];
          for (int64_t kk = 0; kk < k; kk++) acc += a[i * k + kk] * b[j * k + kk];
          c[i * n + j] = acc;
        }
      return 0;
    }
    case WF_PEOP_COPY2D: { /* d and s must not overlap: the backend never asks for it */
      int64_t r = ival(p, in, 2), n = ival(p, in, 3), ds = ival(p, in, 4), ss = ival(p, in, 5);
      if (r <= 0 || n <= 0) return 0;
      OPND(d, 0, (r - 1) * ds + n);
      OPND(a, 1, (r - 1) * ss + n);
      if (!fn) return 0;
      for (int64_t i = 0; i < r; i++) memmove(d + i * ds, a + i * ss, (size_t)n * sizeof *d);
      return 0;
    }
    case WF_PEOP_TRANSPOSE: { /* d and s must not overlap: the backend never asks for it */
      int64_t m = ival(p, in, 2), n = ival(p, in, 3);
      OPND(d, 0, m * n);
      OPND(a, 1, m * n);
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) d[j * m + i] = a[i * n + j];
      return 0;
    }
    case WF_PEOP_GATHER:
    case WF_PEOP_SCATTER:
    case WF_PEOP_SCATTERADD: { /* the ids are read first: a bad id stops before any row moves */
      const char *name = wf_peops[in->op].name;
      int gather = in->op == WF_PEOP_GATHER;
      int64_t n = ival(p, in, 3), row = ival(p, in, 4), rows = ival(p, in, 5);
      if (n < 0 || row < 0 || rows < 0) {
        wf_sim_rt_error(s, p, in, "%s: negative count (%lld ids, rows of %lld, %lld rows)", name, (long long)n,
                        (long long)row, (long long)rows);
        return -1;
      }
      OPND(d, 0, (gather ? n : rows) * row); /* gather: d the rows read; scatter: d the table */
      OPND(t, 1, (gather ? rows : n) * row);
      OPND(ix, 2, n);
      if (!fn) return 0;
      for (int64_t i = 0; i < n; i++) {
        float v = ix[i];
        /* ids travel as f32 (exact integers below 2^24, which the compiler checks V is) */
        if (!(v >= (float)-rows && v < (float)rows) || v != floorf(v)) {
          wf_sim_rt_error(s, p, in, "%s: index %.9g (id %lld of this PE's block) is out of range "
                                    "for a table of %lld rows: ids must be integers in [-%lld, %lld)",
                          name, (double)v, (long long)i, (long long)rows, (long long)rows, (long long)rows);
          return -1;
        }
      }
      for (int64_t i = 0; i < n; i++) {
        int64_t r = (int64_t)ix[i];
        if (r < 0) r += rows;
        if (gather)
          memmove(d + i * row, t + r * row, (size_t)row * sizeof *d);
        else if (in->op == WF_PEOP_SCATTER)
          memmove(d + r * row, t + i * row, (size_t)row * sizeof *d);
        else
          for (int64_t j = 0; j < row; j++) d[r * row + j] += t[i * row + j];
      }
      return 0;
    }
    case WF_PEOP_RFIND:
    case WF_PEOP_RFINDL: { /* the first match (+inf when none) or the last (-inf) */
      int64_t m = ival(p, in, 3), n = ival(p, in, 4), base = ival(p, in, 5);
      int last = in->op == WF_PEOP_RFINDL;
      OPND(d, 0, m);
      OPND(a, 1, m * n);
      OPND(k, 2, m);
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++) {
        float key = k[i], r = last ? -INFINITY : INFINITY;
        for (int64_t jj = 0; jj < n; jj++) {
          int64_t j = last ? n - 1 - jj : jj;
          if (a[i * n + j] == key) {
            r = (float)(base + j);
            break;
          }
        }
        d[i] = r;
      }
      return 0;
    }
    case WF_PEOP_RMAX:
    case WF_PEOP_RSUM: {
      int64_t m = ival(p, in, 2), n = ival(p, in, 3);
      OPND(d, 0, m);
      OPND(a, 1, m * n);
      if (!fn) return 0;
      for (int64_t i = 0; i < m; i++) {
        float acc = in->op == WF_PEOP_RMAX ? -INFINITY : 0.0f;
        for (int64_t j = 0; j < n; j++) {
          float v = a[i * n + j];
          acc = in->op == WF_PEOP_RMAX ? (v > acc ? v : acc) : acc + v;
        }
        d[i] = acc;
      }
      return 0;
    }
    default:
      break;
  }
  if (wf_peops[in->op].cost == WF_PECOST_SIMD16) return wf_sim_run_f16(s, p, in, fn);
  if (!strcmp(sig, "dssnnm")) {
    int64_t m = ival(p, in, 3), n = ival(p, in, 4);
    int mode = (int)in->args[5].term.k;
    int64_t bn = mode == WF_BMODE_IJ ? m * n : mode == WF_BMODE_I ? m : n;
    OPND(d, 0, m * n);
    OPND(a, 1, m * n);
    OPND(b, 2, bn);
    if (!fn) return 0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        float bv = mode == WF_BMODE_IJ ? b[i * n + j] : mode == WF_BMODE_I ? b[i] : b[j];
        d[i * n + j] = binary(in->op, a[i * n + j], bv);
      }
    return 0;
  }
  if (!strcmp(sig, "dsn")) {
    int64_t n = ival(p, in, 2);
    OPND(d, 0, n);
    OPND(a, 1, n);
    if (!fn) return 0;
    for (int64_t i = 0; i < n; i++) d[i] = unary(in->op, a[i]);
    return 0;
  }
  WF_UNREACHABLE("PE op without an executor");
}

int wf_sim_execute(wf_sim *s, wf_pe *p, const wf_pe_instr *in) {
  if (!s->functional) return run(s, p, in, 0);
  if (s->cp_fn) {
    if (run(s, p, in, 0)) return -1;
    int r = s->cp_fn(s->cp_user, p->cls, p->cls_i, in, wf_sim_pe_mem(s, p), &p->env);
    if (r < 0) {
      wf_sim_rt_error(s, p, in, "the compute hook failed on '%s'", wf_peops[in->op].name);
      return -1;
    }
    if (r == 0) return 0;
  }
  return run(s, p, in, 1);
}
