/* Shape rules of the collectives dist.reduce, dist.allreduce and dist.broadcast (ops.def):
 * the operand's leading dim (two for axis=xy|snake) holds one partial per PE along the axis;
 * a reduce drops it, a broadcast keeps the shape. The region's size along the axis is
 * checked by the backend, which knows the mesh. */
#include <string.h>

#include "ir/rules.h"
#include "waferc/collectives.h"
#include "waferc/diag.h"

static int axis_dims(const char *axis) {
  if (!strcmp(axis, "x") || !strcmp(axis, "y")) return 1;
  if (!strcmp(axis, "xy") || !strcmp(axis, "snake")) return 2;
  return 0;
}

int wf_rule_dist_coll(wf_func *f, const wf_op *op, wf_type *out) {
  const wf_type *a = wf_rule_in(f, op, 0);
  const char *name = wf_opinfos[op->code].name;
  const char *axis = wf_op_str(f, op, "axis", "x"), *algo = wf_op_str(f, op, "algo", "auto");
  int lead = axis_dims(axis);
  if (!lead) {
    wf_error(op->loc, "'%s': axis '%s' is not one of x, y, xy, snake", name, axis);
    return -1;
  }
  if (strcmp(algo, "auto") && wf_coll_algo_parse(algo) < 0) {
    wf_error(op->loc, "'%s': unknown algorithm '%s' (auto, star, chain, tree, two_phase, autogen, "
                      "ring, flood)", name, algo);
    return -1;
  }
  if (op->code == WF_OP_DIST_BROADCAST) {
    *out = wf_rule_type(a->dtype, a->rank, a->dims);
    return 0;
  }
  if (a->rank < lead + 1) {
    wf_error(op->loc, "'%s' over axis %s needs rank >= %d (partials, then the data), got %s", name,
             axis, lead + 1, wf_rule_type_str(f, a));
    return -1;
  }
  *out = wf_rule_type(a->dtype, a->rank - lead, a->dims + lead);
  return 0;
}

int64_t wf_cost_dist_coll(const wf_func *f, const wf_op *op) {
  const wf_type *a = wf_rule_in(f, op, 0);
  if (op->code == WF_OP_DIST_BROADCAST) return 0;
  int64_t n = 1;
  for (int d = 0; d < a->rank; d++) n *= a->dims[d];
  return n; /* one add per partial element */
}
