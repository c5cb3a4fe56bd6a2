/* The plan loader (runtime/plan_load.c): the input is manifest.json of a plan directory whose
 * programs/main.wpe (a 4x4 class holding $a, $b and a weight @w of 16 floats) and weights.bin
 * are fixed, so the fuzzer reaches the checks behind the JSON: shapes, rectangles, colors,
 * weights, memory maps. Loaded with WF_PLAN_ALLOW_MODIFIED, as the digests would stop every
 * mutation at the first check. The manifest is handed over from memory (wf_plan_load_text);
 * the programs and weights are read from the plan directory, as for a plan on disk. */
#include <sys/stat.h>

#include "fuzz_util.h"
#include "runtime/runtime.h"

static const char program[] =
    ".format 2\n"
    ".class main\n"
    ".sym $a 0 64\n"
    ".sym $b 64 64\n"
    ".sym @w 128 64\n"
    ".color c0 test\n"
    ".code\n"
    "op 0\n"
    "add $b $a @w 1 16 ij\n";

static char plan_dir[128];

/* The plan directory but its manifest: written once, read by every input. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char path[256];
  snprintf(plan_dir, sizeof plan_dir, "%s/plan", wf_fuzz_dir());
  mkdir(plan_dir, 0777);
  snprintf(path, sizeof path, "%s/programs", plan_dir);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/programs/main.wpe", plan_dir);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(program, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/weights.bin", plan_dir);
  f = fopen(path, "wb");
  if (!f) abort();
  float w[16] = {0};
  fwrite(w, sizeof w, 1, f);
  fclose(f);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_fuzz_quiet();
  char *text = wf_fuzz_cstr(data, size); /* NUL-terminated, as a manifest read from disk */
  wf_plan *p = wf_plan_load_text(plan_dir, text, size, WF_PLAN_ALLOW_MODIFIED);
  free(text);
  if (p) { /* what loads must also describe its blocks without overflow */
    int64_t bdims[WF_MAX_RANK];
    for (int i = 0; i < p->n_inputs; i++) wf_plan_block_dims(p, &p->inputs[i], bdims);
    wf_plan_free(p);
  }
  return 0;
}
