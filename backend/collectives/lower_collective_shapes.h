/* waferc backend — programs by shape (lower_collective_shapes.c), used by the collective
 * lowerings (lower_collective.h). */
#ifndef WAFERC_BACKEND_LOWER_COLLECTIVE_SHAPES_H
#define WAFERC_BACKEND_LOWER_COLLECTIVE_SHAPES_H

#include <stdint.h>

#include "backend/collectives/coll_line.h"

/* Programs by shape. A lowering that knows, PE by PE along a
 * line, which route rules and which steps of code each PE has, hands them to a collector;
 * the collector writes every distinct rule and step once per shape of the PEs that have it,
 * [x>=a, x<=b, x%M>=lo, x%M<=hi, x%s==r] (M among the periods given, the residues a run of
 * step 1 or 2), and orders the steps so that every PE meets its own in its own order. A
 * pattern that repeats along the line, even at several scales (a binary tree's levels), then
 * costs a fixed number of lines per distinct rule and step. Keys are the caller's: a rule
 * or a step is whatever 32-bit value it chooses; the collector gives them back to emit. */
typedef struct wf_shapes wf_shapes;
wf_shapes *wf_shapes_new(int n);
void wf_shapes_free(wf_shapes *s);
/* A route rule of PE `pe` (any order); a step of PE `pe`, after its earlier ones (the PEs'
 * steps are given PE by PE, in increasing pe). 0, or -1 out of memory. */
int wf_shapes_rule(wf_shapes *s, int pe, uint32_t key);
int wf_shapes_step(wf_shapes *s, int pe, uint32_t key);
/* Lets a rule or step whose PEs need more than two shapes be one line guarded by
 * `[x in SET]`, the set added to cls (docs/pe-programs.md): for trees with no pattern along
 * the line (Auto-Gen's), whose programs then stay bounded. */
void wf_shapes_sets(wf_shapes *s, wf_pe_class *cls);
/* A period to try (the line's own periods: a tree's message lengths and their doubles). */
void wf_shapes_period(wf_shapes *s, int M);
/* Orders the steps and covers every set; returns the number of guarded lines the program
 * will get, or -1 when the PEs' step orders disagree (or out of memory). */
int wf_shapes_plan(wf_shapes *s);
/* Emits (after wf_shapes_plan): the rules, then the steps in order, each under its guards
 * (the line's fixed conditions added). Every guard is checked against its set first. */
void wf_shapes_emit(wf_shapes *s, const wf_coll_line *ln,
                    void (*rule)(void *ctx, const wf_pe_guard *g, uint32_t key),
                    void (*step)(void *ctx, const wf_pe_guard *g, uint32_t key), void *ctx);

#endif
