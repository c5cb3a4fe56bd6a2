/* waferc --auto-region: when the plan does not fit the per-PE SRAM, compile again for the
 * smallest larger mesh (fewest PEs, then the squarest, within the target's program
 * rectangle) that compiles, and say so. Each attempt is a full compile (partition re-blocks
 * every tensor for the mesh); meshes the partition rejects (a side that does not divide a
 * softmax's axis) are skipped. Diagnostics of failed attempts are held back; when no mesh
 * fits, the first attempt's are shown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto_region.h"
#include "waferc/diag.h"
#include "waferc/target.h"

enum { MAX_TRIES = 48, MAX_DIAGS = 64 };

typedef struct held {
  wf_severity sev[MAX_DIAGS];
  wf_loc loc[MAX_DIAGS]; /* file names interned (wf_loc_file): an attempt's module, whose arena
                            may hold an ONNX node's location, is freed before they are shown */
  char *msg[MAX_DIAGS];
  int n, sram; /* sram: an error said the SRAM is over budget */
} held;

static void hold(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  held *h = user;
  if (sev == WF_SEV_ERROR && strstr(msg, "SRAM")) h->sram = 1;
  if (h->n == MAX_DIAGS) return;
  h->sev[h->n] = sev;
  h->loc[h->n] = loc;
  h->loc[h->n].file = wf_loc_file(loc.file); /* the same pointer when interned already, so a
                                               location's description (wf_loc_describe) holds */
  h->msg[h->n] = strdup(msg ? msg : "");
  if (h->msg[h->n]) h->n++;
}

static void release(held *h, int show) {
  for (int i = 0; i < h->n; i++) {
    if (show) {
      if (h->sev[i] == WF_SEV_ERROR) wf_error(h->loc[i], "%s", h->msg[i]);
      else if (h->sev[i] == WF_SEV_WARNING) wf_warning(h->loc[i], "%s", h->msg[i]);
      else wf_note(h->loc[i], "%s", h->msg[i]);
    }
    free(h->msg[i]);
  }
  h->n = 0;
  h->sram = 0;
}

static int attempt(int (*try_compile)(void *), void *user, held *h) {
  release(h, 0);
  void *prev_user;
  wf_diag_sink prev = wf_diag_get_sink(&prev_user); /* attempts nest (wf_waferc_fallback) */
  wf_diag_set_sink(hold, h);
  int rc = try_compile(user);
  wf_diag_set_sink(prev, prev_user);
  return rc;
}

typedef struct mesh { int w, h; } mesh;

static int by_size(const void *a, const void *b) {
  const mesh *p = a, *q = b;
  long pa = (long)p->w * p->h, qa = (long)q->w * q->h;
  if (pa != qa) return pa < qa ? -1 : 1;
  int ps = abs(p->w - p->h), qs = abs(q->w - q->h);
  if (ps != qs) return ps < qs ? -1 : 1;
  return p->w - q->w;
}

/* Every mesh at least w0 x h0 within the program rectangle but that one, smallest first
 * (bounded so a model that fits nowhere near does not compile hundreds of times); *n set. */
static mesh *candidates(const wf_target *t, int w0, int h0, int *count) {
  int cap = 4096, n = 0;
  mesh *c = malloc((size_t)cap * sizeof *c);
  for (int W = w0; c && W <= t->program_w; W++)
    for (int H = h0; H <= t->program_h; H++) {
      if (W == w0 && H == h0) continue;
      if (n == cap) {
        /* keep the smallest `cap` meshes seen so far */
        qsort(c, (size_t)n, sizeof *c, by_size);
        n = cap / 2;
      }
      c[n++] = (mesh){W, H};
    }
  if (c) qsort(c, (size_t)n, sizeof *c, by_size);
  *count = n;
  return c;
}

/* Silent compile for w x h: 1 if it fits. */
static int fits(wf_target *t, int (*try_compile)(void *), void *user, held *h, int w, int hh) {
  char m[32];
  snprintf(m, sizeof m, "%dx%d", w, hh);
  return !wf_target_set_mesh(t, m) && attempt(try_compile, user, h) == WF_EXIT_OK;
}

/* The mesh k steps up the diagonal from w0 x h0 (both sides grown, the aspect kept). */
static mesh diag_step(int w0, int h0, long k) {
  long w = w0 + k, h = h0 + (k * h0 + w0 / 2) / w0;
  return (mesh){(int)w, (int)(h > h0 ? h : h0 + 1)};
}

int wf_waferc_smallest_fit(wf_target *t, int (*try_compile)(void *), void *user, int *fw, int *fh) {
  held *h = calloc(1, sizeof *h);
  WF_ASSERT(h); /* out of host memory: exit 7 */
  int w0 = t->mesh_w, h0 = t->mesh_h, found = 0;
  /* Up the diagonal: doubling steps until one fits (SRAM per PE shrinks with the PE count),
   * then halving between the last that did not and the first that did. About 2 log2 of the
   * distance compiles, where a search mesh by mesh would need thousands on a large model. */
  long lo = 0, hi = 0;
  for (long k = 1;; k *= 2) {
    mesh m = diag_step(w0, h0, k);
    if (m.w > t->program_w || m.h > t->program_h) {
      mesh last = {t->program_w, t->program_h};
      if (fits(t, try_compile, user, h, last.w, last.h)) hi = k;
      break;
    }
    if (fits(t, try_compile, user, h, m.w, m.h)) {
      hi = k;
      break;
    }
    lo = k;
  }
  if (hi) {
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      mesh m = diag_step(w0, h0, mid);
      if (m.w <= t->program_w && m.h <= t->program_h && fits(t, try_compile, user, h, m.w, m.h)) hi = mid;
      else lo = mid;
    }
    mesh m = diag_step(w0, h0, hi);
    if (m.w > t->program_w || m.h > t->program_h) m = (mesh){t->program_w, t->program_h};
    found = 1, *fw = m.w, *fh = m.h;
  }
  release(h, 0);
  char m[32];
  snprintf(m, sizeof m, "%dx%d", w0, h0);
  wf_target_set_mesh(t, m);
  free(h);
  return found;
}

int wf_waferc_auto_region(wf_target *t, int (*try_compile)(void *), void *user) {
  held *h = calloc(1, sizeof *h);
  WF_ASSERT(h);
  int w0 = t->mesh_w, h0 = t->mesh_h;
  int rc = attempt(try_compile, user, h);
  if (rc != WF_EXIT_NOFIT || !h->sram) {
    release(h, 1);
    free(h);
    return rc;
  }
  held *first = h;
  h = calloc(1, sizeof *h);
  int n = 0;
  mesh *c = h ? candidates(t, w0, h0, &n) : NULL;
  int found = -1;
  for (int i = 0; c && i < n && i < MAX_TRIES; i++) {
    char m[32];
    snprintf(m, sizeof m, "%dx%d", c[i].w, c[i].h);
    if (wf_target_set_mesh(t, m)) continue;
    rc = attempt(try_compile, user, h);
    if (rc != WF_EXIT_OK) continue; /* over budget, or a mesh the partition cannot use */
    found = i;
    break;
  }
  if (found >= 0) {
    release(first, 0);
    release(h, 1);
    wf_note(WF_LOC_NONE, "--auto-region: the plan does not fit the SRAM of a %dx%d mesh; compiled "
                         "for %dx%d, the smallest larger mesh that fits", w0, h0, c[found].w,
            c[found].h);
  } else {
    char m[32];
    snprintf(m, sizeof m, "%dx%d", w0, h0);
    wf_target_set_mesh(t, m);
    release(first, 1);
    if (h) release(h, 0);
    wf_note(WF_LOC_NONE, "--auto-region: no mesh up to the %dx%d program rectangle fits (%d tried)",
            t->program_w, t->program_h, n < MAX_TRIES ? n : MAX_TRIES);
    rc = WF_EXIT_NOFIT;
  }
  free(c);
  free(first);
  free(h);
  return rc;
}

int wf_waferc_fallback(int (*first)(void *), int (*second)(void *), void *user, const char *why) {
  held *h = calloc(1, sizeof *h), *h2 = calloc(1, sizeof *h2);
  WF_ASSERT(h && h2);
  int rc = attempt(first, user, h);
  if (rc == WF_EXIT_NOFIT) {
    int rc2 = attempt(second, user, h2);
    if (rc2 == WF_EXIT_OK) {
      release(h, 0);
      if (why) wf_note(WF_LOC_NONE, "%s", why); /* before what the second attempt said (a nested fallback's note) */
      release(h2, 1);
      rc = rc2;
    } else {
      release(h2, 0);
    }
  }
  release(h, 1);
  free(h);
  free(h2);
  return rc;
}

int wf_waferc_pick(int (*first)(void *), int (*second)(void *), int (*pick)(void *, int, int), void *user) {
  held *h = calloc(1, sizeof *h), *h2 = calloc(1, sizeof *h2);
  WF_ASSERT(h && h2);
  int rc = attempt(first, user, h), rc2 = attempt(second, user, h2);
  int two = pick(user, rc, rc2);
  release(h, !two);
  release(h2, two);
  free(h);
  free(h2);
  return two ? rc2 : rc;
}
