/* waferc — integer helpers the lowerings and cost models share (block cuts, lcm grids,
 * periods of K cuts, tree depths). */
#ifndef WAFERC_SUPPORT_INTMATH_H
#define WAFERC_SUPPORT_INTMATH_H

#include <stdint.h>

/* Greatest common divisor of a, b >= 0 (gcd(a, 0) = a). */
static inline int64_t wf_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Least common multiple of a, b >= 1. */
static inline int64_t wf_lcm(int64_t a, int64_t b) { return a / wf_gcd(a, b) * b; }

/* Number of bits of x (0 for 0): the levels of a binary tree over x + 1 leaves. */
static inline int wf_bitlen(uint64_t x) {
  int n = 0;
  while (x) { n++; x >>= 1; }
  return n;
}

#endif
