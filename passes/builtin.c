/* The built-in passes. Each is defined in its own file under passes/; adding one is one
 * `extern` line and one table entry here. */
#include "waferc/pass.h"

extern const wf_pass_info wf_pass_canonicalize;
extern const wf_pass_info wf_pass_dce;
extern const wf_pass_info wf_pass_cse;
extern const wf_pass_info wf_pass_symbol_dce;
extern const wf_pass_info wf_pass_partition;
extern const wf_pass_info wf_pass_head_layout;
extern const wf_pass_info wf_pass_generate_prefill;
extern const wf_pass_info wf_pass_decode_step;
extern const wf_pass_info wf_pass_lower_gemm;
extern const wf_pass_info wf_pass_raise_rmsnorm;
extern const wf_pass_info wf_pass_raise_layernorm;
extern const wf_pass_info wf_pass_raise_gelu;
extern const wf_pass_info wf_pass_raise_silu;
extern const wf_pass_info wf_pass_raise_rope;
extern const wf_pass_info wf_pass_raise_attention;
extern const wf_pass_info wf_pass_raise;
extern const wf_pass_info wf_pass_moe_routes;
extern const wf_pass_info wf_pass_expert_bands;

static const wf_pass_info *const builtin_passes[] = {
    &wf_pass_canonicalize,
    &wf_pass_dce,
    &wf_pass_cse,
    &wf_pass_symbol_dce,
    &wf_pass_head_layout,
    &wf_pass_generate_prefill,
    &wf_pass_decode_step,
    &wf_pass_partition,
    &wf_pass_lower_gemm,
    &wf_pass_raise_rmsnorm,
    &wf_pass_raise_layernorm,
    &wf_pass_raise_gelu,
    &wf_pass_raise_silu,
    &wf_pass_raise_rope,
    &wf_pass_raise_attention,
    &wf_pass_raise,
    &wf_pass_moe_routes,
    &wf_pass_expert_bands,
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
