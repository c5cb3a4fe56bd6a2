/* Loads and validates a plan directory: manifest.json, programs/<class>.wpe, weights.bin.
 * Every error names the file and the place in it (a JSON path or a line:col). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/fsutil.h"
#include "ir/support/gemm_skew.h"
#include "ir/pe/pe_routes.h"
#include "ir/support/plan_digest.h"
#include "ir/support/sha256.h"
#include "runtime/runtime.h"
#include "waferc/diag.h"

typedef struct {
  const char *path; /* manifest path, for messages */
  int errors;
  int64_t format_version; /* the manifest's */
} lctx;

static void lerr(lctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lerr(lctx *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  wf_error_at(c->path, "%s", msg);
  c->errors++;
}

static const cJSON *get(lctx *c, const cJSON *obj, const char *key, const char *where) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) lerr(c, "%s: missing key '%s'", where, key);
  return v;
}

/* Limits a manifest is held to before any of its numbers sizes memory. They come from what a
 * target can be (a fabric side, a PE's SRAM), so a plan for any real target passes, and every
 * product of them (PEs x SRAM, dims of a shape) stays far from int64 overflow. */
#define JSON_INT_MAX (INT64_C(1) << 53)   /* a double holds every integer up to here */
#define PLAN_MAX_SIDE (INT64_C(1) << 16)  /* fabric, mesh and rectangle sides, in PEs */
#define PLAN_MAX_SRAM (INT64_C(1) << 30)  /* bytes per PE (WSE: 48 KiB; Dojo-like: 1.25 MiB) */
#define PLAN_MAX_DIM (INT64_C(1) << 40)   /* one dim of a tensor */

/* A JSON number as an integer in [lo, hi]. The range is checked on the double first:
 * converting 1e19 to int64_t is undefined behaviour, and NaN compares false. */
static int num_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  if (!(d >= (double)-JSON_INT_MAX && d <= (double)JSON_INT_MAX)) return -1;
  int64_t i = (int64_t)d;
  if ((double)i != d || i < lo || i > hi) return -1;
  *out = i;
  return 0;
}

static int get_int_in(lctx *c, const cJSON *obj, const char *key, const char *where, int64_t lo,
                      int64_t hi, int64_t *out) {
  const cJSON *v = get(c, obj, key, where);
  if (!v) return -1;
  if (num_int(v, lo, hi, out)) {
    lerr(c, "%s.%s: expected an integer in [%lld, %lld]", where, key, (long long)lo, (long long)hi);
    return -1;
  }
  return 0;
}

static int get_int(lctx *c, const cJSON *obj, const char *key, const char *where, int64_t *out) {
  return get_int_in(c, obj, key, where, -JSON_INT_MAX, JSON_INT_MAX, out);
}

static int get_str(lctx *c, const cJSON *obj, const char *key, const char *where, char *out,
                   size_t cap) {
  const cJSON *v = get(c, obj, key, where);
  if (!v) return -1;
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap) {
    lerr(c, "%s.%s: expected a string (at most %zu bytes)", where, key, cap - 1);
    return -1;
  }
  strcpy(out, v->valuestring);
  return 0;
}

/* [a, b, ...] of n integers, each in [lo, hi]. */
static int get_ints(lctx *c, const cJSON *obj, const char *key, const char *where, int64_t *out,
                    int n, int64_t lo, int64_t hi) {
  const cJSON *v = get(c, obj, key, where);
  if (!v) return -1;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n) {
    lerr(c, "%s.%s: expected an array of %d integers", where, key, n);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    if (num_int(cJSON_GetArrayItem(v, i), lo, hi, &out[i])) {
      lerr(c, "%s.%s[%d]: expected an integer in [%lld, %lld]", where, key, i, (long long)lo,
           (long long)hi);
      return -1;
    }
  }
  return 0;
}

static int load_target(lctx *c, const cJSON *t, wf_target *out) {
  memset(out, 0, sizeof *out);
  if (!t || !cJSON_IsObject(t)) {
    lerr(c, "missing object 'target'");
    return -1;
  }
  int64_t v, pair[2];
  int bad = 0;
  bad |= get_str(c, t, "name", "target", out->name, sizeof out->name);
#define I(key, field)                                                           \
  do {                                                                          \
    if (get_int_in(c, t, key, "target", 0, INT32_MAX, &v) == 0) out->field = (int)v; \
    else bad = 1;                                                               \
  } while (0)
  I("hop_cycles", hop_cycles);
  I("ramp_cycles", ramp_cycles);
  I("queue_depth", queue_depth);
  I("exp_cycles", exp_cycles);
  I("div_cycles", div_cycles);
  I("fmac_per_cycle", fmac_per_cycle);
  I("colors", colors);
  I("sram_banks", sram_banks);
  I("fp16_simd", fp16_simd);
  I("wavelet_bits", wavelet_bits);
  I("switch_positions", switch_positions);
  I("route_code_bits", route_code_bits);
#undef I
  /* Optional (plans written before the key existed): 0 = bank conflicts not modelled. */
  const cJSON *bank = cJSON_GetObjectItemCaseSensitive(t, "bank_conflict_cycles");
  if (bank && num_int(bank, 0, INT32_MAX, &v) == 0)
    out->bank_conflict_cycles = (int)v;
  else if (bank) {
    lerr(c, "target.bank_conflict_cycles: expected a non-negative integer");
    bad = 1;
  }
  if (get_int_in(c, t, "sram_bytes", "target", 1, PLAN_MAX_SRAM, &v) == 0) out->sram_bytes = v;
  else bad = 1;
  if (get_ints(c, t, "fabric", "target", pair, 2, 1, PLAN_MAX_SIDE) == 0) {
    out->fabric_w = (int)pair[0];
    out->fabric_h = (int)pair[1];
  } else bad = 1;
  const cJSON *clk = get(c, t, "clock_hz", "target");
  if (clk && cJSON_IsNumber(clk) && clk->valuedouble > 0 && clk->valuedouble < 1e15)
    out->clock_hz = clk->valuedouble;
  else if (clk) {
    lerr(c, "target.clock_hz: expected a positive number of Hz");
    bad = 1;
  } else bad = 1;
  const cJSON *res = get(c, t, "reserved_colors", "target");
  if (res && cJSON_IsArray(res)) {
    const cJSON *e;
    cJSON_ArrayForEach(e, res) {
      if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= WF_MAX_COLORS) {
        lerr(c, "target.reserved_colors: expected colors 0..%d", WF_MAX_COLORS - 1);
        bad = 1;
      } else out->reserved_colors |= 1u << (int)e->valuedouble;
    }
  } else bad = 1;
  if (!bad && (out->fmac_per_cycle < 1 || out->queue_depth < 1 || out->colors > WF_MAX_COLORS)) {
    lerr(c, "target: fmac_per_cycle and queue_depth must be >= 1, colors <= %d", WF_MAX_COLORS);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* The region whose classes run on region r's PEs: r's own, or the one it is a band of. */
static int region_root(const wf_plan *p, int r) { return p->regions[r].within >= 0 ? p->regions[r].within : r; }

static int find_region(const wf_plan *p, const char *name) {
  for (int i = 0; i < p->n_regions; i++)
    if (!strcmp(p->regions[i].name, name)) return i;
  return -1;
}

/* A weight's or input's optional "skew" (docs/plan-format.md): the K dim is split over more than one PE,
 * its blocks cut in tiles/parts tiles of k_tile exactly; the other dim (split along the other
 * axis, or not at all) in tiles/parts tiles of ceil(block/(tiles/parts)). Every number must
 * be the one the block sizes imply, so the scatter (runtime/sim_io.c) stays inside the block. */
static int load_skew(lctx *c, const wf_plan *p, const cJSON *o, const char *where, wf_plan_tensor *t,
                     int is_weight) {
  const cJSON *sk = cJSON_GetObjectItemCaseSensitive(o, "skew");
  if (!sk) return 0;
  char w[96], ring[16];
  snprintf(w, sizeof w, "%s.skew", where);
  if (!is_weight || t->dtype != WF_F32 || !cJSON_IsObject(sk)) {
    lerr(c, "%s: only an f32 weight or input may be pre-skewed, as an object", w);
    return -1;
  }
  if (c->format_version < 2) {
    lerr(c, "%s: a pre-skewed weight needs format_version 2 (the plan says %lld)", w, (long long)c->format_version);
    return -1;
  }
  int64_t tiles, kd, od, kt, ot;
  if (get_str(c, sk, "ring", w, ring, sizeof ring) || get_int_in(c, sk, "tiles", w, 1, PLAN_MAX_SIDE * 16, &tiles) ||
      get_int_in(c, sk, "k_dim", w, 0, WF_MAX_RANK - 1, &kd) || get_int_in(c, sk, "other_dim", w, 0, WF_MAX_RANK - 1, &od) ||
      get_int_in(c, sk, "k_tile", w, 1, PLAN_MAX_DIM, &kt) || get_int_in(c, sk, "other_tile", w, 1, PLAN_MAX_DIM, &ot))
    return -1;
  t->skew_ring = !strcmp(ring, "interleave") ? WF_SKEW_INTERLEAVE : !strcmp(ring, "plain") ? WF_SKEW_PLAIN : WF_SKEW_NONE;
  if (t->skew_ring == WF_SKEW_NONE) {
    lerr(c, "%s.ring: expected \"interleave\" or \"plain\", got \"%s\"", w, ring);
    return -1;
  }
  if (kd >= t->rank || od >= t->rank || kd == od) {
    lerr(c, "%s: k_dim %lld and other_dim %lld must be two dims of the rank-%d tensor", w, (long long)kd,
         (long long)od, t->rank);
    return -1;
  }
  const wf_plan_region *r = &p->regions[t->region];
  int ak = t->split[kd], ao = t->split[od];
  int64_t pk = ak == WF_AXIS_X ? r->w : ak == WF_AXIS_Y ? r->h : 1;
  int64_t po = ao == WF_AXIS_X ? r->w : ao == WF_AXIS_Y ? r->h : 1;
  if (pk < 2 || (ao != WF_AXIS_NONE && ao == ak) || tiles % pk || tiles % po) {
    lerr(c, "%s: dim %lld must be split over more than one PE, dim %lld along the other axis or none, and "
            "tiles (%lld) a multiple of both's PEs", w, (long long)kd, (long long)od, (long long)tiles);
    return -1;
  }
  int64_t vk = tiles / pk, vo = tiles / po, bk = t->padded[kd] / pk, bo = t->padded[od] / po;
  if (kt * vk != bk || ot != (bo + vo - 1) / vo) {
    lerr(c, "%s: blocks of %lld (dim %lld) and %lld (dim %lld) cut in %lld and %lld tiles need k_tile %lld and "
            "other_tile %lld, got %lld and %lld", w, (long long)bk, (long long)kd, (long long)bo, (long long)od,
         (long long)vk, (long long)vo, bk % vk ? -1LL : (long long)(bk / vk), (long long)((bo + vo - 1) / vo),
         (long long)kt, (long long)ot);
    return -1;
  }
  t->skew_k_dim = (int)kd;
  t->skew_other_dim = (int)od;
  t->skew_tiles = tiles;
  t->skew_k_tile = kt;
  t->skew_other_tile = ot;
  return 0;
}

static int load_tensor(lctx *c, wf_plan *p, const cJSON *o, const char *where, wf_plan_tensor *t,
                       int is_weight) {
  memset(t, 0, sizeof *t);
  char dtype[16], region[64];
  int bad = 0;
  bad |= get_str(c, o, "name", where, t->name, sizeof t->name);
  bad |= get_str(c, o, "symbol", where, t->symbol, sizeof t->symbol);
  bad |= get_str(c, o, "dtype", where, dtype, sizeof dtype);
  bad |= get_str(c, o, "region", where, region, sizeof region);
  if (bad) return -1;
  const cJSON *lay = cJSON_GetObjectItemCaseSensitive(o, "layout"); /* optional, for messages */
  if (cJSON_IsString(lay)) snprintf(t->layout, sizeof t->layout, "%s", lay->valuestring);
  /* Integers (a gather's ids, an argmax's index) and bools are f32 words on the PEs; the host
   * converts them at the interface, so only inputs and outputs may be i64, i32 or bool. */
  if (wf_dtype_parse(dtype, &t->dtype) ||
      (t->dtype != WF_F32 && (is_weight || (t->dtype != WF_I64 && t->dtype != WF_I32 && t->dtype != WF_BOOL)))) {
    lerr(c, "%s.dtype: '%s' is not supported by this runtime (f32; i64, i32 and bool for inputs and "
            "outputs)", where, dtype);
    return -1;
  }
  const cJSON *ib = cJSON_GetObjectItemCaseSensitive(o, "index_bound");
  if (ib) {
    if (!cJSON_IsNumber(ib) || t->dtype == WF_F32 || ib->valuedouble < 1 || ib->valuedouble > (double)(1 << 24) ||
        ib->valuedouble != (double)(int64_t)ib->valuedouble) {
      lerr(c, "%s.index_bound: expected an integer in [1, 2^24] on an integer tensor", where);
      return -1;
    }
    t->index_bound = (int64_t)ib->valuedouble;
  }
  t->region = find_region(p, region);
  if (t->region < 0) {
    lerr(c, "%s.region: unknown region '%s'", where, region);
    return -1;
  }
  const cJSON *shape = get(c, o, "shape", where), *split = get(c, o, "split", where);
  if (!shape || !split) return -1;
  int rank = cJSON_GetArraySize(shape);
  if (!cJSON_IsArray(shape) || !cJSON_IsArray(split) || rank > WF_MAX_RANK ||
      cJSON_GetArraySize(split) != rank) {
    lerr(c, "%s: 'shape' and 'split' must be arrays of the same length <= %d", where, WF_MAX_RANK);
    return -1;
  }
  t->rank = rank;
  const wf_plan_region *r = &p->regions[t->region];
  for (int i = 0; i < rank; i++) {
    const cJSON *d = cJSON_GetArrayItem(shape, i), *s = cJSON_GetArrayItem(split, i);
    if (num_int(d, 1, PLAN_MAX_DIM, &t->dims[i]) || !cJSON_IsString(s)) {
      lerr(c, "%s.shape[%d]/split[%d]: expected an integer in [1, 2^40] and \"x\", \"y\" or \"-\"",
           where, i, i);
      return -1;
    }
    const char *sv = s->valuestring;
    t->split[i] = !strcmp(sv, "x") ? WF_AXIS_X : !strcmp(sv, "y") ? WF_AXIS_Y : WF_AXIS_NONE;
    if (t->split[i] == WF_AXIS_NONE && strcmp(sv, "-")) {
      lerr(c, "%s.split[%d]: expected \"x\", \"y\" or \"-\", got \"%s\"", where, i, sv);
      return -1;
    }
  }
  /* A dim the PEs do not divide is padded to blocks of ceil(dim/parts) (docs/plan-format.md);
   * "padded_shape", when present, may pad further (MeshGEMM / Cannon on a W x H region pad K
   * to lcm(W, H) tiles): any extent >= the dim that its PEs divide. */
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "padded_shape");
  if (ps && (!cJSON_IsArray(ps) || cJSON_GetArraySize(ps) != rank)) {
    lerr(c, "%s.padded_shape: expected an array of %d dims", where, rank);
    return -1;
  }
  for (int i = 0; i < rank; i++) {
    int parts = t->split[i] == WF_AXIS_X ? r->w : t->split[i] == WF_AXIS_Y ? r->h : 1;
    t->padded[i] = (t->dims[i] + parts - 1) / parts * parts;
    if (!ps) continue;
    int64_t got = -1;
    num_int(cJSON_GetArrayItem(ps, i), 1, PLAN_MAX_DIM + PLAN_MAX_SIDE, &got);
    if (got < t->dims[i] || got % parts || (parts == 1 && got != t->dims[i])) {
      lerr(c, "%s.padded_shape[%d]: dim %lld over %d PEs pads to %lld%s, got %lld", where, i,
           (long long)t->dims[i], parts, (long long)t->padded[i],
           parts > 1 ? " or a larger multiple of the PEs" : "", (long long)got);
      return -1;
    }
    t->padded[i] = got;
  }
  /* an input too: the switch's argument for a weight the prefill holds pre-skewed (ops.def unskew) */
  if (load_skew(c, p, o, where, t, is_weight || !strncmp(where, "inputs[", 7))) return -1;
  /* Sizes are checked, with overflow-safe products, against what holds the tensor: no tensor
   * is larger than the SRAM of every PE of the mesh, no block larger than one PE's SRAM, no
   * weight larger than weights.bin. Only then is a byte count trusted to size a buffer. */
  int64_t numel = 1, block = 1, bdims[WF_MAX_RANK];
  int64_t mesh_bytes = (int64_t)p->mesh_w * p->mesh_h * p->target.sram_bytes;
  for (int i = 0; i < rank && numel > 0; i++)
    if (__builtin_mul_overflow(numel, t->padded[i], &numel) || numel > mesh_bytes / 4) numel = -1;
  if (numel > 0) block = wf_plan_block_dims(p, t, bdims);
  if (numel < 0 || block > p->target.sram_bytes / 4) {
    lerr(c, "%s.shape: the tensor (padded to %s elements) exceeds %s: the mesh's %dx%d PEs hold %lld "
            "bytes, %lld per PE", where, numel < 0 ? "too many" : "its",
         numel < 0 ? "the SRAM of the whole mesh" : "one PE's SRAM in its block", p->mesh_w, p->mesh_h,
         (long long)mesh_bytes, (long long)p->target.sram_bytes);
    return -1;
  }
  if (is_weight) {
    if (get_int_in(c, o, "offset", where, 0, p->weight_bytes, &t->offset) ||
        get_int_in(c, o, "bytes", where, 0, p->weight_bytes, &t->bytes))
      return -1;
    int64_t want = 1;
    for (int i = 0; i < rank; i++) want *= t->dims[i]; /* <= numel: bounded above */
    want *= 4;
    if (t->bytes != want || t->offset > p->weight_bytes - t->bytes) {
      lerr(c, "%s: byte range [%lld, +%lld) does not match the shape (%lld bytes of f32) or lies "
              "outside weights.bin (%lld bytes)", where, (long long)t->offset, (long long)t->bytes,
           (long long)want, (long long)p->weight_bytes);
      return -1;
    }
  }
  /* Every class placed on the tensor's region must hold the symbol, large enough. */
  block *= 4;
  for (int i = 0; i < p->n_places; i++) {
    if (p->places[i].region != region_root(p, t->region)) continue;
    const wf_pe_class *cl = p->classes[p->places[i].cls];
    int s = wf_pe_class_find_sym(cl, t->symbol);
    if (s < 0 || cl->syms[s].bytes < block) {
      lerr(c, "%s: class '%s' has no symbol '%s' of at least %lld bytes", where, cl->name,
           t->symbol, (long long)block);
      return -1;
    }
  }
  return 0;
}

int64_t wf_plan_block_dims(const wf_plan *p, const wf_plan_tensor *t, int64_t *bdims) {
  const wf_plan_region *r = &p->regions[t->region];
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int parts = t->split[i] == WF_AXIS_X ? r->w : t->split[i] == WF_AXIS_Y ? r->h : 1;
    /* the last blocks may hold padding; padded_shape may ask for more than ceil(dim/parts) */
    bdims[i] = t->padded[i] ? t->padded[i] / parts : (t->dims[i] + parts - 1) / parts;
    n *= bdims[i];
  }
  return n;
}

/* A program's '@' symbols hold constants (docs/pe-programs.md): each must be a weight placed
 * on the region the class runs on, or its PEs would compute with whatever SRAM held. */
static int check_weight_symbols(lctx *c, const wf_plan *p) {
  for (int i = 0; i < p->n_places; i++) {
    const wf_pe_class *cl = p->classes[p->places[i].cls];
    for (int s = 0; s < cl->n_syms; s++) {
      if (cl->syms[s].name[0] != '@') continue;
      int found = 0;
      for (int k = 0; k < p->n_weights && !found; k++)
        found = region_root(p, p->weights[k].region) == p->places[i].region &&
                !strcmp(p->weights[k].symbol, cl->syms[s].name);
      if (!found) {
        lerr(c, "weights.tensors: no weight for symbol '%s' of class '%s' on region '%s' (a constant without "
                "data)", cl->syms[s].name, cl->name, p->regions[p->places[i].region].name);
        return -1;
      }
    }
  }
  return 0;
}

/* Two weights sharing bytes of weights.bin would load one tensor's data as another's: each
 * range must stand alone (waferc writes them one after another). Sorted by offset, each
 * non-empty range must end before the next begins. */
static const wf_plan_tensor *g_sort_weights;
static int by_offset(const void *x, const void *y) {
  const wf_plan_tensor *a = &g_sort_weights[*(const int *)x], *b = &g_sort_weights[*(const int *)y];
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int check_weight_ranges(lctx *c, const wf_plan *p) {
  int *ix = malloc(((size_t)p->n_weights + 1) * sizeof *ix), n = 0, rc = 0;
  WF_ASSERT(ix);
  for (int i = 0; i < p->n_weights; i++)
    if (p->weights[i].bytes) ix[n++] = i;
  g_sort_weights = p->weights;
  qsort(ix, (size_t)n, sizeof *ix, by_offset);
  for (int i = 0; i + 1 < n && !rc; i++) {
    const wf_plan_tensor *a = &p->weights[ix[i]], *b = &p->weights[ix[i + 1]];
    if (a->offset + a->bytes > b->offset) {
      lerr(c, "weights.tensors[%d] '%s' (bytes %lld..%lld of weights.bin) overlaps weights.tensors[%d] '%s' (bytes "
              "%lld..%lld)", ix[i + 1], b->name, (long long)b->offset, (long long)(b->offset + b->bytes), ix[i],
           a->name, (long long)a->offset, (long long)(a->offset + a->bytes));
      rc = -1;
    }
  }
  free(ix);
  return rc;
}

/* Every symbol a program reads has a producer: an instruction that writes it (a `d` operand,
 * docs/pe-programs.md), an input of the plan on the class's region, or a weight. Otherwise its
 * PEs would compute with whatever SRAM held. */
static int check_producers(lctx *c, const wf_plan *p) {
  for (int i = 0; i < p->n_places; i++) {
    const wf_pe_class *cl = p->classes[p->places[i].cls];
    uint8_t *made = calloc((size_t)cl->n_syms + 1, 1);
    WF_ASSERT(made);
    for (int k = 0; k < cl->n_code; k++) {
      const char *sig = wf_peops[cl->code[k].op].sig;
      for (int a = 0; sig[a] && a < WF_PE_MAX_ARGS; a++)
        if (sig[a] == 'd' && cl->code[k].args[a].sym >= 0 && cl->code[k].args[a].sym < cl->n_syms)
          made[cl->code[k].args[a].sym] = 1;
    }
    for (int s = 0; s < cl->n_syms; s++) {
      made[s] |= cl->syms[s].name[0] == '@'; /* check_weight_symbols: each has its weight */
      for (int t = 0; t < p->n_inputs && !made[s]; t++)
        made[s] = region_root(p, p->inputs[t].region) == p->places[i].region &&
                  !strcmp(p->inputs[t].symbol, cl->syms[s].name);
    }
    int bad = -1, line = 0;
    for (int k = 0; k < cl->n_code && bad < 0; k++) {
      const char *sig = wf_peops[cl->code[k].op].sig;
      for (int a = 0; sig[a] && a < WF_PE_MAX_ARGS && bad < 0; a++) {
        int sym = cl->code[k].args[a].sym;
        if (sig[a] == 's' && sym >= 0 && sym < cl->n_syms && !made[sym]) bad = sym, line = cl->code[k].line;
      }
    }
    free(made);
    if (bad >= 0) {
      lerr(c, "class '%s': its program reads '%s' (line %d) but nothing writes it: no instruction, input of the plan "
              "or weight (its PEs would compute with whatever their SRAM held)", cl->name, cl->syms[bad].name, line);
      return -1;
    }
  }
  return 0;
}

static int load_tensors(lctx *c, wf_plan *p, const cJSON *arr, const char *key,
                        wf_plan_tensor **out, int *n, int is_weight) {
  if (!arr || !cJSON_IsArray(arr)) {
    lerr(c, "'%s' must be an array", key);
    return -1;
  }
  *n = cJSON_GetArraySize(arr);
  *out = calloc((size_t)*n + 1, sizeof **out);
  WF_ASSERT(*out);
  for (int i = 0; i < *n; i++) {
    char where[64];
    snprintf(where, sizeof where, "%s[%d]", key, i);
    if (load_tensor(c, p, cJSON_GetArrayItem(arr, i), where, &(*out)[i], is_weight)) return -1;
    for (int k = 0; k < i; k++)
      if (!strcmp((*out)[k].name, (*out)[i].name)) {
        lerr(c, "%s.name: '%s' is also %s[%d]'s name", where, (*out)[i].name, key, k);
        return -1;
      }
  }
  return 0;
}

/* Checks colors of every class against the target and the plan's color list. */
static int check_colors(lctx *c, wf_plan *p) {
  for (int k = 0; k < p->n_classes; k++) {
    const wf_pe_class *cl = p->classes[k];
    for (int i = 0; i < cl->n_colors; i++) {
      int col = cl->colors[i].color;
      if (col >= p->target.colors || (p->target.reserved_colors >> col & 1)) {
        lerr(c, "class '%s' uses color c%d, which target '%s' does not offer (colors 0..%d, "
                "reserved excluded)", cl->name, col, p->target.name, p->target.colors - 1);
        return -1;
      }
      if (!(p->colors_used >> col & 1)) {
        lerr(c, "class '%s' uses color c%d, which is missing from the manifest's 'colors'",
             cl->name, col);
        return -1;
      }
    }
  }
  return 0;
}

/* The class's memory map in the manifest (optional: plans written by hand may omit it) is
 * the program's .sym lines: the same symbols at the same offsets and sizes, and the same
 * total, so a line deleted or duplicated on either side is found. */
static int check_memory_map(lctx *c, const cJSON *cl, const char *cw, const wf_pe_class *pc, const char *prog) {
  const cJSON *mem = cJSON_GetObjectItemCaseSensitive(cl, "memory");
  const cJSON *mb = cJSON_GetObjectItemCaseSensitive(cl, "memory_bytes");
  int64_t v;
  if (mb && (num_int(mb, 0, JSON_INT_MAX, &v) || v != pc->mem_bytes)) {
    lerr(c, "%s.memory_bytes: expected %lld, the end of the last symbol of %s", cw, (long long)pc->mem_bytes, prog);
    return -1;
  }
  if (!mem) return 0;
  if (!cJSON_IsArray(mem) || cJSON_GetArraySize(mem) != pc->n_syms) {
    lerr(c, "%s.memory: expected an array of the %d symbols %s declares", cw, pc->n_syms, prog);
    return -1;
  }
  for (int k = 0; k < pc->n_syms; k++) {
    const cJSON *e = cJSON_GetArrayItem(mem, k);
    const char *sym = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "symbol"));
    int64_t off, bytes;
    int s = sym ? wf_pe_class_find_sym(pc, sym) : -1;
    if (s < 0 || num_int(cJSON_GetObjectItemCaseSensitive(e, "offset"), 0, JSON_INT_MAX, &off) ||
        num_int(cJSON_GetObjectItemCaseSensitive(e, "bytes"), 0, JSON_INT_MAX, &bytes) ||
        off != pc->syms[s].offset || bytes != pc->syms[s].bytes) {
      lerr(c, "%s.memory[%d]: expected {symbol, offset, bytes} of a .sym line of %s (symbol '%s'%s)", cw, k, prog,
           sym ? sym : "?", s < 0 ? " is not declared there" : ": offset or bytes differ");
      return -1;
    }
  }
  return 0;
}

static int places_overlap(const wf_plan_place *u, const wf_plan_place *v) {
  return u->x < v->x + v->w && v->x < u->x + u->w && u->y < v->y + v->h && v->y < u->y + u->h;
}

/* 1 when two placements overlap (reported by the caller's own check). */
static int check_overlaps(const wf_plan *p) {
  for (int a = 0; a < p->n_places; a++)
    for (int b = a + 1; b < p->n_places; b++)
      if (places_overlap(&p->places[a], &p->places[b])) return 1;
  return 0;
}

static int load_regions(lctx *c, wf_plan *p, const cJSON *regions) {
  if (!regions || !cJSON_IsArray(regions)) {
    lerr(c, "'regions' must be an array");
    return -1;
  }
  p->n_regions = cJSON_GetArraySize(regions);
  p->regions = calloc((size_t)p->n_regions + 1, sizeof *p->regions);
  WF_ASSERT(p->regions);
  int cap_places = 0;
  for (int i = 0; i < p->n_regions; i++) {
    const cJSON *r = cJSON_GetArrayItem(regions, i);
    char where[64];
    snprintf(where, sizeof where, "regions[%d]", i);
    int64_t rect[4];
    if (get_str(c, r, "name", where, p->regions[i].name, 64) || get_ints(c, r, "rect", where, rect, 4, 0, PLAN_MAX_SIDE))
      return -1;
    if (rect[0] < 0 || rect[1] < 0 || rect[2] < 1 || rect[3] < 1 || rect[0] + rect[2] > p->mesh_w ||
        rect[1] + rect[3] > p->mesh_h) {
      lerr(c, "%s.rect [%lld, %lld, %lld, %lld] lies outside the %dx%d mesh", where,
           (long long)rect[0], (long long)rect[1], (long long)rect[2], (long long)rect[3],
           p->mesh_w, p->mesh_h);
      return -1;
    }
    p->regions[i] = (wf_plan_region){"", (int)rect[0], (int)rect[1], (int)rect[2], (int)rect[3], -1};
    get_str(c, r, "name", where, p->regions[i].name, 64);
    const cJSON *within = cJSON_GetObjectItemCaseSensitive(r, "within");
    if (within) { /* a band of an earlier region: no classes of its own */
      int k = -1;
      for (int j = 0; j < i && cJSON_IsString(within); j++)
        if (!strcmp(p->regions[j].name, within->valuestring) && p->regions[j].within < 0) k = j;
      const wf_plan_region *q = k >= 0 ? &p->regions[k] : NULL;
      if (!q) {
        lerr(c, "%s.within must name an earlier region with classes", where);
        return -1;
      }
      if (rect[0] < q->x || rect[1] < q->y || rect[0] + rect[2] > q->x + q->w || rect[1] + rect[3] > q->y + q->h) {
        lerr(c, "%s.rect [%lld, %lld, %lld, %lld] lies outside region '%s'", where, (long long)rect[0],
             (long long)rect[1], (long long)rect[2], (long long)rect[3], q->name);
        return -1;
      }
      if (cJSON_GetObjectItemCaseSensitive(r, "classes")) {
        lerr(c, "%s: a region within another has no classes", where);
        return -1;
      }
      p->regions[i].within = k;
      continue;
    }
    const cJSON *classes = get(c, r, "classes", where);
    if (!classes || !cJSON_IsArray(classes)) return -1;
    for (int k = 0; k < cJSON_GetArraySize(classes); k++) {
      const cJSON *cl = cJSON_GetArrayItem(classes, k);
      char cw[96], name[64], prog[512];
      snprintf(cw, sizeof cw, "%s.classes[%d]", where, k);
      int64_t cr[4];
      if (get_str(c, cl, "name", cw, name, sizeof name) ||
          get_str(c, cl, "program", cw, prog, sizeof prog) || get_ints(c, cl, "rect", cw, cr, 4, 0, PLAN_MAX_SIDE))
        return -1;
      if (cr[0] < rect[0] || cr[1] < rect[1] || cr[2] < 1 || cr[3] < 1 ||
          cr[0] + cr[2] > rect[0] + rect[2] || cr[1] + cr[3] > rect[1] + rect[3]) {
        lerr(c, "%s.rect [%lld, %lld, %lld, %lld] lies outside its region", cw, (long long)cr[0],
             (long long)cr[1], (long long)cr[2], (long long)cr[3]);
        return -1;
      }
      if (strstr(prog, "..") || prog[0] == '/') {
        lerr(c, "%s.program '%s' must be a relative path inside the plan", cw, prog);
        return -1;
      }
      int idx = -1;
      for (int j = 0; j < p->n_classes; j++)
        if (!strcmp(p->classes[j]->name, name)) idx = j;
      if (idx < 0) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", p->dir, prog);
        wf_pe_class *pc = wf_pe_class_parse(path);
        if (!pc) {
          c->errors++;
          return -1;
        }
        if (strcmp(pc->name, name)) {
          wf_error_at(path, "program declares class '%s' but the manifest names it '%s'",
                      pc->name, name);
          wf_pe_class_free(pc);
          c->errors++;
          return -1;
        }
        if (pc->mem_bytes > p->target.sram_bytes) {
          /* Name the first symbol that does not fit, and a PE that would hold it. */
          const wf_pe_sym *over = &pc->syms[0];
          for (int k2 = 0; k2 < pc->n_syms; k2++)
            if (pc->syms[k2].offset + pc->syms[k2].bytes > p->target.sram_bytes) {
              over = &pc->syms[k2];
              break;
            }
          wf_error_at(path, "SRAM overflow on PE (%lld,%lld) (and every PE of class '%s'): symbol "
                      "'%s' at [%lld, %lld) ends past the %lld bytes of target '%s' (class needs "
                      "%lld)", (long long)cr[0], (long long)cr[1], pc->name, over->name,
                      (long long)over->offset, (long long)(over->offset + over->bytes),
                      (long long)p->target.sram_bytes, p->target.name, (long long)pc->mem_bytes);
          wf_pe_class_free(pc);
          c->errors++;
          return -1;
        }
        for (int k2 = 0; k2 < pc->n_routes; k2++)
          if (pc->routes[k2].pos >= p->target.switch_positions) {
            wf_error(wf_loc_make(path, (uint32_t)pc->routes[k2].line, 1),
                     "switch position p%d: target '%s' has %d switch positions per color",
                     pc->routes[k2].pos, p->target.name, p->target.switch_positions);
            wf_pe_class_free(pc);
            c->errors++;
            return -1;
          }
        wf_pe_class **grown = realloc(p->classes, (size_t)(p->n_classes + 1) * sizeof *p->classes);
        WF_ASSERT(grown);
        p->classes = grown;
        idx = p->n_classes;
        p->classes[p->n_classes++] = pc;
      }
      if (p->n_places == cap_places) {
        cap_places = cap_places ? 2 * cap_places : 8;
        wf_plan_place *more = realloc(p->places, (size_t)cap_places * sizeof *p->places);
        WF_ASSERT(more);
        p->places = more;
      }
      p->places[p->n_places++] = (wf_plan_place){idx, i, (int)cr[0], (int)cr[1], (int)cr[2], (int)cr[3]};
      if (check_memory_map(c, cl, cw, p->classes[idx], prog)) return -1;
      /* Routes a WSE router can hold, on every PE of this placement (the region's size and
         edges decide which rules hold and which ports face a neighbour). */
      char ppath[2048];
      snprintf(ppath, sizeof ppath, "%s/%s", p->dir, prog);
      const wf_plan_region *rg = &p->regions[i];
      const wf_plan_place *pl = &p->places[p->n_places - 1];
      if (wf_pe_check_routes(p->classes[idx], rg->x, rg->y, rg->w, rg->h, pl->x, pl->y, pl->w, pl->h, ppath)) {
        c->errors++;
        return -1;
      }
    }
  }
  /* Every PE of a region runs a class: with no overlaps, the classes' areas add up to the
   * region's (a deleted class leaves PEs without a program). */
  for (int i = 0; i < p->n_regions; i++) {
    if (p->regions[i].within >= 0) continue;
    int64_t area = 0;
    for (int k = 0; k < p->n_places; k++)
      if (p->places[k].region == i) area += (int64_t)p->places[k].w * p->places[k].h;
    const wf_plan_region *r = &p->regions[i];
    if (area < (int64_t)r->w * r->h && !check_overlaps(p)) {
      lerr(c, "regions[%d] '%s': its classes cover %lld of its %dx%d PEs; every PE of a region needs a class",
           i, r->name, (long long)area, r->w, r->h);
      return -1;
    }
  }
  /* Placements may not overlap: a PE runs one class. */
  for (int a = 0; a < p->n_places; a++)
    for (int b = a + 1; b < p->n_places; b++) {
      const wf_plan_place *u = &p->places[a], *v = &p->places[b];
      if (u->x < v->x + v->w && v->x < u->x + u->w && u->y < v->y + v->h && v->y < u->y + u->h) {
        lerr(c, "classes '%s' and '%s' overlap", p->classes[u->cls]->name, p->classes[v->cls]->name);
        return -1;
      }
    }
  return 0;
}

const char *const wf_plan_phase_names[3] = {"alignment", "loop", "drain"};

/* ops[i].phases (optional, a dist.gemm's): {alignment, loop, drain}, each an integer >= 0,
 * adding up to the op's predicted_cycles (the backend splits its prediction, no more). */
static int load_phases(lctx *c, wf_plan_op *po, const cJSON *o, const char *where) {
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phases");
  if (!ph) return 0;
  char w[64];
  snprintf(w, sizeof w, "%s.phases", where);
  if (!cJSON_IsObject(ph) || cJSON_GetArraySize(ph) != 3) {
    lerr(c, "%s: expected an object of exactly alignment, loop and drain", w);
    return -1;
  }
  int64_t sum = 0;
  for (int k = 0; k < 3; k++) {
    if (get_int_in(c, ph, wf_plan_phase_names[k], w, 0, JSON_INT_MAX, &po->phase_predicted[k])) return -1;
    sum += po->phase_predicted[k];
  }
  if (sum != po->predicted) {
    lerr(c, "%s: the phases add up to %lld, not the op's predicted_cycles %lld", w, (long long)sum,
         (long long)po->predicted);
    return -1;
  }
  po->has_phases = 1;
  return 0;
}

/* ops[i].collectives (optional): the collectives inside op i, each at its `index`. */
static int load_colls(lctx *c, wf_plan *p, const cJSON *o, int op, const char *where) {
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(o, "collectives");
  if (!cs) return 0;
  if (!cJSON_IsArray(cs)) {
    lerr(c, "%s.collectives: expected an array", where);
    return -1;
  }
  for (int j = 0; j < cJSON_GetArraySize(cs); j++) {
    const cJSON *e = cJSON_GetArrayItem(cs, j);
    char w[64];
    snprintf(w, sizeof w, "%s.collectives[%d]", where, j);
    int64_t index, pes, words, pred, low = 0;
    wf_plan_coll pc;
    memset(&pc, 0, sizeof pc);
    if (get_int(c, e, "index", w, &index) || get_str(c, e, "collective", w, pc.collective, sizeof pc.collective) ||
        get_str(c, e, "algo", w, pc.algo, sizeof pc.algo) || get_int_in(c, e, "pes", w, 0, INT32_MAX, &pes) ||
        get_int(c, e, "words", w, &words) || get_int(c, e, "predicted_cycles", w, &pred))
      return -1;
    if (cJSON_GetObjectItemCaseSensitive(e, "lowered_cycles") && get_int(c, e, "lowered_cycles", w, &low))
      return -1;
    if (index < 0 || index > 65535) {
      lerr(c, "%s.index: %lld is out of range (0..65535)", w, (long long)index);
      return -1;
    }
    if (index >= p->n_colls) {
      wf_plan_coll *n = realloc(p->colls, (size_t)(index + 1) * sizeof *n);
      if (!n) {
        lerr(c, "%s: out of memory", w);
        return -1;
      }
      for (int64_t k = p->n_colls; k <= index; k++) n[k].op = -1;
      p->colls = n;
      p->n_colls = (int)index + 1;
    }
    if (p->colls[index].op >= 0) {
      lerr(c, "%s.index: collective %lld is listed twice", w, (long long)index);
      return -1;
    }
    pc.op = op;
    pc.pes = (int)pes;
    pc.words = words, pc.predicted = pred, pc.lowered = low;
    p->colls[index] = pc;
  }
  return 0;
}

static int find_tensor(const wf_plan_tensor *ts, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(ts[i].name, name)) return i;
  return -1;
}

/* A name the generation loop binds: a string naming a tensor of `ts` (when ts is given). */
static int gen_name(lctx *c, const cJSON *o, const char *key, const char *where, char *out, size_t cap,
                    const wf_plan_tensor *ts, int n, const char *kind) {
  if (get_str(c, o, key, where, out, cap)) return -1;
  if (ts && find_tensor(ts, n, out) < 0) {
    lerr(c, "%s.%s: '%s' is not an %s of the plan", where, key, out, kind);
    return -1;
  }
  return 0;
}

static int gen_count(lctx *c, const cJSON *o, const char *key, const char *where, int64_t max, int64_t *out) {
  if (get_int(c, o, key, where, out)) return -1;
  if (*out < 1 || *out > max) {
    lerr(c, "%s.%s: %lld is out of range (1..%lld)", where, key, (long long)*out, (long long)max);
    return -1;
  }
  return 0;
}

/* A plan directory named by the manifest: relative, inside this plan. */
static int inner_dir(lctx *c, const char *d, const char *where, int allow_empty) {
  if ((!d[0] && allow_empty) || (d[0] && d[0] != '/' && !strstr(d, "..") && !strchr(d, '\\'))) return 0;
  lerr(c, "%s: '%s' must be a relative directory inside the plan (no '..', not absolute)", where, d);
  return -1;
}

/* "generate" (optional): the host loop's parameters. The decode plan's directory must stay
 * inside this plan, like the program paths: a manifest is data and may come from anywhere. */
static int load_generate(lctx *c, wf_plan *p, const cJSON *g) {
  wf_plan_generate *G = &p->gen;
  const char *w = "generate";
  if (!cJSON_IsObject(g)) {
    lerr(c, "generate: expected an object");
    return -1;
  }
  int64_t rows, slots;
  if (get_str(c, g, "decode_plan", w, G->decode_plan, sizeof G->decode_plan) ||
      gen_name(c, g, "prompt_input", w, G->prompt_input, 256, p->inputs, p->n_inputs, "input") ||
      gen_name(c, g, "prefill_next", w, G->prefill_next, 256, p->outputs, p->n_outputs, "output") ||
      gen_name(c, g, "decode_ids", w, G->decode_ids, 256, NULL, 0, NULL) ||
      gen_name(c, g, "decode_position", w, G->decode_position, 256, NULL, 0, NULL) ||
      gen_name(c, g, "decode_next", w, G->decode_next, 256, NULL, 0, NULL) ||
      gen_count(c, g, "prompt_length", w, 1 << 24, &G->prompt_length) ||
      gen_count(c, g, "max_new_tokens", w, 1 << 24, &G->max_new_tokens) ||
      get_str(c, g, "kv_cache", w, G->kv_cache, sizeof G->kv_cache) ||
      gen_count(c, g, "rows", w, 1 << 16, &rows) || gen_count(c, g, "slots_per_row", w, 1 << 24, &slots))
    return -1;
  G->rows = (int)rows;
  G->slots_per_row = (int)slots;
  if (inner_dir(c, G->decode_plan, "generate.decode_plan", 0)) return -1;
  if (cJSON_GetObjectItemCaseSensitive(g, "switch_plan") &&
      (get_str(c, g, "switch_plan", w, G->switch_plan, sizeof G->switch_plan) ||
       inner_dir(c, G->switch_plan, "generate.switch_plan", 0)))
    return -1;
  if (strcmp(G->kv_cache, "shift") && strcmp(G->kv_cache, "concat")) {
    lerr(c, "generate.kv_cache: expected \"shift\" or \"concat\", got \"%s\"", G->kv_cache);
    return -1;
  }
  const cJSON *caches = get(c, g, "caches", w);
  if (!caches) return -1;
  if (!cJSON_IsArray(caches) || cJSON_GetArraySize(caches) < 1) {
    lerr(c, "generate.caches: expected a non-empty array of {\"prefill\": NAME, \"decode\": NAME}");
    return -1;
  }
  G->n_caches = cJSON_GetArraySize(caches);
  G->caches = calloc((size_t)G->n_caches, sizeof *G->caches);
  WF_ASSERT(G->caches);
  for (int i = 0; i < G->n_caches; i++) {
    char cw[48];
    snprintf(cw, sizeof cw, "generate.caches[%d]", i);
    const cJSON *e = cJSON_GetArrayItem(caches, i);
    if (gen_name(c, e, "prefill", cw, G->caches[i].prefill, 256, p->outputs, p->n_outputs, "output") ||
        gen_name(c, e, "decode", cw, G->caches[i].decode, 256, NULL, 0, NULL) ||
        (G->switch_plan[0] && gen_name(c, e, "switch", cw, G->caches[i].via, 256, NULL, 0, NULL)))
      return -1;
  }
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(g, "shared_weights");
  if (sh) {
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > p->n_weights) {
      lerr(c, "generate.shared_weights: expected an array of at most one name per weight (%d)", p->n_weights);
      return -1;
    }
    G->n_shared = cJSON_GetArraySize(sh);
    G->shared = calloc((size_t)G->n_shared + 1, sizeof *G->shared);
    WF_ASSERT(G->shared);
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, sh) {
      const char *name = cJSON_GetStringValue(e);
      if (!name || find_tensor(p->weights, p->n_weights, name) < 0 || strlen(name) >= sizeof G->shared[0]) {
        lerr(c, "generate.shared_weights[%d]: expected the name of a weight of the plan", i);
        return -1;
      }
      strcpy(G->shared[i++], name);
    }
  }
  G->present = 1;
  return 0;
}

/* "pipeline" (optional): the stages waferrun runs in order (wf_plan_pipeline). */
/* The tensor of ts named `name`, or -1. */
static int tensor_named(const wf_plan_tensor *ts, int n, const char *name) {
  for (int j = 0; j < n; j++)
    if (!strcmp(ts[j].name, name)) return j;
  return -1;
}

/* "moe": [{"output": NAME, "experts": N, "k": K}, ...]: each an integer output [.., K]. */
static int load_routes(lctx *c, wf_plan *p, const cJSON *o) {
  int n = cJSON_IsArray(o) ? cJSON_GetArraySize(o) : -1;
  if (n < 0 || n > p->n_outputs) {
    lerr(c, "moe: expected an array of at most one entry per output (%d)", p->n_outputs);
    return -1;
  }
  p->routes = calloc((size_t)n + 1, sizeof *p->routes);
  WF_ASSERT(p->routes);
  p->n_routes = n;
  for (int i = 0; i < n; i++) {
    const cJSON *e = cJSON_GetArrayItem(o, i);
    wf_plan_route *r = &p->routes[i];
    char w[32], name[256];
    snprintf(w, sizeof w, "moe[%d]", i);
    if (!cJSON_IsObject(e) || get_str(c, e, "output", w, name, sizeof name) ||
        get_int_in(c, e, "experts", w, 1, INT32_MAX, &r->experts) || get_int_in(c, e, "k", w, 1, INT32_MAX, &r->k))
      return -1;
    r->output = tensor_named(p->outputs, p->n_outputs, name);
    const wf_plan_tensor *t = r->output >= 0 ? &p->outputs[r->output] : NULL;
    if (!t || (t->dtype != WF_I64 && t->dtype != WF_I32) || t->rank < 1 || t->dims[t->rank - 1] != r->k) {
      lerr(c, "%s: '%s' is no integer output whose last dim is k = %lld", w, name, (long long)r->k);
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (p->routes[j].output == r->output) {
        lerr(c, "%s: output '%s' listed twice", w, name);
        return -1;
      }
  }
  return 0;
}

/* "switch_weights": [{"prefill": W, "input": NAME, "output": NAME, "decode": W}, ...]: each an
 * f32 matrix input and output of this plan, listed once. */
static int load_moves(lctx *c, wf_plan *p, const cJSON *o) {
  int n = cJSON_IsArray(o) ? cJSON_GetArraySize(o) : -1;
  if (n < 0 || n > p->n_inputs || n > p->n_outputs) {
    lerr(c, "switch_weights: expected an array of at most one entry per input and output");
    return -1;
  }
  p->moves = calloc((size_t)n + 1, sizeof *p->moves);
  WF_ASSERT(p->moves);
  p->n_moves = n;
  for (int i = 0; i < n; i++) {
    const cJSON *e = cJSON_GetArrayItem(o, i);
    wf_plan_weight_move *m = &p->moves[i];
    char w[48], in[256], out[256];
    snprintf(w, sizeof w, "switch_weights[%d]", i);
    if (!cJSON_IsObject(e) || get_str(c, e, "prefill", w, m->prefill, sizeof m->prefill) ||
        get_str(c, e, "decode", w, m->decode, sizeof m->decode) || get_str(c, e, "input", w, in, sizeof in) ||
        get_str(c, e, "output", w, out, sizeof out))
      return -1;
    m->input = tensor_named(p->inputs, p->n_inputs, in);
    m->output = tensor_named(p->outputs, p->n_outputs, out);
    if (m->input < 0 || m->output < 0 || p->inputs[m->input].dtype != WF_F32 || p->inputs[m->input].rank != 2 ||
        p->outputs[m->output].dtype != WF_F32 || p->outputs[m->output].rank != 2) {
      lerr(c, "%s: '%s' and '%s' must be an f32 matrix input and output of this plan", w, in, out);
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (p->moves[j].input == m->input || p->moves[j].output == m->output) {
        lerr(c, "%s: input '%s' or output '%s' listed twice", w, in, out);
        return -1;
      }
  }
  return 0;
}

static int load_pipeline(lctx *c, wf_plan *p, const cJSON *o) {
  wf_plan_pipeline *P = &p->pipe;
  int64_t mesh[2], rows;
  const cJSON *st;
  if (!cJSON_IsObject(o) || get_ints(c, o, "mesh", "pipeline", mesh, 2, 1, 1 << 16) ||
      get_int_in(c, o, "rows_per_stage", "pipeline", 1, 1 << 16, &rows) || !(st = get(c, o, "stages", "pipeline")))
    return -1;
  int n = cJSON_IsArray(st) ? cJSON_GetArraySize(st) : 0;
  if (n < 2 || n > 1024 || rows * n != mesh[1] || p->mesh_w != mesh[0] || p->mesh_h != rows) {
    lerr(c, "pipeline: expected 2 to 1024 stages of rows_per_stage rows making the mesh, stage 0 this %dx%d plan",
         p->mesh_w, p->mesh_h);
    return -1;
  }
  P->mesh_w = (int)mesh[0], P->mesh_h = (int)mesh[1], P->rows_per_stage = (int)rows;
  P->stages = calloc((size_t)n, sizeof *P->stages);
  WF_ASSERT(P->stages);
  P->n_stages = n;
  for (int k = 0; k < n; k++) {
    char w[48], cw[96];
    snprintf(w, sizeof w, "pipeline.stages[%d]", k);
    const cJSON *e = cJSON_GetArrayItem(st, k);
    wf_plan_stage *S = &P->stages[k];
    int64_t r[2];
    if (get_str(c, e, "plan", w, S->plan, sizeof S->plan) || inner_dir(c, S->plan, w, k == 0) ||
        get_ints(c, e, "rows", w, r, 2, 0, mesh[1]))
      return -1;
    if (r[0] != k * rows || r[1] != (k + 1) * rows || (k == 0) != !S->plan[0]) {
      lerr(c, "%s: stage %d holds rows [%lld, %lld) and is %s", w, k, (long long)(k * rows),
           (long long)((k + 1) * rows), k ? "a plan directory inside this plan" : "this plan (\"plan\": \"\")");
      return -1;
    }
    S->rows[0] = (int)r[0], S->rows[1] = (int)r[1];
    if (!k) continue;
    const cJSON *cs;
    if (get_str(c, e, "transfer", w, S->transfer, sizeof S->transfer) || inner_dir(c, S->transfer, w, 0) ||
        !(cs = get(c, e, "carries", w)))
      return -1;
    int nc = cJSON_IsArray(cs) ? cJSON_GetArraySize(cs) : 0;
    if (nc < 1 || nc > 4096) {
      lerr(c, "%s.carries: expected 1 to 4096 {\"name\": NAME, \"moved\": NAME}", w);
      return -1;
    }
    S->carries = calloc((size_t)nc, sizeof *S->carries);
    WF_ASSERT(S->carries);
    S->n_carries = nc;
    for (int i = 0; i < nc; i++) {
      snprintf(cw, sizeof cw, "%s.carries[%d]", w, i);
      const cJSON *ci = cJSON_GetArrayItem(cs, i);
      if (get_str(c, ci, "name", cw, S->carries[i].name, 256) || get_str(c, ci, "moved", cw, S->carries[i].moved, 256))
        return -1;
    }
  }
  P->present = 1;
  return 0;
}

/* A key given twice in one object: cJSON keeps both and reads the first, so a duplicated
 * line would be half ignored. 0, or -1 after naming the first such key. */
static int check_duplicate_keys(lctx *c, const cJSON *o, const char *where) {
  for (const cJSON *a = o ? o->child : NULL; a; a = a->next) {
    if (cJSON_IsObject(o))
      for (const cJSON *b = a->next; b; b = b->next)
        if (a->string && b->string && !strcmp(a->string, b->string)) {
          lerr(c, "%s: key '%s' is given twice", where, a->string);
          return -1;
        }
    if (cJSON_IsObject(a) || cJSON_IsArray(a)) {
      char w[160];
      if (cJSON_IsObject(o)) snprintf(w, sizeof w, "%s.%s", where, a->string ? a->string : "?");
      else snprintf(w, sizeof w, "%s[]", where);
      if (check_duplicate_keys(c, a, w)) return -1;
    }
  }
  return 0;
}

/* One file the manifest names against its digest. 0 when it matches; 1 when it differs. */
static int check_digest(lctx *c, const cJSON *digests, const char *dir, const char *rel, int allow) {
  /* A missing name, or one outside the plan, is reported where the key is read; such a file
   * is not even opened here. */
  if (!rel || !rel[0] || strstr(rel, "..") || rel[0] == '/') return 0;
  const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(digests, rel));
  char path[2400], hex[65];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  if (!want) {
    if (allow) return 1;
    lerr(c, "digests: no digest for '%s', which the manifest names (waferc seals every file of a plan; "
            "--allow-modified-plan runs a plan edited by hand)", rel);
    return 1;
  }
  if (wf_sha256_file(path, hex)) {
    if (allow) return 1;
    wf_error_at(path, "cannot read this file of the plan: %s", strerror(errno));
    c->errors++;
    return 1;
  }
  if (strcmp(hex, want)) {
    if (allow)
      wf_warning(wf_loc_make(path, 0, 0), "modified since waferc wrote the plan (its SHA-256 is not the "
                                          "manifest's); running it as --allow-modified-plan asks");
    else {
      wf_error_at(path, "modified or truncated since waferc wrote the plan: its SHA-256 is %.12s..., the "
                        "manifest's digests.%s says %.12s... (recompile the plan, or run a hand-edited "
                        "plan with --allow-modified-plan)", hex, rel, want);
      c->errors++;
    }
    return 1;
  }
  return 0;
}

/* The plan as waferc sealed it (docs/plan-format.md, "Digests"): the manifest's own digest
 * and every file it names. With allow, a difference is a warning, and a plan without
 * digests (written by hand) is taken as it is. */
static int check_digests(lctx *c, const cJSON *root, const char *text, size_t len, const char *dir, int allow) {
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "digests");
  if (!cJSON_IsObject(d)) {
    if (allow) return 0;
    lerr(c, "digests: missing: this manifest was not sealed by waferc (written or edited by hand?); "
            "recompile the plan, or run it with --allow-modified-plan");
    return -1;
  }
  long at = wf_digest_self_find(text, len);
  char hex[65];
  if (at >= 0) wf_digest_self_hash(text, len, at, hex);
  if (at < 0 || strncmp(hex, text + at, 64)) {
    if (allow)
      wf_warning(wf_loc_make(c->path, 0, 0), "modified since waferc wrote the plan (digests.manifest.json "
                                             "does not match); running it as --allow-modified-plan asks");
    else {
      lerr(c, "modified since waferc wrote the plan: digests.manifest.json %s (recompile the plan, or run "
              "a hand-edited plan with --allow-modified-plan)",
           at < 0 ? "is missing" : "does not match the manifest's text");
      return -1;
    }
  }
  int bad = 0;
  const cJSON *r, *cl, *k;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(root, "regions"))
    cJSON_ArrayForEach(cl, cJSON_GetObjectItemCaseSensitive(r, "classes"))
      bad |= check_digest(c, d, dir, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cl, "program")), allow);
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(root, "kernels"))
    bad |= check_digest(c, d, dir, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "file")), allow);
  /* weights.bin is read only when it holds bytes; a plan without weights may lack the file. */
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "weights");
  const char *wfile = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "file"));
  const cJSON *wbytes = cJSON_GetObjectItemCaseSensitive(w, "bytes");
  if (wfile && (!cJSON_IsNumber(wbytes) || wbytes->valuedouble != 0 || cJSON_GetObjectItemCaseSensitive(d, wfile)))
    bad |= check_digest(c, d, dir, wfile, allow);
  return bad && !allow ? -1 : 0;
}

wf_plan *wf_plan_load(const char *dir) { return wf_plan_load_ex(dir, 0); }

wf_plan *wf_plan_load_ex(const char *dir, unsigned flags) {
  char mpath[1200];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  size_t len = 0;
  char *text = wf_read_file(mpath, &len);
  if (!text) {
    wf_error_at(mpath, "cannot read the plan manifest: %s", strerror(errno));
    return NULL;
  }
  wf_plan *p = wf_plan_load_text(dir, text, len, flags);
  free(text);
  return p;
}

wf_plan *wf_plan_load_text(const char *dir, const char *text, size_t len, unsigned flags) {
  wf_plan *p = calloc(1, sizeof *p);
  WF_ASSERT(p != NULL);
  snprintf(p->dir, sizeof p->dir, "%s", dir);
  char mpath[1200];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  lctx c = {mpath, 0, 0};
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    long off = at && at >= text && at <= text + len ? (long)(at - text) : 0;
    int line = 1, col = 1;
    for (long i = 0; i < off; i++) {
      if (text[i] == '\n') line++, col = 1;
      else col++;
    }
    wf_error(wf_loc_make(mpath, (uint32_t)line, (uint32_t)col), "malformed JSON in the plan manifest");
    cJSON_Delete(root);
    free(p);
    return NULL;
  }
  int sealed = check_digests(&c, root, text, len, dir, (flags & WF_PLAN_ALLOW_MODIFIED) != 0);
  p->allow_modified = (flags & WF_PLAN_ALLOW_MODIFIED) != 0;
  if (sealed || check_duplicate_keys(&c, root, "manifest")) goto fail;
  int64_t fv = 0, mesh[2];
  if (get_int(&c, root, "format_version", "manifest", &fv)) goto fail;
  if (fv < WF_PLAN_FORMAT_MIN || fv > WF_PLAN_FORMAT_VERSION) {
    lerr(&c, "unsupported plan format_version %lld (this waferrun reads %d to %d)", (long long)fv,
         WF_PLAN_FORMAT_MIN, WF_PLAN_FORMAT_VERSION);
    goto fail;
  }
  c.format_version = fv;
  if (load_target(&c, cJSON_GetObjectItemCaseSensitive(root, "target"), &p->target)) goto fail;
  if (get_ints(&c, root, "mesh", "manifest", mesh, 2, 1, PLAN_MAX_SIDE)) goto fail;
  if (mesh[0] < 1 || mesh[1] < 1 || mesh[0] > p->target.fabric_w || mesh[1] > p->target.fabric_h) {
    lerr(&c, "mesh %lldx%lld does not fit the %dx%d fabric", (long long)mesh[0], (long long)mesh[1],
         p->target.fabric_w, p->target.fabric_h);
    goto fail;
  }
  p->mesh_w = (int)mesh[0];
  p->mesh_h = (int)mesh[1];
  p->target.mesh_w = p->mesh_w;
  p->target.mesh_h = p->mesh_h;
  const cJSON *colors = get(&c, root, "colors", "manifest");
  if (!colors || !cJSON_IsArray(colors)) goto fail;
  for (int i = 0; i < cJSON_GetArraySize(colors); i++) {
    int64_t col;
    char where[32];
    snprintf(where, sizeof where, "colors[%d]", i);
    if (get_int(&c, cJSON_GetArrayItem(colors, i), "color", where, &col)) goto fail;
    if (col < 0 || col >= p->target.colors || (p->target.reserved_colors >> col & 1)) {
      lerr(&c, "%s: color %lld is not a usable color of target '%s'", where, (long long)col,
           p->target.name);
      goto fail;
    }
    p->colors_used |= 1u << col;
  }
  if (load_regions(&c, p, get(&c, root, "regions", "manifest"))) goto fail;
  if (check_colors(&c, p)) goto fail;

  /* weights.bin before the weight index, so ranges can be checked. */
  const cJSON *w = get(&c, root, "weights", "manifest");
  if (!w) goto fail;
  char wfile[256];
  if (get_str(&c, w, "file", "weights", wfile, sizeof wfile) ||
      get_int_in(&c, w, "bytes", "weights", 0, JSON_INT_MAX, &p->weight_bytes))
    goto fail;
  if (!wfile[0] || strstr(wfile, "..") || wfile[0] == '/') { /* as program paths: inside the plan */
    lerr(&c, "weights.file '%s' must be a relative path inside the plan", wfile);
    goto fail;
  }
  if (p->weight_bytes > 0) {
    char wpath[1400];
    snprintf(wpath, sizeof wpath, "%s/%s", dir, wfile);
    size_t got = 0;
    p->weight_data = (uint8_t *)wf_read_file(wpath, &got);
    if (!p->weight_data) {
      wf_error_at(wpath, "cannot read weights: %s", strerror(errno));
      goto fail;
    }
    if ((int64_t)got != p->weight_bytes) {
      wf_error_at(wpath, "has %zu bytes; the manifest says %lld", got, (long long)p->weight_bytes);
      goto fail;
    }
  }
  if (load_tensors(&c, p, get(&c, w, "tensors", "weights"), "weights.tensors", &p->weights,
                   &p->n_weights, 1) || check_weight_symbols(&c, p) ||
      load_tensors(&c, p, get(&c, root, "inputs", "manifest"), "inputs", &p->inputs, &p->n_inputs, 0) ||
      load_tensors(&c, p, get(&c, root, "outputs", "manifest"), "outputs", &p->outputs,
                   &p->n_outputs, 0) ||
      check_weight_ranges(&c, p) || check_producers(&c, p))
    goto fail;

  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops");
  if (ops && cJSON_IsArray(ops)) {
    p->n_ops = cJSON_GetArraySize(ops);
    p->ops = calloc((size_t)p->n_ops + 1, sizeof *p->ops);
    WF_ASSERT(p->ops);
    for (int i = 0; i < p->n_ops; i++) {
      const cJSON *o = cJSON_GetArrayItem(ops, i);
      char where[32];
      snprintf(where, sizeof where, "ops[%d]", i);
      if (get_str(&c, o, "op", where, p->ops[i].op, sizeof p->ops[i].op) ||
          get_int(&c, o, "predicted_cycles", where, &p->ops[i].predicted))
        goto fail;
      const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");
      if (cJSON_IsString(r)) snprintf(p->ops[i].result, sizeof p->ops[i].result, "%s", r->valuestring);
      const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "loc");
      if (cJSON_IsString(l)) snprintf(p->ops[i].loc, sizeof p->ops[i].loc, "%s", l->valuestring);
      const cJSON *lw = cJSON_GetObjectItemCaseSensitive(o, "lowering");
      if (cJSON_IsString(lw))
        snprintf(p->ops[i].lowering, sizeof p->ops[i].lowering, "%s", lw->valuestring);
      const cJSON *fm = cJSON_GetObjectItemCaseSensitive(o, "fabric_move");
      if (cJSON_IsString(fm))
        snprintf(p->ops[i].fabric_move, sizeof p->ops[i].fabric_move, "%s", fm->valuestring);
      if (load_colls(&c, p, o, i, where) || load_phases(&c, &p->ops[i], o, where)) goto fail;
      p->ops[i].band = -1;
      const cJSON *bd = cJSON_GetObjectItemCaseSensitive(o, "band");
      if (bd) {
        int r = cJSON_IsString(bd) ? find_region(p, bd->valuestring) : -1;
        if (r < 0 || p->regions[r].within < 0) {
          lerr(&c, "%s.band must name a region within another (a band of its rows)", where);
          goto fail;
        }
        p->ops[i].band = r;
      }
    }
    for (int k = 0; k < p->n_colls; k++)
      if (p->colls[k].op < 0) {
        lerr(&c, "ops[].collectives: no collective has index %d (they must be numbered 0..%d)", k,
             p->n_colls - 1);
        goto fail;
      }
  }
  int64_t num;
  p->tokens_per_run =
      num_int(cJSON_GetObjectItemCaseSensitive(root, "tokens_per_run"), 1, JSON_INT_MAX, &num) ? 1 : num;
  /* Counts of the ops that transpose or relay out over the fabric (optional: older plans). */
  p->fabric_transposes =
      num_int(cJSON_GetObjectItemCaseSensitive(root, "fabric_transposes"), 0, INT32_MAX, &num) ? -1 : (int)num;
  p->relayouts = num_int(cJSON_GetObjectItemCaseSensitive(root, "relayouts"), 0, INT32_MAX, &num) ? -1 : (int)num;
  const cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generate");
  if (gen && load_generate(&c, p, gen)) goto fail;
  const cJSON *pipe = cJSON_GetObjectItemCaseSensitive(root, "pipeline");
  if (pipe && load_pipeline(&c, p, pipe)) goto fail;
  const cJSON *moe = cJSON_GetObjectItemCaseSensitive(root, "moe");
  if (moe && load_routes(&c, p, moe)) goto fail;
  const cJSON *moves = cJSON_GetObjectItemCaseSensitive(root, "switch_weights");
  if (moves && load_moves(&c, p, moves)) goto fail;
  const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "predicted_cycles");
  if (num_int(pt, 0, JSON_INT_MAX, &num) == 0) p->predicted_total = num;
  /* `op N` markers must name an op of the manifest; a `phase N` marker (0..2) must follow,
   * in program order, the marker of an op with phases. */
  for (int k = 0; k < p->n_classes; k++)
    for (int i = 0, cur = -1; i < p->classes[k]->n_code; i++) {
      const wf_pe_instr *in = &p->classes[k]->code[i];
      if (in->op == WF_PEOP_PHASE && (in->args[0].term.kind != WF_TERM_INT || in->args[0].term.k < 0 ||
                                      in->args[0].term.k > 2 || cur < 0 || !p->ops[cur].has_phases)) {
        char path[1200];
        snprintf(path, sizeof path, "%s/programs/%s.wpe", dir, p->classes[k]->name);
        if (in->args[0].term.kind != WF_TERM_INT || in->args[0].term.k < 0 || in->args[0].term.k > 2)
          wf_error(wf_loc_make(path, (uint32_t)in->line, 1), "phase %d is not 0 (alignment), 1 (loop) or 2 (drain)",
                   (int)in->args[0].term.k);
        else
          wf_error(wf_loc_make(path, (uint32_t)in->line, 1),
                   "a phase marker outside an op whose manifest entry has phases");
        goto fail;
      }
      if (in->op == WF_PEOP_OP && (in->args[0].term.k < 0 || in->args[0].term.k >= p->n_ops)) {
        char path[1200];
        snprintf(path, sizeof path, "%s/programs/%s.wpe", dir, p->classes[k]->name);
        wf_error(wf_loc_make(path, (uint32_t)in->line, 1), "op index %d is not in the manifest's ops (%d)",
                 (int)in->args[0].term.k, p->n_ops);
        goto fail;
      }
      if (in->op == WF_PEOP_OP) cur = (int)in->args[0].term.k;
      if (in->op == WF_PEOP_COLL && (in->args[0].term.kind != WF_TERM_INT || in->args[0].term.k < -1 ||
                                     in->args[0].term.k >= p->n_colls)) {
        char path[1200];
        snprintf(path, sizeof path, "%s/programs/%s.wpe", dir, p->classes[k]->name);
        wf_error(wf_loc_make(path, (uint32_t)in->line, 1),
                 "collective index %d is not in the manifest's ops[].collectives (%d; -1 ends one)",
                 (int)in->args[0].term.k, p->n_colls);
        goto fail;
      }
    }
  cJSON_Delete(root);
  return p;
fail:
  cJSON_Delete(root);
  wf_plan_free(p);
  return NULL;
}

void wf_plan_free(wf_plan *p) {
  if (!p) return;
  for (int i = 0; i < p->n_classes; i++) wf_pe_class_free(p->classes[i]);
  free(p->classes);
  free(p->regions);
  free(p->places);
  free(p->inputs);
  free(p->outputs);
  free(p->weights);
  free(p->weight_data);
  free(p->ops);
  free(p->colls);
  free(p->routes);
  free(p->moves);
  free(p->gen.caches);
  free(p->gen.shared);
  for (int k = 0; k < p->pipe.n_stages; k++) free(p->pipe.stages[k].carries);
  free(p->pipe.stages);
  free(p);
}

int wf_plan_layouts_match(const char *a, const char *b) {
  for (;;) {
    while (*a >= 'A' && *a <= 'Z') a++;
    while (*b >= 'A' && *b <= 'Z') b++;
    if (*a != *b) return 0;
    if (!*a) return 1;
    a++, b++;
  }
}
