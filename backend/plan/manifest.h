/* waferc backend — writing plan/manifest.json (docs/plan-format.md). */
#ifndef WAFERC_BACKEND_MANIFEST_H
#define WAFERC_BACKEND_MANIFEST_H

#include "backend/resources/lower.h"

/* The weights written to weights.bin, in file order. */
typedef struct wf_manifest_weights {
  wf_value *values;
  int64_t *offset, *bytes;
  int n;
  int64_t total;
} wf_manifest_weights;

/* Writes the manifest to `path` (the caller renames it into place). extra (may be NULL): a
 * JSON object whose members are added at the top level (waferc --generate's "generate").
 * Returns WF_EXIT_*. */
int wf_manifest_write(const wf_lower *L, const wf_manifest_weights *w, const char *flags,
                      const char *extra, const char *path);

#endif
