/* The built-in model configurations of wafer-bench llm: the public config.json of each model
 * (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
 * intermediate_size, vocab_size), and default meshes from WaferLLM: §7.1's end-to-end settings
 * for the two it ran whole (LLaMA3-8B prefill 660x660, decode 360x360; LLaMA2-13B 750x750 and
 * 375x375), and for the larger two the columns of its Tables 3 and 4 with the highest figure
 * (prefill 720x720, decode 420x420). test-tiny is a small LLaMA-shaped configuration for tests. */
#include <string.h>

#include "tools/wafer-bench/llm.h"

const wf_llm_model wf_llm_models[] = {
    {"llama3-8b", 4096, 32, 32, 8, 14336, 128256, 0, 660, 360},
    {"llama2-13b", 5120, 40, 40, 40, 13824, 32000, 0, 750, 375},
    {"codellama-34b", 8192, 48, 64, 8, 22016, 32000, 0, 720, 420},
    {"qwen2-72b", 8192, 80, 64, 8, 29568, 152064, 1, 720, 420},
    {"test-tiny", 64, 2, 4, 2, 128, 256, 0, 16, 8},
};
const int wf_llm_n_models = (int)(sizeof wf_llm_models / sizeof wf_llm_models[0]);

const wf_llm_model *wf_llm_model_find(const char *name) {
  for (int i = 0; i < wf_llm_n_models; i++)
    if (!strcmp(wf_llm_models[i].name, name)) return &wf_llm_models[i];
  return NULL;
}
