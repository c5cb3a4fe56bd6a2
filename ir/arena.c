/* Bump-pointer arena: IR memory is freed as a whole with its module (or a pass's scratch). */
#include <stdlib.h>
#include <string.h>

#include "waferc/ir.h"

typedef struct arena_block {
  struct arena_block *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} arena_block;

struct wf_arena {
  arena_block *head;
  size_t bytes;
};

enum { WF_ARENA_BLOCK = 64 * 1024 };

static arena_block *block_new(size_t size) {
  arena_block *b = malloc(sizeof *b + size);
  if (!b) wf_internal_error(__FILE__, __LINE__, "out of memory allocating %zu bytes", size);
  b->next = NULL;
  b->size = size;
  b->used = 0;
  return b;
}

wf_arena *wf_arena_new(void) {
  wf_arena *a = calloc(1, sizeof *a);
  if (!a) wf_internal_error(__FILE__, __LINE__, "out of memory");
  a->head = block_new(WF_ARENA_BLOCK);
  return a;
}

void wf_arena_free(wf_arena *a) {
  if (!a) return;
  for (arena_block *b = a->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  free(a);
}

void wf_arena_reset(wf_arena *a) {
  arena_block *keep = a->head;
  while (keep->next) keep = keep->next; /* the oldest block is a standard-size one */
  for (arena_block *b = a->head, *n; b != keep; b = n) {
    n = b->next;
    free(b);
  }
  keep->used = 0;
  a->head = keep;
  a->bytes = 0;
}

void *wf_arena_alloc(wf_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  arena_block *b = a->head;
  if (b->size - b->used < size) {
    size_t bs = size > WF_ARENA_BLOCK / 4 ? size : WF_ARENA_BLOCK;
    b = block_new(bs);
    if (bs == size && a->head) {
      /* a large allocation gets its own block behind the current one, keeping its free space */
      b->next = a->head->next;
      a->head->next = b;
    } else {
      b->next = a->head;
      a->head = b;
    }
  }
  void *p = b->data + b->used;
  b->used += size;
  a->bytes += size;
  memset(p, 0, size);
  return p;
}

void *wf_arena_dup(wf_arena *a, const void *p, size_t size) {
  void *q = wf_arena_alloc(a, size);
  if (size) memcpy(q, p, size);
  return q;
}

char *wf_arena_strdup(wf_arena *a, const char *s) { return wf_arena_dup(a, s, strlen(s) + 1); }

size_t wf_arena_bytes(const wf_arena *a) { return a->bytes; }
