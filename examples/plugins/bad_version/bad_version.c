/* A plugin built against a newer plugin API than this waferc supports. The loader must
 * refuse it before calling register_fn ("got 2, supported 1"); register_fn aborting proves
 * that it was never called. Built in-tree for tests only. */
#include <stdio.h>
#include <stdlib.h>

#include <waferc/pass.h>

static void register_passes(wf_pass_registry *r) {
  (void)r;
  fprintf(stderr, "bad_version: register_fn was called despite the API version mismatch\n");
  abort();
}

__attribute__((visibility("default"))) const wf_plugin_info *wf_plugin_get_info(void) {
  static const wf_plugin_info info = {WF_PLUGIN_API_VERSION + 1, "bad-version", "0.0", register_passes};
  return &info;
}
