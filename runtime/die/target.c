/* Die-level target files: `key = value` text (docs/moe.md, "Die targets"), the house format of
 * targets/NAME.target with the keys of a mesh of dies. Every key is required, so a preset never
 * inherits a figure that belongs to another system. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/keyfile.h"
#include "runtime/die/die.h"
#include "waferc/diag.h"

typedef enum { K_STR, K_PAIR, K_NUM } kind;
typedef struct {
  const char *key;
  kind k;
  size_t off, off2, cap;
} spec;

#define F(f) offsetof(wf_die_target, f)
static const spec keys[] = {
    {"name", K_STR, F(name), 0, sizeof(((wf_die_target *)0)->name)},
    {"description", K_STR, F(description), 0, sizeof(((wf_die_target *)0)->description)},
    {"dies", K_PAIR, F(dies_w), F(dies_h), 0},
    {"wafers", K_PAIR, F(wafers_w), F(wafers_h), 0},
    {"fp16_flops", K_NUM, F(fp16_flops), 0, 0},
    {"int8_ops", K_NUM, F(int8_ops), 0, 0},
    {"hbm_bytes", K_NUM, F(hbm_bytes), 0, 0},
    {"hbm_bw", K_NUM, F(hbm_bw), 0, 0},
    {"link_bw", K_NUM, F(link_bw), 0, 0},
    {"link_latency", K_NUM, F(link_latency), 0, 0},
    {"border_bw", K_NUM, F(border_bw), 0, 0},
    {"border_latency", K_NUM, F(border_latency), 0, 0},
    /* Optional from here (N_REQUIRED): the core array, which only wafer-dse reads. */
    {"core_array", K_PAIR, F(core_w), F(core_h), 0},
    {"core_sram", K_NUM, F(core_sram), 0, 0},
    {"core_clock", K_NUM, F(core_clock), 0, 0},
};
enum { N_REQUIRED = 12 };
#undef F
enum { N_KEYS = sizeof keys / sizeof keys[0] };

static int set(wf_die_target *t, const spec *k, const char *v) {
  char *base = (char *)t, *end;
  errno = 0;
  if (k->k == K_STR) {
    if (strlen(v) >= k->cap) return -1;
    strcpy(base + k->off, v);
    return 0;
  }
  if (k->k == K_PAIR) {
    long a = strtol(v, &end, 10);
    if (end == v || (*end != 'x' && *end != 'X') || a <= 0 || a > 4096) return -1;
    const char *p = end + 1;
    long b = strtol(p, &end, 10);
    if (end == p || *end || b <= 0 || b > 4096) return -1;
    *(int *)(base + k->off) = (int)a;
    *(int *)(base + k->off2) = (int)b;
    return 0;
  }
  double x = strtod(v, &end);
  /* Latencies may be 0; every bandwidth, rate and capacity must be positive. */
  int may_be_zero = strstr(k->key, "latency") != NULL;
  if (end == v || *end || errno || !(x >= 0) || (!may_be_zero && !(x > 0)) || x > 1e30) return -1;
  *(double *)(base + k->off) = x;
  return 0;
}

static int parse(const char *path, FILE *f, wf_die_target *t) {
  memset(t, 0, sizeof *t);
  int seen[N_KEYS] = {0}, errors = 0;
  wf_keyline kl = {.line = 0};
  while (wf_keyfile_next(f, path, &kl, &errors)) {
    const char *key = kl.key, *val = kl.val;
    unsigned lineno = kl.line, col = kl.col;
    const spec *k = NULL;
    for (int i = 0; i < N_KEYS; i++)
      if (!strcmp(keys[i].key, key)) k = &keys[i];
    if (!k) {
      wf_error(wf_loc_make(path, lineno, col), "unknown die target key '%s' (docs/moe.md lists them)", key);
      errors++;
      continue;
    }
    if (set(t, k, val)) {
      wf_error(wf_loc_make(path, lineno, kl.vcol), "bad value '%s' for '%s': expected %s",
               val, key,
               k->k == K_STR ? "a string" : k->k == K_PAIR ? "WxH" : "a positive number (latencies may be 0)");
      errors++;
      continue;
    }
    seen[k - keys] = 1;
  }
  char missing[512] = "";
  for (int i = 0; i < N_REQUIRED; i++)
    if (!seen[i]) {
      size_t n = strlen(missing);
      snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", keys[i].key);
    }
  if (*missing) {
    wf_error_at(path, "missing die target keys: %s", missing);
    errors++;
  }
  return errors ? WF_EXIT_INPUT : 0;
}

FILE *wf_die_file_open(const char *name, const char *suffix, char *path, size_t cap, int *given) {
  size_t len = strlen(name), sl = strlen(suffix);
  *given = strchr(name, '/') || (len > sl && !strcmp(name + len - sl, suffix));
  if (*given) {
    snprintf(path, cap, "%s", name);
    return fopen(path, "r");
  }
  char buf[4096] = "";
  const char *env = getenv("WAFERC_TARGET_PATH");
  if (env) snprintf(buf, sizeof buf, "%s", env);
  FILE *f = NULL;
  for (char *tok = strtok(buf, ":"); tok && !f; tok = strtok(NULL, ":")) {
    snprintf(path, cap, "%s/%s%s", tok, name, suffix);
    if (!(f = fopen(path, "r"))) snprintf(path, cap, "%s/dies/%s%s", tok, name, suffix), f = fopen(path, "r");
  }
  const char *dirs[] = {WF_DIE_BUILD_TARGET_DIR, WF_DIE_INSTALL_TARGET_DIR};
  for (int i = 0; i < 2 && !f; i++)
    if (*dirs[i]) snprintf(path, cap, "%s/%s%s", dirs[i], name, suffix), f = fopen(path, "r");
  if (!f) snprintf(path, cap, "%s", name);
  return f;
}

int wf_die_target_load(const char *name, wf_die_target *t) {
  char path[4096];
  int given;
  FILE *f = wf_die_file_open(name, ".target", path, sizeof path, &given);
  if (!f && given) {
    wf_error_at(name, "cannot open die target file: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  if (!f) {
    wf_error_at("--target", "unknown die target '%s': no %s.target in $WAFERC_TARGET_PATH or %s (give a path to use "
                "another file)", name, name, *WF_DIE_BUILD_TARGET_DIR ? WF_DIE_BUILD_TARGET_DIR : "targets/dies");
    return WF_EXIT_USAGE;
  }
  int rc = parse(path, f, t);
  fclose(f);
  return rc;
}
