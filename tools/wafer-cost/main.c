/* wafer-cost: the collective cost model (include/waferc/collectives.h) from the command
 * line, for benchmarks and for people comparing algorithms before compiling anything.
 *
 *   wafer-cost reduce --pes=512 --len=64                 # every algorithm, one JSON per line
 *   wafer-cost reduce --pes=512 --len=64 --algo=autogen --tree
 *   wafer-cost allreduce --pes=64x64 --len=256 --choose  # the chooser's pick and why
 *
 * Predictions of the model, not simulations. Exit codes: docs/exit-codes.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/version.h"

#include "waferc/collectives.h"
#include "waferc/diag.h"
#include "waferc/target.h"

static void usage(FILE *f) {
  fputs("usage: wafer-cost reduce|allreduce|broadcast --pes=P|WxH --len=B\n"
        "                  [--algo=NAME|all] [--choose] [--tree] [--target=T]\n"
        "  --pes     PEs in a row (P) or a grid (WxH)\n"
        "  --len     wavelets per PE (B)\n"
        "  --algo    star chain tree two_phase autogen ring snake flood, or all (default)\n"
        "  --choose  print only the model's choice, with its explanation\n"
        "  --tree    with --algo=autogen on a row: print the chosen tree's parents\n"
        "  --target  take T_R and cycles per hop from a target preset (default T_R=2, 1)\n",
        f);
}

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || v < 1) return -1;
  *out = v;
  return 0;
}

static void print_json(const char *kind, const wf_coll_query *q, const wf_coll_choice *c,
                       int with_why) {
  printf("{\"collective\": \"%s\", \"algo\": \"%s\", \"w\": %lld, \"h\": %lld, \"pes\": %lld, "
         "\"len\": %lld, \"predicted_cycles\": %.1f",
         kind, wf_coll_algo_name(c->algo), (long long)q->w, (long long)q->h,
         (long long)(q->w * q->h), (long long)q->len, c->predicted);
  if (c->lower_bound > 0)
    printf(", \"lower_bound_cycles\": %.1f, \"ratio_to_lower_bound\": %.4f", c->lower_bound,
           c->predicted / c->lower_bound);
  if (q->kind == WF_COLL_ALLREDUCE && (q->w <= 1 || q->h <= 1)) printf(", \"root\": %lld", (long long)c->root);
  if (with_why) printf(", \"why\": \"%s\"", c->why);
  printf("}\n");
}

int main(int argc, char **argv) {
  wf_diag_set_program("wafer-cost");
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? WF_EXIT_USAGE : WF_EXIT_OK;
  }
  wf_coll_query q = {WF_COLL_REDUCE, 0, 1, 0, 0, 0};
  if (!strcmp(argv[1], "--version")) {
    printf("wafer-cost (waferc) %s\n", WF_VERSION_STRING);
    return 0;
  }
  const char *kind = argv[1];
  if (!strcmp(kind, "reduce")) q.kind = WF_COLL_REDUCE;
  else if (!strcmp(kind, "allreduce")) q.kind = WF_COLL_ALLREDUCE;
  else if (!strcmp(kind, "broadcast")) q.kind = WF_COLL_BROADCAST;
  else {
    wf_error_at("wafer-cost", "unknown collective '%s' (reduce, allreduce, broadcast)", kind);
    return WF_EXIT_USAGE;
  }
  const char *algo = "all", *target = NULL;
  int choose = 0, tree = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strncmp(a, "--pes=", 6)) {
      const char *x = strchr(a + 6, 'x');
      char buf[64];
      snprintf(buf, sizeof buf, "%.*s", x ? (int)(x - (a + 6)) : 63, a + 6);
      if (parse_i64(buf, &q.w) || (x && parse_i64(x + 1, &q.h))) {
        wf_error_at("wafer-cost", "bad --pes '%s' (P or WxH, positive)", a + 6);
        return WF_EXIT_USAGE;
      }
    } else if (!strncmp(a, "--len=", 6)) {
      if (parse_i64(a + 6, &q.len)) {
        wf_error_at("wafer-cost", "bad --len '%s' (a positive number of wavelets)", a + 6);
        return WF_EXIT_USAGE;
      }
    } else if (!strncmp(a, "--algo=", 7)) {
      algo = a + 7;
    } else if (!strncmp(a, "--target=", 9)) {
      target = a + 9;
    } else if (!strcmp(a, "--choose")) {
      choose = 1;
    } else if (!strcmp(a, "--tree")) {
      tree = 1;
    } else {
      static const char *const own[] = {"--pes", "--len", "--algo", "--target", "--choose", "--tree"};
      wf_error_unknown_option("wafer-cost", a, own, 6);
      return WF_EXIT_USAGE;
    }
  }
  if (q.w < 1 || q.len < 1) {
    wf_error_at("wafer-cost", "--pes and --len are required");
    return WF_EXIT_USAGE;
  }
  wf_coll_params p = wf_coll_params_default();
  if (target) {
    wf_target t;
    if (wf_target_load(target, &t) != 0) return wf_exit_for_target(target);
    p = wf_coll_params_from_target(&t);
  }
  /* Auto-Gen's dynamic program is exact but O(P^4); allow it wherever it was asked for. */
  q.autogen_max = 4096;
  wf_coll_choice c;
  if (choose) {
    if (wf_coll_choose(&q, &p, &c) != 0) {
      wf_error_at("wafer-cost", "no algorithm applies to this %s", kind);
      return WF_EXIT_UNSUPPORTED;
    }
    print_json(kind, &q, &c, 1);
    return WF_EXIT_OK;
  }
  int only = -1;
  if (strcmp(algo, "all")) {
    only = wf_coll_algo_parse(algo);
    if (only < 0) {
      char valid[256] = "";
      for (int k = 0; k < WF_COLL_N_ALGOS; k++)
        snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s, ", wf_coll_algo_name((wf_coll_algo)k));
      wf_error_at("wafer-cost", "unknown algorithm '%s' (valid: %sall)", algo, valid);
      return WF_EXIT_USAGE;
    }
  }
  int printed = 0;
  for (int a = 0; a < WF_COLL_N_ALGOS; a++) {
    if (only >= 0 && a != only) continue;
    if (wf_coll_predict(&q, (wf_coll_algo)a, &p, &c) != 0) continue;
    print_json(kind, &q, &c, 0);
    printed++;
  }
  if (!printed) {
    wf_error_at("wafer-cost", "algorithm '%s' does not apply to a %s over %lldx%lld", algo, kind,
                (long long)q.w, (long long)q.h);
    return WF_EXIT_UNSUPPORTED;
  }
  if (tree && only == WF_COLL_AUTOGEN && (q.w <= 1 || q.h <= 1) && q.kind == WF_COLL_REDUCE) {
    wf_reduce_tree t;
    if (wf_coll_autogen(q.w * q.h, q.len, &p, &t) >= 0) {
      printf("{\"tree\": {\"depth\": %d, \"max_in\": %d, \"parent\": [", t.depth, t.max_in);
      for (int i = 0; i < t.n; i++) printf("%s%d", i ? ", " : "", t.parent[i]);
      printf("]}}\n");
      wf_coll_tree_free(&t);
    }
  }
  return WF_EXIT_OK;
}
