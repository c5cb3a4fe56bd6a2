/* f16/bf16 conversions (known bit patterns), .npy read/write, and FILE constants. */
#include <unistd.h>

#include "h2_testutil.h"

static char g_dir[256];

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void test_f16(void) {
  struct { float f; uint16_t h; } to16[] = {
      {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff}, {65519.0f, 0x7bff},
      {65520.0f, 0x7c00},                  /* the tie above the max rounds to inf (even) */
      {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, /* tie at half the smallest subnormal -> 0 */
      {0x1.8p-25f, 0x0001}, {0x1.8p-24f, 0x0002}, /* 1.5 ulp: tie -> even (2) */
      {0x1p-14f, 0x0400}, {0x1.ff8p-15f, 0x03ff}, {0x1.ffcp-15f, 0x0400}, /* 1023.5 ulp ties up into the normal range */
      {0.1f, 0x2e66}, {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02},
      {-0.0f, 0x8000}, {INFINITY, 0x7c00}, {-INFINITY, 0xfc00}, {1e10f, 0x7c00},
  };
  for (size_t i = 0; i < sizeof to16 / sizeof to16[0]; i++) {
    uint16_t h = wf_f32_to_f16(to16[i].f);
    CHECK(h == to16[i].h, "f32_to_f16(%a) = %04x, want %04x", to16[i].f, h, to16[i].h);
  }
  uint16_t hn = wf_f32_to_f16(NAN);
  CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0, "nan -> f16 nan (%04x)", hn);
  struct { uint16_t h; float f; } to32[] = {
      {0x0001, 0x1p-24f}, {0x03ff, 0x3ffp-24f}, {0x7bff, 65504.0f}, {0x3555, 0.333251953125f},
      {0xfc00, -INFINITY}, {0x8000, -0.0f}, {0xc100, -2.5f},
  };
  for (size_t i = 0; i < sizeof to32 / sizeof to32[0]; i++) {
    float f = wf_f16_to_f32(to32[i].h);
    CHECK(fbits(f) == fbits(to32[i].f), "f16_to_f32(%04x) = %a, want %a", to32[i].h, f, to32[i].f);
  }
  CHECK(isnan(wf_f16_to_f32(0x7e00)), "f16 nan");
  /* every finite f16 survives a round trip */
  for (uint32_t h = 0; h < 0x10000; h++)
    if ((h & 0x7c00) != 0x7c00 && wf_f32_to_f16(wf_f16_to_f32((uint16_t)h)) != h) {
      CHECK(0, "f16 round trip of %04x", h);
      break;
    }

  CHECK(wf_f32_to_bf16(1.0f) == 0x3f80, "bf16 1");
  CHECK(wf_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "bf16 tie to even (down)");
  CHECK(wf_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82, "bf16 tie to even (up)");
  CHECK(wf_f32_to_bf16(3.4028235e38f) == 0x7f80, "bf16 overflow to inf");
  uint16_t bn = wf_f32_to_bf16(NAN);
  CHECK((bn & 0x7f80) == 0x7f80 && (bn & 0x7f) != 0, "bf16 nan stays nan (%04x)", bn);
  CHECK(wf_bf16_to_f32(0xc040) == -3.0f, "bf16 -3");
}

static void path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", g_dir, name); }

static void write_bytes(const char *name, const void *p, size_t n) {
  char fn[512];
  path(fn, sizeof fn, name);
  FILE *fp = fopen(fn, "wb");
  fwrite(p, 1, n, fp);
  fclose(fp);
}

/* A hand-made .npy (version major.0) with the given header dict and payload. */
static void write_npy(const char *name, int major, const char *dict, const void *data, size_t n) {
  unsigned char buf[512];
  size_t hl = strlen(dict), pre = major == 1 ? 10 : 12, k = 0;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  buf[8] = (unsigned char)(hl & 0xff);
  buf[9] = (unsigned char)(hl >> 8);
  if (major != 1) buf[10] = buf[11] = 0;
  memcpy(buf + pre, dict, hl);
  k = pre + hl;
  memcpy(buf + k, data, n);
  write_bytes(name, buf, k + n);
}

static void test_npy_roundtrip(void) {
  wf_dtype dts[] = {WF_F32, WF_F16, WF_I32, WF_I64, WF_BOOL};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    wf_tensor *t = wf_tensor_new(dts[d], 2, DIMS(2, 3));
    for (int i = 0; i < 6; i++) wf_tensor_set(t, i, dts[d] == WF_BOOL ? i % 2 : i - 2.5 * (dts[d] < WF_I32));
    char fn[512];
    path(fn, sizeof fn, "rt.npy");
    CHECK(wf_npy_write(fn, t) == 0, "write %s", wf_dtype_name(dts[d]));
    wf_tensor *r = wf_npy_read(fn);
    CHECK(r && r->dtype == t->dtype && r->rank == 2 && r->dims[0] == 2 && r->dims[1] == 3 &&
              memcmp(r->data, t->data, wf_tensor_bytes(t)) == 0,
          "round trip %s", wf_dtype_name(dts[d]));
    wf_tensor_free(r);
    wf_tensor_free(t);
  }
  /* the header is numpy's: dict text, padded so the data starts at a multiple of 64 */
  wf_tensor *t = wf_tensor_new(WF_F32, 1, DIMS(3));
  char fn[512];
  path(fn, sizeof fn, "h.npy");
  wf_npy_write(fn, t);
  FILE *fp = fopen(fn, "rb");
  unsigned char head[256] = {0};
  size_t got = fread(head, 1, sizeof head, fp);
  fclose(fp);
  CHECK(got == 128 + 12, "file size %zu", got);
  CHECK(memcmp(head + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 57) == 0, "dict: %.60s", head + 10);
  CHECK(head[127] == '\n' && head[126] == ' ' && head[8] == 118 && head[9] == 0, "header length/terminator");
  wf_tensor_free(t);

  /* scalar and bf16 (written as <f4) */
  t = wf_tensor_new(WF_BF16, 0, NULL);
  wf_tensor_set(t, 0, -3.0);
  wf_npy_write(fn, t);
  wf_tensor *r = wf_npy_read(fn);
  CHECK(r && r->dtype == WF_F32 && r->rank == 0 && ((float *)r->data)[0] == -3.0f, "bf16 scalar as f4");
  wf_tensor_free(r);
  wf_tensor_free(t);
}

static void test_npy_variants(void) {
  char fn[512];
  double d[2] = {1.5, -0.25};
  write_npy("v2.npy", 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", d, 16);
  path(fn, sizeof fn, "v2.npy");
  wf_tensor *t = wf_npy_read(fn);
  CHECK(t && t->dtype == WF_F32 && t->dims[0] == 2 && ((float *)t->data)[0] == 1.5f &&
            ((float *)t->data)[1] == -0.25f,
        "v2 <f8 read as f32");
  wf_tensor_free(t);

  struct { const char *name; int major; const char *dict; size_t n; const char *msg; } bad[] = {
      {"fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", 8, "fortran_order"},
      {"short.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", 8, "truncated data"},
      {"dtype.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "unsupported dtype '>f4'"},
      {"shape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", 8, "malformed 'shape'"},
      {"v9.npy", 9, "{}", 0, "unsupported .npy version 9.0"},
      {"huge.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }\n", 8, "shape too large"},
      {"big.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (100000, 100000), }\n", 8, "truncated data"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_npy(bad[i].name, bad[i].major, bad[i].dict, d, bad[i].n);
    path(fn, sizeof fn, bad[i].name);
    diag_capture();
    t = wf_npy_read(fn);
    diag_release();
    CHECK(t == NULL, "%s rejected", bad[i].name);
    wf_tensor_free(t);
    CHECK_DIAG(bad[i].msg);
    CHECK_DIAG(bad[i].name); /* the message names the file */
  }
  write_bytes("magic.npy", "NUMPY\x01\x00", 7);
  path(fn, sizeof fn, "magic.npy");
  diag_capture();
  t = wf_npy_read(fn);
  diag_release();
  CHECK(t == NULL, "bad magic rejected");
  CHECK_DIAG("not a .npy file");
  /* every prefix of a valid file is rejected without crashing */
  wf_tensor *v = wf_tensor_new(WF_I32, 1, DIMS(4));
  path(fn, sizeof fn, "full.npy");
  wf_npy_write(fn, v);
  wf_tensor_free(v);
  FILE *fp = fopen(fn, "rb");
  unsigned char all[128];
  size_t len = fread(all, 1, sizeof all, fp);
  fclose(fp);
  diag_capture();
  for (size_t k = 0; k < len; k++) {
    write_bytes("prefix.npy", all, k);
    path(fn, sizeof fn, "prefix.npy");
    t = wf_npy_read(fn);
    CHECK(t == NULL, "prefix of %zu bytes rejected", k);
    wf_tensor_free(t);
  }
  diag_release();
}

static void test_file_globals(void) {
  char fn[512];
  wf_tensor *w = wf_tensor_new(WF_F32, 2, DIMS(2, 2));
  for (int i = 0; i < 4; i++) wf_tensor_set(w, i, i + 1);
  path(fn, sizeof fn, "w.npy");
  wf_npy_write(fn, w);
  float raw[6] = {9, 9, 5, 6, 7, 8}; /* two floats of padding, then the data at offset 8 */
  write_bytes("w.bin", raw, sizeof raw);

  wf_module *m = wf_module_new();
  wf_module_set_base_dir(m, g_dir);
  wf_loc loc = wf_loc_make("g.wir", 3, 3);
  int g0 = wf_module_add_global(m, "a", TY(WF_F32, 2, 2), loc);
  m->globals[g0].kind = WF_DATA_FILE;
  m->globals[g0].path = wf_intern(m, "w.npy");
  m->globals[g0].offset = -1;
  wf_tensor *t = wf_global_tensor(m, g0);
  check_vals("npy global", t, VALS(1, 2, 3, 4), 4, 0);
  wf_tensor_free(t);

  int g1 = wf_module_add_global(m, "b", TY(WF_F32, 4), loc);
  m->globals[g1].kind = WF_DATA_FILE;
  m->globals[g1].path = wf_intern(m, "w.bin");
  m->globals[g1].offset = 8;
  t = wf_global_tensor(m, g1);
  check_vals("raw global", t, VALS(5, 6, 7, 8), 4, 0);
  wf_tensor_free(t);

  int g2 = wf_module_add_global(m, "c", TY(WF_F32, 4), loc);
  m->globals[g2].kind = WF_DATA_FILE;
  m->globals[g2].path = wf_intern(m, "w.npy");
  m->globals[g2].offset = -1;
  diag_capture();
  CHECK(wf_global_load(m, g2) != 0, "shape mismatch rejected");
  diag_release();
  CHECK_DIAG("g.wir:3:3: error: constant @c is declared f32[4] but");
  CHECK_DIAG("holds f32[2, 2]");

  int g3 = wf_module_add_global(m, "d", TY(WF_F32, 8), loc);
  m->globals[g3].kind = WF_DATA_FILE;
  m->globals[g3].path = wf_intern(m, "w.bin");
  m->globals[g3].offset = 4;
  diag_capture();
  CHECK(wf_global_load(m, g3) != 0, "short raw file rejected");
  diag_release();
  CHECK_DIAG("constant @d needs 32 bytes at offset 4");

  int g4 = wf_module_add_global(m, "e", TY(WF_F32, 8), loc);
  diag_capture();
  CHECK(wf_global_load(m, g4) != 0, "elided rejected");
  diag_release();
  CHECK_DIAG("g.wir:3:3: error: constant @e was elided in this dump; its data is not available");
  wf_module_free(m);
  wf_tensor_free(w);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/waferc_test_npy_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_f16();
  test_npy_roundtrip();
  test_npy_variants();
  test_file_globals();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  if (g_failures) fprintf(stderr, "test_npy: %d failure(s)\n", g_failures);
  else printf("test_npy: all passed\n");
  return g_failures != 0;
}
