/* Pass plugins: shared objects exporting WF_PLUGIN_ENTRY_SYMBOL (written by WF_PASS_PLUGIN).
 * The API version is checked before anything of the plugin's runs except the entry point
 * itself, which only returns a pointer to a static struct. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passes/pass_internal.h"

int wf_plugin_load(wf_pass_registry *r, const char *path) {
  WF_ASSERT(r && path);
  /* dlopen searches the library path for a bare name; a user naming a file in the current
   * directory means that file. */
  char *open_path = NULL;
  if (!strchr(path, '/') && access(path, F_OK) == 0) {
    open_path = malloc(strlen(path) + 3);
    WF_ASSERT(open_path);
    sprintf(open_path, "./%s", path);
  }
  void *h = dlopen(open_path ? open_path : path, RTLD_NOW | RTLD_LOCAL);
  free(open_path);
  if (!h) {
    wf_error(WF_LOC_NONE, "plugin '%s': cannot load: %s", path, dlerror());
    return WF_EXIT_IO;
  }
  typedef const wf_plugin_info *(*entry_fn)(void);
  entry_fn entry;
  /* POSIX's way to turn a data pointer from dlsym into a function pointer. */
  *(void **)&entry = dlsym(h, WF_PLUGIN_ENTRY_SYMBOL);
  if (!entry) {
    wf_error(WF_LOC_NONE, "plugin '%s': no entry point '%s' (write one with WF_PASS_PLUGIN)", path,
             WF_PLUGIN_ENTRY_SYMBOL);
    dlclose(h);
    return WF_EXIT_INPUT;
  }
  const wf_plugin_info *info = entry();
  if (!info) {
    wf_error(WF_LOC_NONE, "plugin '%s': entry point returned no plugin info", path);
    dlclose(h);
    return WF_EXIT_INPUT;
  }
  if (info->api_version != WF_PLUGIN_API_VERSION) {
    wf_error(WF_LOC_NONE, "plugin '%s': API version mismatch: got %u, supported %d", path,
             (unsigned)info->api_version, WF_PLUGIN_API_VERSION);
    dlclose(h);
    return WF_EXIT_INPUT;
  }
  if (!info->register_fn) {
    wf_error(WF_LOC_NONE, "plugin '%s': no register function", path);
    dlclose(h);
    return WF_EXIT_INPUT;
  }
  /* The origin string lives as long as the plugin's passes: for the process. */
  size_t n = strlen(path) + 64 + (info->name ? strlen(info->name) : 0) + (info->version ? strlen(info->version) : 0);
  char *origin = malloc(n);
  WF_ASSERT(origin);
  snprintf(origin, n, "plugin %s %s (%s)", info->name ? info->name : "?", info->version ? info->version : "?", path);
  unsigned errors = wf_diag_error_count();
  int before = wf_pass_count(r);
  wf_pass_registry_set_origin(origin);
  info->register_fn(r);
  wf_pass_registry_set_origin(NULL);
  if (wf_diag_error_count() != errors) {
    /* Passes that did register stay: their code must stay mapped, so no dlclose. */
    wf_error(WF_LOC_NONE, "plugin '%s': registering its passes failed", path);
    return WF_EXIT_INPUT;
  }
  if (wf_pass_count(r) == before) wf_warning(WF_LOC_NONE, "plugin '%s' registered no passes", path);
  return WF_EXIT_OK;
}
