/* waferc — the tensor IR.
 *
 * A module holds mesh regions, global constants (weights) and functions. A function is a
 * list of ops in SSA form; values are small handles (wf_value) into the function's value
 * table, so dumps read `%12` identically on every run. All memory comes from the module's
 * arena and is freed with the module; erasing an op only unlinks it.
 *
 * Ops are defined once, in ir/ops.def (X-macro); the enum below, the printer's and
 * parser's keywords, the verifier and the interpreter all derive from it.
 *
 *   wf_module *m = wf_module_new();
 *   wf_func *f = wf_func_new(m, "main", WF_LOC_NONE);
 *   wf_type t = wf_type_make(WF_F32, 2, (int64_t[]){8, 64});
 *   wf_value x = wf_func_add_arg(f, t, "x");
 *   wf_op *op = wf_op_append(f, WF_OP_EXP, 1, &x, 1, &t, WF_LOC_NONE);
 *   wf_op_append(f, WF_OP_RETURN, 1, &op->results[0], 0, NULL, WF_LOC_NONE);
 *   wf_func_set_result_types(f, 1, &t);
 *   wf_print_module(stdout, m, NULL);
 *   wf_module_free(m);
 */
#ifndef WAFERC_IR_H
#define WAFERC_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "waferc/diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arena ------------------------------------------------------------------------- */

typedef struct wf_arena wf_arena;
wf_arena *wf_arena_new(void);
void wf_arena_free(wf_arena *a);
void wf_arena_reset(wf_arena *a); /* frees everything allocated so far, keeps one block */
void *wf_arena_alloc(wf_arena *a, size_t size);  /* zeroed, 16-byte aligned */
void *wf_arena_dup(wf_arena *a, const void *p, size_t size);
char *wf_arena_strdup(wf_arena *a, const char *s);
size_t wf_arena_bytes(const wf_arena *a); /* bytes handed out since the last reset */

/* ---- dtypes and types -------------------------------------------------------------- */

typedef enum wf_dtype { WF_F32, WF_F16, WF_BF16, WF_I32, WF_I64, WF_BOOL, WF_DTYPE_COUNT } wf_dtype;

const char *wf_dtype_name(wf_dtype t);               /* "f32" ... */
int wf_dtype_parse(const char *name, wf_dtype *out); /* 0 on success */
size_t wf_dtype_size(wf_dtype t);                    /* bytes per element; bool = 1 */
int wf_dtype_is_float(wf_dtype t);

#define WF_MAX_RANK 8

/* Mesh axes a tensor dimension can be split or replicated along. */
typedef enum wf_axis { WF_AXIS_NONE = 0, WF_AXIS_X = 1, WF_AXIS_Y = 2 } wf_axis;

/* One dimension of a layout, in WaferLLM notation: `E_x` = split along x, `L^x` = the
 * tensor is replicated along x (this dim is not split), `B` = neither. */
typedef struct wf_layout_dim {
  uint32_t label; /* interned dim label ("B", "L", "E"); 0 = none */
  uint8_t split;  /* wf_axis the dim is partitioned along */
  uint8_t repl;   /* wf_axis the tensor is replicated along (written on this dim) */
} wf_layout_dim;

/* A distribution of a tensor over a mesh region: `{B, L_y, E_x} @r0`. */
typedef struct wf_layout {
  int rank;                          /* 0 = no layout (tensor not distributed) */
  int region;                        /* index into module regions; -1 = none */
  wf_layout_dim dims[WF_MAX_RANK];
} wf_layout;

typedef struct wf_type {
  wf_dtype dtype;
  int rank;                   /* 0 = scalar */
  int64_t dims[WF_MAX_RANK];  /* static shape */
  wf_layout layout;           /* layout.rank == 0 when the value has no layout */
} wf_type;

wf_type wf_type_make(wf_dtype dt, int rank, const int64_t *dims);
int64_t wf_type_numel(const wf_type *t);
/* Whether dims (all >= 0) multiply to at most 2^40 with their zeros left out: a tensor type
 * holds at most that many elements, and one with a zero dim may not hide dims whose product
 * (a stride, an extent) overflows. Every reader of shapes from a file checks it. */
#define WF_MAX_ELEMS (INT64_C(1) << 40)
int wf_dims_fit(int rank, const int64_t *dims);
size_t wf_type_bytes(const wf_type *t);
int wf_type_equal(const wf_type *a, const wf_type *b);       /* dtype, shape and layout */
int wf_type_same_shape(const wf_type *a, const wf_type *b);  /* dtype and shape only */

/* ---- ops --------------------------------------------------------------------------- */

typedef enum wf_opcode {
#define WF_OP(id, text, nin, nout, flags, rule, attrs) WF_OP_##id,
#include "waferc/ops.def"
#undef WF_OP
  WF_OP_COUNT
} wf_opcode;

/* flags in ops.def */
enum {
  WF_OPF_ELEMENTWISE = 1 << 0, /* elementwise with numpy broadcasting */
  WF_OPF_TERMINATOR = 1 << 1,  /* ends a function body */
  WF_OPF_PURE = 1 << 2,        /* no side effects: dead results may be removed */
  WF_OPF_DIST = 1 << 3,        /* distributed op (dist.*) */
};

typedef struct wf_opinfo {
  const char *name; /* text form: "matmul", "dist.gemm" */
  int n_operands;   /* -1 = variadic */
  int n_results;    /* -1 = variadic */
  unsigned flags;
  const char *attrs; /* attribute spec, "name:kind[=default],..." (see ops.def) */
} wf_opinfo;
extern const wf_opinfo wf_opinfos[WF_OP_COUNT];
int wf_opcode_lookup(const char *name, wf_opcode *out); /* 0 on success */

/* One entry of an op's attribute spec (ops.def), parsed. */
typedef struct wf_attr_spec {
  char name[32];
  int kind;              /* wf_attr_kind, with WF_ATTR_STR/IDENT both accepted for str/ident */
  int required;          /* no default */
  char dflt[64];         /* default in text form ("" when required) */
} wf_attr_spec;
/* Number of attribute specs of `code` (<= max written to out). */
int wf_op_attr_specs(wf_opcode code, wf_attr_spec *out, int max);
/* The spec for attribute `name` of `code`, or NULL if the op has no such attribute. */
const wf_attr_spec *wf_op_attr_spec(wf_opcode code, const char *name);

typedef uint32_t wf_value;           /* index into wf_func.values; 0 is never a valid value */
#define WF_NO_VALUE ((wf_value)0)

typedef enum wf_attr_kind {
  WF_ATTR_INT,    /* 3, -1 */
  WF_ATTR_FLOAT,  /* 0.5, 1e-5 */
  WF_ATTR_BOOL,   /* true, false */
  WF_ATTR_STR,    /* "tanh" */
  WF_ATTR_IDENT,  /* tanh  (a bare word: enum-like choices such as algo = meshgemm) */
  WF_ATTR_INTS,   /* [0, 2, 1] */
  WF_ATTR_FLOATS, /* [0.5, 1.5] */
} wf_attr_kind;

typedef struct wf_attr {
  uint32_t name;     /* interned */
  wf_attr_kind kind;
  union {
    int64_t i;       /* INT, BOOL */
    double f;        /* FLOAT */
    uint32_t s;      /* STR, IDENT: interned */
    struct { int n; int64_t *v; } ints;
    struct { int n; double *v; } floats;
  } u;
} wf_attr;

typedef struct wf_op {
  wf_opcode code;
  struct wf_op *prev, *next; /* in the function body */
  int n_operands;
  wf_value *operands;
  int n_results;
  wf_value *results;
  int n_attrs;
  wf_attr *attrs;            /* in insertion order; printed in that order */
  wf_loc loc;                /* kept through every pass; new ops inherit the loc they replace */
} wf_op;

/* ---- values, functions, module ----------------------------------------------------- */

typedef enum wf_value_kind { WF_VAL_ARG, WF_VAL_RESULT, WF_VAL_GLOBAL } wf_value_kind;

typedef struct wf_value_info {
  wf_value_kind kind;
  wf_type type;
  uint32_t name;   /* interned; 0 = anonymous (printed as a number) */
  wf_op *def;      /* RESULT: defining op */
  int index;       /* ARG: argument number; RESULT: result number; GLOBAL: global index */
} wf_value_info;

typedef struct wf_func {
  struct wf_module *module;
  uint32_t name;             /* interned, without '@' */
  int n_args;
  wf_value *args;
  int n_results;
  wf_type *result_types;
  wf_op *first, *last;       /* body; the last op is a return */
  wf_value_info *values;     /* values[0] unused */
  uint32_t n_values, cap_values;
  wf_value *global_values;   /* wf_func_global_value's index: global g's value, or 0 */
  int cap_global_values;
  wf_loc loc;
} wf_func;

typedef struct wf_region {
  uint32_t name; /* interned, without '@' */
  int x, y;      /* origin on the mesh (PE coordinates) */
  int w, h;      /* width (x extent) and height (y extent) in PEs */
  wf_loc loc;
} wf_region;

typedef enum wf_data_kind {
  WF_DATA_INLINE, /* dense<[1.0, 2.0, ...]>: data holds numel elements */
  WF_DATA_SPLAT,  /* dense<0.5>: data holds one element */
  WF_DATA_FILE,   /* file<"w.npy"> or file<"w.bin", offset = 64>: loaded on demand */
  WF_DATA_ELIDED, /* dense<elided>: printed from a dump that elided it; no data */
} wf_data_kind;

typedef struct wf_global {
  uint32_t name;       /* interned, without '@' */
  wf_type type;
  wf_data_kind kind;
  void *data;          /* host-order elements of type.dtype (f16/bf16 as raw uint16); NULL until loaded */
  uint32_t path;       /* FILE: interned path as written (relative to the module's base dir) */
  int64_t offset;      /* FILE: byte offset for raw files; -1 = .npy file */
  wf_loc loc;
} wf_global;

typedef struct wf_attr_list { int n; wf_attr *v; } wf_attr_list;

typedef struct wf_module {
  wf_arena *arena;
  uint32_t name;          /* interned; 0 = unnamed */
  wf_attr_list attrs;     /* module attributes: target = "wse2", ... */
  wf_region *regions; int n_regions, cap_regions;
  wf_global *globals; int n_globals, cap_globals;
  wf_func **funcs; int n_funcs, cap_funcs;
  const char *base_dir;   /* directory file references are relative to ("." by default) */
  struct wf_strtab *strtab;
} wf_module;

wf_module *wf_module_new(void);
void wf_module_free(wf_module *m);
void wf_module_set_base_dir(wf_module *m, const char *dir);

/* Interned strings: 0 is the empty/absent string. */
uint32_t wf_intern(wf_module *m, const char *s);
uint32_t wf_intern_n(wf_module *m, const char *s, size_t n);
const char *wf_str(const wf_module *m, uint32_t id); /* "" for 0 */

int wf_module_add_region(wf_module *m, const char *name, int x, int y, int w, int h, wf_loc loc);
int wf_module_find_region(const wf_module *m, const char *name); /* -1 if absent */
int wf_module_add_global(wf_module *m, const char *name, wf_type type, wf_loc loc);
int wf_module_find_global(const wf_module *m, const char *name);
/* A new global holding a copy of data (numel of type's elements) inline, named `base`, or
 * base.1, base.2, ... when that name is taken; returns its index. For the constants passes
 * build at compile time. */
int wf_module_add_data_global(wf_module *m, const char *base, wf_type type, const void *data);
wf_func *wf_module_find_func(const wf_module *m, const char *name);
/* Drops every function but f (a plan is compiled from one function; the passes that lay out
 * or lower a function take the module's only one). */
void wf_module_keep_func(wf_module *m, wf_func *f);
/* Loads a FILE global's data (relative to base_dir); 0 on success, else reports an error and
 * returns WF_EXIT_IO when the file cannot be opened, nonzero otherwise. */
int wf_global_load(wf_module *m, int global);
void wf_module_set_attr(wf_module *m, wf_attr attr); /* replaces one of the same name */

/* ---- functions and values ---------------------------------------------------------- */

wf_func *wf_func_new(wf_module *m, const char *name, wf_loc loc);
wf_value wf_func_add_arg(wf_func *f, wf_type t, const char *name /* may be NULL */);
void wf_func_set_result_types(wf_func *f, int n, const wf_type *types);
/* The value standing for global `global` inside f (created on first use). */
wf_value wf_func_global_value(wf_func *f, int global);
wf_value_info *wf_value_get(const wf_func *f, wf_value v);
/* The op of `code` that defines v, or NULL (v an argument, a constant, or another op's). */
wf_op *wf_def_of(const wf_func *f, wf_value v, wf_opcode code);
static inline wf_type *wf_value_type(const wf_func *f, wf_value v) { return &f->values[v].type; }
void wf_value_set_name(wf_func *f, wf_value v, const char *name);
/* The return op, or NULL if the body does not end in one. */
wf_op *wf_func_return(const wf_func *f);

/* ---- creating and editing ops ------------------------------------------------------ */

/* Creates an op whose results are fresh anonymous values of the given types; not linked. */
wf_op *wf_op_new(wf_func *f, wf_opcode code, int n_operands, const wf_value *operands,
                 int n_results, const wf_type *result_types, wf_loc loc);
wf_op *wf_op_append(wf_func *f, wf_opcode code, int n_operands, const wf_value *operands,
                    int n_results, const wf_type *result_types, wf_loc loc);
void wf_op_insert_before(wf_func *f, wf_op *pos, wf_op *op); /* pos NULL = append */
/* A new op of one result inserted before pos (wf_op_new, wf_op_insert_before): its result. */
wf_value wf_op_insert_new(wf_func *f, wf_op *pos, wf_opcode code, int n_operands, const wf_value *operands,
                          wf_type result, wf_loc loc);
/* `slice(v) {starts = [start], ends = [end], axes = [axis], steps = [step]}` of type result,
 * inserted before pos: its result. */
wf_value wf_op_insert_slice(wf_func *f, wf_op *pos, wf_value v, wf_type result, int64_t start, int64_t end,
                            int64_t axis, int64_t step, wf_loc loc);
void wf_op_insert_after(wf_func *f, wf_op *pos, wf_op *op);  /* pos NULL = prepend */
void wf_op_unlink(wf_func *f, wf_op *op);                    /* memory stays in the arena */
void wf_op_set_operand(wf_func *f, wf_op *op, int i, wf_value v);
/* Replaces every use of `from` (in ops after nothing in particular: all ops) with `to`. */
void wf_value_replace_uses(wf_func *f, wf_value from, wf_value to);
/* wf_value_replace_uses, and `to` takes from's name when from has one (a rewrite's result
 * keeps the name of the value it replaces). */
void wf_value_replace_named(wf_func *f, wf_value from, wf_value to);
int wf_value_use_count(const wf_func *f, wf_value v);
/* Unlinks every pure op none of whose results is used (the `dce` pass, also used by importers).
 * Returns the number of ops removed. */
int64_t wf_func_remove_dead_ops(wf_func *f);
/* Removes the global constants no op of any function uses (the `symbol-dce` pass, also used
 * by the ONNX importer). The survivors keep their order; a value standing for a removed one
 * is detached (index -1), so it can neither be read nor be mistaken for another constant.
 * Returns the number of globals removed. */
int64_t wf_module_remove_unused_globals(wf_module *m);

#define wf_func_foreach_op(f, op) for (wf_op *op = (f)->first; op; op = op->next)

/* Attributes (names are interned in the op's module). Setting replaces an existing one. */
void wf_op_set_attr(wf_func *f, wf_op *op, wf_attr a);
void wf_op_set_int(wf_func *f, wf_op *op, const char *name, int64_t v);
void wf_op_set_float(wf_func *f, wf_op *op, const char *name, double v);
void wf_op_set_str(wf_func *f, wf_op *op, const char *name, const char *v);
void wf_op_set_ident(wf_func *f, wf_op *op, const char *name, const char *v);
void wf_op_set_ints(wf_func *f, wf_op *op, const char *name, int n, const int64_t *v);
const wf_attr *wf_op_attr(const wf_func *f, const wf_op *op, const char *name); /* NULL if absent */
int64_t wf_op_int(const wf_func *f, const wf_op *op, const char *name, int64_t dflt);
double wf_op_float(const wf_func *f, const wf_op *op, const char *name, double dflt);
/* STR or IDENT value, or dflt. */
const char *wf_op_str(const wf_func *f, const wf_op *op, const char *name, const char *dflt);

/* ---- text form (the DSL) ----------------------------------------------------------- */

typedef struct wf_print_opts {
  int64_t elide_elements_above; /* inline constants with more elements print as dense<elided>; <0 = never */
  int print_locations;          /* append loc("file":line:col) to ops */
  /* Where elided constants go instead of dense<elided> (the pass manager's --dump-dir): when
   * set, the printer hands each one's bytes to `store`, which returns their byte offset in
   * the raw file `store_file` (or -1 on failure), and prints file<"store_file", offset = N>. */
  int64_t (*store)(void *user, const void *data, size_t bytes);
  void *store_user;
  const char *store_file;
} wf_print_opts;
#define WF_PRINT_OPTS_DEFAULT ((wf_print_opts){-1, 0, NULL, NULL, NULL})

void wf_print_module(FILE *out, const wf_module *m, const wf_print_opts *opts);
char *wf_print_module_str(const wf_module *m, const wf_print_opts *opts); /* malloc'd */
void wf_print_type(FILE *out, const wf_module *m, const wf_type *t);
void wf_print_op(FILE *out, const wf_func *f, const wf_op *op);

/* The names a dump gives f's values ("%x", "%3", "@w": sanitized, made unique, anonymous
 * ones numbered), for other outputs that name values (a plan's manifest, and through it the
 * simulator's summary and trace) to say exactly what the IR says. Computed once; valid while
 * f's body and the module's constants are unchanged. */
typedef struct wf_value_names wf_value_names;
wf_value_names *wf_value_names_new(const wf_func *f);
/* v's name with its sigil, or NULL if v is neither an argument, a result of an op in the body,
 * nor a constant (a value created after the names were computed). */
const char *wf_value_names_get(const wf_value_names *n, wf_value v);
void wf_value_names_free(wf_value_names *n);

/* Parses the text form; errors are reported as path:line:col: error: ... and NULL returned.
 * File references in the text are resolved relative to the file's directory. */
wf_module *wf_parse_file(const char *path);
wf_module *wf_parse_string(const char *text, const char *name_for_errors);

/* ---- verifier ---------------------------------------------------------------------- */

/* Checks structure, SSA dominance, types, shapes and layouts; reports located errors.
 * Returns the number of errors found (0 = valid). */
int wf_verify_module(wf_module *m);
int wf_verify_func(wf_func *f);

/* Infers result types of an op from its operands and attributes (the op table's shape rule).
 * Returns 0 and fills out[0..n_results) on success; reports an error at op->loc otherwise. */
int wf_infer_result_types(wf_func *f, const wf_op *op, wf_type *out);

#ifdef __cplusplus
}
#endif
#endif
