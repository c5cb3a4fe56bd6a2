/* Target presets: every preset loads with the values docs/targets.md promises; unknown keys,
 * bad values, missing keys and unknown names are errors; --mesh is checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waferc/diag.h"
#include "waferc/target.h"

#include "wf_test.h"

static char last_msg[4096];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev;
  (void)user;
  /* Keeps every message of the current check (reset before each). */
  size_t n = strlen(last_msg);
  snprintf(last_msg + n, sizeof last_msg - n, "%s:%u:%u: %s\n", loc.file ? loc.file : "-", loc.line,
           loc.col, msg);
}

static const char *write_tmp(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/wf_test_target_XXXXXX.target");
  int fd = mkstemps(path, 7);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    perror("mkstemps");
    exit(1);
  }
  fputs(text, f);
  fclose(f);
  return path;
}

int main(void) {
  wf_test_targets();

  wf_target t;
  CHECK(wf_target_load("wse2", &t) == 0, "wse2 does not load");
  CHECK(t.fabric_w == 757 && t.fabric_h == 996, "wse2 fabric %dx%d", t.fabric_w, t.fabric_h);
  CHECK(t.program_w == 750 && t.program_h == 994, "wse2 program %dx%d", t.program_w, t.program_h);
  CHECK(t.sram_bytes == 48 * 1024 && t.sram_banks == 8, "wse2 sram");
  CHECK(t.clock_hz == 1.1e9 && t.fmac_per_cycle == 1 && t.fp16_simd == 4, "wse2 compute/clock");
  CHECK(t.ramp_cycles == 2 && t.hop_cycles == 1 && t.wavelet_bits == 32, "wse2 fabric timing");
  CHECK(t.colors == 24 && t.reserved_colors == (7u << 21), "wse2 colors");
  CHECK(wf_target_usable_colors(&t) == 21, "wse2 usable colors %d", wf_target_usable_colors(&t));
  CHECK(t.switch_positions == 4 && t.route_code_bits == 5, "wse2 routing");
  CHECK(wf_target_load("wse3", &t) == 0 && t.fabric_w == 762 && t.fabric_h == 1172 && t.fp16_simd == 8,
        "wse3");
  CHECK(wf_target_load("test4x4", &t) == 0 && t.mesh_w == 4 && t.mesh_h == 4, "test4x4 mesh");
  CHECK(wf_target_load("test8x8", &t) == 0 && t.mesh_w == 8 && t.mesh_h == 8, "test8x8 mesh");
  CHECK(wf_target_set_mesh(&t, "2x3") == 0 && t.mesh_w == 2 && t.mesh_h == 3, "set_mesh 2x3");

  wf_diag_set_sink(sink, NULL);
  CHECK(wf_target_set_mesh(&t, "100x100") != 0, "mesh larger than the program rectangle accepted");
  CHECK(wf_target_set_mesh(&t, "4by4") != 0, "bad mesh text accepted");
  CHECK(wf_target_load("no-such-target", &t) != 0 && strstr(last_msg, "available presets") &&
            strstr(last_msg, "wse2"),
        "unknown target: %s", last_msg);

  /* Unknown key and bad value, located. */
  char text[4096];
  char path[4200];
  snprintf(path, sizeof path, "%s/test4x4.target", getenv("WAFERC_TARGET_PATH"));
  FILE *f = fopen(path, "r");
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  char bad[4200];
  snprintf(bad, sizeof bad, "%sfrobnicate = 3\n", text);
  const char *p = write_tmp(bad);
  CHECK(wf_target_load(p, &t) != 0 && strstr(last_msg, "unknown target key 'frobnicate'"),
        "unknown key: %s", last_msg);
  remove(p);
  snprintf(bad, sizeof bad, "%s", text);
  char *hop = strstr(bad, "hop_cycles = 1");
  if (hop) memcpy(hop, "hop_cycles = x", 14);
  p = write_tmp(bad);
  last_msg[0] = 0;
  CHECK(wf_target_load(p, &t) != 0 && strstr(last_msg, "bad value 'x' for 'hop_cycles'") &&
            strstr(last_msg, ":14:"),
        "bad value: %s", last_msg);
  remove(p);
  p = write_tmp("name = partial\nfabric = 4x4\n");
  CHECK(wf_target_load(p, &t) != 0 && strstr(last_msg, "missing target keys") &&
            strstr(last_msg, "ramp_cycles") && strstr(last_msg, "queue_depth"),
        "missing keys: %s", last_msg);
  remove(p);

  /* wf_target_parse: the text of a file, parsed as the file is, messages naming the name given. */
  wf_target u;
  CHECK(wf_target_load(path, &t) == 0 && wf_target_parse(text, n, "mem.target", &u) == 0 &&
            !memcmp(&t, &u, sizeof t),
        "test4x4.target from memory differs from the file");
  last_msg[0] = 0;
  snprintf(bad, sizeof bad, "%sfrobnicate = 3\n", text);
  CHECK(wf_target_parse(bad, strlen(bad), "mem.target", &u) != 0 &&
            strstr(last_msg, "mem.target:") && strstr(last_msg, "unknown target key 'frobnicate'"),
        "unknown key from memory: %s", last_msg);
  last_msg[0] = 0;
  CHECK(wf_target_parse("", 0, "mem.target", &u) != 0 && strstr(last_msg, "missing target keys"),
        "empty text: %s", last_msg);
  last_msg[0] = 0;
  memcpy(bad, text, n + 1);
  hop = strstr(bad, "hop_cycles");
  if (hop) hop[3] = 0; /* a NUL is read, as from a file, not taken for the end of the text */
  CHECK(wf_target_parse(bad, n, "mem.target", &u) != 0 && strstr(last_msg, "expected 'key = value'"),
        "a NUL in the text: %s", last_msg);
  wf_diag_set_sink(NULL, NULL);
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("test_target: all checks passed\n");
  return g_failures ? 1 : 0;
}
