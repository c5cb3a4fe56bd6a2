/* Generates the .npy inputs and weights of the e2e examples (run once; the outputs are
 * committed). Values come from a fixed LCG, so regenerating gives identical files:
 *   cc -I../../include -I../../build/include gen_data.c -L../../build/lib -lwaferc -o /tmp/gen \
 *     && LD_LIBRARY_PATH=../../build/lib /tmp/gen */
#include <stdint.h>
#include <stdio.h>

#include "waferc/tensor.h"

static uint32_t state = 12345u;
static float uniform(float scale) { /* in [-scale, scale) */
  state = state * 1664525u + 1013904223u;
  return scale * ((float)(state >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
}

static int write(const char *path, int rank, int64_t d0, int64_t d1, float scale) {
  int64_t dims[2] = {d0, d1};
  wf_tensor *t = wf_tensor_new(WF_F32, rank, dims);
  for (int64_t i = 0; i < wf_tensor_numel(t); i++) ((float *)t->data)[i] = uniform(scale);
  int rc = wf_npy_write(path, t);
  wf_tensor_free(t);
  return rc;
}

int main(void) {
  int rc = 0;
  rc |= write("mlp_softmax_x.npy", 2, 16, 32, 1.0f);
  rc |= write("mlp_softmax_w.npy", 2, 32, 16, 0.5f);
  rc |= write("mlp_softmax_b.npy", 1, 16, 1, 0.5f);
  rc |= write("two_layer_x.npy", 2, 32, 32, 1.0f);
  rc |= write("two_layer_w1.npy", 2, 32, 64, 0.3f);
  rc |= write("two_layer_b1.npy", 1, 64, 1, 0.3f);
  rc |= write("two_layer_w2.npy", 2, 64, 32, 0.3f);
  return rc ? 1 : 0;
}
