#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include "plan_stage.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "ir/support/fsutil.h"
#include "waferc/diag.h"

/* The entries of a plan directory that belong to the plan (docs/plan-format.md); anything
 * else a user keeps there is not touched. manifest.json is handled on its own. */
static const char *const plan_entries[] = {"programs", "kernels", "weights.bin", "decode", "switch", "pipeline"};

/* The stage being written, removed at exit when the compile stops early (out of host memory:
 * diag.h's exit 7 runs the atexit handlers), so no half-written stage stays beside the plan. */
static char *g_live;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

static void remove_live(void) {
  if (g_live) nftw(g_live, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *wf_plan_stage_begin(const char *out) {
  char *copy = strdup(out);
  WF_ASSERT(copy != NULL);
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/') copy[--n] = 0; /* "plan/" names plan */
  char *slash = strrchr(copy, '/');
  const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
  const char *name = slash ? slash + 1 : copy;
  if (slash) *slash = 0;
  if (strcmp(parent, ".") && wf_mkdir_p(parent)) {
    free(copy);
    return NULL;
  }
  size_t cap = strlen(parent) + strlen(name) + 32;
  char *stage = malloc(cap);
  WF_ASSERT(stage != NULL);
  snprintf(stage, cap, "%s/.%s.waferc-XXXXXX", parent, name);
  if (!mkdtemp(stage)) {
    wf_error_at(parent, "cannot write the plan %s here: cannot create a directory beside it: %s", out,
                strerror(errno));
    free(stage);
    free(copy);
    return NULL;
  }
  free(copy);
  static int registered;
  if (!registered) registered = !atexit(remove_live);
  g_live = stage;
  return stage;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void wf_plan_stage_abort(char *stage) {
  if (!stage) return;
  if (stage == g_live) g_live = NULL;
  nftw(stage, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(stage);
}

static int exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static int move(const char *from, const char *to) {
  if (rename(from, to) == 0) return 0;
  wf_error_at(to, "cannot move the new plan into place (from %s): %s", from, strerror(errno));
  return WF_EXIT_IO;
}

int wf_plan_stage_commit(char *stage, const char *out) {
  int rc = wf_mkdir_p(out) ? WF_EXIT_IO : 0;
  char *old_manifest = wf_path_join(out, "manifest.json");
  /* From here until the new manifest lands, the directory holds no plan, never a mixed one. */
  if (!rc && unlink(old_manifest) && errno != ENOENT) {
    wf_error_at(old_manifest, "cannot remove the old manifest: %s", strerror(errno));
    rc = WF_EXIT_IO;
  }
  for (size_t i = 0; i < sizeof plan_entries / sizeof plan_entries[0] && !rc; i++) {
    char *dst = wf_path_join(out, plan_entries[i]), *src = wf_path_join(stage, plan_entries[i]);
    if (exists(dst)) { /* the old one goes into the stage, removed with it */
      char *trash = malloc(strlen(stage) + strlen(plan_entries[i]) + 8);
      WF_ASSERT(trash != NULL);
      sprintf(trash, "%s/.old.%s", stage, plan_entries[i]);
      rc = move(dst, trash);
      free(trash);
    }
    if (!rc && exists(src)) rc = move(src, dst);
    free(dst);
    free(src);
  }
  char *sir = wf_path_join(stage, "ir"), *oir = wf_path_join(out, "ir");
  DIR *d = rc ? NULL : opendir(sir);
  if (d) {
    if (wf_mkdir_p(oir)) rc = WF_EXIT_IO;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char *src = wf_path_join(sir, e->d_name), *dst = wf_path_join(oir, e->d_name);
      rc = move(src, dst);
      free(src);
      free(dst);
    }
    closedir(d);
  }
  free(sir);
  free(oir);
  char *new_manifest = wf_path_join(stage, "manifest.json");
  if (!rc) rc = move(new_manifest, old_manifest);
  free(new_manifest);
  free(old_manifest);
  wf_plan_stage_abort(stage);
  return rc;
}
