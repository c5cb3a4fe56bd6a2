/* File-system helpers: the manager's dump directory, the tools' output files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/support/fsutil.h"
#include "waferc/diag.h"

int wf_mkdir_p(const char *path) {
  size_t n = strlen(path);
  char *buf = malloc(n + 1);
  WF_ASSERT(buf);
  memcpy(buf, path, n + 1);
  /* Create each prefix ending at a '/', then the whole path; existing directories are fine. */
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    struct stat st;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
      wf_error_at(path, "cannot create directory '%s': %s", buf, strerror(errno));
      free(buf);
      return 1;
    }
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
      wf_error_at(path, "cannot create directory: '%s' exists and is not a directory", buf);
      free(buf);
      return 1;
    }
    buf[i] = saved;
  }
  free(buf);
  return 0;
}

int wf_write_text_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot open for writing: %s", strerror(errno));
    return 1;
  }
  size_t n = strlen(text);
  int bad = fwrite(text, 1, n, f) != n;
  bad |= fclose(f) != 0;
  if (bad) {
    wf_error_at(path, "cannot write: %s", strerror(errno));
    return 1;
  }
  return 0;
}

char *wf_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  WF_ASSERT(buf);
  for (;;) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      WF_ASSERT(buf);
    }
  }
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (err) {
    free(buf);
    errno = err;
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

char *wf_path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  int slash = a > 0 && dir[a - 1] != '/';
  char *p = malloc(a + b + 2);
  WF_ASSERT(p);
  memcpy(p, dir, a);
  if (slash) p[a] = '/';
  memcpy(p + a + slash, name, b + 1);
  return p;
}
