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

#include "generate.h"
#include "plan_stage.h"
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

/* One compile of the model with ids `shape` and the pass `late` after head-layout into dir;
 * *layers (may be NULL) gets the attention layers the plan has. */
static int compile_one(wf_cli *c, const wf_gen_compile *g, const char *shape, const char *late, const char *dir,
                       const char *extra, int *layers) {
  char pipe[512];
  snprintf(pipe, sizeof pipe, "canonicalize,raise,cse,dce,head-layout{gqa=replicate},%s,partition,lower-gemm%s%s%s,symbol-dce", late,
           g->gemm_algo ? "{algo=" : "", g->gemm_algo ? g->gemm_algo : "", g->gemm_algo ? "}" : "");
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
  if (!rc && layers) {
    *layers = 0;
    for (int i = 0; i < m->n_funcs; i++)
      wf_func_foreach_op(m->funcs[i], op) *layers += op->code == WF_OP_DECODE_ATTENTION;
  }
  if (m) wf_module_free(m);
  wf_pipeline_free(p);
  return rc;
}

static int compile_decode(wf_cli *c, const wf_gen_compile *g, const char *name, int64_t L, int64_t n, int64_t cap,
                          const char *dir, int *layers) {
  char shape[256], late[64];
  snprintf(shape, sizeof shape, "%s=1x%lld", name, (long long)(L + n));
  snprintf(late, sizeof late, "decode-step{capacity=%lld}", (long long)(cap * c->target.mesh_h));
  return compile_one(c, g, shape, late, dir, NULL, layers);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void no_diag(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)msg, (void)user;
}

static int check_coresident(const wf_cli *c, const char *pdir, const char *ddir);

/* The largest n' < n for which both phases fit; 0 when none does. Errors are silenced. */
static int64_t largest_fit(wf_cli *c, const wf_gen_compile *g, const char *name, int64_t L, int64_t n, int concat) {
  char dir[] = "/tmp/waferc-gen-XXXXXX";
  if (!mkdtemp(dir)) return 0;
  char *pdir = wf_path_join(dir, "p"), *ddir = wf_path_join(dir, "d"), shape[256];
  snprintf(shape, sizeof shape, "%s=1x%lld", name, (long long)L);
  int64_t lo = 0, hi = n; /* lo fits (0: nothing known), hi does not */
  wf_diag_set_sink(no_diag, NULL);
  if (compile_one(c, g, shape, "generate-prefill", pdir, NULL, NULL)) hi = 1; /* the prefill alone does not */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    int rc = compile_decode(c, g, name, L, mid, slots_per_row(L, c->target.mesh_h, mid, concat), ddir, NULL);
    if (!rc) rc = check_coresident(c, pdir, ddir);
    if (rc == WF_EXIT_OK) lo = mid;
    else if (rc == WF_EXIT_NOFIT) hi = mid;
    else break;
  }
  wf_diag_set_sink(NULL, NULL);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(pdir);
  free(ddir);
  return lo;
}

/* The manifest of the plan in dir, parsed (NULL when unreadable). */
static cJSON *read_manifest(const char *dir) {
  char *path = wf_path_join(dir, "manifest.json");
  size_t len = 0;
  char *text = wf_read_file(path, &len); /* NUL-terminated */
  free(path);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  return j;
}

/* The manifest's predicted_cycles of the plan in dir, or -1. */
static double predicted(const char *dir) {
  cJSON *j = read_manifest(dir);
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "predicted_cycles");
  double v = cJSON_IsNumber(p) ? p->valuedouble : -1;
  cJSON_Delete(j);
  return v;
}

/* A PE's bytes in a plan's manifest j: all of its memory (the planner's high-water mark, `all`) or
 * only its constants (`@` symbols: the weights), the most over the plan's classes; -1 when
 * unreadable. */
static int64_t pe_bytes(const cJSON *j, int all) {
  int64_t most = -1;
  const cJSON *reg, *cls, *mem;
  cJSON_ArrayForEach(reg, cJSON_GetObjectItemCaseSensitive(j, "regions"))
  cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(reg, "classes")) {
    int64_t b = 0;
    if (all) b = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cls, "memory_bytes"));
    else
      cJSON_ArrayForEach(mem, cJSON_GetObjectItemCaseSensitive(cls, "memory")) {
        const char *sym = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mem, "symbol"));
        if (sym && sym[0] == '@') b += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(mem, "bytes"));
      }
    if (b > most) most = b;
  }
  return most;
}

/* Both phases run on one region with their weights pre-placed: a PE holds the decode step's
 * weights while the prefill runs and the prefill's while the decode runs (nothing reloads or
 * reshuffles them between requests), so each phase's memory plus the other's weights must fit.
 * Reported (exit 4) when not. */
static int check_coresident(const wf_cli *c, const char *pdir, const char *ddir) {
  cJSON *pj = read_manifest(pdir), *dj = read_manifest(ddir);
  int64_t pm = pe_bytes(pj, 1), pw = pe_bytes(pj, 0), dm = pe_bytes(dj, 1), dw = pe_bytes(dj, 0);
  cJSON_Delete(pj);
  cJSON_Delete(dj);
  int64_t sram = c->target.sram_bytes;
  if (pm < 0 || dm < 0) return WF_EXIT_IO;
  if (pm + dw <= sram && dm + pw <= sram) return 0;
  wf_error(WF_LOC_NONE, "the two phases do not fit a PE together: the prefill's %lld bytes and the decode step's "
                        "weights (%lld), or the decode step's %lld bytes and the prefill's weights (%lld), exceed the "
                        "%lld-byte SRAM (each phase keeps its weights on the PEs); use a larger mesh (--mesh, or "
                        "--autotune)", (long long)pm, (long long)dw, (long long)dm, (long long)pw, (long long)sram);
  return WF_EXIT_NOFIT;
}

typedef struct cand {
  int w, h, fits;
  double prefill, step; /* predicted cycles */
} cand;

/* --autotune: compiles both phases for square meshes of 2, 4, 8, ... PEs a side (and the
 * given mesh) into a scratch directory, weighs each by the cost model's cycles (the prefill,
 * and N - 1 decode steps), prints the candidates and sets the target's mesh to the one with
 * the least time to the last token. Returns 0, or WF_EXIT_NOFIT when none fits. */
static int autotune(wf_cli *c, const wf_gen_compile *g, const char *name, long long L, int concat) {
  char dir[] = "/tmp/waferc-tune-XXXXXX";
  if (!mkdtemp(dir)) return WF_EXIT_IO;
  cand cs[32];
  int n = 0, w0 = c->target.mesh_w, h0 = c->target.mesh_h;
  for (int k = 2; k <= c->target.program_w && k <= c->target.program_h && n < 31; k *= 2) cs[n++] = (cand){k, k, 0, 0, 0};
  int have = 0;
  for (int i = 0; i < n; i++) have |= cs[i].w == w0 && cs[i].h == h0;
  if (!have) cs[n++] = (cand){w0, h0, 0, 0, 0};
  char *pdir = wf_path_join(dir, "p"), *ddir = wf_path_join(dir, "d");
  char shape[256];
  snprintf(shape, sizeof shape, "%s=1x%lld", name, L);
  for (int i = 0; i < n; i++) {
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", cs[i].w, cs[i].h);
    wf_progress("autotune: %s (%d of %d)", mesh, i + 1, n);
    if (wf_target_set_mesh(&c->target, mesh)) continue;
    wf_diag_set_sink(no_diag, NULL);
    int64_t cap = slots_per_row(L, cs[i].h, g->n, concat);
    cs[i].fits = !compile_decode(c, g, name, L, g->n, cap, ddir, NULL) &&
                 !compile_one(c, g, shape, "generate-prefill", pdir, NULL, NULL) && !check_coresident(c, pdir, ddir);
    wf_diag_set_sink(NULL, NULL);
    if (cs[i].fits) cs[i].prefill = predicted(pdir), cs[i].step = predicted(ddir);
  }
  wf_progress_done();
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(pdir);
  free(ddir);
  double hz = c->target.clock_hz > 0 ? c->target.clock_hz : 1;
  int best = -1, bp = -1, bd = -1;
  printf("autotune: a prompt of %lld tokens, %lld generated, on %s (the cost model's cycles; %.3g GHz)\n", L,
         (long long)g->n, c->target.name, hz / 1e9);
  printf("  %-10s %14s %12s %14s %14s %16s\n", "mesh", "prefill cyc", "TTFT us", "decode cyc/step",
         "decode tok/s", "last token us");
  for (int i = 0; i < n; i++) {
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", cs[i].w, cs[i].h);
    if (!cs[i].fits) {
      printf("  %-10s %14s\n", mesh, "does not fit");
      continue;
    }
    double total = cs[i].prefill + (double)(g->n - 1) * cs[i].step;
    printf("  %-10s %14.0f %12.2f %14.0f %14.4g %16.2f\n", mesh, cs[i].prefill, cs[i].prefill / hz * 1e6, cs[i].step,
           hz / cs[i].step, total / hz * 1e6);
    if (best < 0 || total < cs[best].prefill + (double)(g->n - 1) * cs[best].step) best = i;
    if (bp < 0 || cs[i].prefill < cs[bp].prefill) bp = i;
    if (bd < 0 || cs[i].step < cs[bd].step) bd = i;
  }
  if (best < 0) {
    wf_error(WF_LOC_NONE, "--autotune: neither phase fits any candidate mesh");
    return WF_EXIT_NOFIT;
  }
  printf("  the prefill alone would take %dx%d, the decode alone %dx%d; one region serves both phases (regions of "
         "different sizes per phase are not built): %dx%d\n", cs[bp].w, cs[bp].h, cs[bd].w, cs[bd].h, cs[best].w,
         cs[best].h);
  fflush(stdout);
  char mesh[32];
  snprintf(mesh, sizeof mesh, "%dx%d", cs[best].w, cs[best].h);
  wf_target_set_mesh(&c->target, mesh);
  return 0;
}

int wf_waferc_compile_generate(wf_cli *c, const wf_gen_compile *g) {
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
  if (g->autotune) {
    int rc = autotune(c, g, name, L, concat);
    if (rc) return rc;
  }
  int rows = c->target.mesh_h;
  int64_t cap = slots_per_row(L, rows, g->n, concat);
  /* Both plans are compiled into a stage beside the plan directory and moved into place
   * together, so an older plan survives a failed compile (plan_stage.h). */
  char *stage = wf_plan_stage_begin(g->out_dir);
  if (!stage) return WF_EXIT_IO;
  char *ddir = wf_path_join(stage, "decode");
  wf_progress("compiling the decode step (%lld cache slots per row)", (long long)cap);
  int layers = 0;
  int rc = compile_decode(c, g, name, L, g->n, cap, ddir, &layers);
  wf_progress_done();
  if (rc == WF_EXIT_INPUT || rc == WF_EXIT_UNSUPPORTED)
    wf_note(WF_LOC_NONE, "the decode step is the model imported for L + N = %lld positions (every position a step "
                         "reads): a model that holds fewer (a learned position table) cannot generate that far",
            L + (long long)g->n);
  if (!rc) {
    char shape[256], extra[4096];
    snprintf(shape, sizeof shape, "%s=1x%lld", name, L);
    int n = snprintf(extra, sizeof extra,
                     "{\"generate\": {\"decode_plan\": \"decode\", \"prompt_input\": \"%s\", \"prompt_length\": %lld, "
                     "\"max_new_tokens\": %lld, \"kv_cache\": \"%s\", \"prefill_next\": \"next_ids\", "
                     "\"decode_ids\": \"%s\", \"decode_position\": \"position\", \"decode_next\": \"next_ids\", "
                     "\"rows\": %d, \"slots_per_row\": %lld, \"caches\": [",
                     name, L, (long long)g->n, g->kv_cache, name, rows, (long long)cap);
    wf_progress("compiling the prefill (%lld tokens)", L);
    /* the caches' names are the passes' (k_cache_<i>, v_cache_<i>) */
    for (int i = 0; i < layers && (size_t)n < sizeof extra - 128; i++)
      n += snprintf(extra + n, sizeof extra - (size_t)n, "%s{\"prefill\": \"k_cache_%d\", \"decode\": \"k_cache_%d\"}, "
                    "{\"prefill\": \"v_cache_%d\", \"decode\": \"v_cache_%d\"}", i ? ", " : "", i, i, i, i);
    snprintf(extra + n, sizeof extra - (size_t)n, "]}}");
    rc = compile_one(c, g, shape, "generate-prefill", stage, extra, NULL);
    wf_progress_done();
    if (!rc) rc = check_coresident(c, stage, ddir); /* no plan that does not fit */
  }
  if (rc) wf_plan_stage_abort(stage);
  else rc = wf_plan_stage_commit(stage, g->out_dir);
  if (rc == WF_EXIT_NOFIT) {
    int64_t best = largest_fit(c, g, name, L, g->n, concat);
    if (best > 0)
      wf_note(WF_LOC_NONE, "with a prompt of %lld tokens both phases fit this mesh for at most --generate=%lld "
                           "(the KV cache, %s, then holds %lld slots per row of PEs; the cache and the position "
                           "tables every PE holds grow with N)", L, (long long)best, g->kv_cache,
              (long long)slots_per_row(L, rows, best, concat));
    else
      wf_note(WF_LOC_NONE, "the two phases do not fit this mesh even for --generate=1 (a larger --mesh, or --autotune)");
  }
  free(ddir);
  return rc;
}
