/* waferc: compiles a model to a plan directory for waferrun.
 *
 *   waferc model.wir -o plan/ --target=wse2 --mesh=64x64
 *   waferc model.wir --emit=ir --pass-pipeline='canonicalize,dce'
 *   waferc model.wir --interpret --input x=x.npy --output-dir out/
 *   waferc model.onnx --input-shape input_ids=1x16 --interpret --input input_ids=ids.npy --output-dir out/
 *   waferc model.onnx --interpret --input input_ids=prompt.npy --generate=8 --output-dir ref/
 */
#define _XOPEN_SOURCE 700 /* nftw (ftw.h) */
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/gemm/gemm_algos.h"
#include "ir/support/fsutil.h"
#include "passes/cli.h"
#include "passes/partition.h"
#include "auto_region.h"
#include "generate.h"
#include "pipeline.h"
#include "plan_stage.h"
#include "tools/waferc/interpret_generate.h"
#include "waferc/backend.h"
#include "waferc/collectives.h"
#include "waferc/onnx.h"
#include "waferc/tensor.h"
#include "waferc/version.h"

/* The default pipeline; passes not registered in this build (e.g. partition before the
 * backend lands) are left out. --interpret runs the graph unpartitioned. */
static const char *const default_passes[] = {"canonicalize", "raise", "cse", "dce", "head-layout", "partition", "moe-routes", "lower-gemm", "symbol-dce"};

#define MAX_INPUTS 256

typedef struct options {
  const char *input, *output, *func, *emit, *output_dir;
  int interpret;
  const char *inputs[MAX_INPUTS]; /* NAME=FILE */
  int n_inputs;
  const char *input_shapes[MAX_INPUTS]; /* --input-shape NAME=1x128 (ONNX inputs) */
  int n_input_shapes;
  char *derived_shapes[MAX_INPUTS];     /* the ones taken from --input files (freed at exit) */
  int n_derived;
  int list_onnx_ops;
  const char *gemm_algo; /* --gemm-algo: lower-gemm{algo=...} in the default pipeline; with
                          * --gemm-buffers "A,buffers=B" (gemm_opts), so every pipeline built
                          * as lower-gemm{algo=%s} carries both */
  const char *gemm_buffers; /* --gemm-buffers */
  char gemm_opts[64];
  const char *gqa;       /* --gqa: head-layout{gqa=...} in the default pipeline */
  const char *reduce_algo;     /* --reduce-algo (wf_plan_opts) */
  char gemv_how[16];           /* --gemv-allreduce's name; "" = each op's own */
  int gemv_k, gemv_groups;     /* --gemv-k / --gemv-groups or {k=,groups=}; -1 = each op's */
  int auto_region;             /* --auto-region: a larger mesh when SRAM is over budget */
  int generate;                /* --generate=N: tokens to generate (0: none) */
  const char *kv_cache;        /* --kv-cache=shift|concat (with --generate) */
  int rope_computed;           /* --rope=held|computed (with --generate) */
  int autotune;                /* --autotune (with --generate): the mesh from the cost model */
  int dec_w, dec_h;            /* --decode-mesh=WxH (with --generate): the decode region */
  int switch_weights;          /* --switch-weights=auto|move|resident (with --decode-mesh) */
  int switch_weights_given;
  int pipeline_n;              /* --pipeline=N: stages on N bands of rows (0, 1: none) */
} options;

static void usage(FILE *out) {
  fputs("usage: waferc [options] model.wir|model.onnx -o plan/\n"
        "Compiles a model (.wir text form or ONNX) for a wafer-scale target and writes a plan\n"
        "directory for waferrun.\n\n"
        "  -o DIR                     the plan directory (created, parents too)\n"
        "  --emit=plan|ir             write a plan (default), or print the final IR (to -o FILE\n"
        "                             or standard output)\n"
        "  --func=NAME                the function to compile or interpret (default main)\n"
        "  --interpret                run the reference interpreter instead of compiling\n"
        "  --input NAME=FILE.npy      bind argument NAME (repeatable; with --interpret)\n"
        "  --output-dir DIR           where --interpret writes <result>.npy\n"
        "  --input-shape NAME=1x128   fixes the dynamic dims of ONNX input NAME (repeatable)\n"
        "  --list-onnx-ops            list the supported ONNX operators, their opsets, and\n"
        "                             whether each runs on the mesh or only in the interpreter\n"
        "  --list-targets             list the target presets\n"
        "  --gemm-algo=A              dist.gemm algorithm: meshgemm, cannon, summa, allgather or\n"
        "                             auto (default: the lowest predicted cycles; docs/gemm.md)\n"
        "  --gemm-buffers=B           MeshGEMM/Cannon buffers per operand: 2 (default, double\n"
        "                             buffered), 1 (memory-minimal: A, B, C and one spare) or\n"
        "                             auto (2 when it fits the SRAM, else 1; docs/gemm.md);\n"
        "                             without it, a plan that does not fit is compiled again\n"
        "                             with 1\n"
        "  --gqa=M                    kv heads whose query heads span columns (GQA, MQA):\n"
        "                             replicate their projections, gather them inside attention,\n"
        "                             colocate (computed once, q packed beside the kv pieces),\n"
        "                             or auto (default: replicate or gather, the lower predicted\n"
        "                             cycles; with --generate: colocate; docs/attention.md)\n"
        "  --reduce-algo=A            every reduce/allreduce (dist ops, softmax and norm rows):\n"
        "                             star, chain, tree, two_phase, autogen, ring (allreduce),\n"
        "                             snake (2D) or auto (default: the lowest predicted cycles\n"
        "                             for each one's P and B; docs/collectives-lowering.md)\n"
        "  --gemv-allreduce=A         dist.gemv's allreduce: ktree, pipeline, ring or auto;\n"
        "                             ktree{k=2} or ktree{groups=4} set the K-tree's shape\n"
        "  --gemv-k=K, --gemv-groups=G  the K-tree's levels / group count\n"
        "  --generate=N               compile for generation (docs/generation.md): -o DIR gets\n"
        "                             the prefill for --input-shape IDS=1xL and DIR/decode/ one\n"
        "                             decode step, with a KV cache for N tokens (exit 4 names\n"
        "                             the largest N that fits); with --interpret: greedy\n"
        "                             generation recomputing the whole sequence each step\n"
        "  --kv-cache=shift|concat    the cache's policy with --generate (default shift)\n"
        "  --rope=held|computed       with --generate: a decode step reads RoPE's rows from the\n"
        "                             tables it holds (held, the default), or computes them at\n"
        "                             the token's position (cos, sin; no table grows with N)\n"
        "  --switch-weights=W         with --decode-mesh: the switch moves the decode step's\n"
        "                             matrix weights onto its region over the fabric (move),\n"
        "                             both phases keep theirs resident (resident), or auto\n"
        "                             (default): move when the SRAM budgets allow it\n"
        "  --decode-mesh=WxH          with --generate: decode on the prefill region's WxH corner;\n"
        "                             DIR/switch/ moves the KV cache onto it over the fabric\n"
        "  --autotune                 with --generate: the prefill and decode regions (square\n"
        "                             meshes of 2, 4, 8, ... PEs a side, and --mesh; decode on\n"
        "                             the prefill's corner) with the least predicted time to the\n"
        "                             last token, the switch included; prints what it weighed\n"
        "  --pipeline=N               the model's layers over N bands of the mesh's rows (a\n"
        "                             multiple of N), each band a plan in DIR/pipeline/ and the\n"
        "                             activations moved band to band over the fabric; waferrun\n"
        "                             runs them in order (docs/pipeline.md)\n"
        "  --auto-region              when the per-PE SRAM is over budget, compile for the\n"
        "                             smallest larger mesh that fits (a note names it)\n"
        "  --expert-parallel[=on|off|auto]  an MoE block's experts on bands of the mesh's\n"
        "                             rows, the bands running at once (the expert-bands pass\n"
        "                             after moe-routes; docs/moe-plans.md); auto compiles with\n"
        "                             up to four band counts and without, and keeps the\n"
        "                             fewest predicted cycles\n"
        "  -q                         no progress lines\n"
        "  --help, --version\n",
        out);
  wf_cli_print_common_help(out);
  fputs("The default pipeline is canonicalize,raise,cse,dce,head-layout,partition,moe-routes,lower-gemm,symbol-dce (without head-layout, partition, moe-routes and lower-gemm for --interpret and --emit=ir).\n", out);
}

/* --expert-parallel: expert-bands follows moe-routes in every default pipeline built, with
 * band_rank its `rank` (which band count; the next ones are tried when a plan does not fit);
 * =auto keeps the plan with or without bands whose predicted cycles are fewer */
static int expert_parallel, expert_auto, band_rank;

static char *default_pipeline(int interpret, const char *gemm_algo, const char *gqa) {
  wf_pass_registry *r = wf_pass_registry_global();
  size_t cap = 1 + (gemm_algo ? strlen(gemm_algo) + 8 : 0) + (gqa ? strlen(gqa) + 7 : 0) + 48;
  for (size_t i = 0; i < sizeof default_passes / sizeof default_passes[0]; i++) cap += strlen(default_passes[i]) + 1;
  char *s = calloc(1, cap);
  WF_ASSERT(s);
  for (size_t i = 0; i < sizeof default_passes / sizeof default_passes[0]; i++) {
    if (!wf_pass_lookup(r, default_passes[i])) continue;
    int late = strcmp(default_passes[i], "head-layout") == 0 || strcmp(default_passes[i], "partition") == 0 ||
               strcmp(default_passes[i], "lower-gemm") == 0 || strcmp(default_passes[i], "moe-routes") == 0;
    if (interpret && late) continue;
    if (*s) strcat(s, ",");
    strcat(s, default_passes[i]);
    if (gemm_algo && strcmp(default_passes[i], "lower-gemm") == 0) {
      strcat(s, "{algo=");
      strcat(s, gemm_algo);
      strcat(s, "}");
    }
    if (expert_parallel && strcmp(default_passes[i], "moe-routes") == 0) {
      strcat(s, ",expert-bands");
      if (band_rank) sprintf(s + strlen(s), "{rank=%d}", band_rank);
    }
    if (gqa && strcmp(default_passes[i], "head-layout") == 0) {
      strcat(s, "{gqa=");
      strcat(s, gqa);
      strcat(s, "}");
    }
  }
  return s;
}

static wf_pipeline *default_pipeline_parsed(wf_cli *c, const char *gemm_algo, const char *gqa) {
  char *s = default_pipeline(0, gemm_algo, gqa);
  wf_pipeline *p = wf_cli_parse_pipeline(c, s);
  free(s);
  return p;
}

/* lower-gemm's options for the memory-minimal fallback: --gemm-algo's (or auto) with one buffer;
 * NULL when --gemm-buffers chose the schedule. */
static const char *minimal_algo(const options *o, char *buf, size_t cap) {
  if (o->gemm_buffers) return NULL;
  snprintf(buf, cap, "%s,buffers=1", o->gemm_algo ? o->gemm_algo : "auto");
  return buf;
}

static char *joined_args(int argc, char **argv) {
  size_t n = 1;
  for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
  char *s = calloc(1, n);
  WF_ASSERT(s);
  for (int i = 0; i < argc; i++) {
    if (i) strcat(s, " ");
    strcat(s, argv[i]);
  }
  return s;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static wf_func *pick_func(wf_module *m, const char *name) {
  if (name) {
    wf_func *f = wf_module_find_func(m, name);
    if (!f) wf_error(WF_LOC_NONE, "no function @%s in the module", name);
    return f;
  }
  wf_func *f = wf_module_find_func(m, "main");
  if (!f && m->n_funcs) f = m->funcs[0];
  if (!f) wf_error(WF_LOC_NONE, "the module has no function");
  return f;
}

static int is_numeric(const char *s) {
  if (!*s) return 1;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static int shape_matches(const wf_tensor *t, const wf_type *ty) {
  if (t->dtype != ty->dtype || t->rank != ty->rank) return 0;
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] != ty->dims[d]) return 0;
  return 1;
}

static void shape_str(char *buf, size_t cap, wf_dtype dt, int rank, const int64_t *dims) {
  size_t n = (size_t)snprintf(buf, cap, "%s[", wf_dtype_name(dt));
  for (int d = 0; d < rank && n < cap; d++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)dims[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Binds --input NAME=FILE to the function's arguments by name. */
static int bind_inputs(wf_func *f, const options *o, wf_tensor **bound) {
  wf_module *m = f->module;
  int rc = WF_EXIT_OK;
  for (int k = 0; k < o->n_inputs; k++) {
    const char *eq = strchr(o->inputs[k], '=');
    if (!eq || eq == o->inputs[k] || !eq[1]) {
      wf_error(WF_LOC_NONE, "--input expects NAME=FILE.npy, got '%s'", o->inputs[k]);
      return WF_EXIT_USAGE;
    }
    size_t n = (size_t)(eq - o->inputs[k]);
    int arg = -1;
    for (int a = 0; a < f->n_args; a++) {
      const char *name = wf_str(m, wf_value_get(f, f->args[a])->name);
      if (strlen(name) == n && strncmp(name, o->inputs[k], n) == 0) arg = a;
    }
    if (arg < 0) {
      char args[1024] = "";
      for (int a = 0; a < f->n_args; a++)
        snprintf(args + strlen(args), sizeof args - strlen(args), "%s%%%s", a ? ", " : "",
                 wf_str(m, wf_value_get(f, f->args[a])->name));
      wf_error(WF_LOC_NONE, "--input '%.*s': function @%s has no argument %%%.*s (its arguments: %s)", (int)n,
               o->inputs[k], wf_str(m, f->name), (int)n, o->inputs[k], f->n_args ? args : "none");
      rc = WF_EXIT_USAGE;
      continue;
    }
    if (bound[arg]) {
      wf_error(WF_LOC_NONE, "--input '%.*s' is given twice", (int)n, o->inputs[k]);
      rc = WF_EXIT_USAGE;
      continue;
    }
    wf_tensor *t = wf_npy_read(eq + 1);
    if (!t) {
      rc = wf_exit_for_file(eq + 1, WF_EXIT_INPUT);
      continue;
    }
    const wf_type *ty = wf_value_type(f, f->args[arg]);
    if (!shape_matches(t, ty)) {
      char got[256], want[256];
      shape_str(got, sizeof got, t->dtype, t->rank, t->dims);
      shape_str(want, sizeof want, ty->dtype, ty->rank, ty->dims);
      wf_error(WF_LOC_NONE, "--input '%.*s': %s holds %s but argument %%%.*s is %s", (int)n, o->inputs[k], eq + 1,
               got, (int)n, o->inputs[k], want);
      wf_tensor_free(t);
      rc = WF_EXIT_INPUT;
      continue;
    }
    bound[arg] = t;
  }
  for (int a = 0; a < f->n_args; a++)
    if (!bound[a] && rc == WF_EXIT_OK) {
      const char *name = wf_str(m, wf_value_get(f, f->args[a])->name);
      wf_error(WF_LOC_NONE, "missing --input for argument %%%s of @%s", *name ? name : "?", wf_str(m, f->name));
      rc = WF_EXIT_USAGE;
    }
  return rc;
}

/* With --interpret, an ONNX input bound by --input NAME=FILE.npy takes its shape from the
 * file unless --input-shape fixes it: `waferc m.onnx --interpret --input x=x.npy` just works
 * for models with dynamic dims. */
static int shapes_from_inputs(options *o) {
  for (int k = 0; k < o->n_inputs; k++) {
    const char *eq = strchr(o->inputs[k], '=');
    if (!eq || eq == o->inputs[k]) continue; /* reported by bind_inputs */
    size_t n = (size_t)(eq - o->inputs[k]);
    int given = 0;
    for (int j = 0; j < o->n_input_shapes; j++)
      given |= strncmp(o->input_shapes[j], o->inputs[k], n) == 0 && o->input_shapes[j][n] == '=';
    if (given || o->n_input_shapes == MAX_INPUTS) continue;
    wf_tensor *t = wf_npy_read(eq + 1);
    if (!t) return wf_exit_for_file(eq + 1, WF_EXIT_INPUT);
    size_t cap = n + 2 + (size_t)t->rank * 21;
    char *spec = malloc(cap);
    size_t len = (size_t)snprintf(spec, cap, "%.*s=", (int)n, o->inputs[k]);
    for (int d = 0; d < t->rank; d++) len += (size_t)snprintf(spec + len, cap - len, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
    wf_tensor_free(t);
    o->input_shapes[o->n_input_shapes++] = spec;
    o->derived_shapes[o->n_derived++] = spec;
  }
  return WF_EXIT_OK;
}

static int interpret(wf_module *m, const options *o) {
  if (!o->output_dir) {
    wf_error(WF_LOC_NONE, "--interpret needs --output-dir DIR");
    return WF_EXIT_USAGE;
  }
  wf_func *f = pick_func(m, o->func);
  if (!f) return WF_EXIT_USAGE;
  wf_tensor **in = calloc((size_t)f->n_args + 1, sizeof *in);
  int rc = bind_inputs(f, o, in);
  wf_tensor **out = calloc((size_t)f->n_results + 1, sizeof *out);
  int n_out = 0;
  if (rc == WF_EXIT_OK && wf_interpret(m, wf_str(m, f->name), f->n_args, in, out, f->n_results, &n_out) != 0)
    rc = WF_EXIT_INPUT;
  if (rc == WF_EXIT_OK && wf_mkdir_p(o->output_dir) != 0) rc = WF_EXIT_IO;
  const wf_op *ret = wf_func_return(f);
  for (int i = 0; rc == WF_EXIT_OK && i < n_out; i++) {
    /* A result is named after the value returned, when that has a real name and no earlier
     * result took it. */
    char name[300];
    const char *vname = ret && i < ret->n_operands ? wf_str(m, wf_value_get(f, ret->operands[i])->name) : "";
    int taken = 0;
    for (int j = 0; j < i && ret; j++) taken |= ret->operands[j] == ret->operands[i];
    if (!is_numeric(vname) && !taken && !strchr(vname, '/')) snprintf(name, sizeof name, "%s.npy", vname);
    else snprintf(name, sizeof name, "output_%d.npy", i);
    char *path = wf_path_join(o->output_dir, name);
    if (wf_npy_write(path, out[i]) != 0) rc = WF_EXIT_IO;
    free(path);
  }
  for (int i = 0; i < f->n_args; i++) wf_tensor_free(in[i]);
  for (int i = 0; i < n_out; i++) wf_tensor_free(out[i]);
  free(in);
  free(out);
  return rc;
}

/* Compiles into a stage beside o->output and moves the plan into place only when all of it
 * is written (plan_stage.h): an older plan there survives a failed compile untouched. */
static int emit_plan(wf_cli *c, wf_module *m, const options *o, const char *flags) {
  char *stage = wf_plan_stage_begin(o->output);
  if (!stage) return WF_EXIT_IO;
  wf_plan_opts po = WF_PLAN_OPTS_DEFAULT;
  po.func = o->func;
  po.compiler_flags = flags;
  po.quiet = c->quiet;
  po.reduce_algo = o->reduce_algo;
  po.gemv_allreduce = o->gemv_how[0] ? o->gemv_how : NULL;
  po.gemv_k = o->gemv_k;
  po.gemv_groups = o->gemv_groups;
  wf_progress("writing plan %s", o->output);
  int rc = wf_backend_emit_plan(m, &c->target, stage, &po);
  wf_progress_done();
  if (!rc) {
    char *ir = wf_path_join(stage, "ir");
    char *final = wf_path_join(ir, "final.wir");
    rc = wf_mkdir_p(ir) ? WF_EXIT_IO : wf_cli_write_module(c, final, m);
    free(ir);
    free(final);
  }
  if (rc) {
    wf_plan_stage_abort(stage);
    return rc;
  }
  return wf_plan_stage_commit(stage, o->output);
}

/* --list-onnx-ops: what the partition pass takes to the mesh (passes/partition.h). */
static int mesh_lowers(const char *ir_op) {
  wf_opcode c;
  if (wf_opcode_lookup(ir_op, &c) != 0) return -1;
  return wf_partition_lowers(c);
}

static int parse_count(const char *opt, const char *v, int min, int *out) {
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || *end || n < min || n > 1 << 20) {
    wf_error(WF_LOC_NONE, "%s expects an integer >= %d, got '%s'", opt, min, v);
    return -1;
  }
  *out = (int)n;
  return 0;
}

/* NAME or NAME{k=K,groups=G} (either key, in any order). */
static int parse_gemv(options *o, const char *v) {
  size_t n = strcspn(v, "{");
  static const char *const names[] = {"ktree", "pipeline", "ring", "auto"};
  int ok = 0;
  for (int i = 0; i < 4; i++) ok |= strlen(names[i]) == n && !strncmp(v, names[i], n);
  if (!ok) {
    wf_error(WF_LOC_NONE, "--gemv-allreduce: unknown allreduce '%.*s' (ktree, pipeline, ring or auto)",
             (int)n, v);
    return -1;
  }
  memcpy(o->gemv_how, v, n);
  o->gemv_how[n] = 0;
  if (!v[n]) return 0;
  const char *p = v + n + 1;
  while (*p && *p != '}') {
    char key[16], val[24];
    size_t kl = strcspn(p, "="), vl;
    if (kl == 0 || kl >= sizeof key || p[kl] != '=') goto bad;
    memcpy(key, p, kl);
    key[kl] = 0;
    p += kl + 1;
    vl = strcspn(p, ",}");
    if (vl == 0 || vl >= sizeof val) goto bad;
    memcpy(val, p, vl);
    val[vl] = 0;
    p += vl;
    if (*p == ',') p++;
    if (!strcmp(key, "k")) {
      if (parse_count("--gemv-allreduce k", val, 1, &o->gemv_k)) return -1;
    } else if (!strcmp(key, "groups")) {
      if (parse_count("--gemv-allreduce groups", val, 0, &o->gemv_groups)) return -1;
    } else {
      goto bad;
    }
  }
  if (*p == '}' && !p[1]) return 0;
bad:
  wf_error(WF_LOC_NONE, "--gemv-allreduce: cannot parse '%s' (expected NAME or NAME{k=K,groups=G})", v);
  return -1;
}

static int parse_args(wf_cli *c, options *o, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = wf_cli_parse_common(c, argc, argv, &i);
    if (k < 0) return WF_EXIT_USAGE;
    if (k > 0) continue;
#define VALUE(NAME, DEST)                                              \
  if ((k = wf_cli_opt(argc, argv, &i, NAME, &v))) {                     \
    if (k < 0) return WF_EXIT_USAGE;                                    \
    DEST;                                                               \
    continue;                                                           \
  }
    VALUE("-o", o->output = v)
    VALUE("--func", o->func = v)
    VALUE("--emit", o->emit = v)
    VALUE("--gqa", {
      if (strcmp(v, "auto") && strcmp(v, "replicate") && strcmp(v, "gather") && strcmp(v, "colocate")) {
        wf_error(WF_LOC_NONE, "--gqa: '%s' is not one of auto, replicate, gather, colocate", v);
        return WF_EXIT_USAGE;
      }
      o->gqa = v;
    })
    VALUE("--gemm-algo", {
      wf_gemm_algo ga;
      if (strcmp(v, "auto") && wf_gemm_algo_parse(v, &ga)) {
        char valid[128] = "";
        for (int g = 0; g < WF_GEMM_COUNT; g++)
          snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s, ", wf_gemm_algo_names[g]);
        wf_error(WF_LOC_NONE, "--gemm-algo: unknown algorithm '%s' (valid: %sauto)", v, valid);
        return WF_EXIT_USAGE;
      }
      o->gemm_algo = v;
    })
    VALUE("--gemm-buffers", {
      int nb;
      if (wf_gemm_buffers_parse(v, &nb)) {
        wf_error(WF_LOC_NONE, "--gemm-buffers: '%s' is not one of 1, 2, auto", v);
        return WF_EXIT_USAGE;
      }
      o->gemm_buffers = v;
    })
    VALUE("--reduce-algo", {
      if (strcmp(v, "auto") && wf_coll_algo_parse(v) < 0) {
        wf_error(WF_LOC_NONE, "--reduce-algo: unknown algorithm '%s' (valid: star, chain, tree, "
                              "two_phase, autogen, ring, snake, auto)", v);
        return WF_EXIT_USAGE;
      }
      o->reduce_algo = v;
    })
    VALUE("--gemv-allreduce", { if (parse_gemv(o, v)) return WF_EXIT_USAGE; })
    VALUE("--gemv-k", { if (parse_count("--gemv-k", v, 1, &o->gemv_k)) return WF_EXIT_USAGE; })
    VALUE("--gemv-groups", { if (parse_count("--gemv-groups", v, 0, &o->gemv_groups)) return WF_EXIT_USAGE; })
    VALUE("--output-dir", o->output_dir = v)
    VALUE("--generate", { if (parse_count("--generate", v, 1, &o->generate)) return WF_EXIT_USAGE; })
    VALUE("--pipeline", { if (parse_count("--pipeline", v, 1, &o->pipeline_n)) return WF_EXIT_USAGE; })
    VALUE("--kv-cache", {
      if (strcmp(v, "shift") && strcmp(v, "concat")) {
        wf_error(WF_LOC_NONE, "--kv-cache expects shift or concat, got '%s'", v);
        return WF_EXIT_USAGE;
      }
      o->kv_cache = v;
    })
    VALUE("--rope", {
      if (strcmp(v, "held") && strcmp(v, "computed")) {
        wf_error(WF_LOC_NONE, "--rope expects held or computed, got '%s'", v);
        return WF_EXIT_USAGE;
      }
      o->rope_computed = !strcmp(v, "computed");
    })
    VALUE("--decode-mesh", {
      char tail;
      if (sscanf(v, "%dx%d%c", &o->dec_w, &o->dec_h, &tail) != 2 || o->dec_w < 1 || o->dec_h < 1) {
        wf_error(WF_LOC_NONE, "--decode-mesh expects WxH with positive integers (e.g. 2x2), got '%s'", v);
        return WF_EXIT_USAGE;
      }
    })
    VALUE("--switch-weights", {
      if (strcmp(v, "auto") && strcmp(v, "move") && strcmp(v, "resident")) {
        wf_error(WF_LOC_NONE, "--switch-weights expects auto, move or resident, got '%s'", v);
        return WF_EXIT_USAGE;
      }
      o->switch_weights = !strcmp(v, "move") ? WF_SW_MOVE : !strcmp(v, "resident") ? WF_SW_RESIDENT : WF_SW_AUTO;
      o->switch_weights_given = 1;
    })
    VALUE("--input-shape", {
      if (o->n_input_shapes == MAX_INPUTS) {
        wf_error(WF_LOC_NONE, "too many --input-shape options (at most %d)", MAX_INPUTS);
        return WF_EXIT_USAGE;
      }
      o->input_shapes[o->n_input_shapes++] = v;
    })
    VALUE("--input", {
      if (o->n_inputs == MAX_INPUTS) {
        wf_error(WF_LOC_NONE, "too many --input options (at most %d)", MAX_INPUTS);
        return WF_EXIT_USAGE;
      }
      o->inputs[o->n_inputs++] = v;
    })
#undef VALUE
    if (strcmp(a, "--interpret") == 0) {
      o->interpret = 1;
    } else if (strcmp(a, "--autotune") == 0) {
      o->autotune = 1;
    } else if (strcmp(a, "--auto-region") == 0) {
      o->auto_region = 1;
    } else if (strcmp(a, "--expert-parallel") == 0 || strcmp(a, "--expert-parallel=on") == 0) {
      expert_parallel = 1;
    } else if (strcmp(a, "--expert-parallel=auto") == 0) {
      expert_parallel = 1, expert_auto = 1;
    } else if (strcmp(a, "--expert-parallel=off") == 0) {
      expert_parallel = 0;
    } else if (strncmp(a, "--expert-parallel=", 18) == 0) {
      wf_error(WF_LOC_NONE, "--expert-parallel: '%s' is not one of on, off, auto", a + 18);
      return WF_EXIT_USAGE;
    } else if (strcmp(a, "--list-onnx-ops") == 0) {
      o->list_onnx_ops = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(WF_EXIT_OK);
    } else if (strcmp(a, "--version") == 0) {
      printf("waferc %s\n", WF_VERSION_STRING);
      exit(WF_EXIT_OK);
    } else if (a[0] == '-' && a[1] != '\0') {
      static const char *const own[] = {"-o", "--func", "--emit", "--gemm-algo", "--gemm-buffers", "--gqa", "--reduce-algo",
                                        "--gemv-allreduce", "--gemv-k", "--gemv-groups", "--output-dir",
                                        "--input-shape", "--input", "--interpret", "--auto-region",
                                        "--list-onnx-ops", "--generate", "--kv-cache", "--autotune",
                                        "--decode-mesh", "--switch-weights", "--pipeline", "--rope",
                                        "--expert-parallel"};
      wf_cli_unknown_option(c, a, own, (int)(sizeof own / sizeof own[0]));
      return WF_EXIT_USAGE;
    } else if (o->input) {
      wf_error(WF_LOC_NONE, "more than one input file ('%s' and '%s')", o->input, a);
      return WF_EXIT_USAGE;
    } else {
      o->input = a;
    }
  }
  if (o->emit && strcmp(o->emit, "plan") != 0 && strcmp(o->emit, "ir") != 0) {
    wf_error(WF_LOC_NONE, "--emit expects 'plan' or 'ir', got '%s'", o->emit);
    return WF_EXIT_USAGE;
  }
  if (o->n_inputs && !o->interpret) {
    wf_error(WF_LOC_NONE, "--input is only meaningful with --interpret");
    return WF_EXIT_USAGE;
  }
  if (o->gemm_buffers) { /* lower-gemm{algo=A,buffers=B} wherever a pipeline names the algo */
    snprintf(o->gemm_opts, sizeof o->gemm_opts, "%s,buffers=%s", o->gemm_algo ? o->gemm_algo : "auto",
             o->gemm_buffers);
    o->gemm_algo = o->gemm_opts;
  }
  return WF_EXIT_OK;
}

/* Reads the model and runs the pipeline on it; NULL (rc set) on failure. */
static wf_module *load_module(wf_cli *c, options *o, wf_pipeline *pipeline, int *rcp) {
  int rc = WF_EXIT_OK;
  wf_module *m = NULL;
  if (ends_with(o->input, ".onnx")) {
    wf_onnx_opts oo = WF_ONNX_OPTS_DEFAULT;
    if (o->interpret) rc = shapes_from_inputs(o);
    oo.input_shapes = o->input_shapes;
    oo.n_input_shapes = o->n_input_shapes;
    oo.func_name = o->func;
    if (rc == WF_EXIT_OK) rc = wf_onnx_import(o->input, &oo, &m);
  } else {
    m = wf_cli_read_module(o->input, &rc); /* sets rc when it fails */
  }
  if (m) rc = wf_verify_module(m) != 0 ? WF_EXIT_INPUT : WF_EXIT_OK; /* (rc is set only when reading failed) */
  int plan = !o->interpret && !(o->emit && strcmp(o->emit, "ir") == 0);
  if (m && rc == WF_EXIT_OK && plan && o->func) { /* the plan's function alone goes down the pipeline */
    wf_func *f = pick_func(m, o->func);
    if (f) wf_module_keep_func(m, f);
    else rc = WF_EXIT_USAGE;
  }
  if (m && rc == WF_EXIT_OK) rc = wf_pipeline_run(pipeline, m, &c->pm);
  *rcp = rc;
  return m;
}

typedef struct compile_try {
  wf_cli *c;
  options *o;
  wf_pipeline *pipeline;
  const char *flags;
  wf_pipeline *replicate; /* the default pipeline with head-layout{gqa=replicate} */
  wf_pipeline *minimal;   /* without --gemm-buffers: the default pipeline with
                           * lower-gemm{buffers=1}, and that with kv heads replicated */
  wf_pipeline *minimal_replicate;
  wf_pipeline *summa;     /* and without --gemm-algo: lower-gemm{algo=summa}, and replicated */
  wf_pipeline *summa_replicate;
  wf_pipeline *onering;   /* with auto GEMMs: lower-gemm{one-ring}, and replicated */
  wf_pipeline *onering_replicate;
} compile_try;

/* One compile to a plan for the target's current mesh (--auto-region retries it). */
static int compile_once(void *user) {
  compile_try *t = user;
  int rc;
  wf_module *m = load_module(t->c, t->o, t->pipeline, &rc);
  if (rc == WF_EXIT_OK) rc = emit_plan(t->c, m, t->o, t->flags);
  if (m) wf_module_free(m);
  return rc;
}

/* The same with the kv heads replicated: the default --gqa=auto may gather them, which saves
 * projection work but holds the gathered pieces in SRAM; a plan that then does not fit is
 * compiled again so (compile_fitting). */
static int compile_replicated(void *user) {
  compile_try *t = user, r = *t;
  r.pipeline = t->replicate;
  return compile_once(&r);
}

/* compile_once, and with the default pipeline and no --gqa, compile_replicated when that plan
 * does not fit. */
static int compile_gqa_fitting(void *user) {
  compile_try *t = user;
  if (!t->replicate) return compile_once(user);
  return wf_waferc_fallback(compile_once, compile_replicated, user,
                            "the plan with gathered kv heads (--gqa=auto) does not fit a PE's SRAM; "
                            "it is compiled with them replicated (--gqa=replicate)");
}

/* compile_gqa_fitting with every GEMM SUMMA's. */
static int compile_summa(void *user) {
  compile_try *t = user, r = *t;
  r.pipeline = t->summa;
  r.replicate = t->summa_replicate;
  r.minimal = r.minimal_replicate = r.summa = r.summa_replicate = NULL;
  return compile_gqa_fitting(&r);
}

/* compile_gqa_fitting with the memory-minimal GEMM schedule, and without --gemm-algo
 * compile_summa when that plan does not fit either: auto weighs each GEMM's SRAM alone, and
 * may still pick a shift GEMM (three buffers of the larger block) where the plan's peak has
 * no room for it; SUMMA's scratch is two received blocks. */
static int compile_minimal(void *user) {
  compile_try *t = user, r = *t;
  r.pipeline = t->minimal;
  r.replicate = t->minimal_replicate;
  r.minimal = r.minimal_replicate = NULL;
  if (!t->summa) return compile_gqa_fitting(&r);
  return wf_waferc_fallback(compile_gqa_fitting, compile_summa, &r,
                            "the plan with the memory-minimal schedule does not fit a PE's SRAM or its router's "
                            "route codes either; it is compiled with SUMMA for every GEMM (--gemm-algo=summa)");
}

static int compile_onering(void *user);

/* compile_gqa_fitting, and when that plan does not fit: with auto GEMMs compile_onering, and
 * without --gemm-buffers compile_minimal. The GEMM chooser weighs each op alone
 * (docs/gemm.md), so a region may mix MeshGEMM's and Cannon's rings past the colors or route
 * codes, and a double-buffered shift GEMM it finds room for may not fit beside what the rest
 * of the plan holds at its peak. */
static int compile_fitting(void *user) {
  compile_try *t = user;
  if (t->onering)
    return wf_waferc_fallback(compile_gqa_fitting, compile_onering, user,
                              "the plan does not fit a PE's SRAM, colors or route codes; it is compiled again with "
                              "one shift-GEMM ring kind per region, MeshGEMM's or Cannon's (lower-gemm{one-ring})");
  if (!t->minimal) return compile_gqa_fitting(user);
  return wf_waferc_fallback(compile_gqa_fitting, compile_minimal, user,
                            "the plan with double-buffered GEMMs does not fit a PE's SRAM or its router's route codes "
                            "(or, with --expert-parallel, a band's rows); it is compiled "
                            "with the memory-minimal schedule (--gemm-buffers=1)");
}

/* compile_fitting with the one-ring pipelines (and then, if need be, its other fallbacks). */
static int compile_onering(void *user) {
  compile_try *t = user, r = *t;
  r.pipeline = t->onering;
  r.replicate = t->onering_replicate;
  r.onering = r.onering_replicate = NULL;
  return compile_fitting(&r);
}

/* lower-gemm's options for the one-ring fallback: auto's (with --gemm-buffers') and one-ring;
 * NULL when --gemm-algo names an algorithm. */
static const char *onering_algo(const options *o, char *buf, size_t cap) {
  const char *a = o->gemm_algo ? o->gemm_algo : "auto";
  if (strncmp(a, "auto", 4) != 0 || (a[4] && a[4] != ',')) return NULL;
  snprintf(buf, cap, "%s,one-ring=true", a);
  return buf;
}

/* compile_fitting with every default pipeline built again (expert_parallel, band_rank). */
static int compile_rebuilt(void *user) {
  compile_try *t = user, r = *t;
  const options *o = t->o;
  r.pipeline = default_pipeline_parsed(t->c, o->gemm_algo, o->gqa);
  wf_pipeline **extra[] = {&r.replicate, &r.minimal, &r.minimal_replicate, &r.summa, &r.summa_replicate,
                           &r.onering, &r.onering_replicate};
  char algo[80], ring[96];
  if (r.replicate) r.replicate = default_pipeline_parsed(t->c, o->gemm_algo, "replicate");
  if (r.minimal) r.minimal = default_pipeline_parsed(t->c, minimal_algo(o, algo, sizeof algo), o->gqa);
  if (r.minimal_replicate) r.minimal_replicate = default_pipeline_parsed(t->c, algo, "replicate");
  if (r.summa) r.summa = default_pipeline_parsed(t->c, "summa", o->gqa);
  if (r.summa_replicate) r.summa_replicate = default_pipeline_parsed(t->c, "summa", "replicate");
  if (r.onering) r.onering = default_pipeline_parsed(t->c, onering_algo(o, ring, sizeof ring), o->gqa);
  if (r.onering_replicate) r.onering_replicate = default_pipeline_parsed(t->c, ring, "replicate");
  int rc = r.pipeline ? compile_fitting(&r) : WF_EXIT_USAGE;
  if (r.pipeline) wf_pipeline_free(r.pipeline);
  for (int i = 0; i < 7; i++)
    if (*extra[i]) wf_pipeline_free(*extra[i]);
  return rc;
}

/* The plan without expert-bands. */
static int compile_whole_experts(void *user) {
  expert_parallel = 0;
  int rc = compile_rebuilt(user);
  expert_parallel = 1;
  return rc;
}

/* Band counts tried after the first before every expert goes on the whole mesh (a block has
 * up to min(experts, rows) - 1 counts; past its last, expert-bands gives it none). */
#define MORE_BAND_COUNTS 3

/* The next band count (expert-bands' rank + 1), then the ones after it, then the whole mesh
 * (compile_bands' note says which was kept). */
static int kept_rank; /* the band_rank of the plan compile_bands kept (-1: the whole mesh) */

/* compile_rebuilt at band_rank, noting the rank when the plan fits. */
static int compile_rank(void *user) {
  int rc = compile_rebuilt(user);
  if (!rc) kept_rank = band_rank;
  return rc;
}

static int compile_next_bands(void *user) {
  if (band_rank >= MORE_BAND_COUNTS) {
    kept_rank = -1;
    return compile_whole_experts(user);
  }
  band_rank++;
  int rc = wf_waferc_fallback(compile_rank, compile_next_bands, user, NULL);
  band_rank--;
  return rc;
}

static int64_t plan_predicted(const char *dir, int *bands);

/* compile_fitting, and with --expert-parallel the next band counts, then compile_whole_experts,
 * while the plan with bands does not fit: a band's colors are its own, and its SRAM depends on
 * its height and experts (docs/moe-plans.md). */
static int compile_bands(void *user) {
  if (!expert_parallel) return compile_fitting(user);
  compile_try *t = user;
  kept_rank = 0;
  int rc = wf_waferc_fallback(compile_fitting, compile_next_bands, user,
                              "the plan with experts on bands of the rows (--expert-parallel) does not fit the "
                              "target's colors or SRAM, or an op's code on a band's rows; other band counts are tried, "
                              "then every expert on the whole mesh");
  int bands = 0;
  if (rc || !kept_rank || plan_predicted(t->o->output, &bands) < 0) return rc; /* the first count fit */
  if (bands)
    wf_note(WF_LOC_NONE, "--expert-parallel: the experts are on %d bands, a band count that fits", bands);
  else
    wf_note(WF_LOC_NONE, "--expert-parallel: no band count tried fits; every expert is on the whole mesh");
  return rc;
}

static void drop_diag(wf_severity sev, wf_loc loc, const char *msg, void *user) { (void)sev, (void)loc, (void)msg, (void)user; }

/* The plan's predicted cycles and whether it has bands (manifest.json); -1 when unreadable. */
static int64_t plan_predicted(const char *dir, int *bands) {
  char *path = wf_path_join(dir, "manifest.json");
  char *text = wf_read_file(path, NULL);
  free(path);
  *bands = 0;
  if (!text) return -1;
  cJSON *m = cJSON_Parse(text);
  free(text);
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "predicted_cycles");
  int64_t cycles = cJSON_IsNumber(p) ? (int64_t)p->valuedouble : -1;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(m, "regions")) *bands += cJSON_HasObjectItem(r, "within");
  cJSON_Delete(m);
  return cycles;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

/* Compiles into a scratch directory with `fn` at band_rank = rank, its diagnostics dropped:
 * the plan's predicted cycles and bands, or -1 when it does not compile or fit. */
static int64_t predicted_silently(compile_try *t, int (*fn)(void *), int rank, int *bands) {
  char dir[] = "/tmp/waferc-ep-XXXXXX";
  *bands = 0;
  if (!mkdtemp(dir)) return -1;
  options o2 = *t->o;
  char *plan = wf_path_join(dir, "plan");
  o2.output = plan;
  compile_try r = *t;
  r.o = &o2;
  void *prev_user;
  wf_diag_sink prev_sink = wf_diag_get_sink(&prev_user);
  wf_diag_set_sink(drop_diag, NULL);
  int saved = band_rank;
  band_rank = rank;
  int rc = fn(&r);
  band_rank = saved;
  wf_diag_set_sink(prev_sink, prev_user);
  int64_t cycles = rc ? -1 : plan_predicted(plan, bands);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(plan);
  return cycles;
}

/* compile_bands, and with --expert-parallel=auto, when that plan has bands, the plans with the
 * band counts after it (up to MORE_BAND_COUNTS more, while they make bands) and the plan
 * without bands: the one with the fewest predicted cycles is kept (compiled again into the
 * plan directory when it is not the first), and a note gives every one weighed. */
static int compile_choose(void *user) {
  compile_try *t = user;
  int rc = compile_bands(user), bands = 0;
  if (rc || !expert_auto) return rc;
  int64_t first = plan_predicted(t->o->output, &bands);
  if (!bands || first < 0) return rc;
  int first_rank = kept_rank, best_rank = first_rank, best_bands = bands;
  int64_t best = first;
  char said[512];
  int at = snprintf(said, sizeof said, "%lld cycles predicted with the experts on %d bands", (long long)first, bands);
  for (int r = first_rank + 1; r <= MORE_BAND_COUNTS; r++) {
    int nb;
    int64_t c = predicted_silently(t, compile_rebuilt, r, &nb);
    if (c < 0) continue; /* does not fit: the next may */
    if (!nb) break;      /* past every block's band counts */
    if (at < (int)sizeof said) at += snprintf(said + at, sizeof said - (size_t)at, ", %lld on %d", (long long)c, nb);
    if (c < best) best = c, best_rank = r, best_bands = nb;
  }
  int none;
  int64_t without = predicted_silently(t, compile_whole_experts, 0, &none);
  if (without >= 0 && at < (int)sizeof said) snprintf(said + at, sizeof said - (size_t)at, ", %lld without", (long long)without);
  if (without >= 0 && without < best) {
    wf_note(WF_LOC_NONE, "--expert-parallel=auto: %s: compiled without", said);
    return compile_whole_experts(user);
  }
  if (best_rank == first_rank) {
    wf_note(WF_LOC_NONE, "--expert-parallel=auto: %s: kept the bands (%d)", said, best_bands);
    return rc;
  }
  wf_note(WF_LOC_NONE, "--expert-parallel=auto: %s: compiled with the bands (%d)", said, best_bands);
  int saved = band_rank;
  band_rank = best_rank;
  rc = compile_rebuilt(user);
  band_rank = saved;
  return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* After a plan that does not fit: compiles for larger meshes into a scratch directory (removed
 * after) and names the smallest that fits, so the error says what to do. */
static void name_smallest_fit(const compile_try *t) {
  char dir[] = "/tmp/waferc-fit-XXXXXX";
  if (!mkdtemp(dir)) return;
  wf_cli *c = t->c;
  options probe = *t->o;
  probe.output = dir;
  compile_try ct = *t;
  ct.o = &probe;
  int w, h;
  if (wf_waferc_smallest_fit(&c->target, compile_fitting, &ct, &w, &h))
    wf_note(WF_LOC_NONE, "the smallest mesh of this shape the plan fits is %dx%d (--mesh=%dx%d)", w, h, w, h);
  else
    wf_note(WF_LOC_NONE, "no larger mesh within the %dx%d program rectangle fits either", c->target.program_w,
            c->target.program_h);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* --interpret --generate imports the model once per step, at the step's length, through
 * load_module: the interpret pipeline and the import path are the ones --interpret uses. */
typedef struct generate_load {
  wf_cli *c;
  const options *o;
  wf_pipeline *pipeline;
} generate_load;

static wf_module *load_for_generate(void *user, const char *const *shapes, int n_shapes, int *rc) {
  generate_load *g = user;
  options step = *g->o;
  step.n_inputs = 0; /* the step's shapes replace the prompt file's */
  step.n_derived = 0;
  step.n_input_shapes = n_shapes < MAX_INPUTS ? n_shapes : MAX_INPUTS;
  for (int i = 0; i < step.n_input_shapes; i++) step.input_shapes[i] = shapes[i];
  return load_module(g->c, &step, g->pipeline, rc);
}

static int generate(wf_cli *c, const options *o, wf_pipeline *pipeline) {
  WF_ASSERT(o->interpret); /* compiling for generation: wf_waferc_compile_generate (generate.c) */
  generate_load gl = {c, o, pipeline};
  wf_waferc_generate_ref g = {o->input, o->func, o->inputs, o->n_inputs, o->input_shapes, o->n_input_shapes,
                              o->generate, o->output_dir, load_for_generate, &gl};
  return wf_waferc_interpret_generate(&g);
}

/* --pipeline=N: each stage imports the model and runs the default pipeline's passes before
 * partition (pipeline.c cuts between them and the rest). */
typedef struct pipe_load {
  wf_cli *c;
  options *o;
  wf_pipeline *pre;
} pipe_load;

static wf_module *load_pre(void *user, int *rc) {
  pipe_load *l = user;
  return load_module(l->c, l->o, l->pre, rc);
}

/* One pipelined compile with head-layout{gqa=gqa} (NULL: the default, auto). */
typedef struct pipe_try {
  wf_cli *c;
  options *o;
  const char *flags;
  const char *gqa;
  const char *gemm_algo; /* lower-gemm's options (--gemm-algo, or the memory-minimal fallback's) */
} pipe_try;

static int pipe_once(void *user) {
  pipe_try *t = user;
  char *full = default_pipeline(0, t->gemm_algo, t->gqa), *cut = strstr(full, ",partition");
  WF_ASSERT(cut); /* partition is part of every build that writes plans */
  *cut = 0;
  wf_pipeline *pre = wf_cli_parse_pipeline(t->c, full);
  int rc = WF_EXIT_USAGE;
  if (pre) {
    pipe_load pl = {t->c, t->o, pre};
    wf_pipe_compile pc = {t->o->pipeline_n, t->o->output, cut + 1, WF_PLAN_OPTS_DEFAULT, load_pre, &pl};
    pc.po.func = t->o->func;
    pc.po.compiler_flags = t->flags;
    pc.po.quiet = t->c->quiet;
    pc.po.reduce_algo = t->o->reduce_algo;
    pc.po.gemv_allreduce = t->o->gemv_how[0] ? t->o->gemv_how : NULL;
    pc.po.gemv_k = t->o->gemv_k;
    pc.po.gemv_groups = t->o->gemv_groups;
    rc = wf_waferc_compile_pipeline(t->c, &pc);
    wf_pipeline_free(pre);
  }
  free(full);
  return rc;
}

static int pipe_replicated(void *user) {
  pipe_try r = *(pipe_try *)user;
  r.gqa = "replicate";
  return pipe_once(&r);
}

/* pipe_once, and without --gqa pipe_replicated when a stage does not fit. */
static int pipe_gqa_fitting(void *user) {
  pipe_try *t = user;
  if (t->gqa) return pipe_once(user);
  return wf_waferc_fallback(pipe_once, pipe_replicated, t,
                            "a stage with gathered kv heads (--gqa=auto) does not fit a PE's SRAM; the "
                            "stages are compiled with them replicated (--gqa=replicate)");
}

static int pipe_summa(void *user) {
  pipe_try r = *(pipe_try *)user;
  r.gemm_algo = "summa";
  return pipe_gqa_fitting(&r);
}

/* pipe_gqa_fitting with the memory-minimal schedule, and without --gemm-algo pipe_summa when
 * a stage does not fit either (compile_minimal). */
static int pipe_minimal(void *user) {
  pipe_try r = *(pipe_try *)user;
  char algo[80];
  r.gemm_algo = minimal_algo(r.o, algo, sizeof algo);
  if (r.o->gemm_algo) return pipe_gqa_fitting(&r);
  return wf_waferc_fallback(pipe_gqa_fitting, pipe_summa, &r,
                            "stages with the memory-minimal schedule do not fit a PE's SRAM either; they are "
                            "compiled with SUMMA for every GEMM (--gemm-algo=summa)");
}

/* --pipeline=N; without --gqa, a stage whose gathered kv heads do not fit is compiled with
 * them replicated, and without --gemm-buffers, stages whose double-buffered GEMMs do not fit
 * with the memory-minimal schedule, as a whole-model plan is (compile_fitting). */
static int compile_pipeline(wf_cli *c, options *o, int argc, char **argv) {
  int N = o->pipeline_n, H = c->target.mesh_h;
  if (H % N) {
    int down = H / N * N, up = down + N;
    if (down)
      wf_error(WF_LOC_NONE, "--pipeline=%d: the mesh's %d rows do not make %d bands of equal height (--mesh=%dx%d or "
                            "%dx%d does)", N, H, N, c->target.mesh_w, down, c->target.mesh_w, up);
    else
      wf_error(WF_LOC_NONE, "--pipeline=%d: the mesh has %d rows, fewer than the %d bands (--mesh=%dx%d)", N, H, N,
               c->target.mesh_w, up);
    return WF_EXIT_USAGE;
  }
  char *flags = joined_args(argc, argv);
  pipe_try t = {c, o, flags, o->gqa, o->gemm_algo};
  int rc = o->gemm_buffers ? pipe_gqa_fitting(&t)
                           : wf_waferc_fallback(pipe_gqa_fitting, pipe_minimal, &t,
                                                "stages with double-buffered GEMMs do not fit a PE's SRAM; they "
                                                "are compiled with the memory-minimal schedule (--gemm-buffers=1)");
  free(flags);
  return rc;
}

int main(int argc, char **argv) {
  wf_cli c;
  wf_cli_init(&c, "waferc");
  options o;
  memset(&o, 0, sizeof o);
  o.gemv_k = o.gemv_groups = -1;
  int rc = parse_args(&c, &o, argc, argv);
  if (rc) return rc;
  if (o.list_onnx_ops) {
    wf_onnx_list_ops(stdout, mesh_lowers);
    puts("\n\"runs on\" follows each op's graph ops (include/waferc/ops.def) and the ops the partition\n"
         "pass takes to the mesh. An op marked interpreter only can still reach the mesh when the\n"
         "raise pass folds the pattern it is part of into an op that has a lowering (an Erf GELU\n"
         "becomes gelu: docs/raise.md), or when it folds away on constants.");
    return WF_EXIT_OK;
  }
  if (c.list_targets) {
    wf_target_list(stdout);
    return WF_EXIT_OK;
  }
  if ((rc = wf_cli_load_passes(&c)) != 0) return rc;
  if (c.list_passes) {
    wf_cli_list_passes(stdout);
    return WF_EXIT_OK;
  }
  /* --interpret and --emit=ir see the graph-level IR: partition only runs toward a plan */
  char *dflt = default_pipeline(o.interpret || (o.emit && strcmp(o.emit, "ir") == 0), o.gemm_algo, o.gqa);
  wf_pipeline *pipeline = wf_cli_parse_pipeline(&c, c.pipeline ? c.pipeline : dflt);
  free(dflt);
  if (!pipeline) return WF_EXIT_USAGE;
  if (c.print_pipeline) {
    char *text = wf_pipeline_print(pipeline);
    printf("%s\n", text);
    free(text);
    wf_pipeline_free(pipeline);
    return WF_EXIT_OK;
  }
  int emit_ir = o.emit && strcmp(o.emit, "ir") == 0;
  if (!o.input) {
    wf_error(WF_LOC_NONE, "no input model (see waferc --help)");
    rc = WF_EXIT_USAGE;
  } else if (!o.output && !emit_ir && !o.interpret) {
    wf_error(WF_LOC_NONE, "no plan directory: give -o DIR (or --emit=ir, --interpret)");
    rc = WF_EXIT_USAGE;
  } else if (o.n_input_shapes && !ends_with(o.input, ".onnx")) {
    wf_error(WF_LOC_NONE, "--input-shape applies to ONNX models only");
    rc = WF_EXIT_USAGE;
  } else if (o.dec_w && (!o.generate || o.interpret)) {
    wf_error(WF_LOC_NONE, "--decode-mesh applies to compiling for generation (--generate=N -o DIR)");
    rc = WF_EXIT_USAGE;
  } else if (o.switch_weights_given && !o.dec_w && !o.autotune) {
    wf_error(WF_LOC_NONE, "--switch-weights applies to a decode region of its own (--decode-mesh=WxH or --autotune)");
    rc = WF_EXIT_USAGE;
  } else if (o.dec_w && o.autotune) {
    wf_error(WF_LOC_NONE, "--decode-mesh and --autotune: give one (autotune chooses the meshes itself)");
    rc = WF_EXIT_USAGE;
  } else if (o.pipeline_n > 1 && (o.interpret || emit_ir || o.generate || o.auto_region || c.pipeline || !o.output)) {
    wf_error(WF_LOC_NONE, "--pipeline=N compiles a plan with the default pipeline: it takes -o DIR and not %s",
             o.interpret ? "--interpret" : emit_ir ? "--emit=ir" : o.generate ? "--generate" : o.auto_region ? "--auto-region"
             : c.pipeline ? "--pass-pipeline" : "the missing -o");
    rc = WF_EXIT_USAGE;
  } else if (o.generate && o.gqa && !strcmp(o.gqa, "gather")) {
    wf_error(WF_LOC_NONE, "--gqa=gather is for prefill plans: with --generate the decode step reads the prefill's "
                          "k and v columns as its cache, so kv heads are colocated with q or replicated (drop --gqa, "
                          "or use --gqa=colocate or --gqa=replicate)");
    rc = WF_EXIT_USAGE;
  } else {
    rc = wf_cli_load_target(&c);
  }
  if (rc) {
    wf_pipeline_free(pipeline);
    return rc;
  }

  if (o.pipeline_n > 1) {
    rc = compile_pipeline(&c, &o, argc, argv);
    wf_pipeline_free(pipeline);
    for (int i = 0; i < o.n_derived; i++) free(o.derived_shapes[i]);
    return rc;
  }
  if (o.generate && !o.interpret) {
    char *flags = joined_args(argc, argv);
    wf_gen_compile g = {o.input, o.n_input_shapes ? o.input_shapes[0] : NULL, o.generate,
                        o.kv_cache ? o.kv_cache : "shift", o.gemm_algo, o.output, WF_PLAN_OPTS_DEFAULT, o.autotune,
                        o.dec_w, o.dec_h, o.switch_weights, o.rope_computed, o.gqa};
    g.po.compiler_flags = flags;
    g.po.quiet = c.quiet;
    g.po.reduce_algo = o.reduce_algo;
    g.po.gemv_allreduce = o.gemv_how[0] ? o.gemv_how : NULL;
    g.po.gemv_k = o.gemv_k;
    g.po.gemv_groups = o.gemv_groups;
    if (!o.output) {
      wf_error(WF_LOC_NONE, "--generate compiles a plan: give -o DIR");
      rc = WF_EXIT_USAGE;
    } else if (!ends_with(o.input, ".onnx") || o.n_input_shapes != 1) {
      wf_error(WF_LOC_NONE, "--generate compiles an ONNX export with a dynamic sequence axis: give the model.onnx "
                            "and the prompt's ids as --input-shape NAME=1xL");
      rc = WF_EXIT_USAGE;
    } else {
      rc = wf_waferc_compile_generate(&c, &g);
    }
    free(flags);
    wf_pipeline_free(pipeline);
    return rc;
  }
  if (o.generate) {
    rc = generate(&c, &o, pipeline);
    wf_pipeline_free(pipeline);
    return rc;
  }
  /* the default pipeline's fallbacks when a plan does not fit (compile_fitting) */
  compile_try ct = {&c, &o, pipeline, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  if (!o.interpret && !emit_ir && !c.pipeline) {
    char algo[80], ring[96];
    if (!o.gqa) ct.replicate = default_pipeline_parsed(&c, o.gemm_algo, "replicate");
    if (onering_algo(&o, ring, sizeof ring)) {
      ct.onering = default_pipeline_parsed(&c, ring, o.gqa);
      if (!o.gqa) ct.onering_replicate = default_pipeline_parsed(&c, ring, "replicate");
    }
    if (minimal_algo(&o, algo, sizeof algo)) {
      ct.minimal = default_pipeline_parsed(&c, algo, o.gqa);
      if (!o.gqa) ct.minimal_replicate = default_pipeline_parsed(&c, algo, "replicate");
      if (!o.gemm_algo) {
        ct.summa = default_pipeline_parsed(&c, "summa", o.gqa);
        if (!o.gqa) ct.summa_replicate = default_pipeline_parsed(&c, "summa", "replicate");
      }
    }
  }
  if (!o.interpret && !emit_ir && (o.auto_region || ct.replicate || ct.minimal || ct.onering)) {
    char *flags = joined_args(argc, argv);
    ct.flags = flags;
    if (o.auto_region) {
      rc = wf_waferc_auto_region(&c.target, compile_choose, &ct);
    } else {
      rc = compile_choose(&ct);
      if (rc == WF_EXIT_NOFIT) name_smallest_fit(&ct);
    }
    free(flags);
    wf_pipeline_free(pipeline);
    wf_pipeline *extra[] = {ct.replicate, ct.minimal, ct.minimal_replicate, ct.summa, ct.summa_replicate,
                            ct.onering, ct.onering_replicate};
    for (int i = 0; i < 7; i++)
      if (extra[i]) wf_pipeline_free(extra[i]);
    for (int i = 0; i < o.n_derived; i++) free(o.derived_shapes[i]);
    return rc;
  }
  wf_progress("parsing %s", o.input);
  wf_module *m = load_module(&c, &o, pipeline, &rc);
  wf_progress_done();
  if (rc == WF_EXIT_OK) {
    if (o.interpret) rc = interpret(m, &o);
    else if (emit_ir) rc = wf_cli_write_module(&c, o.output, m);
    else {
      char *flags = joined_args(argc, argv);
      rc = emit_plan(&c, m, &o, flags);
      ct.flags = flags;
      if (rc == WF_EXIT_NOFIT) name_smallest_fit(&ct);
      free(flags);
    }
  }
  if (m) wf_module_free(m);
  wf_pipeline_free(pipeline);
  for (int i = 0; i < o.n_derived; i++) free(o.derived_shapes[i]);
  return rc;
}
