/* Lowering helpers: symbols, colors and their routes, instruction construction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/resources/lower.h"
#include "waferc/diag.h"

static int all_digits(const char *s) {
  if (!*s) return 1;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static void value_name(const wf_lower *L, wf_value v, char *buf, size_t cap);

void wf_lower_value_text(const wf_lower *L, wf_value v, char *buf, size_t cap) {
  value_name(L, v, buf, cap);
}

/* PE symbol names hold 63 characters (pe_program.h). A longer value name (ONNX exports
 * have long ones) keeps its head and gets `~` and the value's index: still unique, the
 * same at every call, and `~` cannot occur in an IR name. */
void wf_lower_value_name(const wf_lower *L, wf_value v, char *buf, size_t cap) {
  enum { SYM_MAX = 63 };
  WF_ASSERT(cap > SYM_MAX);
  char full[512];
  /* The dumps' name; value_name only for values the lowering made after L->names. */
  const char *shown = wf_value_names_get(L->names, v);
  if (shown) snprintf(full, sizeof full, "%s", shown);
  else value_name(L, v, full, sizeof full);
  if (strlen(full) <= SYM_MAX) {
    snprintf(buf, cap, "%s", full);
    return;
  }
  char tail[16];
  int n = snprintf(tail, sizeof tail, "~%u", (unsigned)v);
  snprintf(buf, cap, "%.*s%s", SYM_MAX - n, full, tail);
}

static void value_name(const wf_lower *L, wf_value v, char *buf, size_t cap) {
  const wf_func *f = L->f;
  const wf_value_info *vi = &f->values[v];
  const char *name = wf_str(L->m, vi->name);
  if (vi->kind == WF_VAL_GLOBAL) {
    snprintf(buf, cap, "@%s", wf_str(L->m, L->m->globals[vi->index].name));
    return;
  }
  if (!all_digits(name)) {
    snprintf(buf, cap, "%%%s", name);
    return;
  }
  /* The printer numbers anonymous values in definition order, arguments first. */
  int k = 0;
  for (int i = 0; i < f->n_args; i++) {
    if (f->args[i] == v) {
      snprintf(buf, cap, "%%%d", k);
      return;
    }
    if (all_digits(wf_str(L->m, f->values[f->args[i]].name))) k++;
  }
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_results; i++) {
    if (op->results[i] == v) {
      snprintf(buf, cap, "%%%d", k);
      return;
    }
    if (all_digits(wf_str(L->m, f->values[op->results[i]].name))) k++;
  }
  snprintf(buf, cap, "%%v%u", (unsigned)v);
}

void wf_lower_value_wh(const wf_lower *L, wf_value v, int *w, int *h) {
  int r = wf_value_type(L->f, v)->layout.region;
  const wf_region *reg = &L->m->regions[r >= 0 && r != L->region ? r : L->region];
  *w = r >= 0 && r != L->region ? reg->w : L->w;
  *h = r >= 0 && r != L->region ? reg->h : L->h;
}

void wf_lower_block(const wf_lower *L, wf_value v, int64_t *rows, int64_t *cols) {
  const wf_type *t = wf_value_type(L->f, v);
  WF_ASSERT(t->layout.rank == t->rank && t->rank >= 1);
  /* Every dim but the last folds into the rows of the PE's contiguous block. */
  *rows = 1;
  int w, h; /* a value on a band: the band's (lower_band.c) */
  wf_lower_value_wh(L, v, &w, &h);
  for (int d = 0; d < t->rank; d++) {
    int64_t parts = t->layout.dims[d].split == WF_AXIS_X ? w
                    : t->layout.dims[d].split == WF_AXIS_Y ? h : 1;
    int64_t pad = parts > 1 && L->dim_pad ? L->dim_pad(L->f, v, d, w, h) : 0;
    /* padded: partition_pad.c; past ceil(D/p) for the W x H shift algorithms' K */
    int64_t b = pad ? pad / parts : (t->dims[d] + parts - 1) / parts;
    if (d == t->rank - 1) *cols = b;
    else *rows *= b;
  }
}

/* Values created while lowering (scalar constants, views) need sym_of entries. */
static void grow_sym_of(wf_lower *L, wf_value v) {
  if ((int)v < L->n_sym_of) return;
  int n = (int)L->f->n_values + 1;
  L->sym_of = realloc(L->sym_of, (size_t)n * sizeof *L->sym_of);
  WF_ASSERT(L->sym_of);
  for (int i = L->n_sym_of; i < n; i++) L->sym_of[i] = -1;
  L->n_sym_of = n;
}

void wf_lower_alias(wf_lower *L, wf_value v, int sym) {
  grow_sym_of(L, v);
  L->sym_of[v] = sym;
}

int wf_lower_sym(wf_lower *L, wf_value v) {
  grow_sym_of(L, v);
  if (L->sym_of[v] >= 0) return L->sym_of[v];
  char name[64];
  wf_lower_value_name(L, v, name, sizeof name);
  int64_t r, c;
  wf_lower_block(L, v, &r, &c);
  L->sym_of[v] = wf_pe_class_add_sym(L->cls, name, r * c * 4);
  return L->sym_of[v];
}

int wf_lower_const_block(wf_lower *L, const float *data, int64_t n) {
  /* One constant per distinct content: layernorm's 1/N and epsilon recur per op, and so do
   * attention's masks. */
  for (int i = 0; i < L->n_consts; i++) {
    const wf_global *g = &L->m->globals[L->f->values[L->consts[i]].index];
    if (g->type.dims[0] == n && !memcmp(g->data, data, (size_t)n * sizeof *data)) return wf_lower_sym(L, L->consts[i]);
  }
  char name[64];
  for (int i = 0;; i++) {
    snprintf(name, sizeof name, "lower_k%d", i);
    if (wf_module_find_global(L->m, name) < 0) break;
  }
  wf_type t;
  memset(&t, 0, sizeof t);
  t.dtype = WF_F32;
  t.rank = 1;
  t.dims[0] = n;
  t.layout.rank = 1;
  t.layout.region = L->region;
  t.layout.dims[0] = (wf_layout_dim){wf_intern(L->m, "N"), WF_AXIS_NONE, WF_AXIS_NONE};
  int g = wf_module_add_global(L->m, name, t, L->f->loc);
  L->m->globals[g].kind = n == 1 ? WF_DATA_SPLAT : WF_DATA_INLINE;
  L->m->globals[g].data = wf_arena_dup(L->m->arena, data, (size_t)n * sizeof *data);
  wf_value val = wf_func_global_value(L->f, g);
  wf_value_get(L->f, val)->type = t;
  L->consts = realloc(L->consts, (size_t)(L->n_consts + 1) * sizeof *L->consts);
  WF_ASSERT(L->consts);
  L->consts[L->n_consts++] = val;
  return wf_lower_sym(L, val);
}

int wf_lower_scalar(wf_lower *L, float v) { return wf_lower_const_block(L, &v, 1); }

void wf_emit_bin(wf_lower *L, wf_peop op, int d, int a, int b, int64_t m, int64_t n, int mode) {
  wf_emit(L, NULL, op,
          (wf_pe_arg[]){wf_arg_sym(d), wf_arg_sym(a), wf_arg_sym(b), wf_arg_int(m), wf_arg_int(n), wf_arg_int(mode)});
}

void wf_emit_scal(wf_lower *L, wf_peop op, int d, int a, float c, int64_t n) {
  wf_emit_bin(L, op, d, a, wf_lower_scalar(L, c), 1, n, WF_BMODE_I);
}

int wf_lower_global_index(wf_lower *L, const char *name, int64_t len, int split) {
  float iota[4096];
  WF_ASSERT(len <= (int64_t)(sizeof iota / sizeof *iota));
  for (int64_t c = 0; c < len; c++) iota[c] = (float)c;
  int io = wf_lower_const_block(L, iota, len), one = wf_lower_scalar(L, 1.0f);
  int g = wf_lower_temp(L, name, len * 4);
  if (split == WF_AXIS_NONE) {
    wf_emit(L, NULL, WF_PEOP_COPY, (wf_pe_arg[]){wf_arg_sym(g), wf_arg_sym(io), wf_arg_int(len)});
    return g;
  }
  /* the block's first index, coordinate * len: rfind's base term (a match at position 0) */
  int base = wf_lower_temp(L, "$tk_base", 4);
  wf_pe_term coord = wf_term_scaled(wf_term(split == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0), (int)len, 0);
  wf_emit(L, NULL, WF_PEOP_RFIND, (wf_pe_arg[]){wf_arg_sym(base), wf_arg_sym(one), wf_arg_sym(one), wf_arg_int(1),
                                                wf_arg_int(1), wf_arg_term(coord)});
  wf_emit_bin(L, WF_PEOP_ADD, g, io, base, 1, len, WF_BMODE_I);
  return g;
}

int wf_lower_temp(wf_lower *L, const char *name, int64_t bytes) {
  int s = wf_pe_class_find_sym(L->cls, name);
  if (s < 0) return wf_pe_class_add_sym(L->cls, name, bytes);
  wf_pe_class_grow_sym(L->cls, s, bytes);
  return s;
}

unsigned wf_lower_vars_named(const wf_pe_instr *in) {
  unsigned used = 0;
  for (int k = 0; k < in->guard.n; k++) {
    if (in->guard.c[k].a.kind == WF_TERM_VAR) used |= 1u << in->guard.c[k].a.var;
    if (in->guard.c[k].b.kind == WF_TERM_VAR) used |= 1u << in->guard.c[k].b.var;
  }
  for (int a = 0; a < WF_PE_MAX_ARGS && wf_peops[in->op].sig[a]; a++) {
    if (in->args[a].term.kind == WF_TERM_VAR) used |= 1u << in->args[a].term.var;
    if (in->args[a].term2.kind == WF_TERM_VAR) used |= 1u << in->args[a].term2.var;
  }
  return used;
}

int wf_lower_var(wf_lower *L, const char *name) {
  wf_pe_class *c = L->cls;
  int v = wf_pe_class_find_var(c, name, 1);
  if (v >= 0) return v;
  /* the class holds 8: lend the op one that no open loop and none of its code so far names
   * (earlier ops' loops are over, and a loop sets its variable when it starts) */
  if (L->lent_op != L->n_ops + 1) L->lent_op = L->n_ops + 1, L->n_lent = 0;
  for (int i = 0; i < L->n_lent; i++)
    if (!strcmp(L->lent_name[i], name)) return L->lent_var[i];
  int op0 = c->n_code;
  while (op0 > 0 && c->code[op0 - 1].op != WF_PEOP_OP) op0--;
  for (v = 0; v < c->n_vars; v++) {
    int busy = 0;
    for (int i = 0; i < L->n_lent; i++) busy |= L->lent_var[i] == v;
    for (int i = 0; i < c->n_code && !busy; i++)
      busy = (i >= op0 || (c->code[i].op == WF_PEOP_LOOP && c->code[i].match < 0)) && (wf_lower_vars_named(&c->code[i]) >> v & 1);
    if (busy) continue;
    WF_ASSERT(L->n_lent < 8);
    snprintf(L->lent_name[L->n_lent], sizeof L->lent_name[0], "%s", name);
    L->lent_var[L->n_lent++] = v;
    return v;
  }
  WF_ASSERT(0); /* every loop variable a PE class holds in use at once */
  return -1;
}

/* The switch positions of a broadcast color: the PE's place relative to the root. */
enum { FLOOD_AFTER, FLOOD_ROOT, FLOOD_BEFORE };

/* Router configuration per purpose, written once for every PE: the loader drops the
 * directions that leave the region, which derives the edge roles. */
static void add_routes(wf_pe_class *c, int purpose, int col) {
  enum { N = 1u << WF_DIR_N, E = 1u << WF_DIR_E, S = 1u << WF_DIR_S, W = 1u << WF_DIR_W,
         R = 1u << WF_DIR_RAMP };
  switch (purpose) {
    /* Broadcast along the row from whichever PE sends. A router holds one rx set -> one tx
     * set per position, so the three roles are three positions, which wf_emit sets before
     * every send on the color (flood_positions): p0 east of the root (the launch position),
     * p1 the root, p2 west of it. */
    case WF_COLOR_ROW_BCAST:
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_AFTER, WF_DIR_W, E | R);
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_ROOT, WF_DIR_RAMP, E | W);
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_BEFORE, WF_DIR_E, W | R);
      break;
    case WF_COLOR_COL_BCAST: /* the same along the column: p0 south of the root */
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_AFTER, WF_DIR_N, S | R);
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_ROOT, WF_DIR_RAMP, N | S);
      wf_pe_class_add_route_pos(c, NULL, col, FLOOD_BEFORE, WF_DIR_S, N | R);
      break;
  }
}

static const char *const purpose_text[WF_COLOR_ROLES] = {
    "row-broadcast (matmul A blocks along x)", "column-broadcast (matmul B blocks along y)",
    "meshgemm INTERLEAVE ring along x (A blocks)",
    "meshgemm INTERLEAVE ring along y (B blocks)", "cannon ring along x (A blocks)",
    "cannon ring along y (B blocks)", "meshgemm virtual INTERLEAVE ring along x, westbound hops (A tiles)",
    "meshgemm virtual INTERLEAVE ring along y, northbound hops (B tiles)",
    "meshgemm ring along x, second color", "meshgemm ring along y, second color",
    "meshgemm ring along x, third color", "meshgemm ring along y, third color",
    "cannon ring along x, second color", "cannon ring along y, second color",
    "cannon ring along x, third color", "cannon ring along y, third color",
    "meshgemm virtual ring along x, westbound hops, second color",
    "meshgemm virtual ring along y, northbound hops, second color",
    "attention ring along x (unused)", "attention INTERLEAVE ring along y (K/V blocks)",
    "attention ring along x, second color (unused)", "attention ring along y, second color",
    "attention ring along x, third color (unused)", "attention ring along y, third color"};

int wf_lower_color(wf_lower *L, int purpose, wf_loc loc) {
  if (L->color[purpose] >= 0) return L->color[purpose];
  for (int c = 0; c < L->t->colors; c++) {
    if (L->t->reserved_colors >> c & 1) continue;
    int taken = 0;
    for (int p = 0; p < WF_COLOR_ROLES; p++) taken |= L->color[p] == c;
    /* colors taken by collectives (wf_lower_color_fresh) are declared in the class only */
    for (int i = 0; i < L->cls->n_colors; i++) taken |= L->cls->colors[i].color == c;
    if (taken) continue;
    L->color[purpose] = c;
    wf_pe_class_add_color(L->cls, c, purpose_text[purpose]);
    add_routes(L->cls, purpose, c);
    return c;
  }
  wf_error(loc, "target '%s' has no free color left for the %s", L->t->name, purpose_text[purpose]);
  return -1;
}

static void emit_raw(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args);

/* Before a send on a broadcast color (guard `[x==T, rest]` on the row color, `y` on the
 * column's), every PE of the line sets its router to its role for this root: T itself to
 * FLOOD_ROOT, `[x<T, rest]` to FLOOD_BEFORE, `[x>T, rest]` to FLOOD_AFTER. A swset goes down
 * the ramp behind the PE's earlier wavelets of the color and after its earlier receives, so
 * it never turns a router while the previous broadcast still passes it; a wavelet that
 * arrives before its router turns waits for it. One cycle per PE and broadcast. */
static void flood_positions(wf_lower *L, const wf_pe_guard *g, int col) {
  int axis = col == L->color[WF_COLOR_ROW_BCAST] ? WF_TERM_X : WF_TERM_Y;
  int at = -1, root_on_b = 0;
  for (int i = 0; g && i < g->n && at < 0; i++) {
    const wf_pe_cond *c = &g->c[i];
    if (c->cmp != WF_CMP_EQ) continue;
    for (int side = 0; side < 2; side++) {
      const wf_pe_term *t = side ? &c->b : &c->a;
      if (t->kind == axis && t->mul <= 1 && t->mul >= 0 && !t->mod && !t->k) {
        at = i;
        root_on_b = !side;
        break;
      }
    }
  }
  WF_ASSERT(at >= 0); /* a broadcast has one root per line, named by `x == T` */
  const wf_pe_cond *rc = &g->c[at];
  wf_pe_term self = root_on_b ? rc->a : rc->b, root = root_on_b ? rc->b : rc->a;
  static const int cmp[3] = {WF_CMP_GT, WF_CMP_EQ, WF_CMP_LT}; /* FLOOD_AFTER, _ROOT, _BEFORE */
  for (int p = 0; p < 3; p++) {
    wf_pe_guard r = *g;
    r.c[at].a = self;
    r.c[at].b = root;
    r.c[at].cmp = (uint8_t)cmp[p];
    emit_raw(L, &r, WF_PEOP_SWSET, (wf_pe_arg[]){wf_arg_int(col), wf_arg_int(p)});
  }
}

void wf_lower_flood_positions(wf_lower *L, const wf_pe_guard *g, int col) { flood_positions(L, g, col); }

int wf_emit_ring(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args, int senders) {
  int col = args[0].term.k;
  for (int i = 0; i < L->n_ring_ch; i++) {
    const wf_ring_ch *ch = &L->ring_ch[i];
    if (ch->col[0] != col) continue;
    for (int k = 0; k < ch->n; k++) {
      int set = senders ? ch->send_set[k] : ch->recv_set[k];
      if (set == -1) continue;
      wf_pe_guard g2 = g ? *g : wf_guard0();
      if (set >= 0) {
        WF_ASSERT(g2.n < WF_PE_MAX_GUARD);
        wf_guard_add_in(&g2, ch->coord, set);
      }
      wf_pe_arg a2[WF_PE_MAX_ARGS];
      memcpy(a2, args, strlen(wf_peops[op].sig) * sizeof *a2);
      a2[0].term.k = ch->col[k];
      emit_raw(L, &g2, op, a2);
    }
    return 1;
  }
  return 0;
}

void wf_emit(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args) {
  if (wf_peops[op].cost == WF_PECOST_FABRIC || wf_peops[op].cost == WF_PECOST_ASYNC) {
    int col = args[0].term.k;
    /* a ring line's stream: one per color, on the PEs that send (receive) on it */
    if (wf_emit_ring(L, g, op, args, op == WF_PEOP_ASEND)) {
      WF_ASSERT(op == WF_PEOP_ASEND || op == WF_PEOP_ARECV || op == WF_PEOP_ARECVADD);
      return;
    }
    int flood = col == L->color[WF_COLOR_ROW_BCAST] || col == L->color[WF_COLOR_COL_BCAST];
    /* plain sends broadcast on these colors (receives need no more than the position); async
     * streams too, once wf_lower_flood_positions has set the positions for their root */
    WF_ASSERT(!flood || op == WF_PEOP_SEND || op == WF_PEOP_RECV || op == WF_PEOP_RECVADD ||
              op == WF_PEOP_RECVMAX || op == WF_PEOP_ASEND || op == WF_PEOP_ARECV);
    /* a send right after a send of the same root on the color continues its broadcast */
    const wf_pe_instr *prev = L->cls->n_code ? &L->cls->code[L->cls->n_code - 1] : NULL;
    wf_pe_guard g0 = g ? *g : wf_guard0();
    int cont = prev && prev->op == WF_PEOP_SEND && prev->args[0].term.k == col &&
               prev->guard.n == g0.n && !memcmp(prev->guard.c, g0.c, (size_t)g0.n * sizeof g0.c[0]);
    if (flood && op == WF_PEOP_SEND && !cont) flood_positions(L, g, col);
  }
  emit_raw(L, g, op, args);
}

static void emit_raw(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args) {
  wf_pe_instr in;
  memset(&in, 0, sizeof in);
  in.op = op;
  if (g) in.guard = *g;
  int n = (int)strlen(wf_peops[op].sig);
  for (int i = 0; i < n; i++) in.args[i] = args[i];
  wf_pe_class_add_instr(L->cls, &in);
}

wf_pe_arg wf_arg_sym(int sym) {
  wf_pe_arg a;
  memset(&a, 0, sizeof a);
  a.sym = sym;
  return a;
}

wf_pe_arg wf_arg_at(int sym, int64_t off) {
  wf_pe_arg a = wf_arg_sym(sym);
  WF_ASSERT(off >= INT32_MIN && off <= INT32_MAX);
  a.off = (int32_t)off;
  return a;
}
wf_pe_arg wf_arg_int(int64_t v) {
  wf_pe_arg a;
  memset(&a, 0, sizeof a);
  a.term = wf_term_int((int32_t)v);
  return a;
}
wf_pe_arg wf_arg_term(wf_pe_term t) {
  wf_pe_arg a;
  memset(&a, 0, sizeof a);
  a.term = t;
  return a;
}

/* ---- guard terms and stream-completion tasks ---- */

wf_pe_term wf_gterm(wf_pe_term t, int mod, int k) {
  t.mod = (uint16_t)mod;
  t.k = k;
  return t;
}

void wf_gadd(wf_pe_guard *g, wf_pe_term a, wf_cmp cmp, wf_pe_term b) { wf_guard_add(g, a, cmp, b); }

void wf_gadd_mod(wf_pe_guard *g, wf_pe_term r, int mod, int v) {
  /* (c*base + k) % M == v  <=>  (c*base) % M == (v - k) mod M: a term's offset comes after
   * its modulus, so the offset moves to the constant side */
  int want = (int)(((v - (int64_t)r.k) % mod + mod) % mod);
  wf_guard_add(g, wf_gterm(r, mod, 0), WF_CMP_EQ, wf_term_int(want));
}

int wf_lower_done_task(wf_lower *L) {
  wf_pe_class *c = L->cls;
  if (c->n_tasks == 0) {
    int t = wf_pe_class_add_task(c, "main", WF_TASK_LOCAL, -1, 1, 0);
    c->tasks[t].start = 0;
  }
  return c->n_tasks; /* created after the last instruction by wf_lower_close_tasks */
}

void wf_lower_close_tasks(wf_lower *L) {
  wf_pe_class *c = L->cls;
  int need = 0;
  for (int i = 0; i < c->n_code; i++)
    if (wf_peops[c->code[i].op].cost == WF_PECOST_ASYNC && c->code[i].args[3].term.k == c->n_tasks)
      need = 1;
  if (need) wf_pe_class_add_task(c, "stream_done", WF_TASK_LOCAL, -1, 0, 0);
}

wf_row_skew wf_lower_row_skew(const wf_lower *L) {
  wf_row_skew rs = {L->skew_in_ok ? L->skew_in : NULL, L->skew_out, 0};
  return rs;
}
