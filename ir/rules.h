/* Internal: the op families' shape rules, operand checks and cost estimates (ir/rules*.c).
 *
 * Each `rule` named in ops.def is a pair of functions:
 *   int     wf_rule_<rule>(wf_func *f, const wf_op *op, wf_type *out);  // infer + check
 *   int64_t wf_cost_<rule>(const wf_func *f, const wf_op *op);          // flops
 * The dispatch table in ir/rules.c is an X-macro over ops.def, so a new op in an existing
 * family needs no code here; a new family needs one pair. Rules report located errors
 * (wf_error at op->loc, naming the op) and return nonzero. */
#ifndef WAFERC_IR_RULES_H
#define WAFERC_IR_RULES_H

#include "ir/support/gemm_skew.h"
#include "waferc/ir.h"

/* Arithmetic work of one execution of op (multiply-adds count as 2, transcendental
 * elementwise functions as a handful; data movement is 0). */
int64_t wf_op_flops(const wf_func *f, const wf_op *op);
/* Bytes read (operands) plus bytes written (results). */
int64_t wf_op_bytes(const wf_func *f, const wf_op *op);

#define WF_RULE_DECL(rule)                                                     \
  int wf_rule_##rule(wf_func *f, const wf_op *op, wf_type *out);               \
  int64_t wf_cost_##rule(const wf_func *f, const wf_op *op);
WF_RULE_DECL(matmul)
WF_RULE_DECL(matmul_t) /* dist.gemm_t: rules_gemm_t.c */
WF_RULE_DECL(gemm)
WF_RULE_DECL(binary)
WF_RULE_DECL(compare)
WF_RULE_DECL(where)
WF_RULE_DECL(unary)
WF_RULE_DECL(logical)
WF_RULE_DECL(cast)
WF_RULE_DECL(same)
WF_RULE_DECL(norm)
WF_RULE_DECL(rope)
WF_RULE_DECL(attention)
WF_RULE_DECL(decode_attention)
WF_RULE_DECL(kv_switch)
WF_RULE_DECL(unskew)
WF_RULE_DECL(reduce)
WF_RULE_DECL(reshape)
WF_RULE_DECL(transpose)
WF_RULE_DECL(concat)
WF_RULE_DECL(slice)
WF_RULE_DECL(split)
WF_RULE_DECL(gather)
WF_RULE_DECL(expand)
WF_RULE_DECL(trilu)
WF_RULE_DECL(topk)
WF_RULE_DECL(argmax)
WF_RULE_DECL(scatter)
WF_RULE_DECL(gather_elements)
WF_RULE_DECL(shift)
WF_RULE_DECL(relayout)
WF_RULE_DECL(dist_coll)
WF_RULE_DECL(ret)
#undef WF_RULE_DECL

/* ---- helpers shared by rules, verifier and kernels ------------------------------------- */

/* A type with the given dtype and shape and no layout. */
wf_type wf_rule_type(wf_dtype dt, int rank, const int64_t *dims);
/* Type of operand i. */
const wf_type *wf_rule_in(const wf_func *f, const wf_op *op, int i);
/* Text of a type as the printer writes it, in a static rotating buffer (4 slots). */
const char *wf_rule_type_str(const wf_func *f, const wf_type *t);

/* Numpy broadcasting of shapes a and b into out (rank = max); -1 if incompatible or a dim
 * is negative. */
int wf_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rank_out,
                       int64_t *out);
/* Normalises a possibly negative axis for rank; -1 if out of range. */
int wf_norm_axis(int64_t axis, int rank);
/* Whether transpose `tr` of a rank-`rank` operand swaps its last two dims and keeps the others. */
int wf_perm_swaps_last_two(const wf_func *f, const wf_op *tr, int rank);

/* Attribute accessors that accept what the parser produces (an INT where a float is wanted,
 * an empty list of either kind). *n = -1 when the attribute is absent. */
const int64_t *wf_rule_ints(const wf_func *f, const wf_op *op, const char *name, int *n);
double wf_rule_float(const wf_func *f, const wf_op *op, const char *name, double dflt);
int64_t wf_rule_int(const wf_func *f, const wf_op *op, const char *name, int64_t dflt);
int wf_rule_bool(const wf_func *f, const wf_op *op, const char *name, int dflt);

/* ONNX Slice on one dim: start/end/step as written (step != 0) -> first index and count. */
void wf_slice_resolve(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first,
                      int64_t *count);

/* kv_switch's map (ops.def): wf_kv_switch_of reads and checks the attributes against the
 * operand's [B, L, Np], or [L, Np] (a weight's rows and columns: B = 1), (0, or -1 after a
 * located error); wf_kv_switch_src gives the operand
 * column that result element (row p, column j) reads and *t its token, or -1 for a zero. */
typedef struct wf_kv_switch {
  int64_t rows, cols;            /* the result's dims 1 and 2 */
  int64_t wd, hd, cap, cbd;      /* the decode region and its blocks */
  int64_t src_dp, dst_dp, d;     /* packed slot widths and the real head dim */
  int64_t L, np, lbd;            /* the operand's tokens and width; tokens per decode row */
  const int64_t *slots;
  int n_slots;
  int64_t batch;                 /* B: the operand's dim 0 when it has three, else 1 */
  int swap;                      /* a weight's result transposed ([cols, rows], laid out {C_x, R_y}) */
  const int64_t *colmap;         /* cols: x's column per result column (-1: 0), NULL: the slots' */
  int n_colmap;
} wf_kv_switch;
int wf_kv_switch_of(const wf_func *f, const wf_op *op, wf_kv_switch *s);
/* unskew's attributes (ops.def), checked, as the skew its argument is written in (K dim 0,
 * the other dim 1). */
int wf_unskew_of(const wf_func *f, const wf_op *op, wf_gemm_skew *u);
int64_t wf_kv_switch_src(const wf_kv_switch *s, int64_t p, int64_t j, int64_t *t);

/* Packed attention's gathered kv form (passes/head_layout.c, docs/attention.md): attention
 * {kv_gather = [m, group, parts, sub]}: query heads come in groups of `group` per kv head; the
 * kv head of group i is cut over m consecutive columns of `sub` each (columns (i m + c) sub ..),
 * `parts` parts of a query head (one per column of a head spanning columns) each taking m/parts
 * of those columns, in order. wf_attn_gather_of: 1 and *g when the attribute is present and
 * consistent with head_dim hd, 0 when absent, -1 when malformed. wf_attn_gather_col: the column
 * of k (and v) that query head h's packed in-head index e reads.
 *
 * With {q_colocated} (head-layout{gqa=colocate}) q and the result are packed by the same pieces:
 * the column of PEs that holds a piece of kv head i holds, for each of its `group` query heads
 * in order, the same `sub` in-head columns of that query head, `group sub` columns in all, so
 * no kv piece moves. wf_attn_q_col: the column of q (and of the result) of query head h's
 * packed in-head index e. wf_attn_colocated: 1 when the op carries q_colocated with a valid
 * kv_gather (into *g), 0 when it carries neither, -1 when q_colocated lacks a valid kv_gather. */
typedef struct wf_attn_gather {
  int64_t m, group, parts, sub;
} wf_attn_gather;
int wf_attn_gather_of(const wf_func *f, const wf_op *op, int64_t hd, wf_attn_gather *g);
int64_t wf_attn_gather_col(const wf_attn_gather *g, int64_t hd, int64_t h, int64_t e);
int64_t wf_attn_q_col(const wf_attn_gather *g, int64_t hd, int64_t h, int64_t e);
int wf_attn_colocated(const wf_func *f, const wf_op *op, int64_t hd, wf_attn_gather *g);

/* Whether op's unary function is defined on integers (neg, relu) as well as floats. */
int wf_unary_allows_int(wf_opcode code);

/* Whether `topk` is an MoE router: a scatter_elements or gather_elements of f reads its indices
 * (results[1]) as its own indices, or an equal compares them (through reshapes) with the
 * expert numbers (a one-hot), the experts over the gate matrix's last axis
 * (passes/moe_routes.c, docs/moe-plans.md). */
int wf_topk_is_moe_route(const wf_func *f, const wf_op *topk);
/* A top-1 router: an argmax over the last axis of a matrix (or batch of them) whose result is
 * compared with expert numbers (`sel == e`, a one-hot of it: Switch, GShard, token lists), or
 * picks each token's expert's weights from stacked parameters (a gather of a constant's rows,
 * reshaped to rank 3 or more: `w1[sel]`). */
int wf_argmax_is_moe_route(const wf_func *f, const wf_op *am);
/* v, or what v is a reshape (of a reshape...) of. */
wf_value wf_unreshaped(const wf_func *f, wf_value v);

/* Whether v, an integer or bool tensor, may live on the mesh: the PEs hold integers and bools
 * as f32 words, exact up to 2^24, so only values that stay so: a bool, a function argument
 * (waferrun refuses larger values), a constant of such integers, an argmax's or topk's
 * indices, and a where of such values, a cast from an integer or bool (or from an f32 that
 * wf_int_valued holds integers), data movement (reshape, transpose, slice, split, concat)
 * of them, and their sums, products, quotients (truncated toward zero, exactly), max and min
 * (taken to stay within 2^24, as indices and their offsets do). Powers of integers are not. */
int wf_int_words_ok(const wf_module *m, const wf_func *f, wf_value v);
/* Whether f32 value v holds integers (of at most 2^24) by construction: bools, integers and
 * integer constants through sums, products, max, min, matmuls and moves (rules_index.c). A
 * cast of it to an integer type is then a copy of the words on the mesh. */
int wf_int_valued(const wf_module *m, const wf_func *f, wf_value v);

#endif
