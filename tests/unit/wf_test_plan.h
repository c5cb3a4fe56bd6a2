/* A one-class plan written by hand for the runtime's unit tests: root/name/manifest.json and
 * programs/main.wpe for a w x h mesh of a small "unit" target (hop 1, colors 21-23 reserved,
 * 4 switch positions) running `program`. The single input "a" and output "b" are f32[w*len]
 * split along x, bound to $a and $b. Returns the plan directory (a static buffer). */
#ifndef WF_TEST_PLAN_H
#define WF_TEST_PLAN_H

#include <stdio.h>
#include <sys/stat.h>

typedef struct wf_test_plan {
  const char *root, *name;
  int w, h;
  int ramp, depth;          /* target ramp_cycles and queue_depth */
  int len;                  /* words of a and b per PE */
  int fp16_simd, bank_cycles;
  int format_version;
  const char *colors;       /* the manifest's colors list, e.g. {"color": 0} */
  const char *program;      /* the .wpe text */
} wf_test_plan;

static inline const char *wf_test_write_plan(const wf_test_plan *t) {
  static char dir[512];
  char path[700];
  snprintf(dir, sizeof dir, "%s/%s", t->root, t->name);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/programs", dir);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/programs/main.wpe", dir);
  FILE *f = fopen(path, "w");
  if (!f) return dir;
  fputs(t->program, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  f = fopen(path, "w");
  if (!f) return dir;
  fprintf(f,
          "{\"format_version\": %d,\n"
          " \"target\": {\"name\": \"unit\", \"fabric\": [%d, %d], \"sram_bytes\": 49152,\n"
          "   \"sram_banks\": 8, \"clock_hz\": 1e9, \"fmac_per_cycle\": 1, \"fp16_simd\": %d,\n"
          "   \"wavelet_bits\": 32, \"hop_cycles\": 1, \"ramp_cycles\": %d, \"colors\": 24,\n"
          "   \"reserved_colors\": [21, 22, 23], \"switch_positions\": 4, \"route_code_bits\": 5,\n"
          "   \"queue_depth\": %d, \"exp_cycles\": 8, \"div_cycles\": 8,\n"
          "   \"bank_conflict_cycles\": %d},\n"
          " \"mesh\": [%d, %d],\n"
          " \"colors\": [%s],\n"
          " \"regions\": [{\"name\": \"mesh\", \"rect\": [0, 0, %d, %d],\n"
          "   \"classes\": [{\"name\": \"main\", \"rect\": [0, 0, %d, %d], \"program\": \"programs/main.wpe\"}]}],\n"
          " \"weights\": {\"file\": \"weights.bin\", \"bytes\": 0, \"tensors\": []},\n"
          " \"inputs\": [{\"name\": \"a\", \"symbol\": \"$a\", \"dtype\": \"f32\", \"shape\": [%d],\n"
          "   \"split\": [\"x\"], \"region\": \"mesh\"}],\n"
          " \"outputs\": [{\"name\": \"b\", \"symbol\": \"$b\", \"dtype\": \"f32\", \"shape\": [%d],\n"
          "   \"split\": [\"x\"], \"region\": \"mesh\"}],\n"
          " \"ops\": [{\"op\": \"test\", \"predicted_cycles\": 0}]}\n",
          t->format_version, t->w, t->h, t->fp16_simd, t->ramp, t->depth, t->bank_cycles, t->w, t->h, t->colors, t->w,
          t->h, t->w, t->h, t->w * t->len, t->w * t->len);
  fclose(f);
  return dir;
}

#endif
