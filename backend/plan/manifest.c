/* plan/manifest.json, format_version 1, or 2 with pre-skewed weights (docs/plan-format.md).
 * Key order is fixed, so the same compile writes the same bytes. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/collectives/lower_band.h"
#include "backend/plan/llvm_kernels.h"
#include "backend/collectives/lower_collective.h"
#include "backend/gemm/lower_gemm.h"
#include "backend/plan/manifest.h"
#include "ir/rules.h"
#include "ir/support/plan_digest.h"
#include "ir/support/sha256.h"
#include "waferc/diag.h"
#include "waferc/version.h"

static cJSON *pair(int a, int b) {
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, cJSON_CreateNumber(a));
  cJSON_AddItemToArray(arr, cJSON_CreateNumber(b));
  return arr;
}

static cJSON *target_json(const wf_target *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", t->name);
  cJSON_AddStringToObject(o, "description", t->description);
  cJSON_AddItemToObject(o, "fabric", pair(t->fabric_w, t->fabric_h));
  cJSON_AddItemToObject(o, "program", pair(t->program_w, t->program_h));
  cJSON_AddNumberToObject(o, "sram_bytes", (double)t->sram_bytes);
  cJSON_AddNumberToObject(o, "sram_banks", t->sram_banks);
  cJSON_AddNumberToObject(o, "clock_hz", t->clock_hz);
  cJSON_AddNumberToObject(o, "fmac_per_cycle", t->fmac_per_cycle);
  cJSON_AddNumberToObject(o, "fp16_simd", t->fp16_simd);
  cJSON_AddNumberToObject(o, "wavelet_bits", t->wavelet_bits);
  cJSON_AddNumberToObject(o, "hop_cycles", t->hop_cycles);
  cJSON_AddNumberToObject(o, "ramp_cycles", t->ramp_cycles);
  cJSON_AddNumberToObject(o, "colors", t->colors);
  cJSON *res = cJSON_AddArrayToObject(o, "reserved_colors");
  for (int c = 0; c < WF_MAX_COLORS; c++)
    if (t->reserved_colors >> c & 1) cJSON_AddItemToArray(res, cJSON_CreateNumber(c));
  cJSON_AddNumberToObject(o, "switch_positions", t->switch_positions);
  cJSON_AddNumberToObject(o, "route_code_bits", t->route_code_bits);
  cJSON_AddNumberToObject(o, "queue_depth", t->queue_depth);
  cJSON_AddNumberToObject(o, "exp_cycles", t->exp_cycles);
  cJSON_AddNumberToObject(o, "div_cycles", t->div_cycles);
  cJSON_AddNumberToObject(o, "bank_conflict_cycles", t->bank_conflict_cycles);
  return o;
}

/* Index i is listed in the module's ints attribute `name`: partition's `scalar_args` and
 * `scalar_results`, the model's rank-0 arguments and results, held as [1] tensors. */
static int listed(const wf_module *m, const char *name, int i) {
  for (int a = 0; a < m->attrs.n; a++) {
    const wf_attr *at = &m->attrs.v[a];
    if (at->kind != WF_ATTR_INTS || strcmp(wf_str(m, at->name), name)) continue;
    for (int k = 0; k < at->u.ints.n; k++)
      if (at->u.ints.v[k] == i) return 1;
  }
  return 0;
}

/* name, symbol, dtype, shape, layout text, split per dim, region. `scalar`: the model's
 * interface has it rank 0 (its [1] block is the one element). */
static cJSON *tensor_json(const wf_lower *L, wf_value v, const char *name, int scalar) {
  wf_type st;
  const wf_type *t = wf_value_type(L->f, v);
  if (scalar && t->rank == 1 && t->dims[0] == 1) {
    st = *t;
    st.rank = st.layout.rank = 0;
    t = &st;
  }
  cJSON *o = cJSON_CreateObject();
  char sym[64];
  wf_lower_value_name(L, v, sym, sizeof sym);
  /* A lowering may let a result share its operand's block (an in-place collective). */
  if ((int)v < L->n_sym_of && L->sym_of[v] >= 0)
    snprintf(sym, sizeof sym, "%s", L->cls->syms[L->sym_of[v]].name);
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "symbol", sym);
  cJSON_AddStringToObject(o, "dtype", wf_dtype_name(t->dtype));
  cJSON *shape = cJSON_AddArrayToObject(o, "shape");
  cJSON *split = cJSON_CreateArray();
  char layout[128] = "{";
  for (int d = 0; d < t->rank; d++) {
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dims[d]));
    const wf_layout_dim *ld = &t->layout.dims[d];
    const char *ax = ld->split == WF_AXIS_X ? "x" : ld->split == WF_AXIS_Y ? "y" : "-";
    cJSON_AddItemToArray(split, cJSON_CreateString(ax));
    size_t n = strlen(layout);
    snprintf(layout + n, sizeof layout - n, "%s%s%s%s", d ? ", " : "", wf_str(L->m, ld->label),
             ld->split ? "_" : "", ld->split ? ax : "");
  }
  strncat(layout, "}", sizeof layout - strlen(layout) - 1);
  cJSON_AddStringToObject(o, "layout", layout);
  cJSON_AddItemToObject(o, "split", split);
  /* Dims the region does not divide are padded with zeros to whole blocks. */
  int64_t pad[WF_MAX_RANK];
  int any = 0, w, h; /* a value on a band of the rows: the band's size (lower_band.c) */
  wf_lower_value_wh(L, v, &w, &h);
  for (int d = 0; d < t->rank; d++) {
    int s = t->layout.rank == t->rank ? t->layout.dims[d].split : WF_AXIS_NONE;
    int64_t p = s == WF_AXIS_X ? w : s == WF_AXIS_Y ? h : 1;
    int64_t k = p > 1 ? wf_gemm_rect_k_pad(L->f, v, d, w, h) : 0; /* the W x H shifts' K */
    pad[d] = k ? k : (t->dims[d] + p - 1) / p * p;
    any |= pad[d] != t->dims[d];
  }
  if (any) {
    cJSON *ps = cJSON_AddArrayToObject(o, "padded_shape");
    for (int d = 0; d < t->rank; d++) cJSON_AddItemToArray(ps, cJSON_CreateNumber((double)pad[d]));
  }
  int region = t->layout.region >= 0 ? t->layout.region : L->region;
  cJSON_AddStringToObject(o, "region", wf_str(L->m, L->m->regions[region].name));
  /* the ids of a gather: valid in [0, index_bound) (negative ones count from the end), what
   * waferrun's generated inputs draw from */
  int64_t bound = L->f->values[v].kind == WF_VAL_ARG ? wf_lower_index_bound(L, v) : 0;
  if (bound > 0) cJSON_AddNumberToObject(o, "index_bound", (double)bound);
  return o;
}

static int all_digits(const char *s) {
  if (!*s) return 1;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* Adds the digest of dir/rel to obj (once per file). */
static int digest_file(cJSON *obj, const char *dir, const char *rel) {
  if (!rel || cJSON_GetObjectItemCaseSensitive(obj, rel)) return 0;
  char path[4400], hex[65];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, rel) >= sizeof path) {
    wf_error_at(dir, "the path of the plan's file '%s' is too long to digest (at most %zu bytes)", rel,
                sizeof path - 1);
    return WF_EXIT_IO;
  }
  if (wf_sha256_file(path, hex)) {
    wf_error_at(path, "cannot read a file of the plan to digest it: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  cJSON_AddStringToObject(obj, rel, hex);
  return 0;
}

/* "digests": every file the manifest names (programs, kernels, weights), then the manifest's
 * own entry, zeros until the text is printed (ir/support/plan_digest.h). */
static int add_digests(cJSON *root, const char *dir) {
  cJSON *d = cJSON_AddObjectToObject(root, "digests");
  int rc = 0;
  const cJSON *r, *cl, *k;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(root, "regions"))
    cJSON_ArrayForEach(cl, cJSON_GetObjectItemCaseSensitive(r, "classes"))
      if (!rc) rc = digest_file(d, dir, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cl, "program")));
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(root, "kernels"))
    if (!rc) rc = digest_file(d, dir, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "file")));
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "weights");
  if (!rc) rc = digest_file(d, dir, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "file")));
  cJSON_AddStringToObject(d, "manifest.json", "0000000000000000000000000000000000000000000000000000000000000000");
  return rc;
}

/* An argument whose use is an unskew (the switch's pre-skewed weight, ops.def): the skew the
 * host writes it in, as a weight's (its K dim 0 over the rows, N dim 1 over the columns). */
static int arg_skew(const wf_lower *L, wf_value v, wf_gemm_skew *sk) {
  wf_func_foreach_op(L->f, op) {
    if (op->code == WF_OP_UNSKEW && op->operands[0] == v && !wf_unskew_of(L->f, op, sk)) return 1;
  }
  return 0;
}

static void add_skew(cJSON *o, const wf_gemm_skew *sk) {
  cJSON *so = cJSON_AddObjectToObject(o, "skew");
  cJSON_AddStringToObject(so, "ring", sk->ring == WF_SKEW_PLAIN ? "plain" : "interleave");
  cJSON_AddNumberToObject(so, "tiles", (double)sk->tiles);
  cJSON_AddNumberToObject(so, "k_dim", sk->k_dim);
  cJSON_AddNumberToObject(so, "k_tile", (double)sk->k_tile);
  cJSON_AddNumberToObject(so, "other_dim", sk->other_dim);
  cJSON_AddNumberToObject(so, "other_tile", (double)sk->other_tile);
}

/* The longest of the bands' runs of ops, which then start again at 0. */
static int64_t flush_bands(int64_t *on_band, int n) {
  int64_t most = 0;
  for (int i = 0; i < n; i++) {
    if (on_band[i] > most) most = on_band[i];
    on_band[i] = 0;
  }
  return most;
}

/* A pre-skewed weight's skew on its region (a band's, for an expert's weight). */
static int value_skew(const wf_lower *L, wf_value v, wf_gemm_skew *sk) {
  int w, h;
  wf_lower_value_wh(L, v, &w, &h);
  return wf_gemm_value_skew(L->f, v, w, h, sk);
}

int wf_manifest_write(const wf_lower *L, const wf_manifest_weights *w, const char *flags,
                      const char *extra, const char *path) {
  const wf_pe_class *c = L->cls;
  const wf_region *reg = &L->m->regions[L->region];
  cJSON *root = cJSON_CreateObject();
  /* 2 only when a weight is pre-skewed: a waferrun that reads 1 refuses such a plan instead
   * of scattering the weight unaligned; every other plan stays readable by it */
  int version = 1;
  wf_gemm_skew sk;
  for (int i = 0; i < w->n && version == 1; i++)
    if (value_skew(L, w->values[i], &sk)) version = 2;
  for (int i = 0; i < L->f->n_args && version == 1; i++)
    if (arg_skew(L, L->f->args[i], &sk)) version = 2;
  cJSON_AddNumberToObject(root, "format_version", version);
  cJSON *comp = cJSON_AddObjectToObject(root, "compiler");
  cJSON_AddStringToObject(comp, "name", "waferc");
  cJSON_AddStringToObject(comp, "version", WF_VERSION_STRING);
  cJSON_AddStringToObject(comp, "flags", flags ? flags : "");
  cJSON_AddStringToObject(root, "function", wf_str(L->m, L->f->name));
  cJSON_AddItemToObject(root, "target", target_json(L->t));
  cJSON_AddItemToObject(root, "mesh", pair(L->t->mesh_w, L->t->mesh_h));

  cJSON *regions = cJSON_AddArrayToObject(root, "regions");
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "name", wf_str(L->m, reg->name));
  cJSON *rect = cJSON_AddArrayToObject(r, "rect");
  int rv[4] = {reg->x, reg->y, reg->w, reg->h};
  for (int i = 0; i < 4; i++) cJSON_AddItemToArray(rect, cJSON_CreateNumber(rv[i]));
  cJSON *classes = cJSON_AddArrayToObject(r, "classes");
  cJSON *cl = cJSON_CreateObject();
  cJSON_AddStringToObject(cl, "name", c->name);
  cJSON_AddItemToObject(cl, "rect", cJSON_Duplicate(rect, 1));
  char prog[128];
  snprintf(prog, sizeof prog, "programs/%s.wpe", c->name);
  cJSON_AddStringToObject(cl, "program", prog);
  cJSON_AddNumberToObject(cl, "memory_bytes", (double)c->mem_bytes);
  cJSON *mem = cJSON_AddArrayToObject(cl, "memory");
  for (int i = 0; i < c->n_syms; i++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "symbol", c->syms[i].name);
    cJSON_AddNumberToObject(s, "offset", (double)c->syms[i].offset);
    cJSON_AddNumberToObject(s, "bytes", (double)c->syms[i].bytes);
    cJSON_AddItemToArray(mem, s);
  }
  /* the colors this class's routers use and, past the budget, how many collectives were
   * serialized onto lent colors or relayed through PEs (each listed under its color) */
  cJSON *ccols = cJSON_AddArrayToObject(cl, "colors");
  for (int i = 0; i < c->n_colors; i++) cJSON_AddItemToArray(ccols, cJSON_CreateNumber(c->colors[i].color));
  int n_fb = wf_coll_cache_n_fallbacks(L), n_relayed = 0;
  for (int i = 0; i < n_fb; i++) n_relayed += wf_coll_cache_get_fallback(L, i)->relayed;
  if (n_fb) {
    cJSON *fo = cJSON_AddObjectToObject(cl, "color_fallbacks");
    cJSON_AddNumberToObject(fo, "serialized", n_fb - n_relayed);
    cJSON_AddNumberToObject(fo, "relayed", n_relayed);
  }
  cJSON_AddItemToArray(classes, cl);
  cJSON_AddItemToArray(regions, r);
  /* bands of the region's rows that values live on (expert-bands): no classes of their own,
   * their PEs run the region's */
  for (int b = 0; b < L->m->n_regions; b++) {
    if (b == L->region || !wf_lower_region_used(L, b)) continue;
    const wf_region *br = &L->m->regions[b];
    cJSON *bo = cJSON_CreateObject();
    cJSON_AddStringToObject(bo, "name", wf_str(L->m, br->name));
    cJSON *brect = cJSON_AddArrayToObject(bo, "rect");
    int bv[4] = {br->x, br->y, br->w, br->h};
    for (int i = 0; i < 4; i++) cJSON_AddItemToArray(brect, cJSON_CreateNumber(bv[i]));
    cJSON_AddStringToObject(bo, "within", wf_str(L->m, reg->name));
    cJSON_AddItemToArray(regions, bo);
  }

  cJSON *colors = cJSON_AddArrayToObject(root, "colors");
  for (int i = 0; i < c->n_colors; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "color", c->colors[i].color);
    cJSON_AddStringToObject(o, "purpose", c->colors[i].purpose);
    /* past the budget, later phases of another pattern were serialized onto this color */
    int ser = wf_coll_cache_shared(L, c->colors[i].color);
    for (int k = 0; k < wf_coll_cache_n_fallbacks(L); k++) {
      const wf_coll_fallback *fb = wf_coll_cache_get_fallback(L, k);
      ser |= fb->color == c->colors[i].color && !fb->relayed;
    }
    if (ser) cJSON_AddTrueToObject(o, "serialized");
    cJSON *fl = NULL;
    for (int k = 0; k < wf_coll_cache_n_fallbacks(L); k++) {
      const wf_coll_fallback *fb = wf_coll_cache_get_fallback(L, k);
      if (fb->color != c->colors[i].color) continue;
      if (!fl) fl = cJSON_AddArrayToObject(o, "fallbacks");
      cJSON *fo = cJSON_CreateObject();
      cJSON_AddStringToObject(fo, "collective", fb->what);
      if (fb->loc[0]) cJSON_AddStringToObject(fo, "loc", fb->loc);
      cJSON_AddStringToObject(fo, "how", fb->relayed ? "relayed" : "serialized");
      cJSON_AddNumberToObject(fo, "position", fb->pos);
      cJSON_AddItemToArray(fl, fo);
    }
    cJSON_AddItemToArray(colors, o);
  }

  cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
  for (int i = 0; i < L->f->n_args; i++) {
    wf_value v = L->f->args[i];
    char name[256];
    wf_lower_value_text(L, v, name, sizeof name);
    cJSON *o = tensor_json(L, v, name + 1, listed(L->m, "scalar_args", i));
    if (arg_skew(L, v, &sk)) add_skew(o, &sk);
    cJSON_AddItemToArray(inputs, o);
  }
  /* Output names follow waferc --interpret: the returned value's name, else output_<i>. */
  cJSON *outputs = cJSON_AddArrayToObject(root, "outputs"), *moe = NULL;
  const wf_op *ret = wf_func_return(L->f);
  for (int i = 0; ret && i < ret->n_operands; i++) {
    wf_value v = ret->operands[i];
    const char *vn = wf_str(L->m, L->f->values[v].name);
    int taken = 0;
    for (int j = 0; j < i; j++) taken |= ret->operands[j] == v;
    char name[256];
    if (!all_digits(vn) && !taken && !strchr(vn, '/')) snprintf(name, sizeof name, "%s", vn);
    else snprintf(name, sizeof name, "output_%d", i);
    cJSON_AddItemToArray(outputs, tensor_json(L, v, name, listed(L->m, "scalar_results", i)));
    /* an MoE router's expert indices (passes/moe_routes.c): waferrun counts tokens per expert */
    const wf_op *def = wf_value_get(L->f, v)->def;
    /* an argmax router's indices as a [.., 1] column (a reshape), or kept dims */
    const wf_op *am = wf_def_of(L->f, wf_unreshaped(L->f, v), WF_OP_ARGMAX);
    int top1 = am && wf_argmax_is_moe_route(L->f, am) &&
               wf_value_type(L->f, v)->dims[wf_value_type(L->f, v)->rank - 1] == 1;
    if (top1 || (def && def->code == WF_OP_TOPK && def->results[1] == v && wf_topk_is_moe_route(L->f, def))) {
      const wf_op *r0 = top1 ? am : def;
      const wf_type *gt = wf_value_type(L->f, r0->operands[0]);
      if (!moe) moe = cJSON_AddArrayToObject(root, "moe");
      cJSON *r = cJSON_CreateObject();
      cJSON_AddStringToObject(r, "output", name);
      cJSON_AddNumberToObject(r, "experts", (double)gt->dims[gt->rank - 1]);
      cJSON_AddNumberToObject(r, "k", top1 ? 1.0 : (double)wf_op_int(L->f, def, "k", 1));
      cJSON_AddItemToArray(moe, r);
    }
  }

  cJSON *weights = cJSON_AddObjectToObject(root, "weights");
  cJSON_AddStringToObject(weights, "file", "weights.bin");
  cJSON_AddNumberToObject(weights, "bytes", (double)w->total);
  cJSON *wt = cJSON_AddArrayToObject(weights, "tensors");
  for (int i = 0; i < w->n; i++) {
    const wf_value_info *vi = &L->f->values[w->values[i]];
    cJSON *o = tensor_json(L, w->values[i], wf_str(L->m, L->m->globals[vi->index].name), 0);
    /* an integer or bool constant is written as f32 words (emit.c) */
    cJSON_ReplaceItemInObjectCaseSensitive(o, "dtype", cJSON_CreateString("f32"));
    cJSON_AddNumberToObject(o, "offset", (double)w->offset[i]);
    cJSON_AddNumberToObject(o, "bytes", (double)w->bytes[i]);
    /* a MeshGEMM / Cannon operand the host writes already aligned (gemm_preskew.c) */
    if (value_skew(L, w->values[i], &sk)) add_skew(o, &sk);
    cJSON_AddItemToArray(wt, o);
  }

  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  int64_t total = 0;
  /* ops on bands of the rows (expert-bands) run at once, band beside band: a run of them
   * takes as long as its longest band's ops */
  int64_t *on_band = calloc((size_t)L->m->n_regions + 1, sizeof *on_band);
  WF_ASSERT(on_band);
  int n_transposes = 0, n_relayouts = 0; /* ops with a fabric_move of each kind */
  for (int i = 0; i < L->n_ops; i++) {
    const wf_lowered_op *lo = &L->ops[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", i);
    cJSON_AddStringToObject(o, "op", wf_opinfos[lo->op->code].name);
    cJSON_AddStringToObject(o, "result", lo->result);
    if (lo->op->loc.file) {
      char loc[512];
      snprintf(loc, sizeof loc, "%s:%u:%u", lo->op->loc.file, lo->op->loc.line, lo->op->loc.col);
      cJSON_AddStringToObject(o, "loc", loc);
    }
    cJSON_AddStringToObject(o, "lowering", lo->lowering ? lo->lowering : "");
    if (lo->explain[0]) cJSON_AddStringToObject(o, "explain", lo->explain);
    cJSON_AddNumberToObject(o, "predicted_cycles", (double)lo->predicted);
    if (lo->fabric_move) {
      unsigned fm = lo->fabric_move;
      cJSON_AddStringToObject(o, "fabric_move", fm == WF_MOVE_TRANSPOSE ? "transpose"
                                                : fm == WF_MOVE_RELAYOUT ? "relayout"
                                                                         : "transpose+relayout");
      n_transposes += (fm & WF_MOVE_TRANSPOSE) != 0;
      n_relayouts += (fm & WF_MOVE_RELAYOUT) != 0;
    }
    /* a dist.gemm's phases: the lowering predicts the alignment and the drain, the loop is
     * the rest of the op's prediction (which notes past the color budget may have raised) */
    if (lo->has_phases) { /* its programs hold `phase` markers: the loader wants the key */
      int64_t tot = lo->predicted > 0 ? lo->predicted : 0;
      int64_t al = lo->phase_predicted[0] < 0 ? 0 : lo->phase_predicted[0] < tot ? lo->phase_predicted[0] : tot;
      int64_t dr = lo->phase_predicted[2] < 0 ? 0 : lo->phase_predicted[2] < tot - al ? lo->phase_predicted[2] : tot - al;
      cJSON *ph = cJSON_AddObjectToObject(o, "phases");
      cJSON_AddNumberToObject(ph, "alignment", (double)al);
      cJSON_AddNumberToObject(ph, "loop", (double)(tot - al - dr));
      cJSON_AddNumberToObject(ph, "drain", (double)dr);
    }
    if (lo->n_colls) {
      cJSON *cs = cJSON_AddArrayToObject(o, "collectives");
      for (int j = 0; j < lo->n_colls; j++) {
        const wf_lowered_coll *lc = &lo->colls[j];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", lc->index);
        cJSON_AddStringToObject(e, "collective", lc->axis == WF_AXIS_X ? "allreduce-x" : "allreduce-y");
        cJSON_AddStringToObject(e, "algo", wf_coll_algo_name((wf_coll_algo)lc->algo));
        cJSON_AddNumberToObject(e, "pes", lc->pes);
        cJSON_AddNumberToObject(e, "words", (double)lc->words);
        cJSON_AddNumberToObject(e, "predicted_cycles", (double)(int64_t)(lc->predicted + 0.5));
        if (lc->lowered > 0) cJSON_AddNumberToObject(e, "lowered_cycles", (double)(int64_t)(lc->lowered + 0.5));
        cJSON_AddItemToArray(cs, e);
      }
    }
    cJSON_AddItemToArray(ops, o);
    if (lo->band >= 0) {
      cJSON_AddStringToObject(o, "band", wf_str(L->m, L->m->regions[lo->band].name));
      on_band[lo->band] += lo->predicted;
    } else {
      total += flush_bands(on_band, L->m->n_regions) + lo->predicted;
    }
  }
  total += flush_bands(on_band, L->m->n_regions);
  free(on_band);
  cJSON_AddNumberToObject(root, "predicted_cycles", (double)total);
  cJSON_AddNumberToObject(root, "fabric_transposes", n_transposes);
  cJSON_AddNumberToObject(root, "relayouts", n_relayouts);
  /* A prefill plan processes B·S tokens per run (the packed attention's q: [B, S, E]); the
   * report's tokens/s counts them. Other plans keep the default of 1. */
  int64_t tokens = 0;
  for (int i = 0; i < L->n_ops && !tokens; i++) {
    const wf_op *op = L->ops[i].op;
    if (op->code != WF_OP_ATTENTION || wf_op_int(L->f, op, "heads", 0) <= 0) continue;
    const wf_type *q = wf_value_type(L->f, op->operands[0]);
    tokens = q->dims[0] * q->dims[1];
  }
  if (tokens > 1) cJSON_AddNumberToObject(root, "tokens_per_run", (double)tokens);
  /* Compute kernels per class (backend/plan/llvm_kernels.h); a plan without any is interpreted. */
  cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
  cJSON *k = wf_llvm_kernels_manifest(c);
  if (k) cJSON_AddItemToArray(kernels, k);

  cJSON *ex = extra ? cJSON_Parse(extra) : NULL;
  if (extra && !cJSON_IsObject(ex)) {
    wf_error_at(path, "internal error: the manifest's extra members are not a JSON object");
    cJSON_Delete(ex);
    cJSON_Delete(root);
    return WF_EXIT_USAGE;
  }
  for (cJSON *it = ex ? ex->child : NULL; it;) {
    cJSON *next = it->next;
    cJSON_AddItemToObject(root, it->string, cJSON_DetachItemViaPointer(ex, it));
    it = next;
  }
  cJSON_Delete(ex);
  /* Sealed last, when every other file of the plan is written. */
  char dir[4400];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  int rc = add_digests(root, dir);
  if (rc) {
    cJSON_Delete(root);
    return rc;
  }
  char *printed = cJSON_Print(root);
  WF_ASSERT(printed != NULL); /* it fails only when an allocation does: out of host memory, exit 7 */
  cJSON_Delete(root);
  size_t len = strlen(printed);
  char *text = realloc(printed, len + 2); /* the digest covers the bytes written: the newline too */
  WF_ASSERT(text != NULL);
  text[len++] = '\n';
  text[len] = 0;
  long at = wf_digest_self_find(text, len);
  WF_ASSERT(at >= 0);
  char hex[65];
  wf_digest_self_hash(text, len, at, hex);
  memcpy(text + at, hex, 64);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0) rc = WF_EXIT_IO;
  if (f && fclose(f)) rc = WF_EXIT_IO;
  if (rc) wf_error_at(path, "cannot write the manifest: %s", strerror(errno));
  free(text);
  return rc;
}
