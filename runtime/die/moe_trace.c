/* Expert-load traces: tokens routed to each expert of one MoE layer, per iteration. A text
 * file format, and a seeded generator with the traits MoEntwine §V-B reports: a warm-up after
 * which a fixed scenario's load ratios settle (popular experts stay popular), and a mixed
 * scenario whose ratios drift as the request mix moves between domains. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/die/moe.h"
#include "waferc/diag.h"

void wf_moe_trace_free(wf_moe_trace *t) {
  free(t->load);
  memset(t, 0, sizeof *t);
}

int wf_moe_trace_read(const char *path, wf_moe_trace *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "r");
  if (!f) {
    wf_error_at(path, "cannot read the expert-load trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  char line[1 << 16];
  unsigned lineno = 0;
  size_t cap = 0;
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      wf_error(wf_loc_make(path, lineno, 1), "line longer than %zu bytes", sizeof line - 1);
      rc = WF_EXIT_INPUT;
      break;
    }
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || !*p) continue;
    if (!strncmp(p, "experts", 7)) {
      char *end;
      long e = strtol(p + 7, &end, 10);
      while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r') end++;
      if (t->experts || e < 1 || e > 65536 || *end) {
        wf_error(wf_loc_make(path, lineno, 1), "expected one 'experts E' line with 1 <= E <= 65536");
        rc = WF_EXIT_INPUT;
        break;
      }
      t->experts = (int)e;
      continue;
    }
    if (!t->experts) {
      wf_error(wf_loc_make(path, lineno, 1), "a load line before the 'experts E' line");
      rc = WF_EXIT_INPUT;
      break;
    }
    if ((size_t)(t->iterations + 1) * t->experts > cap) {
      cap = cap ? cap * 2 : (size_t)t->experts * 64;
      t->load = realloc(t->load, cap * sizeof *t->load);
      WF_ASSERT(t->load != NULL);
    }
    double *row = t->load + (size_t)t->iterations * t->experts;
    for (int e = 0; e < t->experts; e++) {
      char *end;
      errno = 0;
      double v = strtod(p, &end);
      if (end == p || errno || !(v >= 0) || v > 1e15) {
        wf_error(wf_loc_make(path, lineno, (unsigned)(p - line) + 1),
                 "expected %d non-negative loads on the line, found %d", t->experts, e);
        rc = WF_EXIT_INPUT;
        goto out;
      }
      row[e] = v;
      p = end;
    }
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p) {
      wf_error(wf_loc_make(path, lineno, (unsigned)(p - line) + 1), "more than %d loads on the line", t->experts);
      rc = WF_EXIT_INPUT;
      goto out;
    }
    t->iterations++;
  }
  if (!rc && !t->iterations) {
    wf_error_at(path, "no iterations in the trace (expected 'experts E' and load lines; docs/moe.md)");
    rc = WF_EXIT_INPUT;
  }
out:
  fclose(f);
  if (rc) wf_moe_trace_free(t);
  return rc;
}

int wf_moe_trace_write(const char *path, const wf_moe_trace *t) {
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  fprintf(f, "# wafer-moe expert-load trace: tokens per expert of one MoE layer, one line per iteration\n");
  fprintf(f, "experts %d\n", t->experts);
  for (int i = 0; i < t->iterations; i++)
    for (int e = 0; e < t->experts; e++)
      fprintf(f, "%.0f%c", t->load[(size_t)i * t->experts + e], e + 1 == t->experts ? '\n' : ' ');
  if (fclose(f)) {
    wf_error_at(path, "cannot write the trace: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return 0;
}

/* splitmix64: the same trace for the same seed on every machine. */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double uniform(uint64_t *s) { return ((next(s) >> 11) + 0.5) / 9007199254740992.0; }
static double gauss(uint64_t *s) { return sqrt(-2 * log(uniform(s))) * cos(6.283185307179586 * uniform(s)); }

/* Log-normal popularity: a bias shared by every scenario (intrinsically popular experts) and
 * one per scenario (its domain's experts), each half of the variance. */
static void popularity(double *p, int E, const double *common, uint64_t *rng, double skew) {
  double sum = 0;
  for (int e = 0; e < E; e++) sum += p[e] = exp(skew * (common[e] + gauss(rng)) / sqrt(2.0));
  for (int e = 0; e < E; e++) p[e] /= sum;
}

int wf_moe_trace_generate(const char *scenario, int E, int iterations, double tokens, unsigned seed, double skew,
                          wf_moe_trace *t) {
  int mixed = !strcmp(scenario, "mixed");
  if (!mixed && strcmp(scenario, "math")) return -1;
  uint64_t rng = 0x5eed0000ull + seed;
  enum { SCEN = 4 };
  double *common = malloc(sizeof(double) * (size_t)E), *pop = malloc(sizeof(double) * (size_t)E * (SCEN + 1)),
         *p = malloc(sizeof(double) * (size_t)E);
  WF_ASSERT(common && pop && p);
  for (int e = 0; e < E; e++) common[e] = gauss(&rng);
  for (int c = 0; c <= SCEN; c++) popularity(pop + (size_t)c * E, E, common, &rng, skew); /* SCEN: the warm-up's */
  t->experts = E;
  t->iterations = iterations;
  t->load = malloc(sizeof(double) * (size_t)E * iterations);
  WF_ASSERT(t->load != NULL);
  /* Warm-up: the first tenth (at least 5 iterations) moves from another ratio to the
   * scenario's. Mixed: the four scenarios' weights turn over a period of half the trace. */
  int warm = iterations / 10 > 5 ? iterations / 10 : 5;
  double period = iterations / 2.0 > 20 ? iterations / 2.0 : 20;
  for (int i = 0; i < iterations; i++) {
    double w[SCEN] = {1, 0, 0, 0}, ws = 1;
    if (mixed) {
      ws = 0;
      for (int c = 0; c < SCEN; c++) ws += w[c] = 1 + cos(6.283185307179586 * (i / period - c / (double)SCEN));
    }
    double r = i < warm ? (double)i / warm : 1;
    for (int e = 0; e < E; e++) {
      double target = 0;
      for (int c = 0; c < SCEN; c++) target += w[c] / ws * pop[(size_t)c * E + e];
      p[e] = (1 - r) * pop[(size_t)SCEN * E + e] + r * target;
    }
    /* Sampling noise of `tokens` routed picks: normal with the multinomial's variance. */
    for (int e = 0; e < E; e++) {
      double mean = tokens * p[e], v = mean + sqrt(mean * (1 - p[e])) * gauss(&rng);
      t->load[(size_t)i * E + e] = v > 0 ? floor(v + 0.5) : 0;
    }
  }
  free(common);
  free(pop);
  free(p);
  return 0;
}
