/* Host constants made once: a large constant the importer makes on the host (a ConstantOfShape
 * or a folded op whose results are at least OX_MEMO_MIN_BYTES) is remembered with what made it,
 * and the same op on the same operands later gets the same values back instead of a second
 * copy. Exporters repeat such subgraphs per layer: a LLaMA export builds its [T, T] causal mask
 * (ConstantOfShape, then Trilu) in every layer, 256 MiB of f32 each at T = 8192, so without
 * this a 32-layer model at T = 4096 would pass the import's host budget and copies of one mask
 * would fill the host. The shared values also become one global of the IR.
 *
 * An operand is keyed by identity when it is large (a large constant is itself made once, so
 * equal large operands are the same tensor) and by dtype, shape and bytes when it is small
 * (shape vectors, scalars: each exporter's layer makes its own). The import's constants live
 * until it ends (import.c), so the identities stay valid. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/import_ctx.h"

#define SMALL_BYTES 512 /* operands up to this size are compared by their bytes */
#define OX_MEMO_MIN_BYTES 16384 /* results smaller than this are not remembered */

typedef struct memo_in {
  const wf_tensor *k; /* large operand: identity; NULL when compared by bytes */
  wf_type type;
  const void *bytes;
  size_t nbytes;
} memo_in;

struct ox_memo {
  int code, n_in, n_attr, n_res;
  memo_in *in;
  ox_attrv *attrs;
  wf_type *decl; /* NULL: no declared result types */
  ox_val **out;
};

static int same_attr(const ox_attrv *a, const ox_attrv *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind || a->i != b->i || a->n != b->n) return 0;
  if (memcmp(&a->f, &b->f, sizeof a->f)) return 0; /* bitwise: -0.0 and NaN payloads count */
  if ((a->s == NULL) != (b->s == NULL) || (a->s && strcmp(a->s, b->s))) return 0;
  return a->n == 0 || !memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints);
}

static int same_in(const memo_in *m, const wf_tensor *k) {
  if (m->k) return m->k == k;
  size_t nb = wf_tensor_bytes(k);
  if (nb != m->nbytes || k->dtype != m->type.dtype || k->rank != m->type.rank) return 0;
  if (memcmp(k->dims, m->type.dims, (size_t)k->rank * sizeof *k->dims)) return 0;
  return nb == 0 || !memcmp(k->data, m->bytes, nb);
}

static int matches(const struct ox_memo *m, int code, int n_in, ox_val *const *in, int n_attr,
                   const ox_attrv *attrs, const wf_type *decl, int n_res) {
  if (m->code != code || m->n_in != n_in || m->n_attr != n_attr || m->n_res != n_res) return 0;
  if ((m->decl == NULL) != (decl == NULL)) return 0;
  for (int i = 0; i < n_in; i++)
    if (!same_in(&m->in[i], in[i]->k)) return 0;
  for (int i = 0; i < n_attr; i++)
    if (!same_attr(&m->attrs[i], &attrs[i])) return 0;
  for (int r = 0; decl && r < n_res; r++)
    if (!wf_type_equal(&m->decl[r], &decl[r])) return 0;
  return 1;
}

int ox_memo_find(ox_ctx *cx, int code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                 const wf_type *decl, int n_res, ox_val **out) {
  for (int e = 0; e < cx->n_memo; e++) {
    const struct ox_memo *m = &cx->memo[e];
    if (!matches(m, code, n_in, in, n_attr, attrs, decl, n_res)) continue;
    for (int r = 0; r < n_res; r++) out[r] = m->out[r];
    return 1;
  }
  return 0;
}

void ox_memo_add(ox_ctx *cx, int code, int n_in, ox_val *const *in, int n_attr, const ox_attrv *attrs,
                 const wf_type *decl, int n_res, ox_val *const *out) {
  size_t made = 0;
  for (int r = 0; r < n_res; r++) made += out[r]->k ? wf_tensor_bytes(out[r]->k) : 0;
  if (made < OX_MEMO_MIN_BYTES) return;
  if (cx->n_memo == cx->cap_memo) {
    cx->cap_memo = cx->cap_memo ? 2 * cx->cap_memo : 16;
    cx->memo = realloc(cx->memo, (size_t)cx->cap_memo * sizeof *cx->memo);
    WF_ASSERT(cx->memo); /* out of host memory: exit 7 */
  }
  wf_arena *a = cx->arena;
  struct ox_memo *m = &cx->memo[cx->n_memo++];
  m->code = code, m->n_in = n_in, m->n_attr = n_attr, m->n_res = n_res;
  m->in = wf_arena_alloc(a, (size_t)(n_in ? n_in : 1) * sizeof *m->in);
  for (int i = 0; i < n_in; i++) {
    const wf_tensor *k = in[i]->k;
    size_t nb = wf_tensor_bytes(k);
    memo_in *mi = &m->in[i];
    if (nb > SMALL_BYTES) {
      mi->k = k;
      continue;
    }
    mi->type = wf_type_make(k->dtype, k->rank, k->dims);
    mi->nbytes = nb;
    mi->bytes = nb ? wf_arena_dup(a, k->data, nb) : NULL;
  }
  m->attrs = wf_arena_alloc(a, (size_t)(n_attr ? n_attr : 1) * sizeof *m->attrs);
  for (int i = 0; i < n_attr; i++) {
    ox_attrv v = attrs[i];
    v.name = wf_arena_strdup(a, v.name);
    if (v.s) v.s = wf_arena_strdup(a, v.s);
    if (v.n) v.ints = wf_arena_dup(a, v.ints, (size_t)v.n * sizeof *v.ints);
    m->attrs[i] = v;
  }
  m->decl = decl ? wf_arena_dup(a, decl, (size_t)n_res * sizeof *decl) : NULL;
  m->out = wf_arena_dup(a, out, (size_t)n_res * sizeof *out);
}
