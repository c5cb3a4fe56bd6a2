/* ONNX tensors: element types and TensorProto decoding (raw_data, the typed fields, and
 * external data files), plus wf_onnx_read_tensor for the test data sets' .pb files.
 *
 * The IR has f32 f16 bf16 i32 i64 bool. Other ONNX types are converted when a tensor is
 * decoded: double -> f32 (rounded; the caller warns), int8/uint8/int16/uint16 -> i32 and
 * uint32/uint64 -> i64 (exact; a uint64 above INT64_MAX is an error). Strings and complex
 * numbers are unsupported. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx/onnx_internal.h"

static const char *const g_type_names[] = {
    [0] = "UNDEFINED", [OX_FLOAT] = "FLOAT",   [OX_UINT8] = "UINT8",     [OX_INT8] = "INT8",
    [OX_UINT16] = "UINT16", [OX_INT16] = "INT16", [OX_INT32] = "INT32",  [OX_INT64] = "INT64",
    [OX_STRING] = "STRING", [OX_BOOL] = "BOOL",   [OX_FLOAT16] = "FLOAT16", [OX_DOUBLE] = "DOUBLE",
    [OX_UINT32] = "UINT32", [OX_UINT64] = "UINT64", [14] = "COMPLEX64", [15] = "COMPLEX128",
    [OX_BFLOAT16] = "BFLOAT16",
};

const char *ox_onnx_type_name(int32_t t) {
  if (t >= 0 && t < (int32_t)(sizeof g_type_names / sizeof g_type_names[0]) && g_type_names[t])
    return g_type_names[t];
  return "an unknown type";
}

int ox_dtype_from_onnx(int32_t t, wf_dtype *out, int *narrowed) {
  int nar = 0;
  switch (t) {
  case OX_FLOAT: *out = WF_F32; break;
  case OX_FLOAT16: *out = WF_F16; break;
  case OX_BFLOAT16: *out = WF_BF16; break;
  case OX_INT32: *out = WF_I32; break;
  case OX_INT64: *out = WF_I64; break;
  case OX_BOOL: *out = WF_BOOL; break;
  case OX_DOUBLE: *out = WF_F32; nar = 1; break;
  case OX_INT8: case OX_UINT8: case OX_INT16: case OX_UINT16: *out = WF_I32; nar = 2; break;
  case OX_UINT32: case OX_UINT64: *out = WF_I64; nar = 2; break;
  default: return -1;
  }
  if (narrowed) *narrowed = nar;
  return 0;
}

/* Bytes per element of the ONNX type as stored in raw_data. */
static size_t onnx_elem_size(int32_t t) {
  switch (t) {
  case OX_FLOAT: case OX_INT32: case OX_UINT32: return 4;
  case OX_INT64: case OX_UINT64: case OX_DOUBLE: return 8;
  case OX_FLOAT16: case OX_BFLOAT16: case OX_INT16: case OX_UINT16: return 2;
  case OX_INT8: case OX_UINT8: case OX_BOOL: return 1;
  default: return 0;
  }
}

/* Element i of little-endian raw bytes of ONNX type t, stored into the IR tensor. */
static int store_raw(wf_tensor *o, int64_t i, int32_t t, const uint8_t *p) {
  int32_t i32;
  int64_t i64;
  uint64_t u64;
  float f;
  double d;
  uint16_t h;
  switch (t) {
  case OX_FLOAT: memcpy(&f, p, 4); ((float *)o->data)[i] = f; return 0;
  case OX_DOUBLE: memcpy(&d, p, 8); ((float *)o->data)[i] = (float)d; return 0;
  case OX_FLOAT16: case OX_BFLOAT16: memcpy(&h, p, 2); ((uint16_t *)o->data)[i] = h; return 0;
  case OX_INT32: memcpy(&i32, p, 4); ((int32_t *)o->data)[i] = i32; return 0;
  case OX_INT64: memcpy(&i64, p, 8); ((int64_t *)o->data)[i] = i64; return 0;
  case OX_BOOL: ((uint8_t *)o->data)[i] = p[0] != 0; return 0;
  case OX_INT8: ((int32_t *)o->data)[i] = (int8_t)p[0]; return 0;
  case OX_UINT8: ((int32_t *)o->data)[i] = p[0]; return 0;
  case OX_INT16: { int16_t s; memcpy(&s, p, 2); ((int32_t *)o->data)[i] = s; return 0; }
  case OX_UINT16: memcpy(&h, p, 2); ((int32_t *)o->data)[i] = h; return 0;
  case OX_UINT32: { uint32_t u; memcpy(&u, p, 4); ((int64_t *)o->data)[i] = u; return 0; }
  case OX_UINT64:
    memcpy(&u64, p, 8);
    if (u64 > (uint64_t)INT64_MAX) return -1;
    ((int64_t *)o->data)[i] = (int64_t)u64;
    return 0;
  default: return -1;
  }
}

static int store_raw_all(wf_tensor *o, int32_t t, const uint8_t *p, int64_t n) {
  size_t es = onnx_elem_size(t);
  /* Same layout in the IR: one copy (the common case, and the only one for big weights). */
  if (es == wf_dtype_size(o->dtype) && t != OX_BOOL && t != OX_UINT32 && t != OX_UINT64) {
    memcpy(o->data, p, (size_t)n * es);
    return 0;
  }
  for (int64_t i = 0; i < n; i++)
    if (store_raw(o, i, t, p + (size_t)i * es)) return -1;
  return 0;
}

static const char *ext_value(const Onnx__TensorProto *tp, const char *key) {
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    if (e && e->key && strcmp(e->key, key) == 0) return e->value ? e->value : "";
  }
  return NULL;
}

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < 0) return -1;
  *out = v;
  return 0;
}

/* Reads `bytes` bytes at `offset` of the external file into *bufp (malloc'd once the file is
 * known to hold them, so a corrupt length cannot ask for absurd memory). */
static int read_external(const Onnx__TensorProto *tp, const char *base_dir, wf_loc where,
                         const char *tname, void **bufp, size_t bytes) {
  void *buf = NULL;
  const char *loc = ext_value(tp, "location"), *off_s = ext_value(tp, "offset"),
             *len_s = ext_value(tp, "length");
  int64_t offset = 0, length = (int64_t)bytes;
  if (!loc || !*loc) {
    wf_error(where, "tensor '%s' has external data without a 'location'", tname);
    return -1;
  }
  if ((off_s && parse_i64(off_s, &offset)) || (len_s && parse_i64(len_s, &length))) {
    wf_error(where, "tensor '%s': external data offset '%s' / length '%s' are not non-negative integers",
             tname, off_s ? off_s : "", len_s ? len_s : "");
    return -1;
  }
  if ((uint64_t)length != bytes) {
    wf_error(where, "tensor '%s': external data length %lld does not match its shape and type (%zu bytes)",
             tname, (long long)length, bytes);
    return -1;
  }
  if (!base_dir) {
    wf_error(where, "tensor '%s' refers to external data '%s', which is not allowed here", tname, loc);
    return -1;
  }
  size_t n = strlen(base_dir) + strlen(loc) + 2;
  char *full = malloc(n);
  WF_ASSERT(full);
  if (loc[0] == '/') snprintf(full, n, "%s", loc);
  else snprintf(full, n, "%s/%s", base_dir, loc);
  int fd = open(full, O_RDONLY);
  struct stat st;
  int rc = -1;
  if (fd < 0 || fstat(fd, &st) != 0) {
    wf_error(where, "tensor '%s': cannot open external data '%s': %s", tname, full, strerror(errno));
  } else if ((uint64_t)st.st_size < (uint64_t)offset + bytes) {
    wf_error(where, "tensor '%s' needs %zu bytes at offset %lld of '%s', but the file has %lld bytes",
             tname, bytes, (long long)offset, full, (long long)st.st_size);
  } else if (!(buf = malloc(bytes ? bytes : 1))) {
    wf_error(where, "tensor '%s': out of memory for %zu bytes", tname, bytes);
  } else {
    size_t done = 0;
    while (done < bytes) {
      ssize_t k = pread(fd, (char *)buf + done, bytes - done, (off_t)(offset + (int64_t)done));
      if (k <= 0) break;
      done += (size_t)k;
    }
    if (done == bytes) rc = 0;
    else wf_error(where, "tensor '%s': cannot read external data '%s': %s", tname, full, strerror(errno));
  }
  if (fd >= 0) close(fd);
  free(full);
  if (rc) free(buf);
  else *bufp = buf;
  return rc;
}

int64_t ox_int_at(const wf_tensor *k, int64_t i) {
  switch (k->dtype) {
  case WF_I64: return ((const int64_t *)k->data)[i];
  case WF_I32: return ((const int32_t *)k->data)[i];
  default: {
    double d = wf_tensor_get(k, i);
    if (!(d == d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

wf_tensor *ox_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, wf_loc where) {
  const char *tname = tp->name && *tp->name ? tp->name : "<unnamed>";
  int32_t t = tp->has_data_type ? tp->data_type : 0;
  wf_dtype dt;
  if (ox_dtype_from_onnx(t, &dt, NULL) != 0) {
    wf_error(where, "tensor '%s' has element type %s, which waferc does not support", tname,
             ox_onnx_type_name(t));
    return NULL;
  }
  if (tp->n_dims > WF_MAX_RANK) {
    wf_error(where, "tensor '%s' has rank %zu (at most %d supported)", tname, tp->n_dims, WF_MAX_RANK);
    return NULL;
  }
  int64_t dims[WF_MAX_RANK], numel = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    dims[i] = tp->dims[i];
    if (dims[i] < 0 || (dims[i] > 0 && numel > (INT64_MAX / 16) / dims[i])) {
      wf_error(where, "tensor '%s' has an invalid dimension %lld", tname, (long long)dims[i]);
      return NULL;
    }
    numel *= dims[i];
  }
  if (tp->segment) {
    wf_error(where, "tensor '%s' is segmented, which waferc does not support", tname);
    return NULL;
  }
  size_t es = onnx_elem_size(t);
  size_t raw_bytes = (size_t)numel * es;
  wf_tensor *o = NULL;
  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    void *buf = NULL;
    if (read_external(tp, base_dir, where, tname, &buf, raw_bytes) != 0) return NULL;
    o = wf_tensor_new(dt, (int)tp->n_dims, dims);
    int bad = store_raw_all(o, t, buf, numel);
    free(buf);
    if (bad) goto bad_value;
    return o;
  }
  if (tp->has_raw_data) {
    if (tp->raw_data.len != raw_bytes) {
      wf_error(where, "tensor '%s' has %zu bytes of raw data but its shape and type need %zu", tname,
               tp->raw_data.len, raw_bytes);
      return NULL;
    }
    o = wf_tensor_new(dt, (int)tp->n_dims, dims);
    if (store_raw_all(o, t, tp->raw_data.data, numel)) goto bad_value;
    return o;
  }
  /* Typed fields: which one holds the data depends on the type (onnx.proto). */
  size_t have;
  switch (t) {
  case OX_FLOAT: have = tp->n_float_data; break;
  case OX_DOUBLE: have = tp->n_double_data; break;
  case OX_INT64: have = tp->n_int64_data; break;
  case OX_UINT32: case OX_UINT64: have = tp->n_uint64_data; break;
  default: have = tp->n_int32_data; break; /* int32, int16, int8, uint16, uint8, bool, f16, bf16 */
  }
  if (have != (size_t)numel) {
    wf_error(where, "tensor '%s' holds %zu elements but its shape %s needs %lld", tname, have,
             tp->n_dims ? "" : "(a scalar)", (long long)numel);
    return NULL;
  }
  o = wf_tensor_new(dt, (int)tp->n_dims, dims);
  for (int64_t i = 0; i < numel; i++) {
    switch (t) {
    case OX_FLOAT: ((float *)o->data)[i] = tp->float_data[i]; break;
    case OX_DOUBLE: ((float *)o->data)[i] = (float)tp->double_data[i]; break;
    case OX_INT64: ((int64_t *)o->data)[i] = tp->int64_data[i]; break;
    case OX_UINT32: case OX_UINT64:
      if (tp->uint64_data[i] > (uint64_t)INT64_MAX) goto bad_value;
      ((int64_t *)o->data)[i] = (int64_t)tp->uint64_data[i];
      break;
    case OX_FLOAT16: case OX_BFLOAT16: ((uint16_t *)o->data)[i] = (uint16_t)tp->int32_data[i]; break;
    case OX_BOOL: ((uint8_t *)o->data)[i] = tp->int32_data[i] != 0; break;
    default: ((int32_t *)o->data)[i] = tp->int32_data[i]; break;
    }
  }
  return o;
bad_value:
  wf_error(where, "tensor '%s' holds a %s value outside the range waferc can represent", tname,
           ox_onnx_type_name(t));
  wf_tensor_free(o);
  return NULL;
}

wf_tensor *wf_onnx_read_tensor(const char *path) {
  int rc;
  Onnx__TensorProto *tp = ox_unpack_file(path, &onnx__tensor_proto__descriptor, &rc);
  if (!tp) return NULL;
  char *dir = strdup(path);
  WF_ASSERT(dir);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else strcpy(dir, ".");
  wf_tensor *t = ox_tensor_from_proto(tp, dir, wf_loc_make(path, 0, 0));
  free(dir);
  protobuf_c_message_free_unpacked(&tp->base, NULL);
  return t;
}
