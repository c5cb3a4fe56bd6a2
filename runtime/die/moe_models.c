/* MoEntwine Table I. Expert sizes are in MiB (DeepSeek-V3: 3 x 7168 x 2048 INT8 weights =
 * 42 MiB); hidden sizes are the models' published configurations. */
#include <string.h>

#include "runtime/die/moe.h"

#define MIB (1024.0 * 1024.0)
static const wf_moe_model models[] = {
    {"deepseek-v3", 671e9, 58, 61, 42 * MIB, 8, 256, 7168},
    {"qwen3", 235e9, 94, 94, 18 * MIB, 8, 128, 4096},
    {"deepseek-v2", 236e9, 59, 60, 23 * MIB, 6, 160, 5120},
    {"dbrx", 132e9, 40, 40, 189 * MIB, 4, 16, 6144},
    {"mixtral-8x22b", 141e9, 56, 56, 288 * MIB, 2, 8, 6144},
};

const wf_moe_model *wf_moe_models(int *count) {
  *count = (int)(sizeof models / sizeof models[0]);
  return models;
}

const wf_moe_model *wf_moe_model_find(const char *name) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
    if (!strcmp(models[i].name, name)) return &models[i];
  return NULL;
}
