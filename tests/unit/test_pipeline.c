/* Pipeline text: parse/print round trip, typed option checking, error columns and caret
 * lines; the registry's checks on descriptors; option getters and defaults. Needs only the
 * registry, no IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"
#include "waferc/pass.h"

#include "wf_test.h"

/* Captures the last diagnostic. */
static char last_msg[4096];
static wf_loc last_loc;
static int n_diags;
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev;
  (void)user;
  snprintf(last_msg, sizeof last_msg, "%s", msg);
  last_loc = loc;
  n_diags++;
}

static int noop_run(wf_module *m, wf_pass_ctx *ctx) {
  (void)m;
  (void)ctx;
  return 0;
}

static const wf_pass_option part_opts[] = {
    {"mesh", WF_OPT_STRING, "4x4", "mesh"},
    {"iters", WF_OPT_INT, "3", "iterations"},
    {"alpha", WF_OPT_FLOAT, "0.5", "weight"},
    {"fast", WF_OPT_BOOL, "false", "hurry"},
    {"name", WF_OPT_STRING, "\"a b\"", "a quoted default"},
};
static const char *const part_stats[] = {"ops-partitioned"};
static const wf_pass_info p_part = {"partition", "test", part_opts, 5, part_stats, 1, noop_run};
static const wf_pass_info p_dce = {"dce", "test", NULL, 0, NULL, 0, noop_run};
static const wf_pass_info p_canon = {"canonicalize", "test", NULL, 0, NULL, 0, noop_run};

static wf_pass_registry reg; /* a private registry: the global one holds the real passes */

static void roundtrip(const char *text) {
  wf_pipeline *p = wf_pipeline_parse(&reg, text);
  CHECK(p != NULL, "'%s' should parse (%s)", text, last_msg);
  if (!p) return;
  char *back = wf_pipeline_print(p);
  CHECK(strcmp(back, text) == 0, "'%s' printed back as '%s'", text, back);
  free(back);
  wf_pipeline_free(p);
}

static void normalizes(const char *text, const char *expect) {
  wf_pipeline *p = wf_pipeline_parse(&reg, text);
  CHECK(p != NULL, "'%s' should parse (%s)", text, last_msg);
  if (!p) return;
  char *back = wf_pipeline_print(p);
  CHECK(strcmp(back, expect) == 0, "'%s' printed as '%s', expected '%s'", text, back, expect);
  free(back);
  wf_pipeline_free(p);
}

/* The pipeline must fail with an error at `col` whose message contains `needle`, and the
 * caret line must put '^' under that column. */
static void fails_at(const char *text, unsigned col, const char *needle) {
  n_diags = 0;
  last_msg[0] = '\0';
  wf_pipeline *p = wf_pipeline_parse(&reg, text);
  CHECK(p == NULL, "'%s' should not parse", text);
  wf_pipeline_free(p);
  CHECK(n_diags == 1, "'%s': expected one diagnostic, got %d", text, n_diags);
  CHECK(last_loc.col == col, "'%s': error at column %u, expected %u (%s)", text, last_loc.col, col, last_msg);
  CHECK(last_loc.line == 1 && last_loc.file && strcmp(last_loc.file, "--pass-pipeline") == 0,
        "'%s': location should be --pass-pipeline:1", text);
  CHECK(strstr(last_msg, needle) != NULL, "'%s': message '%s' lacks '%s'", text, last_msg, needle);
  /* Last line of the message: two spaces of indent, then the caret at column `col`. */
  const char *caret = strrchr(last_msg, '\n');
  CHECK(caret && strlen(caret + 1) == col + 2 && caret[col + 2] == '^', "'%s': caret line misplaced in:\n%s", text,
        last_msg);
}

static void test_registry_checks(void) {
  static const wf_pass_info bad_name = {"Bad_Name", "x", NULL, 0, NULL, 0, noop_run};
  static const wf_pass_option bad_dflt[] = {{"n", WF_OPT_INT, "many", "?"}};
  static const wf_pass_info bad_default = {"bad-default", "x", bad_dflt, 1, NULL, 0, noop_run};
  static const wf_pass_info no_run = {"no-run", "x", NULL, 0, NULL, 0, NULL};
  static const char *const bad_stats[] = {"Not Kebab"};
  static const wf_pass_info bad_stat = {"bad-stat", "x", NULL, 0, bad_stats, 1, noop_run};
  CHECK(wf_pass_register(&reg, &bad_name) != 0, "non-kebab name accepted");
  CHECK(wf_pass_register(&reg, &bad_default) != 0, "unparsable default accepted");
  CHECK(wf_pass_register(&reg, &no_run) != 0, "NULL run accepted");
  CHECK(wf_pass_register(&reg, &bad_stat) != 0, "non-kebab statistic accepted");
  CHECK(wf_pass_register(&reg, &p_dce) != 0, "duplicate name accepted");
  CHECK(strstr(last_msg, "already taken") != NULL, "duplicate message: %s", last_msg);
  CHECK(wf_pass_count(&reg) == 3, "registry should still hold 3 passes, holds %d", wf_pass_count(&reg));
}

static void test_option_values(void) {
  wf_pipeline *p = wf_pipeline_parse(&reg, "partition{iters=-7,alpha=1e-3,fast=true,name=\"x \\\"y\\\"\"}");
  CHECK(p != NULL, "option pipeline should parse: %s", last_msg);
  if (!p) return;
  int64_t stats[1] = {0};
  wf_arena *a = wf_arena_new();
  wf_pass_ctx ctx = {&p->passes[0], stats, 0, NULL, a};
  CHECK(wf_pass_opt_int(&ctx, "iters") == -7, "iters");
  CHECK(wf_pass_opt_float(&ctx, "alpha") == 1e-3, "alpha");
  CHECK(wf_pass_opt_bool(&ctx, "fast") == 1, "fast");
  CHECK(strcmp(wf_pass_opt_str(&ctx, "name"), "x \"y\"") == 0, "escapes resolved: got '%s'", wf_pass_opt_str(&ctx, "name"));
  CHECK(strcmp(wf_pass_opt_str(&ctx, "mesh"), "4x4") == 0, "default mesh: got '%s'", wf_pass_opt_str(&ctx, "mesh"));
  wf_pass_stat_add(&ctx, "ops-partitioned", 2);
  wf_pass_stat_add(&ctx, "ops-partitioned", 3);
  CHECK(stats[0] == 5, "statistic sums, got %lld", (long long)stats[0]);
  wf_pipeline_free(p);

  p = wf_pipeline_parse(&reg, "partition");
  ctx.pass = &p->passes[0];
  CHECK(wf_pass_opt_int(&ctx, "iters") == 3, "default iters");
  CHECK(wf_pass_opt_float(&ctx, "alpha") == 0.5, "default alpha");
  CHECK(wf_pass_opt_bool(&ctx, "fast") == 0, "default fast");
  CHECK(strcmp(wf_pass_opt_str(&ctx, "name"), "a b") == 0, "quoted default unquoted: '%s'", wf_pass_opt_str(&ctx, "name"));
  wf_pipeline_free(p);
  wf_arena_free(a);
}

int main(void) {
  wf_diag_set_sink(sink, NULL);
  CHECK(wf_pass_register(&reg, &p_canon) == 0, "register canonicalize: %s", last_msg);
  CHECK(wf_pass_register(&reg, &p_dce) == 0, "register dce: %s", last_msg);
  CHECK(wf_pass_register(&reg, &p_part) == 0, "register partition: %s", last_msg);
  test_registry_checks();

  roundtrip("");
  roundtrip("dce");
  roundtrip("canonicalize,dce,partition");
  roundtrip("partition{mesh=64x64}");
  roundtrip("canonicalize,partition{mesh=8x4,iters=2,alpha=0.25,fast=false},dce");
  roundtrip("partition{alpha=1e-05,iters=-1}");
  roundtrip("partition{name=\"a, b {c}\"}");
  roundtrip("partition{}");
  roundtrip("dce,dce");
  normalizes("  canonicalize , dce { } ,partition{ mesh = 2x2 , iters=4 } ", "canonicalize,dce{},partition{mesh=2x2,iters=4}");

  fails_at("canonicalize,foo", 14, "unknown pass 'foo' (known: canonicalize, dce, partition)");
  fails_at("partition{bogus=1}", 11, "unknown option 'bogus' for pass 'partition' (options: mesh, iters, alpha, fast, name)");
  fails_at("dce{x=1}", 5, "pass 'dce' has no options");
  fails_at("partition{iters=abc}", 17, "option 'iters' of pass 'partition' expects an int, got 'abc'");
  fails_at("partition{alpha=fast}", 17, "expects a float");
  fails_at("partition{fast=maybe}", 16, "expects a bool");
  fails_at("partition{iters=\"3\"}", 17, "expects an int");
  fails_at("partition{mesh=4x4", 19, "expected '}' to close the options of pass 'partition' opened at column 10");
  fails_at("dce}", 4, "unbalanced '}'");
  fails_at("dce,,canonicalize", 5, "expected a pass name");
  fails_at("dce,", 5, "expected a pass name after ','");
  fails_at("partition{mesh}", 15, "expected '=' after option 'mesh'");
  fails_at("partition{mesh=}", 16, "expected a value");
  fails_at("partition{iters=1,iters=2}", 19, "given twice");
  fails_at("partition{name=\"abc}", 16, "unterminated string");
  fails_at("dce canonicalize", 5, "expected ',' or '{' after pass 'dce'");
  fails_at("partition{mesh=4x4 iters=2}", 20, "expected ',' or '}'");
  /* Values that would size a pass's work past any target (a 10^6-column mesh made head-layout
   * loop for minutes): refused when the pipeline is parsed. */
  fails_at("partition{iters=2147483648}", 17, "expects an int in [-2147483647, 2147483647], got '2147483648'");
  fails_at("partition{iters=99999999999999999999}", 17, "expects an int");
  fails_at("partition{mesh=1000000x1}", 16, "expects a mesh WxH with sides in 1..65536 and at most 1048576 PEs");
  fails_at("partition{mesh=2048x2048}", 16, "at most 1048576 PEs");
  fails_at("partition{mesh=0x4}", 16, "expects a mesh WxH");
  fails_at("partition{mesh=\"4x4 \"}", 16, "expects a mesh WxH");
  roundtrip("partition{mesh=762x1172,iters=2147483647}");
  {
    /* A long pipeline parses in one linear pass (a loose bound: 20000 passes). */
    size_t n = 20000, len = n * 4;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < n; i++) memcpy(big + 4 * i, "dce,", 4);
    big[len - 1] = '\0';
    wf_pipeline *p = wf_pipeline_parse(&reg, big);
    CHECK(p != NULL, "a pipeline of %zu passes does not parse", n);
    wf_pipeline_free(p);
    free(big);
  }

  test_option_values();
  if (g_failures) fprintf(stderr, "test_pipeline: %d check(s) failed\n", g_failures);
  else printf("test_pipeline: all checks passed\n");
  return g_failures != 0;
}
