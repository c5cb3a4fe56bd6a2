/* waferrun — paths checked before a run (run_io.h): the plan directory, and every output
 * path, so a run never simulates for minutes and then fails to write its report. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_io.h"
#include "waferc/diag.h"

static int has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int wf_run_check_plan_dir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT)
      wf_error_at(dir, "no such plan directory: make a plan with `waferc model.onnx -o %s`", dir);
    else
      wf_error_at(dir, "cannot open the plan directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (has_suffix(dir, ".onnx") || has_suffix(dir, ".wir"))
      wf_error_at(dir, "is a model, not a plan: compile it first with `waferc %s -o plan/`, then "
                       "run `waferrun plan/`", dir);
    else
      wf_error_at(dir, "is not a plan directory: waferrun runs the directory waferc writes "
                       "(`waferc model.onnx -o plan/`)");
    return WF_EXIT_INPUT;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  if (access(path, F_OK) != 0) {
    wf_error_at(dir, "is not a plan directory (it has no manifest.json): make a plan with "
                     "`waferc model.onnx -o %s`", dir);
    return WF_EXIT_INPUT;
  }
  if (access(path, R_OK) != 0) {
    wf_error_at(path, "cannot read the plan manifest: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  if (access(path, F_OK) == 0 && access(path, R_OK) != 0) {
    wf_error_at(path, "cannot read weights: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return 0;
}

/* The directory a new entry `path` would be created in ("." when it has no slash). */
static void parent_of(const char *path, char *out, size_t cap) {
  snprintf(out, cap, "%s", path);
  size_t n = strlen(out);
  while (n > 1 && out[n - 1] == '/') out[--n] = '\0'; /* "out/" is "out" */
  char *slash = strrchr(out, '/');
  if (!slash) snprintf(out, cap, ".");
  else if (slash == out) out[1] = '\0';
  else *slash = '\0';
}

/* 0 when `path` can be created or replaced: an existing writable entry of the right kind,
 * or a new one in an existing writable directory. Reports otherwise. */
static int check_path(const char *opt, const char *path, int want_dir) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (want_dir && !S_ISDIR(st.st_mode)) {
      wf_error_at(path, "%s: exists and is not a directory", opt);
      return -1;
    }
    if (!want_dir && S_ISDIR(st.st_mode)) {
      wf_error_at(path, "%s: is a directory; give a file name", opt);
      return -1;
    }
    if (access(path, want_dir ? W_OK | X_OK : W_OK) != 0) {
      wf_error_at(path, "%s: cannot write: %s", opt, strerror(errno));
      return -1;
    }
    return 0;
  }
  if (errno != ENOENT) {
    wf_error_at(path, "%s: %s", opt, strerror(errno));
    return -1;
  }
  char parent[PATH_MAX];
  parent_of(path, parent, sizeof parent);
  if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
    wf_error_at(path, "%s: cannot create it: the directory %s does not exist", opt, parent);
    return -1;
  }
  if (access(parent, W_OK | X_OK) != 0) {
    wf_error_at(path, "%s: cannot create it in %s: %s", opt, parent, strerror(errno));
    return -1;
  }
  return 0;
}

int wf_run_check_dir(const char *opt, const char *dir) { return check_path(opt, dir, 1) ? WF_EXIT_IO : 0; }

int wf_run_check_outputs(const char *out_dir, const char *report, const char *trace, const char *heat_dir) {
  int bad = 0;
  if (out_dir) bad |= check_path("--output-dir", out_dir, 1);
  if (report) bad |= check_path("--report", report, 0);
  if (trace) bad |= check_path("--trace", trace, 0);
  if (heat_dir) bad |= check_path("--heatmap", heat_dir, 1);
  return bad ? WF_EXIT_IO : 0;
}

int wf_run_check_memory(const wf_plan *p, int64_t limit_mb, const char *what) {
  int64_t need = wf_plan_sram_host_bytes(p), limit;
  if (limit_mb > 0) limit = limit_mb > (INT64_MAX >> 20) ? INT64_MAX : limit_mb << 20;
  else {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return 0; /* unknown: no default ceiling */
    limit = (int64_t)pages > INT64_MAX / size ? INT64_MAX : (int64_t)pages * size;
  }
  if (need <= limit) return 0;
  long long mib = (long long)((need + (1 << 20) - 1) >> 20);
  if (limit_mb > 0)
    wf_error_at(what, "the PEs' memory needs %lld MiB of host memory, over --memory-limit=%lld (--mode=timing "
                      "holds no PE memory)", mib, (long long)limit_mb);
  else
    wf_error_at(what, "the PEs' memory needs %lld MiB of host memory, more than this machine's %lld MiB "
                      "(--mode=timing holds no PE memory; --memory-limit=MB sets another ceiling)",
                mib, (long long)(limit >> 20));
  return WF_EXIT_RUNTIME;
}
