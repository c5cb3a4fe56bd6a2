/* Memory layout of the simulator's per-PE state. Every PE and router lives in one slab, one
 * 64-byte aligned block per mesh cell in row-major order: the router, its per-color state,
 * the PE and its input queue headers. FIFO storage is allocated on a buffer's first wavelet,
 * from an arena in cache-line steps. The cycle loop visits PEs and routers in wake order,
 * which is scattered over the mesh; with a step's state in a few neighbouring cache lines
 * (prefetched ahead by the loop, and the slab on huge pages where the kernel allows it), a
 * step costs a few overlapped cache misses instead of one per allocation. Nothing here
 * changes what is simulated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

#define LINE 64
static size_t up(size_t n) { return (n + LINE - 1) & ~(size_t)(LINE - 1); }

static size_t cell_bytes(int nlc) {
  return up(sizeof(wf_router)) + up((size_t)(nlc + 1) * sizeof(wf_rcolor)) + up(sizeof(wf_pe)) +
         up((size_t)(nlc + 1) * sizeof(wf_fifo));
}

/* Arena chunks are huge-page sized and aligned, so that the FIFO storage a scattered walk
 * touches costs as few TLB misses as the slab (on 4 KiB pages a 256x256 mesh's buffers
 * span thousands of pages). */
#define HUGE ((size_t)2 << 20)

static size_t chunk_bytes(const wf_sim *s) {
  size_t need = up((size_t)s->depth * sizeof(wf_wv));
  return need > HUGE ? need : HUGE;
}

/* n bytes of zeroed memory aligned to HUGE, on huge pages where the kernel allows it. */
static char *huge_chunk(size_t n) {
  char *c = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  WF_ASSERT(c != MAP_FAILED);
  size_t lead = (HUGE - (uintptr_t)c % HUGE) % HUGE;
  if (lead) munmap(c, lead);
  munmap(c + lead + n, HUGE - lead);
#ifdef MADV_HUGEPAGE
  madvise(c + lead, n, MADV_HUGEPAGE);
#endif
  return c + lead;
}

/* Storage for one FIFO (queue_depth wavelets), zeroed, from the arena. */
wf_wv *wf_sim_fifo_storage(wf_sim *s) {
  size_t need = up((size_t)s->depth * sizeof(wf_wv));
  if ((size_t)(s->arena_end - s->arena_cur) < need) {
    size_t chunk = chunk_bytes(s);
    char *c = huge_chunk(chunk);
    if (s->n_chunks == s->cap_chunks) {
      s->cap_chunks = s->cap_chunks ? 2 * s->cap_chunks : 16;
      s->chunks = realloc(s->chunks, (size_t)s->cap_chunks * sizeof *s->chunks);
      WF_ASSERT(s->chunks != NULL);
    }
    s->chunks[s->n_chunks++] = c;
    s->arena_cur = c;
    s->arena_end = c + chunk;
  }
  wf_wv *w = (wf_wv *)s->arena_cur;
  s->arena_cur += need;
  return w;
}

void wf_sim_layout(wf_sim *s, const int *cls) {
  size_t cells = (size_t)s->w * (size_t)s->h;
  size_t total = 0;
  int max_nlc = 0;
  for (size_t i = 0; i < cells; i++)
    if (cls[i] >= 0) {
      total += cell_bytes(s->ci[cls[i]].nlc);
      if (s->ci[cls[i]].nlc > max_nlc) max_nlc = s->ci[cls[i]].nlc;
    }
  /* The queue headers the cycle loop prefetches with a PE (capped: a class with many
   * colors rarely uses them all at once). */
  size_t q = up((size_t)(max_nlc + 1) * sizeof(wf_fifo)) / LINE;
  s->pf_q_lines = (int)(q < 2 ? q : 2);
  if (!total) return;
  /* mmap: page-aligned and zeroed; huge pages cut the TLB misses of a scattered walk. */
  void *slab = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  WF_ASSERT(slab != MAP_FAILED);
#ifdef MADV_HUGEPAGE
  madvise(slab, total, MADV_HUGEPAGE);
#endif
  s->slab = slab;
  s->slab_bytes = total;
  char *at = slab;
  for (size_t i = 0; i < cells; i++) {
    if (cls[i] < 0) continue;
    int nlc = s->ci[cls[i]].nlc;
    wf_router *r = (wf_router *)at;
    at += up(sizeof *r);
    r->rc = (wf_rcolor *)at;
    at += up((size_t)(nlc + 1) * sizeof(wf_rcolor));
    wf_pe *p = (wf_pe *)at;
    at += up(sizeof *p);
    p->q = (wf_fifo *)at;
    at += up((size_t)(nlc + 1) * sizeof(wf_fifo));
    p->cls_i = cls[i];
    r->pe = p;
    r->pe_wait = 1;
    p->rt = r;
    p->rrc = r->rc;
    s->pes[i] = p;
    s->routers[i] = r;
  }
  WF_ASSERT((size_t)(at - (char *)slab) == total);
}

/* Frees the slab, the FIFO arena and every PE's memory. */
void wf_sim_unpack_free(wf_sim *s) {
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++)
    if (s->pes[i]) free(s->pes[i]->mem);
  for (int i = 0; i < s->n_chunks; i++) munmap(s->chunks[i], chunk_bytes(s));
  free(s->chunks);
  munmap(s->slab, s->slab_bytes);
  s->slab = NULL;
}
