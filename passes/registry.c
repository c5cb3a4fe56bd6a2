/* The pass registry: built-in and plugin passes, checked once when they register so the
 * pipeline parser and the manager can trust every descriptor. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

static wf_pass_registry g_registry;
static const char *g_origin; /* set by the plugin loader around register_fn */

wf_pass_registry *wf_pass_registry_global(void) { return &g_registry; }

void wf_pass_registry_set_origin(const char *origin) { g_origin = origin; }

/* kebab-case: lower-case words of letters and digits joined by single dashes. */
static int is_kebab(const char *s) {
  if (!s || !*s || *s == '-') return 0;
  for (const char *p = s; *p; p++) {
    int ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-';
    if (!ok || (*p == '-' && (p[1] == '-' || p[1] == '\0'))) return 0;
  }
  return 1;
}

static int bad(const wf_pass_info *info, const char *what, const char *detail) {
  wf_error(WF_LOC_NONE, "cannot register pass '%s': %s%s%s", info && info->name ? info->name : "(null)",
           what, detail ? " " : "", detail ? detail : "");
  return 1;
}

static int check_descriptor(wf_pass_registry *r, const wf_pass_info *info) {
  if (!info) return bad(info, "descriptor is NULL", NULL);
  if (!is_kebab(info->name)) return bad(info, "name is not kebab-case", NULL);
  if (!info->summary || !*info->summary) return bad(info, "summary is empty", NULL);
  if (!info->run) return bad(info, "run function is NULL", NULL);
  if (wf_pass_lookup(r, info->name)) return bad(info, "the name is already taken", NULL);
  if (info->n_options < 0 || (info->n_options > 0 && !info->options))
    return bad(info, "option table is inconsistent with n_options", NULL);
  for (int i = 0; i < info->n_options; i++) {
    const wf_pass_option *o = &info->options[i];
    if (!is_kebab(o->name)) return bad(info, "option name is not kebab-case:", o->name ? o->name : "(null)");
    if (o->kind < WF_OPT_INT || o->kind > WF_OPT_FLOAT) return bad(info, "option has an unknown kind:", o->name);
    for (int j = 0; j < i; j++)
      if (strcmp(info->options[j].name, o->name) == 0) return bad(info, "duplicate option", o->name);
    wf_opt_value v;
    char why[128];
    if (wf_opt_value_parse(o->kind, o->default_value ? o->default_value : "", &v, why) != 0)
      return bad(info, "option default does not parse:", o->name);
    wf_opt_value_clear(&v);
  }
  if (info->n_stats < 0 || (info->n_stats > 0 && !info->stats))
    return bad(info, "statistics table is inconsistent with n_stats", NULL);
  for (int i = 0; i < info->n_stats; i++)
    if (!is_kebab(info->stats[i])) return bad(info, "statistic name is not kebab-case:", info->stats[i]);
  return 0;
}

int wf_pass_register(wf_pass_registry *r, const wf_pass_info *info) {
  WF_ASSERT(r);
  if (check_descriptor(r, info) != 0) return 1;
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    wf_registered_pass *v = realloc(r->v, (size_t)cap * sizeof *v);
    WF_ASSERT(v);
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n].info = info;
  r->v[r->n].origin = g_origin;
  r->n++;
  return 0;
}

const wf_pass_info *wf_pass_lookup(wf_pass_registry *r, const char *name) {
  for (int i = 0; name && i < r->n; i++)
    if (strcmp(r->v[i].info->name, name) == 0) return r->v[i].info;
  return NULL;
}

const char *wf_pass_origin(wf_pass_registry *r, const char *name) {
  for (int i = 0; name && i < r->n; i++)
    if (strcmp(r->v[i].info->name, name) == 0) return r->v[i].origin;
  return NULL;
}

const char *wf_pass_closest(wf_pass_registry *r, const char *name) {
  const char **names = malloc((size_t)(r->n + 1) * sizeof *names);
  WF_ASSERT(names);
  for (int i = 0; i < r->n; i++) names[i] = r->v[i].info->name;
  const char *near = wf_closest_name(name, names, r->n);
  free(names);
  return near;
}

int wf_pass_count(wf_pass_registry *r) { return r->n; }

const wf_pass_info *wf_pass_at(wf_pass_registry *r, int i) {
  WF_ASSERT(i >= 0 && i < r->n);
  return r->v[i].info;
}
