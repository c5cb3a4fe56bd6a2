/* An allocation-failure injector for tests/scripts/alloc_failure.sh, in the spirit of Lua's test
 * allocator: LD_PRELOAD it and the n-th allocation (malloc, calloc, realloc) that waferc's own
 * code makes fails, with errno ENOMEM.
 *
 *   WF_FAIL_ALLOC_AT=n        fail the n-th allocation (1-based); unset: none fails
 *   WF_FAIL_ALLOC_REPORT=1    print "failalloc: N allocations" at exit (N to sweep)
 *   WF_FAIL_ALLOC_TRAP=1      trap at the failing call instead (for a debugger's backtrace)
 *   WF_FAIL_ALLOC_SITES=1     print "failalloc: sites: i1 i2 ..." at exit: for each call site
 *                             (return address) that allocated, the number of its first
 *                             allocation, in order (a sweep of these fails every site once)
 *
 * "Own code" is a caller in libwaferc or in a tool binary named wafer*: allocations inside
 * libc, LLVM, protobuf-c or cJSON are not counted or failed (LLVM aborts on an allocation
 * failure by design), so each n names one allocation of ours. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static long g_at = -2, g_count;
static int g_report, g_sites;
/* WF_FAIL_ALLOC_SITES: the call sites seen (an open-addressing set of return addresses, no
 * allocation of its own) and the number of each one's first allocation, in order. */
enum { SITE_CAP = 1 << 14 };
static void *g_site[SITE_CAP];
static long g_first[SITE_CAP], g_nfirst;
static void note_site(void *ret) {
  size_t h = ((size_t)ret >> 2) * 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < SITE_CAP; i++) {
    size_t j = (h + i) & (SITE_CAP - 1);
    if (g_site[j] == ret) return;
    if (!g_site[j]) {
      if (g_nfirst >= SITE_CAP / 2) return; /* full enough: later sites go unlisted */
      g_site[j] = ret;
      g_first[g_nfirst++] = g_count;
      return;
    }
  }
}
/* The verdicts of ours() by return address, direct-mapped: dladdr for every allocation made
 * LD_PRELOAD a slow start for tools whose libraries allocate much as they load (SimGrid). */
enum { VERDICT_CAP = 1 << 12 };
static struct {
  void *ret;
  int ours;
} g_verdict[VERDICT_CAP];
static int ours_uncached(void *ret);
static int ours(void *ret) {
  size_t j = (((size_t)ret >> 2) * 0x9E3779B97F4A7C15ull) >> 52;
  if (g_verdict[j].ret != ret) {
    g_verdict[j].ours = ours_uncached(ret);
    g_verdict[j].ret = ret;
  }
  return g_verdict[j].ours;
}
static int ours_uncached(void *ret) {
  Dl_info di;
  if (!dladdr(ret, &di) || !di.dli_fname) return 0;
  const char *b = strrchr(di.dli_fname, '/');
  b = b ? b + 1 : di.dli_fname;
  return strstr(di.dli_fname, "libwaferc") || !strncmp(b, "wafer", 5);
}
static int fail_now(void *ret) {
  if (g_at == -2) {
    const char *a = getenv("WF_FAIL_ALLOC_AT"), *r = getenv("WF_FAIL_ALLOC_REPORT");
    g_at = a ? atol(a) : -1;
    g_report = r != NULL;
    g_sites = getenv("WF_FAIL_ALLOC_SITES") != NULL;
  }
  if (!ours(ret)) return 0;
  g_count++;
  if (g_sites) note_site(ret);
  if (g_count == g_at) {
    if (getenv("WF_FAIL_ALLOC_TRAP")) __builtin_trap();
    errno = ENOMEM;
    return 1;
  }
  return 0;
}
void *malloc(size_t n) { return fail_now(__builtin_return_address(0)) ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return fail_now(__builtin_return_address(0)) ? NULL : __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return fail_now(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n); }
__attribute__((destructor)) static void report(void) {
  if (g_report) {
    char b[64];
    int k = snprintf(b, sizeof b, "failalloc: %ld allocations\n", g_count);
    if (write(2, b, (size_t)k) < 0) {}
  }
  if (g_sites) {
    static char b[SITE_CAP / 2 * 12 + 64];
    size_t k = (size_t)snprintf(b, sizeof b, "failalloc: sites:");
    for (long i = 0; i < g_nfirst; i++) k += (size_t)snprintf(b + k, sizeof b - k, " %ld", g_first[i]);
    b[k++] = '\n';
    if (write(2, b, k) < 0) {}
  }
}
