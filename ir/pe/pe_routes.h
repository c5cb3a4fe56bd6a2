/* The hardware rule for router configurations (docs/cycle-model.md, "Switch positions"),
 * checked by waferc when it writes a plan and by waferrun when it loads one. */
#ifndef WAFERC_IR_PE_PE_ROUTES_H
#define WAFERC_IR_PE_PE_ROUTES_H

#include "ir/pe/pe_program.h"

/* A WSE router holds, per color and switch position, one set of rx ports and one set of tx
 * ports: a wavelet from any rx port goes to every tx port. Checks that on every PE of the
 * placement (px, py, pw, ph) of class `c` in the region (rx, ry, rw, rh) (absolute mesh
 * coordinates), the rules that hold there give each (color, position) one tx set for all the
 * rx ports a wavelet can arrive on. Returns 0, or -1 after reporting the first PE that breaks
 * the rule at `path`:line (the rule's line; the file alone for a class built in memory),
 * naming the PE, the color, the position and the rules, as an error. */
int wf_pe_check_routes(const wf_pe_class *c, int rx, int ry, int rw, int rh, int px, int py, int pw, int ph,
                       const char *path);

#endif
