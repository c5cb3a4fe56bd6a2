/* waferc — host tensors, .npy files and the reference interpreter.
 *
 * The interpreter is the numerical oracle for every later stage: a compiled plan's outputs
 * on waferrun are compared with wf_interpret's.
 *
 *   wf_tensor *x = wf_npy_read("x.npy");            // NULL + error reported on failure
 *   wf_tensor *outs[4]; int n_out;
 *   if (wf_interpret(m, "main", 1, &x, outs, &n_out) != 0) ...;
 *   wf_npy_write("out/y.npy", outs[0]);
 */
#ifndef WAFERC_TENSOR_H
#define WAFERC_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "waferc/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_tensor {
  wf_dtype dtype;
  int rank;
  int64_t dims[WF_MAX_RANK];
  void *data; /* numel * wf_dtype_size(dtype) bytes, row-major, host order */
} wf_tensor;

wf_tensor *wf_tensor_new(wf_dtype dt, int rank, const int64_t *dims); /* zeroed */
wf_tensor *wf_tensor_clone(const wf_tensor *t);
void wf_tensor_free(wf_tensor *t);
int64_t wf_tensor_numel(const wf_tensor *t);
size_t wf_tensor_bytes(const wf_tensor *t);
/* Element i as double / set from double, whatever the dtype (f16/bf16 converted). */
double wf_tensor_get(const wf_tensor *t, int64_t i);
void wf_tensor_set(wf_tensor *t, int64_t i, double v);
float wf_f16_to_f32(uint16_t h);
uint16_t wf_f32_to_f16(float f);
float wf_bf16_to_f32(uint16_t h);
uint16_t wf_f32_to_bf16(float f);

/* .npy v1/v2/v3, little-endian, C order; dtypes <f4 <f2 <i4 <i8 |b1 (bf16 stored as <u2 is
 * not read back as bf16). Errors are reported with the path; NULL / nonzero on failure. */
wf_tensor *wf_npy_read(const char *path);
int wf_npy_write(const char *path, const wf_tensor *t);

/* Compares two tensors elementwise: |a-b| <= atol + rtol*|b|. Fills max_abs_err. Returns 1
 * when they match (same shape and within tolerance). */
int wf_tensor_allclose(const wf_tensor *a, const wf_tensor *b, double atol, double rtol,
                       double *max_abs_err);

/* Runs function `func` of m on the host. inputs[i] binds argument i (shapes must match).
 * outputs receives newly allocated tensors (caller frees), *n_outputs their number
 * (at most `max_outputs`). Returns 0 on success; errors are reported with op locations. */
int wf_interpret(wf_module *m, const char *func, int n_inputs, wf_tensor *const *inputs,
                 wf_tensor **outputs, int max_outputs, int *n_outputs);

/* Tensor for a global constant (loads FILE data, expands SPLAT). Caller frees. NULL on error. */
wf_tensor *wf_global_tensor(wf_module *m, int global);

#ifdef __cplusplus
}
#endif
#endif
