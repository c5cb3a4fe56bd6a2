/* waferc backend — collectives as reusable lowering functions (Reduce paper §4-§7, WaferLLM
 * §6). Other lowerings call these for their reductions (softmax's row allreduce, MeshGEMV's
 * K-tree allreduce); lower_dist.c lowers the IR ops dist.reduce / allreduce / broadcast with
 * them.
 *
 * Every reduce is a tree over the PEs of one line (a row or a column of the region), given
 * as parent[] over the line's coordinates, lowered by one generic scheme (lower_collective.c):
 * a PE receives its children's partial sums nearest first, streams the last one through
 * `addsend` to its parent, and its router forwards later traffic only after its own message
 * has passed (switch position 1). The order of arrivals at every PE is then fixed by the
 * routes, not by timing, so any tree is correct; colors are assigned so that no router ever
 * has to tell two messages apart on one color and port.
 *
 *   wf_coll_line ln = {.axis = WF_AXIS_X, .n = L->w};
 *   wf_lower_coll_reduce(L, &ln, WF_COLL_CHAIN, -1, sym, 64, WF_PEOP_RECVADD, loc, &res);
 *   wf_lower_coll_bcast(L, &ln, res.root, sym, 64, loc);
 */
#ifndef WAFERC_BACKEND_LOWER_COLLECTIVE_H
#define WAFERC_BACKEND_LOWER_COLLECTIVE_H

#include "backend/collectives/coll_line.h"
#include "backend/collectives/lower_collective_shapes.h"
#include "backend/resources/lower.h"
#include "waferc/collectives.h"


typedef struct wf_coll_result {
  wf_coll_algo algo;
  int root;             /* coordinate of the root on the line */
  int colors;           /* colors allocated */
  double predicted;     /* cycles, the model's */
  double lower_bound;   /* reduces: Lemma 5.5 / 7.2; else 0 */
  double lowered;       /* 1D allreduces as lowered: the ring's own time; a reduce-then-
                           broadcast's tree schedule, broadcast and switch resets (one cycle a
                           color), which leaves out that at an inner root both sides' messages
                           share the root's ramp while it reads one side
                           (docs/collectives-lowering.md); 0 when not known (relayed) */
  char why[256];
} wf_coll_result;

/* The guard of coordinates a, a+s, ..., b of the line (`[x>=a, x<=b, x%s==a%s]`, only the
 * conditions that cut something), followed by the line's fixed conditions when with_fixed. */
wf_pe_guard wf_coll_ap_guard(const wf_coll_line *ln, int a, int b, int s, int with_fixed);

/* A reduction tree over coordinates 0..n-1: parent[root] = -1. by_shape 1: color it by
 * classes of slots that repeat along the line and write it by shapes (wf_shapes), so that a
 * tree whose pattern repeats (the binary tree, two-phase, MeshGEMV's K-tree) gets a program
 * that stays bounded (the binary tree's: log^2 of the line); wf_line_tree_build sets it for
 * the first two, lower_gemv.c for the K-tree. by_shape 2: color it slot by slot in coordinate
 * order (fewest colors for a tree with no pattern) and write it by shapes and sets
 * (wf_shapes_sets): Auto-Gen's, whose program then stays bounded. 0: by roles. */
typedef struct wf_line_tree {
  int n;
  int *parent;
  int by_shape;
} wf_line_tree;


/* Lowers a reduce of `len` words at `sym` along the line into the PE at coordinate `root`
 * over the given tree (any shape: subtrees need not be contiguous for correctness, but every
 * message travels straight toward its parent). combine: WF_PEOP_RECVADD or WF_PEOP_RECVMAX.
 * Returns 0 or a WF_EXIT_* code after reporting. colors_out may be NULL. */
int wf_lower_tree_reduce(wf_lower *L, const wf_coll_line *ln, const wf_line_tree *t, int sym,
                         int64_t len, wf_peop combine, wf_loc loc, int *colors_out);


/* Builds the tree of `algo` (star, chain, tree, two_phase, autogen) with its root at
 * coordinate `root`: a root at either end gets the pattern as the paper draws it, mirrored
 * if needed; a root inside gets one tree per side. Caller frees t->parent. 0, or -1. */
int wf_line_tree_build(wf_coll_algo algo, int n, int root, int64_t len, const wf_coll_params *p,
                       wf_line_tree *t);

/* Reduce with the algorithm `algo` (or the model's choice when algo < 0) into coordinate
 * `root` (< 0: the model's root for allreduce, the far end, n-1, for reduce). */
int wf_lower_coll_reduce(wf_lower *L, const wf_coll_line *ln, int algo, int root, int sym,
                         int64_t len, wf_peop combine, wf_loc loc, wf_coll_result *out);
/* Flooding broadcast of `len` words at `sym` from coordinate `root` along the line. */
int wf_lower_coll_bcast(wf_lower *L, const wf_coll_line *ln, int root, int sym, int64_t len,
                        wf_loc loc);
/* Allreduce: reduce-then-broadcast (root chosen by the model). */
int wf_lower_coll_allreduce(wf_lower *L, const wf_coll_line *ln, int algo, int sym, int64_t len,
                            wf_peop combine, wf_loc loc, wf_coll_result *out);

/* Ring allreduce (§6.2, the distance-2 ring of Figure 7b) of `len` words at `sym` along the
 * line: reduce-scatter then allgather in chunks of ceil(len/P); sums only
 * (lower_collective_ring.c). */
int wf_lower_coll_ring(wf_lower *L, const wf_coll_line *ln, int sym, int64_t len, wf_loc loc);

/* Snake reduce (§7.3) over the whole region into (w-1, h-1): a chain along a boustrophedon
 * path (lower_collective_snake.c). */
int wf_lower_coll_snake(wf_lower *L, int sym, int64_t len, wf_peop combine, wf_loc loc);

/* 2D (§7) over the whole w x h region: X-Y reduce with `algo` on both axes into (w-1, h-1),
 * the 2D flooding broadcast from (rx, ry), and the 2D allreduce (X-Y reduce + 2D broadcast). */
int wf_lower_coll_reduce_xy(wf_lower *L, int algo, int sym, int64_t len, wf_peop combine,
                            wf_loc loc, wf_coll_result *out);
int wf_lower_coll_bcast_2d(wf_lower *L, int rx, int ry, int sym, int64_t len, wf_loc loc);
int wf_lower_coll_allreduce_xy(wf_lower *L, int algo, int sym, int64_t len, wf_peop combine,
                               wf_loc loc, wf_coll_result *out);

/* Colors reused across phases (collective_cache.c). A collective whose routes are exactly
 * those of an earlier one (same line, same tree or pattern) takes the earlier one's colors
 * and adds no routes: the phases run one after the other on every PE, and a tree whose
 * routers switched position is reset (swset to 0) once the allreduce's broadcast has
 * reached the PE, i.e. after every reduce wavelet passed it. Past the budget the cache also
 * lends colors to other patterns (serialization) and records every fallback
 * (docs/collectives-lowering.md, "Past the budget"). */
enum { WF_COLL_KEY_TREE, WF_COLL_KEY_BCAST, WF_COLL_KEY_RING, WF_COLL_KEY_SNAKE,
       WF_COLL_KEY_RELAY,        /* relay reduce along a line into `root` (one color) */
       WF_COLL_KEY_BCAST2D       /* a 2D flooding broadcast merged onto a reduce's color */ };
typedef struct wf_coll_key {
  int kind;            /* WF_COLL_KEY_* */
  int axis, n, root;
  wf_pe_guard fixed;
  int *parent;         /* tree reduce: the tree (owned by the cache) */
  int coloring;        /* tree reduce: 0 slot by slot, 1 + which way by class (its colors
                          and routes differ for the same tree) */
} wf_coll_key;
/* Colors of an earlier identical collective that is clean (no switch left set), or NULL. */
const int *wf_coll_cache_find(wf_lower *L, const wf_coll_key *k, int *n_colors);
/* Records a collective's colors; `clean` = no router left at switch position > 0. */
void wf_coll_cache_add(wf_lower *L, const wf_coll_key *k, const int *colors, int n, int clean);
/* Resets the switches of the last tree reduce lowered on the line (after its broadcast),
 * making it reusable. Returns the swsets it emitted (one cycle each on every PE). */
int wf_coll_cache_reset_last(wf_lower *L, const wf_coll_line *ln);
/* Past the budget: a color of earlier, settled collectives whose router ports never meet
 * those of `k` (1D lines of the other axis; a relay reduce and the broadcast from its root),
 * lent to the next wf_coll_cache_add (key `k`) from switch position *pos up (`need`
 * positions, within the target's switch_positions); colors in `avoid` are skipped. No
 * diagnostic; -1 when none fits. wf_coll_cache_unborrow drops what was lent but not added. */
int wf_coll_cache_borrow_color(wf_lower *L, const wf_coll_key *k, int need, uint32_t avoid, int *pos);
void wf_coll_cache_unborrow(wf_lower *L);
/* A flooding broadcast from the root of the reduce tree (or relay) lowered just before it,
 * on the same line, can take
 * that tree's first color at the tree's own switch positions: the tree's wavelets travel
 * toward the root, the broadcast's away from it, so at every router they arrive by different
 * ports and the two sets of rules live side by side (no swset). Returns the color, the
 * position *pos the tree starts at and *both = the tree also uses *pos + 1 (the broadcast's
 * rules go to both); -1 when no such tree. Lent to the next wf_coll_cache_add. The same
 * broadcast merged with the same tree before: *have_routes = 1 (its rules are there). */
int wf_coll_cache_merge(wf_lower *L, const wf_coll_key *k, int *pos, int *both, int *have_routes);
/* A broadcast from the root of the reduces lowered since wf_coll_cache_stamp reached every
 * PE: their wavelets are all past (nothing else changes; no code is emitted). */
int wf_coll_cache_stamp(wf_lower *L);
void wf_coll_cache_done_since(wf_lower *L, int stamp);
/* Colors of the collectives found or added since the last call (then cleared). */
uint32_t wf_coll_cache_take_touched(wf_lower *L);
/* 1 if no PE's router holds a rule on `color` (any position) for an rx port one of `rules`
 * (guard and rx are read) needs at that PE: the exact, per-PE form of the port test. */
int wf_coll_cache_ports_free(const wf_lower *L, int color, const wf_pe_route *rules, int n);
/* 1 if, with `rules` (guard, rx, tx are read) added to `color` at every switch position of
 * `posm`, every PE's router still holds one rx set -> one tx set per position (the hardware
 * rule, checked again for the whole class by ir/pe/pe_routes.c): no rx port that a wavelet can arrive
 * on has a tx set different from another's. */
int wf_coll_cache_holdable(const wf_lower *L, int color, const wf_pe_route *rules, int n, unsigned posm);
/* Switch positions that rules on `color` use (bit p = position p). */
unsigned wf_coll_cache_positions(const wf_lower *L, int color);
/* The flooding broadcast's form of the above: one color, with the warning. -1 when none. */
int wf_coll_cache_borrow(wf_lower *L, const wf_coll_key *k, const char *purpose, wf_loc loc);
/* "reduce tree along x, flooding broadcast along y": the collectives holding `color`. */
void wf_coll_cache_users(const wf_lower *L, int color, char *buf, size_t cap);

/* Every fallback past the budget, for the manifest (per color and per class). */
typedef struct wf_coll_fallback {
  int color, pos;       /* the color and the switch position the collective starts at */
  int relayed;          /* 1: relayed through PEs (store-and-forward hops), 0: serialized */
  char what[96];        /* "reduce tree along x (star)" */
  char loc[160];        /* file:line:col of the op, "" if none */
} wf_coll_fallback;
void wf_coll_cache_fallback(wf_lower *L, int color, int pos, int relayed, const char *what, wf_loc loc);
int wf_coll_cache_n_fallbacks(const wf_lower *L);
const wf_coll_fallback *wf_coll_cache_get_fallback(const wf_lower *L, int i);
/* Predicted cycles a fallback adds to the current op (swsets, relay hops), with a note for
 * its explain; emit.c takes them after each op (0 and "" when colors sufficed). */
void wf_coll_cache_note(wf_lower *L, double cycles, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Colors fresh..n-1 of a collective (`what`; `tag` for the note: "tree", "ring") borrowed at
 * switch positions pos[] of earlier collectives' colors col[]: the warning naming who held
 * them, the manifest's color_fallbacks entry and the note, for each. */
void wf_coll_cache_serialized(wf_lower *L, const char *what, const char *tag, const int *col,
                              const int *pos, int fresh, int n, wf_loc loc);
double wf_coll_cache_take_extra(wf_lower *L, char *note, size_t cap);
/* wf_lower_tree_reduce relayed the tree: the relay's prediction (set by it); the caller,
 * who knows what the tree was predicted at (`orig`), turns the difference into extra cycles
 * with wf_coll_cache_relay_extra (nothing when no relay happened). */
void wf_coll_cache_set_relay(wf_lower *L, double cycles);
int wf_coll_cache_relay_extra(wf_lower *L, double orig); /* 1 if it was relayed */
/* An allreduce's broadcast needs a color of its own (its rules cannot join the reduce's in
 * one switch position: docs/cycle-model.md, "The hardware rule"): the reduce tree lowered
 * while `n` is set leaves n free colors, falling back (serialized or relayed) when the rest
 * do not suffice. 0 clears it. */
void wf_coll_cache_reserve(wf_lower *L, int n);
int wf_coll_cache_reserved(const wf_lower *L);
/* 1 if `k` could borrow a color for `need` positions now, besides the colors already
 * borrowed for the next add (nothing is borrowed). */
int wf_coll_cache_can_borrow(wf_lower *L, const wf_coll_key *k, int need);

/* Relay reduce (collective_relay.c): the reduce along the line into `root` as a chain in
 * which every hop ends at the next PE's ramp (no router forwards anything). With two free
 * colors the PEs stream by parity (addsend from one color onto the other); else on ONE color,
 * store-and-forward: each PE receives its far neighbour's block at one switch position and
 * sends at the next (a router holds one rx set -> one tx set per position). That color is a
 * free one, else one lent by wf_coll_cache_borrow_color; `what` names the collective relayed
 * for the warning. Returns 0 or WF_EXIT_NOFIT (reported, naming the colors in use). Its
 * prediction is left in wf_coll_cache_set_relay. */
int wf_lower_relay_reduce(wf_lower *L, const wf_coll_line *ln, int root, int sym, int64_t len,
                          wf_peop combine, const char *what, wf_loc loc);
/* Predicted cycles of that relay: both sides into the root (the chain of Lemma 5.2 by
 * `parity`, else a whole message per hop) and the root's swset. */
double wf_relay_reduce_cycles(const wf_lower *L, int n, int root, int64_t len, int parity);
/* Number of colors wf_lower_color_try could still hand out (collective_colors.c). */
int wf_lower_color_free(const wf_lower *L);
/* The "no free color" error naming the collective and every color in use; WF_EXIT_NOFIT. */
int wf_lower_color_exhausted(wf_lower *L, const char *what, int needed, wf_loc loc);
/* Switch position the collective just found or added starts at on `color` (its routes). */
int wf_coll_cache_base(const wf_lower *L, int color);
/* Emits, on the line's PEs, one swset per shared color of the collective just found or
 * added, selecting its switch position: call at the start of its phase. */
void wf_coll_cache_enter(wf_lower *L, const wf_coll_line *ln);
/* 1 when `color` was shared between patterns by serialization (for the manifest). */
int wf_coll_cache_shared(const wf_lower *L, int color);
void wf_coll_cache_free(wf_lower *L);
/* Forgets the collective lowered last (no merge onto it, no reset of it): between the
 * region's ops and a band's, whose rows did not all run it (lower_band.c). */
void wf_coll_cache_forget_last(wf_lower *L);
/* Colors reused / allocated by collectives in this compile (for notes and tests). */
void wf_coll_cache_stats(const wf_lower *L, int *reused, int *allocated);

/* A color no other op of the class uses yet (declared with `purpose`); -1 (reported) when
 * the target's budget is exhausted. */
int wf_lower_color_fresh(wf_lower *L, const char *purpose, wf_loc loc);
/* The same without a diagnostic: -1 when the budget is exhausted. */
int wf_lower_color_try(wf_lower *L, const char *purpose);

#endif
