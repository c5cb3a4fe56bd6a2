/* The verifier: structure, SSA def-before-use, attributes against ops.def, inferred result
 * types, layouts, regions and constants. Every error is located (the op's, the function's,
 * the global's or the region's loc) and names what it is about. Errors are counted, and
 * checking goes on past them, so one run lists every problem. */
#include <stdlib.h>
#include <string.h>

#include "ir/rules.h"

#define NAME(op) (wf_opinfos[(op)->code].name)

static const char *kind_name(int k) {
  switch (k) {
  case WF_ATTR_INT: return "an int";
  case WF_ATTR_FLOAT: return "a float";
  case WF_ATTR_BOOL: return "a bool";
  case WF_ATTR_STR: return "a string";
  case WF_ATTR_IDENT: return "an identifier";
  case WF_ATTR_INTS: return "an int list";
  case WF_ATTR_FLOATS: return "a float list";
  default: return "an unknown kind";
  }
}

/* Whether an attribute of kind `got` is acceptable where the spec says `want`. The parser
 * cannot tell `1` meant as a float, nor the kind of `[]`, so those are accepted. */
static int kind_ok(int want, const wf_attr *a) {
  int got = a->kind;
  if (got == want) return 1;
  switch (want) {
  case WF_ATTR_FLOAT: return got == WF_ATTR_INT;
  case WF_ATTR_STR: case WF_ATTR_IDENT: return got == WF_ATTR_STR || got == WF_ATTR_IDENT;
  case WF_ATTR_INTS: return got == WF_ATTR_FLOATS && a->u.floats.n == 0;
  case WF_ATTR_FLOATS: return got == WF_ATTR_INTS;
  default: return 0;
  }
}

static int check_layout(const wf_module *m, wf_loc loc, const char *what, const wf_type *t) {
  const wf_layout *l = &t->layout;
  if (l->rank == 0) return 0;
  if (l->rank != t->rank) {
    wf_error(loc, "%s: layout has %d dims but the tensor has rank %d", what, l->rank, t->rank);
    return 1;
  }
  if (l->region < -1 || l->region >= m->n_regions) {
    wf_error(loc, "%s: layout names region #%d, which does not exist", what, l->region);
    return 1;
  }
  int split_on[3] = {-1, -1, -1}, repl_on[3] = {-1, -1, -1};
  for (int i = 0; i < l->rank; i++) {
    const wf_layout_dim *d = &l->dims[i];
    if (d->split > WF_AXIS_Y || d->repl > WF_AXIS_Y) {
      wf_error(loc, "%s: layout dim %d has an invalid mesh axis", what, i);
      return 1;
    }
    if (d->split && d->repl) {
      wf_error(loc, "%s: layout dim %d is both split and replicated", what, i);
      return 1;
    }
    if (d->split) {
      if (split_on[d->split] >= 0) {
        wf_error(loc, "%s: layout splits dims %d and %d along the same mesh axis %s", what,
                 split_on[d->split], i, d->split == WF_AXIS_X ? "x" : "y");
        return 1;
      }
      split_on[d->split] = i;
    }
    if (d->repl) {
      if (repl_on[d->repl] >= 0) {
        wf_error(loc, "%s: layout is replicated along %s twice", what, d->repl == WF_AXIS_X ? "x" : "y");
        return 1;
      }
      repl_on[d->repl] = i;
    }
  }
  for (int ax = WF_AXIS_X; ax <= WF_AXIS_Y; ax++)
    if (split_on[ax] >= 0 && repl_on[ax] >= 0) {
      wf_error(loc, "%s: layout both splits and replicates along mesh axis %s", what,
               ax == WF_AXIS_X ? "x" : "y");
      return 1;
    }
  return 0;
}

static int check_attrs(wf_func *f, const wf_op *op) {
  const wf_module *m = f->module;
  int errs = 0;
  wf_attr_spec specs[16];
  int ns = wf_op_attr_specs(op->code, specs, 16);
  for (int i = 0; i < op->n_attrs; i++) {
    const wf_attr *a = &op->attrs[i];
    const char *name = wf_str(m, a->name);
    const wf_attr_spec *s = wf_op_attr_spec(op->code, name);
    if (!s) {
      char allowed[512] = "";
      size_t n = 0;
      for (int j = 0; j < ns && j < 16; j++)
        n += (size_t)snprintf(allowed + n, n < sizeof allowed ? sizeof allowed - n : 0, "%s%s",
                              j ? ", " : "", specs[j].name);
      if (ns == 0) wf_error(op->loc, "'%s' has no attribute '%s' ('%s' takes no attributes)", NAME(op), name, NAME(op));
      else wf_error(op->loc, "'%s' has no attribute '%s' (allowed: %s)", NAME(op), name, allowed);
      errs++;
      continue;
    }
    for (int j = 0; j < i; j++)
      if (op->attrs[j].name == a->name) {
        wf_error(op->loc, "'%s' attribute '%s' is given twice", NAME(op), name);
        errs++;
      }
    if (!kind_ok(s->kind, a)) {
      wf_error(op->loc, "'%s' attribute '%s' must be %s, got %s", NAME(op), name, kind_name(s->kind),
               kind_name(a->kind));
      errs++;
    }
  }
  for (int j = 0; j < ns && j < 16; j++)
    if (specs[j].required && !wf_op_attr(f, op, specs[j].name)) {
      wf_error(op->loc, "'%s' is missing required attribute '%s'", NAME(op), specs[j].name);
      errs++;
    }
  return errs;
}

static const char *value_desc(const wf_func *f, wf_value v, char *buf, size_t n) {
  const wf_value_info *vi = &f->values[v];
  if (vi->kind == WF_VAL_GLOBAL) snprintf(buf, n, "@%s", wf_str(f->module, vi->name));
  else if (vi->name) snprintf(buf, n, "%%%s", wf_str(f->module, vi->name));
  else snprintf(buf, n, "value #%u", (unsigned)v);
  return buf;
}

/* Checks one op; `defined` marks values available at this point. */
static int check_op(wf_func *f, wf_op *op, unsigned char *defined) {
  const wf_module *m = f->module;
  const char *fname = wf_str(m, f->name);
  if ((unsigned)op->code >= WF_OP_COUNT) {
    wf_error(op->loc, "invalid opcode %d in @%s", (int)op->code, fname);
    return 1;
  }
  const wf_opinfo *info = &wf_opinfos[op->code];
  int errs = 0;
  if ((info->flags & WF_OPF_TERMINATOR) && op != f->last) {
    wf_error(op->loc, "'%s' must be the last op of @%s", info->name, fname);
    errs++;
  }
  if (info->n_operands >= 0 && op->n_operands != info->n_operands) {
    wf_error(op->loc, "'%s' takes %d operand%s, got %d", info->name, info->n_operands,
             info->n_operands == 1 ? "" : "s", op->n_operands);
    errs++;
  }
  if (info->n_results >= 0 && op->n_results != info->n_results) {
    wf_error(op->loc, "'%s' has %d result%s, got %d", info->name, info->n_results,
             info->n_results == 1 ? "" : "s", op->n_results);
    errs++;
  }
  int operands_ok = errs == 0;
  for (int i = 0; i < op->n_operands; i++) {
    wf_value v = op->operands[i];
    char buf[96];
    if (v == WF_NO_VALUE || v >= f->n_values) {
      wf_error(op->loc, "'%s' operand %d is not a valid value", info->name, i);
      errs++, operands_ok = 0;
    } else if (f->values[v].kind == WF_VAL_GLOBAL) {
      if (f->values[v].index < 0 || f->values[v].index >= m->n_globals) {
        wf_error(op->loc, "'%s' operand %d names a constant that does not exist", info->name, i);
        errs++, operands_ok = 0;
      }
    } else if (!defined[v]) {
      wf_error(op->loc, "'%s' operand %d (%s) is used before it is defined", info->name, i,
               value_desc(f, v, buf, sizeof buf));
      errs++, operands_ok = 0;
    }
  }
  int attr_errs = check_attrs(f, op);
  errs += attr_errs;
  for (int i = 0; i < op->n_results; i++) {
    wf_value v = op->results[i];
    if (v == WF_NO_VALUE || v >= f->n_values || f->values[v].kind != WF_VAL_RESULT ||
        f->values[v].def != op || defined[v]) {
      wf_error(op->loc, "'%s' result %d is not a fresh value defined by this op", info->name, i);
      errs++, operands_ok = 0;
      continue;
    }
    defined[v] = 1;
    char what[64];
    snprintf(what, sizeof what, "'%s' result %d", info->name, i);
    errs += check_layout(m, op->loc, what, &f->values[v].type);
  }
  if (!operands_ok || attr_errs) return errs;

  wf_type inferred[64];
  wf_type *out = op->n_results <= 64 ? inferred : calloc((size_t)op->n_results, sizeof *out);
  if (wf_infer_result_types(f, op, out) != 0) {
    errs++;
  } else {
    for (int i = 0; i < op->n_results; i++) {
      const wf_type *got = wf_value_type(f, op->results[i]);
      if (!wf_type_same_shape(got, &out[i])) {
        wf_error(op->loc, "'%s' result %d has type %s but its operands give %s", info->name, i,
                 wf_rule_type_str(f, got), wf_rule_type_str(f, &out[i]));
        errs++;
      }
    }
  }
  if (out != inferred) free(out);
  return errs;
}

int wf_verify_func(wf_func *f) {
  const wf_module *m = f->module;
  const char *fname = wf_str(m, f->name);
  int errs = 0;
  char what[96];
  for (int i = 0; i < f->n_args; i++) {
    snprintf(what, sizeof what, "argument %d of @%s", i, fname);
    errs += check_layout(m, f->loc, what, wf_value_type(f, f->args[i]));
  }
  for (int i = 0; i < f->n_results; i++) {
    snprintf(what, sizeof what, "result %d of @%s", i, fname);
    errs += check_layout(m, f->loc, what, &f->result_types[i]);
  }
  unsigned char *defined = calloc(f->n_values ? f->n_values : 1, 1);
  WF_ASSERT(defined != NULL);
  for (int i = 0; i < f->n_args; i++)
    if (f->args[i] != WF_NO_VALUE && f->args[i] < f->n_values) defined[f->args[i]] = 1;
  wf_func_foreach_op(f, op) errs += check_op(f, op, defined);
  free(defined);
  if (!f->last) {
    wf_error(f->loc, "function @%s has an empty body; it must end in 'return'", fname);
    errs++;
  } else if (f->last->code != WF_OP_RETURN) {
    wf_error(f->last->loc, "function @%s must end in 'return' (its last op is '%s')", fname,
             (unsigned)f->last->code < WF_OP_COUNT ? wf_opinfos[f->last->code].name : "?");
    errs++;
  }
  return errs;
}

static int verify_globals(wf_module *m) {
  int errs = 0;
  for (int i = 0; i < m->n_globals; i++) {
    wf_global *g = &m->globals[i];
    const char *name = wf_str(m, g->name);
    char what[96];
    snprintf(what, sizeof what, "constant @%s", name);
    errs += check_layout(m, g->loc, what, &g->type);
    for (int d = 0; d < g->type.rank; d++)
      if (g->type.dims[d] < 0) {
        wf_error(g->loc, "constant @%s has a negative dimension", name);
        errs++;
        break;
      }
    /* The element count of inline data is checked by whoever fills `data` (the parser and
     * the frontends know it; the struct does not record it). Data must be present. */
    if ((g->kind == WF_DATA_INLINE || g->kind == WF_DATA_SPLAT) && !g->data &&
        wf_type_numel(&g->type) > 0) {
      wf_error(g->loc, "constant @%s has no data", name);
      errs++;
    }
    if (g->kind == WF_DATA_FILE && (!g->path || !*wf_str(m, g->path))) {
      wf_error(g->loc, "constant @%s names no file", name);
      errs++;
    }
    for (int j = 0; j < i; j++)
      if (m->globals[j].name == g->name) {
        wf_error(g->loc, "constant @%s is defined twice", name);
        errs++;
        break;
      }
  }
  return errs;
}

int wf_verify_module(wf_module *m) {
  int errs = 0;
  for (int i = 0; i < m->n_regions; i++) {
    const wf_region *r = &m->regions[i];
    const char *name = wf_str(m, r->name);
    if (r->x < 0 || r->y < 0 || r->w <= 0 || r->h <= 0) {
      wf_error(r->loc, "region @%s = rect(%d, %d, %d, %d) needs x, y >= 0 and width, height > 0",
               name, r->x, r->y, r->w, r->h);
      errs++;
    }
    for (int j = 0; j < i; j++)
      if (m->regions[j].name == r->name) {
        wf_error(r->loc, "region @%s is defined twice", name);
        errs++;
        break;
      }
  }
  errs += verify_globals(m);
  for (int i = 0; i < m->n_funcs; i++) {
    for (int j = 0; j < i; j++)
      if (m->funcs[j]->name == m->funcs[i]->name) {
        wf_error(m->funcs[i]->loc, "function @%s is defined twice", wf_str(m, m->funcs[i]->name));
        errs++;
        break;
      }
    errs += wf_verify_func(m->funcs[i]);
  }
  return errs;
}
