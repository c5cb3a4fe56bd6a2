/* waferc --generate=N: one export with a dynamic sequence axis, compiled twice for the same
 * mesh (docs/generation.md):
 *
 *   plan/          the prefill for prompts of L tokens (--input-shape IDS=1xL): the pipeline with
 *                  generate-prefill after head-layout; its manifest carries "generate"
 *   plan/decode/   one decode step: the model imported for L + N positions (the position tables
 *                  hold every position a step reads), decode-step{capacity=C} after head-layout
 *
 * C = rows · cap, cap the most tokens any row holds over the N - 1 steps under the cache
 * policy (include/waferc/kvcache.h, as waferrun sets them). When the decode plan does not fit
 * the SRAM, the largest N that does is searched (compiles into a scratch directory) and named. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <cjson/cJSON.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auto_region.h"
#include "generate.h"
#include "plan_stage.h"
#include "switch.h"
#include "ir/support/fsutil.h"
#include "waferc/diag.h"
#include "waferc/kvcache.h"
#include "waferc/onnx.h"
#include "waferc/pass.h"

/* Slots per row the cache needs for n tokens after a prompt of L on `rows` rows. */
static int64_t slots_per_row(int64_t L, int rows, int64_t n, int concat) {
  int64_t lb = (L + rows - 1) / rows;
  int *cnt = calloc((size_t)rows, sizeof *cnt);
  WF_ASSERT(cnt);
  wf_kv_prefill_counts(L, rows, lb, cnt);
  int64_t cap = lb;
  for (int64_t s = 1; s < n; s++) {
    int r = wf_kv_grow_row(cnt, rows, concat);
    if (++cnt[r] > cap) cap = cnt[r];
  }
  free(cnt);
  return cap;
}


/* Into buf: the global constant of the projection that produces v, found by following v's
 * producers through their first non-constant operand (RoPE, a bias) to a matmul-like op; ""
 * when there is none within a few ops. */
static void proj_weight(const wf_func *f, wf_value v, char *buf, size_t cap) {
  buf[0] = 0;
  for (int step = 0; step < 8; step++) {
    const wf_value_info *vi = wf_value_get(f, v);
    if (vi->kind != WF_VAL_RESULT) return;
    const wf_op *op = vi->def;
    int mm = op->code == WF_OP_DIST_GEMV || op->code == WF_OP_DIST_GEMM || op->code == WF_OP_MATMUL;
    wf_value next = 0;
    for (int i = 0; i < op->n_operands; i++) {
      const wf_value_info *oi = wf_value_get(f, op->operands[i]);
      if (oi->kind == WF_VAL_GLOBAL && mm) {
        snprintf(buf, cap, "%s", wf_str(f->module, f->module->globals[oi->index].name));
        return;
      }
      if (oi->kind != WF_VAL_GLOBAL && !next) next = op->operands[i];
    }
    if (mm || !next) return;
    v = next;
  }
}

/* Into buf: the global constant that a matmul-like op multiplies v by (v its first operand: the
 * output projection of an attention's result); "" when none does. */
static void out_weight(const wf_func *f, wf_value v, char *buf, size_t cap) {
  buf[0] = 0;
  wf_func_foreach_op(f, op) {
    if ((op->code != WF_OP_DIST_GEMV && op->code != WF_OP_DIST_GEMM && op->code != WF_OP_MATMUL) ||
        op->operands[0] != v)
      continue;
    const wf_value_info *wi = wf_value_get(f, op->operands[1]);
    if (wi->kind == WF_VAL_GLOBAL) snprintf(buf, cap, "%s", wf_str(f->module, f->module->globals[wi->index].name));
    return;
  }
}

/* Set by compile_one when head-layout cut kv heads over columns (colocated with q in decode,
 * gathered in the prefill), whether or not the plan compiled. */
static int kv_cut_seen;

/* One compile of the model with ids `shape` and the pass `late` after head-layout into dir;
 * *layers (may be NULL) gets the attention layers the plan has, lp[] (may be NULL, MAX_LAYERS
 * entries) how each packs k and v. */
static int compile_one(wf_cli *c, const wf_gen_compile *g, const char *shape, const char *late, const char *dir,
                       const char *extra, int *layers, layer_pack *lp) {
  char pipe[512];
  /* colocate: the decode step's q beside the kv pieces; the prefill gathers those pieces inside
   * its attention instead (the same cut of k and v, the caches), its q packed as usual: a
   * colocated prefill would sum every score over the kv head's columns (for LLaMA3-8B on 660x660
   * 18,551 prefill tokens/s against 26,550 replicated, by wafer-bench llm's cost model in a
   * scratch build that colocated its prefill, docs/generation.md) */
  const char *gqa = !g->gqa || strcmp(g->gqa, "colocate") ? "replicate"
                    : strncmp(late, "decode-step", 11)   ? "gather"
                                                         : "colocate";
  snprintf(pipe, sizeof pipe, "canonicalize,raise,cse,dce,head-layout{gqa=%s},cse,%s,partition,lower-gemm%s%s%s,symbol-dce",
           gqa, late, g->gemm_algo ? "{algo=" : "", g->gemm_algo ? g->gemm_algo : "", g->gemm_algo ? "}" : "");
  wf_pipeline *p = wf_cli_parse_pipeline(c, pipe);
  if (!p) return WF_EXIT_USAGE;
  wf_onnx_opts oo = WF_ONNX_OPTS_DEFAULT;
  const char *shapes[1] = {shape};
  oo.input_shapes = shapes;
  oo.n_input_shapes = 1;
  wf_module *m = NULL;
  int rc = wf_onnx_import(g->model, &oo, &m);
  if (!rc) rc = wf_verify_module(m) ? WF_EXIT_INPUT : wf_pipeline_run(p, m, &c->pm);
  if (!rc && wf_mkdir_p(dir)) rc = WF_EXIT_IO;
  wf_plan_opts po = g->po;
  po.manifest_extra = extra;
  if (!rc) rc = wf_backend_emit_plan(m, &c->target, dir, &po);
  /* whether or not it compiled (a colocated step may run out of colors where a replicated one
   * does not): head-layout cut kv heads over columns */
  for (int i = 0; m && i < m->n_funcs; i++) wf_func_foreach_op(m->funcs[i], op) {
      if ((op->code == WF_OP_DECODE_ATTENTION || op->code == WF_OP_ATTENTION) && wf_op_attr(m->funcs[i], op, "kv_gather"))
        kv_cut_seen = 1;
    }
  if (!rc && (layers || lp)) {
    int n = 0;
    for (int i = 0; i < m->n_funcs; i++) wf_func_foreach_op(m->funcs[i], op) {
        if (op->code != WF_OP_DECODE_ATTENTION && op->code != WF_OP_ATTENTION) continue;
        const wf_type *kt = wf_value_type(m->funcs[i], op->operands[op->code == WF_OP_ATTENTION ? 1 : 3]);
        if (lp && n < MAX_LAYERS) {
          lp[n] = (layer_pack){wf_op_int(m->funcs[i], op, "heads", 0), wf_op_int(m->funcs[i], op, "head_dim", 0),
                               wf_op_int(m->funcs[i], op, "kv_heads", 0), {kt->dims[0], kt->dims[1], kt->dims[2]}, {""},
                               0, 0, {0, 0, 0, 0}};
          lp[n].kvgat = wf_attn_gather_of(m->funcs[i], op, lp[n].dp, &lp[n].ga) > 0;
          lp[n].coloc = lp[n].kvgat && wf_attn_colocated(m->funcs[i], op, lp[n].dp, &lp[n].ga) > 0;
          for (int r = 0; r < 3; r++) proj_weight(m->funcs[i], op->operands[r], lp[n].proj[r], sizeof lp[n].proj[r]);
          out_weight(m->funcs[i], op->results[0], lp[n].proj[3], sizeof lp[n].proj[3]);
        }
        n++;
      }
    if (layers) *layers = n;
  }
  if (m) wf_module_free(m);
  wf_pipeline_free(p);
  return rc;
}

/* Sets the target's mesh to w x h (both positive). */
static void set_mesh(wf_cli *c, int w, int h) {
  char mesh[32];
  snprintf(mesh, sizeof mesh, "%dx%d", w, h);
  WF_ASSERT(!wf_target_set_mesh(&c->target, mesh));
}

/* The decode region: --decode-mesh, or the prefill's (the target's) mesh. */
static void dec_mesh(const wf_cli *c, const wf_gen_compile *g, int *w, int *h) {
  *w = g->dec_w ? g->dec_w : c->target.mesh_w;
  *h = g->dec_h ? g->dec_h : c->target.mesh_h;
}

/* The decode step for the decode region, cap slots per row of it. */
static int compile_decode(wf_cli *c, const wf_gen_compile *g, const char *name, int64_t L, int64_t n, int64_t cap,
                          const char *dir, int *layers, layer_pack *lp) {
  char shape[256], late[64];
  int pw = c->target.mesh_w, ph = c->target.mesh_h, dw, dh;
  dec_mesh(c, g, &dw, &dh);
  snprintf(shape, sizeof shape, "%s=1x%lld", name, (long long)(L + n));
  snprintf(late, sizeof late, "decode-step{capacity=%lld,rope=%s}", (long long)(cap * dh),
           g->rope_computed ? "computed" : "held");
  set_mesh(c, dw, dh);
  int rc = compile_one(c, g, shape, late, dir, NULL, layers, lp);
  set_mesh(c, pw, ph);
  return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void no_diag(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)msg, (void)user;
}

/* The per-PE bytes a generation plan's three budgets are made of: each phase's memory (pm, dm,
 * sm: the switch's, 0 without one) and each phase's resident weights (pw, dw: those the switch
 * does not move). */
typedef struct pe_budget {
  int64_t pm, pw, dm, dw, sm;
} pe_budget;

static int one_region_fits(wf_cli *c, const wf_gen_compile *g, const char *shape, const char *pdir,
                           const char *psumma, int *made, const char *ddir, int *how, weight_move **sh, int *n,
                           pe_budget *b);

static int switch_pair(wf_cli *c, const wf_gen_compile *g, int layers, const layer_pack *pre, const layer_pack *dec,
                       int64_t cap, int dw, int dh, const char *pdir, const char *ddir, const char *sdir, int report,
                       int *switch_full);

/* The largest n' < n for which both phases fit, with the budgets the compile itself checks
 * (on regions of two sizes the switch plan's, with the weights --switch-weights moves); 0
 * when none does. Errors are silenced. */
static int64_t largest_fit(wf_cli *c, const wf_gen_compile *g, const char *name, int64_t L, int64_t n, int concat) {
  char dir[] = "/tmp/waferc-gen-XXXXXX";
  if (!mkdtemp(dir)) return 0;
  char *pdir = wf_path_join(dir, "p"), *ddir = wf_path_join(dir, "d"), *sdir = wf_path_join(dir, "s"), shape[256];
  char *psumma = wf_path_join(dir, "ps");
  int made = 0; /* psumma compiled (one_region_fits) */
  snprintf(shape, sizeof shape, "%s=1x%lld", name, (long long)L);
  int64_t lo = 0, hi = n; /* lo fits (0: nothing known), hi does not */
  int dw, dh, players = 0, layers = 0;
  dec_mesh(c, g, &dw, &dh);
  int two = dw != c->target.mesh_w || dh != c->target.mesh_h;
  layer_pack pre[MAX_LAYERS], dec[MAX_LAYERS];
  wf_diag_set_sink(no_diag, NULL);
  if (compile_one(c, g, shape, "generate-prefill", pdir, NULL, &players, pre)) hi = 1; /* the prefill alone does not */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2, cap = slots_per_row(L, dh, mid, concat);
    int rc = compile_decode(c, g, name, L, mid, cap, ddir, &layers, dec);
    if (!rc && two && layers == players && layers <= MAX_LAYERS)
      rc = switch_pair(c, g, layers, pre, dec, cap, dw, dh, pdir, ddir, sdir, 0, NULL);
    else if (!rc) {
      weight_move *sh;
      int nsh, how;
      pe_budget b;
      rc = one_region_fits(c, g, shape, pdir, psumma, &made, ddir, &how, &sh, &nsh, &b);
      wf_switch_free_moves(sh, nsh);
    }
    if (rc == WF_EXIT_OK) lo = mid;
    else if (rc == WF_EXIT_NOFIT) hi = mid;
    else break;
  }
  wf_diag_set_sink(NULL, NULL);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(pdir);
  free(ddir);
  free(sdir);
  free(psumma);
  return lo;
}

/* The manifest's predicted_cycles of the plan in dir, or -1. */
static double predicted(const char *dir) {
  cJSON *j = wf_switch_read_manifest(dir);
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "predicted_cycles");
  double v = cJSON_IsNumber(p) ? p->valuedouble : -1;
  cJSON_Delete(j);
  return v;
}

/* A PE's bytes in a plan's manifest j: all of its memory (the planner's high-water mark, `all`) or
 * only its constants (`@` symbols: the weights) but those the switch moves (mv[0..n)'s symbols
 * in the decode plan when `dec`, else in the prefill's), the most over the plan's classes; -1
 * when unreadable. */
static int64_t pe_bytes(const cJSON *j, int all, const weight_move *mv, int n, int dec) {
  int64_t most = -1;
  const cJSON *reg, *cls, *mem;
  cJSON_ArrayForEach(reg, cJSON_GetObjectItemCaseSensitive(j, "regions"))
  cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(reg, "classes")) {
    int64_t b = 0;
    if (all) b = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cls, "memory_bytes"));
    else
      cJSON_ArrayForEach(mem, cJSON_GetObjectItemCaseSensitive(cls, "memory")) {
        const char *sym = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mem, "symbol"));
        int moved = 0;
        for (int i = 0; i < n && sym && !moved; i++) moved = !strcmp(sym, dec ? mv[i].dsym : mv[i].psym);
        if (sym && sym[0] == '@' && !moved)
          b += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(mem, "bytes"));
      }
    if (b > most) most = b;
  }
  return most;
}

/* The weights the switch moves (mv) exist in one form at a time: the prefill's until the switch
 * reads them, the decode step's once it has written them (the switch's own memory holds both,
 * as its inputs and results). Every other weight of both phases stays pre-placed: a PE holds
 * the decode step's resident weights while the prefill runs and the prefill's while the decode
 * runs, and the switch runs beside both. On regions of two sizes the decode region is the
 * prefill's corner, so its PEs hold both. 0 when all three fit the SRAM; 1 when a phase does
 * not; 2 when only the switch does not; -1 when a manifest is unreadable. */
static int budget_fits(const wf_cli *c, const char *pdir, const char *ddir, const char *sdir, const weight_move *mv,
                       int n_mv, pe_budget *b) {
  cJSON *pj = wf_switch_read_manifest(pdir), *dj = wf_switch_read_manifest(ddir), *sj = sdir ? wf_switch_read_manifest(sdir) : NULL;
  *b = (pe_budget){pe_bytes(pj, 1, NULL, 0, 0), pe_bytes(pj, 0, mv, n_mv, 0), pe_bytes(dj, 1, NULL, 0, 1),
                   pe_bytes(dj, 0, mv, n_mv, 1), sdir ? pe_bytes(sj, 1, NULL, 0, 0) : 0};
  cJSON_Delete(pj);
  cJSON_Delete(dj);
  cJSON_Delete(sj);
  int64_t sram = c->target.sram_bytes;
  if (b->pm < 0 || b->dm < 0 || b->sm < 0) return -1;
  if (b->pm + b->dw > sram || b->dm + b->pw > sram) return 1;
  return sdir && b->sm + b->pw + b->dw > sram ? 2 : 0;
}

/* budget_fits's answer r as an exit code, reported (exit 4) when a budget is exceeded. */
static int report_budget(const wf_cli *c, int r, const pe_budget *bp) {
  pe_budget b = *bp;
  long long sram = (long long)c->target.sram_bytes;
  if (r < 0) return WF_EXIT_IO;
  if (r == 2)
    wf_error(WF_LOC_NONE, "the switch does not fit a PE beside both phases' resident weights: its %lld bytes and the "
                          "weights (%lld + %lld) exceed the %lld-byte SRAM; use a larger mesh",
             (long long)b.sm, (long long)b.pw, (long long)b.dw, sram);
  else if (r == 1)
    wf_error(WF_LOC_NONE, "the two phases do not fit a PE together: the prefill's %lld bytes and the decode step's "
                          "resident weights (%lld), or the decode step's %lld bytes and the prefill's resident weights "
                          "(%lld), exceed the %lld-byte SRAM (each phase keeps the weights the switch does not move on "
                          "the PEs); use a larger mesh (--mesh, or --autotune)",
             (long long)b.pm, (long long)b.dw, (long long)b.dm, (long long)b.pw, sram);
  return r ? WF_EXIT_NOFIT : 0;
}

/* The switch plan into sdir for the prefill plan pdir (the target's mesh) and the decode step
 * ddir on its dw x dh corner, with the weights g->switch_weights says: every one plan_moves
 * finds (move), none (resident), or every one when the three SRAM budgets then fit and else
 * none (auto). Returns a WF_EXIT_* code, exit 4 when the budgets do not fit (*switch_full, when
 * given, says whether only the switch's does not); errors, and auto's fallback, are reported when `report`. */
static int switch_pair(wf_cli *c, const wf_gen_compile *g, int layers, const layer_pack *pre, const layer_pack *dec,
                       int64_t cap, int dw, int dh, const char *pdir, const char *ddir, const char *sdir, int report,
                       int *switch_full) {
  int tries = g->switch_weights == WF_SW_AUTO ? 2 : 1, rc = 0, full = 0;
  for (int t = 0; t < tries; t++) {
    int n_mv = 0, last = t + 1 == tries;
    weight_move *mv = g->switch_weights == WF_SW_RESIDENT || t ? NULL
                                                                : wf_switch_plan_moves(c, layers, pre, dec, dw, dh, pdir, ddir, &n_mv);
    if (t) nftw(sdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!report || !last) wf_diag_set_sink(no_diag, NULL);
    rc = wf_switch_compile(c, g, layers, pre, dec, cap, dw, dh, mv, n_mv, sdir);
    if (!rc) {
      pe_budget b;
      int r = budget_fits(c, pdir, ddir, sdir, mv, n_mv, &b);
      rc = last && report ? report_budget(c, r, &b) : r < 0 ? WF_EXIT_IO : r ? WF_EXIT_NOFIT : 0;
      full = r == 2;
    }
    if (!report || !last) wf_diag_set_sink(NULL, NULL);
    wf_switch_free_moves(mv, n_mv);
    if (rc != WF_EXIT_NOFIT || last) break;
    if (report)
      wf_note(WF_LOC_NONE, "moving the decode step's %d matrix weights in the switch does not fit the SRAM (the "
                           "switch holds them in both layouts, and its panels); the switch moves the KV caches only "
                           "and both phases keep their weights (--switch-weights=move asks for the moves and fails "
                           "instead)", n_mv);
  }
  if (switch_full) *switch_full = full;
  return rc;
}

/* One candidate mesh of --autotune: each phase compiled alone on it. */
typedef struct cand {
  int w, h, pre_fits, dec_fits, layers;
  double prefill, step;             /* predicted cycles */
  int64_t pm, pw, dm, dw, cap;      /* bytes per PE (memory, weights) of each phase; slots per row */
  layer_pack pre[MAX_LAYERS], dec[MAX_LAYERS];
} cand;

/* --autotune: compiles each phase alone for square meshes of 2, 4, 8, ... PEs a side (and the
 * given mesh) into a scratch directory, then weighs every pair (prefill region, decode region
 * its corner) by the cost model's cycles: the prefill, the switch plan between them (0 on one
 * region) and N - 1 decode steps, each pair checked for the SRAM as the compile checks it
 * (one_region_fits). Prints the candidates and the pairs, sets the target's mesh to the chosen
 * prefill region and *dw x *dh to its decode region. Returns 0, or WF_EXIT_NOFIT when none fits. */
static int autotune(wf_cli *c, const wf_gen_compile *g, const char *name, long long L, int concat, int *dw,
                    int *dh) {
  char dir[] = "/tmp/waferc-tune-XXXXXX";
  if (!mkdtemp(dir)) return WF_EXIT_IO;
  enum { MAXC = 32 };
  cand *cs = calloc(MAXC, sizeof *cs);
  WF_ASSERT(cs);
  int n = 0, w0 = c->target.mesh_w, h0 = c->target.mesh_h;
  for (int k = 2; k <= c->target.program_w && k <= c->target.program_h && n < MAXC - 1; k *= 2) cs[n].w = cs[n].h = k, n++;
  int have = 0;
  for (int i = 0; i < n; i++) have |= cs[i].w == w0 && cs[i].h == h0;
  if (!have) cs[n].w = w0, cs[n].h = h0, n++;
  char shape[256];
  snprintf(shape, sizeof shape, "%s=1x%lld", name, L);
  wf_gen_compile one = *g;
  one.dec_w = one.dec_h = 0; /* each phase alone on the candidate */
  one.gqa = "replicate";     /* the packing a switch plan moves, for every pair */
  for (int i = 0; i < n; i++) {
    char pd[64], dd[64];
    snprintf(pd, sizeof pd, "%s/p%d", dir, i);
    snprintf(dd, sizeof dd, "%s/d%d", dir, i);
    wf_progress("autotune: %dx%d (%d of %d)", cs[i].w, cs[i].h, i + 1, n);
    set_mesh(c, cs[i].w, cs[i].h);
    wf_diag_set_sink(no_diag, NULL);
    cs[i].cap = slots_per_row(L, cs[i].h, g->n, concat);
    int nl = 0;
    cs[i].dec_fits = !compile_decode(c, &one, name, L, g->n, cs[i].cap, dd, &cs[i].layers, cs[i].dec);
    cs[i].pre_fits = !compile_one(c, &one, shape, "generate-prefill", pd, NULL, &nl, cs[i].pre);
    wf_diag_set_sink(NULL, NULL);
    cs[i].pre_fits &= nl <= MAX_LAYERS, cs[i].dec_fits &= cs[i].layers <= MAX_LAYERS;
    cJSON *j;
    if (cs[i].pre_fits) {
      cs[i].prefill = predicted(pd);
      j = wf_switch_read_manifest(pd);
      cs[i].pm = pe_bytes(j, 1, NULL, 0, 0), cs[i].pw = pe_bytes(j, 0, NULL, 0, 0);
      cJSON_Delete(j);
    }
    if (cs[i].dec_fits) {
      cs[i].step = predicted(dd);
      j = wf_switch_read_manifest(dd);
      cs[i].dm = pe_bytes(j, 1, NULL, 0, 1), cs[i].dw = pe_bytes(j, 0, NULL, 0, 1);
      cJSON_Delete(j);
    }
  }
  double hz = c->target.clock_hz > 0 ? c->target.clock_hz : 1;
  int64_t sram = c->target.sram_bytes;
  printf("autotune: a prompt of %lld tokens, %lld generated, on %s (the cost model's cycles; %.3g GHz)\n", L,
         (long long)g->n, c->target.name, hz / 1e9);
  printf("  %-10s %14s %12s %16s %14s\n", "mesh", "prefill cyc", "TTFT us", "decode cyc/step", "decode tok/s");
  for (int i = 0; i < n; i++) {
    char mesh[32], a[40] = "does not fit", b[40] = "", cc[40] = "does not fit", d[40] = "";
    snprintf(mesh, sizeof mesh, "%dx%d", cs[i].w, cs[i].h);
    if (cs[i].pre_fits) snprintf(a, sizeof a, "%.0f", cs[i].prefill), snprintf(b, sizeof b, "%.2f", cs[i].prefill / hz * 1e6);
    if (cs[i].dec_fits) snprintf(cc, sizeof cc, "%.0f", cs[i].step), snprintf(d, sizeof d, "%.4g", hz / cs[i].step);
    printf("  %-10s %14s %12s %16s %14s\n", mesh, a, b, cc, d);
  }
  /* The pairs: the decode region is the prefill region's corner. */
  printf("  pairs (prefill -> decode: switch cycles, time to the last token us):\n");
  int bi = -1, bj = -1;
  double best = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++) {
      if (!cs[i].pre_fits || !cs[k].dec_fits || cs[k].w > cs[i].w || cs[k].h > cs[i].h || cs[k].layers != cs[i].layers)
        continue;
      int64_t pm = cs[i].pm, pw = cs[i].pw, dm = cs[k].dm, dwb = cs[k].dw;
      double sw = 0, prefill = cs[i].prefill;
      int fits = pm + dwb <= sram && dm + pw <= sram, how = 0;
      if (k == i && !fits) { /* one region: as its compile decides, with weights held once */
        char ps[64], pd[64], dd[64];
        snprintf(ps, sizeof ps, "%s/ps%d", dir, i);
        snprintf(pd, sizeof pd, "%s/p%d", dir, i);
        snprintf(dd, sizeof dd, "%s/d%d", dir, i);
        set_mesh(c, cs[i].w, cs[i].h);
        weight_move *sh;
        int made = 0, nsh;
        pe_budget b;
        wf_diag_set_sink(no_diag, NULL);
        fits = !one_region_fits(c, g, shape, pd, ps, &made, dd, &how, &sh, &nsh, &b);
        wf_diag_set_sink(NULL, NULL);
        wf_switch_free_moves(sh, nsh);
        if (fits && how == 2) prefill = predicted(ps); /* the prefill compiled with SUMMA */
      } else if (k != i) { /* with the weights the switch moves, the phases hold less beside each other */
        char sd[64], pd[64], dd[64];
        snprintf(sd, sizeof sd, "%s/s%d_%d", dir, i, k);
        snprintf(pd, sizeof pd, "%s/p%d", dir, i);
        snprintf(dd, sizeof dd, "%s/d%d", dir, k);
        set_mesh(c, cs[i].w, cs[i].h);
        fits = !switch_pair(c, g, cs[i].layers, cs[i].pre, cs[k].dec, cs[k].cap, cs[k].w, cs[k].h, pd, dd, sd, 0, NULL);
        if (fits) sw = predicted(sd);
      }
      if (!fits) continue;
      double total = prefill + sw + (double)(g->n - 1) * cs[k].step;
      char pair[48];
      snprintf(pair, sizeof pair, "%dx%d -> %dx%d", cs[i].w, cs[i].h, cs[k].w, cs[k].h);
      printf("  %-22s %12.0f %14.2f%s\n", pair, sw, total / hz * 1e6,
             how == 2 ? "  (weights held once; the prefill with SUMMA)" : how ? "  (weights held once)" : "");
      if (bi < 0 || total < best) bi = i, bj = k, best = total;
    }
  wf_progress_done();
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (bi < 0) {
    free(cs);
    wf_error(WF_LOC_NONE, "--autotune: no candidate mesh holds the prefill, the decode step and the switch");
    return WF_EXIT_NOFIT;
  }
  printf("  chosen: prefill %dx%d, decode %dx%d (the least time to the last token, %.2f us)\n", cs[bi].w, cs[bi].h,
         cs[bj].w, cs[bj].h, best / hz * 1e6);
  fflush(stdout);
  set_mesh(c, cs[bi].w, cs[bi].h);
  *dw = cs[bj].w, *dh = cs[bj].h;
  free(cs);
  return 0;
}

/* The budgets of budget_fits with the weights both plans hold the same way
 * (wf_switch_shared_weights: *sh, *n of them) held once. 0 fits, 1 or 2 does not, -1 unreadable. */
static int shared_fit(const wf_cli *c, const char *pdir, const char *ddir, weight_move **sh, int *n, pe_budget *b) {
  *sh = wf_switch_shared_weights(pdir, ddir, n);
  return budget_fits(c, pdir, ddir, NULL, *sh, *n, b);
}

/* extra (the prefill manifest's "generate", ending "}}") with "shared_weights" naming sh's. */
static char *extra_shared(const char *extra, const weight_move *sh, int n) {
  cJSON *names = cJSON_CreateArray();
  WF_ASSERT(names);
  for (int i = 0; i < n; i++) WF_ASSERT(cJSON_AddItemToArray(names, cJSON_CreateString(sh[i].name)));
  char *list = cJSON_PrintUnformatted(names); /* names escaped as JSON strings */
  WF_ASSERT(list);
  cJSON_Delete(names);
  size_t len = strlen(extra), cap = len + strlen(list) + 32;
  WF_ASSERT(len >= 2 && !strcmp(extra + len - 2, "}}"));
  char *s = malloc(cap);
  WF_ASSERT(s);
  snprintf(s, cap, "%.*s, \"shared_weights\": %s}}", (int)(len - 2), extra, list);
  free(list);
  return s;
}

/* Whether both phases fit one region (no switch), silently, as one_region decides it: each
 * phase beside the other's weights; else with the weights both plans hold the same way held
 * once; else, when --gemm-algo did not choose, the same with the prefill compiled with SUMMA
 * into psumma (*made: 1 when it is there, -1 when it did not compile, 0 not yet; compiled once
 * for all the calls). Returns 0 (how: 0, 1 or 2, the step that fits; *sh, *n the shared
 * weights, to be freed), WF_EXIT_NOFIT (*b the plain budgets), or another exit code. */
static int one_region_fits(wf_cli *c, const wf_gen_compile *g, const char *shape, const char *pdir,
                           const char *psumma, int *made, const char *ddir, int *how, weight_move **sh, int *n,
                           pe_budget *b) {
  pe_budget bs;
  *sh = NULL, *n = 0, *how = 0;
  int r = budget_fits(c, pdir, ddir, NULL, NULL, 0, b);
  if (r != 1) return r < 0 ? WF_EXIT_IO : r ? WF_EXIT_NOFIT : 0;
  *how = 1;
  r = shared_fit(c, pdir, ddir, sh, n, &bs);
  if (r == 1 && !g->gemm_algo && *made >= 0) {
    if (!*made) { /* a SUMMA prefill that does not compile (-1) is not a way out */
      wf_gen_compile summa = *g;
      summa.gemm_algo = "summa";
      void *prev_user;
      wf_diag_sink prev = wf_diag_get_sink(&prev_user);
      wf_diag_set_sink(no_diag, NULL);
      *made = compile_one(c, &summa, shape, "generate-prefill", psumma, NULL, NULL, NULL) ? -1 : 1;
      wf_diag_set_sink(prev, prev_user);
    }
    if (*made > 0) {
      wf_switch_free_moves(*sh, *n);
      *sh = NULL, *n = 0, *how = 2;
      r = shared_fit(c, psumma, ddir, sh, n, &bs);
    }
  }
  if (r) {
    wf_switch_free_moves(*sh, *n);
    *sh = NULL, *n = 0;
  }
  return r < 0 ? WF_EXIT_IO : r ? WF_EXIT_NOFIT : 0;
}

/* Both phases on one region, without a switch (one_region_fits). When the weights both plans
 * hold the same way are what makes them fit (docs/generation.md, "One region"), the prefill
 * plan in pdir is written again (with SUMMA when that step fitted) naming them in its
 * manifest's "generate", and a note says so; otherwise the plain budgets are reported. */
static int one_region(wf_cli *c, const wf_gen_compile *g, const char *shape, const char *extra, const char *pdir,
                      const char *ddir) {
  char tmp[] = "/tmp/waferc-gen-XXXXXX";
  if (!mkdtemp(tmp)) return WF_EXIT_IO;
  char *psumma = wf_path_join(tmp, "p");
  pe_budget b0, b;
  weight_move *sh = NULL;
  int n = 0, how = 0, made = 0;
  int rc = one_region_fits(c, g, shape, pdir, psumma, &made, ddir, &how, &sh, &n, &b0);
  if (rc == WF_EXIT_NOFIT) {
    report_budget(c, 1, &b0);
    wf_note(WF_LOC_NONE, "nor do they with the weights both plans hold the same way held once%s",
            how == 2 ? ", the prefill's GEMMs compiled with SUMMA so that its weights are not pre-skewed" : "");
  } else if (!rc && how) {
    wf_gen_compile summa = *g;
    summa.gemm_algo = "summa";
    char *ex = extra_shared(extra, sh, n);
    rc = compile_one(c, how == 2 ? &summa : g, shape, "generate-prefill", pdir, ex, NULL, NULL);
    free(ex);
    if (!rc) { /* the same compile: the same weights */
      int n2 = 0;
      weight_move *sh2 = NULL;
      WF_ASSERT(shared_fit(c, pdir, ddir, &sh2, &n2, &b) == 0 && n2 == n);
      wf_switch_free_moves(sh2, n2);
      wf_note(WF_LOC_NONE, "the two phases do not fit a PE beside each other's weights; %d weights that both plans "
                           "hold the same way (%lld bytes per PE) are held once%s", n, (long long)(b0.dw - b.dw),
              how == 2 ? ", the prefill's GEMMs compiled with SUMMA so that its weights are not pre-skewed "
                         "(--gemm-algo chooses otherwise and fails instead)" : "");
    }
  }
  wf_switch_free_moves(sh, n);
  nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(psumma);
  return rc;
}

/* Auto's choice of how a decode step holds kv heads whose query heads span columns: colocated
 * with q (one copy of each: the cache and the K and V projections group times smaller, but q's
 * pieces may be wider and each score is summed over more columns) or replicated. Both steps are
 * compiled; the replicated one is kept when the colocated one did not compile or needs no fewer
 * bytes per PE (the planner's high-water mark; on a tie replicating takes fewer cycles). */
typedef struct dec_pick {
  wf_cli *c;
  const wf_gen_compile *g;
  const char *name, *ddir;
  char *alt;
  int64_t L, cap;
  int layers[2], seen, kept; /* kept: 1 when the replicated step is */
  layer_pack *lp[2];
} dec_pick;

static int dec_colocated(void *user) {
  dec_pick *d = user;
  wf_gen_compile r = *d->g;
  r.gqa = "colocate";
  kv_cut_seen = 0;
  int rc = compile_decode(d->c, &r, d->name, d->L, d->g->n, d->cap, d->ddir, &d->layers[0], d->lp[0]);
  d->seen = kv_cut_seen;
  return rc;
}

static int dec_replicated(void *user) {
  dec_pick *d = user;
  if (!d->seen) return -1; /* nothing was colocated: the same step */
  wf_gen_compile r = *d->g;
  r.gqa = "replicate";
  return compile_decode(d->c, &r, d->name, d->L, d->g->n, d->cap, d->alt, &d->layers[1], d->lp[1]);
}

static int dec_lighter(void *user, int rc1, int rc2) {
  dec_pick *d = user;
  d->kept = 0;
  if (rc2) return 0;
  if (rc1) return d->kept = 1;
  cJSON *cj = wf_switch_read_manifest(d->ddir), *rj = wf_switch_read_manifest(d->alt);
  int64_t cb = pe_bytes(cj, 1, NULL, 0, 0), rb = pe_bytes(rj, 1, NULL, 0, 0);
  cJSON_Delete(cj);
  cJSON_Delete(rj);
  return d->kept = rb >= 0 && (cb < 0 || rb <= cb);
}

/* The decode step into ddir by auto's choice; *replicated set unless q is colocated in it. */
static int lighter_decode(wf_cli *c, const wf_gen_compile *g, const char *name, int64_t L, int64_t cap,
                          const char *stage, const char *ddir, int *layers, layer_pack *lp, int *replicated) {
  dec_pick d = {c, g, name, ddir, wf_path_join(stage, "decode.replicated"), L, cap, {0, 0}, 0, 0, {lp, NULL}};
  d.lp[1] = calloc(MAX_LAYERS, sizeof *d.lp[1]);
  WF_ASSERT(d.lp[1]);
  int rc = wf_waferc_pick(dec_colocated, dec_replicated, dec_lighter, &d);
  *layers = d.layers[0];
  *replicated = !d.seen || d.kept;
  if (d.kept) {
    nftw(ddir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (rename(d.alt, ddir)) rc = WF_EXIT_IO;
    *layers = d.layers[1];
    memcpy(lp, d.lp[1], MAX_LAYERS * sizeof *lp);
  } else {
    nftw(d.alt, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  free(d.alt);
  free(d.lp[1]);
  return rc;
}

/* One generation compile with g->gqa (colocate or replicate; `asked`: by --gqa, else auto's
 * attempt, colocated or replicated by lighter_decode, which the prefill then follows where
 * its mesh allows); `search`: on exit 4, look for the largest N that
 * fits (also when nothing was cut: auto's replicated attempt would be the same); *cut: its plans
 * hold kv heads cut over columns. */
static int compile_generate(wf_cli *c, const wf_gen_compile *g, int search, int asked, int *cut) {
  const char *eq = g->ids_shape ? strchr(g->ids_shape, '=') : NULL;
  long long b = 0, L = 0;
  char tail;
  if (!eq || sscanf(eq + 1, "%lldx%lld%c", &b, &L, &tail) != 2 || b != 1 || L < 1) {
    wf_error(WF_LOC_NONE, "--generate needs the prompt's token ids as --input-shape NAME=1xL (one request of L "
                          "tokens), got '%s'", g->ids_shape ? g->ids_shape : "none");
    return WF_EXIT_USAGE;
  }
  int concat = !strcmp(g->kv_cache, "concat");
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(eq - g->ids_shape), g->ids_shape);
  wf_gen_compile tuned = *g;
  if (g->autotune) {
    int rc = autotune(c, g, name, L, concat, &tuned.dec_w, &tuned.dec_h);
    if (rc) return rc;
    g = &tuned;
  }
  int dw, dh;
  dec_mesh(c, g, &dw, &dh);
  int two = dw != c->target.mesh_w || dh != c->target.mesh_h; /* regions of two sizes: a switch plan */
  if (dw > c->target.mesh_w || dh > c->target.mesh_h) {
    wf_error(WF_LOC_NONE, "--decode-mesh=%dx%d is larger than the prefill's %dx%d: the decode region is the "
                          "prefill region's corner (the same PEs, reprogrammed), so it must fit inside it",
             dw, dh, c->target.mesh_w, c->target.mesh_h);
    return WF_EXIT_USAGE;
  }
  int64_t cap = slots_per_row(L, dh, g->n, concat);
  /* The plans are compiled into a stage beside the plan directory and moved into place
   * together, so an older plan survives a failed compile (plan_stage.h). */
  char *stage = wf_plan_stage_begin(g->out_dir);
  if (!stage) return WF_EXIT_IO;
  char *ddir = wf_path_join(stage, "decode"), *sdir = wf_path_join(stage, "switch");
  wf_progress("compiling the decode step (%lld cache slots per row)", (long long)cap);
  int layers = 0, players = 0;
  layer_pack dec[MAX_LAYERS], pre[MAX_LAYERS];
  int switch_full = 0; /* exit 4 from the switch's budget alone */
  int rc, replicated = 0;
  if (!asked && strcmp(g->gqa, "replicate")) /* auto: the decode step that holds fewer bytes per PE */
    rc = lighter_decode(c, g, name, L, cap, stage, ddir, &layers, dec, &replicated);
  else
    rc = compile_decode(c, g, name, L, g->n, cap, ddir, &layers, dec);
  wf_progress_done();
  if (replicated) { /* the prefill (and any recompile) packs kv heads as the decode step does */
    if (g != &tuned) tuned = *g, g = &tuned;
    tuned.gqa = "replicate";
  }
  if (rc == WF_EXIT_INPUT || rc == WF_EXIT_UNSUPPORTED)
    wf_note(WF_LOC_NONE, "the decode step is the model imported for L + N = %lld positions (every position a step "
                         "reads): a model that holds fewer (a learned position table) cannot generate that far",
            L + (long long)g->n);
  if (!rc && layers > MAX_LAYERS) {
    wf_error(WF_LOC_NONE, "--generate: %d attention layers; at most %d", layers, MAX_LAYERS);
    rc = WF_EXIT_UNSUPPORTED;
  }
  if (!rc) {
    char shape[256], extra[8192];
    snprintf(shape, sizeof shape, "%s=1x%lld", name, L);
    int n = snprintf(extra, sizeof extra,
                     "{\"generate\": {\"decode_plan\": \"decode\", %s\"prompt_input\": \"%s\", "
                     "\"prompt_length\": %lld, \"max_new_tokens\": %lld, \"kv_cache\": \"%s\", "
                     "\"prefill_next\": \"next_ids\", \"decode_ids\": \"%s\", \"decode_position\": \"position\", "
                     "\"decode_next\": \"next_ids\", \"rows\": %d, \"slots_per_row\": %lld, \"gqa\": \"%s\", "
                     "\"caches\": [",
                     two ? "\"switch_plan\": \"switch\", " : "", name, L, (long long)g->n, g->kv_cache, name,
                     dh, (long long)cap, g->gqa);
    wf_progress("compiling the prefill (%lld tokens)", L);
    /* the caches' names are the passes' (k_cache_<i>, v_cache_<i>) and the switch's */
    for (int i = 0; i < layers && (size_t)n < sizeof extra - 256; i++)
      for (int kv = 0; kv < 2; kv++) {
        const char *t = kv ? "v" : "k";
        n += snprintf(extra + n, sizeof extra - (size_t)n, "%s{\"prefill\": \"%s_cache_%d\", ", i || kv ? ", " : "", t, i);
        if (two) n += snprintf(extra + n, sizeof extra - (size_t)n, "\"switch\": \"%s_switch_%d\", ", t, i);
        n += snprintf(extra + n, sizeof extra - (size_t)n, "\"decode\": \"%s_cache_%d\"}", t, i);
      }
    snprintf(extra + n, sizeof extra - (size_t)n, "]}}");
    rc = compile_one(c, g, shape, "generate-prefill", stage, extra, &players, pre);
    wf_progress_done();
    if (!rc && players != layers) {
      wf_error(WF_LOC_NONE, "--generate: the prefill has %d attention layers, the decode step %d", players, layers);
      rc = WF_EXIT_UNSUPPORTED;
    }
    if (!rc && two) { /* with its SRAM budgets checked */
      wf_progress("compiling the switch onto the %dx%d decode region", dw, dh);
      rc = switch_pair(c, g, layers, pre, dec, cap, dw, dh, stage, ddir, sdir, 1, &switch_full);
      wf_progress_done();
    } else if (!rc) {
      rc = one_region(c, g, shape, extra, stage, ddir);
    }
  }
  if (rc) wf_plan_stage_abort(stage);
  else rc = wf_plan_stage_commit(stage, g->out_dir);
  *cut = !strcmp(g->gqa, "colocate");
  if (rc == WF_EXIT_NOFIT && !switch_full && (search || !*cut)) { /* a smaller N helps the phases, hardly the switch */
    int64_t best = largest_fit(c, g, name, L, g->n, concat);
    if (best > 0)
      wf_note(WF_LOC_NONE, "with a prompt of %lld tokens both phases fit this mesh for at most --generate=%lld "
                           "(the KV cache, %s, then holds %lld slots per row of PEs; the cache and the position "
                           "tables every PE holds grow with N)", L, (long long)best, g->kv_cache,
              (long long)slots_per_row(L, dh, best, concat));
    else
      wf_note(WF_LOC_NONE, "the two phases do not fit this mesh even for --generate=1 (a larger --mesh, or --autotune)");
  }
  free(ddir);
  free(sdir);
  return rc;
}

typedef struct gen_try {
  wf_cli *c;
  wf_gen_compile g;
  int cut; /* the first attempt's plans held kv heads cut over columns */
} gen_try;

static int try_colocated(void *user) {
  gen_try *t = user;
  t->cut = 0;
  t->g.gqa = "colocate";
  return compile_generate(t->c, &t->g, 0, 0, &t->cut);
}

static int try_replicated(void *user) {
  gen_try *t = user;
  if (!t->cut) return WF_EXIT_NOFIT; /* the same plans again */
  t->g.gqa = "replicate";
  int cut;
  return compile_generate(t->c, &t->g, 1, 0, &cut);
}

int wf_waferc_compile_generate(wf_cli *c, const wf_gen_compile *g) {
  gen_try t = {c, *g, 0};
  int cut;
  if (g->gqa && strcmp(g->gqa, "auto")) return compile_generate(c, g, 1, 1, &cut);
  /* auto: kv heads colocated with q when the decode step then holds fewer bytes per PE
   * (lighter_decode), else replicated; replicated too when the colocated plans do not fit (the
   * group sums' colors) */
  return wf_waferc_fallback(try_colocated, try_replicated, &t,
                            "the plan with kv heads colocated with q (--gqa=auto) does not fit; it is compiled "
                            "with them replicated (--gqa=replicate)");
}
