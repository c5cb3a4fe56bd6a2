/* waferc — the DSL front end's private state and the IR-building actions (build.c), shared
 * by the Flex lexer (lexer.l), the Bison parser (parser.y) and build.c. Not installed. */
#ifndef WAFERC_DSL_BUILD_H
#define WAFERC_DSL_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "waferc/ir.h"

/* One element written in dense<...> or in an attribute list, before the dtype decides how it
 * is stored. Integers keep all 64 bits (a double would round i64 values). */
typedef struct wf_dsl_num {
  int is_float;
  int64_t i;
  double f;
  wf_loc loc;
} wf_dsl_num;

/* The data of a const: dense<...> (elements in wf_dsl_state.nums) or file<...>. */
typedef struct wf_dsl_data {
  int kind;          /* wf_data_kind */
  const char *path;  /* FILE */
  int64_t offset;    /* FILE: -1 = .npy */
} wf_dsl_data;

/* A result name written before '=' in an op. */
typedef struct wf_dsl_name {
  const char *text;
  wf_loc loc;
} wf_dsl_name;

/* What a value name (without '%') refers to inside the function being parsed. `value` is
 * WF_NO_VALUE for a poisoned name: defined by an op that had an error, so later uses stay
 * quiet instead of cascading "undefined value" errors. */
typedef struct wf_dsl_binding {
  const char *name;
  wf_value value;
  wf_loc loc;
} wf_dsl_binding;

/* Marks an operand whose name was undefined (already reported). */
#define WF_DSL_POISON ((wf_value)UINT32_MAX)

#define WF_DSL_VEC(T) struct { T *v; int n, cap; }

typedef struct wf_dsl_state {
  wf_module *m;
  const char *file;    /* interned with wf_loc_file: locations point at it */
  wf_arena *scratch;   /* token text and per-parse temporaries */
  int errors;          /* errors this parse reported */
  void *scanner;       /* yyscan_t */

  /* Lexer position (1-based) of the next character. */
  uint32_t line, col;
  /* Text of the most recent token, for "got ..." in syntax errors. */
  const char *tok_text;
  size_t tok_len;

  /* Function under construction and its value names. */
  wf_func *func;
  wf_dsl_binding *bind; /* open-addressing table, cap_bind a power of two */
  uint32_t n_bind, cap_bind;

  /* Lists under construction; one per kind, since no kind nests inside itself. */
  WF_DSL_VEC(int64_t) dims;
  WF_DSL_VEC(wf_layout_dim) ldims;
  WF_DSL_VEC(wf_type) types;
  WF_DSL_VEC(wf_value) operands;
  WF_DSL_VEC(wf_dsl_name) names;
  WF_DSL_VEC(wf_attr) attrs;
  WF_DSL_VEC(wf_dsl_num) nums;
  wf_loc written_loc; /* the last loc(...) read, for the op it ends */
} wf_dsl_state;

/* Reports an error at loc and counts it against this parse. */
void wf_dsl_report(wf_dsl_state *s, wf_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs the lexer and parser over text[0..len) (NUL bytes allowed); returns 0 on success. */
int wf_dsl_run(wf_dsl_state *s, const char *text, size_t len);

/* Builders called from the grammar's actions (build.c). */
void wf_dsl_vec_reserve(void **v, int *cap, int need, size_t elem);
#define WF_DSL_PUSH(vec, x)                                                                  \
  do {                                                                                       \
    wf_dsl_vec_reserve((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof *(vec).v);          \
    (vec).v[(vec).n++] = (x);                                                                \
  } while (0)

wf_loc wf_dsl_loc(wf_dsl_state *s, uint32_t line, uint32_t col);
int wf_dsl_int_from(wf_dsl_state *s, const char *text, wf_loc loc, int64_t *out);
/* The bytes between a string's quotes with escapes resolved (scratch arena); NULL after
 * reporting a bad escape. */
char *wf_dsl_unescape(wf_dsl_state *s, const char *text, size_t len, wf_loc at);

/* The type dtype[s->dims] with `layout`. */
void wf_dsl_type(wf_dsl_state *s, const char *dtype, wf_loc dtype_loc, const wf_layout *layout,
                 wf_loc layout_loc, wf_type *out);
/* The layout in s->ldims, on region `region` (NULL = none). */
void wf_dsl_layout(wf_dsl_state *s, const char *region, wf_loc loc, wf_layout *out);
/* `label` or `label^repl`; the split axis comes from a `_x` / `_y` suffix of label. */
void wf_dsl_layout_dim(wf_dsl_state *s, const char *label, wf_loc loc, const char *repl,
                       wf_loc repl_loc, wf_layout_dim *out);

void wf_dsl_region(wf_dsl_state *s, const char *name, wf_loc loc, int64_t x, int64_t y,
                   int64_t w, int64_t h, wf_loc nums_loc);
/* kind: WF_DATA_*; for FILE, path/offset; for INLINE/SPLAT the elements are s->nums. */
void wf_dsl_const(wf_dsl_state *s, const char *name, wf_loc loc, const wf_type *t,
                  wf_data_kind kind, const char *path, int64_t offset, wf_loc data_loc);

void wf_dsl_func_begin(wf_dsl_state *s, const char *name, wf_loc loc);
void wf_dsl_func_arg(wf_dsl_state *s, const char *name, wf_loc loc, const wf_type *t);
void wf_dsl_func_end(wf_dsl_state *s);

/* Resolve an operand; WF_DSL_POISON when it cannot be (error already reported). */
wf_value wf_dsl_operand_value(wf_dsl_state *s, const char *name, wf_loc loc);
wf_value wf_dsl_operand_global(wf_dsl_state *s, const char *name, wf_loc loc);
/* An op: result names in s->names (n_names of them; 0 when none written), operands in
 * s->operands, attributes in s->attrs, result types in s->types (n_types), and
 * s->written_loc when has_loc. */
void wf_dsl_op(wf_dsl_state *s, int n_names, const char *opname, wf_loc opname_loc, int n_types,
               int has_loc, wf_loc first_loc);
void wf_dsl_return(wf_dsl_state *s, int has_loc, wf_loc loc);

/* Appends an attribute to s->attrs (duplicates are errors). */
void wf_dsl_attr(wf_dsl_state *s, const char *name, wf_loc loc, wf_attr value);
/* An INTS or FLOATS attribute from s->nums (FLOATS if any element is a float). */
wf_attr wf_dsl_attr_list(wf_dsl_state *s);
void wf_dsl_module_attrs(wf_dsl_state *s);

#endif
