/* waferc backend — one line of PEs, the unit every collective lowering works on (a row or a
 * column of the region, or part of one), and its coordinate and directions as PE terms. */
#ifndef WAFERC_BACKEND_COLL_LINE_H
#define WAFERC_BACKEND_COLL_LINE_H

#include "ir/pe/pe_program.h"
#include "waferc/ir.h"

/* One line of PEs: every PE whose `fixed` guard holds takes part, the line runs along
 * `axis` (WF_AXIS_X: coordinates are x, messages travel E/W). Lines of every row (or
 * column) run the same program at once when `fixed` leaves the other coordinate free. */
typedef struct wf_coll_line {
  int axis;             /* WF_AXIS_X or WF_AXIS_Y */
  int n;                /* PEs along the line */
  wf_pe_guard fixed;    /* extra conditions (e.g. [x==3] for a column phase); n <= 1 cond */
} wf_coll_line;

/* The line's coordinate as a term (mod M when mod > 1), and the router port toward its low
 * (side 0) or high (side 1) end. */
static inline wf_pe_term wf_coll_coord(const wf_coll_line *ln, int mod) {
  wf_pe_term t = wf_term(ln->axis == WF_AXIS_Y ? WF_TERM_Y : WF_TERM_X, 0);
  t.mod = (uint16_t)(mod > 1 ? mod : 0);
  return t;
}
static inline int wf_coll_dir(const wf_coll_line *ln, int side) {
  if (ln->axis == WF_AXIS_Y) return side == 0 ? WF_DIR_N : WF_DIR_S;
  return side == 0 ? WF_DIR_W : WF_DIR_E;
}

#endif
