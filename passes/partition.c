/* partition — gives every tensor of the entry function a layout on one region, @mesh, that
 * covers the compile's mesh. The rule (docs/partition.md) is deliberately simple,
 * the one the phase-1 backend lowers:
 *
 *   rank 2  [R, C]  ->  {M_y, N_x}   rows split along y, columns along x
 *   rank 1  [C]     ->  {N_x}        split along x, held by every row (replicated along y)
 *
 * It is uniform on purpose: for C = A·B the operands come out as A {M_y, K_x} and
 * B {K_y, N_x}, exactly the blocks the SUMMA-style broadcast lowering multicasts along rows
 * and columns; elementwise ops and a bias see matching blocks, and a softmax over the last
 * axis reduces along x. Split dims must divide evenly (no padding yet); other ranks and
 * non-f32 tensors are rejected as unsupported. */
#include <stdio.h>
#include <string.h>

#include "waferc/pass.h"

static const wf_pass_option partition_opts[] = {
    {"mesh", WF_OPT_STRING, "", "WxH of the region to partition over (default: the target's mesh)"},
};
static const char *const partition_stats[] = {"values-partitioned"};

typedef struct {
  wf_module *m;
  int region, w, h;
  int errors;
} pctx;

static int parse_mesh(const char *s, int *w, int *h) {
  char tail;
  return sscanf(s, "%dx%d%c", w, h, &tail) == 2 && *w > 0 && *h > 0 ? 0 : -1;
}

/* The layout for a type under the rule above, or an error at loc. */
static int layout_for(pctx *c, wf_type *t, wf_loc loc, const char *what) {
  if (t->dtype != WF_F32) {
    wf_error(loc, "partition: %s has dtype %s; only f32 tensors are supported", what,
             wf_dtype_name(t->dtype));
    return -1;
  }
  if (t->rank != 1 && t->rank != 2) {
    wf_error(loc, "partition: %s has rank %d; only rank-1 and rank-2 tensors are supported", what,
             t->rank);
    return -1;
  }
  wf_layout l;
  memset(&l, 0, sizeof l);
  l.rank = t->rank;
  l.region = c->region;
  if (t->rank == 2) {
    l.dims[0] = (wf_layout_dim){wf_intern(c->m, "M"), WF_AXIS_Y, WF_AXIS_NONE};
    l.dims[1] = (wf_layout_dim){wf_intern(c->m, "N"), WF_AXIS_X, WF_AXIS_NONE};
  } else {
    l.dims[0] = (wf_layout_dim){wf_intern(c->m, "N"), WF_AXIS_X, WF_AXIS_NONE};
  }
  for (int d = 0; d < t->rank; d++) {
    int parts = l.dims[d].split == WF_AXIS_X ? c->w : c->h;
    if (t->dims[d] % parts) {
      wf_error(loc, "partition: %s: dim %d (%lld) is not divisible by the mesh %s (%d); padding is "
                    "not implemented, choose a mesh that divides it",
               what, d, (long long)t->dims[d], l.dims[d].split == WF_AXIS_X ? "width" : "height",
               parts);
      return -1;
    }
  }
  t->layout = l;
  return 0;
}

static int run_partition(wf_module *m, wf_pass_ctx *ctx) {
  const wf_target *t = wf_pass_target(ctx);
  pctx c = {m, -1, t->mesh_w, t->mesh_h, 0};
  const char *mesh = wf_pass_opt_str(ctx, "mesh");
  if (mesh && *mesh && parse_mesh(mesh, &c.w, &c.h)) {
    wf_error_at("partition", "bad mesh option '%s': expected WxH", mesh);
    return WF_EXIT_USAGE;
  }
  wf_func *f = wf_module_find_func(m, "main");
  if (!f && m->n_funcs) f = m->funcs[0];
  if (!f) return 0;

  c.region = wf_module_find_region(m, "mesh");
  if (c.region < 0) {
    c.region = wf_module_add_region(m, "mesh", 0, 0, c.w, c.h, f->loc);
  } else {
    const wf_region *r = &m->regions[c.region];
    if (r->x != 0 || r->y != 0 || r->w != c.w || r->h != c.h) {
      wf_error(r->loc, "partition: region @mesh is rect(%d, %d, %d, %d) but the mesh is %dx%d", r->x,
               r->y, r->w, r->h, c.w, c.h);
      return WF_EXIT_NOFIT;
    }
  }

  /* Unsupported ops first, all at once, so a user sees the whole list. */
  int bad = 0;
  wf_func_foreach_op(f, op) {
    switch (op->code) {
      case WF_OP_MATMUL: case WF_OP_ADD: case WF_OP_SUB: case WF_OP_MUL: case WF_OP_DIV:
      case WF_OP_MAXIMUM: case WF_OP_MINIMUM: case WF_OP_NEG: case WF_OP_EXP: case WF_OP_LOG:
      case WF_OP_SQRT: case WF_OP_RSQRT: case WF_OP_RECIPROCAL: case WF_OP_TANH:
      case WF_OP_SIGMOID: case WF_OP_RELU: case WF_OP_SILU: case WF_OP_GELU: case WF_OP_SOFTMAX:
      case WF_OP_RETURN:
        break;
      default:
        wf_error(op->loc, "partition: op '%s' is not supported by the phase-1 lowering",
                 wf_opinfos[op->code].name);
        bad++;
    }
  }
  if (bad) return WF_EXIT_UNSUPPORTED;

  int64_t n = 0;
  char what[128];
  for (int i = 0; i < f->n_args; i++) {
    snprintf(what, sizeof what, "argument %%%s", wf_str(m, wf_value_get(f, f->args[i])->name));
    if (layout_for(&c, wf_value_type(f, f->args[i]), f->loc, what)) return WF_EXIT_UNSUPPORTED;
    n++;
  }
  /* Only values of ops still in the body: values of erased ops keep their table slots. */
  wf_func_foreach_op(f, op) {
    for (int i = 0; i < op->n_operands; i++) {
      wf_value_info *vi = wf_value_get(f, op->operands[i]);
      if (vi->kind != WF_VAL_GLOBAL) continue;
      /* The constant itself carries the layout, so it survives a dump and re-parse. */
      wf_global *g = &m->globals[vi->index];
      if (g->type.layout.rank == 0) {
        snprintf(what, sizeof what, "constant @%s", wf_str(m, g->name));
        if (layout_for(&c, &g->type, g->loc, what)) return WF_EXIT_UNSUPPORTED;
        n++;
      }
      vi->type.layout = g->type.layout;
    }
    if (op->code == WF_OP_SOFTMAX) {
      int64_t axis = wf_op_int(f, op, "axis", -1);
      int rank = wf_value_type(f, op->results[0])->rank;
      if (axis != -1 && axis != rank - 1) {
        wf_error(op->loc, "partition: softmax over axis %lld is not supported (only the last axis)",
                 (long long)axis);
        return WF_EXIT_UNSUPPORTED;
      }
    }
    for (int i = 0; i < op->n_results; i++) {
      snprintf(what, sizeof what, "result of '%s'", wf_opinfos[op->code].name);
      if (layout_for(&c, wf_value_type(f, op->results[i]), op->loc, what)) return WF_EXIT_UNSUPPORTED;
      n++;
    }
  }
  for (int i = 0; i < f->n_results; i++) {
    snprintf(what, sizeof what, "result %d of @%s", i, wf_str(m, f->name));
    if (layout_for(&c, &f->result_types[i], f->loc, what)) return WF_EXIT_UNSUPPORTED;
  }
  wf_pass_stat_add(ctx, "values-partitioned", n);
  wf_pass_set_changed(ctx);
  return 0;
}

const wf_pass_info wf_pass_partition = {
    "partition",
    "Assign every tensor a layout on one mesh region: [R,C] -> {M_y, N_x}, [C] -> {N_x}",
    partition_opts, 1, partition_stats, 1, run_partition};
