/* partition of a decode step (a function with decode_attention, passes/decode_step.c): WaferLLM's
 * decode layout (§4.2), docs/generation.md.
 *
 * The token's activations are one row, [.., 1, E]. Each is held along ONE mesh axis, replicated
 * along the other: {.., E_y} (E split over the rows, every column holding it: BE_yL^x) or
 * {.., E_x}. A matmul by a weight W [K, N] flips the axis: x {K_a} and W {K_a, N_b} give the
 * local products of a PE's K block, summed along a (MeshGEMV's allreduce, dist.gemv), so y
 * comes out {N_b}, b the other axis. Every other op keeps its operands' axis. So the weights
 * alternate the allreduce axis from layer to layer (W_q {E_y, N_x}, W_o {N_x, E_y}, ...) and no
 * step transposes anything over the fabric. The axes are solved as a two-colouring: an edge
 * "differs" per matmul, "same" per other op, anchored by decode_attention, whose q, k, v and
 * result are {.., N_x} (its caches {B, C_y, Nk_x}, the prefill's layout of k and v). A graph
 * that admits no colouring is reported (exit 3).
 *
 * Constants follow the value they meet: a bias or a norm's scale [N] is {N_a}, a gather's table
 * [V, E] is {V, E_a} (every PE holds all V rows of its columns) or, when that slice is large,
 * {V_b, E_a} (table_layout), a weight as above. A constant
 * two ops need in different layouts is cloned.
 *
 * An LM head tied to the embedding (matmul(x, C), C the table T transposed bit for bit, as
 * torch exports it) reads T as stored: x {E_a} and T {V_b, E_a}, the table's layout when its
 * rows are split, are MeshGEMV's operands with W transposed (dist.gemv_t), so the step holds
 * the vocabulary once, as a prefill does (partition_table.c). It needs the embedding's E on
 * x's axis (so in a transformer: the residual stream's) and more than one PE along the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/partition_decode.h"
#include "passes/partition_table.h"
#include "waferc/diag.h"

typedef struct {
  wf_module *m;
  wf_func *f;
  int region, w, h;
  int64_t sram;
  int *parent, *parity; /* union-find over values, parity relative to the parent */
  signed char *axis;    /* per root: -1 unknown, WF_AXIS_X or WF_AXIS_Y */
} dctx;

static int find(dctx *c, int v, int *par) {
  int p = 0;
  while (c->parent[v] != v) {
    p ^= c->parity[v];
    v = c->parent[v];
  }
  *par = p;
  return v;
}

/* a and b differ (d = 1) or agree (d = 0); 0, or -1 on a contradiction. */
static int relate(dctx *c, wf_value a, wf_value b, int d) {
  int pa, pb, ra = find(c, (int)a, &pa), rb = find(c, (int)b, &pb);
  if (ra == rb) return (pa ^ pb) == d ? 0 : -1;
  c->parent[rb] = ra;
  c->parity[rb] = pa ^ pb ^ d;
  return 0;
}

static int other(int a) { return a == WF_AXIS_X ? WF_AXIS_Y : WF_AXIS_X; }

static int anchor(dctx *c, wf_value v, int axis) {
  int p, r = find(c, (int)v, &p);
  int want = p ? other(axis) : axis;
  if (c->axis[r] >= 0 && c->axis[r] != want) return -1;
  c->axis[r] = (signed char)want;
  return 0;
}

static int axis_of(dctx *c, wf_value v) {
  int p, r = find(c, (int)v, &p);
  int a = c->axis[r] >= 0 ? c->axis[r] : WF_AXIS_Y; /* unanchored: the token's default */
  return p ? other(a) : a;
}

static int is_const(const wf_func *f, wf_value v) { return f->values[v].kind == WF_VAL_GLOBAL; }

/* A layout with only the last dim split along `axis` (dims of 1 never are). */
static wf_layout row_layout(dctx *c, const wf_type *t, int axis) {
  static const char *const lead[] = {"B", "C", "D", "F", "G", "H"};
  wf_layout l;
  memset(&l, 0, sizeof l);
  l.rank = t->rank;
  l.region = c->region;
  for (int d = 0; d < t->rank; d++) {
    int last = d == t->rank - 1;
    uint8_t s = last && t->dims[d] > 1 ? (uint8_t)axis : WF_AXIS_NONE;
    l.dims[d] = (wf_layout_dim){wf_intern(c->m, last ? "E" : d == t->rank - 2 ? "L" : lead[d % 6]), s, WF_AXIS_NONE};
  }
  return l;
}

/* {.., M_a, N_b} for a rank-2 constant (a weight, a table). */
static wf_layout mat_layout(dctx *c, const wf_type *t, int a0, int a1) {
  wf_layout l;
  memset(&l, 0, sizeof l);
  l.rank = t->rank;
  l.region = c->region;
  l.dims[0] = (wf_layout_dim){wf_intern(c->m, "K"), t->dims[0] > 1 ? (uint8_t)a0 : WF_AXIS_NONE, WF_AXIS_NONE};
  l.dims[1] = (wf_layout_dim){wf_intern(c->m, "N"), t->dims[1] > 1 ? (uint8_t)a1 : WF_AXIS_NONE, WF_AXIS_NONE};
  return l;
}

/* Gives operand i of op (a constant) layout l, cloning the constant when another op laid it
 * out otherwise. */
static void const_layout(dctx *c, wf_op *op, int i, wf_layout l) {
  wf_value v = op->operands[i];
  int g = c->f->values[v].index;
  wf_global *gl = &c->m->globals[g];
  if (gl->type.layout.rank && memcmp(&gl->type.layout, &l, sizeof l)) {
    char name[256];
    for (int k = 1;; k++) {
      snprintf(name, sizeof name, "%s.%s%d", wf_str(c->m, gl->name), "decode", k);
      int e = wf_module_find_global(c->m, name);
      if (e < 0) break;
      if (!memcmp(&c->m->globals[e].type.layout, &l, sizeof l)) {
        wf_op_set_operand(c->f, op, i, wf_func_global_value(c->f, e));
        return;
      }
    }
    wf_type t = gl->type;
    t.layout = l;
    int ng = wf_module_add_global(c->m, name, t, gl->loc);
    gl = &c->m->globals[g]; /* the table may have moved */
    wf_global *ngl = &c->m->globals[ng];
    ngl->kind = gl->kind, ngl->data = gl->data, ngl->path = gl->path, ngl->offset = gl->offset;
    wf_op_set_operand(c->f, op, i, wf_func_global_value(c->f, ng));
    return;
  }
  gl->type.layout = l;
  c->f->values[v].type.layout = l;
}

int wf_partition_is_decode(const wf_func *f) {
  wf_func_foreach_op(f, op) if (op->code == WF_OP_DECODE_ATTENTION) return 1;
  return 0;
}

/* A gather's table [V, E] with E along b: every PE holds all V rows of its columns when that
 * takes at most 1/16 of its SRAM; past that (a vocabulary's embedding, position tables for long
 * generation) its rows are split along the other axis too, {V_a, E_b}, and the lookup sums the
 * one PE's row along a (lower_index.c): memory first. */
static int gemv_t_reads(const wf_func *f, int global) {
  wf_func_foreach_op(f, op) if (op->code == WF_OP_DIST_GEMV_T && f->values[op->operands[1]].kind == WF_VAL_GLOBAL &&
                                f->values[op->operands[1]].index == global) return 1;
  return 0;
}

/* A tied table (read by a dist.gemv_t) has its rows split too. */
static wf_layout table_layout(dctx *c, const wf_type *t, int b, int tied) {
  int a = other(b);
  int64_t pb = b == WF_AXIS_X ? c->w : c->h, pa = a == WF_AXIS_X ? c->w : c->h;
  int64_t bytes = t->dims[0] * ((t->dims[1] + pb - 1) / pb) * 4;
  return mat_layout(c, t, pa > 1 && t->dims[0] > 1 && (tied || bytes * 16 > c->sram) ? a : WF_AXIS_NONE, b);
}

/* The gather of f whose table is global g, or NULL. */
static const wf_op *gather_of(const wf_func *f, int g) {
  wf_func_foreach_op(f, op) if (op->code == WF_OP_GATHER && f->values[op->operands[0]].kind == WF_VAL_GLOBAL &&
                                f->values[op->operands[0]].index == g) return op;
  return NULL;
}

/* Every matmul(x, C) whose C is a gather table T transposed, with the gather's result on x's
 * axis and more than one PE along the other, becomes dist.gemv_t(x, T). Returns how many. */
static int64_t tie_heads(dctx *c) {
  int64_t n = 0;
  wf_func_foreach_op(c->f, op) {
    if (op->code != WF_OP_MATMUL || !is_const(c->f, op->operands[1])) continue;
    int t = wf_partition_tied_table(c->m, c->f, c->f->values[op->operands[1]].index);
    const wf_op *g = t >= 0 ? gather_of(c->f, t) : NULL;
    int a = axis_of(c, op->operands[0]);
    if (!g || axis_of(c, g->results[0]) != a || (a == WF_AXIS_X ? c->h : c->w) < 2 || c->m->globals[t].type.dims[0] < 2)
      continue;
    op->code = WF_OP_DIST_GEMV_T;
    wf_op_set_operand(c->f, op, 1, wf_func_global_value(c->f, t));
    n++;
  }
  return n;
}

int wf_partition_decode(wf_module *m, wf_func *f, int region, int w, int h, int64_t sram_bytes, int tie,
                        int64_t *n_laid, int64_t *n_tied) {
  dctx c = {m, f, region, w, h, sram_bytes, NULL, NULL, NULL};
  int n = f->n_values;
  c.parent = malloc((size_t)n * sizeof *c.parent);
  c.parity = calloc((size_t)n, sizeof *c.parity);
  c.axis = malloc((size_t)n);
  WF_ASSERT(c.parent && c.parity && c.axis);
  for (int i = 0; i < n; i++) c.parent[i] = i, c.axis[i] = -1;
  int rc = 0;
  /* The colouring. */
  wf_func_foreach_op(f, op) {
    if (rc) break;
    if (op->code == WF_OP_RETURN || op->code == WF_OP_GATHER || op->code == WF_OP_ARGMAX) continue;
    wf_value r = op->n_results ? op->results[0] : 0;
    if (op->code == WF_OP_DECODE_ATTENTION) {
      for (int i = 0; i < 3 && !rc; i++) rc = anchor(&c, op->operands[i], WF_AXIS_X);
      if (!rc) rc = anchor(&c, r, WF_AXIS_X);
    } else if (op->code == WF_OP_MATMUL) {
      if (is_const(f, op->operands[0]) || !is_const(f, op->operands[1]) ||
          wf_value_type(f, op->operands[1])->rank != 2) {
        wf_error(op->loc, "partition (decode): a matmul of the token by a constant weight [K, N] is lowered as "
                          "MeshGEMV; this one is not");
        free(c.parent), free(c.parity), free(c.axis);
        return WF_EXIT_UNSUPPORTED;
      }
      rc = relate(&c, op->operands[0], r, 1);
    } else {
      for (int i = 0; i < op->n_operands && !rc; i++)
        if (!is_const(f, op->operands[i]) && wf_value_type(f, op->operands[i])->rank >= 1 &&
            wf_value_type(f, op->operands[i])->dtype == WF_F32)
          rc = relate(&c, op->operands[i], r, 0);
    }
    if (rc) {
      wf_error(op->loc, "partition (decode): '%s' needs its operands on one mesh axis and a matmul on the other; "
                        "this graph has no such assignment (docs/generation.md)", wf_opinfos[op->code].name);
      free(c.parent), free(c.parity), free(c.axis);
      return WF_EXIT_UNSUPPORTED;
    }
  }
  *n_tied = tie ? tie_heads(&c) : 0;
  /* The layouts. */
  int64_t laid = 0;
  for (int i = 0; i < f->n_args; i++) {
    wf_type *t = wf_value_type(f, f->args[i]);
    memset(&t->layout, 0, sizeof t->layout);
    t->layout.rank = t->rank;
    t->layout.region = region;
    int cache = 0;
    wf_func_foreach_op(f, op) if (op->code == WF_OP_DECODE_ATTENTION) cache |= op->operands[3] == f->args[i] ||
                                                                              op->operands[4] == f->args[i];
    static const char *const names[] = {"B", "C", "N"};
    for (int d = 0; d < t->rank; d++) {
      uint8_t s = WF_AXIS_NONE;
      if (cache && t->dims[d] > 1) s = d == 1 ? WF_AXIS_Y : d == 2 ? WF_AXIS_X : WF_AXIS_NONE;
      t->layout.dims[d] = (wf_layout_dim){wf_intern(m, cache && d < 3 ? names[d] : "L"), s, WF_AXIS_NONE};
    }
    laid++;
  }
  wf_func_foreach_op(f, op) {
    for (int i = 0; i < op->n_results; i++) {
      wf_type *t = wf_value_type(f, op->results[i]);
      if (op->code == WF_OP_ARGMAX) { /* the token id: every PE holds it */
        t->layout = row_layout(&c, t, WF_AXIS_NONE);
        t->layout.dims[t->rank - 1].split = WF_AXIS_NONE;
      } else {
        t->layout = row_layout(&c, t, axis_of(&c, op->results[i]));
      }
      laid++;
    }
    if (op->code == WF_OP_RETURN) continue;
    for (int i = 0; i < op->n_operands; i++) {
      if (!is_const(f, op->operands[i])) continue;
      const wf_type *ct = &m->globals[f->values[op->operands[i]].index].type;
      wf_global *gl = &m->globals[f->values[op->operands[i]].index];
      if (gl->type.rank == 0 && gl->type.dtype == WF_F32) { /* a scalar: [1] on every PE */
        gl->type.rank = 1;
        gl->type.dims[0] = 1;
        f->values[op->operands[i]].type.rank = 1;
        f->values[op->operands[i]].type.dims[0] = 1;
      }
      wf_layout l;
      if (op->code == WF_OP_MATMUL) {
        int a = axis_of(&c, op->operands[0]);
        l = mat_layout(&c, ct, a, other(a));
      } else if (op->code == WF_OP_GATHER) {
        l = table_layout(&c, ct, axis_of(&c, op->results[0]), gemv_t_reads(f, f->values[op->operands[i]].index));
      } else if (op->code == WF_OP_DIST_GEMV_T) { /* the table as its gather lays it out */
        l = table_layout(&c, ct, axis_of(&c, op->operands[0]), 1);
      } else {
        l = row_layout(&c, ct, axis_of(&c, op->results[0]));
      }
      const_layout(&c, op, i, l);
      laid++;
    }
    if (op->code == WF_OP_MATMUL) op->code = WF_OP_DIST_GEMV; /* the layouts above are its */
  }
  free(c.parent), free(c.parity), free(c.axis);
  *n_laid = laid;
  return 0;
}
