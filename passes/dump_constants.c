/* DIR/constants.bin for --dump-dir (passes/dump_constants.h). A constant usually survives
 * every pass unchanged, so each distinct byte string is stored once: a hash finds candidates
 * and the bytes already in the file confirm them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/fsutil.h"
#include "passes/dump_constants.h"

typedef struct stored {
  uint64_t hash;
  size_t bytes;
  int64_t offset;
} stored;

struct wf_const_store {
  FILE *f;
  char *path;
  int64_t end;   /* bytes written so far */
  stored *v;
  size_t n, cap;
  int failed;    /* a write failed: reported once, the printer falls back to dense<elided> */
};

static uint64_t fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

static void fail(wf_const_store *s) {
  if (!s->failed) wf_error_at(s->path, "cannot write the dump's constants: %s", strerror(errno));
  s->failed = 1;
}

/* Are the `n` bytes at `offset` of the file equal to `data`? */
static int same_bytes(wf_const_store *s, int64_t offset, const void *data, size_t n) {
  char buf[4096];
  if (fseek(s->f, (long)offset, SEEK_SET) != 0) return 0;
  for (size_t done = 0; done < n;) {
    size_t k = n - done < sizeof buf ? n - done : sizeof buf;
    if (fread(buf, 1, k, s->f) != k || memcmp(buf, (const char *)data + done, k) != 0) return 0;
    done += k;
  }
  return 1;
}

static int64_t put(void *user, const void *data, size_t bytes) {
  wf_const_store *s = user;
  if (s->failed) return -1;
  if (!s->f && !(s->f = fopen(s->path, "w+b"))) { /* created by the first elided constant */
    fail(s);
    return -1;
  }
  uint64_t h = fnv1a(data, bytes);
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].hash == h && s->v[i].bytes == bytes && same_bytes(s, s->v[i].offset, data, bytes))
      return s->v[i].offset;
  if (fseek(s->f, (long)s->end, SEEK_SET) != 0 || fwrite(data, 1, bytes, s->f) != bytes || fflush(s->f) != 0) {
    fail(s);
    return -1;
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    WF_ASSERT(s->v != NULL);
  }
  s->v[s->n++] = (stored){h, bytes, s->end};
  s->end += (int64_t)bytes;
  return s->end - (int64_t)bytes;
}

wf_const_store *wf_const_store_open(const char *dir) {
  wf_const_store *s = calloc(1, sizeof *s);
  WF_ASSERT(s != NULL);
  s->path = wf_path_join(dir, WF_DUMP_CONSTANTS_FILE);
  /* One from an earlier run would outlive the dumps that referred to it. */
  if (remove(s->path) != 0 && errno != ENOENT) {
    wf_error_at(s->path, "cannot remove the previous run's constants: %s", strerror(errno));
    free(s->path);
    free(s);
    return NULL;
  }
  return s;
}

wf_print_opts wf_const_store_print_opts(wf_const_store *s, const wf_print_opts *base) {
  wf_print_opts o = *base;
  o.store = put;
  o.store_user = s;
  o.store_file = WF_DUMP_CONSTANTS_FILE;
  return o;
}

int wf_const_store_close(wf_const_store *s) {
  if (!s) return 0;
  if (s->f && fclose(s->f) != 0) fail(s);
  int rc = s->failed;
  free(s->v);
  free(s->path);
  free(s);
  return rc;
}
