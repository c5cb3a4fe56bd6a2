/* waferrun — binding the plan's inputs (run_io.h): names checked all at once, data read
 * from .npy files or generated for timing studies:
 *
 *   --input x=x.npy         the file's data (shape and dtype must match the plan's)
 *   --input x=random:SEED   uniform in [-1, 1), deterministic in SEED (below); an integer
 *                           input (token ids) uniform over [0, index_bound), the rows of
 *                           the table it indexes (the manifest's index_bound), else
 *                           [0, 2^24); a bool input 0 or 1 with equal odds
 *   --input x=splat:V       every element V (an integer for an integer input)
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_io.h"
#include "waferc/diag.h"

static int find_input(const wf_plan *p, const char *name) {
  for (int k = 0; k < p->n_inputs; k++)
    if (!strcmp(p->inputs[k].name, name)) return k;
  return -1;
}

/* "x, w and b" into buf. */
static void name_list(const wf_plan *p, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < p->n_inputs && n < cap; k++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", k == 0 ? "" : k + 1 == p->n_inputs ? " and " : ", ",
                          p->inputs[k].name);
}

int wf_run_check_input_names(const wf_plan *p, const wf_run_input *in, int n, int need_all) {
  int bad = 0;
  char list[2048];
  name_list(p, list, sizeof list);
  const char **names = calloc((size_t)p->n_inputs + 1, sizeof *names);
  int *bound = calloc((size_t)p->n_inputs + 1, sizeof *bound);
  WF_ASSERT(names && bound);
  for (int k = 0; k < p->n_inputs; k++) names[k] = p->inputs[k].name;
  for (int i = 0; i < n; i++) {
    int k = find_input(p, in[i].name);
    if (k < 0) {
      const char *near = wf_closest_name(in[i].name, names, p->n_inputs);
      if (!p->n_inputs)
        wf_error_at("waferrun", "--input %s: the plan has no inputs", in[i].name);
      else if (near)
        wf_error_at("waferrun", "--input %s: the plan has no input '%s'; did you mean '%s'? (its inputs: %s)",
                    in[i].name, in[i].name, near, list);
      else
        wf_error_at("waferrun", "--input %s: the plan has no input '%s' (its inputs: %s)", in[i].name,
                    in[i].name, list);
      bad = 1;
    } else if (bound[k]++) {
      wf_error_at("waferrun", "--input %s is given twice", in[i].name);
      bad = 1;
    }
  }
  if (need_all) {
    char missing[2048];
    size_t m = 0;
    int n_missing = 0;
    missing[0] = '\0';
    for (int k = 0; k < p->n_inputs; k++)
      if (!bound[k] && m < sizeof missing) {
        m += (size_t)snprintf(missing + m, sizeof missing - m, "%s%s", n_missing ? ", " : "", p->inputs[k].name);
        n_missing++;
      }
    if (n_missing) {
      wf_error_at("waferrun", "%s not bound: %s (give each --input NAME=FILE.npy, or NAME=random:SEED "
                              "or NAME=splat:V; --describe lists the shapes)",
                  n_missing == 1 ? "an input is" : "inputs are", missing);
      bad = 1;
    }
  }
  free(names);
  free(bound);
  return bad ? WF_EXIT_USAGE : 0;
}

/* splitmix64 (Steele, Lea and Flood 2014): a full-period generator whose output is
 * fixed by the seed alone, on every host. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* 1 for a generator spec (*seed or *value set), 0 for a file name, -1 for a bad spec. */
static int parse_generator(const char *spec, int *is_random, uint64_t *seed, double *value) {
  const char *arg;
  if (!strncmp(spec, "random:", 7)) *is_random = 1, arg = spec + 7;
  else if (!strncmp(spec, "splat:", 6)) *is_random = 0, arg = spec + 6;
  else return 0;
  char *end;
  errno = 0;
  if (*is_random) {
    unsigned long long seed_v = strtoull(arg, &end, 10);
    if (!*arg || *end || errno || *arg == '-') return -1;
    *seed = seed_v;
  } else {
    *value = strtod(arg, &end);
    if (!*arg || *end || errno) return -1;
  }
  return 1;
}

int wf_run_check_input_spec(const wf_plan_tensor *t, const char *spec) {
  int is_random;
  double v;
  uint64_t seed;
  int g = parse_generator(spec, &is_random, &seed, &v);
  if (g < 0) {
    wf_error_at("waferrun", "--input %s=%s: expected random:SEED (a non-negative integer) or splat:V "
                            "(a number)", t->name, spec);
    return WF_EXIT_USAGE;
  }
  if (g == 0 && access(spec, R_OK) != 0) {
    wf_error_at(spec, "cannot read --input %s: %s", t->name, strerror(errno));
    return WF_EXIT_IO;
  }
  return 0;
}

wf_tensor *wf_run_make_input(const wf_plan_tensor *t, const char *spec, int *rc) {
  int is_random = 0;
  double v = 0;
  uint64_t state = 0;
  int g = parse_generator(spec, &is_random, &state, &v);
  if (g < 0) {
    wf_error_at("waferrun", "--input %s=%s: expected random:SEED (a non-negative integer) or splat:V "
                            "(a number)", t->name, spec);
    *rc = WF_EXIT_USAGE;
    return NULL;
  }
  if (g == 0) {
    if (access(spec, R_OK) != 0) {
      wf_error_at(spec, "cannot read --input %s: %s", t->name, strerror(errno));
      *rc = WF_EXIT_IO;
      return NULL;
    }
    wf_tensor *x = wf_npy_read(spec);
    if (!x) *rc = WF_EXIT_INPUT;
    return x;
  }
  wf_tensor *x = wf_tensor_new(t->dtype, t->rank, t->dims);
  WF_ASSERT(x);
  int64_t n = wf_tensor_numel(x);
  if (t->dtype == WF_I64 || t->dtype == WF_I32) {
    if (!is_random && v != (double)(int64_t)v) {
      wf_error_at("waferrun", "--input %s=%s: the input is %s: splat needs an integer", t->name, spec,
                  wf_dtype_name(t->dtype));
      wf_tensor_free(x);
      *rc = WF_EXIT_USAGE;
      return NULL;
    }
    uint64_t bound = t->index_bound > 0 ? (uint64_t)t->index_bound : 1u << 24;
    for (int64_t i = 0; i < n; i++) {
      int64_t id = is_random ? (int64_t)(splitmix64(&state) % bound) : (int64_t)v;
      if (t->dtype == WF_I64) ((int64_t *)x->data)[i] = id;
      else ((int32_t *)x->data)[i] = (int32_t)id;
    }
    return x;
  }
  if (t->dtype == WF_BOOL) { /* random: one bit each; splat: V != 0 */
    for (int64_t i = 0; i < n; i++) ((uint8_t *)x->data)[i] = is_random ? (uint8_t)(splitmix64(&state) >> 63) : v != 0.0;
    return x;
  }
  for (int64_t i = 0; i < n; i++) {
    /* 24 random bits: every value is an exact f32, uniform over [-1, 1) in steps of 2^-23 */
    double r = is_random ? (double)(splitmix64(&state) >> 40) * 0x1p-23 - 1.0 : v;
    wf_tensor_set(x, i, r);
  }
  return x;
}
