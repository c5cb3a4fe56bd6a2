/* The built-in passes. Each is defined in its own file under passes/; adding one is one
 * `extern` line and one table entry here. */
#include "waferc/pass.h"

extern const wf_pass_info wf_pass_canonicalize;
extern const wf_pass_info wf_pass_dce;
extern const wf_pass_info wf_pass_partition;

static const wf_pass_info *const builtin_passes[] = {
    &wf_pass_canonicalize,
    &wf_pass_dce,
    &wf_pass_partition,
};

void wf_register_builtin_passes(void) {
  static int done;
  if (done) return;
  done = 1;
  wf_pass_registry *r = wf_pass_registry_global();
  for (size_t i = 0; i < sizeof builtin_passes / sizeof builtin_passes[0]; i++) {
    int rc = wf_pass_register(r, builtin_passes[i]);
    WF_ASSERT(rc == 0); /* a malformed built-in descriptor is a bug */
  }
}
