/* The side file of a --dump-dir: constants the dumps elide are written once to
 * DIR/constants.bin (raw little-endian bytes, identical constants stored once) and printed as
 * file<"constants.bin", offset = N>, so every numbered dump and the reproducer parse back
 * with their data, bit for bit (docs/ir-text-format.md, "Elided constants"). */
#ifndef WAFERC_PASSES_DUMP_CONSTANTS_H
#define WAFERC_PASSES_DUMP_CONSTANTS_H

#include <stddef.h>
#include <stdint.h>

#include "waferc/ir.h"

#define WF_DUMP_CONSTANTS_FILE "constants.bin"

typedef struct wf_const_store wf_const_store;

/* Removes an earlier DIR/constants.bin; the first elided constant creates it anew. NULL after
 * reporting when it cannot. */
wf_const_store *wf_const_store_open(const char *dir);
/* Print options that send elided constants to the store (copy of `base` otherwise). */
wf_print_opts wf_const_store_print_opts(wf_const_store *s, const wf_print_opts *base);
/* Closes the file. Returns 0, or nonzero if a write failed (reported once). */
int wf_const_store_close(wf_const_store *s);

#endif
