/* The two graphs of generation (docs/generation.md), from one export with a dynamic sequence
 * axis whose attention head-layout has packed:
 *
 * generate-prefill  the prompt's graph, ids [1, L] -> logits [1, L, V], returns besides its
 *                   logits `next_ids` (argmax of every row, i64 [1, L]: the last is the first
 *                   new token) and the k and v of every attention (`k_cache_<i>`,
 *                   `v_cache_<i>` [B, L, Nk]), the cache the decode steps continue.
 *
 * decode-step       the same graph imported for T positions becomes one decode step: the
 *                   token ids [1, 1], its `position` [1], and per attention the caches
 *                   `k_cache_<i>`, `v_cache_<i>` [B, C, Nk] (C = `capacity` slots) are the
 *                   arguments; every activation is one row ([B, 1, X]); a constant indexed by
 *                   position along the sequence axis (RoPE's cos/sin tables, learned position
 *                   embeddings, [T, X] or [1, T, X]) is read at the token's position by a gather;
 *                   each attention becomes decode_attention over the caches, which it updates
 *                   in place; the step returns `next_ids` (argmax of the logits, i64 [1, 1]) and
 *                   the caches.
 *
 * Both run after head-layout, on the packed [B, S, E''] form, so the decode step's k/v columns
 * are the prefill's: the cache a prefill leaves on a PE is the cache the decode step reads
 * there (the same mesh: same columns per PE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rules.h"
#include "waferc/diag.h"
#include "waferc/pass.h"
#include "waferc/tensor.h"

static const wf_pass_option ds_opts[] = {
    {"capacity", WF_OPT_INT, "0", "cache slots C of each decode_attention (required, > 0)"},
    {"rope", WF_OPT_STRING, "held",
     "RoPE's rows at the position: gathered from the tables the step holds (held) or computed by cos and "
     "sin of position x angle (computed: no table grows with the sequence; the tables must be such)"},
};
static const char *const ds_stats[] = {"attention-decoded", "position-gathers", "rope-computed"};

static wf_func *main_func(wf_module *m) {
  wf_func *f = wf_module_find_func(m, "main");
  return f ? f : m->n_funcs ? m->funcs[0] : NULL;
}

/* The token ids: an integer argument [1, S] used as the indices of a gather. */
static int ids_arg(wf_func *f) {
  for (int a = 0; a < f->n_args; a++) {
    wf_value v = f->args[a];
    const wf_type *t = wf_value_type(f, v);
    if ((t->dtype != WF_I64 && t->dtype != WF_I32) || t->rank != 2) continue;
    wf_func_foreach_op(f, op) if (op->code == WF_OP_GATHER && op->operands[1] == v) return a;
  }
  return -1;
}

static int is_packed_attention(const wf_func *f, const wf_op *op) {
  return op->code == WF_OP_ATTENTION && wf_op_int(f, op, "heads", 0) > 0;
}

/* The decode step reads the prefill's k and v columns as its cache. A decode step whose kv heads
 * are gathered inside its attention (head-layout{gqa=gather}) has no lowering; colocated with q
 * (gqa=colocate) it has, over the same cut of k and v: a prefill that gathers them (its q packed
 * as usual, the kv pieces gathered inside its attention) returns that cut as its caches. */
static int gathered(const wf_func *f, const wf_op *op, const char *who) {
  if (!wf_op_attr(f, op, "kv_gather") || wf_op_int(f, op, "q_colocated", 0)) return 0;
  wf_error(op->loc, "%s: this attention's kv heads are gathered across columns (head-layout{gqa=gather} or its "
                    "auto choice), which decoding does not read: run head-layout{gqa=colocate} or {gqa=replicate}",
           who);
  return 1;
}

static wf_op *append_argmax(wf_func *f, wf_op *ret, wf_value logits) {
  const wf_type *lt = wf_value_type(f, logits);
  int64_t dims[WF_MAX_RANK];
  for (int d = 0; d + 1 < lt->rank; d++) dims[d] = lt->dims[d];
  wf_type it = wf_type_make(WF_I64, lt->rank - 1, dims);
  wf_op *am = wf_op_new(f, WF_OP_ARGMAX, 1, &logits, 1, &it, ret->loc);
  wf_op_insert_before(f, ret, am);
  wf_op_set_int(f, am, "axis", -1);
  wf_op_set_attr(f, am, (wf_attr){wf_intern(f->module, "keepdims"), WF_ATTR_BOOL, {.i = 0}});
  wf_value_set_name(f, am->results[0], "next_ids");
  return am;
}

/* Replaces the return with one of `n` operands, and the function's result types with theirs. */
static void set_returns(wf_func *f, wf_op *ret, int n, const wf_value *vals) {
  wf_op *nr = wf_op_new(f, WF_OP_RETURN, n, vals, 0, NULL, ret->loc);
  wf_op_insert_before(f, ret, nr);
  wf_op_unlink(f, ret);
  wf_type types[64];
  for (int i = 0; i < n; i++) types[i] = *wf_value_type(f, vals[i]);
  wf_func_set_result_types(f, n, types);
}

static int check_logits(wf_func *f, const wf_op *ret, const char *pass) {
  if (!ret || ret->n_operands < 1) {
    wf_error(f->loc, "%s: the function returns nothing (generation needs logits [1, S, V])", pass);
    return -1;
  }
  const wf_type *lt = wf_value_type(f, ret->operands[0]);
  if (lt->rank != 3 || lt->dims[0] != 1 || !wf_dtype_is_float(lt->dtype)) {
    wf_error(f->loc, "%s: the first result must be logits [1, S, V], got rank %d", pass, lt->rank);
    return -1;
  }
  return 0;
}

/* ---- generate-prefill ------------------------------------------------------------------------ */

static int run_prefill(wf_module *m, wf_pass_ctx *ctx) {
  wf_func *f = main_func(m);
  if (!f) return 0;
  wf_op *ret = wf_func_return(f);
  if (check_logits(f, ret, "generate-prefill")) return WF_EXIT_UNSUPPORTED;
  wf_value vals[64];
  int n = 0;
  vals[n++] = ret->operands[0];
  vals[n++] = append_argmax(f, ret, ret->operands[0])->results[0];
  int layer = 0;
  wf_func_foreach_op(f, op) {
    if (!is_packed_attention(f, op)) continue;
    if (n + 2 > 64) {
      wf_error(op->loc, "generate-prefill: more than 31 attention layers");
      return WF_EXIT_UNSUPPORTED;
    }
    char name[64];
    for (int kv = 0; kv < 2; kv++) {
      snprintf(name, sizeof name, "%s_cache_%d", kv ? "v" : "k", layer);
      wf_value_set_name(f, op->operands[1 + kv], name);
      vals[n++] = op->operands[1 + kv];
    }
    layer++;
  }
  if (!layer) {
    wf_error(f->loc, "generate-prefill: the model has no attention that head-layout packed (run head-layout first)");
    return WF_EXIT_UNSUPPORTED;
  }
  set_returns(f, ret, n, vals);
  wf_pass_set_changed(ctx);
  return 0;
}

/* ---- decode-step ----------------------------------------------------------------------------- */

/* A constant indexed by position: [T, X] or [1, T, X] beside an activation [B, T, ...]. */
static int positional(const wf_module *m, const wf_func *f, wf_value v, int64_t T) {
  const wf_value_info *vi = &f->values[v];
  if (vi->kind != WF_VAL_GLOBAL) return 0;
  const wf_type *t = &m->globals[vi->index].type;
  return (t->rank == 2 && t->dims[0] == T) || (t->rank == 3 && t->dims[0] == 1 && t->dims[1] == T);
}

/* gather(table [T, X], position [1]) -> [1, X], before op: a row of RoPE's [S, D] tables, or a
 * position embedding that broadcasts over [B, 1, X]. */
static wf_value gather_row(wf_module *m, wf_func *f, wf_op *op, wf_value c, wf_value pos) {
  const wf_value_info *vi = &f->values[c];
  int g = vi->index;
  if (m->globals[g].type.rank == 3) { /* [1, T, X] -> a [T, X] constant of the same data */
    char name[256];
    snprintf(name, sizeof name, "%s.rows", wf_str(m, m->globals[g].name));
    int ng = wf_module_find_global(m, name);
    if (ng < 0) {
      if (wf_global_load(m, g)) return (wf_value)-1;
      wf_type t = m->globals[g].type;
      t.rank = 2, t.dims[0] = t.dims[1], t.dims[1] = t.dims[2];
      memset(&t.layout, 0, sizeof t.layout);
      ng = wf_module_add_global(m, name, t, m->globals[g].loc);
      wf_global *src = &m->globals[g], *dst = &m->globals[ng];
      dst->kind = src->kind == WF_DATA_SPLAT ? WF_DATA_SPLAT : WF_DATA_INLINE;
      dst->data = src->data;
    }
    g = ng;
  }
  const wf_type *tt = &m->globals[g].type;
  int64_t dims[2] = {1, tt->dims[1]};
  wf_type rt = wf_type_make(tt->dtype, 2, dims);
  wf_value ops[2] = {wf_func_global_value(f, g), pos};
  wf_op *ga = wf_op_new(f, WF_OP_GATHER, 2, ops, 1, &rt, op->loc);
  wf_op_insert_before(f, op, ga);
  return ga->results[0];
}

/* RoPE's packed tables at the token's position, computed instead of read (so a step holds no
 * table that grows with the sequence): c[p, j] = m_j cos(p t_j), s[p, j] = g_j sin(p t_j), with
 * m_j in {0, 1} (0: a padding column) and g_j in {-1, 0, 1} (head-layout's signs). t_j is the f32
 * angle that reproduces both tables, in every row, as cosf / sinf of the f32 product p t_j
 * within 1e-6: atan2 of row 1 first, then its neighbours up to 4 ulps either way (an exporter's
 * f32 inverse frequency, found back; on the committed models the tables then hold to 6e-8, one
 * ulp, over 4,000 positions). When none does, the gather stays.
 * Writes [1, X] constants t, m, g and returns 1 when they fit. */
static int rope_angles(wf_module *m, int cg, int sg, float *t, float *mk, float *sg_out) {
  wf_tensor *C = wf_global_tensor(m, cg), *S = wf_global_tensor(m, sg);
  int ok = C && S && C->rank == 2 && S->rank == 2 && C->dims[0] == S->dims[0] && C->dims[1] == S->dims[1] &&
           C->dims[0] >= 2;
  int64_t T = ok ? C->dims[0] : 0, X = ok ? C->dims[1] : 0;
  for (int64_t j = 0; ok && j < X; j++) {
    double c0 = wf_tensor_get(C, j), s0 = wf_tensor_get(S, j), c1 = wf_tensor_get(C, X + j), s1 = wf_tensor_get(S, X + j);
    mk[j] = c0 != 0 ? 1.0f : 0.0f;
    sg_out[j] = s1 < 0 ? -1.0f : s1 > 0 ? 1.0f : 0.0f;
    if (s0 != 0 || (c0 != 0 && c0 != 1)) ok = 0; /* row 0 is cos 0 = 1 (or a padding 0), sin 0 = 0 */
    float th = (float)atan2(fabs(s1), c1);
    static const int order[9] = {0, -1, 1, -2, 2, -3, 3, -4, 4};
    int fits = 0;
    for (int o = 0; o < 9 && ok && !fits; o++) {
      int k = order[o];
      float cand = th;
      for (int u = 0; u < (k < 0 ? -k : k); u++) cand = nextafterf(cand, k < 0 ? -INFINITY : INFINITY);
      double err = 0;
      for (int64_t p = 0; p < T && err <= 1e-6; p++) {
        float a = (float)p * cand;
        err = fmax(err, fabs(wf_tensor_get(C, p * X + j) - mk[j] * cosf(a)));
        err = fmax(err, fabs(wf_tensor_get(S, p * X + j) - sg_out[j] * sinf(a)));
      }
      fits = err <= 1e-6;
      t[j] = cand;
    }
    if (!fits) ok = 0;
  }
  wf_tensor_free(C);
  wf_tensor_free(S);
  return ok;
}

/* The rows computed so far, per pair of tables: every rotate_pairs of the same tables reads them. */
typedef struct rope_memo {
  int n;
  int cg[16], sg[16];
  wf_value c[16], s[16];
} rope_memo;

/* rotate_pairs(x, C, S) with C, S RoPE tables [T, X] (rope_angles): their rows at pos computed,
 * before op (or taken from the memo); 0 when the tables are not so (the caller gathers). */
static int rope_rows(wf_module *m, wf_func *f, wf_op *op, wf_value pos, int64_t T, rope_memo *mm) {
  const wf_value_info *cv = &f->values[op->operands[1]], *sv = &f->values[op->operands[2]];
  if (cv->kind != WF_VAL_GLOBAL || sv->kind != WF_VAL_GLOBAL) return 0;
  for (int i = 0; i < mm->n; i++)
    if (mm->cg[i] == cv->index && mm->sg[i] == sv->index) {
      wf_op_set_operand(f, op, 1, mm->c[i]);
      wf_op_set_operand(f, op, 2, mm->s[i]);
      return 1;
    }
  int cgi = cv->index, sgi = sv->index;
  const wf_type *ct = &m->globals[cv->index].type;
  if (ct->rank != 2 || ct->dims[0] != T || ct->dtype != WF_F32) return 0;
  int64_t X = ct->dims[1], one = 1, rd[2] = {1, X};
  float *t = malloc((size_t)X * sizeof *t), *mk = malloc((size_t)X * sizeof *mk), *g = malloc((size_t)X * sizeof *g);
  WF_ASSERT(t && mk && g);
  int ok = rope_angles(m, cv->index, sv->index, t, mk, g);
  if (ok) {
    char name[256];
    const char *base = wf_str(m, m->globals[cv->index].name);
    wf_type row = wf_type_make(WF_F32, 2, rd);
    snprintf(name, sizeof name, "%s.angles", base);
    wf_value tv = wf_func_global_value(f, wf_module_add_data_global(m, name, row, t));
    snprintf(name, sizeof name, "%s.mask", base);
    wf_value mv = wf_func_global_value(f, wf_module_add_data_global(m, name, row, mk));
    snprintf(name, sizeof name, "%s.signs", base);
    wf_value gv = wf_func_global_value(f, wf_module_add_data_global(m, name, row, g));
    wf_value pf = wf_op_insert_new(f, op, WF_OP_CAST, 1, &pos, wf_type_make(WF_F32, 1, &one), op->loc);
    wf_op_set_ident(f, f->values[pf].def, "to", "f32");
    wf_value ops[2] = {pf, tv};
    wf_value ang = wf_op_insert_new(f, op, WF_OP_MUL, 2, ops, row, op->loc);
    wf_value c = wf_op_insert_new(f, op, WF_OP_COS, 1, &ang, row, op->loc);
    wf_value s = wf_op_insert_new(f, op, WF_OP_SIN, 1, &ang, row, op->loc);
    ops[0] = c, ops[1] = mv;
    c = wf_op_insert_new(f, op, WF_OP_MUL, 2, ops, row, op->loc);
    ops[0] = s, ops[1] = gv;
    s = wf_op_insert_new(f, op, WF_OP_MUL, 2, ops, row, op->loc);
    wf_op_set_operand(f, op, 1, c);
    wf_op_set_operand(f, op, 2, s);
    if (mm->n < 16) mm->cg[mm->n] = cgi, mm->sg[mm->n] = sgi, mm->c[mm->n] = c, mm->s[mm->n++] = s;
  }
  free(t), free(mk), free(g);
  return ok;
}

static int run_decode(wf_module *m, wf_pass_ctx *ctx) {
  int64_t cap = wf_pass_opt_int(ctx, "capacity");
  if (cap <= 0) {
    wf_error_at("decode-step", "needs capacity=C > 0 (the cache slots), got %lld", (long long)cap);
    return WF_EXIT_USAGE;
  }
  const char *rope = wf_pass_opt_str(ctx, "rope");
  if (strcmp(rope, "held") && strcmp(rope, "computed")) {
    wf_error_at("decode-step", "rope=%s is not one of held, computed", rope);
    return WF_EXIT_USAGE;
  }
  int compute_rope = !strcmp(rope, "computed");
  wf_func *f = main_func(m);
  if (!f) return 0;
  int ia = ids_arg(f);
  if (ia < 0) {
    wf_error(f->loc, "decode-step: no token ids argument (an integer [1, S] the model's embedding gathers)");
    return WF_EXIT_UNSUPPORTED;
  }
  wf_op *ret = wf_func_return(f);
  if (check_logits(f, ret, "decode-step")) return WF_EXIT_UNSUPPORTED;
  wf_value ids = f->args[ia];
  wf_type *it = wf_value_type(f, ids);
  int64_t T = it->dims[1];
  if (it->dims[0] != 1) {
    wf_error(f->loc, "decode-step: generation runs one request (batch 1), the ids are [%lld, %lld]",
             (long long)it->dims[0], (long long)T);
    return WF_EXIT_UNSUPPORTED;
  }
  it->dims[1] = 1;
  int64_t one = 1;
  wf_value pos = wf_func_add_arg(f, wf_type_make(WF_I64, 1, &one), "position");
  int layer = 0, gathers = 0, computed = 0;
  rope_memo memo = {0};
  wf_value caches[64];
  for (wf_op *op = f->first; op; op = op->next) {
    if (op->code == WF_OP_RETURN) break;
    int act = 0; /* does an operand hold activations of the sequence? */
    for (int i = 0; i < op->n_operands; i++) {
      const wf_value_info *vi = &f->values[op->operands[i]];
      act |= vi->kind != WF_VAL_GLOBAL && vi->type.rank == 3 && vi->type.dims[1] == 1;
    }
    if (act && compute_rope && op->code == WF_OP_ROTATE_PAIRS && rope_rows(m, f, op, pos, T, &memo)) computed++;
    if (act && (op->code == WF_OP_ROTATE_PAIRS || (wf_opinfos[op->code].flags & WF_OPF_ELEMENTWISE)))
      for (int i = 0; i < op->n_operands; i++)
        if (positional(m, f, op->operands[i], T)) {
          wf_value r = gather_row(m, f, op, op->operands[i], pos);
          if (r == (wf_value)-1) return WF_EXIT_IO;
          wf_op_set_operand(f, op, i, r);
          gathers++;
        }
    if (is_packed_attention(f, op)) {
      if (gathered(f, op, "decode-step")) return WF_EXIT_UNSUPPORTED;
      if (layer * 2 + 2 > 62) {
        wf_error(op->loc, "decode-step: more than 31 attention layers");
        return WF_EXIT_UNSUPPORTED;
      }
      const wf_type *kt = wf_value_type(f, op->operands[1]);
      int64_t cd[3] = {kt->dims[0], cap, kt->dims[2]};
      char name[64];
      wf_value ops[5] = {op->operands[0], op->operands[1], op->operands[2]};
      for (int kv = 0; kv < 2; kv++) {
        snprintf(name, sizeof name, "%s_cache_%d", kv ? "v" : "k", layer);
        ops[3 + kv] = caches[2 * layer + kv] = wf_func_add_arg(f, wf_type_make(kt->dtype, 3, cd), name);
      }
      wf_type rt = *wf_value_type(f, op->results[0]);
      wf_op *da = wf_op_new(f, WF_OP_DECODE_ATTENTION, 5, ops, 1, &rt, op->loc);
      wf_op_insert_before(f, op, da);
      wf_op_set_float(f, da, "scale", wf_op_float(f, op, "scale", 1.0));
      wf_op_set_int(f, da, "heads", wf_op_int(f, op, "heads", 0));
      wf_op_set_int(f, da, "head_dim", wf_op_int(f, op, "head_dim", 0));
      if (wf_op_int(f, op, "kv_heads", 0) > 0) wf_op_set_int(f, da, "kv_heads", wf_op_int(f, op, "kv_heads", 0));
      int ng;
      const int64_t *g4 = wf_rule_ints(f, op, "kv_gather", &ng);
      if (g4 && ng == 4) {
        wf_op_set_ints(f, da, "kv_gather", 4, g4);
        wf_op_set_attr(f, da, (wf_attr){wf_intern(f->module, "q_colocated"), WF_ATTR_BOOL, {.i = 1}});
      }
      uint32_t nm = wf_value_get(f, op->results[0])->name;
      wf_value_replace_uses(f, op->results[0], da->results[0]);
      wf_value_get(f, da->results[0])->name = nm;
      wf_value_get(f, op->results[0])->name = 0;
      wf_op *dead = op;
      op = da;
      wf_op_unlink(f, dead);
      layer++;
    }
    wf_type out[8];
    if (op->n_results > 8 || wf_infer_result_types(f, op, out)) return WF_EXIT_UNSUPPORTED;
    for (int i = 0; i < op->n_results; i++) {
      wf_type *rt = wf_value_type(f, op->results[i]);
      wf_layout keep = rt->layout;
      *rt = out[i];
      rt->layout = keep;
    }
  }
  if (!layer) {
    wf_error(f->loc, "decode-step: the model has no attention that head-layout packed (run head-layout first)");
    return WF_EXIT_UNSUPPORTED;
  }
  wf_value vals[64];
  int n = 0;
  vals[n++] = append_argmax(f, ret, ret->operands[0])->results[0];
  for (int i = 0; i < 2 * layer; i++) vals[n++] = caches[i];
  set_returns(f, ret, n, vals);
  wf_func_remove_dead_ops(f);
  wf_module_remove_unused_globals(m);
  wf_pass_stat_add(ctx, "attention-decoded", layer);
  wf_pass_stat_add(ctx, "position-gathers", gathers);
  wf_pass_stat_add(ctx, "rope-computed", computed);
  wf_pass_set_changed(ctx);
  return 0;
}

const wf_pass_info wf_pass_generate_prefill = {
    "generate-prefill",
    "Return next_ids (argmax of each row) and every packed attention's k and v (the prefill's KV cache)",
    NULL, 0, NULL, 0, run_prefill};

const wf_pass_info wf_pass_decode_step = {
    "decode-step",
    "Turn the packed graph into one decode step: token + position in, caches updated in place, next_ids out",
    ds_opts, 2, ds_stats, 3, run_decode};
