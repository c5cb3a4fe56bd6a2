/* Internal: the ONNX importer's shared state and helpers (frontend/onnx/).
 *
 * Flow (import.c): load.c reads and unpacks the ModelProto; function.c flattens the graph
 * (model-local FunctionProtos inlined) into ox_node records; the unsupported-op scan lists
 * every op the table (optable.c, onnx_ops.def) lacks; then each node's importer
 * (ops_*.c) turns it into IR ops through ox_emit (emit.c), which folds any op whose operands
 * are all host constants by running the reference interpreter on a one-op function.
 *
 * Every ONNX tensor name maps to an ox_val: a runtime IR value, a host constant, or both (a
 * constant used by a runtime op is materialized as a module global). */
#ifndef WAFERC_FRONTEND_ONNX_INTERNAL_H
#define WAFERC_FRONTEND_ONNX_INTERNAL_H

#include <stdint.h>

#include "onnx/onnx.pb-c.h"
#include "waferc/onnx.h"
#include "waferc/tensor.h"

/* ONNX TensorProto.DataType values (onnx.proto). */
enum {
  OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4, OX_INT16 = 5, OX_INT32 = 6,
  OX_INT64 = 7, OX_STRING = 8, OX_BOOL = 9, OX_FLOAT16 = 10, OX_DOUBLE = 11, OX_UINT32 = 12,
  OX_UINT64 = 13, OX_BFLOAT16 = 16,
};

typedef struct ox_list ox_list; /* nonzero_list.c */

typedef struct ox_val {
  const char *name;  /* ONNX tensor name; NULL for values the importer makes up */
  wf_type type;      /* a sequence: its element dtype, rank 0 */
  wf_value v;        /* IR value (result, argument or global); 0 = not in the IR yet */
  wf_tensor *k;      /* host data when the value is a constant (owned by the context) */
  int global;        /* module global holding k, or -1 */
  /* An ONNX sequence exists only during the import, as the list of its tensors: the
   * sequence ops and Loop (unrolled) move tensors in and out of it; no IR value has it. */
  int is_seq;
  int n_items;
  struct ox_val **items;
  /* NonZero's bounded list (nonzero_list.c): the value's dim `list_axis` runs over the list's
   * entries, valid or not; `list_shape`: a constant computed from such a value's Shape. */
  const ox_list *list;
  int list_axis;
  int list_shape;
} ox_val;

/* One node after function inlining. */
typedef struct ox_node {
  const char *op_type, *domain, *name;
  int n_in, n_out, n_attr;
  const char **in, **out;                 /* "" = an omitted optional input/output */
  const Onnx__AttributeProto **attr;
  int opset;                              /* version of the node's domain */
  int index;                              /* top-level node it came from (0-based) */
  const char *via;                        /* name of the function it was inlined from, or NULL */
  const struct ox_scope *scope;           /* naming scope (function call, subgraph), or NULL */
  int scan_only;                          /* a subgraph node seen by the op scan, not imported */
} ox_node;

typedef struct ox_ctx ox_ctx;

/* What an op importer sees of its node. */
typedef struct ox_nctx {
  ox_ctx *cx;
  const ox_node *node;
  int opset;
  wf_loc eloc;        /* "model.onnx: node 'n' (Op, opset N)": errors while importing */
  wf_loc oploc;       /* model file, line = node index + 1: the IR ops' location */
  int n_in;
  ox_val **in;        /* NULL entries for omitted optional inputs */
  int failed;         /* an accessor reported an error (a wrong attribute type) */
} ox_nctx;

typedef int (*ox_import_fn)(ox_nctx *n);

typedef struct ox_opdef {
  const char *op_type;
  int min_opset, max_opset;
  ox_import_fn fn;
  const char *note;   /* what is (not) supported, for --list-onnx-ops and CONFORMANCE.md */
  int takes_seq;      /* inputs may be sequences (OX_OP_SEQ); other ops get tensors only */
  const char *ir_ops; /* the graph ops it becomes, "a,b"; "" = folded at import, "*" = its subgraph's */
} ox_opdef;

/* optable.c */
const ox_opdef *ox_op_lookup(const char *op_type);
int ox_op_count(void);
const ox_opdef *ox_op_at(int i);

/* tensor.c: dtype mapping and TensorProto decoding. `where` prefixes errors. */
int ox_dtype_from_onnx(int32_t onnx_type, wf_dtype *out, int *narrowed);
const char *ox_onnx_type_name(int32_t onnx_type);
/* Decodes a TensorProto; external data is read relative to base_dir (NULL = no external
 * data allowed). NULL + error on failure. */
wf_tensor *ox_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, wf_loc where);
/* Element i of k as an integer: exact for integer tensors (through a double, 2^63 - 1 would
 * round past int64), others rounded toward zero and clamped to int64 (NaN: 0). */
int64_t ox_int_at(const wf_tensor *k, int64_t i);

/* load.c: reads and unpacks a protobuf message of `desc`. */
void *ox_unpack_file(const char *path, const ProtobufCMessageDescriptor *desc, int *rc);
/* The same for size bytes at data; path names them in messages. */
void *ox_unpack_buffer(const char *path, const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc,
                       int *rc);

/* ---- context (import.c) --------------------------------------------------------------- */

ox_val *ox_val_new(ox_ctx *cx, const wf_type *t);
ox_val *ox_const_new(ox_ctx *cx, wf_tensor *k);           /* takes ownership of k */
/* A sequence of n tensors of dtype dt (items copied; n may be 0). */
ox_val *ox_seq_new(ox_ctx *cx, wf_dtype dt, int n, ox_val *const *items);
/* Binds output i of the node to v (an alias when v already has a name). */
int ox_set_out(ox_nctx *n, int i, ox_val *v);
int ox_n_out(const ox_nctx *n);                           /* declared outputs, "" included */
int ox_out_used(const ox_nctx *n, int i);                 /* output i is named */
wf_module *ox_module(ox_ctx *cx);
const char *ox_model_dir(ox_ctx *cx);                    /* external data resolve against it */
wf_func *ox_func(ox_ctx *cx);
/* The IR value of v, materializing a constant as a global. */
wf_value ox_ir_value(ox_nctx *n, ox_val *v);

/* ---- attributes (attrs.c) ------------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(const ox_nctx *n, const char *name);
int64_t ox_attr_int(const ox_nctx *n, const char *name, int64_t dflt);
double ox_attr_float(const ox_nctx *n, const char *name, double dflt);
const char *ox_attr_str(const ox_nctx *n, const char *name, const char *dflt); /* static copy */
/* INTS attribute: *cnt = -1 when absent. The array lives as long as the model. */
const int64_t *ox_attr_ints(const ox_nctx *n, const char *name, int *cnt);
/* Checks that every attribute has the expected type; reports and returns nonzero. */
int ox_attr_check_types(const ox_nctx *n);

/* ---- inputs --------------------------------------------------------------------------- */

/* Input i, required: reports "missing input" when omitted. */
ox_val *ox_in(ox_nctx *n, int i);
/* Input i as a constant integer list (rank <= 1). Reports and returns nonzero unless it is a
 * constant; *out is malloc'd (free it). */
int ox_in_ints(ox_nctx *n, int i, const char *what, int64_t **out, int *cnt);
int ox_in_float(ox_nctx *n, int i, const char *what, double *out);
/* Axes from an INTS attribute (before opset `since`) or a constant input 1 (ops_shape.c);
 * *na = -1 when none are given. *axes is malloc'd (free it). */
int ox_axes(ox_nctx *n, int since, int64_t **axes, int *na);

/* ---- NonZero's bounded list (nonzero_list.c) ------------------------------------------ */

/* After a node's importer ran: carries the list's tags from its inputs to its outputs, or
 * refuses (exit 3) an op that could see which entries are valid. */
int ox_list_after(ox_nctx *n);
/* ScatterElements along `axis` whose indices run over a list: masks the updates (ins[2]
 * replaced), and for reduction none clears the places valid entries write (ins[0] replaced)
 * and makes it add (red rewritten); 0 when untouched or done, else an exit code. */
int ox_list_scatter(ox_nctx *n, ox_val **ins, int64_t axis, char *red, size_t red_cap);
/* v, made from `from` by a reshape or an expand inside one node's import, tagged as from's
 * list moves (v itself when from holds no list; NULL after reporting when the entries move). */
ox_val *ox_list_retag(ox_nctx *n, ox_val *v, const ox_val *from);
/* A graph output that holds a list entry by entry: refused (exit 3). */
int ox_list_output(ox_ctx *cx, const char *name, wf_loc loc);

/* ---- emitting IR (emit.c) ------------------------------------------------------------- */

/* The most bytes of constants the importer makes on the host, over one import, beyond those
 * the file holds: ConstantOfShape and Range (ops_const.c) and folded results larger than their
 * operands (emit.c), each made once (host_memo.c). 320 MiB: the largest causal mask
 * raise-attention reads (8192^2 f32, 256 MiB) and 64 MiB beside it, so that a file of a
 * kilobyte cannot make the importer allocate and fill gigabytes. ox_host_budget takes `bytes`
 * from what is left: 0, or -1 (nothing taken) when it would pass the limit. */
#define OX_HOST_BYTES_MAX (INT64_C(5) << 26)
#define OX_HOST_BUDGET_TEXT "320 MiB"
int ox_host_budget(ox_ctx *cx, int64_t bytes);


typedef struct ox_attrv {
  const char *name;
  wf_attr_kind kind;
  int64_t i;
  double f;
  const char *s;
  int n;
  const int64_t *ints;
} ox_attrv;
#define OX_A_INT(nm, v) ((ox_attrv){(nm), WF_ATTR_INT, (v), 0, NULL, 0, NULL})
#define OX_A_BOOL(nm, v) ((ox_attrv){(nm), WF_ATTR_BOOL, (v) ? 1 : 0, 0, NULL, 0, NULL})
#define OX_A_FLOAT(nm, v) ((ox_attrv){(nm), WF_ATTR_FLOAT, 0, (v), NULL, 0, NULL})
#define OX_A_IDENT(nm, v) ((ox_attrv){(nm), WF_ATTR_IDENT, 0, 0, (v), 0, NULL})
#define OX_A_INTS(nm, cnt, v) ((ox_attrv){(nm), WF_ATTR_INTS, 0, 0, NULL, (cnt), (v)})

/* Large host constants made once (host_memo.c): ox_memo_find fills out[0..n_res) with the
 * values an earlier call with the same op `code` (a wf_opcode, or OX_MEMO_*),
 * constant operands, attributes and declared types made, and returns 1; else 0. ox_memo_add
 * remembers them when they are large (host_memo.c: 16 KiB or more). */
#define OX_MEMO_CONSTANT_OF_SHAPE (-1)
#define OX_MEMO_RANGE (-2)
int ox_memo_find(ox_ctx *cx, int code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                 const wf_type *decl, int n_res, ox_val **out);
void ox_memo_add(ox_ctx *cx, int code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                 const wf_type *decl, int n_res, ox_val *const *out);

/* Emits op `code` on `in` with attributes; result types are inferred by the op's shape rule
 * (decl, when not NULL, gives the declared result types: reshape, expand). When every
 * operand is a constant the op is evaluated on the host instead and the results are
 * constants. Fills out[0..n_res). Returns 0, or a WF_EXIT_* code after reporting. */
int ox_emit(ox_nctx *n, wf_opcode code, int n_in, ox_val *const *in, int n_attr,
            const ox_attrv *attrs, int n_res, const wf_type *decl, ox_val **out);
/* One-result shorthand: NULL on error. */
ox_val *ox_emit1(ox_nctx *n, wf_opcode code, int n_in, ox_val *const *in, int n_attr,
                 const ox_attrv *attrs, const wf_type *decl);
ox_val *ox_reshape(ox_nctx *n, ox_val *x, int rank, const int64_t *dims);
ox_val *ox_cast(ox_nctx *n, ox_val *x, wf_dtype to);
ox_val *ox_transpose(ox_nctx *n, ox_val *x, int rank, const int64_t *perm);
/* A scalar constant (rank 0) of dtype dt. */
ox_val *ox_scalar(ox_nctx *n, wf_dtype dt, double v);

/* Errors at the node: "model.onnx: node 'x' (Op, opset N): error: ...". */
void ox_err(const ox_nctx *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, for a feature of a supported op that waferc lacks; returns WF_EXIT_UNSUPPORTED. */
int ox_unsupported(const ox_nctx *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ox_shape_str(const wf_type *t); /* rotating static buffer */

/* torch_quirks.c: Reshape's target `shape` (ns entries, for input x) rewritten in place when it
 * is torch 1.13's misaligned repeat_interleave reshape; returns 1 when it was. */
int ox_torch_repeat_reshape(ox_nctx *n, const ox_val *x, int64_t *shape, int ns);

#endif
