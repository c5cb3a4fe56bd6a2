/* waferc — PE programs (.wpe): the in-memory form shared by the backend (which builds and
 * writes them) and the runtime (which parses and executes them). The text form is specified
 * in docs/pe-programs.md; instructions come from ir/pe/peops.def.
 *
 * A program class is SPMD: every PE of its rectangle runs the same text. What differs by PE
 * (its role) is expressed by guards over the PE's parameters x, y (relative to the region)
 * and the region size W, H, e.g. `[x==k] send c0 %a 32`, so a class never grows with the
 * number of PEs it covers.
 *
 *   wf_pe_class *c = wf_pe_class_new("main");
 *   wf_pe_class_add_sym(c, "%x", 64);
 *   ... wf_pe_emit(c, WF_PEOP_ZERO, 0, NULL, "%x", 64) ...
 *   wf_pe_class_write(c, stdout);
 */
#ifndef WAFERC_BACKEND_PE_PROGRAM_H
#define WAFERC_BACKEND_PE_PROGRAM_H

#include <stdint.h>
#include <stdio.h>

#define WF_PE_FORMAT_VERSION 2     /* written; 1 and 2 are read (docs/pe-programs.md) */
#define WF_PE_FORMAT_MIN_VERSION 1
#define WF_PE_MAX_POS 8            /* switch positions representable; the target's
                                      switch_positions (4 on WSE-2) is checked by waferrun */
#define WF_PE_MAX_TASKS 32
/* A symbol's offset and size, in bytes: far above any PE's SRAM (the loader holds a class to
   its target's), far enough below INT64_MAX that offset + bytes and the 16-byte rounding of
   the memory map cannot overflow. */
#define WF_PE_MAX_SYM_BYTES (INT64_C(1) << 40)

typedef enum wf_peop {
#define WF_PEOP(id, name, sig, cost, syn) WF_PEOP_##id,
#include "ir/pe/peops.def"
#undef WF_PEOP
  WF_PEOP_COUNT
} wf_peop;

typedef enum wf_pe_cost {
  WF_PECOST_NONE,
  WF_PECOST_ELEM,
  WF_PECOST_EXP,
  WF_PECOST_DIV,
  WF_PECOST_FMAC,
  WF_PECOST_FABRIC,  /* wavelet streams: one wavelet per cycle when the fabric allows */
  WF_PECOST_CTL,     /* one wavelet-sized item down the ramp (control, teardown, switch write) */
  WF_PECOST_TASK,    /* task scheduler instruction: activate / block / unblock */
  WF_PECOST_ASYNC,   /* starts a background fabric stream; the issuing task continues */
  WF_PECOST_SIMD16   /* fp16 vector op: ceil(work / fp16_simd) cycles */
} wf_pe_cost;

typedef struct wf_peop_info {
  const char *name;     /* mnemonic */
  const char *sig;      /* operand letters (see peops.def) */
  wf_pe_cost cost;
  const char *synopsis; /* with P1..Pn placeholders */
} wf_peop_info;
extern const wf_peop_info wf_peops[WF_PEOP_COUNT];
int wf_peop_lookup(const char *name, wf_peop *out); /* 0 on success */

/* Router ports. N is toward y-1, E toward x+1. */
enum { WF_DIR_N, WF_DIR_E, WF_DIR_S, WF_DIR_W, WF_DIR_RAMP, WF_DIR_COUNT };
extern const char *const wf_dir_names[WF_DIR_COUNT];
/* The step to the neighbour a port leads to (y grows southward; RAMP: none). */
extern const int wf_dir_dx[WF_DIR_COUNT], wf_dir_dy[WF_DIR_COUNT];

/* A term: (c * base) % M + k, where base is a constant 0, a PE parameter, a step parameter
 * (R, C: set by the host before each decode step, 0 otherwise) or a loop variable; the scale
 * c and the modulus M are optional. The scale names a PE's virtual index
 * when every PE stands for c positions of a longer line (`3*y+1`: the second of three virtual
 * rows, docs/gemm.md); it is applied before the modulus (`3*y%4`). A negative scale counts
 * down (`-16*j+96`: what is left of a row after slot j). */
/* WF_TERM_R: the row of the region (0 = top) whose KV cache grows by one token at this decode
 * step; WF_TERM_C: the tokens this PE's row holds after the step's append. Both are step
 * parameters (wf_sim_set_step): the same for every PE of a row, so a condition on them goes
 * with the y conditions, and 0 outside generation. Routes may not name them (the routers are
 * configured once, when the simulator is built). */
typedef enum { WF_TERM_INT, WF_TERM_X, WF_TERM_Y, WF_TERM_W, WF_TERM_H, WF_TERM_VAR, WF_TERM_R,
               WF_TERM_C } wf_term_kind;
typedef struct wf_pe_term {
  uint8_t kind; /* wf_term_kind */
  uint8_t var;  /* WF_TERM_VAR: loop variable index in the class */
  uint16_t mod; /* 0, or M: the scaled base is taken modulo M (x%2 selects a parity role) */
  int32_t k;
  int32_t mul;  /* 0 or 1: unscaled; else c (c >= 2 or c <= -1, |c| <= WF_PE_MAX_SCALE),
                   the base is multiplied by c first */
} wf_pe_term;
#define WF_PE_MAX_SCALE 65535

/* WF_CMP_IN: `a in NAME`, the value of a is a member of the class's set b.k (wf_pe_set). */
typedef enum { WF_CMP_EQ, WF_CMP_NE, WF_CMP_LT, WF_CMP_LE, WF_CMP_GT, WF_CMP_GE, WF_CMP_IN } wf_cmp;
typedef struct wf_pe_cond {
  wf_pe_term a, b;
  uint8_t cmp; /* wf_cmp */
} wf_pe_cond;

#define WF_PE_MAX_GUARD 6 /* a tree reduce's shape: two bounds, a residue interval, the line */
#define WF_PE_MAX_GUARD_TEXT "6"
typedef struct wf_pe_guard {
  int n;                             /* conditions, all must hold; 0 = always */
  wf_pe_cond c[WF_PE_MAX_GUARD];
} wf_pe_guard;

enum { WF_BMODE_IJ, WF_BMODE_I, WF_BMODE_J };

typedef struct wf_pe_arg {
  int sym;          /* d, s: symbol index */
  int32_t off;      /* d, s: constant offset in 32-bit words (f16 elements for f16 operands) */
  wf_pe_term term;  /* n: the value; c: color in term.k; m: mode in term.k; v: var in term.var;
                       t: task index in term.k; d, s: a variable offset added to off (`%p+16*j`:
                       a slot chosen by a loop variable or the PE's position), integer 0 when
                       there is none */
  wf_pe_term term2; /* d, s, n: a second variable term, its own k always 0 (`%p+16*j+-8*x`: a
                       slot moving with both the loop and the PE), integer 0 when there is none */
} wf_pe_arg;

#define WF_PE_MAX_ARGS 6
typedef struct wf_pe_instr {
  wf_peop op;
  wf_pe_guard guard;
  wf_pe_arg args[WF_PE_MAX_ARGS];
  int match;   /* LOOP: index of its ENDLOOP; ENDLOOP: index of its LOOP */
  int line;    /* line in the .wpe file (0 when built in memory) */
} wf_pe_instr;

typedef struct wf_pe_route {
  wf_pe_guard guard;
  int color;
  int pos;           /* switch position 0..WF_PE_MAX_POS-1 this rule configures */
  int rx;            /* WF_DIR_* the wavelet arrives from */
  unsigned tx;       /* bit set of WF_DIR_* it is forwarded to */
  int line;
} wf_pe_route;

/* Tasks (format 2). Code before the first `.task` line belongs to an implicit local task
 * "main" that starts active (this is all a format-1 program has). */
typedef enum { WF_TASK_LOCAL, WF_TASK_DATA, WF_TASK_CONTROL } wf_task_kind;
typedef struct wf_pe_task {
  char name[32];
  int kind;          /* wf_task_kind */
  int color;         /* DATA / CONTROL: the color whose arrivals activate it; else -1 */
  int start, end;    /* its body: code[start..end) */
  int active;        /* activated at launch */
  int blocked;       /* blocked at launch */
  int line;
} wf_pe_task;

typedef struct wf_pe_sym {
  char name[64];     /* %value, @global or $temp */
  int64_t offset;    /* bytes from the start of the PE's SRAM */
  int64_t bytes;
} wf_pe_sym;

/* A set of coordinates (`.set NAME RUN...`, format 2): for roles that follow no arithmetic
 * pattern along a line (an Auto-Gen tree's, which a dynamic program picks per line length).
 * Each distinct rule or step is then one line guarded by `[x in NAME]`: the program stays
 * bounded and the membership, data like the weights, grows with the line's length, never
 * with the number of lines (every row of a region shares it). */
#define WF_PE_MAX_SET 65536 /* members are coordinates: 0 <= v < this */
typedef struct wf_pe_set {
  char name[16];
  uint8_t *member;   /* member[v] for 0 <= v < n */
  int32_t n;         /* 1 + the largest member; 0 when empty */
} wf_pe_set;

typedef struct wf_pe_color {
  int color;
  char purpose[64];
  int ring;          /* switch positions wrap around (else they stay at the last one) */
} wf_pe_color;

typedef struct wf_pe_class {
  char name[64];
  wf_pe_sym *syms; int n_syms, cap_syms;
  wf_pe_color *colors; int n_colors, cap_colors;
  wf_pe_route *routes; int n_routes, cap_routes;
  wf_pe_instr *code; int n_code, cap_code;
  wf_pe_task *tasks; int n_tasks, cap_tasks;
  wf_pe_set *sets; int n_sets, cap_sets;
  char vars[8][16]; int n_vars; /* loop variable names */
  int format;                   /* .format version it was parsed from (writer: current) */
  int64_t mem_bytes;            /* end of the last symbol */
  int loop_depth;               /* builder: open loops */
} wf_pe_class;

wf_pe_class *wf_pe_class_new(const char *name);
void wf_pe_class_free(wf_pe_class *c);

/* ---- building (backend) ---- */
/* Appends a symbol of `bytes` (aligned to 16) after the last one; returns its index. */
int wf_pe_class_add_sym(wf_pe_class *c, const char *name, int64_t bytes);
int wf_pe_class_find_sym(const wf_pe_class *c, const char *name); /* -1 if absent */
/* Grows symbol i to at least `bytes` and lays all symbols out again, in order, 16-aligned. */
void wf_pe_class_grow_sym(wf_pe_class *c, int i, int64_t bytes);
int wf_pe_class_find_var(wf_pe_class *c, const char *name, int create);
void wf_pe_class_add_color(wf_pe_class *c, int color, const char *purpose);
void wf_pe_class_add_route(wf_pe_class *c, const wf_pe_guard *g, int color, int rx, unsigned tx);
/* Same, for switch position `pos`. */
void wf_pe_class_add_route_pos(wf_pe_class *c, const wf_pe_guard *g, int color, int pos, int rx,
                               unsigned tx);
/* A set with the members v < n where member[v] != 0, named s<index>; an equal set already
 * in the class is shared. Returns its index (the b.k of a WF_CMP_IN condition). */
int wf_pe_class_add_set(wf_pe_class *c, const uint8_t *member, int n);
int wf_pe_class_find_set(const wf_pe_class *c, const char *name); /* -1 if absent */
/* The set `name` (created when absent) gets exactly these members; returns its index. */
int wf_pe_class_set_members(wf_pe_class *c, const char *name, const uint8_t *member, int n);
/* Starts a task body at the current end of the code; returns its index (-1 when full). */
int wf_pe_class_add_task(wf_pe_class *c, const char *name, int kind, int color, int active,
                         int blocked);
int wf_pe_class_find_task(const wf_pe_class *c, const char *name); /* -1 if absent */
/* Appends an instruction; returns its index. Loops are matched when ENDLOOP is added. */
int wf_pe_class_add_instr(wf_pe_class *c, const wf_pe_instr *in);

/* Term and guard constructors. */
wf_pe_term wf_term_int(int32_t v);
wf_pe_term wf_term(wf_term_kind kind, int32_t k);
wf_pe_term wf_term_var(int var, int32_t k);
/* c * base + k for a PE parameter or loop variable t (c >= 1). */
wf_pe_term wf_term_scaled(wf_pe_term t, int c, int32_t k);
/* step * v + base for loop variable v: the constant base when v < 0 or step == 0 (a value
 * that is a term of a loop over periods inside the loop and a constant outside it). */
wf_pe_term wf_term_affine(int v, int64_t step, int64_t base);
wf_pe_guard wf_guard0(void);
/* Adds `a cmp b` to g. */
void wf_guard_add(wf_pe_guard *g, wf_pe_term a, wf_cmp cmp, wf_pe_term b);
/* Splits g into its conditions on x (with the constant ones) and those on y (with those on
 * the step parameters R and C, which are per row), so that g holds on PE (x, y) exactly when
 * gx holds on x and gy on y; nonzero (gx, gy unspecified) when a condition ties x to y (or to
 * R or C) or names a loop variable. The route-code check and the runtime's
 * route check use it to evaluate rules per column and per row instead of per PE. */
int wf_guard_split(const wf_pe_guard *g, wf_pe_guard *gx, wf_pe_guard *gy);
/* Nonzero when a condition of g names a step parameter (R or C): routes may not. */
int wf_guard_uses_step(const wf_pe_guard *g);

/* ---- text ---- */
/* Writes the class in the .wpe text form (docs/pe-programs.md). */
void wf_pe_class_write(const wf_pe_class *c, FILE *out);
/* Formats instruction i with its synopsis filled in ("P1 = ..."), for traces/disassembly. */
void wf_pe_instr_synopsis(const wf_pe_class *c, const wf_pe_instr *in, char *buf, size_t cap);
/* Parses a .wpe file; errors are reported as path:line:col and NULL returned. */
wf_pe_class *wf_pe_class_parse(const char *path);
wf_pe_class *wf_pe_class_parse_string(const char *text, const char *path_for_errors);

/* ---- evaluation ---- */
typedef struct wf_pe_env {
  int x, y, w, h;
  int32_t vars[8];
  int32_t r, c; /* WF_TERM_R, WF_TERM_C: the decode step's parameters (0 outside generation) */
  const wf_pe_set *sets; /* the class's sets, for `in` conditions (NULL: none) */
  int n_sets;
} wf_pe_env;
/* Computed in 64 bits and clamped: a program is untrusted text, and a scale times a loop
 * variable may pass INT32_MAX; the clamped value fails the bounds checks of whatever uses it
 * instead of overflowing (values in range are unchanged). */
static inline int32_t wf_term_eval(const wf_pe_term *t, const wf_pe_env *e) {
  int64_t b;
  switch (t->kind) {
    case WF_TERM_X: b = e->x; break;
    case WF_TERM_Y: b = e->y; break;
    case WF_TERM_W: b = e->w; break;
    case WF_TERM_H: b = e->h; break;
    case WF_TERM_VAR: b = e->vars[t->var]; break;
    case WF_TERM_R: b = e->r; break;
    case WF_TERM_C: b = e->c; break;
    default: return t->k;
  }
  if (t->mul > 1 || t->mul < 0) b *= t->mul;
  if (t->mod) { /* the residue in [0, mod): one division, not two */
    b %= t->mod;
    if (b < 0) b += t->mod;
  }
  b += t->k;
  return b > INT32_MAX ? INT32_MAX : b < INT32_MIN ? INT32_MIN : (int32_t)b;
}
/* 1 if condition c holds in e (inline: the simulator evaluates guards in its fetch loop). */
static inline int wf_cond_eval(const wf_pe_cond *c, const wf_pe_env *e) {
  int32_t a = wf_term_eval(&c->a, e), b = wf_term_eval(&c->b, e);
  switch (c->cmp) {
    case WF_CMP_EQ: return a == b;
    case WF_CMP_NE: return a != b;
    case WF_CMP_LT: return a < b;
    case WF_CMP_LE: return a <= b;
    case WF_CMP_GT: return a > b;
    case WF_CMP_GE: return a >= b;
    case WF_CMP_IN:
      return b >= 0 && b < e->n_sets && a >= 0 && a < e->sets[b].n && e->sets[b].member[a];
  }
  return 0;
}
int wf_guard_eval(const wf_pe_guard *g, const wf_pe_env *e);
/* The environment of PE (x, y) of a w x h region running class c (no loop variables set,
 * step parameters 0). */
static inline wf_pe_env wf_pe_env_at(const wf_pe_class *c, int x, int y, int w, int h) {
  wf_pe_env e = {x, y, w, h, {0}, 0, 0, c ? c->sets : NULL, c ? c->n_sets : 0};
  return e;
}
/* Adds `a in set` to g. */
void wf_guard_add_in(wf_pe_guard *g, wf_pe_term a, int set);
/* The value of integer operand a (n) for a PE: its term plus its second term. */
static inline int64_t wf_pe_arg_int(const wf_pe_arg *a, const wf_pe_env *e) {
  return (int64_t)wf_term_eval(&a->term, e) + wf_term_eval(&a->term2, e);
}
/* The offset of buffer operand a (d or s) for a PE: its constant plus its terms. */
static inline int64_t wf_pe_arg_off(const wf_pe_arg *a, const wf_pe_env *e) {
  return (int64_t)a->off + wf_term_eval(&a->term, e) + wf_term_eval(&a->term2, e);
}

#endif
