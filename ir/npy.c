/* .npy files (numpy's format, NEP 1): read v1.0 / v2.0 / v3.0, write v1.0.
 *
 * Read dtypes: '<f4' '<f2' '<i4' '<i8' '|b1' ('<b1' too), and '<f8', which is converted to
 * f32 (waferc has no f64; the rounding is to nearest). '|u1'/'|i1' and big-endian data are
 * rejected with a message naming the descr. Fortran order is rejected.
 * Write: every dtype maps to its own descr, except bf16, which numpy lacks: it is written as
 * '<f4' (exact, since every bf16 is an f32), so numpy users read the values directly.
 * Every failure is reported as `path: error: ...` and never crashes on truncated input. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/tensor.h"

#define NPY_MAGIC "\x93NUMPY"

typedef struct npy_header {
  char descr[16];
  int fortran;
  int rank;
  int64_t dims[WF_MAX_RANK];
} npy_header;

/* Reports `path: error: ...` with the path as the location's file, so diagnostic sinks see
 * which file is meant. */
__attribute__((format(printf, 2, 3))) static void npy_error(const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf_verror(WF_SEV_ERROR, wf_loc_make(path, 0, 0), fmt, ap);
  va_end(ap);
}

static const char *skip_ws(const char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

/* Finds the value following 'key': in the header dict; NULL if absent. */
static const char *find_key(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) {
    snprintf(pat, sizeof pat, "\"%s\"", key);
    p = strstr(h, pat);
  }
  if (!p) return NULL;
  p = skip_ws(p + strlen(pat));
  if (*p != ':') return NULL;
  return skip_ws(p + 1);
}

/* Parses the header dict; returns NULL on success or a description of what is wrong. */
static const char *parse_header(const char *h, npy_header *out) {
  memset(out, 0, sizeof *out);
  const char *p = find_key(h, "descr");
  if (!p) return "header has no 'descr'";
  char q = *p;
  if (q != '\'' && q != '"') return "'descr' is not a string (structured dtypes are not supported)";
  p++;
  size_t n = 0;
  while (p[n] && p[n] != q) n++;
  if (!p[n] || n >= sizeof out->descr) return "malformed 'descr'";
  memcpy(out->descr, p, n);
  out->descr[n] = 0;

  p = find_key(h, "fortran_order");
  if (!p) return "header has no 'fortran_order'";
  if (strncmp(p, "True", 4) == 0) out->fortran = 1;
  else if (strncmp(p, "False", 5) != 0) return "malformed 'fortran_order'";

  p = find_key(h, "shape");
  if (!p) return "header has no 'shape'";
  if (*p != '(') return "malformed 'shape'";
  p = skip_ws(p + 1);
  while (*p != ')') {
    if (!isdigit((unsigned char)*p)) return "malformed 'shape'";
    if (out->rank >= WF_MAX_RANK) return "rank above 8 is not supported";
    errno = 0;
    char *end;
    long long d = strtoll(p, &end, 10);
    if (errno || d < 0) return "shape dimension out of range";
    out->dims[out->rank++] = d;
    p = skip_ws(end);
    if (*p == 'L') p = skip_ws(p + 1); /* python 2 longs */
    if (*p == ',') p = skip_ws(p + 1);
    else if (*p != ')') return "malformed 'shape'";
  }
  return NULL;
}

typedef enum { CONV_NONE, CONV_F64_TO_F32 } npy_conv;

static int descr_dtype(const char *d, wf_dtype *dt, npy_conv *conv, size_t *elem) {
  *conv = CONV_NONE;
  if (!strcmp(d, "<f4")) *dt = WF_F32;
  else if (!strcmp(d, "<f2")) *dt = WF_F16;
  else if (!strcmp(d, "<i4")) *dt = WF_I32;
  else if (!strcmp(d, "<i8")) *dt = WF_I64;
  else if (!strcmp(d, "|b1") || !strcmp(d, "<b1")) *dt = WF_BOOL;
  else if (!strcmp(d, "<f8")) {
    *dt = WF_F32;
    *conv = CONV_F64_TO_F32;
    *elem = 8;
    return 0;
  } else return -1;
  *elem = wf_dtype_size(*dt);
  return 0;
}

static uint32_t rd_le(const unsigned char *p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

wf_tensor *wf_npy_read(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    npy_error(path, "cannot open: %s", strerror(errno));
    return NULL;
  }
  wf_tensor *t = NULL;
  char *hdr = NULL;
  unsigned char pre[12];
  if (fread(pre, 1, 8, fp) != 8 || memcmp(pre, NPY_MAGIC, 6) != 0) {
    npy_error(path, "not a .npy file (bad magic)");
    goto done;
  }
  int major = pre[6];
  int lensz = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (!lensz) {
    npy_error(path, "unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are read)", major, pre[7]);
    goto done;
  }
  if (fread(pre + 8, 1, (size_t)lensz, fp) != (size_t)lensz) {
    npy_error(path, "truncated .npy header");
    goto done;
  }
  uint32_t hlen = rd_le(pre + 8, lensz);
  if (hlen > (1u << 24)) {
    npy_error(path, "implausible .npy header length %u", hlen);
    goto done;
  }
  hdr = malloc(hlen + 1);
  WF_ASSERT(hdr); /* out of host memory: exit 7 */
  if (fread(hdr, 1, hlen, fp) != hlen) {
    npy_error(path, "truncated .npy header (expected %u bytes)", hlen);
    goto done;
  }
  hdr[hlen] = 0;
  if (memchr(hdr, 0, hlen)) {
    npy_error(path, "corrupt .npy header (NUL byte)");
    goto done;
  }
  npy_header h;
  const char *why = parse_header(hdr, &h);
  if (why) {
    npy_error(path, "bad .npy header: %s", why);
    goto done;
  }
  if (h.fortran) {
    npy_error(path, "fortran_order arrays are not supported; save with C order (np.ascontiguousarray)");
    goto done;
  }
  wf_dtype dt;
  npy_conv conv;
  size_t elem;
  if (descr_dtype(h.descr, &dt, &conv, &elem) != 0) {
    npy_error(path, "unsupported dtype '%s' (supported: <f4 <f2 <i4 <i8 |b1, and <f8 read as f32)",
                h.descr);
    goto done;
  }
  int64_t numel = 1;
  for (int i = 0; i < h.rank; i++) {
    if (h.dims[i] != 0 && numel > INT64_MAX / 16 / h.dims[i]) {
      npy_error(path, "shape too large");
      goto done;
    }
    numel *= h.dims[i];
  }
  size_t want = (size_t)numel * elem;
  /* Check the size before allocating, so a corrupt shape cannot ask for terabytes. */
  long here = ftell(fp);
  if (here >= 0 && fseek(fp, 0, SEEK_END) == 0) {
    long end = ftell(fp);
    if (end >= here && (uint64_t)(end - here) < want) {
      npy_error(path, "truncated data: shape needs %zu bytes, file has %ld", want, end - here);
      goto done;
    }
    fseek(fp, here, SEEK_SET);
  }
  t = wf_tensor_new(dt, h.rank, h.dims);
  if (conv == CONV_NONE) {
    if (fread(t->data, 1, want, fp) != want) {
      npy_error(path, "truncated data: shape needs %zu bytes", want);
      wf_tensor_free(t);
      t = NULL;
      goto done;
    }
    if (dt == WF_BOOL) { /* normalise to 0/1 so bool ops can compare bytes */
      uint8_t *b = t->data;
      for (int64_t i = 0; i < numel; i++) b[i] = b[i] != 0;
    }
  } else {
    float *o = t->data;
    for (int64_t i = 0; i < numel; i++) {
      double d;
      if (fread(&d, 8, 1, fp) != 1) {
        npy_error(path, "truncated data: shape needs %zu bytes", want);
        wf_tensor_free(t);
        t = NULL;
        goto done;
      }
      o[i] = (float)d;
    }
  }
done:
  free(hdr);
  fclose(fp);
  return t;
}

int wf_npy_write(const char *path, const wf_tensor *t) {
  const char *descr;
  switch (t->dtype) {
  case WF_F32: case WF_BF16: descr = "<f4"; break;
  case WF_F16: descr = "<f2"; break;
  case WF_I32: descr = "<i4"; break;
  case WF_I64: descr = "<i8"; break;
  case WF_BOOL: descr = "|b1"; break;
  default: WF_UNREACHABLE("dtype");
  }
  char dict[256], shape[200];
  int n = snprintf(shape, sizeof shape, "(");
  for (int i = 0; i < t->rank; i++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, "%lld%s", (long long)t->dims[i],
                  t->rank == 1 ? "," : (i + 1 < t->rank ? ", " : ""));
  snprintf(shape + n, sizeof shape - (size_t)n, ")");
  int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                    descr, shape);
  /* numpy pads with spaces so the data starts at a multiple of 64 and ends the header in \n. */
  size_t total = 10 + (size_t)dl + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)dl + pad + 1;

  FILE *fp = fopen(path, "wb");
  if (!fp) {
    npy_error(path, "cannot write: %s", strerror(errno));
    return -1;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(dict, 1, (size_t)dl, fp) == (size_t)dl;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', fp) != EOF;
  ok = ok && fputc('\n', fp) != EOF;
  int64_t numel = wf_tensor_numel(t);
  if (ok && t->dtype == WF_BF16) {
    const uint16_t *s = t->data;
    for (int64_t i = 0; ok && i < numel; i++) {
      float f = wf_bf16_to_f32(s[i]);
      ok = fwrite(&f, 4, 1, fp) == 1;
    }
  } else if (ok) {
    size_t bytes = wf_tensor_bytes(t);
    ok = fwrite(t->data, 1, bytes, fp) == bytes;
  }
  if (fclose(fp) != 0) ok = 0;
  if (!ok) {
    npy_error(path, "write failed: %s", strerror(errno));
    return -1;
  }
  return 0;
}
