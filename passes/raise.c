/* raise: every raising, in one pass. Normalisations and activations first (they are
 * leaves of the dataflow), then rotary embeddings, then attention, whose q and k are often
 * rope results: each family matches on the ops the exporter wrote, so the order only
 * decides what a dump in between shows, never what is found. The statistics are the union
 * of the families'. */
#include "passes/raise.h"

extern const wf_pass_info wf_pass_raise_rmsnorm;
extern const wf_pass_info wf_pass_raise_layernorm;
extern const wf_pass_info wf_pass_raise_gelu;
extern const wf_pass_info wf_pass_raise_silu;
extern const wf_pass_info wf_pass_raise_rope;
extern const wf_pass_info wf_pass_raise_attention;

static const wf_pass_info *const families[] = {
    &wf_pass_raise_rmsnorm, &wf_pass_raise_layernorm, &wf_pass_raise_gelu,
    &wf_pass_raise_silu,    &wf_pass_raise_rope,      &wf_pass_raise_attention,
};

static int run(wf_module *m, wf_pass_ctx *ctx) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    int rc = families[i]->run(m, ctx);
    if (rc) return rc;
  }
  return 0;
}

static const char *const stats[] = {
    "rmsnorm", "unit-scale", "layernorm", "gelu-erf", "gelu-tanh", "silu", "rope-half", "rope-interleaved",
    "attention", "causal-mask", "kv-repeat-absorbed",
};
const wf_pass_info wf_pass_raise = {
    "raise",
    "Raise exported patterns: rmsnorm, layernorm, gelu, silu, rope, attention (each raise-* pass in turn)",
    NULL,
    0,
    stats,
    (int)(sizeof stats / sizeof stats[0]),
    run,
};
