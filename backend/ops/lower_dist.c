/* dist.reduce, dist.allreduce, dist.broadcast: the IR's collectives lowered with the
 * collectives library (lower_collective.h). The operand's leading dim (two for xy) is split
 * along the axis, one partial per PE; each PE's block is the `len` words reduced. The result
 * takes over the operand's block when nothing else reads the operand (no local copy, so the
 * op's simulated cycles are the collective's alone); else the block is copied first.
 * A reduce's root is the far end ((W-1) along x, the last PE of the region for xy): the
 * value the host reads back for a replicated result. */
#include <string.h>

#include "backend/collectives/lower_collective.h"
#include "waferc/diag.h"

static int uses_of(const wf_func *f, wf_value v) {
  int n = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) n += op->operands[i] == v;
  return n;
}

/* Checks the partial dims' layout; returns the number of leading partial dims or -1. */
static int check_layout(wf_lower *L, const wf_op *op, const char *axis) {
  const wf_type *t = wf_value_type(L->f, op->operands[0]);
  const char *name = wf_opinfos[op->code].name;
  if (op->code == WF_OP_DIST_BROADCAST) return 0;
  int xy = !strcmp(axis, "xy") || !strcmp(axis, "snake");
  int want[2] = {xy ? WF_AXIS_Y : !strcmp(axis, "y") ? WF_AXIS_Y : WF_AXIS_X, WF_AXIS_X};
  int ext[2] = {want[0] == WF_AXIS_Y ? L->h : L->w, L->w};
  for (int d = 0; d < 1 + xy; d++) {
    if (t->layout.dims[d].split != want[d] || t->dims[d] != ext[d]) {
      wf_error(op->loc, "'%s' over axis %s: dim %d of the operand must hold one partial per PE "
                        "(size %d, split along %s); got size %lld", name, axis, d, ext[d],
               want[d] == WF_AXIS_X ? "x" : "y", (long long)t->dims[d]);
      return -1;
    }
  }
  return 1 + xy;
}

int wf_lower_dist_coll(wf_lower *L, const wf_op *op, wf_lowered_op *out) {
  wf_func *f = L->f;
  wf_value xv = op->operands[0], yv = op->results[0];
  const char *axis = wf_op_str(f, op, "axis", "x");
  const char *algo_s = wf_op_str(f, op, "algo", op->code == WF_OP_DIST_BROADCAST ? "flood" : "auto");
  int algo = strcmp(algo_s, "auto") ? wf_coll_algo_parse(algo_s) : -1;
  int forced = strcmp(algo_s, "auto") != 0;
  if (op->code != WF_OP_DIST_BROADCAST && L->reduce_algo != -2) { /* waferc --reduce-algo */
    algo = L->reduce_algo;
    forced = algo >= 0;
  }
  int lead = check_layout(L, op, axis);
  if (lead < 0) return WF_EXIT_INPUT;
  int64_t xr, xc, yr, yc;
  wf_lower_block(L, xv, &xr, &xc);
  wf_lower_block(L, yv, &yr, &yc);
  int64_t len = yr * yc;
  if (xr * xc != len) {
    wf_error(op->loc, "'%s': each PE's partial has %lld words but the result block %lld",
             wf_opinfos[op->code].name, (long long)(xr * xc), (long long)len);
    return WF_EXIT_INPUT;
  }
  int sx = wf_lower_sym(L, xv), sym;
  int64_t local = 0;
  int is_result = 0;
  wf_func_foreach_op(f, o2) if (o2->code == WF_OP_RETURN)
    for (int i = 0; i < o2->n_operands; i++) is_result |= o2->operands[i] == xv;
  if (uses_of(f, xv) == 1 && !is_result && f->values[xv].kind != WF_VAL_GLOBAL) {
    L->sym_of[yv] = sx; /* in place */
    sym = sx;
  } else {
    sym = wf_lower_sym(L, yv);
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(sym), wf_arg_sym(sx), wf_arg_int(len)});
    local = len;
  }
  wf_coll_result res;
  memset(&res, 0, sizeof res);
  int rc = 0, xy = lead == 2 || (op->code == WF_OP_DIST_BROADCAST && (!strcmp(axis, "xy") || !strcmp(axis, "snake")));
  int along_y = !strcmp(axis, "y");
  wf_coll_line ln = {along_y ? WF_AXIS_Y : WF_AXIS_X, along_y ? L->h : L->w, wf_guard0()};
  const char *kind = "";
  if (!strcmp(axis, "snake") && op->code != WF_OP_DIST_BROADCAST && L->reduce_algo == -2) {
    algo = WF_COLL_SNAKE; /* axis snake: the partials laid out as for xy, reduced along a snake */
    forced = 1;
  }
  if (op->code == WF_OP_DIST_BROADCAST) {
    kind = "broadcast";
    int root = (int)wf_op_int(f, op, "root", 0);
    wf_coll_params p = wf_coll_params_from_target(L->t);
    if (xy) {
      rc = wf_lower_coll_bcast_2d(L, 0, 0, sym, len, op->loc);
      res.predicted = wf_coll_bcast2d(L->w, L->h, len, &p);
    } else {
      rc = wf_lower_coll_bcast(L, &ln, root, sym, len, op->loc);
      res.predicted = ln.n > 1 ? wf_coll_bcast_at(ln.n, len, root, &p) : 0;
    }
    res.algo = WF_COLL_FLOOD;
    snprintf(res.why, sizeof res.why, "flooding broadcast of %lld words over %dx%d PEs",
             (long long)len, xy ? L->w : ln.n, xy ? L->h : 1);
  } else if (op->code == WF_OP_DIST_REDUCE) {
    kind = "reduce";
    int root = (int)wf_op_int(f, op, "root", -1);
    rc = xy ? wf_lower_coll_reduce_xy(L, algo, sym, len, WF_PEOP_RECVADD, op->loc, &res)
            : wf_lower_coll_reduce(L, &ln, algo, root, sym, len, WF_PEOP_RECVADD, op->loc, &res);
  } else {
    kind = "allreduce";
    rc = xy ? wf_lower_coll_allreduce_xy(L, algo, sym, len, WF_PEOP_RECVADD, op->loc, &res)
            : wf_lower_coll_allreduce(L, &ln, algo, sym, len, WF_PEOP_RECVADD, op->loc, &res);
  }
  snprintf(out->text, sizeof out->text, "%s-%s:%s", kind, axis, wf_coll_algo_name(res.algo));
  out->lowering = out->text;
  out->predicted = (int64_t)(res.predicted + 0.5) + local;
  snprintf(out->explain, sizeof out->explain, "%s%.200s", forced ? "forced: " : "auto: ", res.why);
  return rc;
}
