/* Global constants' data: loading FILE constants (.npy or raw little-endian bytes) into the
 * module's arena, and host tensors for any constant. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/tensor.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "waferc reads weights as little-endian host memory; big-endian hosts need byte swaps here"
#endif

static char *resolve_path(const wf_module *m, const char *path) {
  const char *base = m->base_dir && *m->base_dir ? m->base_dir : ".";
  size_t n = strlen(base) + strlen(path) + 2;
  char *full = malloc(n);
  WF_ASSERT(full != NULL);
  if (path[0] == '/') snprintf(full, n, "%s", path);
  else snprintf(full, n, "%s/%s", base, path);
  return full;
}

static const char *shape_str(char *buf, size_t n, wf_dtype dt, int rank, const int64_t *dims) {
  size_t k = (size_t)snprintf(buf, n, "%s[", wf_dtype_name(dt));
  for (int i = 0; i < rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

static int load_npy(wf_module *m, wf_global *g, const char *full) {
  const char *name = wf_str(m, g->name);
  /* A file that cannot be opened is an I/O failure (exit 6), not bad content (exit 1). */
  FILE *probe = fopen(full, "rb");
  if (!probe) {
    wf_error(g->loc, "cannot read '%s' for constant @%s: %s", full, name, strerror(errno));
    return WF_EXIT_IO;
  }
  fclose(probe);
  /* Errors from the reader name the path; say which constant wanted it. */
  wf_tensor *t = wf_npy_read(full);
  if (!t) {
    wf_error(g->loc, "cannot load constant @%s from '%s'", name, full);
    return -1;
  }
  int shape_ok = t->rank == g->type.rank;
  for (int i = 0; shape_ok && i < t->rank; i++) shape_ok = t->dims[i] == g->type.dims[i];
  /* numpy has no bf16: a bf16 constant may come as f32 and is rounded (nearest even). */
  int conv = t->dtype == WF_F32 && g->type.dtype == WF_BF16;
  if (!shape_ok || (t->dtype != g->type.dtype && !conv)) {
    char a[160], b[160];
    wf_error(g->loc, "constant @%s is declared %s but '%s' holds %s%s", name,
             shape_str(a, sizeof a, g->type.dtype, g->type.rank, g->type.dims), full,
             shape_str(b, sizeof b, t->dtype, t->rank, t->dims),
             g->type.dtype == WF_BF16 ? " (bf16 constants are read from <f4 files)" : "");
    wf_tensor_free(t);
    return -1;
  }
  size_t bytes = wf_type_bytes(&g->type);
  g->data = wf_arena_alloc(m->arena, bytes ? bytes : 1);
  if (conv) {
    const float *s = t->data;
    uint16_t *d = g->data;
    for (int64_t i = 0; i < wf_tensor_numel(t); i++) d[i] = wf_f32_to_bf16(s[i]);
  } else {
    memcpy(g->data, t->data, bytes);
  }
  wf_tensor_free(t);
  return 0;
}

static int load_raw(wf_module *m, wf_global *g, const char *full) {
  const char *name = wf_str(m, g->name);
  size_t bytes = wf_type_bytes(&g->type);
  FILE *fp = fopen(full, "rb");
  if (!fp) {
    wf_error(g->loc, "cannot open '%s' for constant @%s: %s", full, name, strerror(errno));
    return WF_EXIT_IO;
  }
  int ok = g->offset >= 0 && fseek(fp, 0, SEEK_END) == 0;
  long size = ok ? ftell(fp) : -1;
  if (!ok || size < 0 || (uint64_t)size < (uint64_t)g->offset + bytes) {
    wf_error(g->loc, "constant @%s needs %zu bytes at offset %lld of '%s', but the file has %ld bytes",
             name, bytes, (long long)g->offset, full, size);
    fclose(fp);
    return -1;
  }
  void *data = wf_arena_alloc(m->arena, bytes ? bytes : 1);
  if (fseek(fp, (long)g->offset, SEEK_SET) != 0 || fread(data, 1, bytes, fp) != bytes) {
    wf_error(g->loc, "cannot read constant @%s from '%s'", name, full);
    fclose(fp);
    return -1;
  }
  fclose(fp);
  if (g->type.dtype == WF_BOOL) { /* any nonzero byte is true; store 0/1 */
    uint8_t *b = data;
    for (size_t i = 0; i < bytes; i++) b[i] = b[i] != 0;
  }
  g->data = data;
  return 0;
}

int wf_global_load(wf_module *m, int global) {
  WF_ASSERT(global >= 0 && global < m->n_globals);
  wf_global *g = &m->globals[global];
  if (g->kind == WF_DATA_ELIDED) {
    wf_error(g->loc,
             "constant @%s was elided in this dump; its data is not available (write the dump "
             "with --print-constants to keep every constant)",
             wf_str(m, g->name));
    return -1;
  }
  if (g->kind != WF_DATA_FILE || g->data) return 0;
  char *full = resolve_path(m, wf_str(m, g->path));
  int rc = g->offset == -1 ? load_npy(m, g, full) : load_raw(m, g, full);
  free(full);
  return rc;
}

wf_tensor *wf_global_tensor(wf_module *m, int global) {
  WF_ASSERT(global >= 0 && global < m->n_globals);
  if (wf_global_load(m, global) != 0) return NULL;
  wf_global *g = &m->globals[global];
  wf_tensor *t = wf_tensor_new(g->type.dtype, g->type.rank, g->type.dims);
  size_t bytes = wf_tensor_bytes(t), esize = wf_dtype_size(t->dtype);
  if (bytes == 0) return t;
  if (!g->data) {
    wf_error(g->loc, "constant @%s has no data", wf_str(m, g->name));
    wf_tensor_free(t);
    return NULL;
  }
  if (g->kind == WF_DATA_SPLAT) {
    for (size_t off = 0; off < bytes; off += esize) memcpy((char *)t->data + off, g->data, esize);
  } else {
    memcpy(t->data, g->data, bytes);
  }
  return t;
}
