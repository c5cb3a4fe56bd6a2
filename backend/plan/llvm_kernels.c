/* The plan's compute kernels: plan/kernels/<class>.ll, the text ir/pe/kernel_gen_llvm.c generates
 * for each class, and the manifest's "kernels" entries naming their functions. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/plan/llvm_kernels.h"
#include "ir/pe/kernel_gen.h"
#include "waferc/diag.h"

int wf_llvm_kernels_write(const wf_pe_class *c, const char *plan_dir) {
  char why[600];
  char *text = wf_kernel_gen_text(c, why, sizeof why);
  if (!text && why[0]) {
    wf_error_at(plan_dir, "cannot make the compute kernels: %s; reinstall waferc (libwaferc_llvm belongs beside "
                          "libwaferc)", why);
    return WF_EXIT_IO;
  }
  if (!text) return 0;
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/kernels", plan_dir);
  if (mkdir(dir, 0777) && errno != EEXIST) {
    wf_error_at(dir, "cannot create directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  snprintf(path, sizeof path, "%s/%s.ll", dir, c->name);
  int rc = 0;
  FILE *out = fopen(path, "w");
  if (!out) rc = WF_EXIT_IO;
  else {
    if (fputs(text, out) < 0) rc = WF_EXIT_IO;
    if (fclose(out)) rc = WF_EXIT_IO;
  }
  if (rc) wf_error_at(path, "cannot write the kernels: %s", strerror(errno));
  free(text);
  return rc;
}

static void list_kernel(const wf_pe_instr *in, const char *name, void *user) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "op", wf_peops[in->op].name);
  int mode = wf_kernel_mode(in);
  cJSON_AddStringToObject(o, "mode", wf_kernel_mode_name(mode));
  cJSON_AddItemToArray(user, o);
}

void *wf_llvm_kernels_manifest(const wf_pe_class *c) {
  if (!wf_kernel_gen_each(c, NULL, NULL)) return NULL;
  cJSON *o = cJSON_CreateObject();
  char file[128];
  snprintf(file, sizeof file, "kernels/%s.ll", c->name);
  cJSON_AddStringToObject(o, "class", c->name);
  cJSON_AddStringToObject(o, "file", file);
  wf_kernel_gen_each(c, list_kernel, cJSON_AddArrayToObject(o, "functions"));
  return o;
}
