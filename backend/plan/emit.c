/* wf_backend_emit_plan: lowers the entry function and writes the plan directory
 * (docs/plan-format.md). Order matters: the old manifest is removed first and the new one
 * is renamed into place last, so a failed compile never leaves a plan that looks valid, and
 * what a failed compile had written is removed (remove_partial_plan). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/plan/llvm_kernels.h"
#include "backend/collectives/lower_band.h"
#include "backend/collectives/lower_collective.h"
#include "backend/gemm/gemm_kcut.h"
#include "backend/plan/manifest.h"
#include "ir/pe/pe_routes.h"
#include "ir/rules.h"
#include "waferc/backend.h"
#include "waferc/collectives.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

static int mkdir_if_needed(const char *path) {
  if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
  wf_error_at(path, "cannot create directory: %s", strerror(errno));
  return -1;
}

/* After a failed compile: removes what this compile wrote into the plan directory (the
 * programs, the kernels, weights.bin) and the subdirectories it left empty, so that bad
 * input never leaves a half-written plan. Files it did not write are not touched. */
static void remove_partial_plan(const char *plan_dir, const char *cls) {
  static const char *const files[] = {"programs/%s.wpe", "kernels/%s.ll", "weights.bin"};
  char rel[512], path[4700];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(rel, sizeof rel, files[i], cls);
    snprintf(path, sizeof path, "%s/%s", plan_dir, rel);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/programs", plan_dir);
  rmdir(path); /* only if empty */
  snprintf(path, sizeof path, "%s/kernels", plan_dir);
  rmdir(path);
}

/* Every value the backend touches must carry a layout on the same region, or on a band of its
 * rows. */
static int check_layout(wf_lower *L, wf_value v, wf_loc loc) {
  const wf_type *t = wf_value_type(L->f, v);
  char name[64];
  wf_lower_value_name(L, v, name, sizeof name);
  if (t->layout.rank == 0) {
    wf_error(loc, "%s has no layout: run the partition pass before the backend (waferc's default "
                  "pipeline does)", name);
    return -1;
  }
  if (L->region < 0) L->region = t->layout.region;
  if (t->layout.region != L->region && !wf_lower_is_band(L, t->layout.region)) {
    wf_error(loc, "%s lives on region @%s but the plan lowers region @%s: a plan holds one region and bands of "
                  "its whole rows (give every tensor the same region, as the partition pass does; expert-bands "
                  "makes bands)", name, wf_str(L->m, L->m->regions[t->layout.region].name),
             wf_str(L->m, L->m->regions[L->region].name));
    return -1;
  }
  if (t->dtype != WF_F32 && !wf_int_words_ok(L->m, L->f, v)) {
    wf_error(loc, "%s has dtype %s: the mesh computes in f32; integers and bools are held as f32 words, "
                  "exact below 2^24, only where they stay so (inputs, constants, indices, compares, where, "
                  "casts and data movement; docs/partition.md) (the reference interpreter, waferc --interpret, "
                  "runs other dtypes)",
             name, wf_dtype_name(t->dtype));
    return -2;
  }
  return 0;
}

/* A contraction whose K is padded and whose operands' padding there partition could not prove
 * safe carries zero_k (passes/partition_pad.c): the flagged operands' padding along K is
 * zeroed in place before the op (no reader of padding minds). Returns the cycles. */
static int64_t zero_k_padding(wf_lower *L, const wf_op *op) {
  if (op->code != WF_OP_MATMUL && op->code != WF_OP_DIST_GEMM && op->code != WF_OP_DIST_GEMM_T) return 0;
  int64_t bits = wf_op_int(L->f, op, "zero_k", 0), cycles = 0;
  for (int i = 0; i < 2; i++) {
    if (!(bits >> i & 1)) continue;
    int rank = wf_value_type(L->f, op->operands[i])->rank;
    /* K: A's last dim; B's next to last (its only one when 1-D), dist.gemm_t's B [N, K] its last */
    int k = i == 0 || op->code == WF_OP_DIST_GEMM_T || rank < 2 ? rank - 1 : rank - 2;
    cycles += wf_lower_zero_axis_padding(L, op->operands[i], k); /* one after the other (a PE may hold both) */
  }
  return cycles;
}

static int lower_func(wf_lower *L) {
  wf_func *f = L->f;
  int bad = 0, unsupported = 0;
  for (int i = 0; i < f->n_args; i++) {
    int r = check_layout(L, f->args[i], f->loc);
    bad |= r == -1;
    unsupported |= r == -2;
  }
  wf_func_foreach_op(f, op) {
    for (int i = 0; i < op->n_operands; i++)
      if (f->values[op->operands[i]].kind == WF_VAL_GLOBAL) {
        int r = check_layout(L, op->operands[i], op->loc);
        bad |= r == -1;
        unsupported |= r == -2;
      }
    for (int i = 0; i < op->n_results; i++) {
      int r = check_layout(L, op->results[i], op->loc);
      bad |= r == -1;
      unsupported |= r == -2;
    }
  }
  if (bad) return WF_EXIT_INPUT;
  if (unsupported) return WF_EXIT_UNSUPPORTED;
  if (L->region < 0) {
    wf_error(f->loc, "function @%s has no values to lower", wf_str(L->m, f->name));
    return WF_EXIT_INPUT;
  }
  const wf_region *reg = &L->m->regions[L->region];
  if (reg->x < 0 || reg->y < 0 || reg->x + reg->w > L->t->mesh_w || reg->y + reg->h > L->t->mesh_h) {
    wf_error(reg->loc, "region @%s rect(%d, %d, %d, %d) does not fit the %dx%d mesh of target '%s'",
             wf_str(L->m, reg->name), reg->x, reg->y, reg->w, reg->h, L->t->mesh_w, L->t->mesh_h,
             L->t->name);
    return WF_EXIT_NOFIT;
  }
  L->w = reg->w;
  L->h = reg->h;
  /* Inputs first, so their symbols lead the memory map even when unused. */
  for (int i = 0; i < f->n_args; i++) wf_lower_sym(L, f->args[i]);

  int n_ops = 0;
  wf_func_foreach_op(f, op) if (op->code != WF_OP_RETURN) n_ops++;
  L->ops = calloc((size_t)n_ops + 1, sizeof *L->ops);
  L->skew_in = calloc((size_t)L->h * 2, sizeof *L->skew_in);
  WF_ASSERT(L->ops && L->skew_in);
  L->skew_out = L->skew_in + L->h;
  int errors = 0;
  wf_func_foreach_op(f, op) {
    if (op->code == WF_OP_RETURN) continue;
    wf_lowered_op *lo = &L->ops[L->n_ops];
    lo->op = op;
    wf_lower_value_name(L, op->results[0], lo->result, sizeof lo->result);
    wf_emit(L, NULL, WF_PEOP_OP, (wf_pe_arg[]){wf_arg_int(L->n_ops)});
    L->move_bits = 0;
    /* the op before's rows' ends, if its lowering gave them, are this one's rows' starts */
    if ((L->skew_in_ok = L->skew_out_ok)) {
      int64_t *t = L->skew_in;
      L->skew_in = L->skew_out, L->skew_out = t;
    }
    L->skew_out_ok = 0;
    int rc = 0;
    int region = op->n_results ? wf_value_type(f, op->results[0])->layout.region : L->region;
    int band = op->code != WF_OP_DIST_RELAYOUT && region != L->region;
    lo->band = band ? region : -1;
    /* an op reads the values of its own region: dist.relayout alone moves one between the
     * region and a band (a band's PEs hold no block of the region's values, nor the reverse) */
    for (int i = 0; i < op->n_operands && !rc && op->code != WF_OP_DIST_RELAYOUT; i++) {
      const wf_type *ot = wf_value_type(f, op->operands[i]);
      if (ot->layout.rank && ot->layout.region != region) {
        char name[64];
        wf_lower_value_name(L, op->operands[i], name, sizeof name);
        wf_error(op->loc, "'%s' on region @%s reads %s on @%s: an op reads values of its own region, and "
                          "dist.relayout moves one onto or off a band of the rows (expert-bands makes them)",
                 wf_opinfos[op->code].name, wf_str(L->m, L->m->regions[region].name), name,
                 wf_str(L->m, L->m->regions[ot->layout.region].name));
        rc = WF_EXIT_INPUT;
      }
    }
    if (!rc && band) rc = wf_lower_band_enter(L, region, op->loc);
    if (rc) {
      if (!errors) errors = rc;
      L->n_ops++;
      continue;
    }
    int64_t zeroed = zero_k_padding(L, op);
    if (op->code == WF_OP_DIST_RELAYOUT) rc = wf_lower_region_move(L, op, lo);
    else if (op->code == WF_OP_MATMUL) rc = wf_lower_matmul(L, op, lo);
    else if (op->code == WF_OP_DIST_GEMM) rc = wf_lower_gemm(L, op, lo);
    else if (op->code == WF_OP_DIST_GEMM_T) rc = wf_lower_gemm_t(L, op, lo);
    else if (op->code == WF_OP_DIST_REDUCE || op->code == WF_OP_DIST_ALLREDUCE ||
             op->code == WF_OP_DIST_BROADCAST)
      rc = wf_lower_dist_coll(L, op, lo);
    else if (op->code == WF_OP_DIST_GEMV || op->code == WF_OP_DIST_GEMV_T) rc = wf_lower_gemv(L, op, lo);
    else if (op->code == WF_OP_SOFTMAX) rc = wf_lower_softmax(L, op, lo);
    else if (op->code == WF_OP_ATTENTION) rc = wf_lower_attention(L, op, lo);
    else if (op->code == WF_OP_DECODE_ATTENTION) rc = wf_lower_decode_attention(L, op, lo);
    else if (op->code == WF_OP_ROTATE_PAIRS) rc = wf_lower_rotate_pairs(L, op, lo);
    else if (op->code == WF_OP_LAYERNORM || op->code == WF_OP_RMSNORM) rc = wf_lower_norm(L, op, lo);
    else if (op->code == WF_OP_REDUCE_SUM || op->code == WF_OP_REDUCE_MEAN ||
             op->code == WF_OP_REDUCE_MAX)
      rc = wf_lower_reduce(L, op, lo);
    else if (op->code == WF_OP_RESHAPE || op->code == WF_OP_TRANSPOSE) rc = wf_lower_movement(L, op, lo);
    else if (op->code == WF_OP_SLICE || op->code == WF_OP_CONCAT || op->code == WF_OP_SPLIT)
      rc = wf_lower_slice_concat(L, op, lo);
    else if (op->code == WF_OP_KV_SWITCH) rc = wf_lower_kv_switch(L, op, lo);
    else if (op->code == WF_OP_UNSKEW) rc = wf_lower_unskew(L, op, lo);
    else if (op->code == WF_OP_SHIFT) rc = wf_lower_shift(L, op, lo);
    else if (op->code == WF_OP_GATHER) rc = wf_lower_gather(L, op, lo);
    else if (op->code == WF_OP_ARGMAX) rc = wf_lower_argmax(L, op, lo);
    else if (op->code == WF_OP_TOPK) rc = wf_lower_topk(L, op, lo);
    else if (op->code == WF_OP_SCATTER_ELEMENTS) rc = wf_lower_scatter(L, op, lo);
    else if (op->code == WF_OP_GATHER_ELEMENTS) rc = wf_lower_gather_elements(L, op, lo);
    else if ((wf_opinfos[op->code].flags & WF_OPF_ELEMENTWISE) || op->code == WF_OP_EXPAND || op->code == WF_OP_TRILU)
      rc = wf_lower_elementwise(L, op, lo);
    else {
      wf_error(op->loc, "op '%s' has no lowering to PE programs", wf_opinfos[op->code].name);
      rc = WF_EXIT_UNSUPPORTED;
    }
    if (!rc && zeroed) {
      lo->predicted += zeroed;
      size_t u = strlen(lo->explain);
      static const char *const which[] = {"", "A's", "B's", "A's and B's"};
      snprintf(lo->explain + u, sizeof lo->explain - u, "%s[%s padding along K zeroed first: %lld cycles]",
               u ? " " : "", which[wf_op_int(f, op, "zero_k", 0) & 3], (long long)zeroed);
    }
    if (band) {
      int brc = wf_lower_band_leave(L, op->loc);
      if (!rc) rc = brc;
    }
    if (rc && !errors) errors = rc; /* keep going: report every unsupported op at once */
    /* An op that does the same work on every PE with nothing over the fabric but, at most, a
     * statistic's allreduce along each row ends each row as late as it started it: the rows'
     * skew passes through it to the next op (row_skew.h). */
    if (!rc && L->skew_in_ok && !L->skew_out_ok && lo->lowering && !L->move_bits &&
        (!strcmp(lo->lowering, "local") || !strcmp(lo->lowering, "local+allreduce-x"))) {
      memcpy(L->skew_out, L->skew_in, (size_t)L->h * sizeof *L->skew_out);
      L->skew_out_ok = 1;
    }
    lo->fabric_move = L->move_bits;
    /* Past the color budget a collective was serialized or relayed: its swsets and relay
     * hops join the op's prediction, and the explain says so (nothing when colors sufficed). */
    char note[160];
    double extra = wf_coll_cache_take_extra(L, note, sizeof note);
    if (note[0] || extra != 0) {
      lo->predicted += (int64_t)(extra + (extra < 0 ? -0.5 : 0.5));
      size_t u = strlen(lo->explain);
      snprintf(lo->explain + u, sizeof lo->explain - u, "%s[past the color budget: %s, %+.0f cycles]",
               u ? " " : "", note, extra);
    }
    L->n_ops++;
  }
  return errors;
}

/* Over budget: name the first symbol that does not fit and the bytes missing. */
static int check_sram(const wf_lower *L) {
  const wf_pe_class *c = L->cls;
  if (c->mem_bytes <= L->t->sram_bytes) return 0;
  for (int i = 0; i < c->n_syms; i++) {
    const wf_pe_sym *s = &c->syms[i];
    if (s->offset + s->bytes <= L->t->sram_bytes) continue;
    wf_error(L->f->loc, "class '%s' does not fit the %lld-byte SRAM of a '%s' PE: symbol '%s' "
                        "(%lld bytes at offset %lld) is the first past the end; %lld bytes missing "
                        "in total",
             c->name, (long long)L->t->sram_bytes, L->t->name, s->name, (long long)s->bytes,
             (long long)s->offset, (long long)(c->mem_bytes - L->t->sram_bytes));
    break;
  }
  return WF_EXIT_NOFIT;
}

/* The routes a WSE router can hold (ir/pe/pe_routes.c), on every PE of the region: the rule
 * waferrun checks at load, so that waferc never writes a plan the runtime refuses (a
 * color-budget fallback that serialized routes a router cannot hold, say). */
static int check_routes_hold(const wf_lower *L, const char *dir) {
  const wf_region *r = &L->m->regions[L->region];
  char path[4096];
  snprintf(path, sizeof path, "%s/programs/%s.wpe", dir, L->cls->name);
  if (!wf_pe_check_routes(L->cls, r->x, r->y, r->w, r->h, r->x, r->y, r->w, r->h, path)) return 0;
  wf_note(WF_LOC_NONE, "the lowering wrote routes that no WSE router holds, so no plan was written; a "
                       "larger mesh (--mesh) needs fewer colors per PE, or fix the K-tree's shape "
                       "(--gemv-k=2); please report it with the command that made it");
  return WF_EXIT_NOFIT;
}

static int write_program(const wf_pe_class *c, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/programs/%s.wpe", dir, c->name);
  FILE *out = fopen(path, "w");
  if (!out) {
    wf_error_at(path, "cannot write PE program: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  wf_pe_class_write(c, out);
  if (fclose(out)) {
    wf_error_at(path, "cannot write PE program: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return 0;
}

/* weights.bin: each global the function uses, whole and row-major, 64-byte aligned. */
static int write_weights(wf_lower *L, const char *dir, wf_manifest_weights *w) {
  char path[4096];
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  FILE *out = fopen(path, "wb");
  if (!out) {
    wf_error_at(path, "cannot write weights: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  int64_t off = 0;
  int rc = 0;
  /* The function's constants, then the ones the lowering created (scalars). */
  int n_used = 0;
  wf_func_foreach_op(L->f, op) n_used += op->n_operands;
  for (int u = 0; u < n_used + L->n_consts && !rc; u++) {
    wf_value v = 0;
    if (u < n_used) {
      int k = u;
      wf_func_foreach_op(L->f, op) {
        if (k < op->n_operands) {
          v = op->operands[k];
          break;
        }
        k -= op->n_operands;
      }
    } else {
      v = L->consts[u - n_used];
    }
    if (L->f->values[v].kind != WF_VAL_GLOBAL) continue;
    int seen = 0;
    for (int k = 0; k < w->n; k++) seen |= w->values[k] == v;
    if (seen) continue;
    wf_tensor *t = wf_global_tensor(L->m, L->f->values[v].index);
    if (!t) {
      rc = WF_EXIT_INPUT;
      break;
    }
    static const char zeros[64];
    int64_t pad = (64 - off % 64) % 64;
    if (pad) fwrite(zeros, 1, (size_t)pad, out);
    off += pad;
    size_t bytes = wf_tensor_bytes(t);
    if (t->dtype != WF_F32) { /* integers and bools are f32 words on the PEs (check_layout: exact) */
      int64_t n = wf_tensor_numel(t);
      float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
      WF_ASSERT(f);
      for (int64_t k = 0; k < n; k++) f[k] = (float)wf_tensor_get(t, k);
      bytes = (size_t)n * sizeof *f;
      if (fwrite(f, 1, bytes, out) != bytes) rc = WF_EXIT_IO;
      free(f);
    } else if (fwrite(t->data, 1, bytes, out) != bytes) {
      rc = WF_EXIT_IO;
    }
    w->values[w->n] = v;
    w->offset[w->n] = off;
    w->bytes[w->n] = (int64_t)bytes;
    w->n++;
    off += (int64_t)bytes;
    wf_tensor_free(t);
  }
  w->total = off;
  if (fclose(out) && !rc) rc = WF_EXIT_IO;
  if (rc == WF_EXIT_IO) wf_error_at(path, "cannot write weights: %s", strerror(errno));
  return rc;
}

int wf_backend_emit_plan(wf_module *m, const wf_target *t, const char *plan_dir,
                         const wf_plan_opts *opts) {
  wf_plan_opts o = opts ? *opts : WF_PLAN_OPTS_DEFAULT;
  wf_func *f = wf_module_find_func(m, o.func ? o.func : "main");
  if (!f && !o.func && m->n_funcs) f = m->funcs[0];
  if (!f) {
    wf_error_at(plan_dir, "no function '%s' to lower", o.func ? o.func : "main");
    return WF_EXIT_USAGE;
  }
  wf_lower L;
  memset(&L, 0, sizeof L);
  L.m = m;
  L.f = f;
  L.t = t;
  L.region = -1;
  L.band = -1;
  L.dim_pad = wf_gemm_rect_k_pad;
  for (int i = 0; i < WF_COLOR_ROLES; i++) L.color[i] = -1;
  L.sym_of = malloc((size_t)(f->n_values + 1) * sizeof *L.sym_of);
  WF_ASSERT(L.sym_of);
  for (uint32_t i = 0; i <= f->n_values; i++) L.sym_of[i] = -1;
  L.n_sym_of = (int)f->n_values + 1;
  L.cls = wf_pe_class_new("main");
  L.reduce_algo = !o.reduce_algo ? -2 : strcmp(o.reduce_algo, "auto") ? wf_coll_algo_parse(o.reduce_algo) : -1;
  if (o.reduce_algo && L.reduce_algo == -1 && strcmp(o.reduce_algo, "auto")) {
    wf_error(WF_LOC_NONE, "unknown reduce algorithm '%s'", o.reduce_algo);
    wf_pe_class_free(L.cls);
    free(L.sym_of);
    return WF_EXIT_USAGE;
  }
  L.gemv_how = o.gemv_allreduce;
  L.gemv_k = o.gemv_k;
  L.gemv_groups = o.gemv_groups;

  /* Every constant's data is read before anything is written: a missing .npy is an I/O
   * error (exit 6) found before the plan directory is touched. */
  int bad_const = 0;
  wf_func_foreach_op(f, op) for (int i = 0; i < op->n_operands; i++) {
    const wf_value_info *vi = &f->values[op->operands[i]];
    int r = vi->kind == WF_VAL_GLOBAL ? wf_global_load(m, vi->index) : 0;
    if (r && !bad_const) bad_const = r == WF_EXIT_IO ? WF_EXIT_IO : WF_EXIT_INPUT;
  }
  if (bad_const) {
    wf_pe_class_free(L.cls);
    free(L.sym_of);
    return bad_const;
  }
  /* A stale manifest must not survive a failed compile into the same directory. */
  char mpath[4096], tmp[4200];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", plan_dir);
  snprintf(tmp, sizeof tmp, "%s/manifest.json.tmp", plan_dir);
  if (unlink(mpath) && errno != ENOENT) {
    wf_error_at(mpath, "cannot remove the old manifest: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  L.names = wf_value_names_new(f);
  int rc = lower_func(&L);
  if (!rc) rc = wf_lower_band_finish(&L);
  if (!rc) wf_lower_close_tasks(&L);
  if (rc == WF_EXIT_NOFIT && L.band_colors)
    wf_note(f->loc, "the experts run on bands of the mesh's rows (--expert-parallel), whose colors are their "
                    "own: without it the plan needs fewer colors");
  if (!rc) rc = wf_lower_plan_memory(&L);
  if (!rc) rc = check_sram(&L);
  if (!rc) rc = wf_lower_check_route_codes(&L);
  if (!rc) rc = check_routes_hold(&L, plan_dir);
  char pdir[4096];
  snprintf(pdir, sizeof pdir, "%s/programs", plan_dir);
  if (!rc && (mkdir_if_needed(plan_dir) || mkdir_if_needed(pdir))) rc = WF_EXIT_IO;
  int writing = !rc;
  if (!rc) rc = write_program(L.cls, plan_dir);
  if (!rc) rc = wf_llvm_kernels_write(L.cls, plan_dir);
  wf_manifest_weights w;
  memset(&w, 0, sizeof w);
  w.values = calloc((size_t)f->n_values + 1, sizeof *w.values);
  w.offset = calloc((size_t)f->n_values + 1, sizeof *w.offset);
  w.bytes = calloc((size_t)f->n_values + 1, sizeof *w.bytes);
  WF_ASSERT(w.values && w.offset && w.bytes);
  if (!rc) rc = write_weights(&L, plan_dir, &w);
  if (!rc) rc = wf_manifest_write(&L, &w, o.compiler_flags, o.manifest_extra, tmp);
  if (!rc && rename(tmp, mpath)) {
    wf_error_at(mpath, "cannot write the manifest: %s", strerror(errno));
    rc = WF_EXIT_IO;
  }
  if (rc) unlink(tmp);
  if (rc && writing) remove_partial_plan(plan_dir, L.cls->name);
  free(w.values);
  free(w.offset);
  free(w.bytes);
  wf_lower_band_free(&L);
  wf_coll_cache_free(&L);
  free(L.ops);
  free(L.skew_in < L.skew_out ? L.skew_in : L.skew_out); /* one allocation holds both */
  free(L.sym_of);
  free(L.consts);
  wf_value_names_free(L.names);
  wf_pe_class_free(L.cls);
  return rc;
}
