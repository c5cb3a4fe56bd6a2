/* Moving whole host tensors in and out of PE memory by layout: the host's memcpy before
 * launch and after completion, which the cycle model does not charge (docs/cycle-model.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/gemm_skew.h"
#include "runtime/sim_sched.h"
#include "waferc/diag.h"

/* Copies the block at `origin` between the row-major host tensor and the PE's contiguous
 * local block, one innermost row at a time. Block elements past the tensor's dims are
 * padding (a dim the PEs do not divide): zeros on the way in, dropped on the way out. */
static void copy_block(const wf_plan_tensor *t, const int64_t *origin, const int64_t *bdims,
                       float *host, float *local, int to_pe) {
  int r = t->rank;
  if (r == 0) {
    if (to_pe) local[0] = host[0];
    else host[0] = local[0];
    return;
  }
  int64_t idx[WF_MAX_RANK] = {0};
  int64_t row = bdims[r - 1];
  int64_t live = t->dims[r - 1] - origin[r - 1]; /* real elements of each row */
  live = live < 0 ? 0 : live > row ? row : live;
  int64_t nrows = 1;
  for (int d = 0; d < r - 1; d++) nrows *= bdims[d];
  for (int64_t k = 0; k < nrows; k++) {
    int64_t off = 0, n = live;
    for (int d = 0; d < r; d++) {
      int64_t i = origin[d] + (d < r - 1 ? idx[d] : 0);
      if (d < r - 1 && i >= t->dims[d]) n = 0;
      off = off * t->dims[d] + i;
    }
    if (to_pe) {
      if (n) memcpy(local + k * row, host + off, (size_t)n * sizeof(float));
      memset(local + k * row + n, 0, (size_t)(row - n) * sizeof(float));
    } else if (n) {
      memcpy(host + off, local + k * row, (size_t)n * sizeof(float));
    }
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < bdims[d]) break;
      idx[d] = 0;
    }
  }
}

/* A pre-skewed weight's block (docs/plan-format.md, "skew"), host to PE: element idx of the
 * block at `origin` comes from the same place, except along the K dim, whose tile at virtual
 * position a = v_k c_k + idx_k / k_tile, seen from virtual position b = v_o c_o + idx_o /
 * other_tile of the other dim (c: the PE's coordinates, v: virtual positions per PE), is K
 * tile wf_skew_source(ring, a, b, tiles). The plan loader checked the tiles against the
 * blocks; elements past the tensor are padding (zeros). */
static void copy_block_skewed(const wf_plan_tensor *t, const int64_t *origin, const int64_t *bdims,
                              const int64_t *parts, const float *host, float *local) {
  int r = t->rank, kd = t->skew_k_dim, od = t->skew_other_dim;
  int64_t L = t->skew_tiles, kt = t->skew_k_tile, ot = t->skew_other_tile;
  int64_t vk = L / parts[kd], vo = L / parts[od];
  int64_t ck = origin[kd] / bdims[kd], co = origin[od] / bdims[od];
  int64_t idx[WF_MAX_RANK] = {0}, n = 1;
  for (int d = 0; d < r; d++) n *= bdims[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t a = vk * ck + idx[kd] / kt, b = vo * co + idx[od] / ot, off = 0;
    int64_t src = wf_skew_source((wf_skew_ring)t->skew_ring, a, b, L) * kt + idx[kd] % kt;
    int in = 1;
    for (int d = 0; d < r; d++) {
      int64_t i = d == kd ? src : origin[d] + idx[d];
      in &= i < t->dims[d];
      off = off * t->dims[d] + i;
    }
    local[e] = in ? host[off] : 0.0f;
    for (int d = r - 1; d >= 0; d--) {
      if (++idx[d] < bdims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Copies t between the host tensor and every PE of its region (replicas all receive, and on
 * the way out the last replica visited wins: replicas hold equal data). */
static void for_each_block(wf_sim *s, const wf_plan_tensor *t, float *host, int to_pe) {
  const wf_plan *p = s->plan;
  const wf_plan_region *reg = &p->regions[t->region];
  int64_t bdims[WF_MAX_RANK];
  wf_plan_block_dims(p, t, bdims);
  for (int y = reg->y; y < reg->y + reg->h; y++)
    for (int x = reg->x; x < reg->x + reg->w; x++) {
      wf_pe *pe = s->pes[(size_t)y * s->w + x];
      if (!pe) continue;
      int sym = wf_pe_class_find_sym(pe->cls, t->symbol);
      WF_ASSERT(sym >= 0); /* checked by the plan loader */
      float *local = wf_sim_pe_mem(s, pe);
      if (!local) return; /* timing mode: no data */
      local += pe->cls->syms[sym].offset / 4;
      int64_t origin[WF_MAX_RANK], parts[WF_MAX_RANK];
      for (int d = 0; d < t->rank; d++) {
        int c = t->split[d] == WF_AXIS_X ? x - reg->x : t->split[d] == WF_AXIS_Y ? y - reg->y : 0;
        origin[d] = c * bdims[d];
        parts[d] = t->split[d] == WF_AXIS_X ? reg->w : t->split[d] == WF_AXIS_Y ? reg->h : 1;
      }
      WF_ASSERT(!t->skew_ring || to_pe); /* only weights are pre-skewed: never gathered */
      if (t->skew_ring) copy_block_skewed(t, origin, bdims, parts, host, local);
      else copy_block(t, origin, bdims, host, local, to_pe);
    }
}

void wf_sim_scatter(wf_sim *s, const wf_plan_tensor *t, const float *src) {
  for_each_block(s, t, (float *)src, 1);
}

void wf_sim_set_weight(wf_sim *s, int w, const float *data) { wf_sim_scatter(s, &s->plan->weights[w], data); }

int wf_sim_set_input(wf_sim *s, const char *name, const wf_tensor *x) {
  const wf_plan *p = s->plan;
  for (int i = 0; i < p->n_inputs; i++) {
    const wf_plan_tensor *t = &p->inputs[i];
    if (strcmp(t->name, name)) continue;
    int same = x->dtype == t->dtype && x->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++) same = x->dims[d] == t->dims[d];
    if (!same) {
      char want[128] = "", got[128] = "";
      for (int d = 0; d < t->rank; d++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "," : "",
                 (long long)t->dims[d]);
      for (int d = 0; d < x->rank; d++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "",
                 (long long)x->dims[d]);
      wf_error_at(name, "input has type %s[%s]; the plan expects %s[%s]", wf_dtype_name(x->dtype),
                  got, wf_dtype_name(t->dtype), want);
      return -1;
    }
    if (t->dtype == WF_F32) {
      wf_sim_scatter(s, t, (const float *)x->data);
      return 0;
    }
    /* Integers and bools travel as f32 words, exact below 2^24. A gather's ids (index_bound
     * set) may be larger: they stay out of any table's range (V <= 2^24), so the gather still
     * reports them; any other integer input must be exact. */
    int64_t n = wf_tensor_numel(x);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    WF_ASSERT(f);
    for (int64_t k = 0; k < n; k++) {
      double v = wf_tensor_get(x, k);
      if (!t->index_bound && fabs(v) > (double)(1 << 24)) {
        wf_error_at(name, "element %lld is %.0f: integers are f32 words on the PEs, exact only up to 2^24 "
                          "in magnitude", (long long)k, v);
        free(f);
        return -1;
      }
      f[k] = (float)v;
    }
    wf_sim_scatter(s, t, f);
    free(f);
    return 0;
  }
  char names[1024] = "";
  for (int i = 0; i < p->n_inputs; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", p->inputs[i].name);
  wf_error_at(name, "the plan has no input of this name (its inputs: %s)", p->n_inputs ? names : "none");
  return -1;
}

wf_tensor *wf_sim_output(wf_sim *s, int i) {
  if (!s->functional) return NULL;
  const wf_plan_tensor *t = &s->plan->outputs[i];
  wf_tensor *out = wf_tensor_new(t->dtype, t->rank, t->dims);
  if (!out) return NULL;
  if (t->dtype == WF_F32) {
    for_each_block(s, t, (float *)out->data, 0);
    return out;
  }
  /* An integer result (an argmax's index) or a bool is an f32 word on the PEs. */
  int64_t n = wf_tensor_numel(out);
  float *f = calloc((size_t)(n ? n : 1), sizeof *f);
  WF_ASSERT(f);
  for_each_block(s, t, f, 0);
  for (int64_t k = 0; k < n; k++) {
    double v = isfinite(f[k]) ? (double)f[k] : -1; /* no index found (a row of NaN): -1 */
    if (t->dtype == WF_I64) ((int64_t *)out->data)[k] = (int64_t)v;
    else if (t->dtype == WF_BOOL) ((uint8_t *)out->data)[k] = f[k] != 0.0f;
    else ((int32_t *)out->data)[k] = (int32_t)v;
  }
  free(f);
  return out;
}

void wf_sim_count_routes(wf_sim *s) {
  const wf_plan *p = s->plan;
  if (!s->functional || !p->n_routes) return;
  int64_t total = 0;
  for (int r = 0; r < p->n_routes; r++) total += p->routes[r].experts + 1;
  free(s->route_counts);
  s->route_counts = calloc((size_t)total, sizeof *s->route_counts);
  WF_ASSERT(s->route_counts);
  int64_t *c = s->route_counts;
  for (int r = 0; r < p->n_routes; r++) {
    const wf_plan_route *rt = &p->routes[r];
    wf_tensor *t = wf_sim_output(s, rt->output);
    WF_ASSERT(t);
    int64_t n = wf_tensor_numel(t);
    for (int64_t k = 0; k < n; k++) {
      int64_t e = t->dtype == WF_I64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
      c[e >= 0 && e < rt->experts ? e : rt->experts]++;
    }
    wf_tensor_free(t);
    c += rt->experts + 1;
  }
}
