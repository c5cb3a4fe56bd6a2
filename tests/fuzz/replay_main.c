/* Replays fuzz inputs without libFuzzer (built with the normal compiler, so CI needs no
 * clang): every file named, or found in a directory named, is fed once to the target's
 * LLVMFuzzerTestOneInput (after LLVMFuzzerInitialize, when the target has one). A crash or abort
 * fails the ctest; the last line says how many ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: once, before the first input. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    return -1;
  }
  size_t cap = 4096, n = 0, k;
  uint8_t *buf = malloc(cap);
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return -1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  int ran = 0, bad = 0;
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) {
      fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad |= run_file(argv[i]) != 0;
      ran++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      names = realloc(names, (size_t)(n + 1) * sizeof *names);
      names[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp); /* the same order on every host */
    for (int k = 0; k < n; k++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
      fprintf(stderr, "replay: %s\n", path); /* the input a crash happened on */
      bad |= run_file(path) != 0;
      ran++;
      free(names[k]);
    }
    free(names);
  }
  printf("replay: %d inputs, no crash\n", ran);
  return bad || !ran;
}
