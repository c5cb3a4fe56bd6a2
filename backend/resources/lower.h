/* waferc backend — lowering a partitioned function to SPMD program classes. Internal to the
 * backend: emit.c drives it, lower_*.c lower one op family each, cost.c predicts cycles. */
#ifndef WAFERC_BACKEND_LOWER_H
#define WAFERC_BACKEND_LOWER_H

#include "backend/resources/row_skew.h"
#include "ir/pe/pe_program.h"
#include "waferc/ir.h"
#include "waferc/target.h"

/* Colors by purpose; allocated on first use from the target's usable colors. */
enum { WF_COLOR_ROW_BCAST, WF_COLOR_COL_BCAST,
       /* dist.gemm rings, x then y (routes by lower_gemm_meshgemm.c / lower_gemm_cannon.c) */
       WF_COLOR_MESH_RING_X, WF_COLOR_MESH_RING_Y, WF_COLOR_CANNON_RING_X, WF_COLOR_CANNON_RING_Y,
       /* W x H meshgemm (lower_gemm_rect.c): the lower-bound one-hop links of the virtual
        * INTERLEAVE ring on an axis holding several virtual positions per PE; the rings'
        * colors above then carry the higher-bound ones */
       WF_COLOR_MESH_HOP_X_LO, WF_COLOR_MESH_HOP_Y_LO,
       /* the rings' further colors (backend/collectives/ring_links.c): a WSE router holds one rx set ->
        * one tx set per color, so the links of one ring line that meet at a PE take
        * different colors, up to three per line (x then y, as above) */
       WF_COLOR_MESH_RING_X2, WF_COLOR_MESH_RING_Y2, WF_COLOR_MESH_RING_X3, WF_COLOR_MESH_RING_Y3,
       WF_COLOR_CANNON_RING_X2, WF_COLOR_CANNON_RING_Y2, WF_COLOR_CANNON_RING_X3, WF_COLOR_CANNON_RING_Y3,
       WF_COLOR_MESH_HOP_X_LO2, WF_COLOR_MESH_HOP_Y_LO2,
       /* attention's INTERLEAVE ring of K/V blocks along y (lower_attention.c) where MeshGEMM's
        * y ring is not one (H not a multiple of W); x is unused, kept for the pairing */
       WF_COLOR_ATTN_RING_X, WF_COLOR_ATTN_RING_Y, WF_COLOR_ATTN_RING_X2, WF_COLOR_ATTN_RING_Y2,
       WF_COLOR_ATTN_RING_X3, WF_COLOR_ATTN_RING_Y3,
       WF_COLOR_ROLES };

/* One ring line's links on up to three colors (backend/collectives/ring_links.c). A lowering emits its
 * async streams on `col[0]`; wf_emit splits each into one stream per color, guarded by the
 * set of PEs that send (receive) on that color. */
#define WF_RING_MAX_COLORS 3
typedef struct wf_ring_ch {
  wf_pe_term coord;                    /* x or y */
  int n;                               /* colors used */
  int col[WF_RING_MAX_COLORS];
  int send_set[WF_RING_MAX_COLORS];    /* class set of the PEs sending on col[k]; -1 none, -2 all */
  int recv_set[WF_RING_MAX_COLORS];
} wf_ring_ch;
#define WF_MAX_RING_CH 8

/* A collective inside an op (the allreduces of a softmax, a norm, a reduction, dist.gemm_t):
 * its program is bracketed by `coll index` ... `coll -1`, and the report gives its
 * simulated cycles beside these (manifest ops[i].collectives). */
#define WF_LOWER_MAX_COLLS 8
typedef struct wf_lowered_coll {
  int index;             /* its number in the plan, as the `coll` markers give it */
  int axis;              /* WF_AXIS_X / WF_AXIS_Y */
  int algo;              /* wf_coll_algo */
  int pes;               /* along the line */
  int64_t words;         /* per PE */
  double predicted;      /* the model's equation, which chose it */
  double lowered;        /* as lowered (tree schedule and broadcast), or 0 when not known */
} wf_lowered_coll;

/* How an op moves data between PEs, besides collectives (the manifest's `fabric_move` and its
 * counts `fabric_transposes` and `relayouts`): a transpose over the fabric (the mirror, the
 * W x H two-phase relayout, a vector re-split), a block relayout (lower_relayout.c's re-cuts
 * and gathers: a GEMM's K, a slice, concat or split that is not local). */
enum { WF_MOVE_TRANSPOSE = 1, WF_MOVE_RELAYOUT = 2 };

typedef struct wf_lowered_op {
  const wf_op *op;
  char result[64];       /* symbol of its (first) result */
  const char *lowering;  /* "summa-broadcast", "local", ... */
  int64_t predicted;     /* cycles, cost model */
  char text[48];         /* storage a lowering may point `lowering` at */
  char explain[256];     /* collectives: the model's choice and why (manifest "explain") */
  wf_lowered_coll colls[WF_LOWER_MAX_COLLS]; /* its inner collectives, in program order */
  int n_colls;
  unsigned fabric_move;  /* WF_MOVE_* bits */
  int has_phases;        /* a rank-2 dist.gemm: `phase` markers split its program (manifest "phases") */
  int64_t phase_predicted[3]; /* alignment and drain (the loop is the rest of `predicted`) */
  int band;              /* the band of the rows it runs on (lower_band.c), else -1 */
} wf_lowered_op;

typedef struct wf_lower {
  wf_module *m;
  wf_func *f;
  const wf_target *t;
  int region;            /* index of the region every value lives on */
  int w, h;              /* its size in PEs */
  wf_pe_class *cls;      /* phase 1: one class covers the whole region */
  int *sym_of;           /* value -> symbol index, -1 = none yet */
  int color[WF_COLOR_ROLES]; /* -1 = not allocated */
  wf_lowered_op *ops; int n_ops;
  int n_sym_of;          /* entries of sym_of (values created while lowering grow it) */
  wf_value *consts; int n_consts; /* constants the lowering created (scalars), for weights.bin */
  /* The user's collective choices (wf_plan_opts): reduce_algo -2 = each op's own (the dist
   * ops' algo attribute; the model's choice for the allreduces inside other ops), -1 = auto,
   * else a wf_coll_algo; gemv_how NULL = the op's own; gemv_k, gemv_groups -1 = the op's. */
  int reduce_algo;
  const char *gemv_how;
  int gemv_k, gemv_groups;
  struct wf_coll_cache *coll_cache; /* lower_collective.c: colors reused across phases */
  int n_colls;           /* inner collectives numbered so far (wf_lowered_coll.index) */
  wf_ring_ch ring_ch[WF_MAX_RING_CH]; /* ring lines whose streams wf_emit splits by color */
  int n_ring_ch;
  /* The padded extent of dim d of v when it is not partition's ceil(D/p) cut, else 0: the K
   * of MeshGEMM / Cannon on W x H (wf_gemm_rect_k_pad, which the plan writer sets here so
   * that the blocks, the lowerings and the manifest agree); NULL = never padded. */
  int64_t (*dim_pad)(const wf_func *f, wf_value v, int d, int w, int h);
  wf_value_names *names; /* the IR dumps' value names: symbols and the manifest's op results */
  /* Colors every attention of the class shares (their routes are the same each time, and one
   * op's streams end before the next op's start on each PE): the head-group sum's for groups
   * of attn_grp[0] columns (attn_grp[1..3]; 0 = not yet), the decode cache's upward shift
   * (dec_up, when dec_up_set). */
  int attn_grp[4];
  int dec_up[2], dec_up_set;
  /* shift's one-hop lines (lower_shift.c): colors [axis x/y][toward +1 / -1][sender parity],
   * bit (axis * 2 + dir) of shift_set once allocated with their routes */
  int shift_col[2][2][2];
  unsigned shift_set;
  int attn_gather;       /* the columns per kv head of the gathered kv ring (lower_attention.c;
                            0 = none yet): one ring's routes per class */
  unsigned move_bits;    /* WF_MOVE_* bits the op being lowered set (the movers set them, so
                            every caller is counted); emit.c files them in its wf_lowered_op */
  int gemm_phases;       /* lowering a rank-2 dist.gemm: its lowering marks its phases
                            (wf_gemm_phase); 0 for a batched one's matrices */
  /* The rows' skew between ops (row_skew.h): skew_in[y] where row y ended the op before, when
   * skew_in_ok (that op's lowering gave its rows' ends); the op being lowered may give its own
   * in skew_out and set skew_out_ok. emit.c passes them on from op to op (h entries each). */
  int64_t *skew_in, *skew_out;
  int skew_in_ok, skew_out_ok;
  /* Lowering an op on a band of the region's rows (lower_band.c): the band's region, its
   * first row and the code, route and task counts where it began; band = -1 outside one
   * (backend/collectives/lower_band.h). */
  int band, band_y0, band_code0, band_route0, band_task0;
  struct wf_band_colors *band_colors; /* the colors of the mesh and of each band height */
  /* Loop variables lent to the op being lowered (wf_lower_var) once the class holds 8 names:
   * the op's own names for them, and the op they were lent to. */
  char lent_name[8][16];
  int lent_var[8], n_lent, lent_op;
} wf_lower;

/* The value's region size: its band's when it lives on one, else the lowered region's. */
void wf_lower_value_wh(const wf_lower *L, wf_value v, int *w, int *h);

/* The rows' skew for the model of the op being lowered: it starts from the op before's rows'
 * ends (when given) and gives its own in L->skew_out; the lowering then sets L->skew_out_ok
 * from the model's have_end. */
wf_row_skew wf_lower_row_skew(const wf_lower *L);

/* Symbol text of a value, as the IR dumps print it (%name, %N or @global; L->names), so the
 * manifest, waferrun's summary and trace and the dumps say the same; shortened past 63 bytes. */
void wf_lower_value_name(const wf_lower *L, wf_value v, char *buf, size_t cap);
/* The value's whole name as the IR prints it (%x, @w, %3), not shortened: for the manifest's
 * tensor names, which users type (--input NAME=...). */
void wf_lower_value_text(const wf_lower *L, wf_value v, char *buf, size_t cap);
/* Symbol holding v's local block (created on first use). */
int wf_lower_sym(wf_lower *L, wf_value v);
/* Makes `sym` v's symbol: v is a view of another value's block (lower_gemm_batched.c
 * rebases the offsets of what it emits through v). */
void wf_lower_alias(wf_lower *L, wf_value v, int sym);
/* A scratch symbol shared by all ops, at least `bytes` large. */
int wf_lower_temp(wf_lower *L, const char *name, int64_t bytes);
/* The class's loop variable `name`, declared on first use. A class holds at most 8 (the PE
 * environment's size): past that the op is lent one of them that its code so far and every
 * open loop leave unused, under that name for the rest of the op (a plan whose ops loop over
 * many kinds of variable, a GEMM of another algorithm on each band height); none left is an
 * internal error, never an index of -1. */
int wf_lower_var(wf_lower *L, const char *name);
/* The loop variables instruction `in` names in its guard or operands, as a bit mask. */
unsigned wf_lower_vars_named(const wf_pe_instr *in);
/* The color for a purpose, allocating it and its routes on first use; -1 (reported) if the
 * target has no color left. */
int wf_lower_color(wf_lower *L, int purpose, wf_loc loc);
/* Local block of a value: rows x cols (rank 1: 1 x cols). */
void wf_lower_block(const wf_lower *L, wf_value v, int64_t *rows, int64_t *cols);

/* Sets every PE of the line to its role (root, before, after) on broadcast color `col` for the
 * root that guard g names (`y == T` on the column color, `x == T` on the row's), as a plain
 * send on it does: async streams on a broadcast color need it first. */
void wf_lower_flood_positions(wf_lower *L, const wf_pe_guard *g, int col);
/* Instruction helpers: guard may be NULL. */
void wf_emit(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args);
/* When args[0] is the first color of a ring line (wf_ring_ch): the instruction once per color
 * of the line, on the PEs that send on it in the ring's direction (senders = 1) or receive on
 * it (0); returns 1. A stream backward on the reversed links (ring_line.h) is sent by the
 * forward receivers and received by the forward senders. Returns 0 for any other color. */
int wf_emit_ring(wf_lower *L, const wf_pe_guard *g, wf_peop op, const wf_pe_arg *args, int senders);
/* d = a <op> b over an m x n block, b broadcast by mode (WF_BMODE_*): a binary instruction of
 * whole symbols. */
void wf_emit_bin(wf_lower *L, wf_peop op, int d, int a, int b, int64_t m, int64_t n, int mode);
/* d[0..n) = a[0..n) <op> c, c a one-word constant (wf_lower_scalar). */
void wf_emit_scal(wf_lower *L, wf_peop op, int d, int a, float c, int64_t n);
wf_pe_arg wf_arg_sym(int sym);
/* sym plus a constant offset of `off` words. */
wf_pe_arg wf_arg_at(int sym, int64_t off);
wf_pe_arg wf_arg_int(int64_t v);
wf_pe_arg wf_arg_term(wf_pe_term t);

/* A temporary `name` of len words holding the global index of each position of the PE's block
 * of a dim of blocks of len split along `split` (WF_AXIS_X / _Y: coordinate * len + i;
 * WF_AXIS_NONE: i); len <= 4096. Returns its symbol. */
int wf_lower_global_index(wf_lower *L, const char *name, int64_t len, int split);
/* A one-element constant [1] holding v, replicated on every PE (a global added to the
 * module and to weights.bin); returns its symbol. */
int wf_lower_scalar(wf_lower *L, float v);
/* The same for n values held whole by every PE (an attention mask block); returns its symbol. */
int wf_lower_const_block(wf_lower *L, const float *data, int64_t n);

/* lower_reduce.c: reductions over one axis of a PE block. The block is row-major over the
 * tensor's dims; along the axis it is [outer][len][inner]. */
typedef struct wf_axis_view {
  int64_t outer, len, inner; /* block extents: the dims before the axis, the axis, the dims after */
  int64_t full;              /* the axis' length in the tensor (past it: padding) */
  int split;                 /* wf_axis the axis is split along; WF_AXIS_NONE when whole here */
  int parts;                 /* PEs it is split over (1 when whole) */
} wf_axis_view;
/* Per-dim block extents of a partitioned type: ceil(D/p) along split dims. */
void wf_lower_block_dims(const wf_lower *L, const wf_type *t, int64_t *b);
/* The view of `axis` of a block with per-dim extents b (wf_lower_block_dims, with dims a
 * multi-axis reduction already reduced set to 1). */
wf_axis_view wf_lower_axis_view(const wf_lower *L, const wf_type *t, const int64_t *b, int axis);
/* Zeroes, in place, the padding of v's block along `axis` (the indices past the dim's length,
 * on the PEs holding them): a matmul's `zero_k` (docs/partition.md, "Padding"). Returns the
 * cycles of the busiest PE (0 when the axis is not padded). */
int64_t wf_lower_zero_axis_padding(wf_lower *L, wf_value v, int axis);
/* dst[outer x inner] = sum / max over the axis of src's real elements (padding excluded by
 * guards on the PE's coordinate), then the allreduce along the axis when it is split. */
int wf_lower_axis_stat(wf_lower *L, int dst, int src, const wf_axis_view *v, int is_max, wf_loc loc,
                       int64_t *cycles);
/* dst = a <op> stat over the whole block, stat (outer x inner) broadcast along the axis;
 * returns its cycles. */
int64_t wf_lower_axis_apply(wf_lower *L, wf_peop op, int dst, int a, int stat, const wf_axis_view *v);
/* The manifest's `lowering` of a statistic: "local", "local+masked+allreduce-xy", ...
 * (axes: bit WF_AXIS_X / WF_AXIS_Y set for each allreduce; masked: a padded axis). */
const char *wf_lower_stat_name(wf_lower *L, unsigned axes, int masked, wf_lowered_op *out);
/* Allreduce of sym[0..len) along axis (WF_AXIS_X / WF_AXIS_Y), sum or max, through the
 * collectives library: the model's choice for its P and B unless waferc --reduce-algo forces
 * one. Adds its predicted cycles to *cycles; *spread (may be NULL) gets how much later its
 * last PE is done than its first (a reduce-then-broadcast's root is done when its broadcast
 * leaves, the farthest PE hops later), which a loop of rounds pays again in each round: the
 * next round's reduce waits for the PEs that finished last. */
int wf_lower_allreduce(wf_lower *L, int sym, int64_t len, int axis, int is_max, wf_loc loc,
                       int64_t *cycles, int64_t *spread);
/* Per-element cost of a PE op (exp_cycles, div_cycles or 1). */
int64_t wf_lower_elem_cost(const wf_target *t, wf_peop op);

/* route_check.c: every PE's (color, switch position) pairs within the target's
 * 2^route_code_bits; reports and returns WF_EXIT_NOFIT if not. */
int wf_lower_check_route_codes(const wf_lower *L);
/* lower_memory.c: liveness-based SRAM placement of the class's symbols (memplan.c);
 * reports an over-budget tensor. Returns 0 or WF_EXIT_NOFIT. */
int wf_lower_plan_memory(wf_lower *L);

/* Op families; each returns 0 or a WF_EXIT_* code after reporting. */
int wf_lower_matmul(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_gemm.c: dist.gemm by its algo attribute (backend/gemm/gemm_algos.h). */
int wf_lower_gemm(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_gemm_t.c: dist.gemm_t, C = A B^T with B as stored. */
int wf_lower_gemm_t(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* Guard-term helpers (lower_util.c). */
wf_pe_term wf_gterm(wf_pe_term t, int mod, int k); /* t's base modulo mod, plus k */
void wf_gadd(wf_pe_guard *g, wf_pe_term a, wf_cmp cmp, wf_pe_term b);
/* Adds `r % mod == v` for a line index r that may carry an offset (a virtual index `3*y+1`:
 * wf_term_scaled), v in [0, mod). */
void wf_gadd_mod(wf_pe_guard *g, wf_pe_term r, int mod, int v);

/* The index of an empty local task that async streams activate when they end (created by
 * wf_lower_close_tasks once the code is complete). Makes the implicit main task explicit. */
int wf_lower_done_task(wf_lower *L);

/* Appends the completion task async streams name (lower_util.c); call once the code
 * is complete. */
void wf_lower_close_tasks(wf_lower *L);
int wf_lower_elementwise(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_attention.c: the sum inside a head's group of g columns (a chain east on two colors,
 * a flood west on a third), which decode attention shares. */
typedef struct wf_attn_group {
  int g, w;
  int c[2], cw; /* eastbound colors by the sender's parity; the westbound flood */
} wf_attn_group;
int wf_lower_attn_group_init(wf_lower *L, wf_attn_group *G, int g, wf_loc loc);
/* sym[0..len) = its sum over the PE's group; returns the predicted cycles. */
int64_t wf_lower_attn_group_sum(wf_lower *L, const wf_attn_group *G, int sym, int64_t len);
/* A PE's head slots: cb columns of q hold nh whole heads of ds = hd columns, or one part
 * (ds = cb) of a head spread over g = hd / cb columns; its ckb columns of k/v hold nkv kv slots
 * (nh unless kv_heads > 0: head-layout's shared GQA, q slot k reading kv slot k / (nh / nkv)).
 * With q colocated with the kv pieces (attention {q_colocated}): the group query heads' pieces
 * of ds = sub columns, all reading the one kv piece, summed over the kv head's g = m columns.
 * Reports (naming `who`) and returns WF_EXIT_UNSUPPORTED when the blocks do not fall on heads. */
typedef struct wf_attn_slots {
  int64_t nh, ds, g, nkv;
} wf_attn_slots;
int wf_lower_attn_slots(const wf_lower *L, const wf_op *op, const char *who, int64_t heads, int64_t hd, int64_t kvh,
                        int64_t cb, int64_t ckb, wf_attn_slots *s);
/* lower_decode_attention.c: one decode step's attention over the KV cache (docs/generation.md). */
int wf_lower_decode_attention(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_softmax(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_norm(wf_lower *L, const wf_op *op, wf_lowered_op *out);     /* layernorm, rmsnorm */
int wf_lower_reduce(wf_lower *L, const wf_op *op, wf_lowered_op *out);   /* reduce_sum/mean/max */
int wf_lower_movement(wf_lower *L, const wf_op *op, wf_lowered_op *out); /* reshape, transpose */
/* lower_reshape_rows.c: a reshape that regroups the rows ([B, T, E] <-> [B*T, E]) and keeps the
 * last dim, by an allgather of the rows along y; -1 (nothing emitted) when it is not one. */
int wf_lower_reshape_rows(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_reshape_whole.c: a small tensor (at most 4096 words, padded) made whole on every PE
 * (allreduces along x and y, padding dropped: row-major in w->src), changed there, and cut to
 * a result's blocks (padding zero). wf_lower_reshape_whole: any reshape so; -1 when the
 * operand is too large (or, for each, laid out with two dims on one mesh axis). cap: the
 * words the buffers must hold beyond the operand's (0: none). */
typedef struct wf_whole {
  int buf[2]; /* scratch $rw_a, $rw_b */
  int src;    /* where the data is now: the operand's block, or one of buf */
} wf_whole;
int wf_lower_whole_gather(wf_lower *L, const wf_op *op, wf_value v, int64_t cap, wf_whole *w, int64_t *cycles);
/* the whole tensor of dims t->dims sliced along axis to [first, first + count) (step 1) */
void wf_lower_whole_slice(wf_lower *L, wf_whole *w, const wf_type *t, int axis, int64_t first, int64_t count,
                          int64_t *cycles);
/* the whole tensor of dims t->dims permuted: result dim d is operand dim perm[d]; -1 (nothing
 * emitted) when it would take more than 1024 copies */
int wf_lower_whole_permute(wf_lower *L, wf_whole *w, const wf_type *t, const int64_t *perm, int64_t *cycles);
int wf_lower_whole_cut(wf_lower *L, wf_whole *w, wf_value r, int64_t *cycles);
int wf_lower_reshape_whole(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_attention.c: packed attention (head-layout) and rotate_pairs, both on {B, S_y, E_x}. */
int wf_lower_attention(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_rotate_pairs(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_transpose.c: transpose of the last two dims of a split matrix (any region; W != H
 * through lower_relayout.c). */
int wf_lower_transpose_dist(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_slice.c: slice, concat and split along any axis: local copies when every PE's
 * indices are in its own block (or the axis is whole on every PE), else a gather along the
 * axis over the fabric (wf_relayout_gather_axis) and copies out of it. */
int wf_lower_slice_concat(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_region_move.c: dist.relayout onto a band of the region's rows and off it. */
int wf_lower_region_move(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_slice.c: kv_switch, the prefill->decode switch of a KV cache: two such moves, along x
 * (the decode packing's columns) then along y (the decode rows' first slots). */
int wf_lower_kv_switch(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_unskew.c: unskew, a pre-skewed weight put back in partition's block order: a gather
 * along y and local copies. */
int wf_lower_unskew(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_shift.c: shift (ops.def), whole blocks along a split axis over one-hop links. */
int wf_lower_shift(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_dist.c: dist.reduce / dist.allreduce / dist.broadcast (lower_collective.h). */
int wf_lower_dist_coll(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* lower_gemv.c: dist.gemv, MeshGEMV (local GEMV, then the allreduce along x). */
int wf_lower_gemv(wf_lower *L, const wf_op *op, wf_lowered_op *out);

/* lower_index.c: gather of a constant table's rows by ids (the embedding lookup) and argmax
 * over the last axis. Integers live on the PEs as f32 (exact below 2^24). */
int wf_lower_gather(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_argmax(wf_lower *L, const wf_op *op, wf_lowered_op *out);
/* The rows of the smallest table the gathers index with v (the ids' valid range is [0, it)),
 * or 0 when no gather reads v. */
int64_t wf_lower_index_bound(const wf_lower *L, wf_value v);

/* lower_topk.c: a MoE layer's gating, along the last axis (local when it is whole on a PE,
 * allreduces along x when it is split): topk by k rounds of max + lowest index,
 * scatter_elements (reduction none / add / mul) after an allgather of indices and updates, and
 * gather_elements by a masked sum per index. */
int wf_lower_topk(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_scatter(wf_lower *L, const wf_op *op, wf_lowered_op *out);
int wf_lower_gather_elements(wf_lower *L, const wf_op *op, wf_lowered_op *out);

/* cost.c: the phase-1 cost model (docs/cycle-model.md, "Predicted cycles"). */
int64_t wf_cost_bcast(const wf_target *t, int64_t wavelets, int hops);

#endif
