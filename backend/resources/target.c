/* Target presets: `key = value` text files (docs/targets.md), searched on a path.
 *
 * Every key of wf_target is required but bank_conflict_cycles (0 = not modelled, the
 * default), so a preset can never silently inherit a default that belongs to another device. */
#include "waferc/target.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/keyfile.h"
#include "waferc/diag.h"

#ifndef WF_BUILD_TARGET_DIR
#define WF_BUILD_TARGET_DIR ""
#endif
#ifndef WF_INSTALL_TARGET_DIR
#define WF_INSTALL_TARGET_DIR ""
#endif

typedef enum { K_STR, K_INT, K_I64, K_DOUBLE, K_PAIR, K_COLORSET } key_kind;

typedef struct {
  const char *key;
  key_kind kind;
  size_t off;  /* offset of the (first) field */
  size_t off2; /* K_PAIR: offset of the second int */
  size_t cap;  /* K_STR: buffer size */
  long min;    /* numeric lower bound */
} key_spec;

#define F(field) offsetof(wf_target, field)
static const key_spec keys[] = {
    {"name", K_STR, F(name), 0, sizeof(((wf_target *)0)->name), 0},
    {"description", K_STR, F(description), 0, sizeof(((wf_target *)0)->description), 0},
    {"fabric", K_PAIR, F(fabric_w), F(fabric_h), 0, 1},
    {"program", K_PAIR, F(program_w), F(program_h), 0, 1},
    {"default_mesh", K_PAIR, F(mesh_w), F(mesh_h), 0, 1},
    {"sram_bytes", K_I64, F(sram_bytes), 0, 0, 1},
    {"sram_banks", K_INT, F(sram_banks), 0, 0, 1},
    {"clock_hz", K_DOUBLE, F(clock_hz), 0, 0, 1},
    {"fmac_per_cycle", K_INT, F(fmac_per_cycle), 0, 0, 1},
    {"fp16_simd", K_INT, F(fp16_simd), 0, 0, 1},
    {"wavelet_bits", K_INT, F(wavelet_bits), 0, 0, 1},
    {"hop_cycles", K_INT, F(hop_cycles), 0, 0, 1},
    {"ramp_cycles", K_INT, F(ramp_cycles), 0, 0, 0},
    {"colors", K_INT, F(colors), 0, 0, 1},
    {"reserved_colors", K_COLORSET, F(reserved_colors), 0, 0, 0},
    {"switch_positions", K_INT, F(switch_positions), 0, 0, 1},
    {"route_code_bits", K_INT, F(route_code_bits), 0, 0, 1},
    {"queue_depth", K_INT, F(queue_depth), 0, 0, 1},
    {"exp_cycles", K_INT, F(exp_cycles), 0, 0, 1},
    {"div_cycles", K_INT, F(div_cycles), 0, 0, 1},
    {"bank_conflict_cycles", K_INT, F(bank_conflict_cycles), 0, 0, 0},
};
#undef F
enum { N_KEYS = sizeof keys / sizeof keys[0] };

static int parse_pair(const char *v, int *a, int *b) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || (*end != 'x' && *end != 'X') || x <= 0 || x > INT_MAX || errno) return -1;
  const char *p = end + 1;
  long y = strtol(p, &end, 10);
  if (end == p || *end || y <= 0 || y > INT_MAX || errno) return -1;
  *a = (int)x;
  *b = (int)y;
  return 0;
}

/* "21,22,23" or "none"; colors must be < WF_MAX_COLORS. */
static int parse_colorset(const char *v, uint32_t *out) {
  *out = 0;
  if (!strcmp(v, "none") || !*v) return 0;
  const char *p = v;
  for (;;) {
    char *end;
    long c = strtol(p, &end, 10);
    if (end == p || c < 0 || c >= WF_MAX_COLORS) return -1;
    *out |= 1u << c;
    while (isspace((unsigned char)*end)) end++;
    if (!*end) return 0;
    if (*end != ',') return -1;
    p = end + 1;
  }
}

static int set_key(wf_target *t, const key_spec *k, const char *v) {
  char *base = (char *)t;
  char *end;
  errno = 0;
  switch (k->kind) {
    case K_STR:
      if (strlen(v) >= k->cap) return -1;
      strcpy(base + k->off, v);
      return 0;
    case K_INT: {
      long x = strtol(v, &end, 10);
      if (end == v || *end || errno || x < k->min || x > INT_MAX) return -1;
      *(int *)(base + k->off) = (int)x;
      return 0;
    }
    case K_I64: {
      long long x = strtoll(v, &end, 10);
      if (end == v || *end || errno || x < k->min) return -1;
      *(int64_t *)(base + k->off) = x;
      return 0;
    }
    case K_DOUBLE: {
      double x = strtod(v, &end);
      if (end == v || *end || errno || !(x >= (double)k->min)) return -1;
      *(double *)(base + k->off) = x;
      return 0;
    }
    case K_PAIR:
      return parse_pair(v, (int *)(base + k->off), (int *)(base + k->off2));
    case K_COLORSET:
      return parse_colorset(v, (uint32_t *)(base + k->off));
  }
  return -1;
}

static const char *kind_text(key_kind k) {
  switch (k) {
    case K_STR: return "a string";
    case K_INT: case K_I64: return "an integer";
    case K_DOUBLE: return "a number";
    case K_PAIR: return "WxH";
    case K_COLORSET: return "a comma-separated color list or 'none'";
  }
  return "?";
}

/* Keys added after the first presets; a file without them gets 0. */
static int optional_key(const char *key) { return !strcmp(key, "bank_conflict_cycles"); }

static int parse_target_file(const char *path, FILE *f, wf_target *t) {
  memset(t, 0, sizeof *t);
  int seen[N_KEYS] = {0};
  int errors = 0;
  wf_keyline kl = {.line = 0};
  while (wf_keyfile_next(f, path, &kl, &errors)) {
    const char *key = kl.key, *val = kl.val;
    unsigned lineno = kl.line, col = kl.col, vcol = kl.vcol;
    const key_spec *k = NULL;
    for (int i = 0; i < N_KEYS; i++)
      if (!strcmp(keys[i].key, key)) k = &keys[i];
    if (!k) {
      wf_error(wf_loc_make(path, lineno, col), "unknown target key '%s'", key);
      errors++;
      continue;
    }
    if (set_key(t, k, val) != 0) {
      wf_error(wf_loc_make(path, lineno, vcol), "bad value '%s' for '%s': expected %s", val, key,
               kind_text(k->kind));
      errors++;
      continue;
    }
    seen[k - keys] = 1;
  }
  char missing[512] = "";
  for (int i = 0; i < N_KEYS; i++) {
    if (seen[i] || optional_key(keys[i].key)) continue;
    size_t n = strlen(missing);
    snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", keys[i].key);
  }
  if (*missing) {
    wf_error_at(path, "missing target keys: %s", missing);
    errors++;
  }
  if (errors) return -1;
  if (t->program_w > t->fabric_w || t->program_h > t->fabric_h) {
    wf_error_at(path, "program rectangle %dx%d exceeds the fabric %dx%d", t->program_w,
                t->program_h, t->fabric_w, t->fabric_h);
    return -1;
  }
  if (t->mesh_w > t->program_w || t->mesh_h > t->program_h) {
    wf_error_at(path, "default_mesh %dx%d exceeds the program rectangle %dx%d", t->mesh_w,
                t->mesh_h, t->program_w, t->program_h);
    return -1;
  }
  if (t->colors > WF_MAX_COLORS || (t->colors < WF_MAX_COLORS && (t->reserved_colors >> t->colors))) {
    wf_error_at(path, "colors must be <= %d and reserved colors below 'colors'", WF_MAX_COLORS);
    return -1;
  }
  /* A buffer's capacity counts the wavelets still travelling to it (docs/cycle-model.md,
   * "Buffers"), so a link whose latency is L cycles streams one wavelet a cycle only when a
   * buffer holds L + 1; with fewer it carries queue_depth per L cycles, and the cost model,
   * which takes one a cycle, predicts link-bound plans short (measured on a copy of
   * dojo.target, 16-cycle hops: 1.88x the predicted cycles at 8, 1.05x at 16, equal from 17). */
  int lat = t->hop_cycles > t->ramp_cycles ? t->hop_cycles : t->ramp_cycles;
  if (t->queue_depth < lat + 1)
    wf_warning(WF_LOC_NONE,
               "%s: queue_depth = %d is below %d, what a buffer must hold to keep a %d-cycle hop or ramp streaming: "
               "they carry %d wavelets per %d cycles, not one a cycle, and link-bound plans run slower than "
               "predicted (raise queue_depth to %d or more)",
               path, t->queue_depth, lat + 1, lat, t->queue_depth, lat, lat + 1);
  return 0;
}

/* The search path, in order: each entry of $WAFERC_TARGET_PATH, then the build's and the
 * installed targets/ directories. Returns the number of entries written to dirs. */
static int search_dirs(const char *dirs[], int max, char *buf, size_t cap) {
  int n = 0;
  const char *env = getenv("WAFERC_TARGET_PATH");
  if (env && *env) {
    snprintf(buf, cap, "%s", env);
    for (char *tok = strtok(buf, ":"); tok && n < max - 2; tok = strtok(NULL, ":"))
      if (*tok) dirs[n++] = tok;
  }
  if (*WF_BUILD_TARGET_DIR) dirs[n++] = WF_BUILD_TARGET_DIR;
  if (*WF_INSTALL_TARGET_DIR) dirs[n++] = WF_INSTALL_TARGET_DIR;
  return n;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* Writes the preset names of all search dirs into a comma-separated list. */
static void collect_names(char *out, size_t cap, FILE *stream) {
  const char *dirs[64];
  char buf[4096];
  int n = search_dirs(dirs, 64, buf, sizeof buf);
  char seen[2048] = ",";
  if (out) *out = 0;
  for (int i = 0; i < n; i++) {
    struct dirent **ents;
    int k = scandir(dirs[i], &ents, NULL, alphasort);
    if (k < 0) continue;
    for (int j = 0; j < k; j++) {
      const char *nm = ents[j]->d_name;
      if (ends_with(nm, ".target") && nm[0] != '.') {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(nm) - 7), nm);
        char key[260];
        snprintf(key, sizeof key, ",%s,", name);
        if (!strstr(seen, key) && strlen(seen) + strlen(name) + 2 < sizeof seen) {
          strcat(seen, name);
          strcat(seen, ",");
          if (out) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%s", len ? ", " : "", name);
          }
          if (stream) fprintf(stream, "%s\n", name);
        }
      }
      free(ents[j]);
    }
    free(ents);
  }
}

int wf_target_load(const char *name_or_path, wf_target *out) {
  char path[4096];
  FILE *f = NULL;
  if (strchr(name_or_path, '/') || ends_with(name_or_path, ".target")) {
    snprintf(path, sizeof path, "%s", name_or_path);
    f = fopen(path, "r");
    if (!f) {
      wf_error_at(name_or_path, "cannot open target file: %s", strerror(errno));
      return -1;
    }
  } else {
    const char *dirs[64];
    char buf[4096];
    int n = search_dirs(dirs, 64, buf, sizeof buf);
    for (int i = 0; i < n && !f; i++) {
      snprintf(path, sizeof path, "%s/%s.target", dirs[i], name_or_path);
      f = fopen(path, "r");
    }
    if (!f) {
      char names[2048];
      collect_names(names, sizeof names, NULL);
      wf_error_at("target", "unknown target '%s'; available presets: %s", name_or_path,
                  *names ? names : "(none found; set WAFERC_TARGET_PATH)");
      return -1;
    }
  }
  int rc = parse_target_file(path, f, out);
  fclose(f);
  return rc;
}

int wf_target_parse(const char *text, size_t len, const char *name_for_errors, wf_target *out) {
  /* The same reader as a file's: a stream over the bytes (fmemopen cannot open 0 bytes). */
  FILE *f = len ? fmemopen((void *)text, len, "r") : fopen("/dev/null", "r");
  if (!f) {
    wf_error_at(name_for_errors, "cannot read target text: %s", strerror(errno));
    return -1;
  }
  int rc = parse_target_file(name_for_errors, f, out);
  fclose(f);
  return rc;
}

int wf_target_set_mesh(wf_target *t, const char *mesh) {
  int w, h;
  if (parse_pair(mesh, &w, &h) != 0) {
    wf_error_at("mesh", "bad mesh '%s': expected WxH with positive integers, e.g. 4x4", mesh);
    return -1;
  }
  if (w > t->program_w || h > t->program_h) {
    wf_error_at("mesh", "mesh %dx%d does not fit the %s program rectangle %dx%d", w, h, t->name,
                t->program_w, t->program_h);
    return -1;
  }
  t->mesh_w = w;
  t->mesh_h = h;
  return 0;
}

void wf_target_list(void *out) { collect_names(NULL, 0, (FILE *)out); }

int wf_target_usable_colors(const wf_target *t) {
  int n = 0;
  for (int c = 0; c < t->colors; c++)
    if (!(t->reserved_colors >> c & 1)) n++;
  return n;
}
